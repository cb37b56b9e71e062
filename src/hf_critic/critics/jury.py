"""A jury of critics judged as one critic.

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

Each member is any critic a cascade file supports (computed, reward, served, recorded) or a baseline (``longer-wins``,
``label-prior``: :mod:`hf_critic.critics.baselines`, a member whose prior is fitted on the jury's own fit rows); the
aggregation is :mod:`hf_critic.selective.jury` (vote, mean, or a logistic regression fitted by ``hf-critic
calibrate`` on half of its calibration questions only, the thresholds set on the other half, stored in the
calibration file with the members' fingerprints and refused when a member changed). The jury's rows keep every member's verdict (``jury_members``).
"""

from __future__ import annotations

import numpy as np

from ..core import schema
from ..core.errors import BadInputError, CriticChangedError
from ..core.identity import jury_identity
from ..core.labels import LABEL_NAMES
from ..critic.output import as_dataset
from ..selective.jury import AGGREGATES, FIT_SHARE, JuryCounts, JuryFit, aggregate, fit_jury, fit_rows
from .protocol import CriticKind, Critiques, setting_of

__all__ = ["JURY_MEMBERS", "MEMBER_ENTRIES", "Jury"]

#: The column of a jury's rows that keeps each member's verdict: ``{member: label name or None}``.
JURY_MEMBERS = "jury_members"
#: The key of a jury's calibration entry that keeps its members' own entries (a label prior's): ``{member: entry}``.
MEMBER_ENTRIES = "member_entries"


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
        """:meth:`load_fit` with the members' identities in ``setting``, then each member's own part of the entry
        (:data:`MEMBER_ENTRIES`: a label prior's) handed to it."""
        self.load_fit(entry, self.member_identities(setting), path)
        entries = entry.get(MEMBER_ENTRIES) or {}
        for member in self.members:
            member.critic.check_calibration(entries.get(member.name), setting, f"{path}: {self.where}")

    def calibration_entry(self, setting: schema.Setting) -> dict:
        """:meth:`fit_entry` with the members' identities in ``setting``, and the members' own entries (a label
        prior's) under :data:`MEMBER_ENTRIES` where any has one."""
        entry = self.fit_entry(self.member_identities(setting))
        members = {m.name: m.critic.calibration_entry(setting) for m in self.members}
        members = {name: e for name, e in members.items() if e is not None}
        if members:
            entry[MEMBER_ENTRIES] = members
        return entry

    def calibrate_on(self, human, questions=None, share: float | None = None) -> None:
        """Fit the ``fitted`` aggregate on the rows of the next :meth:`judge` call, whose human labels are ``human``
        (label codes, one per row of those rows) and questions ``questions`` (None: one question a row): on the rows
        of ``share`` of the questions (:func:`~hf_critic.selective.jury.fit_rows`; None: :attr:`fit_share`; 1: every
        row, where no threshold is set on these rows), kept in :attr:`fit_rows`. ``hf-critic calibrate`` calls it
        with its calibration rows only and sets its thresholds on the other rows.

        Every member is handed the same labels (a label prior fits its prior on them): a ``fitted`` jury's members
        on its fit rows only, a ``vote`` / ``mean`` jury's (which fits nothing) on every row."""
        share = self.fit_share if share is None else share
        for member in self.members:
            member.critic.calibrate_on(human, questions, share if self.fitted else 1)
        if not self.fitted:
            return
        self._fit_labels = list(human)
        self._fit_groups = list(range(len(self._fit_labels))) if questions is None else list(questions)
        self._fit_share = share

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
