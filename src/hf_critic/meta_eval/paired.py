"""Is critic A better than critic B, or is it noise? Paired comparisons of two critics on the same rows.

Two critics judged on the same benchmark are compared row by row, not figure against figure: the rows both critics
get right (or wrong) carry no information about which is better, and the paired test uses that (Dror et al., 2018,
"The Hitchhiker's Guide to Testing Statistical Significance in NLP", §3-4; Deutsch et al., 2021, "A Statistical
Analysis of Summarization Evaluation Metrics using Resampling Methods", TACL 9, §4-5, for correlations). For each
headline figure this module gives the difference A - B with

* a **paired bootstrap interval** that resamples **questions** (a cluster bootstrap: the rows of one question, its
  responses or its pairs, move together, as the figures average over them; Efron and Tibshirani, 1993, ch. 13, the
  percentile interval), both critics' values computed on the same resample
  (:mod:`~hf_critic.meta_eval.bootstrap`);
* a **p-value** for "no difference": the **exact McNemar test** for agreement figures (McNemar, 1947: of the pairs on
  which the two critics' credits differ, is A right as often as B? a two-sided exact binomial test, ``scipy.stats
  .binomtest``, on the discordant pairs; a two-way credit of 1/2 makes a pair discordant with 0 and with 1 too, a
  sign test), and a **paired permutation test** for correlations and the within-question accuracy (the two critics'
  scores of one question swapped at random, Deutsch et al., 2021, §4.2 "PERM-BOTH"; the scores are standardised first,
  so critics on different scales can be swapped; every swap pattern is enumerated when there are at most
  ``resamples`` of them, otherwise ``resamples`` random ones with the p-value ``(1 + hits) / (1 + resamples)``,
  Phipson and Smyth, 2010).

:func:`compare_pairwise` takes two critics' per-pair credits (:func:`~hf_critic.meta_eval.agreement.pairwise_credits`),
:func:`compare_pointwise` two critics' scores; :func:`verdict_line` says the result in one plain line. Identical
critics give a difference of 0 and p = 1.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from ..core.errors import BadInputError
from .bootstrap import MAX_CELLS, bootstrap_intervals
from .grouped import _factorize, grouped_correlations
from .within_question import _within_question_parts

__all__ = [
    "FIGURE_NAMES",
    "compare_pairwise",
    "compare_pointwise",
    "permutation_p_value",
    "permutation_p_values",
    "verdict_line",
]

#: Plain names of the compared figures, in report order.
FIGURE_NAMES = {
    "agreement": "agreement (both orders)",
    "first_order_agreement": "first-order agreement",
    "two_way_accuracy": "two-way accuracy",
    "two_way_accuracy_combined": "two-way accuracy (both orders)",
    "within_question_accuracy": "within-question accuracy",
    "text_pearson": "text-level Pearson",
    "pooled_pearson": "row-level Pearson",
}


def _groups(groups: Sequence[Hashable] | np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Integer group codes ``(n,)`` and their number; None: every row its own group."""
    if groups is None:
        return np.arange(n), n
    codes, uniques = _factorize(groups, "groups", n)
    return codes, len(uniques)


def _intervals(statistic: Callable, n_units: int, resamples: int, seed: int, confidence: float, names) -> dict:
    """``{figure: [low, high]}`` of one bootstrap shared by every figure (NaN without resamples or units)."""
    if not resamples or not n_units:
        return {name: [math.nan, math.nan] for name in names}
    return bootstrap_intervals(statistic, n_units, resamples, seed, confidence)


def _sign_blocks(n_units: int, resamples: int, seed: int):
    """Blocks of swap patterns ``(b, n_units)`` in {0, 1} (1 = swap the two critics in that unit) and whether they
    are all the patterns (exact enumeration: when ``2 ** n_units <= resamples``)."""
    if n_units <= 20 and 2**n_units <= max(resamples, 1):
        patterns = np.array(list(itertools.product((0.0, 1.0), repeat=n_units))).reshape(-1, n_units)
        return [patterns], True
    rng = np.random.default_rng(seed)
    block = max(1, MAX_CELLS // max(n_units, 1))
    blocks, done = [], 0
    while done < resamples:
        b = min(block, resamples - done)
        blocks.append(rng.integers(0, 2, size=(b, n_units)).astype(np.float64))
        done += b
    return blocks, False


def permutation_p_values(
    statistic: Callable[[np.ndarray], Mapping[str, np.ndarray]],
    observed: Mapping[str, float],
    n_units: int,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    """Two-sided p-values of paired permutation tests (the two critics swapped at random within units), several
    figures on the same swap patterns.

    Args:
        statistic: maps swap patterns ``(b, n_units)`` (1 = swap A and B in that unit) to ``{figure: the difference A
            - B on each pattern (b,)}``; a row of zeros must give ``observed``.
        observed: ``{figure: the difference on the data}``.
        n_units: units swapped together (questions).
        resamples: random patterns; when ``2 ** n_units <= resamples`` every pattern is enumerated (exact test).
        seed: seed of the random patterns.

    Returns:
        ``{figure: p}`` in (0, 1]: the share of patterns whose ``|difference|`` reaches ``|observed|`` (exact), or
        ``(1 + hits) / (1 + resamples)`` (random, Phipson and Smyth, 2010); 1.0 when ``observed`` is 0 or there is
        no unit, NaN when it is NaN.
    """
    hits = dict.fromkeys(observed, 0)
    total = 0
    if n_units:
        blocks, exact = _sign_blocks(n_units, resamples, seed)
        for patterns in blocks:
            for name, values in statistic(patterns).items():
                if name in hits and math.isfinite(observed[name]):
                    tolerance = 1e-9 * max(1.0, abs(observed[name]))
                    reached = np.abs(np.nan_to_num(values, nan=0.0)) >= abs(observed[name]) - tolerance
                    hits[name] += int(reached.sum())
            total += len(patterns)
    out = {}
    for name, value in observed.items():
        if not n_units or value == 0:
            out[name] = 1.0
        elif not math.isfinite(value):
            out[name] = math.nan
        else:
            out[name] = hits[name] / total if exact else (1 + hits[name]) / (1 + total)
    return out


def permutation_p_value(
    statistic: Callable[[np.ndarray], np.ndarray], observed: float, n_units: int, resamples: int = 1000, seed: int = 0
) -> float:
    """:func:`permutation_p_values` of one figure: ``statistic`` maps swap patterns ``(b, n_units)`` to ``(b,)``."""
    return permutation_p_values(lambda s: {"d": statistic(s)}, {"d": observed}, n_units, resamples, seed)["d"]


def _mcnemar(a: np.ndarray, b: np.ndarray) -> tuple[float, int, int]:
    """Exact McNemar (sign) test: two-sided binomial p-value on the rows where the credits differ."""
    a_better, b_better = int((a > b).sum()), int((a < b).sum())
    if not a_better + b_better:
        return 1.0, a_better, b_better
    return float(stats.binomtest(a_better, a_better + b_better, 0.5).pvalue), a_better, b_better


def compare_pairwise(
    credits_a: Mapping[str, np.ndarray],
    credits_b: Mapping[str, np.ndarray],
    groups: Sequence[Hashable] | np.ndarray | None = None,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """Paired comparison of two critics' pairwise verdicts, figure by figure.

    Args:
        credits_a: critic A's per-pair credit per figure (:func:`~hf_critic.meta_eval.agreement.pairwise_credits`:
            1 / 0, or 1 / 0.5 / 0 for two-way figures; NaN where the pair does not count), each ``(n,)``.
        credits_b: critic B's, on the same pairs in the same order; only figures both have are compared.
        groups: the question of each pair ``(n,)``, resampled as one unit by the bootstrap; None: each pair alone.
        resamples: bootstrap resamples (0: no interval).
        seed: the bootstrap's seed.
        confidence: the interval's coverage and ``1 - `` the test's level.

    Returns:
        ``{figure: {"a", "b", "difference" (a - b, in [-1, 1]), "ci": [low, high], "p_value", "test": "exact
        McNemar", "n" (pairs both count), "a_better", "b_better" (discordant pairs), "significant": p < 1 -
        confidence}}``.

    Raises:
        ValueError: credits of different lengths.
    """
    names = [k for k in FIGURE_NAMES if k in credits_a and k in credits_b]
    n = len(credits_a[names[0]]) if names else 0
    gid, n_groups = _groups(None if groups is None else np.asarray(groups, dtype=object), n)
    out, columns = {}, []
    for name in names:
        a, b = np.asarray(credits_a[name], dtype=np.float64), np.asarray(credits_b[name], dtype=np.float64)
        if a.shape != b.shape or len(a) != n:
            raise BadInputError(f"{name}: the two critics' credits differ in length: {a.shape} != {b.shape}")
        both = np.isfinite(a) & np.isfinite(b)
        # Per question: the credit difference and the pairs both critics count (a resample draws whole questions).
        columns += [
            np.bincount(gid, weights=np.where(both, a - b, 0.0), minlength=n_groups),
            np.bincount(gid, weights=both.astype(np.float64), minlength=n_groups),
        ]
        a, b = a[both], b[both]
        p, a_better, b_better = _mcnemar(a, b)
        out[name] = {"a": _mean(a), "b": _mean(b), "difference": _mean(a - b), "p_value": p, "test": "exact McNemar"}
        out[name].update(n=int(both.sum()), a_better=a_better, b_better=b_better, significant=p < 1 - confidence)
    sums = np.stack(columns, axis=1) if columns else np.zeros((n_groups, 0))

    def statistic(w):
        with np.errstate(invalid="ignore", divide="ignore"):
            total = w @ sums
            return {name: total[:, 2 * k] / total[:, 2 * k + 1] for k, name in enumerate(names)}

    intervals = _intervals(statistic, n_groups, resamples, seed, confidence, names)
    return {name: {**entry, "ci": intervals[name]} for name, entry in out.items()}


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else math.nan


def _standardised(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else x - x.mean()


def compare_pointwise(
    scores_a: Sequence[float] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    query_ids: Sequence[Hashable] | np.ndarray | None = None,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """Paired comparison of two critics' pointwise grades: text-level Pearson, row-level Pearson, within-question
    accuracy.

    Only the rows both critics graded (and the humans scored) count, so both figures are of the same rows:
    ``text_pearson`` averages over the questions where both critics have a correlation; ``pooled_pearson`` is over all
    those rows; ``within_question_accuracy`` over the same pairs of one question's responses (CritiqueLLM v2 §4.4.1;
    :func:`~hf_critic.meta_eval.within_question.within_question_accuracy`).

    Args:
        scores_a: critic A's scores ``(n,)``; None / NaN = unparsed.
        scores_b: critic B's scores on the same rows ``(n,)``; any scale (they are standardised before a swap).
        references: the human scores ``(n,)``.
        query_ids: the question of each row ``(n,)``, the unit of both the bootstrap and the permutation test; None:
            one question (the permutation test then has nothing to swap but the whole).
        resamples: bootstrap resamples and random swap patterns (0: no interval; the test then enumerates or draws
            1000 patterns).
        seed: seed of both.
        confidence: the interval's coverage and ``1 -`` the test's level.

    Returns:
        ``{figure: {"a", "b", "difference", "ci": [low, high], "p_value", "test": "paired permutation", "n" (rows, or
        questions for text_pearson, or pairs for within_question_accuracy), "significant"}}``.

    Raises:
        ValueError: different lengths or a missing query id.
    """
    x_a = np.asarray([np.nan if v is None else v for v in scores_a], dtype=np.float64)
    x_b = np.asarray([np.nan if v is None else v for v in scores_b], dtype=np.float64)
    y = np.asarray([np.nan if v is None else v for v in references], dtype=np.float64)
    if not len(x_a) == len(x_b) == len(y):
        raise BadInputError(f"scores_a, scores_b and references differ in length: {len(x_a)}, {len(x_b)}, {len(y)}")
    keep = np.isfinite(x_a) & np.isfinite(x_b) & np.isfinite(y)
    queries = np.asarray(query_ids, dtype=object)[keep] if query_ids is not None else np.zeros(int(keep.sum()))
    gid, n_groups = _groups(queries, int(keep.sum()))
    x_a, x_b, y = _standardised(x_a[keep]), _standardised(x_b[keep]), y[keep]
    parts = {
        "text_pearson": _text_level(x_a, x_b, y, gid, n_groups),
        "pooled_pearson": _pooled(x_a, x_b, y, gid, n_groups),
        "within_question_accuracy": _within(x_a, x_b, y, gid, n_groups),
    }
    # One bootstrap and one set of swap patterns for the three figures.
    intervals = _intervals(
        lambda w: {k: f.boot(w) for k, f in parts.items()}, n_groups, resamples, seed, confidence, parts
    )
    p_values = permutation_p_values(
        lambda sw: {k: f.swap(sw) for k, f in parts.items()},
        {k: f.observed for k, f in parts.items()},
        n_groups,
        resamples or 1000,
        seed,
    )
    return {
        k: {
            "a": f.a,
            "b": f.b,
            "difference": f.observed,
            "ci": intervals[k],
            "p_value": p_values[k],
            "test": "paired permutation",
            "n": f.n,
            "significant": bool(p_values[k] < 1 - confidence),
        }
        for k, f in parts.items()
    }


class _Figure(NamedTuple):
    """One pointwise figure of two critics: their values, the difference, its count, and the difference on bootstrap
    weights ``(b, questions) -> (b,)`` and on swap patterns ``(b, questions) -> (b,)``."""

    a: float
    b: float
    observed: float
    n: int
    boot: Callable[[np.ndarray], np.ndarray]
    swap: Callable[[np.ndarray], np.ndarray]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _text_level(x_a, x_b, y, gid, n_groups) -> _Figure:
    """Mean per-question Pearson of A minus B over the questions where both have one; a swap flips the sign."""
    r_a, r_b = grouped_correlations(x_a, y, gid), grouped_correlations(x_b, y, gid)
    valid = (r_a.valid & r_b.valid).astype(np.float64)
    d = np.nan_to_num(r_a.pearson - r_b.pearson) * valid
    used = float(valid.sum())
    mean = lambda r: float(np.nan_to_num(r.pearson) @ valid / used) if used else math.nan  # noqa: E731
    return _Figure(
        mean(r_a),
        mean(r_b),
        float(d.sum() / used) if used else math.nan,
        int(used),
        lambda w: _ratio(w @ d, w @ valid),
        lambda s: ((1 - 2 * s) @ d) / max(used, 1),
    )


def _pearson_from_sums(n, sx, sy, sxx, syy, sxy):
    with np.errstate(invalid="ignore", divide="ignore"):
        cov, vx, vy = sxy - sx * sy / n, sxx - sx * sx / n, syy - sy * sy / n
        return np.where(
            (vx > 1e-12 * np.maximum(sxx, 1e-300)) & (vy > 1e-12 * np.maximum(syy, 1e-300)),
            cov / np.sqrt(vx * vy),
            np.nan,
        )


def _pooled(x_a, x_b, y, gid, n_groups) -> _Figure:
    """Row-level Pearson of A minus B; per-question moment sums make a resample or a swap one matrix product."""
    yc = y - (y.mean() if len(y) else 0.0)

    def sums(v):
        return np.bincount(gid, weights=v, minlength=n_groups)

    shared = np.stack([sums(np.ones_like(yc)), sums(yc), sums(yc * yc)], axis=1)  # n, sy, syy
    m_a = np.stack([sums(x_a), sums(x_a * x_a), sums(x_a * yc)], axis=1)  # sx, sxx, sxy
    m_b = np.stack([sums(x_b), sums(x_b * x_b), sums(x_b * yc)], axis=1)

    def pearson(shared_w, m_w):
        n, sy, syy = shared_w.T
        sx, sxx, sxy = m_w.T
        return _pearson_from_sums(n, sx, sy, sxx, syy, sxy)

    ones = np.ones((1, n_groups))
    r_a, r_b = float(pearson(ones @ shared, ones @ m_a)[0]), float(pearson(ones @ shared, ones @ m_b)[0])

    def boot(w):
        s = w @ shared
        return pearson(s, w @ m_a) - pearson(s, w @ m_b)

    def swapped(s):
        total = np.repeat(ones @ shared, len(s), axis=0)
        first = ones @ m_a + s @ (m_b - m_a)  # swapped questions take B's scores as "A", and A's as "B"
        second = ones @ m_b + s @ (m_a - m_b)
        return pearson(total, first) - pearson(total, second)

    return _Figure(r_a, r_b, r_a - r_b, len(y), boot, swapped)


def _within(x_a, x_b, y, gid, n_groups) -> _Figure:
    """Within-question accuracy of A minus B on the same pairs; a swap flips a question's credit difference."""
    c_a, pairs, _, _ = _within_question_parts(x_a, y, gid, n_groups)
    c_b, _, _, _ = _within_question_parts(x_b, y, gid, n_groups)
    total = float(pairs.sum())
    d = c_a - c_b
    a, b = (float(c.sum() / total) if total else math.nan for c in (c_a, c_b))
    return _Figure(
        a,
        b,
        float(d.sum() / total) if total else math.nan,
        int(total),
        lambda w: _ratio(w @ d, w @ pairs),
        lambda s: ((1 - 2 * s) @ d) / max(total, 1),
    )


def verdict_line(
    name_a: str, name_b: str, comparison: Mapping[str, Mapping[str, Any]], confidence: float = 0.95
) -> str:
    """One plain line for a pair of critics: which is better on which figure, or that no difference was detected.

    Args:
        name_a: critic A's name; name_b: critic B's.
        comparison: :func:`compare_pairwise` or :func:`compare_pointwise` output.
        confidence: the level the tests were read at (a difference counts when ``p < 1 - confidence``).

    Returns:
        e.g. ``"A better than B on two-way accuracy (+5.1 points, p = 0.003); no difference detected at 95% on
        first-order agreement (+1.2 points, p = 0.41)"``; differences of accuracies in percentage points, of
        correlations as numbers.
    """
    level = f"{100 * confidence:g}%"
    better: dict[tuple[str, str], list[str]] = {}
    none = []
    for name, c in comparison.items():
        words = FIGURE_NAMES.get(name, name.replace("_", " "))
        d = c["difference"]
        amount = (f"{100 * d:+.1f} points" if "pearson" not in name else f"{d:+.3f}") if math.isfinite(d) else "n/a"
        detail = f"{words} ({amount}, p = {_p(c['p_value'])})"
        if c.get("significant") and math.isfinite(d) and d != 0:
            better.setdefault((name_a, name_b) if d > 0 else (name_b, name_a), []).append(detail)
        else:
            none.append(detail)
    parts = [f"{winner} better than {loser} on {', '.join(details)}" for (winner, loser), details in better.items()]
    if none:
        parts.append(f"no difference detected at {level} on " + ", ".join(none))
    return f"{name_a} vs {name_b}: " + ("; ".join(parts) if parts else "nothing to compare")


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "n/a"
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"
