"""hf_critic.meta_eval.length: baselines, length terciles, the length-controlled agreement, positional preference."""

from __future__ import annotations

import numpy as np
import pytest

from hf_critic.meta_eval.agreement import pairwise_agreement, pairwise_credits, two_way_decisions
from hf_critic.meta_eval.length import (
    length_controlled_agreement,
    length_tercile_agreement,
    length_verdicts,
    longer_wins,
    pairwise_baselines,
    pointwise_length_baseline,
    positional_preference,
)
from hf_critic.selective.logistic import fit_logistic


def test_length_controlled_agreement_is_the_fit_with_length_zeroed():
    """The coefficients are those of the fit on (decision, tanh(standardised length difference)); the agreement kept is
    sigma(b0 + b) where the critic chose response 1 and 1 - sigma(b0 - b) where it chose response 2."""
    rng = np.random.default_rng(1)
    n = 400
    len_1, len_2 = rng.integers(10, 400, n), rng.integers(10, 400, n)
    gold = np.where(rng.random(n) < 1 / (1 + np.exp(-(len_1 - len_2) / 80)), 0, 1)
    follows_length = length_verdicts(len_1, len_2)
    informed = np.where(rng.random(n) < 0.8, gold, 1 - gold)
    out = length_controlled_agreement(two_way_decisions(informed), gold, len_1, len_2)
    delta = (len_1 - len_2).astype(float)
    c = 1 - 2 * two_way_decisions(informed)
    fit = fit_logistic(np.column_stack([c, np.tanh(delta / delta.std())]), (gold == 0).astype(float))
    b0, b = fit["coef"][:2]
    kept = np.where(c > 0, 1 / (1 + np.exp(-(b0 + b))), 1 - 1 / (1 + np.exp(-(b0 - b))))
    assert out["critic_coefficient"] == pytest.approx(b) and out["length_controlled_agreement"] == pytest.approx(
        kept.mean()
    )
    assert out["critic_p"] < 1e-6 and out["length_controlled_agreement"] > 0.7
    # A critic that only reads length keeps nothing once length is in the model.
    length_only = length_controlled_agreement(two_way_decisions(follows_length), gold, len_1, len_2)
    assert length_only["critic_coefficient_without_length"] > 1
    assert abs(length_only["critic_coefficient"]) < length_only["critic_coefficient_without_length"] / 2
    assert length_only["length_controlled_agreement"] < out["length_controlled_agreement"] - 0.1


def test_pairwise_baselines_on_a_hand_counted_fixture():
    gold = [0, 1, 0, 1, 2, 0]
    r1 = ["a b c", "a", "a b", "a b c d", "x y", "q"]
    r2 = ["a", "a b c", "a b c", "a", "x y", "q r s"]  # longer: 1, 2, 2, 1, tie, 2
    out = pairwise_baselines(gold, r1, r2)
    assert out["longer_wins"]["first_order_agreement"] == pytest.approx(3 / 6)  # rows 0, 1 and 4 (a tie for a tie)
    assert out["shorter_wins"]["first_order_agreement"] == pytest.approx(4 / 6)  # rows 2, 3, 4 and 5
    assert out["always_response_1"]["first_order_agreement"] == pytest.approx(3 / 6)
    assert out["label_prior"] == {"first_order_agreement": 0.5, "cohen_kappa": 0.0, "label": "response_1"}
    assert "two_way_accuracy" not in out["longer_wins"]  # the gold has a tie: two-way figures are off by default
    on = pairwise_baselines(gold, r1, r2, two_way="on")["longer_wins"]
    assert on["two_way_accuracy"] == pytest.approx(2 / 5) and on["two_way_n"] == 5
    assert length_verdicts(r1, r2).tolist() == [0, 1, 1, 0, 2, 1]


def test_pointwise_length_baseline_scores_the_answers_length():
    out = pointwise_length_baseline(["a", "a b", "a b c", "x y z", "x"], [1, 2, 3, 5, 1], ["q", "q", "q", "r", "r"])
    assert out["within_question_accuracy"] == 1.0 and out["text_pearson"] == pytest.approx(1.0)
    assert out["within_question_pairs"] == 4 and out["n_rows"] == 5


def test_length_terciles_split_the_pairs_by_length_ratio():
    len_1 = np.array([10, 10, 10, 10, 10, 10])
    len_2 = np.array([10, 11, 20, 25, 60, 100])  # ratios (longer + 1) / (shorter + 1): 1, 1.09, 1.9, 2.4, 5.5, 9.2
    gold = np.array([0, 1, 1, 1, 1, 1])
    credits = pairwise_credits([1, 1, 0, 0, 1, 1], gold)
    out = length_tercile_agreement(credits, len_1, len_2, pairwise_credits(length_verdicts(len_1, len_2), gold))
    assert [t["n"] for t in out] == [2, 2, 2]
    assert [t["first_order_agreement"] for t in out] == [0.5, 0.0, 1.0]
    assert [t["baseline"]["first_order_agreement"] for t in out] == [0.5, 1.0, 1.0]


def test_positional_preference_per_order():
    first = [0, 0, 0, 1, 2, None]
    swapped_back = [1, 1, 0, 1, 2, 0]  # mapped back: 1 = response 2, shown first in the swapped order
    out = positional_preference(first, swapped_back, [0, 1, 0, 1, 1, 1])
    assert out["first_shown_original"] == pytest.approx(3 / 5) and out["tie_original"] == pytest.approx(1 / 5)
    assert out["first_shown_swapped"] == pytest.approx(3 / 6) and out["n_swapped"] == 6
    assert out["first_shown_both"] == pytest.approx((3 / 5 + 3 / 6) / 2)
    assert out["human_response_1"] == pytest.approx(2 / 6)


@pytest.mark.parametrize("unparsed", ["wrong", "tie", "drop"])
@pytest.mark.parametrize("two_way", ["auto", "on"])
def test_pairwise_credits_average_to_the_figures(unparsed, two_way):
    rng = np.random.default_rng(2)
    gold = rng.integers(0, 3, 80).astype(float)
    gold[rng.random(80) < 0.1] = np.nan
    first, swapped = (np.where(rng.random(80) < 0.1, np.nan, rng.integers(0, 3, 80)) for _ in range(2))
    figures = pairwise_agreement(first, gold, swapped, unparsed=unparsed, two_way=two_way)
    credits = pairwise_credits(first, gold, swapped, unparsed=unparsed, two_way=two_way)
    assert set(credits) == {
        k for k in figures if k in ("first_order_agreement", "agreement") or k.startswith("two_way_acc")
    }
    for name, values in credits.items():
        assert np.nanmean(values) == pytest.approx(figures[name], abs=1e-12)


def test_longer_wins_is_the_one_length_baseline_of_the_critic_the_risk_coverage_and_the_dev_score():
    """One home: the ``longer-wins`` critic of cascades, the risk-coverage baseline and the held-out dev score's
    "longer answer wins" are :func:`longer_wins`."""
    import datasets

    from hf_critic.critics.baselines import LongerWins
    from hf_critic.meta_eval.risk_coverage import LONGER_WINS, baseline_critics

    one, two = ["a b c", "a", "a b", ""], ["a", "a b c d", "x y", "a b"]
    labels, confidence = longer_wins(one, two)
    assert labels.tolist() == [0, 1, 2, 1] and confidence.tolist() == pytest.approx([5 / 6, 0.875, 0.5, 1.0])
    # the dev score's rule: equal lengths to response 1, the confidence unchanged
    ones, same = longer_wins(one, two, ties="response_1")
    assert ones.tolist() == [0, 1, 0, 1] and same.tolist() == confidence.tolist()
    assert longer_wins([3, 1], [1, 1], ties="response_1")[0].tolist() == [0, 0]  # word counts read as lengths
    critic = LongerWins().compare(datasets.Dataset.from_dict({"response_1": one, "response_2": two}))
    assert critic["critique_label"] == labels.tolist() and critic["critique_confidence"] == confidence.tolist()
    baseline = baseline_critics([0, 1, 2, 1], one, two)[LONGER_WINS]
    assert baseline[0].tolist() == labels.tolist() and baseline[1].tolist() == confidence.tolist()
    with pytest.raises(ValueError, match="ties must be one of tie, response_1, got 'first'"):
        longer_wins(one, two, ties="first")
