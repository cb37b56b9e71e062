"""hf_critic.meta_eval.chance: Cohen's kappa and Krippendorff's alpha against published values and well-kept packages."""

from __future__ import annotations

import numpy as np
import pytest

from hf_critic.meta_eval.agreement import pairwise_agreement
from hf_critic.meta_eval.chance import (
    ALPHA_LEVELS,
    alpha_with_critic,
    annotator_alpha,
    bin_to_scale,
    binned_weighted_kappa,
    cohen_kappa,
    krippendorff_alpha,
)
from hf_critic.meta_eval.correlation import critique_correlation

NAN = np.nan
#: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", §C: 4 observers x 12 units, missing values;
#: the paper's alphas: nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_reproduces_krippendorff_2011(level, published):
    out = krippendorff_alpha(KRIPPENDORFF_2011, level)
    assert round(out["alpha"], 3) == published
    assert out["n_units"] == 11 and out["n_coders"] == 4  # unit 12 has one value: not pairable


def test_kappa_reproduces_a_textbook_table():
    """Cohen's 2 x 2 example (yes/yes 20, yes/no 5, no/yes 10, no/no 15): p_o = 0.7, p_e = 0.5, kappa = 0.4."""
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    out = cohen_kappa(a, b)
    assert out["kappa"] == pytest.approx(0.4) and out["observed"] == pytest.approx(0.7)
    assert out["expected"] == pytest.approx(0.5) and out["n"] == 50


def test_kappa_and_alpha_match_sklearn_and_krippendorff():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(1, 6, 80).astype(float)
        b = np.where(rng.random(80) < 0.5, a, rng.integers(1, 6, 80)).astype(float)
        for weights in (None, "linear", "quadratic"):
            expected = sklearn_metrics.cohen_kappa_score(a, b, weights=weights)
            assert cohen_kappa(a, b, weights=weights)["kappa"] == pytest.approx(expected, abs=1e-12)
        data = rng.integers(1, 5, (4, 40)).astype(float)
        data[rng.random(data.shape) < 0.25] = np.nan
        for level in ALPHA_LEVELS:
            expected = krippendorff.alpha(data, level_of_measurement=level)
            assert krippendorff_alpha(data, level)["alpha"] == pytest.approx(expected, abs=1e-10)


def test_pairwise_agreement_kappa_counts_an_unparsed_verdict_as_its_own_category():
    gold = [0, 1, 2, 0, 1, 0, 1, 1]
    verdicts = [0, 1, None, 0, 0, 0, 1, 2]
    out = pairwise_agreement(verdicts, gold)
    assert out["cohen_kappa"] == pytest.approx(cohen_kappa([0, 1, -1, 0, 0, 0, 1, 2], gold)["kappa"])
    assert pairwise_agreement(gold, gold)["cohen_kappa"] == 1.0
    assert pairwise_agreement([0] * 8, gold)["cohen_kappa"] == 0.0  # a constant answer: chance
    assert pairwise_agreement([0, 1], [0, 1], bootstrap=100)["ci"]["cohen_kappa"] == "n too small"  # two pairs
    assert pairwise_agreement([0, 1] * 10, [0, 1] * 10, bootstrap=100)["ci"]["cohen_kappa"] == [1.0, 1.0]


def test_scores_binned_to_the_gold_scale():
    # Critic 1-10, gold 1-5: mapped linearly from the critic's range, then to the nearest gold category.
    assert bin_to_scale([1, 2, 5, 10, None, 7], [1, 2, 3, 4, 5]).tolist()[:4] == [1, 1, 3, 5]
    assert bin_to_scale([1, 10], [1, 2, 3, 4, 5], score_range=(0, 10)).tolist() == [1, 5]
    # A critic already on the gold's scale keeps its scores.
    assert bin_to_scale([1, 3, 5], [1, 2, 3, 4, 5]).tolist() == [1, 3, 5]
    # Gold categories need not be contiguous: 4.5 is nearer 5 than 3.
    assert bin_to_scale([2, 9], [1, 2, 3, 5], score_range=(2, 10)).tolist() == [1, 5]
    out = binned_weighted_kappa([2, 4, 6, 8, 10, None], [1, 2, 3, 4, 5, 3])
    assert out["kappa"] == 1.0 and out["n"] == 5 and out["n_missing"] == 1
    assert critique_correlation([2, 4, 6, 8, 10], [1, 2, 3, 4, 5])["quadratic_weighted_kappa"] == 1.0
    assert critique_correlation([10, 8, 6, 4, 2], [1, 2, 3, 4, 5])["quadratic_weighted_kappa"] == pytest.approx(-1.0)


def test_alpha_with_and_without_the_critic():
    humans = {"a": [0, 1, 1, 0, 2, 0], "b": [0, 1, 1, 0, 2, 1], "c": [0, 1, -1, 0, 2, 0]}
    with_copy = annotator_alpha(humans, humans["a"])
    with_noise = annotator_alpha(humans, [1, 0, 2, 2, 0, 1])
    assert with_copy["alpha_with_critic"] > with_copy["alpha_annotators"] > with_noise["alpha_with_critic"]
    assert annotator_alpha({"only": [0, 1]}, [0, 1]) == {}
    out = alpha_with_critic([["response 1", "tie"], ["response 1", "tie"]], ["response 1", "tie"], pairwise=True)
    assert out["krippendorff_alpha"] == 1.0 and out["krippendorff_alpha_with_critic"] == 1.0
    # Scores: the critic's 1-10 binned to the gold's 1-5 before joining the annotators.
    out = alpha_with_critic([[1, 3, 5], [1, 3, 5]], [2, 6, 10], pairwise=False, references=[1, 3, 5])
    assert out["krippendorff_alpha_with_critic"] == 1.0 and out["krippendorff_alpha_level"] == "interval"
