"""Text-level correlation (CritiqueLLM v2 §4.4.1) on 1,000,000 rows: hf_critic.meta_eval.correlation vs a per-query scipy loop.

Run: ``python benchmarks/bench_metrics.py`` (add ``--scipy-queries 0`` to time the scipy loop on every query).

Then the cost of ``--bootstrap 1000`` (95% intervals, :mod:`hf_critic.meta_eval.bootstrap`) on 10,000 rows: the
pointwise figures (text- and system-level, 1,250 queries x 8 systems, queries resampled) and the pairwise ones
(10,000 pairs judged in both orders, pairs resampled), each against the same call without intervals.

Then what the comparison figures add to a 10,000-row meta-eval of two critics (``--comparison-rows``): the baselines, Cohen's kappa,
Krippendorff's alpha of three annotators, the length terciles, the length-controlled agreement, the positional
preference and PPI of each run (:mod:`hf_critic.meta_eval.critic_extras`), and the paired comparisons of the two
critics and of each with length (``--paired-resamples 1000``), on 10,000 pairs (both orders, 5,000 questions) and on
10,000 graded responses (1,250 questions x 8 systems); against the figures the same runs had before (pairwise
agreement and critique correlation of both critics), timed in the same run. Goal: under 2 s added.

The rows are 100,000 queries × 10 responses with integer human scores 1-5 and critic scores 1-10 (ties, constant
groups), 1% unparsed critic scores, in shuffled order. The baseline is the obvious loop: for each query,
``scipy.stats.pearsonr``, ``spearmanr`` and ``kendalltau`` on its rows, then the mean over queries with a value.
By default the loop is timed on a random subset of queries and extrapolated linearly to all of them (the output
says so); the values are compared query by query on that subset.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

from hf_critic.meta_eval.agreement import pairwise_agreement
from hf_critic.meta_eval.correlation import critique_correlation, grouped_correlations, text_level_correlation

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


def machine() -> str:
    """CPU model, the vector flags numpy's kernels use, cores and the load average (other jobs share the cores)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    vector = " ".join(f for f in flags if f.startswith(("avx", "fma", "amx")))
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"CPU: {model}; {os.cpu_count()} cores; flags: {vector or 'none listed'}; load average (1/5/15 min): {load}"


def best_of(repeats: int, call) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def bootstrap_cost(rows: int, resamples: int, repeats: int, seed: int) -> None:
    """Seconds of the figures with ``resamples`` bootstrap resamples against the same call without."""
    rng = np.random.default_rng(seed)
    systems = 8
    human = rng.integers(1, 6, rows).astype(float)
    critic = np.clip(np.rint(2 * human + rng.normal(0, 2.5, rows)), 1, 10)
    critic[rng.random(rows) < 0.01] = np.nan
    query, system = np.arange(rows) // systems, np.arange(rows) % systems
    label = rng.integers(0, 3, rows)
    verdict = np.where(rng.random(rows) < 0.6, label, rng.integers(0, 3, rows)).astype(float)
    swapped = np.where(rng.random(rows) < 0.8, verdict, rng.integers(0, 3, rows)).astype(float)
    verdict[rng.random(rows) < 0.02] = np.nan
    calls = {
        f"pointwise, {rows:,} rows ({rows // systems:,} queries x {systems} systems)": lambda b: critique_correlation(
            critic, human, query_ids=query, system_ids=system, bootstrap=b, seed=seed
        ),
        f"pairwise, {rows:,} pairs, both orders": lambda b: pairwise_agreement(
            verdict, label, swapped, bootstrap=b, seed=seed
        ),
    }
    for name, call in calls.items():
        off = best_of(repeats, lambda call=call: call(0))
        on = best_of(repeats, lambda call=call: call(resamples))
        print(f"--bootstrap {resamples}, {name}: {on:.3f} s (CI off: {off:.3f} s; +{on - off:.3f} s, {on / off:.0f}x)")


def _comparison_data(rows: int, seed: int):
    """A pairwise and a pointwise critique file of two critics each, ``rows`` rows, as ``datasets.Dataset``."""
    import datasets

    from hf_critic.core import schema

    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 3, rows)
    len_1, len_2 = rng.integers(5, 300, rows), rng.integers(5, 300, rows)
    base = {
        "question": [f"q{i // 2}" for i in range(rows)],
        "response_1": ["w " * int(k) for k in len_1],
        "response_2": ["w " * int(k) for k in len_2],
        "label": gold.tolist(),
    }
    base.update(
        {f"annotator{k}": np.where(rng.random(rows) < 0.8, gold, rng.integers(0, 3, rows)).tolist() for k in range(3)}
    )
    pairwise = []
    for accuracy in (0.6, 0.55):
        first = np.where(rng.random(rows) < accuracy, gold, rng.integers(0, 3, rows))
        swapped = np.where(rng.random(rows) < 0.8, first, rng.integers(0, 3, rows))
        columns = {schema.CRITIQUE_LABEL: first.tolist(), schema.CRITIQUE_LABEL_SWAPPED: swapped.tolist()}
        pairwise.append(datasets.Dataset.from_dict({**base, **columns}))
    systems = 8
    human = rng.integers(1, 6, rows).astype(float)
    point = {
        "query_id": (np.arange(rows) // systems).tolist(),
        "system_id": (np.arange(rows) % systems).tolist(),
        "question": [f"q{i // systems}" for i in range(rows)],
        "response": ["w " * int(k) for k in len_1],
        "human_score": human.tolist(),
    }
    pointwise = []
    for noise in (2.0, 3.0):
        critic = np.clip(np.rint(2 * human + rng.normal(0, noise, rows)), 1, 10)
        pointwise.append(datasets.Dataset.from_dict({**point, schema.CRITIQUE_SCORE: critic.tolist()}))
    return pairwise, pointwise


def comparison_cost(rows: int, resamples: int, repeats: int, seed: int) -> None:
    """Seconds that the comparison figures add to a meta-eval of two critics on ``rows`` pairs and ``rows`` responses,
    against the figures those runs computed before (pairwise agreement, critique correlation), in the same run."""
    from hf_critic.core import schema
    from hf_critic.meta_eval import evaluate_critiques
    from hf_critic.meta_eval.critic_extras import PPISpec, compare_critics, pairwise_extras, pointwise_extras

    pairwise, pointwise = _comparison_data(rows, seed)
    annotators = ["annotator0", "annotator1", "annotator2"]
    spec = PPISpec(fraction=0.1, seed=seed)
    columns = {}
    for k, d in enumerate(pairwise + pointwise):  # read once: both sides get the columns as numpy arrays
        columns[k] = {
            c: np.asarray(d[c]) if c not in ("response_1", "response_2", "response", "question") else d[c]
            for c in d.column_names
        }

    def before():
        for k in range(2):
            c = columns[k]
            pairwise_agreement(c[schema.CRITIQUE_LABEL], c["label"], c[schema.CRITIQUE_LABEL_SWAPPED])
            c = columns[2 + k]
            critique_correlation(
                c[schema.CRITIQUE_SCORE], c["human_score"], query_ids=c["query_id"], system_ids=c["system_id"]
            )

    def added():
        for k in range(2):
            c = columns[k]
            pairwise_extras(
                pairwise[k],
                label="label",
                first=c[schema.CRITIQUE_LABEL],
                swapped=c[schema.CRITIQUE_LABEL_SWAPPED],
                unparsed="wrong",
                two_way="auto",
                distributions=None,
                combined=None,
                annotators=annotators,
                ppi=spec,
            )
            c = columns[2 + k]
            pointwise_extras(
                pointwise[k],
                c[schema.CRITIQUE_SCORE].astype(float),
                c["human_score"],
                c["query_id"],
                c["system_id"],
                ppi=spec,
            )

    runs = [
        evaluate_critiques(
            d, f"critic-{k % 2}", "pairs" if k < 2 else "grades", annotators=annotators if k < 2 else ()
        )
        for k, d in enumerate(pairwise + pointwise)
    ]
    t_before = best_of(repeats, before)
    t_extras = best_of(repeats, added)
    t_paired = best_of(repeats, lambda: compare_critics(runs, resamples=resamples, seed=seed))
    n_pairs = len(compare_critics(runs, resamples=10, seed=seed))
    t_added = t_extras + t_paired
    print(
        f"comparison figures on {rows:,} pairs + {rows:,} graded responses, two critics each: baselines, kappa, alpha, length, "
        f"position and PPI {t_extras:.3f} s + {n_pairs} paired comparisons ({resamples} resamples / permutations) "
        f"{t_paired:.3f} s = {t_added:.3f} s added (best of {repeats}); the figures before: {t_before:.3f} s, "
        f"ratio {t_added / t_before:.1f}x; goal < 2 s: {'PASS' if t_added < 2 else 'FAIL'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--responses", type=int, default=10)
    parser.add_argument("--scipy-queries", type=int, default=5_000, help="queries for the scipy loop; 0 = all")
    parser.add_argument("--repeats", type=int, default=3, help="best of N for the vectorised timing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap-rows", type=int, default=10_000, help="rows for the bootstrap cost")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples for the bootstrap cost (0: skip)")
    parser.add_argument(
        "--comparison-rows", type=int, default=10_000, help="rows for the comparison figures' cost (0: skip)"
    )
    parser.add_argument("--paired-resamples", type=int, default=1000, help="resamples of the paired comparisons")
    parser.add_argument("--only-comparison", action="store_true", help="time the comparison figures only")
    args = parser.parse_args()
    print(machine())
    if args.only_comparison:
        comparison_cost(args.comparison_rows, args.paired_resamples, args.repeats, args.seed)
        print(machine().split("; ")[-1])
        return

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
    if args.bootstrap:
        bootstrap_cost(args.bootstrap_rows, args.bootstrap, args.repeats, args.seed)
    if args.comparison_rows:
        comparison_cost(args.comparison_rows, args.paired_resamples, args.repeats, args.seed)
    print(machine().split("; ")[-1])  # the load again: it moves while other jobs run


if __name__ == "__main__":
    main()
