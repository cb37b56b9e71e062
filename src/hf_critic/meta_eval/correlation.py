"""Pointwise grading meta-evaluation: text-level and system-level correlation (numpy / scipy, vectorised).

As in CritiqueLLM v2 §4.4.1, Table 2 (after Colombo et al., 2022): *text-level* correlation is the mean, over
queries, of the correlation between the human scores and the critic's scores of that query's responses;
*system-level* correlation is the correlation between the per-system (per-model) mean critic score and the
per-system mean human score. Pearson ``r``, Spearman ``rho`` and Kendall ``tau`` (tau-b, as
:func:`scipy.stats.kendalltau` computes by default) are reported for both. See :func:`text_level_correlation`,
:func:`system_level_correlation` and :func:`critique_correlation` (Table 2 in one call, with the row-level
correlation, the within-question pairwise accuracy of :mod:`~hf_critic.meta_eval.within_question` and bootstrap
intervals); pairwise comparison (agreement, consistency) is in :mod:`hf_critic.meta_eval.agreement`.

The per-query coefficients come from :func:`hf_critic.meta_eval.grouped.grouped_correlations`, which loops over no
row in Python: one million rows in 100,000 groups take ~1.6 s on 2 CPU cores, 270x faster than a per-query scipy
loop (``benchmarks/bench_metrics.py``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from ..core.errors import BadInputError
from .chance import binned_weighted_kappa
from .grouped import CORRELATIONS, _as_float, _factorize, grouped_correlations
from .within_question import _within_question_parts, within_question_accuracy

__all__ = [
    "check_scores",
    "critique_correlation",
    "system_level_correlation",
    "system_table",
    "text_level_correlation",
]


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
        raise BadInputError(f"predictions and references differ in length: {len(x)} != {len(y)}")
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
    # no system with a parsed row (a critic all unparsed): NaN, as for one system
    out = {name: float(getattr(res, name)[0]) if len(getattr(res, name)) else math.nan for name in CORRELATIONS}
    out["n_systems"] = int(present.sum())
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
        intervals = _correlation_intervals(predictions, references, query_ids, system_ids, bootstrap, seed, confidence)
        out["ci"] = dict(intervals)
        if intervals.dropped:  # resamples whose figure was undefined (constant scores), left out of the interval
            out["ci_dropped"] = intervals.dropped
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

    return bootstrap_intervals(statistic, len(queries), n_resamples, seed, confidence)
