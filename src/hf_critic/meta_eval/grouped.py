"""Per-group Pearson, Spearman and Kendall tau-b, vectorised: the engine under text-level correlation.

:func:`grouped_correlations` gives the three coefficients within each group (query) at once, equal to scipy's
applied group by group. Nothing here loops over rows in Python: groups are handled with ``np.bincount`` and one
integer sort per score (average ranks within groups), Kendall's tau-b by enumerating the within-group pairs with one
``np.triu_indices`` template per group size in bounded blocks (one scipy call per group only for the rare groups
larger than :data:`KENDALL_PAIRWISE_MAX_GROUP`). The input checks (:func:`_as_float`, :func:`_factorize`) serve the
rest of :mod:`hf_critic.meta_eval` too.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import BadInputError

__all__ = ["CORRELATIONS", "GroupedCorrelation", "KENDALL_PAIRWISE_MAX_GROUP", "grouped_correlations"]


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
                raise BadInputError(f"{name}[{i}] is not a number: {v!r}")
        values = [np.nan if v is None else v for v in values]
    elif values.dtype.kind not in "iuf":
        raise BadInputError(f"{name} must hold numbers, got an array of dtype {values.dtype}")
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise BadInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _factorize(values: Any, name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes ``(n,)`` in order of first appearance and the unique ids, for any hashable ids.

    Raises:
        ValueError: if the length is not ``n`` or an id is None / NaN.
    """
    arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if arr.ndim != 1 or len(arr) != n:
        raise BadInputError(f"{name} must be one-dimensional with {n} values (one per row), got shape {arr.shape}")
    codes, uniques = pd.factorize(arr, sort=False, use_na_sentinel=True)
    if n and codes.min() < 0:
        i = int(np.flatnonzero(codes < 0)[0])
        raise BadInputError(f"{name}[{i}] is missing ({arr[i]!r}); every row needs an id")
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
        raise BadInputError(f"predictions and references differ in length: {len(x)} != {len(y)}")
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
