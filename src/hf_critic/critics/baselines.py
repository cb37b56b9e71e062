"""The critics that need no model, as kinds a cascade or a jury can use: "the longer response wins" (``longer-wins``)
and the label prior (``label-prior``). Each judges with no call and is order-free; a jury's report lists them as its
baselines (:attr:`~hf_critic.critics.protocol.CriticKind.baseline`).

Their arithmetic is the meta-evaluation's (:func:`~hf_critic.meta_eval.length.longer_wins`,
:func:`~hf_critic.meta_eval.length.label_prior`), so a baseline judged as a critic in a cascade and the baseline
beside a critic in a report are one computation. A cascade file names them ``longer-wins`` / ``label-prior`` (the
bare string), ``baseline: NAME`` or ``kind: NAME`` (:mod:`hf_critic.critics.specs`)::

    critics:
      - label-prior                      # always the calibration rows' most frequent human label
      - name: local-jury
        jury:
          aggregate: vote
          members: [longer-wins, {name: critic, options: {model: smollm2-135m-critic}}]

The label prior is fitted: ``hf-critic calibrate`` hands it the calibration rows' human labels
(:meth:`LabelPrior.calibrate_on`), the calibration file keeps the label and its share (its
:meth:`~LabelPrior.calibration_entry`) and ``compare --cascade`` takes them back from there
(:meth:`~LabelPrior.check_calibration`). Its identity leaves the prior out, as a fitted jury's leaves its fit out:
the identity names what the cascade file declares (here: nothing but the kind), which must be known before the
calibration file is read, and the prior is what that file holds; a prior edited in the file is refused by the
file's own check (its stored verdicts must all be that label at that share,
:func:`~hf_critic.selective.claim.check_claim`).
"""

from __future__ import annotations

import math

import datasets
import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from ..critic.output import as_dataset
from ..meta_eval.length import label_prior, longer_wins
from ..selective.jury import fit_rows
from .protocol import CriticKind, Critiques, setting_of

__all__ = ["BASELINES", "LABEL_PRIOR", "LONGER_WINS", "LabelPrior", "LongerWins"]

#: How a cascade file names the length baseline and the label prior.
LONGER_WINS, LABEL_PRIOR = "longer-wins", "label-prior"
#: Every baseline's name (``baseline: NAME``, or the bare string in a cascade file).
BASELINES = (LONGER_WINS, LABEL_PRIOR)
#: The calibration file's key for the label prior (in its critic's entry).
PRIOR_KEY = "label_prior"


def _check_pairs(dataset: datasets.Dataset, where: str) -> None:
    """Refuse rows that are no pairs (one line naming ``where``)."""
    if schema.RESPONSE_1 not in dataset.column_names or schema.RESPONSE_2 not in dataset.column_names:
        raise BadInputError(f"{where}: needs pairs (response_1, response_2)")


def _no_options(options: dict, where: str, name: str) -> None:
    if options:
        raise BadInputError(f"{where}: {name} takes no options, got {sorted(options)}")


class LongerWins(CriticKind):
    """ "The longer response wins" as a critic (a baseline with a confidence): the verdicts and confidences of
    :func:`~hf_critic.meta_eval.length.longer_wins` (a tie on equal lengths, a confidence monotone in the relative
    length difference), as the meta-evaluation's baseline judges. No model, no call, order-free."""

    kind = LONGER_WINS
    baseline = True
    #: What identifies it in a fingerprint (lengths in words).
    fingerprint_source = "baseline|longer-wins|words"

    @classmethod
    def from_spec(cls, options: dict, where: str) -> LongerWins:
        """The baseline from a cascade file's ``options:`` (it takes none).

        Raises:
            ValueError: any option (naming ``where``).
        """
        _no_options(options, where, LONGER_WINS)
        return cls()

    def judge(self, records, *, swap: bool = False, source: str = "data", referenced: bool | None = None) -> Critiques:
        """The protocol's judging: :meth:`compare`'s columns, confidence kind ``length``, no call (order-free:
        ``swap`` changes nothing).

        Raises:
            ValueError: rows without ``response_1`` / ``response_2``.
        """
        dataset = as_dataset(records)
        return Critiques(self.compare(dataset), "length", 0, self.identity(setting_of(dataset), swap=swap))

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """What decides its verdicts: lengths in words (:attr:`fingerprint_source`)."""
        return [self.fingerprint_source]

    def compare(self, dataset: datasets.Dataset) -> dict[str, list]:
        """The verdicts of ``dataset``'s pairs.

        Returns:
            ``{"critique_label", "critique_confidence", "critique_status"}``, one value per row.

        Raises:
            ValueError: rows without ``response_1`` / ``response_2``.
        """
        _check_pairs(dataset, LONGER_WINS)
        labels, confidences = longer_wins(dataset[schema.RESPONSE_1], dataset[schema.RESPONSE_2])
        return _columns(labels.tolist(), confidences.tolist())


class LabelPrior(CriticKind):
    """The label prior as a critic: the most frequent human label of its calibration rows on every pair, at a constant
    confidence, that label's share among those labels (:func:`~hf_critic.meta_eval.length.label_prior`). No model,
    no call, order-free; confidence kind ``label prior``. With a constant confidence its threshold keeps every row
    or none: a cascade that starts with it decides every pair by the prior where the prior alone meets the target.

    Its prior comes from :meth:`calibrate_on` (``hf-critic calibrate``: the calibration rows, in-sample like the
    meta-evaluation's label-prior baseline; a jury member: the rows its jury is fitted on) or from a calibration file
    (:meth:`check_calibration`); the module docstring says why its identity leaves the prior out.

    Args:
        label: the prior's label code (0 = response 1, 1 = response 2, 2 = tie); None: not fitted yet.
        share: its share among the labels it was fitted on, in (0, 1] (with ``label``).
        where: where it was declared, for messages.

    Raises:
        ValueError: a label that is no code, or a share outside (0, 1].
    """

    kind = LABEL_PRIOR
    baseline = True
    #: What identifies it in a fingerprint: the kind alone (the prior is calibration, not declaration).
    fingerprint_source = "baseline|label-prior"

    def __init__(self, label: int | None = None, share: float | None = None, where: str = LABEL_PRIOR):
        self.where = where
        self.label: int | None = None
        self.share: float | None = None
        self.fitted_on = 0
        if label is not None or share is not None:
            self._set(label, share, where)

    @classmethod
    def from_spec(cls, options: dict, where: str) -> LabelPrior:
        """The baseline from a cascade file's ``options:`` (it takes none; its prior is fitted by ``calibrate``).

        Raises:
            ValueError: any option (naming ``where``).
        """
        _no_options(options, where, LABEL_PRIOR)
        return cls(where=where)

    def _set(self, label, share, where: str) -> None:
        ok = label in (0, 1, 2) and not isinstance(label, bool)
        ok = ok and not isinstance(share, bool) and isinstance(share, int | float) and 0 < share <= 1
        if not ok:
            raise BadInputError(
                f"{where}: a label prior is a label code 0 / 1 / 2 and its share in (0, 1], got label {label!r}, "
                f"share {share!r}"
            )
        self.label, self.share = int(label), float(share)

    def calibrate_on(self, human, questions=None, share: float | None = None) -> None:
        """Fit the prior on human labels.

        Args:
            human: the label codes of the rows about to be judged, one per row (pairs without one, -1 or None, are
                left out).
            questions: each row's question (None: one question a row), for ``share``.
            share: fit on the rows of this share of the questions only, the rows a ``fitted`` jury with that
                ``fit_share`` fits on (:func:`~hf_critic.selective.jury.fit_rows`); None or 1: on every row.

        Raises:
            ValueError: no row with a human label to fit on.
        """
        codes = np.asarray([-1 if h is None else int(h) for h in human], dtype=np.int64)
        if share is not None and share < 1:
            groups = list(range(len(codes))) if questions is None else list(questions)
            codes = codes[fit_rows(groups, share)]
        labelled = codes[codes >= 0]
        label, fraction = label_prior(labelled, name=f"{self.where}: human labels")
        if math.isnan(fraction):
            raise BadInputError(f"{self.where}: no human label to fit the label prior on ({len(codes)} rows)")
        self._set(label, fraction, self.where)
        self.fitted_on = len(labelled)

    def judge(self, records, *, swap: bool = False, source: str = "data", referenced: bool | None = None) -> Critiques:
        """The prior's label on every pair, at its share (order-free: ``swap`` changes nothing).

        Returns:
            :class:`~hf_critic.critics.protocol.Critiques`: ``critique_label``, ``critique_confidence``,
            ``critique_status`` (``ok``), confidence kind ``label prior``, no call.

        Raises:
            ValueError: no prior yet (one line saying how to give it one), or rows that are no pairs.
        """
        if self.label is None:
            raise BadInputError(
                f"{self.where}: the label prior has no prior to judge with: fit it on human labels first "
                "(`hf-critic calibrate`, or calibrate_on(human)), or take it from a calibration file "
                "(check_calibration(entry, setting, path), as a calibrated cascade's run does)"
            )
        dataset = as_dataset(records)
        _check_pairs(dataset, f"{source}: {LABEL_PRIOR}")
        n = len(dataset)
        columns = _columns([self.label] * n, [self.share] * n)
        return Critiques(columns, "label prior", 0, self.identity(setting_of(dataset), swap=swap))

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """What its declaration decides: the kind (:attr:`fingerprint_source`); the prior is the calibration file's
        (module docstring)."""
        return [self.fingerprint_source]

    def calibration_entry(self, setting: schema.Setting) -> dict | None:
        """Its part of a calibration file's entry: ``{"label_prior": {"label": code, "share": float, "rows": labels
        fitted on}}``; None before it is fitted."""
        if self.label is None:
            return None
        return {PRIOR_KEY: {"label": self.label, "share": self.share, "rows": self.fitted_on}}

    def check_calibration(self, entry: dict | None, setting: schema.Setting, path: str) -> None:
        """Take the prior from a calibration file's entry (:meth:`calibration_entry`).

        Raises:
            BadInputError: no prior in the entry, or one that is no label code with a share in (0, 1] (one line
                naming ``path`` and how to make a fitting file).
        """
        prior = entry.get(PRIOR_KEY) if isinstance(entry, dict) else None
        if not isinstance(prior, dict):
            raise BadInputError(
                f"{path}: {self.where}: no label prior in the calibration file: calibrate this cascade again with "
                "`hf-critic calibrate`"
            )
        self._set(prior.get("label"), prior.get("share"), f"{path}: {self.where}")
        self.fitted_on = prior.get("rows", 0)


def _columns(labels: list, confidences: list) -> dict[str, list]:
    """A baseline's critique columns: its labels and confidences, every row ``ok``."""
    return {
        schema.CRITIQUE_LABEL: labels,
        schema.CRITIQUE_CONFIDENCE: confidences,
        schema.CRITIQUE_STATUS: [schema.ParseStatus.OK.value] * len(labels),
    }
