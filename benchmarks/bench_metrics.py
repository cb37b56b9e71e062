"""Text-level correlation (CritiqueLLM v2 §4.4.1) on 1,000,000 rows: hf_critic.meta_eval.correlation vs a per-query scipy loop.

Run: ``python benchmarks/bench_metrics.py`` (add ``--scipy-queries 0`` to time the scipy loop on every query).

The rows are 100,000 queries × 10 responses with integer human scores 1-5 and critic scores 1-10 (ties, constant
groups), 1% unparsed critic scores, in shuffled order. The baseline is the obvious loop: for each query,
``scipy.stats.pearsonr``, ``spearmanr`` and ``kendalltau`` on its rows, then the mean over queries with a value.
By default the loop is timed on a random subset of queries and extrapolated linearly to all of them (the output
says so); the values are compared query by query on that subset.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from hf_critic.meta_eval.correlation import grouped_correlations, text_level_correlation

NAMES = ("pearson", "spearman", "kendall")


def make_data(n_queries: int, n_responses: int, seed: int):
    """Shuffled rows: (critic scores with NaNs, human scores, query ids), each of shape (n_queries * n_responses,)."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_responses
    human = rng.integers(1, 6, n).astype(np.float64)
    critic = np.clip(np.rint(2 * human + rng.normal(0, 2.5, n)), 1, 10)
    critic[rng.random(n) < 0.01] = np.nan
    query = np.repeat(np.arange(n_queries), n_responses)
    order = rng.permutation(n)
    return critic[order], human[order], query[order]


def scipy_loop(critic, human, query, queries):
    """Per-query scipy values, shape (len(queries), 3) (NaN where scipy has none), and the loop's wall time."""
    start = time.perf_counter()
    order = np.argsort(query, kind="stable")  # group the rows once, then slice: the fair version of the loop
    q_sorted = query[order]
    bounds = np.searchsorted(q_sorted, queries), np.searchsorted(q_sorted, queries, side="right")
    out = np.full((len(queries), 3), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant-input warnings
        for k, (lo, hi) in enumerate(zip(*bounds, strict=True)):
            rows = order[lo:hi]
            x, y = critic[rows], human[rows]
            keep = np.isfinite(x) & np.isfinite(y)
            x, y = x[keep], y[keep]
            if len(x) < 2:
                continue
            out[k] = (
                stats.pearsonr(x, y).statistic,
                stats.spearmanr(x, y).statistic,
                stats.kendalltau(x, y).statistic,
            )
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--responses", type=int, default=10)
    parser.add_argument("--scipy-queries", type=int, default=5_000, help="queries for the scipy loop; 0 = all")
    parser.add_argument("--repeats", type=int, default=3, help="best of N for the vectorised timing")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    critic, human, query = make_data(args.queries, args.responses, args.seed)
    print(f"rows: {len(critic):,} ({args.queries:,} queries x {args.responses} responses, shuffled, 1% unparsed)")

    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        ours = text_level_correlation(critic, human, query)
        times.append(time.perf_counter() - start)
    t_ours = min(times)
    print(f"hf_critic.meta_eval.correlation.text_level_correlation: {t_ours:.3f} s (best of {args.repeats})")
    print("  " + ", ".join(f"{k}={ours[k]:.6f}" for k in NAMES) + f", queries used {ours['n_queries_used']:,}")

    all_queries = np.arange(args.queries)
    if args.scipy_queries and args.scipy_queries < args.queries:
        subset = np.sort(np.random.default_rng(args.seed + 1).choice(all_queries, args.scipy_queries, replace=False))
    else:
        subset = all_queries
    expected, t_loop = scipy_loop(critic, human, query, subset)
    extrapolated = len(subset) < args.queries
    t_scipy = t_loop * args.queries / len(subset)
    if extrapolated:
        print(
            f"scipy per-query loop: {t_loop:.3f} s on {len(subset):,} queries -> {t_scipy:.1f} s for all "
            f"{args.queries:,} (EXTRAPOLATED linearly; run with --scipy-queries 0 to time every query)"
        )
    else:
        print(f"scipy per-query loop: {t_scipy:.1f} s on all {args.queries:,} queries")

    # Values: query by query on the subset, and the text-level means on the subset.
    res = grouped_correlations(critic, human, query)
    position = {q: i for i, q in enumerate(res.groups.tolist())}
    idx = np.array([position[q] for q in subset.tolist()])
    mine = np.stack([getattr(res, k)[idx] for k in NAMES], axis=1)
    same_nan = bool(np.array_equal(np.isnan(mine), np.isnan(expected)))
    diff = np.nanmax(np.abs(mine - expected))
    print(
        f"max |difference| per query over {len(subset):,} queries x 3 coefficients: {diff:.2e}; same skipped queries: {same_nan}"
    )
    mask = np.isin(query, subset)
    sub = text_level_correlation(critic[mask], human[mask], query[mask])
    mean_diff = max(abs(sub[k] - np.nanmean(expected[:, j])) for j, k in enumerate(NAMES))
    print(f"max |difference| of the text-level means on that subset: {mean_diff:.2e}")
    ratio = t_scipy / t_ours
    print(f"speed-up: {ratio:.0f}x (target >= 20x): {'PASS' if ratio >= 20 and diff < 1e-9 and same_nan else 'FAIL'}")


if __name__ == "__main__":
    main()
