"""Critics that combine or need no model: a jury of critics judged as one critic, and "longer wins" as a critic with
a confidence.

A cascade file's stage may be a jury (:mod:`hf_critic.critics.specs`)::

    - name: local-jury
      jury:
        aggregate: fitted          # vote | mean | fitted
        members:
          - name: smollm2-135m-critic
            options: {model: smollm2-135m-critic}
          - name: default-critic
            options: {template: mtbench, verdict: probability, explanation: none, swap: true, dtype: float32}
          - longer-wins

Each member is any critic a cascade file supports (computed, reward, served, recorded) or ``longer-wins``; the
aggregation is :mod:`hf_critic.selective.jury` (vote, mean, or a logistic regression fitted by ``hf-critic
calibrate`` on half of its calibration questions only, the thresholds set on the other half, stored in the
calibration file with the members' fingerprints and refused when a member changed). The jury's rows keep every member's verdict (``jury_members``).
"""

from __future__ import annotations

import datasets
import numpy as np

from ..core import schema
from ..core.errors import BadInputError, CriticChangedError
from ..core.identity import jury_identity
from ..core.labels import LABEL_NAMES
from ..critic.output import as_dataset
from ..meta_eval.length import longer_wins
from ..selective.jury import AGGREGATES, FIT_SHARE, JuryCounts, JuryFit, aggregate, fit_jury, fit_rows
from .protocol import CriticKind, Critiques, setting_of

__all__ = ["JURY_MEMBERS", "LONGER_WINS", "Jury", "LongerWins"]

#: The column of a jury's rows that keeps each member's verdict: ``{member: label name or None}``.
JURY_MEMBERS = "jury_members"
#: How a cascade file names the length baseline.
LONGER_WINS = "longer-wins"


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
        if options:
            raise BadInputError(f"{where}: {LONGER_WINS} takes no options, got {sorted(options)}")
        return cls()

    def judge(self, records, *, swap: bool = False, source: str = "data", referenced: bool | None = None) -> Critiques:
        """The protocol's judging: :meth:`compare`'s columns, confidence kind ``length``, no call (order-free:
        ``swap`` changes nothing; it reads no reference: ``referenced`` changes nothing either).

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
        if schema.RESPONSE_1 not in dataset.column_names or schema.RESPONSE_2 not in dataset.column_names:
            raise BadInputError(f"{LONGER_WINS}: needs pairs (response_1, response_2)")
        labels, confidences = longer_wins(dataset[schema.RESPONSE_1], dataset[schema.RESPONSE_2])
        return {
            schema.CRITIQUE_LABEL: labels.tolist(),
            schema.CRITIQUE_CONFIDENCE: confidences.tolist(),
            schema.CRITIQUE_STATUS: [schema.ParseStatus.OK.value] * len(dataset),
        }


class Jury(CriticKind):
    """Several critics judged as one (module docstring).

    Args:
        members: the members as cascade stages (:class:`hf_critic.selective.cascade.CascadeStage`: a name and a critic), at
            least one, names distinct.
        how: the aggregate, one of :data:`~hf_critic.selective.jury.AGGREGATES`.
        where: where the jury was declared, for messages.
        fit_share: ``fitted``: the share of calibration questions whose rows fit it, in (0, 1]; ``hf-critic
            calibrate`` sets the thresholds on the rest (:func:`~hf_critic.selective.jury.fit_rows`).

    Attributes:
        fit: the fitted aggregate (``fitted``), set by :meth:`judge` while calibrating or by :meth:`load_fit`.
        counts: the last run's :class:`~hf_critic.selective.jury.JuryCounts`.
        member_columns: the last run's critique columns of every member, ``{member: columns}``.
        fit_rows: the indices of the calibration rows the fit used (None before calibrating).

    Raises:
        ValueError: an unknown aggregate, no member, or a name used twice.
    """

    kind = "jury"

    def __init__(self, members, how: str, where: str = "jury", fit_share: float = FIT_SHARE):
        if how not in AGGREGATES:
            raise BadInputError(f"{where}: aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")
        names = [m.name for m in members]
        if not names or len(set(names)) != len(names):
            raise BadInputError(f"{where}: a jury needs at least one member, each with its own name (got {names})")
        self.members, self.how, self.where, self.fit_share = list(members), how, where, fit_share
        self.fit: JuryFit | None = None
        self.counts: JuryCounts | None = None
        self.member_columns: dict[str, dict[str, list]] = {}
        self.fit_rows: np.ndarray | None = None
        self._fit_labels = self._fit_groups = self._fit_share = None

    def fingerprint_source(self, member_fingerprints: list[str]) -> str:
        """What identifies the jury: its aggregate and its members' names and fingerprints, in order."""
        names = [m.name for m in self.members]
        return jury_identity(self.how, list(zip(names, member_fingerprints, strict=True)))

    def member_identities(self, setting: schema.Setting) -> list[str]:
        """Each member's identity in ``setting`` (with its own swap), in order."""
        return [m.critic.identity(setting, swap=m.swap) for m in self.members]

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """Its aggregate and its members' names and identities (:meth:`fingerprint_source`)."""
        return [self.fingerprint_source(self.member_identities(setting))]

    @property
    def fitted(self) -> bool:
        """True for the ``fitted`` aggregate (fitted on calibration rows)."""
        return self.how == "fitted"

    def check_calibration(self, entry: dict | None, setting: schema.Setting, path: str) -> None:
        """:meth:`load_fit` with the members' identities in ``setting``."""
        self.load_fit(entry, self.member_identities(setting), path)

    def calibration_entry(self, setting: schema.Setting) -> dict:
        """:meth:`fit_entry` with the members' identities in ``setting``."""
        return self.fit_entry(self.member_identities(setting))

    def calibrate_on(self, human, questions=None, share: float | None = None) -> None:
        """Fit the ``fitted`` aggregate on the rows of the next :meth:`judge` call, whose human labels are ``human``
        (label codes, one per row of those rows) and questions ``questions`` (None: one question a row): on the rows
        of ``share`` of the questions (:func:`~hf_critic.selective.jury.fit_rows`; None: :attr:`fit_share`; 1: every
        row, where no threshold is set on these rows), kept in :attr:`fit_rows`. ``hf-critic calibrate`` calls it
        with its calibration rows only and sets its thresholds on the other rows."""
        self._fit_labels = list(human)
        self._fit_groups = list(range(len(self._fit_labels))) if questions is None else list(questions)
        self._fit_share = self.fit_share if share is None else share

    def judge(self, records, *, swap: bool = False, source: str = "data", referenced: bool | None = None) -> Critiques:
        """Every member on every row (each with its own swap; its confidences made keepable), then the aggregate.

        Args:
            records: the rows; swap: unused (each member judges as its stage says); source: the data's name;
            referenced: unused (a jury compares pairs, each member in the setting of the rows).

        Returns:
            :class:`~hf_critic.critics.protocol.Critiques`: ``critique_label`` (None where undecided),
            ``critique_confidence``, ``critique_status`` (``abstained`` where undecided: never a default verdict) and
            ``jury_members``; confidence kind ``AGGREGATE aggregate``; the members' calls summed.

        Raises:
            ValueError: a ``fitted`` jury with no fit and not calibrating, or see
                :func:`~hf_critic.selective.jury.aggregate`.
        """
        dataset = as_dataset(records)
        runs = [m.critic.judge(dataset, swap=m.swap, source=source) for m in self.members]
        self.member_columns = {m.name: run.keepable() for m, run in zip(self.members, runs, strict=True)}
        if self.how == "fitted" and self._fit_labels is not None:
            if len(self._fit_labels) != len(dataset):
                raise BadInputError(f"{self.where}: {len(self._fit_labels)} human labels for {len(dataset)} rows")
            labels, self._fit_labels = self._fit_labels, None
            fitting = fit_rows(self._fit_groups, self._fit_share)
            self.fit_rows = np.flatnonzero(fitting)
            self.fit = fit_jury(
                self.member_columns, [h if f else None for h, f in zip(labels, fitting, strict=True)], self._fit_groups
            )
        if self.how == "fitted" and self.fit is None:
            raise BadInputError(
                f"{self.where}: a fitted jury needs a calibration file (write one with `hf-critic calibrate`)"
            )
        calls = sum(run.calls for run in runs)
        identity = self.identity(setting_of(dataset))
        return Critiques(self.columns(self.member_columns), f"{self.how} aggregate", calls, identity)

    def columns(self, member_columns: dict[str, dict[str, list]], fit: JuryFit | None = None) -> dict[str, list]:
        """The jury's critique columns from its members' (``fit``: another fit than :attr:`fit`, e.g. one split's).

        Sets :attr:`counts`.
        """
        labels, confidences, self.counts = aggregate(self.how, member_columns, fit or self.fit)
        n = len(labels)
        return {
            schema.CRITIQUE_LABEL: labels,
            schema.CRITIQUE_CONFIDENCE: confidences,
            schema.CRITIQUE_STATUS: [
                (schema.ParseStatus.OK if lab is not None else schema.ParseStatus.ABSTAINED).value for lab in labels
            ],
            JURY_MEMBERS: [
                {m: _label_name(c[schema.CRITIQUE_LABEL][i]) for m, c in member_columns.items()} for i in range(n)
            ],
        }

    def fit_entry(self, member_fingerprints: list[str]) -> dict:
        """The jury's part of its calibration file entry: aggregate, members with fingerprints, fit (or None)."""
        return {
            "aggregate": self.how,
            "members": [
                {"name": m.name, "fingerprint": f} for m, f in zip(self.members, member_fingerprints, strict=True)
            ],
            "fit": self.fit.to_dict() if self.fit is not None else None,
        }

    def load_fit(self, entry: dict | None, member_fingerprints: list[str], path: str) -> None:
        """Check a calibration file's jury entry against this jury and take its fit.

        Raises:
            CriticChangedError: a member changed, or the members are not the ones calibrated: one line naming the
                file, the jury and the first member that changed, and how to make a fitting file.
            BadInputError: another aggregate, or no fit in the file.
        """
        again = "calibrate this cascade again with `hf-critic calibrate`"
        name = self.where
        if not isinstance(entry, dict) or entry.get("aggregate") != self.how:
            got = entry.get("aggregate") if isinstance(entry, dict) else None
            raise BadInputError(
                f"{path}: {name}: calibrated with aggregate {got!r}, the cascade file says {self.how!r}: {again}"
            )
        stored = {m.get("name"): m.get("fingerprint") for m in entry.get("members") or [] if isinstance(m, dict)}
        if list(stored) != [m.name for m in self.members]:
            raise CriticChangedError(
                f"{path}: {name}: calibrated with the members {list(stored)}, not "
                f"{[m.name for m in self.members]}: {again}"
            )
        for member, fingerprint in zip(self.members, member_fingerprints, strict=True):
            if stored[member.name] != fingerprint:
                raise CriticChangedError(
                    f"{path}: {name}: member {member.name!r} changed since its {self.how} aggregate was "
                    f"calibrated (model, template, verdict source, decoding, swap or files): {again}"
                )
        if self.how == "fitted":
            if entry.get("fit") is None:
                raise BadInputError(f"{path}: {name}: no fitted aggregate in the calibration file: {again}")
            self.fit = JuryFit.from_dict(entry["fit"], f"{path}: {name}")


def _label_name(label) -> str | None:
    return None if label is None else LABEL_NAMES[int(label)]
