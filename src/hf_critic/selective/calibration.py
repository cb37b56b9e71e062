"""Thresholds with a human-agreement guarantee: fixed-sequence testing with an exact binomial bound, per critic and
for a cascade of critics.

Trust or Escalate (Jung, Brahman, Choi, ICLR 2025, §3.1-3.3): a critic keeps its verdict on a row when its confidence
is at least a threshold lambda. lambda is chosen on a human-labelled calibration set so that, with probability at
least ``1 - delta`` over that set, the verdicts kept on new rows from the same distribution agree with humans at rate
at least ``1 - alpha``. The candidates are tested from the highest confidence down (fixed-sequence testing, Bauer
1991): at each candidate, the exact (Clopper-Pearson) upper bound of the disagreement rate among the rows at or above
it must be at most ``alpha``; the first failure stops the sequence and lambda is the last candidate that passed. A
critic none of whose candidates passes keeps no row. In a cascade, ``delta`` is divided among the critics
(Bonferroni) and each later critic is calibrated on the rows its predecessors did not keep.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..core.errors import BadInputError

__all__ = [
    "CALIBRATION_FORMAT",
    "CalibrationFile",
    "CriticThreshold",
    "as_confidences",
    "calibrate_cascade",
    "cascade_decisions",
    "clopper_pearson_upper",
    "data_hash",
    "fixed_sequence_test",
    "fixed_sequence_threshold",
    "keepable_confidences",
    "read_calibration",
]

#: The ``format`` field of a calibration file; a file of another format is refused. Format 2 added each critic's
#: ``failed`` candidate; format 3 carries the calibration rows themselves (ids and human labels, each critic's verdict
#: and confidence on them, a fitted jury's fit rows), from which every threshold and fit is re-derived on load
#: (:mod:`hf_critic.selective.claim`).
CALIBRATION_FORMAT = "hf-critic-calibration/3"
#: Formats that are refused with "calibrate again" rather than "not a calibration file".
OLD_FORMATS = ("hf-critic-calibration/1", "hf-critic-calibration/2")
#: Default minimum number of calibration rows at or above a candidate threshold before it is tested.
DEFAULT_MIN_ROWS = 30


def clopper_pearson_upper(k: int, n: int, delta: float) -> float:
    """The exact one-sided ``1 - delta`` upper confidence bound of a binomial rate (Clopper and Pearson, 1934).

    Args:
        k: failures (disagreements with humans) among ``n`` rows, ``0 <= k <= n``.
        n: rows, ``>= 1``.
        delta: one-sided error level in (0, 0.5].

    Returns:
        The bound in [0, 1]: the upper end of :func:`scipy.stats.binomtest`'s exact two-sided ``1 - 2 delta``
        interval.

    Raises:
        ValueError: ``n < 1``, ``k`` outside ``[0, n]`` or ``delta`` outside (0, 0.5].
    """
    from scipy.stats import binomtest

    if n < 1 or not 0 <= k <= n or not 0 < delta <= 0.5:
        raise BadInputError(
            f"clopper_pearson_upper needs 0 <= k <= n, n >= 1 and delta in (0, 0.5], got k={k}, n={n}, delta={delta}"
        )
    return float(binomtest(k, n).proportion_ci(confidence_level=1 - 2 * delta, method="exact").high)


@dataclass
class CriticThreshold:
    """One critic's calibrated threshold (one entry of a calibration file).

    Attributes:
        name: the critic's name in its cascade.
        fingerprint: identity of the critic (model and weights, template, setting, verdict source; for recorded
            verdicts, their files' content), :func:`hf_critic.selective.cascade.critic_fingerprint`.
        confidence: its confidence kind (:data:`hf_critic.selective.confidence.CONFIDENCE_KINDS`).
        threshold: lambda in [0, 1]: the critic keeps rows whose confidence is at least this; None when no candidate
            passed (the critic keeps no row).
        n: calibration rows at or above the threshold (0 when none passed).
        k: their disagreements with the human labels.
        upper_bound: the Clopper-Pearson upper bound of the disagreement rate at the threshold (None when none
            passed).
        delta: this critic's share of the cascade's delta.
        calibration_rows: the rows this critic was calibrated on (those its predecessors did not keep).
        coverage: the share of ALL calibration rows it keeps.
        logistic: a reward critic's fitted ``[slope, intercept]`` of its margin confidence, else None.
        failed: the candidate whose failed test stopped the sequence, ``{"threshold", "n", "k", "upper_bound"}`` on
            this critic's calibration rows (the next confidence below ``threshold``, or the first one tested when
            none passed); None when no tested candidate failed. It is what makes ``threshold`` checkable: the file's
            alpha must pass at ``threshold`` and fail there (:func:`hf_critic.selective.claim.check_claim`).
        jury: the critic's own entry (:meth:`~hf_critic.critics.protocol.CriticKind.calibration_entry`): a label
            prior's ``{"label_prior": {"label", "share", "rows"}}``, or a jury's aggregate, members (name and
            fingerprint), fitted aggregate (:meth:`hf_critic.critics.jury.Jury.fit_entry`) and its members' own
            entries (``member_entries``); else None; a fitted one also carries the rows it was fitted on
            (``fit_rows``: features, human labels, cross-validation folds) and its members' features on the
            threshold rows (``threshold_features``), from which the fit and the jury's verdicts are re-derived; a
            vote or mean one its members' labels and confidences there (``threshold_members``).
        verdicts: the critic's verdict on every threshold row of the file (``CalibrationFile.rows``), in order:
            ``{"labels": [0 / 1 / 2 / None], "confidences": [float in [0, 1] / None]}`` (the keepable confidences,
            None where there is no verdict), and for a reward critic ``"margins"`` (``reward_1 - reward_2``, from
            which its confidences are re-derived through ``logistic``). The threshold, n, k, bound and failed
            candidate are re-derived from them and the human labels on load.
        probes: a served critic's (``--base-url``) re-checkable rows: ``[{"index", "row": {question, response_1,
            response_2 [, reference]}, "label", "confidence"}]``, a few calibration rows (``index``: the place among
            the threshold rows, whose stored verdict the probe must repeat) with the verdict it gave; ``compare
            --cascade`` judges them again before trusting the threshold (:mod:`hf_critic.commands.cascade_probes`).
            None for other critics (a local model is known by its weights' content, recorded verdicts by their
            files').
    """

    name: str
    fingerprint: str
    confidence: str | None
    threshold: float | None
    n: int
    k: int
    upper_bound: float | None
    delta: float
    calibration_rows: int
    coverage: float
    logistic: list[float] | None = None
    failed: dict | None = None
    jury: dict | None = None
    verdicts: dict | None = None
    probes: list | None = None


@dataclass
class CalibrationFile:
    """A cascade's calibration: what ``hf-critic calibrate`` writes and ``compare --cascade`` reads.

    Attributes:
        task: ``"pairwise"``.
        setting: the CritiqueLLM setting name of the calibration data (``pairwise_reference_free`` ...).
        alpha: the tolerated disagreement rate; the target human agreement is ``1 - alpha``.
        delta: the cascade's total error probability of the guarantee.
        min_rows: the minimum rows at or above a tested threshold.
        data: ``{"path", "rows", "sha256"}`` of the calibration data (:func:`data_hash`; ``rows``: the rows that set
            thresholds; ``jury_fit_rows``: the others, which fitted a jury).
        critics: one :class:`CriticThreshold` per critic, in cascade order.
        rows: the threshold rows themselves: ``{"ids": [...], "human": [label codes]}`` in order (their
            :func:`data_hash` is ``data.sha256``); None only in files built by hand for a test.
        format: :data:`CALIBRATION_FORMAT`.
    """

    task: str
    setting: str
    alpha: float
    delta: float
    min_rows: int
    data: dict
    critics: list[CriticThreshold] = field(default_factory=list)
    rows: dict | None = None
    format: str = CALIBRATION_FORMAT

    def to_json(self) -> str:
        """The file's text (JSON, one indent)."""
        return json.dumps(asdict(self), indent=1, ensure_ascii=False)

    @property
    def coverage(self) -> float:
        """The share of the calibration rows the cascade keeps."""
        return float(sum(c.coverage for c in self.critics))


def _finite_in(value, low: float, high: float, what: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadInputError(f"{path}: {what} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise BadInputError(f"{path}: {what} must lie in [{low}, {high}], got {value}")
    return float(value)


def read_calibration(path: str | Path) -> CalibrationFile:
    """Read a calibration file and check its format and every field's type and range; that the fields add up is
    checked by :func:`hf_critic.selective.claim.load_calibration`, the one to use.

    Raises:
        ValueError: the file is missing, not JSON, of another format, or a field is missing or out of range (one line
            naming the file and the field).
    """
    path = str(path)
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError(f"{path}: no such calibration file (write one with `hf-critic calibrate`)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadInputError(f"{path}: not a calibration file (invalid JSON: {err})") from None
    if isinstance(raw, dict) and raw.get("format") in OLD_FORMATS:
        raise BadInputError(
            f"{path}: a calibration file of format {raw['format'].rsplit('/', 1)[1]}, which does not "
            "carry the rows its thresholds are re-derived from: calibrate again with `hf-critic "
            "calibrate`"
        )
    if not isinstance(raw, dict) or raw.get("format") != CALIBRATION_FORMAT:
        raise BadInputError(f"{path}: not a calibration file of format {CALIBRATION_FORMAT!r}")
    try:
        critics = [CriticThreshold(**c) for c in raw.pop("critics")]
        calibration = CalibrationFile(**raw, critics=critics)
    except (TypeError, KeyError) as err:
        raise BadInputError(f"{path}: malformed calibration file ({err})") from None
    _finite_in(calibration.alpha, 0, 1, "alpha", path)
    _finite_in(calibration.delta, 0, 1, "delta", path)
    for i, c in enumerate(calibration.critics):
        if c.threshold is not None:
            _finite_in(c.threshold, 0, 1, f"critics[{i}].threshold", path)
        if c.logistic is not None and (len(c.logistic) != 2 or not all(math.isfinite(x) for x in c.logistic)):
            raise BadInputError(f"{path}: critics[{i}].logistic must be [slope, intercept], finite, got {c.logistic}")
    return calibration


def data_hash(ids: Sequence, labels: Sequence) -> str:
    """SHA-256 (16 hex digits) of the calibration rows' ids and human labels, in order."""
    text = json.dumps([[str(i), None if lab is None else int(lab)] for i, lab in zip(ids, labels, strict=True)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def as_confidences(values: Sequence) -> np.ndarray:
    """Confidences as floats, NaN wherever a value is no usable confidence.

    Args:
        values: one confidence per row, shape ``(rows,)``: a number in [0, 1]; anything else (None, NaN, an infinity,
            a number outside [0, 1], a bool, text) is no confidence.

    Returns:
        A float array of shape ``(rows,)``: the value, or NaN. NaN is never kept: ``NaN >= threshold`` is False.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu":  # fast path: numbers already
        out = values.astype(float)
        with np.errstate(invalid="ignore"):
            out[~((out >= 0) & (out <= 1))] = np.nan
        return out
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if not isinstance(v, bool) and isinstance(v, int | float | np.number) and 0 <= v <= 1:
            out[i] = float(v)
    return out


def keepable_confidences(labels: Sequence, confidences: Sequence) -> tuple[list[float | None], int]:
    """The confidences a threshold may keep: a usable confidence (:func:`as_confidences`) on a row whose verdict is a
    label 0 / 1 / 2; None elsewhere (a confidence without a verdict decides nothing).

    Args:
        labels: the critic's decided label per row (None: no verdict), shape ``(rows,)``.
        confidences: its confidence per row, shape ``(rows,)``.

    Returns:
        ``(confidences, none)``: per row the confidence or None, and how many rows have None.

    Raises:
        ValueError: the two differ in length.
    """
    if len(labels) != len(confidences):
        raise BadInputError(f"labels ({len(labels)}) and confidences ({len(confidences)}) differ in length")
    values = as_confidences(confidences)
    out = [
        float(c) if lab in (0, 1, 2) and not isinstance(lab, bool) and not np.isnan(c) else None
        for lab, c in zip(labels, values, strict=True)
    ]
    return out, sum(c is None for c in out)


def _candidates(confidence: np.ndarray, thresholds: Sequence[float] | None) -> np.ndarray:
    """Candidate thresholds, highest first: the given grid, or every distinct confidence (Trust or Escalate)."""
    grid = np.unique(confidence[~np.isnan(confidence)]) if thresholds is None else np.asarray(thresholds, float)
    return np.sort(grid)[::-1]


def fixed_sequence_threshold(
    confidence: Sequence[float | None],
    correct: Sequence[bool],
    *,
    alpha: float,
    delta: float,
    min_rows: int = DEFAULT_MIN_ROWS,
    thresholds: Sequence[float] | None = None,
    bound: str = "exact",
) -> tuple[float | None, int, int, float | None]:
    """Choose one critic's threshold by fixed-sequence testing (Trust or Escalate §3.1, Algorithm 1).

    Args:
        confidence: the critic's confidence per calibration row, in [0, 1]; a row without a usable one (None, NaN,
            outside [0, 1]: :func:`as_confidences`) is never kept.
        correct: whether the critic's verdict agrees with the human label, per row.
        alpha: tolerated disagreement rate in (0, 1); the guarantee is agreement ``>= 1 - alpha``.
        delta: error level of the guarantee in (0, 0.5].
        min_rows: candidates keeping fewer rows are not tested (the sequence starts at the first with this many).
        thresholds: the candidate grid (None: every distinct confidence), tested from the highest down.
        bound: ``"exact"`` (Clopper-Pearson upper bound <= alpha) or ``"observed"`` (the observed disagreement rate
            <= alpha: no guarantee; the plain cut-off, kept as the baseline that shows why the bound is needed).

    Returns:
        ``(threshold, n, k, upper)``: the last candidate that passed (None when none did: keep no row), the rows at
        or above it, their disagreements and the bound there (None when none passed).

    Raises:
        ValueError: lengths differ, alpha / delta out of range, or an unknown bound.
    """
    return fixed_sequence_test(
        confidence, correct, alpha=alpha, delta=delta, min_rows=min_rows, thresholds=thresholds, bound=bound
    )[:4]


def fixed_sequence_test(
    confidence: Sequence[float | None],
    correct: Sequence[bool],
    *,
    alpha: float,
    delta: float,
    min_rows: int = DEFAULT_MIN_ROWS,
    thresholds: Sequence[float] | None = None,
    bound: str = "exact",
) -> tuple[float | None, int, int, float | None, dict | None]:
    """:func:`fixed_sequence_threshold` with the evidence of where the sequence stopped.

    Returns:
        ``(threshold, n, k, upper, failed)``: as :func:`fixed_sequence_threshold`, and ``failed``: the candidate
        whose test failed and stopped the sequence, ``{"threshold", "n", "k", "upper_bound"}``, or None when every
        tested candidate passed (or none had ``min_rows`` rows).
    """
    conf = as_confidences(confidence)
    ok = np.asarray(correct, dtype=bool)
    if conf.shape != ok.shape:
        raise BadInputError(f"confidence ({conf.shape[0]}) and correct ({ok.shape[0]}) differ in length")
    if not 0 < alpha < 1 or not 0 < delta <= 0.5:
        raise BadInputError(f"alpha must lie in (0, 1) and delta in (0, 0.5], got alpha={alpha}, delta={delta}")
    if bound not in ("exact", "observed"):
        raise BadInputError(f"bound must be 'exact' or 'observed', got {bound!r}")
    lams = _candidates(conf, thresholds)
    kept = ~np.isnan(conf)
    order = np.argsort(-conf[kept], kind="stable")
    ranked, errors = conf[kept][order], np.cumsum(~ok[kept][order])
    n = np.searchsorted(-ranked, -lams, side="right")  # rows at or above each candidate
    k = np.where(n > 0, errors[np.maximum(n - 1, 0)] if errors.size else 0, 0)
    upper = _upper_bounds(k, n, delta) if bound == "exact" else np.where(n > 0, k / np.maximum(n, 1), 1.0)
    tested = n >= min_rows
    failed = np.flatnonzero(tested & (upper > alpha))
    stop = failed[0] if failed.size else len(lams)  # fixed sequence: the first failure ends the testing
    evidence = None
    if failed.size:
        f = failed[0]
        evidence = {"threshold": float(lams[f]), "n": int(n[f]), "k": int(k[f]), "upper_bound": float(upper[f])}
    passed = np.flatnonzero(tested[:stop])
    if not passed.size:
        return None, 0, 0, None, evidence
    j = passed[-1]
    return float(lams[j]), int(n[j]), int(k[j]), float(upper[j]), evidence


def _upper_bounds(k: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """:func:`clopper_pearson_upper` for arrays: the Beta quantile ``B(1 - delta; k + 1, n - k)`` (1 where k = n)."""
    from scipy.stats import beta

    with np.errstate(invalid="ignore"):
        upper = beta.ppf(1 - delta, k + 1, np.maximum(n - k, 1))
    return np.where((k >= n) | (n == 0), 1.0, upper)


def cascade_decisions(confidences: Sequence[Sequence[float | None]], thresholds: Sequence[float | None]) -> np.ndarray:
    """Which critic of a cascade decides each row.

    Args:
        confidences: per critic (cascade order), its confidence per row, shape ``(critics, rows)``.
        thresholds: per critic, its threshold (None: it keeps no row). A confidence that is None, NaN or outside
            [0, 1] is never kept.

    Returns:
        An int array of shape ``(rows,)``: the index of the first critic whose confidence is at least its threshold,
        or -1 where none is (the row is abstained).
    """
    rows = len(confidences[0]) if len(confidences) else 0
    decided = np.full(rows, -1)
    for i, (conf, lam) in enumerate(zip(confidences, thresholds, strict=True)):
        if lam is None:
            continue
        decided[(decided == -1) & (as_confidences(conf) >= lam)] = i  # NaN (no usable confidence): never kept
    return decided


def calibrate_cascade(
    confidences: Sequence[Sequence[float | None]],
    corrects: Sequence[Sequence[bool]],
    *,
    alpha: float,
    delta: float,
    min_rows: int = DEFAULT_MIN_ROWS,
    bound: str = "exact",
    shares: Sequence[float] | None = None,
    deltas: Sequence[float] | None = None,
) -> list[tuple[float | None, int, int, float | None, int]]:
    """Calibrate every critic of a cascade (Trust or Escalate §3.3): ``delta * shares[i]`` each (``delta / critics``
    by default: Bonferroni), each later critic on the rows its predecessors did not keep.

    Args:
        confidences / corrects: per critic (cascade order), per calibration row, as in
            :func:`fixed_sequence_threshold`; shape ``(critics, rows)``.
        alpha, delta, min_rows, bound: as in :func:`fixed_sequence_threshold` (``delta`` for the whole cascade).
        shares: each critic's share of ``delta``, summing to 1 and fixed before the data is seen
            (:func:`hf_critic.selective.cascade.delta_shares`); None: equal.
        deltas: each critic's delta itself, given instead of ``shares`` (a stored calibration re-derived with the
            deltas it records: ``delta * share`` computed again could differ in the last bit).

    Returns:
        Per critic, ``(threshold, n, k, upper, calibration_rows, failed)`` (``failed``: see
        :func:`fixed_sequence_test`).
    """
    remaining = np.ones(len(confidences[0]), dtype=bool)
    shares = [1 / len(confidences)] * len(confidences) if shares is None else list(shares)
    if len(shares) != len(confidences) or abs(sum(shares) - 1) > 1e-9 or min(shares) <= 0:
        raise BadInputError(f"delta shares must be one positive share per critic summing to 1, got {shares}")
    deltas = [delta * share for share in shares] if deltas is None else list(deltas)
    out = []
    for conf, ok, part in zip(confidences, corrects, deltas, strict=True):
        conf = as_confidences(conf)
        ok = np.asarray(ok, dtype=bool)
        lam, n, k, upper, failed = fixed_sequence_test(
            conf[remaining], ok[remaining], alpha=alpha, delta=part, min_rows=min_rows, bound=bound
        )
        out.append((lam, n, k, upper, int(remaining.sum()), failed))
        if lam is not None:
            remaining &= ~(conf >= lam)
    return out
