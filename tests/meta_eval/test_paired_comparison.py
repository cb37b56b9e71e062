"""hf_critic.meta_eval.paired: is critic A better than critic B? Checked against computations written out here."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from hf_critic.meta_eval.agreement import pairwise_agreement, pairwise_credits
from hf_critic.meta_eval.bootstrap import resample_counts
from hf_critic.meta_eval.paired import compare_pairwise, compare_pointwise, permutation_p_value, verdict_line


def _pairs(n=200, seed=0):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, n)
    return gold, rng.integers(0, 2, n), np.repeat(np.arange(n // 4), 4)


def test_identical_critics_differ_by_zero_with_p_one():
    gold, verdicts, questions = _pairs()
    credits = pairwise_credits(verdicts, gold)
    out = compare_pairwise(credits, credits, questions, resamples=500)
    for figure in ("first_order_agreement", "two_way_accuracy"):
        assert out[figure]["difference"] == 0 and out[figure]["p_value"] == 1.0
        assert out[figure]["ci"] == [0.0, 0.0] and not out[figure]["significant"]
    rng = np.random.default_rng(1)
    human = rng.integers(1, 6, 120).astype(float)
    scores = human + rng.normal(0, 2, 120)
    query = np.repeat(np.arange(30), 4)
    out = compare_pointwise(scores, scores, human, query, resamples=500)
    assert {f: (c["difference"], c["p_value"]) for f, c in out.items()} == {
        "text_pearson": (0.0, 1.0),
        "pooled_pearson": (0.0, 1.0),
        "within_question_accuracy": (0.0, 1.0),
    }
    # The same critic on another scale (an affine map): the same correlations, still no difference.
    out = compare_pointwise(scores, 3 * scores + 1, human, query, resamples=500)
    assert all(abs(c["difference"]) < 1e-12 and c["p_value"] == 1.0 for c in out.values())
    assert "no difference detected at 95%" in verdict_line("a", "b", out)


def test_a_critic_equal_to_the_gold_beats_a_random_one_on_200_pairs():
    gold, random_verdicts, questions = _pairs()
    out = compare_pairwise(pairwise_credits(gold, gold), pairwise_credits(random_verdicts, gold), questions)
    first = out["first_order_agreement"]
    assert first["p_value"] < 0.01 and first["significant"] and first["difference"] > 0
    assert first["ci"][0] > 0  # the whole interval above 0
    line = verdict_line("gold", "random", out)
    assert line.startswith("gold vs random: gold better than random on first-order agreement (+")
    # The other way round: B is named the better one.
    reverse = verdict_line(
        "random",
        "gold",
        compare_pairwise(pairwise_credits(random_verdicts, gold), pairwise_credits(gold, gold), questions),
    )
    assert "gold better than random" in reverse


def test_mcnemar_is_the_exact_binomial_test_on_discordant_pairs():
    """Against the exact McNemar p-value written out from the 2 x 2 table: 2 * P(X <= min(b, c)), X ~ Bin(b + c, 1/2)."""
    rng = np.random.default_rng(3)
    gold = rng.integers(0, 3, 150)
    a = np.where(rng.random(150) < 0.7, gold, rng.integers(0, 3, 150))
    b = np.where(rng.random(150) < 0.55, gold, rng.integers(0, 3, 150))
    out = compare_pairwise(pairwise_credits(a, gold), pairwise_credits(b, gold), resamples=0)["first_order_agreement"]
    right_a, right_b = a == gold, b == gold
    n10, n01 = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
    k, n = min(n10, n01), n10 + n01
    expected = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
    assert (out["a_better"], out["b_better"]) == (n10, n01)
    assert out["p_value"] == pytest.approx(expected, rel=1e-9)
    assert out["difference"] == pytest.approx(right_a.mean() - right_b.mean())
    assert out["a"] == pairwise_agreement(a, gold)["first_order_agreement"]


def test_paired_bootstrap_resamples_questions_together():
    """The interval is the percentile interval of A - B over resamples of whole questions (loop written out)."""
    rng = np.random.default_rng(4)
    gold = rng.integers(0, 2, 60)
    a, b = np.where(rng.random(60) < 0.8, gold, 1 - gold), np.where(rng.random(60) < 0.6, gold, 1 - gold)
    questions = np.repeat([f"q{i}" for i in range(12)], 5)
    out = compare_pairwise(pairwise_credits(a, gold), pairwise_credits(b, gold), questions, resamples=400, seed=7)
    diffs = []
    for counts in resample_counts(12, 400, 7):
        for row in counts:
            w = np.repeat(row, 5)  # every pair of a drawn question, as often as the question was drawn
            diffs.append((w * ((a == gold).astype(float) - (b == gold))).sum() / w.sum())
    expected = np.percentile(diffs, [2.5, 97.5])
    np.testing.assert_allclose(out["first_order_agreement"]["ci"], expected, atol=1e-12)


def _brute_force_pointwise(x_a, x_b, y, query):
    """Every swap pattern of the questions, each figure recomputed from scratch with scipy and explicit pair loops."""
    questions = sorted(set(query))
    z_a, z_b = (x_a - x_a.mean()) / x_a.std(), (x_b - x_b.mean()) / x_b.std()

    def figures(s_a, s_b):
        text = np.mean(
            [
                stats.pearsonr(s_a[query == q], y[query == q])[0] - stats.pearsonr(s_b[query == q], y[query == q])[0]
                for q in questions
            ]
        )
        pooled = stats.pearsonr(s_a, y)[0] - stats.pearsonr(s_b, y)[0]
        credit, pairs = 0.0, 0
        for q in questions:
            idx = np.flatnonzero(query == q)
            for i, j in itertools.combinations(idx, 2):
                if y[i] != y[j]:
                    pairs += 1
                    for s, sign in ((s_a, 1), (s_b, -1)):
                        order = np.sign(s[i] - s[j]) * np.sign(y[i] - y[j])
                        credit += sign * (1.0 if order > 0 else 0.5 if order == 0 else 0.0)
        return np.array([text, pooled, credit / pairs])

    observed = figures(z_a, z_b)
    swapped = []
    for pattern in itertools.product((False, True), repeat=len(questions)):
        swap = np.isin(query, [q for q, s in zip(questions, pattern, strict=True) if s])
        swapped.append(figures(np.where(swap, z_b, z_a), np.where(swap, z_a, z_b)))
    hits = (np.abs(np.array(swapped)) >= np.abs(observed) - 1e-9).mean(axis=0)
    return observed, hits


def test_paired_permutation_test_matches_a_brute_force_enumeration():
    rng = np.random.default_rng(5)
    query = np.repeat(np.arange(6), 5)
    y = rng.integers(1, 6, 30).astype(float)
    x_a = np.rint(2 * y + rng.normal(0, 1.5, 30))
    x_b = np.rint(rng.normal(5, 2, 30)) * 10  # another scale
    out = compare_pointwise(x_a, x_b, y, query, resamples=2000)  # 2^6 patterns <= 2000: exact
    observed, p = _brute_force_pointwise(x_a, x_b, y, query)
    names = ("text_pearson", "pooled_pearson", "within_question_accuracy")
    np.testing.assert_allclose([out[k]["difference"] for k in names], observed, atol=1e-12)
    np.testing.assert_allclose([out[k]["p_value"] for k in names], p, atol=1e-12)


def test_random_permutations_never_give_p_zero():
    calls = []

    def statistic(patterns):
        calls.append(len(patterns))
        return np.zeros(len(patterns))

    p = permutation_p_value(statistic, 5.0, n_units=40, resamples=999, seed=0)
    assert p == pytest.approx(1 / 1000) and sum(calls) == 999


def test_only_rows_both_critics_count_are_compared():
    gold = np.array([0, 1, 0, 1, 0, 1])
    a = np.array([0, 1, 0, 1, None, 1], dtype=object)
    b = np.array([0, 0, 0, 1, 0, None], dtype=object)
    out = compare_pairwise(pairwise_credits(a, gold, unparsed="drop"), pairwise_credits(b, gold, unparsed="drop"))
    assert out["first_order_agreement"]["n"] == 4
    assert out["first_order_agreement"]["difference"] == pytest.approx(0.25)
