"""Risk-coverage of one critic's confidence: the area under the risk-coverage curve (AURC), the agreement at a given
coverage and the coverage at a given agreement.

Geifman and El-Yaniv, "Selective Classification for Deep Neural Networks" (NeurIPS 2017, §2) and "Bias-Reduced
Uncertainty Estimation for Deep Neural Classifiers" (ICLR 2019, §3, the AURC): rank the rows by the critic's
confidence, highest first; keeping the top ``k`` rows is coverage ``k / n``, and the **risk** there is the share of
the kept rows whose verdict disagrees with the human label (``1 - agreement``). The AURC is the risk averaged over
``k = 1 .. n``: lower is better; a critic whose confidence says nothing (a constant) has an AURC equal to its plain
error rate, and a perfect ranking (every right verdict above every wrong one) has the smallest AURC its error rate
allows.

**Ties in confidence** are broken at random, and every figure here is its exact expectation over the random order:
within a block of rows of equal confidence, the first ``j`` rows taken hold ``j`` times the block's mean error. So a
figure never depends on the order the rows came in, and a constant confidence gives a flat curve at the plain error
rate. **Rows without a verdict or confidence** (unparsed, skipped, undecided: ``None``) rank below every verdict, as
one tied block, and count as errors unless the caller says otherwise (``credit``): coverage 1 is the critic's plain
agreement over all rows, so a critic cannot look better by not answering.

Rows carry weights so the question-level bootstrap (:func:`hf_critic.meta_eval.risk_coverage.risk_coverage_block`)
is one vectorised call: a resample's weight of a row is how often its question was drawn.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import digamma

from ..core.errors import BadInputError
from .calibration import as_confidences

__all__ = [
    "AGREEMENT_LEVELS",
    "COVERAGE_LEVELS",
    "agreement_at_coverage",
    "agreement_coverage_curve",
    "aurc",
    "coverage_at_agreement",
    "risk_coverage_curve",
]

#: The coverages at which reports give the agreement on the kept rows.
COVERAGE_LEVELS = (0.1, 0.25, 0.5, 1.0)
#: The agreements at which reports give the largest coverage that reaches them.
AGREEMENT_LEVELS = (0.7, 0.75, 0.8, 0.85)


def _inputs(
    confidence: Sequence[float | None], credit: Sequence[float | bool | None]
) -> tuple[np.ndarray, np.ndarray]:
    """Confidences (NaN: none) and per-row errors ``1 - credit`` in [0, 1] (a None credit is an error)."""
    conf = np.array([np.nan if c is None else c for c in confidence], dtype=float)
    errors = 1.0 - np.array([0.0 if c is None else float(c) for c in credit], dtype=float)
    if conf.shape != errors.shape or conf.ndim != 1:
        raise BadInputError(f"confidence ({conf.shape}) and credit ({errors.shape}) must be 1-D of one length")
    if not len(conf):
        raise BadInputError("risk-coverage needs at least one row")
    if ((errors < 0) | (errors > 1)).any() or np.isnan(errors).any():
        raise BadInputError("credit must lie in [0, 1] (1: the verdict agrees with the human label)")
    if np.isinf(conf).any():
        raise BadInputError("confidences must be finite numbers or None")
    return conf, errors


def _blocks(conf: np.ndarray) -> tuple[np.ndarray, int]:
    """Each row's block of equal confidence, 0 = the highest; rows without a confidence form the last block."""
    finite = ~np.isnan(conf)
    levels = np.unique(conf[finite])[::-1]  # descending
    block = np.full(len(conf), len(levels), dtype=int)
    block[finite] = np.searchsorted(-levels, -conf[finite])
    return block, len(levels) + int((~finite).any())


def _block_sums(conf, errors, weights) -> tuple[np.ndarray, np.ndarray]:
    """``(W, E)``, shape ``(b, blocks)``: each block's weight and weighted errors per weight row."""
    block, _ = _blocks(conf)
    w = np.ones((1, len(conf))) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    if w.shape[1] != len(conf) or (w < 0).any():
        raise BadInputError(f"weights must be non-negative with one column per row ({len(conf)}), got {w.shape}")
    order = np.argsort(block, kind="stable")  # rows grouped by block, so each block's sum is one reduceat segment
    starts = np.flatnonzero(np.r_[True, np.diff(block[order]) > 0])
    w = w[:, order]
    return np.add.reduceat(w, starts, axis=1), np.add.reduceat(w * errors[order], starts, axis=1)


def _harmonic(x: np.ndarray) -> np.ndarray:
    """The harmonic number ``H(x) = sum_{i<=x} 1/i`` (``digamma(x + 1) + Euler's gamma``), ``H(0) = 0``."""
    return digamma(x + 1.0) + np.euler_gamma


def aurc(
    confidence: Sequence[float | None], credit: Sequence[float | bool | None], weights: np.ndarray | None = None
) -> np.ndarray | float:
    """The area under the risk-coverage curve (Geifman and El-Yaniv): the risk of the top ``k`` rows by confidence,
    averaged over ``k = 1 .. n``; ties broken at random, in expectation (module docstring).

    Args:
        confidence: the critic's confidence per row, shape ``(n,)``; None for a row without one (ranked last).
        credit: per row, 1 (or True) where the verdict agrees with the human label, 0 where not, a share in between
            (e.g. 0.5); None counts 0.
        weights: None (every row once), or non-negative row weights of shape ``(b, n)`` (a row of weight ``w`` counts
            as ``w`` copies; integer weights give the exact discrete average over the copies' positions).

    Returns:
        The AURC in [0, 1] (a float), or shape ``(b,)`` with ``weights`` (NaN for a weight row that sums to 0).

    Raises:
        ValueError: lengths differ, no rows, a credit outside [0, 1], a non-finite confidence or bad weights.
    """
    conf, errors = _inputs(confidence, credit)
    w, e = _block_sums(conf, errors, weights)
    before = np.cumsum(w, axis=1) - w  # C: weight ranked above each block
    errors_before = np.cumsum(e, axis=1) - e
    rate = np.divide(e, w, out=np.zeros_like(e), where=w > 0)  # r: the block's mean error
    # sum over positions k = C+1 .. C+W of (E_prev + (k - C) r) / k
    area = (errors_before - before * rate) * (_harmonic(before + w) - _harmonic(before)) + rate * w
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = area.sum(axis=1) / total
    return float(out[0]) if weights is None else out


def risk_coverage_curve(
    confidence: Sequence[float | None], credit: Sequence[float | bool | None]
) -> tuple[np.ndarray, np.ndarray]:
    """The risk of the top ``k`` rows at every ``k = 1 .. n`` (expected over random tie-breaking).

    Returns:
        ``(coverage, risk)``, shape ``(n,)`` each: ``k / n`` and the expected share of errors among the top ``k``.
    """
    conf, errors = _inputs(confidence, credit)
    w, e = (a[0] for a in _block_sums(conf, errors, None))
    block, _ = _blocks(conf)
    order = np.argsort(block, kind="stable")
    k = np.arange(1, len(conf) + 1, dtype=float)
    b = block[order]
    before, errors_before = (np.cumsum(w) - w)[b], (np.cumsum(e) - e)[b]
    expected = errors_before + (k - before) * (e / w)[b]
    return k / len(conf), expected / k


def agreement_at_coverage(
    confidence: Sequence[float | None], credit: Sequence[float | bool | None], coverages=COVERAGE_LEVELS
) -> dict[float, float]:
    """The agreement on the kept rows when the ``ceil(c * n)`` most confident rows are kept (at least one).

    Args:
        confidence / credit: as in :func:`aurc`.
        coverages: coverages in (0, 1].

    Returns:
        ``{coverage: agreement in [0, 1]}``.

    Raises:
        ValueError: a coverage outside (0, 1], or see :func:`aurc`.
    """
    if any(not 0 < c <= 1 for c in coverages):
        raise BadInputError(f"coverages must lie in (0, 1], got {list(coverages)}")
    cov, risk = risk_coverage_curve(confidence, credit)
    n = len(cov)
    return {float(c): float(1 - risk[max(1, int(np.ceil(c * n - 1e-9))) - 1]) for c in coverages}


def coverage_at_agreement(
    confidence: Sequence[float | None], credit: Sequence[float | bool | None], levels=AGREEMENT_LEVELS
) -> dict[float, float]:
    """The largest coverage ``k / n`` whose ``k`` most confident rows agree with humans at rate at least the level.

    Args:
        confidence / credit: as in :func:`aurc`.
        levels: agreements in (0, 1].

    Returns:
        ``{level: coverage in [0, 1]}``; 0.0 where no ``k`` reaches the level.

    Raises:
        ValueError: a level outside (0, 1], or see :func:`aurc`.
    """
    if any(not 0 < a <= 1 for a in levels):
        raise BadInputError(f"agreement levels must lie in (0, 1], got {list(levels)}")
    cov, risk = risk_coverage_curve(confidence, credit)
    out = {}
    for level in levels:
        reached = np.flatnonzero(1 - risk >= level - 1e-12)
        out[float(level)] = float(cov[reached[-1]]) if reached.size else 0.0
    return out


def agreement_coverage_curve(confidence: Sequence, correct: Sequence[bool]) -> tuple[list[float], list[float]]:
    """One critic's agreement on the kept rows against coverage, every distinct confidence as a threshold (rows at or
    above it kept): the risk-coverage curve read at the end of each block of equal confidence, as agreement
    (``1 - risk``), where random tie-breaking does not matter. Rows without a usable confidence
    (:func:`~hf_critic.selective.calibration.as_confidences`) are never kept.

    Args:
        confidence: the critic's confidence per row, shape ``(n,)``.
        correct: whether each row's verdict agrees with the human label, shape ``(n,)``.

    Returns:
        ``(coverages, agreements)``, from the highest threshold (least coverage) down; empty without a usable
        confidence.

    Raises:
        ValueError: lengths differ.
    """
    conf = as_confidences(confidence)
    ok = np.asarray(correct, dtype=bool)
    if conf.shape != ok.shape:
        raise BadInputError(f"confidence ({conf.shape}) and correct ({ok.shape}) must be of one length")
    levels = len(np.unique(conf[~np.isnan(conf)]))
    if not levels:
        return [], []
    w, e = (a[0] for a in _block_sums(conf, 1.0 - ok, None))
    kept, errors = np.cumsum(w)[:levels], np.cumsum(e)[:levels]
    return (kept / len(conf)).tolist(), ((kept - errors) / kept).tolist()
