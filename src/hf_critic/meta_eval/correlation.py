"""Pointwise grading meta-evaluation: text-level and system-level correlation (numpy / scipy, vectorised).

As in CritiqueLLM v2 §4.4.1, Table 2 (after Colombo et al., 2022): *text-level* correlation is the mean, over
queries, of the correlation between the human scores and the critic's scores of that query's responses;
*system-level* correlation is the correlation between the per-system (per-model) mean critic score and the
per-system mean human score. Pearson ``r``, Spearman ``rho`` and Kendall ``tau`` (tau-b, as
:func:`scipy.stats.kendalltau` computes by default) are reported for both. See :func:`grouped_correlations`,
:func:`text_level_correlation`, :func:`system_level_correlation` and :func:`critique_correlation`; pairwise
comparison (agreement, consistency) is in :mod:`hf_critic.meta_eval.agreement`.

Nothing here loops over rows in Python: groups are handled with ``np.bincount`` and one integer sort per
score (average ranks within groups), Kendall's tau-b by enumerating the within-group pairs with one
``np.triu_indices`` template per group size in bounded blocks (one scipy call per group only for the rare
groups larger than :data:`KENDALL_PAIRWISE_MAX_GROUP`). One million rows in 100,000 groups take ~1.6 s on
2 CPU cores, 270x faster than a per-query scipy loop (``benchmarks/bench_metrics.py``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .chance import binned_weighted_kappa

__all__ = [
    "CORRELATIONS",
    "check_scores",
    "system_table",
    "KENDALL_PAIRWISE_MAX_GROUP",
    "GroupedCorrelation",
    "critique_correlation",
    "grouped_correlations",
    "system_level_correlation",
    "text_level_correlation",
    "within_question_accuracy",
]

#: Groups up to this size get Kendall's tau-b from a vectorised enumeration of their pairs (O(n^2) work
#: per group); larger groups (one per call at most ``n / 2048``) use :func:`scipy.stats.kendalltau`
#: (O(n log n)).
KENDALL_PAIRWISE_MAX_GROUP = 2048

# Upper bound on the number of within-group pairs materialised at once by the tau-b enumeration.
_PAIR_CHUNK = 1 << 22

CORRELATIONS = ("pearson", "spearman", "kendall")


@dataclass(frozen=True)
class GroupedCorrelation:
    """Per-group correlations returned by :func:`grouped_correlations`.

    All arrays have shape ``(n_groups,)`` and follow the order of first appearance of each group id.

    Attributes:
        groups: the group ids (object array).
        n: number of valid rows (both scores finite) in each group.
        pearson, spearman, kendall: the coefficient in [-1, 1], NaN where ``valid`` is False.
        valid: True where the group has at least two valid rows and neither score is constant on them.
    """

    groups: np.ndarray
    n: np.ndarray
    pearson: np.ndarray
    spearman: np.ndarray
    kendall: np.ndarray
    valid: np.ndarray


def _as_float(values: Any, name: str) -> np.ndarray:
    """1-D float64 array from a sequence of numbers / None / NaN (None becomes NaN).

    Raises:
        ValueError: if ``values`` is not one-dimensional or holds something that is not a number: a string
            (``"7"`` is not read as 7), a boolean, an object; the message names the index and the value.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind == "O":
        values = values.tolist()
    if not isinstance(values, np.ndarray):
        for i, v in enumerate(values):  # numpy would read True as 1.0 and "7" as 7.0
            if isinstance(v, (list, tuple, np.ndarray)):
                break  # not one-dimensional: said below
            if v is not None and (isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number))):
                raise ValueError(f"{name}[{i}] is not a number: {v!r}")
        values = [np.nan if v is None else v for v in values]
    elif values.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold numbers, got an array of dtype {values.dtype}")
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def check_scores(values: Sequence[Any] | None, name: str = "scores") -> list[float | None] | None:
    """Check that ``values`` are scores before ``evaluate`` casts them (a string "7" or a boolean would pass).

    Args:
        values: the scores as passed in, shape ``(n,)``, or None.
        name: the argument's name for messages (``predictions``, ``references``).

    Returns:
        Floats, with None and NaN as None (unparsed or missing); None stays None.

    Raises:
        ValueError: a string, a boolean or any other non-number, naming the index and the value.
    """
    if values is None:
        return None
    arr = _as_float(list(values) if not isinstance(values, np.ndarray) else values, name)
    return [None if math.isnan(v) else v for v in arr.tolist()]


def _factorize(values: Any, name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes ``(n,)`` in order of first appearance and the unique ids, for any hashable ids.

    Raises:
        ValueError: if the length is not ``n`` or an id is None / NaN.
    """
    arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{name} must be one-dimensional with {n} values (one per row), got shape {arr.shape}")
    codes, uniques = pd.factorize(arr, sort=False, use_na_sentinel=True)
    if n and codes.min() < 0:
        i = int(np.flatnonzero(codes < 0)[0])
        raise ValueError(f"{name}[{i}] is missing ({arr[i]!r}); every row needs an id")
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)


def _group_moments(gid: np.ndarray, x: np.ndarray, y: np.ndarray, n_groups: int):
    """Group sizes and centred second moments (two-pass, as scipy.stats.pearsonr does)."""
    n = np.bincount(gid, minlength=n_groups).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.bincount(gid, weights=x, minlength=n_groups) / n
        my = np.bincount(gid, weights=y, minlength=n_groups) / n
    dx = x - mx[gid]
    dy = y - my[gid]
    sxx = np.bincount(gid, weights=dx * dx, minlength=n_groups)
    syy = np.bincount(gid, weights=dy * dy, minlength=n_groups)
    sxy = np.bincount(gid, weights=dx * dy, minlength=n_groups)
    return n, sxx, syy, sxy


def _pearson(gid: np.ndarray, x: np.ndarray, y: np.ndarray, n_groups: int, valid: np.ndarray) -> np.ndarray:
    _, sxx, syy, sxy = _group_moments(gid, x, y, n_groups)
    out = np.full(n_groups, np.nan)
    out[valid] = np.clip(sxy[valid] / np.sqrt(sxx[valid] * syy[valid]), -1.0, 1.0)
    return out


def _average_ranks(gid: np.ndarray, v: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Average ranks of ``v`` within each group, as ``scipy.stats.rankdata(method="average")`` per group.

    Returns:
        ranks ``(n,)`` (1-based; ties share their mean rank), the number of distinct values per group
        ``(n_groups,)``, and the sorting permutation ``(n,)`` (by group, then value).
    """
    n = len(v)
    # One integer key (group, dense rank of the value): an int argsort is several times faster than lexsort.
    _, v_code = np.unique(v, return_inverse=True)
    key = gid * (int(v_code.max(initial=0)) + 1) + v_code
    order = np.argsort(key)  # equal keys share a rank, so stability is not needed
    key_sorted, g_sorted = key[order], gid[order]
    # Start of each run of equal (group, value) and of each group, in sorted positions.
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = g_sorted[1:] != g_sorted[:-1]
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = key_sorted[1:] != key_sorted[:-1]
    pos = np.arange(n)
    group_start = np.maximum.accumulate(np.where(new_group, pos, 0)) if n else pos
    run_starts = np.flatnonzero(new_run)
    run_ends = np.append(run_starts[1:], n) - 1
    run_rank = (run_starts + run_ends) / 2.0 - group_start[run_starts] + 1.0
    ranks = np.empty(n)
    ranks[order] = np.repeat(run_rank, run_ends - run_starts + 1)
    return ranks, np.bincount(g_sorted[run_starts], minlength=n_groups), order


def _kendall_small(
    xs: np.ndarray,
    ys: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    groups: np.ndarray,
    out_num: np.ndarray,
    out_tx: np.ndarray,
    out_ty: np.ndarray,
    out_x_ties: np.ndarray | None = None,
) -> None:
    """Fill sum sgn(dx)sgn(dy), sum |sgn(dx)| and sum |sgn(dy)| over the within-group pairs of ``groups``.

    ``xs``/``ys`` are sorted so that group ``g`` is the slice ``starts[g]:starts[g] + sizes[g]``. Groups of one
    size share one pair template (``np.triu_indices``), processed in blocks of at most :data:`_PAIR_CHUNK`
    pairs: the Python loop runs over distinct group sizes and blocks, never over rows. With ``out_x_ties``, also
    the number of pairs tied in ``x`` but not in ``y`` (for :func:`within_question_accuracy`).
    """
    for size in np.unique(sizes[groups]):
        same = groups[sizes[groups] == size]
        a, b = np.triu_indices(int(size), 1)
        per_block = max(1, _PAIR_CHUNK // len(a))
        for lo in range(0, len(same), per_block):
            block = same[lo : lo + per_block]
            first = starts[block][:, None]
            sx = np.sign(xs[first + b] - xs[first + a])  # (groups in block, pairs)
            sy = np.sign(ys[first + b] - ys[first + a])
            out_num[block] = (sx * sy).sum(axis=1)
            out_tx[block] = np.abs(sx).sum(axis=1)
            out_ty[block] = np.abs(sy).sum(axis=1)
            if out_x_ties is not None:
                out_x_ties[block] = ((sx == 0) & (sy != 0)).sum(axis=1)


def _kendall(
    gid: np.ndarray, x: np.ndarray, y: np.ndarray, n_groups: int, valid: np.ndarray, order: np.ndarray
) -> np.ndarray:
    """Kendall's tau-b per group: sum sgn(dx)sgn(dy) / sqrt(#pairs untied in x * #pairs untied in y).

    ``order`` is any permutation that makes each group contiguous with groups in id order.
    """
    xs, ys = x[order], y[order]
    sizes = np.bincount(gid, minlength=n_groups)
    starts = np.cumsum(sizes) - sizes
    num = np.zeros(n_groups)
    tx = np.zeros(n_groups)
    ty = np.zeros(n_groups)
    small = np.flatnonzero(valid & (sizes <= KENDALL_PAIRWISE_MAX_GROUP))
    _kendall_small(xs, ys, starts, sizes, small, num, tx, ty)
    out = np.full(n_groups, np.nan)
    out[small] = np.clip(num[small] / np.sqrt(tx[small] * ty[small]), -1.0, 1.0)
    for g in np.flatnonzero(valid & (sizes > KENDALL_PAIRWISE_MAX_GROUP)):  # at most n / 2048 groups
        sl = slice(starts[g], starts[g] + sizes[g])
        out[g] = stats.kendalltau(xs[sl], ys[sl]).statistic
    return out


def grouped_correlations(
    predictions: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    groups: Sequence[Hashable] | np.ndarray | None = None,
    *,
    groups_name: str = "groups",
) -> GroupedCorrelation:
    """Pearson, Spearman and Kendall tau-b between critic and human scores within each group.

    Implements the per-query step of text-level correlation (CritiqueLLM v2 §4.4.1). Values equal
    ``scipy.stats.pearsonr``, ``spearmanr`` and ``kendalltau`` (tau-b) applied to each group separately
    (to rounding, ~1e-12), for groups of any size in any row order.

    Args:
        predictions: critic scores, shape ``(n,)``; None / NaN (unparsed) rows are dropped.
        references: human scores, shape ``(n,)``; None / NaN rows are dropped.
        groups: group id per row, shape ``(n,)`` (any hashable; e.g. query ids). None: one group.
        groups_name: what to call ``groups`` in error messages (``query_ids`` for text-level correlation).

    Returns:
        A :class:`GroupedCorrelation`, groups in order of first appearance. A group with fewer than two
        valid rows, or whose critic or human scores are constant on its valid rows, has ``valid=False``
        and NaN coefficients (scipy returns NaN there too).

    Raises:
        ValueError: on mismatched lengths, non-numeric scores, or a missing group id.
    """
    x = _as_float(predictions, "predictions")
    y = _as_float(references, "references")
    if len(x) != len(y):
        raise ValueError(f"predictions and references differ in length: {len(x)} != {len(y)}")
    if groups is None:
        gid_all, uniques = np.zeros(len(x), dtype=np.int64), np.array([None] if len(x) else [], dtype=object)
    else:
        gid_all, uniques = _factorize(groups, groups_name, len(x))
    n_groups = len(uniques)
    keep = np.isfinite(x) & np.isfinite(y)
    gid, x, y = gid_all[keep], x[keep], y[keep]
    n = np.bincount(gid, minlength=n_groups)
    rank_x, distinct_x, order = _average_ranks(gid, x, n_groups)
    rank_y, distinct_y, _ = _average_ranks(gid, y, n_groups)
    # Exact test for constant scores (a centred sum of squares of a constant group need not be 0.0).
    valid = (n >= 2) & (distinct_x >= 2) & (distinct_y >= 2)
    pearson = _pearson(gid, x, y, n_groups, valid)
    spearman = _pearson(gid, rank_x, rank_y, n_groups, valid)
    kendall = _kendall(gid, x, y, n_groups, valid, order)
    return GroupedCorrelation(uniques, n, pearson, spearman, kendall, valid)


def text_level_correlation(
    predictions: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    query_ids: Sequence[Hashable] | np.ndarray | None = None,
) -> dict[str, float]:
    """Text-level Pearson / Spearman / Kendall: per-query correlation averaged over queries.

    CritiqueLLM v2 §4.4.1 (Table 2, "Text-Level"): for each query, the correlation between the human
    and the critic scores of that query's responses; the reported value is the mean over queries.

    Args:
        predictions: critic scores, shape ``(n,)``; None / NaN = unparsed, excluded and counted.
        references: human scores, shape ``(n,)``; None / NaN excluded and counted.
        query_ids: query id per row, shape ``(n,)``, any order, any group sizes. None: all rows form one
            query (the plain correlation over all rows).

    Returns:
        ``{"pearson", "spearman", "kendall"}``: means over the used queries, in [-1, 1] (NaN only when
        no query is usable); ``n_queries`` (all), ``n_queries_used``, ``n_queries_skipped`` (fewer than
        two valid responses, or constant human or critic scores: never averaged in, never an error),
        ``n_rows``, ``n_unparsed`` (predictions None / NaN), ``n_missing_references``.

    Raises:
        ValueError: see :func:`grouped_correlations`.
    """
    res = grouped_correlations(predictions, references, query_ids, groups_name="query_ids")
    x = _as_float(predictions, "predictions")
    y = _as_float(references, "references")
    used = int(res.valid.sum())
    out: dict[str, float] = {}
    for name in CORRELATIONS:
        vals = getattr(res, name)[res.valid]
        out[name] = float(vals.mean()) if used else math.nan
    out.update(
        n_queries=len(res.groups),
        n_queries_used=used,
        n_queries_skipped=len(res.groups) - used,
        n_rows=len(x),
        n_unparsed=int((~np.isfinite(x)).sum()),
        n_missing_references=int((~np.isfinite(y)).sum()),
    )
    return out


def system_level_correlation(
    predictions: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    system_ids: Sequence[Hashable] | np.ndarray,
) -> dict[str, float]:
    """System-level Pearson / Spearman / Kendall between per-system mean critic and human scores.

    CritiqueLLM v2 §4.4.1 (Table 2, "System-Level"): each system's (model's) score is the mean over its
    responses; the coefficient is computed across systems. Rows whose prediction is unparsed (or whose
    human score is missing) are left out of both means, so both sides average the same responses.

    Args:
        predictions: critic scores, shape ``(n,)``; None / NaN = unparsed.
        references: human scores, shape ``(n,)``.
        system_ids: system (model) id per row, shape ``(n,)``.

    Returns:
        ``{"pearson", "spearman", "kendall"}`` in [-1, 1], NaN when fewer than two systems have a valid
        row or either side's system means are constant; ``n_systems`` (systems with a valid row).

    Raises:
        ValueError: see :func:`grouped_correlations`.
    """
    x = _as_float(predictions, "predictions")
    y = _as_float(references, "references")
    if len(x) != len(y):
        raise ValueError(f"predictions and references differ in length: {len(x)} != {len(y)}")
    sid, uniques = _factorize(system_ids, "system_ids", len(x))
    keep = np.isfinite(x) & np.isfinite(y)
    sid, x, y = sid[keep], x[keep], y[keep]
    m = len(uniques)
    count = np.bincount(sid, minlength=m)
    present = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (np.bincount(sid, weights=x, minlength=m) / count)[present]
        my = (np.bincount(sid, weights=y, minlength=m) / count)[present]
    res = grouped_correlations(mx, my, None)
    out = {name: float(getattr(res, name)[0]) for name in CORRELATIONS}
    out["n_systems"] = int(present.sum())
    return out


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
    rejected pairs (hf-critic issue 20, "A critic that tells the better answer from the worse"). Unlike text-level
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
        raise ValueError(f"predictions and references differ in length: {len(x)} != {len(y)}")
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
        out["ci"] = {k: list(v) for k, v in intervals.items()}
    return out


def critique_correlation(
    predictions: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    query_ids: Sequence[Hashable] | np.ndarray | None = None,
    system_ids: Sequence[Hashable] | np.ndarray | None = None,
    *,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Table 2 of CritiqueLLM v2 (§4.4.1) in one call: text-level and, given systems, system-level; with them the
    row-level (pooled) correlation and the within-question pairwise accuracy.

    Args:
        predictions: critic scores, shape ``(n,)``; None / NaN = unparsed (excluded, counted).
        references: human scores, shape ``(n,)``.
        query_ids: query id per row (text-level grouping); None: all rows form one group.
        system_ids: system id per row; None: no system-level keys in the result.
        bootstrap: resamples of the queries for percentile confidence intervals (0: none; needs ``query_ids``):
            a cluster bootstrap, a query's responses stay together (see :mod:`~hf_critic.meta_eval.bootstrap`).
        seed: the bootstrap's seed.
        confidence: the intervals' coverage (default 0.95).

    Returns:
        ``text_pearson``, ``text_spearman``, ``text_kendall``, ``n_queries``, ``n_queries_used``,
        ``n_queries_skipped``, ``n_rows``, ``n_unparsed``, ``n_missing_references``; ``pooled_pearson``,
        ``pooled_spearman``, ``pooled_kendall``: the row-level correlation, all rows with both scores as one sample
        (in [-1, 1], NaN with fewer than two such rows or constant scores; equal to the text-level values when
        ``query_ids`` is None); ``within_question_accuracy``, ``within_question_pairs``, ``within_question_ties``,
        ``within_question_pairs_unparsed``, ``within_question_queries`` (see :func:`within_question_accuracy`:
        the share of same-query response pairs with different human scores that the critic orders as the humans
        do, critic ties counted half); ``quadratic_weighted_kappa`` (Cohen, 1968) of the critic's scores binned to the
        gold's scale (:func:`~hf_critic.meta_eval.chance.binned_weighted_kappa`) over ``quadratic_weighted_kappa_n``
        rows; with ``system_ids`` also ``system_pearson``, ``system_spearman``, ``system_kendall``, ``n_systems`` and ``per_system``
        (``{system: {"n", "critic_mean", "human_mean", "critic_rank", "human_rank"}}``, rank 1 = highest mean,
        ties share their mean rank; rows with an unparsed score or no human score left out of both means).
        With ``bootstrap`` and ``query_ids``: ``ci``, ``{figure: [low, high]}`` for the text- and system-level
        correlations, ``pooled_pearson`` and ``within_question_accuracy`` (pooled Spearman and Kendall have none:
        their ranks change with every resample). See :func:`text_level_correlation` and
        :func:`system_level_correlation`.

    Raises:
        ValueError: on mismatched lengths, non-numeric scores or missing ids.
    """
    text = text_level_correlation(predictions, references, query_ids)
    out: dict[str, Any] = {f"text_{k}": text.pop(k) for k in CORRELATIONS}
    out.update(text)
    pooled = grouped_correlations(predictions, references, None)
    out.update({f"pooled_{k}": float(getattr(pooled, k)[0]) if len(pooled.groups) else math.nan for k in CORRELATIONS})
    out.update(within_question_accuracy(predictions, references, query_ids))
    kappa = binned_weighted_kappa(predictions, references)
    out.update(quadratic_weighted_kappa=kappa["kappa"], quadratic_weighted_kappa_n=kappa["n"])
    if system_ids is not None:
        system = system_level_correlation(predictions, references, system_ids)
        out.update({f"system_{k}": system[k] for k in CORRELATIONS})
        out["n_systems"] = system["n_systems"]
        out["per_system"] = system_table(predictions, references, system_ids)
    if bootstrap and query_ids is not None:
        out["ci"] = _correlation_intervals(predictions, references, query_ids, system_ids, bootstrap, seed, confidence)
    return out


def system_table(
    predictions: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    system_ids: Sequence[Hashable] | np.ndarray,
) -> dict[Hashable, dict[str, float]]:
    """Per-system mean critic and human scores and their ranks: the system-level table behind the correlation.

    Returns:
        ``{system: {"n", "critic_mean", "human_mean", "critic_rank", "human_rank"}}`` in order of first appearance
        (rank 1 = highest mean; ties share their mean rank); only rows with both scores count.

    Raises:
        ValueError: see :func:`system_level_correlation`.
    """
    x = _as_float(predictions, "predictions")
    y = _as_float(references, "references")
    sid, uniques = _factorize(system_ids, "system_ids", len(x))
    keep = np.isfinite(x) & np.isfinite(y)
    m = len(uniques)
    count = np.bincount(sid[keep], minlength=m)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.bincount(sid[keep], weights=x[keep], minlength=m) / count
        my = np.bincount(sid[keep], weights=y[keep], minlength=m) / count
    rx = stats.rankdata(-mx, nan_policy="omit")
    ry = stats.rankdata(-my, nan_policy="omit")
    return {
        key: {
            "n": int(count[k]),
            "critic_mean": float(mx[k]),
            "human_mean": float(my[k]),
            "critic_rank": float(rx[k]),
            "human_rank": float(ry[k]),
        }
        for k, key in enumerate(uniques.tolist())
    }


def _rowwise(mx: np.ndarray, my: np.ndarray) -> dict[str, np.ndarray]:
    """Pearson, Spearman and Kendall tau-b across the columns of each row; NaN cells (absent systems) left out."""
    ok = np.isfinite(mx) & np.isfinite(my)

    def pearson(a, b):
        a, b = np.where(ok, a, np.nan), np.where(ok, b, np.nan)
        da, db = a - np.nanmean(a, axis=1, keepdims=True), b - np.nanmean(b, axis=1, keepdims=True)
        num = np.nansum(da * db, axis=1)
        return num / np.sqrt(np.nansum(da * da, axis=1) * np.nansum(db * db, axis=1))

    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: NaN, left out of the percentiles
        out = {"pearson": pearson(mx, my)}
        rank = lambda v: stats.rankdata(np.where(ok, v, np.nan), axis=1, nan_policy="omit")  # noqa: E731
        out["spearman"] = pearson(rank(mx), rank(my))
        a, b = np.triu_indices(mx.shape[1], 1)
        sx = np.nan_to_num(np.sign(mx[:, b] - mx[:, a]) * ok[:, a] * ok[:, b])
        sy = np.nan_to_num(np.sign(my[:, b] - my[:, a]) * ok[:, a] * ok[:, b])
        out["kendall"] = (sx * sy).sum(axis=1) / np.sqrt(np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1))
    return out


def _correlation_intervals(predictions, references, query_ids, system_ids, n_resamples, seed, confidence):
    """Bootstrap intervals of the text- (and system-) level correlations, resampling queries."""
    from scipy import sparse

    from .bootstrap import bootstrap_intervals

    x = _as_float(predictions, "predictions")
    y = _as_float(references, "references")
    qid, queries = _factorize(query_ids, "query_ids", len(x))
    res = grouped_correlations(x, y, qid)
    per_query = {name: np.nan_to_num(getattr(res, name)) for name in CORRELATIONS}
    valid = res.valid.astype(np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    credit, pairs, _, _ = _within_question_parts(x, y, qid, len(queries))
    # Per-query sums for the pooled Pearson of a resample: n, sum x, sum y, sum x^2, sum y^2, sum xy (centred on
    # the overall means first, so the moments of a resample lose no precision).
    xc = x[keep] - (x[keep].mean() if keep.any() else 0.0)
    yc = y[keep] - (y[keep].mean() if keep.any() else 0.0)
    moments = np.stack(
        [
            np.bincount(qid[keep], weights=v, minlength=len(queries))
            for v in (np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc)
        ],
        axis=1,
    )
    if system_ids is not None:
        sid, systems = _factorize(system_ids, "system_ids", len(x))
        shape = (len(queries), len(systems))
        cells = (qid[keep], sid[keep])
        sum_x = sparse.csr_matrix((x[keep], cells), shape=shape)
        sum_y = sparse.csr_matrix((y[keep], cells), shape=shape)
        count = sparse.csr_matrix((np.ones(int(keep.sum())), cells), shape=shape)

    def statistic(w: np.ndarray) -> dict[str, np.ndarray]:
        used = w @ valid
        with np.errstate(invalid="ignore", divide="ignore"):
            out = {f"text_{name}": w @ (values * valid) / used for name, values in per_query.items()}
            n, sx, sy, sxx, syy, sxy = (w @ moments).T
            cov, vx, vy = sxy - sx * sy / n, sxx - sx * sx / n, syy - sy * sy / n
            ok = (vx > 1e-12 * sxx) & (vy > 1e-12 * syy)  # constant scores in a resample: no correlation
            out["pooled_pearson"] = np.where(ok, np.clip(cov / np.sqrt(vx * vy), -1.0, 1.0), np.nan)
            out["within_question_accuracy"] = (w @ credit) / (w @ pairs)
            if system_ids is not None:
                n = np.asarray((count.T @ w.T).T)
                mx = np.asarray((sum_x.T @ w.T).T) / np.where(n > 0, n, np.nan)
                my = np.asarray((sum_y.T @ w.T).T) / np.where(n > 0, n, np.nan)
                out.update({f"system_{k}": v for k, v in _rowwise(mx, my).items()})
        return out

    intervals = bootstrap_intervals(statistic, len(queries), n_resamples, seed, confidence)
    return {k: list(v) for k, v in intervals.items()}
