"""Within-question pairwise accuracy: does the critic's grading tell a question's better answer from its worse?

For every query, every pair of its responses whose human scores differ is ordered by the critic's scores
(:func:`within_question_accuracy`); the pairs are counted per query, vectorised, with the pair enumeration of
:mod:`~hf_critic.meta_eval.grouped` (:func:`_within_question_parts`, which the paired tests and the bootstrap reuse).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from ..core.errors import BadInputError
from .grouped import KENDALL_PAIRWISE_MAX_GROUP, _as_float, _factorize, _kendall_small

__all__ = ["within_question_accuracy"]


def _tied_pairs(*columns: np.ndarray) -> int:
    """Pairs of rows equal in every column: the sum over distinct rows of C(count, 2)."""
    _, counts = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


def _pair_counts(gid: np.ndarray, x: np.ndarray, y: np.ndarray, n_groups: int):
    """Per group, over its within-group pairs (rows already filtered to finite ``x`` and ``y``): sum
    sgn(dx)sgn(dy), the pairs untied in ``y``, and the pairs tied in ``x`` but not in ``y``; each ``(n_groups,)``.

    Groups up to :data:`KENDALL_PAIRWISE_MAX_GROUP` rows enumerate their pairs (:func:`_kendall_small`); larger
    ones count ties with ``np.unique`` and get the concordance sum from :func:`scipy.stats.kendalltau`'s tau-b
    (``tau_b * sqrt(untied_x * untied_y)``, rounded to the integer it is), in O(n log n).
    """
    order = np.argsort(gid, kind="stable")
    xs, ys = x[order], y[order]
    sizes = np.bincount(gid, minlength=n_groups)
    starts = np.cumsum(sizes) - sizes
    num, tx, ty, x_ties = (np.zeros(n_groups) for _ in range(4))
    small = np.flatnonzero((sizes >= 2) & (sizes <= KENDALL_PAIRWISE_MAX_GROUP))
    _kendall_small(xs, ys, starts, sizes, small, num, tx, ty, x_ties)
    for g in np.flatnonzero(sizes > KENDALL_PAIRWISE_MAX_GROUP):  # at most n / 2048 groups
        a, b = xs[starts[g] : starts[g] + sizes[g]], ys[starts[g] : starts[g] + sizes[g]]
        total = int(sizes[g]) * (int(sizes[g]) - 1) // 2
        tied_x, tied_y = _tied_pairs(a), _tied_pairs(b)
        tx[g], ty[g] = total - tied_x, total - tied_y
        x_ties[g] = tied_x - _tied_pairs(a, b)
        if tx[g] and ty[g]:
            num[g] = np.rint(stats.kendalltau(a, b).statistic * math.sqrt(tx[g] * ty[g]))
    return num, ty, x_ties


def _differing_pairs(gid: np.ndarray, y: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group, the pairs of its rows whose ``y`` differ: C(n, 2) minus the pairs tied in ``y``."""
    n = np.bincount(gid, minlength=n_groups).astype(np.float64)
    if not len(gid):
        return n
    _, code = np.unique(y, return_inverse=True)
    width = int(code.max()) + 1
    cells, counts = np.unique(gid * width + code, return_counts=True)  # one integer key per (group, value)
    tied = np.bincount(cells // width, weights=counts * (counts - 1) / 2, minlength=n_groups)
    return n * (n - 1) / 2 - tied


def _within_question_parts(x: np.ndarray, y: np.ndarray, gid: np.ndarray, n_groups: int):
    """Per query ``(n_groups,)`` arrays: credit (1 per pair ordered as the humans order it, 1/2 per critic tie),
    pairs counted (both scores present, human scores differ), critic ties among them, and pairs left out
    (human scores differ, a critic score is missing)."""
    has_y = np.isfinite(y)
    both = has_y & np.isfinite(x)
    num, pairs, ties = _pair_counts(gid[both], x[both], y[both], n_groups)
    # Over the pairs untied in y, sgn(dx)sgn(dy) is 1 (same order), 0 (critic tie) or -1: credit = (1 + it) / 2.
    credit = (pairs + num) / 2
    left_out = _differing_pairs(gid[has_y], y[has_y], n_groups) - pairs
    return credit, pairs, ties, left_out


def within_question_accuracy(
    predictions: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    query_ids: Sequence[Hashable] | np.ndarray | None = None,
    *,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Within-question pairwise accuracy: does the critic's grading tell a question's better answer from its worse?

    For every query, every pair of its responses whose human scores differ is ordered by the critic's scores; the
    accuracy is the share of those pairs the critic orders as the humans do, a tie in the critic's scores counting
    as half. It equals ``(1 + D) / 2`` for Somers' D of the critic's scores given the human scores (Somers, 1962)
    pooled over the queries' pairs: the pairwise view of a pointwise critic, as reward models are scored on chosen /
    rejected pairs ("A critic that tells the better answer from the worse"). Unlike text-level
    correlation (:func:`text_level_correlation`), every pair counts once: a query with many responses weighs more,
    and a query whose critic scores are all equal is not skipped but scores 1/2 on each of its pairs.

    Args:
        predictions: critic scores, shape ``(n,)``; None / NaN = unparsed: pairs with such a row are left out and
            counted (``within_question_pairs_unparsed``).
        references: human scores, shape ``(n,)``; rows with None / NaN are left out (their pairs are not counted).
        query_ids: query id per row, shape ``(n,)``, any order; None: all rows form one query (every pair of rows
            with different human scores).
        bootstrap: resamples of the queries for a percentile confidence interval (0: none; needs ``query_ids``):
            a cluster bootstrap, a query's pairs stay together (see :mod:`~hf_critic.meta_eval.bootstrap`).
        seed: the bootstrap's seed.
        confidence: the interval's coverage (default 0.95).

    Returns:
        ``within_question_accuracy`` in [0, 1] (NaN without a pair), ``within_question_pairs`` (pairs counted),
        ``within_question_ties`` (of those, pairs the critic scored equal: each counts 1/2),
        ``within_question_pairs_unparsed`` (pairs with different human scores left out for a missing critic score),
        ``within_question_queries`` (queries with at least one counted pair); with ``bootstrap`` and ``query_ids``
        also ``ci``: ``{"within_question_accuracy": [low, high]}``.

    Raises:
        ValueError: on mismatched lengths, non-numeric scores or a missing query id.
    """
    x = _as_float(predictions, "predictions")
    y = _as_float(references, "references")
    if len(x) != len(y):
        raise BadInputError(f"predictions and references differ in length: {len(x)} != {len(y)}")
    if query_ids is None:
        gid, n_groups = np.zeros(len(x), dtype=np.int64), 1
    else:
        gid, uniques = _factorize(query_ids, "query_ids", len(x))
        n_groups = len(uniques)
    credit, pairs, ties, left_out = _within_question_parts(x, y, gid, n_groups)
    total = float(pairs.sum())
    out: dict[str, Any] = {
        "within_question_accuracy": float(credit.sum() / total) if total else math.nan,
        "within_question_pairs": int(total),
        "within_question_ties": int(ties.sum()),
        "within_question_pairs_unparsed": int(round(float(left_out.sum()))),
        "within_question_queries": int((pairs > 0).sum()),
    }
    if bootstrap and query_ids is not None and n_groups:
        from .bootstrap import bootstrap_intervals

        def statistic(w: np.ndarray) -> dict[str, np.ndarray]:
            with np.errstate(invalid="ignore", divide="ignore"):
                return {"within_question_accuracy": (w @ credit) / (w @ pairs)}

        intervals = bootstrap_intervals(statistic, n_groups, bootstrap, seed, confidence)
        out["ci"] = dict(intervals)
        if intervals.dropped:  # resamples whose figure was undefined, left out of the interval
            out["ci_dropped"] = intervals.dropped
    return out
