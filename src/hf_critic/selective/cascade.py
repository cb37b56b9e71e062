"""Critics in a cascade: the first critic judges every row, each later one only the rows its predecessors were not
confident enough to keep, and the rows no critic keeps are abstained (Jung, Brahman, Choi, "Trust or Escalate",
ICLR 2025, §3.3).

A cascade is a list of :class:`CascadeStage`: a :class:`~hf_critic.critic.Critic` (any kind: a local model, a reward
model, a server behind ``--base-url``) or :class:`RecordedVerdicts` (a published judge's verdict files, or the critique
file of an earlier run: read, not computed). Each stage's threshold comes from a calibration file
(:mod:`hf_critic.selective.calibration`); a file made for other critics, another template or another setting is
refused. :func:`judge_all` runs every stage on every row (what calibration needs); :func:`run_cascade` runs the
cascade itself.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets

from ..core import schema
from ..core.errors import BadInputError, CriticChangedError
from ..core.identity import recorded_identity, text_digest
from ..core.labels import swap_label
from ..core.matching import id_conflicts, name_rows, text_identity
from ..critic.output import as_dataset
from ..critics.jury import JURY_MEMBERS
from ..critics.protocol import CriticKind, Critiques, setting_of
from . import CalibrationFile, confidence_of

__all__ = [
    "CascadeStage",
    "RecordedVerdicts",
    "StageRun",
    "check_calibration",
    "critic_fingerprint",
    "describe_missing",
    "judge_all",
    "pair_key",
    "run_cascade",
]

#: The columns a cascade's output keeps from the deciding critic (critic-specific columns such as distributions are
#: in each critic's own run, not in the cascade's rows).
VERDICT_COLUMNS = (
    schema.CRITIQUE_LABEL,
    schema.CRITIQUE_STATUS,
    schema.CRITIQUE_EXPLANATION,
    schema.CRITIQUE_GENERATION,
)


def pair_key(question: str, response_1: str, response_2: str) -> str:
    """The identity of a pairwise row by its text (:func:`hf_critic.core.matching.text_identity`: whitespace normalised,
    nothing folded): how recorded verdicts find their rows."""
    return text_identity(question, response_1, response_2)


def _canonical(value) -> str:
    """A label map (or None) as canonical text: equal maps give equal text whatever their key order."""
    import json

    return json.dumps(value, sort_keys=True, default=str)


class RecordedVerdicts(CriticKind):
    """A critic whose pairwise verdicts were read from files, not computed: a published judge's verdicts in both
    orders (e.g. Auto-J-13B's on Eval-P), or the critique file of an earlier ``hf-critic compare`` run.

    Rows are matched to the judged data by ``id`` where both have an ``id`` column (every recorded id whose pair differs
    from the data's row of that id is a conflict: refused, counted and named), else by their text (:func:`pair_key`:
    question and both responses, whitespace normalised, no Unicode folding) and occurrence: the data's k-th copy of a
    pair takes the recorded k-th copy. Copies whose verdicts agree are interchangeable; copies with different verdicts
    are matched by order only when the data holds as many copies (and counted as ``conflicting``), and refused
    otherwise (which copy is whose cannot be told). A judged row with no recorded verdict gets none (it is escalated,
    and counted and named as unmatched).

    Args:
        name: the critic's name in reports.
        rows: a dataset with ``question``, ``response_1``, ``response_2`` and ``critique_label`` (and, for a published
            judge, ``critique_label_swapped``: the swapped order's verdict mapped back; for an earlier run, its
            critique columns, whose ``critique_confidence`` or verdict source gives the confidence).
        files: the files the verdicts were read from (their content is the critic's fingerprint).
        published: True for a published judge's labels (confidence: the agreement of its two orders).
    """

    kind = "recorded"
    recorded = True

    def __init__(self, name: str, rows: datasets.Dataset, files: Sequence[str], *, published: bool):
        missing = [
            c
            for c in (*schema.Setting(schema.Task.PAIRWISE, False).fields, schema.CRITIQUE_LABEL)
            if c not in rows.column_names
        ]
        if missing:
            raise BadInputError(f"{', '.join(files)}: recorded verdicts need the columns {missing}")
        self.name, self.rows, self.files, self.published = name, rows, list(files), published
        self.keys = _pair_keys(rows)
        self.copies: dict[str, list[int]] = defaultdict(list)  # pair text -> its recorded rows, in order
        for i, key in enumerate(self.keys):
            self.copies[key].append(i)
        verdict_columns = [
            c
            for c in (schema.CRITIQUE_LABEL, schema.CRITIQUE_LABEL_SWAPPED, schema.CRITIQUE_CONFIDENCE)
            if c in rows.column_names
        ]
        self.verdicts = list(zip(*(rows[c] for c in verdict_columns), strict=True))
        self.ids: dict[str, int] | None = None
        if "id" in rows.column_names and None not in rows["id"]:
            ids = [str(i) for i in rows["id"]]
            self.ids = dict(zip(ids, range(len(ids)), strict=True))
            if len(self.ids) != len(ids):
                twice = next(i for i, n in Counter(ids).items() if n > 1)
                raise BadInputError(
                    f"{', '.join(files)}: id {twice!r} is found more than once in the recorded verdicts"
                )
        self.reading = ""  # how the files were read (field, label map, benchmark), part of the fingerprint

    @classmethod
    def from_verdict_files(
        cls,
        name: str,
        benchmark: datasets.Dataset,
        first: str,
        swapped: str | None = None,
        field: str | None = None,
        label_map=None,
    ) -> RecordedVerdicts:
        """A published judge's verdict files, one row per ``benchmark`` row in its order (Auto-J's layout).

        Args:
            name: the critic's name.
            benchmark: the rows the files follow (question, response_1, response_2).
            first: the verdicts in the benchmark's order of responses.
            swapped: the same pairs judged with the responses swapped, in swapped terms (mapped back here); None when
                only one order was judged (every verdict then has confidence 1.0, kind ``constant``: a threshold keeps
                the critic whole or not at all).
            field: the verdict field (default ``output``); label_map: the file's label convention.

        Raises:
            RecordError: a malformed verdict (names the file, line and field).
            ValueError: a file whose row count differs from the benchmark's.
        """
        from ..loaders.generic import load_verdict_file

        columns = {}
        for which, path in (("first", first), ("swapped", swapped)):
            if not path:
                continue
            verdicts = load_verdict_file(path, "pairwise", field, label_map=label_map)
            if len(verdicts) != len(benchmark):
                raise BadInputError(
                    f"{path}: {len(verdicts)} verdicts for the {len(benchmark)} rows of the benchmark "
                    "they were made on: a verdict file has one row per benchmark row, in order"
                )
            if which == "first":
                columns[schema.CRITIQUE_LABEL] = verdicts
            else:
                columns[schema.CRITIQUE_LABEL_SWAPPED] = [swap_label(v) for v in verdicts]
        keep = [
            *schema.Setting(schema.Task.PAIRWISE, False).fields,
            *(["id"] if "id" in benchmark.column_names else []),
        ]
        rows = benchmark.select_columns(keep)
        for column, values in columns.items():
            rows = rows.add_column(column, values)
        recorded = cls(name, rows, [p for p in (first, swapped) if p], published=True)
        # the verdicts' meaning: their field, label convention and the benchmark rows (in order) they follow
        order = text_digest("\n".join(recorded.keys))
        recorded.reading = f"field={field}|label_map={_canonical(label_map)}|benchmark={order}"
        return recorded

    @classmethod
    def from_critiques(cls, name: str, path: str) -> RecordedVerdicts:
        """The critique file of an earlier ``hf-critic compare`` run (JSONL / parquet): its verdicts and confidences.

        Raises:
            RecordError / ValueError: an unreadable file, or one without the pairwise columns.
        """
        from ..io import load_records

        return cls(name, load_records(path), [path], published=False)

    @property
    def fingerprint_source(self) -> str:
        """What identifies these verdicts: the digest of their files' content, and how they were read (field, label map,
        the benchmark rows in order)."""
        return recorded_identity(self.files, published=self.published, reading=self.reading)

    def match(self, records: datasets.Dataset) -> tuple[list[int | None], list[int]]:
        """The recorded row of each row of ``records`` (class docstring): by id, else by (text, occurrence).

        Returns:
            ``(found, conflicting)``: per row its recorded row index or None (no recorded verdict), and the rows
            matched among copies of one pair whose recorded verdicts differ.

        Raises:
            ValueError: recorded ids whose pair differs from the data's row of the same id (counted, the first ones
                named), or copies of a pair with different recorded verdicts in a number that differs from the
                data's copies (one line naming the files and the row).
        """
        files = ", ".join(self.files)
        keys = _pair_keys(records)
        if self.ids is not None and "id" in records.column_names:
            data_ids = [str(i) for i in records["id"]]
            found = [self.ids.get(i) for i in data_ids]
            pairs = [(row, i) for row, i in enumerate(found) if i is not None]
            wrong = [pairs[k][0] for k in id_conflicts(pairs, keys, self.keys)]
            if wrong:
                raise BadInputError(
                    f"{files}: {len(wrong)} of the {len(pairs)} ids found in both hold another pair in the "
                    f"recorded verdicts than in the data ({name_rows(wrong, data_ids)}): the ids name "
                    "other rows; give the data and the verdicts the same rows' ids"
                )
            return found, []
        wanted, seen, found, conflicting = Counter(keys), Counter(), [], []
        for row, key in enumerate(keys):
            copies, occurrence = self.copies.get(key, []), seen[key]
            seen[key] += 1
            if len({self.verdicts[i] for i in copies}) <= 1:  # no copy, or copies that agree: any one is the verdict
                found.append(copies[min(occurrence, len(copies) - 1)] if copies else None)
                continue
            if wanted[key] != len(copies):
                raise BadInputError(
                    f"{files}: the pair of data row {row} is recorded {len(copies)} times with different "
                    f"verdicts and found {wanted[key]} times in the data: which verdict is its own "
                    "cannot be told (give both an id column)"
                )
            found.append(copies[occurrence])
            conflicting.append(row)
        return found, conflicting

    def compare(self, records: datasets.Dataset) -> tuple[dict[str, list], list[int], list[int]]:
        """The recorded verdicts of ``records``' rows (matched by :meth:`match`).

        Returns:
            ``(columns, unmatched, conflicting)``: ``critique_label`` (None where no verdict was recorded),
            ``critique_status`` (``skipped`` for unmatched rows), ``critique_confidence``, and the explanation /
            generation where the file has them; ``unmatched``: the rows with no recorded verdict, ``conflicting``:
            the rows matched among copies with different verdicts (row positions in ``records``, for
            :func:`hf_critic.core.matching.name_rows`).

        Raises:
            ValueError: see :meth:`match`.
        """
        found, conflicting = self.match(records)
        present = [c for c in self.rows.column_names if c.startswith("critique_")]
        data = {c: self.rows[c] for c in present}
        columns = {c: [None if i is None else data[c][i] for i in found] for c in present}
        if schema.CRITIQUE_CONFIDENCE not in columns:
            columns[schema.CRITIQUE_CONFIDENCE] = confidence_of(columns, recorded=self.published)[0]
        statuses, labels = columns.get(schema.CRITIQUE_STATUS), columns[schema.CRITIQUE_LABEL]

        def status(k: int, i: int | None) -> str:
            if i is None:
                return schema.ParseStatus.SKIPPED.value
            if statuses and statuses[k]:
                return statuses[k]
            return (schema.ParseStatus.OK if labels[k] is not None else schema.ParseStatus.UNPARSED).value

        columns[schema.CRITIQUE_STATUS] = [status(k, i) for k, i in enumerate(found)]
        return columns, [k for k, i in enumerate(found) if i is None], conflicting

    def judge(self, records, *, swap: bool = False, source: str = "data", referenced: bool | None = None) -> Critiques:
        """The protocol's judging: :meth:`compare`'s columns, unmatched and conflicting rows; confidence kind
        ``recorded`` / ``constant`` for a published judge's labels, else the critique file's verdict source's; no
        call. ``swap`` and ``referenced`` change nothing (the files hold what they hold).

        Raises:
            ValueError: see :meth:`match`.
        """
        data = as_dataset(records)
        columns, unmatched, conflicting = self.compare(data)
        kind = confidence_of(columns, recorded=self.published)[1]
        identity = self.identity(setting_of(data), swap=swap)
        return Critiques(columns, kind, 0, identity, unmatched, conflicting)

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """Its files' content and how they were read (:attr:`fingerprint_source`)."""
        return [self.fingerprint_source]


def _pair_keys(rows: datasets.Dataset) -> list[str]:
    return [
        pair_key(q, a, b)
        for q, a, b in zip(rows[schema.QUESTION], rows[schema.RESPONSE_1], rows[schema.RESPONSE_2], strict=True)
    ]


@dataclass
class CascadeStage:
    """One critic of a cascade.

    Attributes:
        name: its name in the calibration file, the ``critique_critic`` column and the summary.
        critic: any kind of critic (:class:`~hf_critic.critics.protocol.CriticKind`: a
            :class:`~hf_critic.critic.Critic`, :class:`RecordedVerdicts`, a :class:`~hf_critic.critics.jury.Jury`,
            a baseline of :mod:`hf_critic.critics.baselines`, or a kind of :mod:`hf_critic.critics.registry`).
        swap: judge both orders (a computed critic; its confidence then covers both).
        price_per_call: money per request (any currency), for the summary's cost; None: not priced.
        logistic: a reward critic's fitted ``(slope, intercept)`` of its margin confidence (from the calibration).
        delta_share: its share of the cascade's delta, in (0, 1]; None: an equal part of what the others leave
            (:func:`delta_shares`).
    """

    name: str
    critic: CriticKind
    swap: bool = False
    price_per_call: float | None = None
    logistic: tuple[float, float] | None = None
    delta_share: float | None = None

    @property
    def recorded(self) -> bool:
        """True when the verdicts are read from files, not computed."""
        return self.critic.recorded


def delta_shares(stages: Sequence[CascadeStage], where: str = "cascade") -> list[float]:
    """Each critic's share of the cascade's delta (a union bound: any split fixed before the data is seen keeps the
    guarantee): the ``delta_share`` a critic names, the rest of 1 split equally among the others (Bonferroni, Trust
    or Escalate §3.3, when none names one).

    Returns:
        One share per stage, in (0, 1], summing to 1.

    Raises:
        ValueError: shares summing above 1, leaving nothing for a critic without one, or all named and not summing
            to 1 (names ``where``).
    """
    named = [s.delta_share for s in stages if s.delta_share is not None]
    rest, others = 1.0 - sum(named), len(stages) - len(named)
    if rest < -1e-9 or (others and rest <= 1e-9) or (not others and abs(rest) > 1e-9):
        raise BadInputError(
            f"{where}: the critics' delta_share values {named} must sum to 1 when every critic names one, "
            f"else below 1 (the others split the rest)"
        )
    return [s.delta_share if s.delta_share is not None else rest / others for s in stages]


def critic_fingerprint(stage: CascadeStage, setting: schema.Setting) -> str:
    """The identity of a stage's critic for a setting (:meth:`~hf_critic.critics.protocol.CriticKind.identity`: every
    option that changes its verdicts and nothing else, :func:`hf_critic.core.identity.verdict_options` (a reward
    critic's :func:`~hf_critic.core.identity.reward_options`), and swap;
    or its recorded files' content, field, label map and the benchmark rows they follow; a jury's aggregate and its
    members' identities); 16 hex digits of SHA-256."""
    return stage.critic.identity(setting, swap=stage.swap)


@dataclass
class StageRun:
    """One stage's run on the rows sent to it.

    Attributes:
        name: the stage's name.
        columns: its critique columns (``critique_label``, ``critique_confidence``, ...), one value per row sent.
        asked: rows sent to it; calls: requests (rows x orders; 0 for recorded verdicts); seconds: wall time.
        recorded: the verdicts were read, not computed; unmatched: rows a recorded critic had no verdict for;
        conflicting: rows a recorded critic matched among copies of one pair with different verdicts (by order);
        unmatched_rows / conflicting_rows: those rows named (:func:`hf_critic.core.matching.name_rows`; "" for none).
        price_per_call: as in :class:`CascadeStage`.
        kind: the confidence kind of its verdicts (:data:`hf_critic.selective.CONFIDENCE_KINDS`; None: none).
    """

    name: str
    columns: dict[str, list]
    asked: int
    calls: int
    seconds: float
    recorded: bool
    unmatched: int = 0
    price_per_call: float | None = None
    conflicting: int = 0
    kind: str | None = None
    unmatched_rows: str = ""
    conflicting_rows: str = ""

    @property
    def money(self) -> float | None:
        """``calls * price_per_call``, or None when unpriced."""
        return None if self.price_per_call is None else self.calls * self.price_per_call

    def without_confidence(self, confidences: Sequence | None = None) -> Counter:
        """The rows whose verdict has no usable confidence (never kept), by why: ``not in its files`` (a recorded
        critic's unmatched rows), the row's status (``abstained`` in an earlier cascade's file, ``unparsed``,
        ``low_mass`` ...), or ``no usable confidence`` (a verdict whose confidence is None, NaN or outside [0, 1]).

        Args:
            confidences: the confidences to count (default: ``columns["critique_confidence"]``).
        """
        confidences = self.columns[schema.CRITIQUE_CONFIDENCE] if confidences is None else confidences
        statuses = self.columns.get(schema.CRITIQUE_STATUS) or [None] * len(confidences)
        reasons = Counter()
        for c, status in zip(confidences, statuses, strict=True):
            if c is not None:
                continue
            if status == schema.ParseStatus.SKIPPED.value and self.recorded:
                reasons["not in its files"] += 1
            elif status in (None, schema.ParseStatus.OK.value):
                reasons["no usable confidence"] += 1
            else:
                reasons[status] += 1
        return reasons


def describe_missing(reasons: Counter, rows: int) -> str:
    """``"N of ROWS rows without a usable confidence (never kept): a not in its files, b abstained"``; "" for none."""
    total = sum(reasons.values())
    if not total:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in reasons.most_common())
    return f"{total} of {rows} rows without a usable confidence (never kept): {why}"


def _judge_stage(stage: CascadeStage, dataset: datasets.Dataset, source: str) -> StageRun:
    """Run one stage on ``dataset`` (:meth:`~hf_critic.critics.protocol.CriticKind.judge`); a reward critic's fitted
    margin logistic applied, its confidences made keepable (:meth:`~hf_critic.critics.protocol.Critiques.keepable`)
    and its confidence kind recorded."""
    started = time.perf_counter()
    critiques = stage.critic.judge(dataset, swap=stage.swap, source=source)
    if stage.logistic is not None and schema.CRITIQUE_REWARD in critiques.columns:
        critiques.columns[schema.CRITIQUE_CONFIDENCE] = confidence_of(critiques.columns, logistic=stage.logistic)[0]
    ids = dataset["id"] if "id" in dataset.column_names and None not in dataset["id"] else None
    return StageRun(
        stage.name,
        critiques.keepable(),
        len(dataset),
        critiques.calls,
        time.perf_counter() - started,
        stage.recorded,
        len(critiques.unmatched),
        stage.price_per_call,
        len(critiques.conflicting),
        critiques.confidence_kind if len(dataset) else None,
        name_rows(critiques.unmatched, ids),
        name_rows(critiques.conflicting, ids),
    )


def judge_all(stages: Sequence[CascadeStage], records, source: str = "data") -> list[StageRun]:
    """Every stage on every row (calibration needs each critic's verdict and confidence on all rows).

    Returns:
        One :class:`StageRun` per stage, in cascade order.
    """
    dataset = as_dataset(records)
    return [_judge_stage(stage, dataset, source) for stage in stages]


def check_calibration(
    calibration: CalibrationFile, stages: Sequence[CascadeStage], setting: schema.Setting, path: str
) -> None:
    """Refuse a calibration file made for other critics, another template or another setting.

    Raises:
        CriticChangedError: a critic (or the cascade's list of critics) differs from the one calibrated: one line
            naming the file and the critic (and how to make a fitting file).
        BadInputError: a calibration for another setting.
    """
    again = "calibrate this cascade with `hf-critic calibrate`"
    if calibration.setting != setting.name:
        raise BadInputError(f"{path}: calibrated for {calibration.setting}, the data is {setting.name}: {again}")
    names = [c.name for c in calibration.critics]
    if names != [s.name for s in stages]:
        raise CriticChangedError(
            f"{path}: calibrated for the cascade {names}, not {[s.name for s in stages]}: {again}"
        )
    for entry, stage in zip(calibration.critics, stages, strict=True):
        stage.critic.check_calibration(entry.jury, setting, path)  # a jury's changed member is named first
        if entry.fingerprint != critic_fingerprint(stage, setting):
            raise CriticChangedError(
                f"{path}: critic {stage.name!r} differs from the one calibrated (model, template, "
                f"verdict source, decoding, swap or recorded files changed): {again}"
            )


@dataclass
class CascadeResult:
    """What :func:`run_cascade` returns: the critiques and the run's summary.

    Attributes:
        critiques: the input rows plus ``critique_label`` (None when abstained), ``critique_status`` (``abstained``
            where no critic kept the row), ``critique_confidence`` and ``critique_critic`` (the deciding critic),
            ``critique_explanation`` and ``critique_generation`` where the deciding critic wrote them, and
            ``jury_members`` (each member's verdict) on the rows a jury judged.
        stages: one :class:`StageRun` per critic asked.
        thresholds: the thresholds applied, per critic.
    """

    critiques: datasets.Dataset
    stages: list[StageRun] = field(default_factory=list)
    thresholds: list[float | None] = field(default_factory=list)

    def summary(self) -> dict:
        """``{"rows", "kept", "coverage", "abstained", "critics": [{"name", "threshold", "asked", "decided", "share",
        "calls", "seconds", "money", "recorded", "unmatched", "conflicting", "unmatched_rows", "conflicting_rows" (the
        rows named), "without_confidence": {why: rows}}]}``."""
        rows = len(self.critiques)
        deciders = self.critiques[schema.CRITIQUE_CRITIC]
        critics = []
        for run, lam in zip(self.stages, self.thresholds, strict=False):
            decided = sum(d == run.name for d in deciders)
            critics.append(
                {
                    "name": run.name,
                    "threshold": lam,
                    "asked": run.asked,
                    "decided": decided,
                    "share": decided / rows if rows else 0.0,
                    "calls": run.calls,
                    "seconds": round(run.seconds, 2),
                    "money": run.money,
                    "recorded": run.recorded,
                    "unmatched": run.unmatched,
                    "conflicting": run.conflicting,
                    "unmatched_rows": run.unmatched_rows,
                    "conflicting_rows": run.conflicting_rows,
                    "without_confidence": dict(run.without_confidence()),
                }
            )
        kept = sum(d is not None for d in deciders)
        return {
            "rows": rows,
            "kept": kept,
            "coverage": kept / rows if rows else 0.0,
            "abstained": rows - kept,
            "critics": critics,
        }

    def summary_lines(self) -> list[str]:
        """The summary as plain lines for the terminal."""
        s = self.summary()
        lines = [
            f"cascade: {s['kept']}/{s['rows']} rows decided (coverage {100 * s['coverage']:.1f}%), "
            f"{s['abstained']} abstained (no critic confident enough: no verdict)"
        ]
        for c in s["critics"]:
            how = "verdicts read from files, not computed" if c["recorded"] else f"{c['calls']} calls"
            cost = f", {c['money']:.4g} in money" if c["money"] is not None else ""
            unmatched = f", {c['unmatched']} rows not in its files ({c['unmatched_rows']})" if c["unmatched"] else ""
            lam = "keeps no row (no threshold passed)" if c["threshold"] is None else f"threshold {c['threshold']:.4g}"
            lines.append(
                f"  {c['name']}: asked {c['asked']}, decided {c['decided']} ({100 * c['share']:.1f}% of "
                f"rows), {lam}; {how}, {c['seconds']:.1f} s{cost}{unmatched}"
            )
            missing = describe_missing(Counter(c["without_confidence"]), c["asked"])
            if missing:
                lines.append(f"    {missing}")
            if c["conflicting"]:
                lines.append(
                    f"    {c['conflicting']} rows matched by order among copies of a pair with different "
                    f"recorded verdicts ({c['conflicting_rows']})"
                )
        return lines


def _keep_jury_members(out: dict[str, list], columns: dict[str, list], rows: list[int]) -> None:
    """A jury's members' verdicts (``jury_members``) on every row it judged, kept or escalated."""
    if JURY_MEMBERS not in columns:
        return
    kept = out.setdefault(JURY_MEMBERS, [None] * len(out[schema.CRITIQUE_STATUS]))
    for k, row in enumerate(rows):
        kept[row] = {**(kept[row] or {}), **columns[JURY_MEMBERS][k]}


def run_cascade(
    stages: Sequence[CascadeStage],
    records,
    calibration: CalibrationFile,
    *,
    source: str = "data",
    calibration_path: str = "calibration",
) -> CascadeResult:
    """Judge ``records`` with a calibrated cascade (Trust or Escalate §3.3): each critic only on the rows no earlier
    critic kept; a row no critic keeps is ``abstained`` (no verdict, never a default).

    Args:
        stages: the critics, cheapest first.
        records: pairwise rows (question, response_1, response_2; reference for the referenced setting).
        calibration: the cascade's calibration (:func:`hf_critic.selective.load_calibration`).
        source, calibration_path: names for messages.

    Returns:
        A :class:`CascadeResult`.

    Raises:
        ValueError: a calibration file made for another cascade or setting (:func:`check_calibration`), or data
            that is not pairwise.
    """
    dataset = as_dataset(records)
    if schema.RESPONSE_1 not in dataset.column_names:
        raise BadInputError(
            f"{source}: a cascade compares pairs (response_1, response_2); pointwise grading has no "
            "human-agreement guarantee here"
        )
    setting = schema.Setting(schema.Task.PAIRWISE, schema.REFERENCE in dataset.column_names)
    check_calibration(calibration, stages, setting, calibration_path)
    rows = len(dataset)
    out = {c: [None] * rows for c in (*VERDICT_COLUMNS, schema.CRITIQUE_CONFIDENCE, schema.CRITIQUE_CRITIC)}
    out[schema.CRITIQUE_STATUS] = [schema.ParseStatus.ABSTAINED.value] * rows
    remaining = list(range(rows))
    result = CascadeResult(dataset)
    for stage, entry in zip(stages, calibration.critics, strict=True):
        if not remaining:
            break
        if entry.logistic is not None:
            stage.logistic = tuple(entry.logistic)
        run = _judge_stage(stage, dataset.select(remaining), source)
        if run.kind != entry.confidence:
            raise BadInputError(
                f"{calibration_path}: critic {stage.name!r} was calibrated on confidences of kind "
                f"{entry.confidence!r}, its verdicts now carry {run.kind!r}: calibrate this cascade "
                "with `hf-critic calibrate`"
            )
        result.stages.append(run)
        result.thresholds.append(entry.threshold)
        _keep_jury_members(out, run.columns, remaining)
        confidence = run.columns[schema.CRITIQUE_CONFIDENCE]  # None: no verdict, or no usable confidence
        left = []
        for k, row in enumerate(remaining):
            c = confidence[k]
            if entry.threshold is None or c is None or not c >= entry.threshold:
                left.append(row)
                continue
            for column in VERDICT_COLUMNS:
                out[column][row] = run.columns.get(column, [None] * len(remaining))[k]
            out[schema.CRITIQUE_CONFIDENCE][row] = c
            out[schema.CRITIQUE_CRITIC][row] = stage.name
        remaining = left
    critiques = dataset
    for column, values in out.items():
        if column in critiques.column_names:
            critiques = critiques.remove_columns(column)
        critiques = critiques.add_column(column, values)
    result.critiques = critiques
    return result
