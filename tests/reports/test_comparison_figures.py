"""Comparison figures that measure judgement.

* pointwise: within-question pairwise accuracy (critic ties half, unparsed pairs left out and counted), its
  bootstrap interval over questions, the row-level (pooled) correlation beside it, in meta-eval, the ``grade``
  summary, the evaluate module and the SFT validation callback;
* pairwise data whose gold has no tie: the two-way accuracy (response 1 or 2, the tie option dropped), first order
  and both orders combined, in meta-eval, the ``compare`` summary and the evaluate module.

Every expected value is computed by hand in the comments; no model runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math

import datasets
import numpy as np
import pytest
from scipy import stats

from hf_critic.commands import critique as critique_command
from hf_critic.commands import meta_eval
from hf_critic.core import schema
from hf_critic.meta_eval import compare_critics, evaluate_critiques, within_question
from hf_critic.meta_eval.agreement import pairwise_agreement, two_way_decisions
from hf_critic.meta_eval.bootstrap import resample_counts
from hf_critic.meta_eval.correlation import critique_correlation
from hf_critic.meta_eval.verdict_sources import figure_lines, pairwise_verdict_figures, pointwise_verdict_figures
from hf_critic.meta_eval.within_question import within_question_accuracy
from hf_critic.reports.critic_markdown import render_markdown
from hf_critic.reports.meta_eval_report import write_report

# 3 questions x 3 responses. Human scores and critic scores per question:
#   q1: human 1, 2, 3   critic 3, 5, 9     -> 3 pairs, all ordered right                     -> 3
#   q2: human 2, 2, 5   critic 6, None, 4  -> (r1, r2) human tie: no pair; (r1, r3) wrong: 0; (r2, r3) unparsed
#   q3: human 4, 1, 3   critic 8, 2, 8     -> (r1, r2) right: 1; (r1, r3) critic tie: 1/2; (r2, r3) right: 1
# within-question accuracy = (3 + 0 + 2.5) / 7 pairs, 1 critic tie, 1 pair left out.
QUERIES = ["q1"] * 3 + ["q2"] * 3 + ["q3"] * 3
HUMAN = [1.0, 2.0, 3.0, 2.0, 2.0, 5.0, 4.0, 1.0, 3.0]
CRITIC = [3.0, 5.0, 9.0, 6.0, None, 4.0, 8.0, 2.0, 8.0]


def brute_force(x, y, g):
    """Pairs enumerated one by one: (accuracy, pairs, critic ties, pairs left out for an unparsed score)."""
    credit = pairs = ties = left_out = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        if g[i] != g[j] or not (np.isfinite(y[i]) and np.isfinite(y[j])) or y[i] == y[j]:
            continue
        if not (np.isfinite(x[i]) and np.isfinite(x[j])):
            left_out += 1
            continue
        pairs += 1
        same = np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
        credit += 1.0 if same > 0 else 0.5 if same == 0 else 0.0
        ties += same == 0
    return (credit / pairs if pairs else math.nan), pairs, ties, left_out


# ------------------------------------------------------------------------------------------------ pointwise maths
def test_within_question_accuracy_by_hand():
    out = within_question_accuracy(CRITIC, HUMAN, QUERIES)
    assert out == {
        "within_question_accuracy": pytest.approx(5.5 / 7),
        "within_question_pairs": 7,
        "within_question_ties": 1,
        "within_question_pairs_unparsed": 1,
        "within_question_queries": 3,
    }
    # A critic that scores everything alike is undecided on every pair: exactly 1/2, never skipped.
    flat = within_question_accuracy([5.0] * 9, HUMAN, QUERIES)
    assert flat["within_question_accuracy"] == 0.5 and flat["within_question_ties"] == 8
    # The reversed critic orders q1 wrong and q2 right, and still ties q3's pair: (0 + 1 + 0.5) / 7.
    reversed_critic = [-v if v is not None else None for v in CRITIC]
    assert within_question_accuracy(reversed_critic, HUMAN, QUERIES)["within_question_accuracy"] == pytest.approx(
        1.5 / 7
    )


def test_within_question_accuracy_pairs_only_within_a_question():
    # Without query ids every pair of rows with different human scores counts (36 pairs minus human ties).
    x = np.array([v if v is not None else np.nan for v in CRITIC])
    y = np.array(HUMAN)
    pooled = within_question_accuracy(x, y)
    expected = brute_force(x, y, [0] * 9)
    assert (pooled["within_question_pairs"], pooled["within_question_ties"]) == expected[1:3]
    assert pooled["within_question_pairs_unparsed"] == expected[3]
    assert pooled["within_question_accuracy"] == pytest.approx(expected[0])
    assert pooled["within_question_pairs"] != 7  # not the within-question count


def test_within_question_accuracy_missing_human_scores_and_no_pairs():
    # A missing human score removes its row's pairs altogether (neither counted nor left out).
    out = within_question_accuracy([1, 2, 3], [1.0, None, 2.0], ["a", "a", "a"])
    assert (out["within_question_accuracy"], out["within_question_pairs"]) == (1.0, 1)
    assert out["within_question_pairs_unparsed"] == 0
    empty = within_question_accuracy([], [])
    assert math.isnan(empty["within_question_accuracy"]) and empty["within_question_pairs"] == 0
    one_each = within_question_accuracy([1, 2], [1, 2], ["a", "b"])
    assert math.isnan(one_each["within_question_accuracy"]) and one_each["within_question_queries"] == 0


@pytest.mark.parametrize("max_group", [within_question.KENDALL_PAIRWISE_MAX_GROUP, 3])
def test_within_question_accuracy_matches_pair_enumeration(monkeypatch, max_group):
    """Random data with ties, NaN on both sides and uneven groups; ``max_group=3`` sends most groups through the
    O(n log n) path (tie counts and scipy's tau-b)."""
    monkeypatch.setattr(within_question, "KENDALL_PAIRWISE_MAX_GROUP", max_group)  # the name _pair_counts reads
    rng = np.random.default_rng(7)
    for _ in range(25):
        n = int(rng.integers(0, 70))
        x = rng.integers(1, 6, n).astype(float)
        y = rng.integers(1, 4, n).astype(float)
        x[rng.random(n) < 0.15] = np.nan
        y[rng.random(n) < 0.1] = np.nan
        g = rng.integers(0, 5, n)
        out = within_question_accuracy(x, y, g)
        acc, pairs, ties, left_out = brute_force(x, y, g)
        assert (out["within_question_pairs"], out["within_question_ties"]) == (pairs, ties)
        assert out["within_question_pairs_unparsed"] == left_out
        if pairs:
            assert out["within_question_accuracy"] == pytest.approx(acc, abs=1e-12)
        else:
            assert math.isnan(out["within_question_accuracy"])


def test_critique_correlation_carries_pooled_and_within_question_figures():
    out = critique_correlation(CRITIC, HUMAN, query_ids=QUERIES)
    x = np.array([v if v is not None else np.nan for v in CRITIC])
    keep = np.isfinite(x)
    y = np.array(HUMAN)
    assert out["pooled_pearson"] == pytest.approx(stats.pearsonr(x[keep], y[keep]).statistic, abs=1e-12)
    assert out["pooled_spearman"] == pytest.approx(stats.spearmanr(x[keep], y[keep]).statistic, abs=1e-12)
    assert out["pooled_kendall"] == pytest.approx(stats.kendalltau(x[keep], y[keep]).statistic, abs=1e-12)
    assert out["within_question_accuracy"] == pytest.approx(5.5 / 7)
    assert out["within_question_pairs"] == 7 and out["within_question_pairs_unparsed"] == 1
    # Without query ids, pooled and text-level are the same single correlation.
    one = critique_correlation(CRITIC, HUMAN)
    assert one["pooled_pearson"] == pytest.approx(one["text_pearson"], abs=1e-12)


def test_bootstrap_resamples_questions_for_within_question_and_pooled():
    """Each resample's figure is the figure of the data with each question repeated as often as drawn; the interval
    is the percentiles of those figures."""
    rng = np.random.default_rng(0)
    queries = np.repeat(np.arange(12), 4)
    human = rng.integers(1, 6, 48).astype(float)
    critic = human + rng.normal(0, 1.5, 48)
    critic[[3, 17]] = np.nan
    out = critique_correlation(critic, human, query_ids=queries, bootstrap=100, seed=5)
    within, pooled = [], []
    for counts in np.concatenate(list(resample_counts(12, 100, seed=5))):
        picked = np.concatenate([np.flatnonzero(queries == q) for q in range(12) for _ in range(int(counts[q]))])
        copy_ids = np.concatenate([[f"{q}-{k}"] * 4 for q in range(12) for k in range(int(counts[q]))])
        within.append(within_question_accuracy(critic[picked], human[picked], copy_ids)["within_question_accuracy"])
        keep = np.isfinite(critic[picked])
        pooled.append(stats.pearsonr(critic[picked][keep], human[picked][keep]).statistic)
    assert out["ci"]["within_question_accuracy"] == pytest.approx(np.percentile(within, [2.5, 97.5]), abs=1e-12)
    assert out["ci"]["pooled_pearson"] == pytest.approx(np.percentile(pooled, [2.5, 97.5]), abs=1e-9)
    # Many resamples: the interval holds the estimate; a critic that orders every pair right has [1, 1].
    many = critique_correlation(critic, human, query_ids=queries, bootstrap=300)
    low, high = many["ci"]["within_question_accuracy"]
    assert low <= many["within_question_accuracy"] <= high and low < high
    assert within_question_accuracy(human, human, queries, bootstrap=100)["ci"] == {
        "within_question_accuracy": [1.0, 1.0]
    }


# ------------------------------------------------------------------------------------------------ two-way maths
def dist(r1, r2, tie=None):
    d = {"response_1": r1, "response_2": r2}
    if tie is not None:
        d["tie"] = tie
    return json.dumps(d)


# HHH-like chosen / rejected pairs (gold 0 or 1, never a tie). First-order three-way labels are ties on the first
# two pairs, but their distributions lean the human way once the tie is dropped:
#   pair 0: gold 0, P = (.3, .2, tie .5) -> tie; two-way response 1: right
#   pair 1: gold 1, P = (.1, .4, tie .5) -> tie; two-way response 2: right
#   pair 2: gold 0, P = (.6, .3, .1)     -> 0, right
#   pair 3: gold 1, P = (.7, .2, .1)     -> 0, wrong
# three-way first-order 1/4; two-way 3/4.
GOLD = [0, 1, 0, 1]
FIRST = [2, 2, 0, 0]
FIRST_DIST = [dist(0.3, 0.2, 0.5), dist(0.1, 0.4, 0.5), dist(0.6, 0.3, 0.1), dist(0.7, 0.2, 0.1)]
# Swapped order mapped back, and both orders averaged (what --swap writes):
#   pair 0: swapped 0; combined (.5, .1, .4) -> 0 (right), two-way right
#   pair 1: swapped 2; combined (.2, .35, .45) -> tie (wrong three-way), two-way response 2: right
#   pair 2: swapped 1; combined (.4, .4, .2) -> equal: undecided, 1/2
#   pair 3: swapped 0; combined (.6, .3, .1) -> 0, wrong
SWAPPED = [0, 2, 1, 0]
COMBINED_LABEL = [0, 2, 2, 0]
COMBINED_DIST = [dist(0.5, 0.1, 0.4), dist(0.2, 0.35, 0.45), dist(0.4, 0.4, 0.2), dist(0.6, 0.3, 0.1)]


def test_two_way_decisions():
    assert np.array_equal(
        two_way_decisions([0, 1, 2, None], [dist(0.5, 0.2, 0.3), dist(0.1, 0.3, 0.6), dist(0.2, 0.2, 0.6), None]),
        [0.0, 1.0, 0.5, np.nan],
        equal_nan=True,
    )
    # A low-mass read-out keeps its distribution but has no label: no choice either.
    assert np.isnan(two_way_decisions([None], [dist(0.9, 0.1, 0.0)])[0])
    # A template without a tie (two keys), and mappings as well as JSON text.
    assert two_way_decisions([1], [{"response_1": 0.45, "response_2": 0.55}]).tolist() == [1.0]
    # Text verdicts: a tie is undecided; with the swapped order, votes are added.
    assert two_way_decisions(["Assistant 1", "tie", "B"]).tolist() == [0.0, 0.5, 1.0]
    both = two_way_decisions([0, 0, 2, 2, 1, 0], swapped_labels=[0, 1, 1, 2, 2, None])
    assert np.array_equal(both, [0.0, 0.5, 1.0, 0.5, 1.0, np.nan], equal_nan=True)
    with pytest.raises(ValueError, match="differ in length"):
        two_way_decisions([0, 1], [dist(1, 0, 0)])


def test_two_way_accuracy_from_distributions_when_the_three_way_label_is_a_tie():
    out = pairwise_agreement(FIRST, GOLD, distributions=FIRST_DIST)
    assert out["first_order_agreement"] == 0.25
    assert out["two_way_accuracy"] == 0.75
    assert (out["two_way_n"], out["two_way_n_gold_ties"], out["two_way_source"]) == (4, 0, "distribution")
    assert "two_way_accuracy_combined" not in out  # one order only
    # From the labels alone, the two ties count half each: (0.5 + 0.5 + 1 + 0) / 4.
    assert pairwise_agreement(FIRST, GOLD)["two_way_accuracy"] == 0.5


def test_two_way_accuracy_combined_under_swap():
    out = pairwise_agreement(FIRST, GOLD, SWAPPED, distributions=FIRST_DIST, combined_distributions=COMBINED_DIST)
    assert out["two_way_accuracy"] == 0.75
    assert out["two_way_accuracy_combined"] == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    # The three-way figures are unchanged by the two-way ones: no pair has both orders right; pairs 1 (tie, tie) and
    # 3 (0, 0) are consistent.
    assert out["agreement"] == 0.0 and out["consistency"] == 0.5
    # Text verdicts: both orders' votes added. Pair 0: tie + 0 -> response 1, right; pair 1: tie + tie -> 1/2;
    # pair 2: 0 + 1 -> 1/2; pair 3: 0 + 0 -> wrong.
    text = pairwise_agreement(FIRST, GOLD, SWAPPED)
    assert text["two_way_accuracy_combined"] == pytest.approx((1 + 0.5 + 0.5 + 0) / 4)
    assert text["two_way_source"] == "labels"
    with pytest.raises(ValueError, match="give swapped_predictions"):
        pairwise_agreement(FIRST, GOLD, combined_distributions=COMBINED_DIST)


def test_two_way_switch_and_gold_ties():
    # auto: off as soon as one gold label is a tie.
    with_tie = pairwise_agreement([0, 1, 2], [0, 1, 2])
    assert not any(k.startswith("two_way") for k in with_tie)
    # on: the gold ties are left out of the two-way figures and counted. Pairs 0 (right) and 1 (wrong) remain.
    forced = pairwise_agreement([0, 0, 2], [0, 1, 2], two_way="on")
    assert forced["two_way_accuracy"] == 0.5 and forced["two_way_n"] == 2 and forced["two_way_n_gold_ties"] == 1
    assert not any(k.startswith("two_way") for k in pairwise_agreement(FIRST, GOLD, two_way="off"))
    with pytest.raises(ValueError, match="two_way must be one of"):
        pairwise_agreement(FIRST, GOLD, two_way="maybe")


def test_two_way_unparsed_policies_and_bootstrap():
    pred = [0, None, 1, 0]
    dists = [dist(0.8, 0.1, 0.1), dist(0.9, 0.1, 0.0), dist(0.2, 0.7, 0.1), dist(0.6, 0.3, 0.1)]
    gold = [0, 0, 1, 1]
    # Pairs 0 and 2 right, pair 3 wrong. wrong: the unparsed pair 1 scores 0 (its low-mass distribution unused).
    assert pairwise_agreement(pred, gold, distributions=dists)["two_way_accuracy"] == 0.5
    # tie: the unparsed pair is undecided, 1/2 -> 2.5 / 4.
    assert pairwise_agreement(pred, gold, distributions=dists, unparsed="tie")["two_way_accuracy"] == 0.625
    # drop: pair 1 leaves -> 2 / 3.
    dropped = pairwise_agreement(pred, gold, distributions=dists, unparsed="drop")
    assert dropped["two_way_accuracy"] == pytest.approx(2 / 3) and dropped["two_way_n"] == 3
    # A parsed label without a distribution has no two-way choice: wrong (0) under the default policy.
    assert pairwise_agreement(pred, gold, distributions=[*dists[:2], None, dists[3]])["two_way_accuracy"] == 0.25
    boot = pairwise_agreement(FIRST * 5, GOLD * 5, distributions=FIRST_DIST * 5, bootstrap=200)
    low, high = boot["ci"]["two_way_accuracy"]
    assert low <= 0.75 <= high and low < high


# ------------------------------------------------------------------------------------------------ reports
def pointwise_critiques():
    return datasets.Dataset.from_dict(
        {
            "question": [f"Question {q}" for q in QUERIES],
            "response": [str(i) for i in range(9)],
            "human_score": HUMAN,
            schema.CRITIQUE_SCORE: CRITIC,
        }
    )


def hhh_critiques(probability: bool = True, gold=GOLD):
    columns = {
        "question": ["Q"] * 4,
        "response_1": ["a"] * 4,
        "response_2": ["b"] * 4,
        "label": list(gold),
        schema.CRITIQUE_LABEL_SWAPPED: SWAPPED,
    }
    if probability:
        columns.update(
            {
                schema.CRITIQUE_LABEL: COMBINED_LABEL,
                schema.CRITIQUE_LABEL_FIRST: FIRST,
                schema.CRITIQUE_DISTRIBUTION: FIRST_DIST,
                schema.CRITIQUE_DISTRIBUTION_COMBINED: COMBINED_DIST,
            }
        )
    else:
        columns[schema.CRITIQUE_LABEL] = FIRST
    return datasets.Dataset.from_dict(columns)


def test_meta_eval_pointwise_report_has_within_question_accuracy(tmp_path):
    run = evaluate_critiques(pointwise_critiques(), "critic", "bench", bootstrap=200)
    m = run.metrics
    assert m["within_question_accuracy"] == pytest.approx(5.5 / 7) and m["within_question_pairs"] == 7
    # three questions: no interval worth printing (never a zero-width or meaningless "95%" interval)
    assert m["ci"]["within_question_accuracy"] == m["ci"]["text_pearson"] == "n too small"
    text = render_markdown([run])
    assert "## Pointwise grading: the better response of a question above the worse" in text
    row = f"| critic | bench | 78.57 [n too small] | 7 | 1 | 1 | {m['text_pearson']:.3f} [n too small] | "
    assert row in text
    assert f"| {m['pooled_spearman']:.3f} | {m['pooled_kendall']:.3f} |" in text
    payload = json.loads(write_report([run], tmp_path, plots=False, paired=compare_critics([run]))["json"].read_text())
    metrics = payload["runs"][0]["metrics"]
    assert metrics["within_question_accuracy"] == pytest.approx(5.5 / 7)
    assert metrics["within_question_pairs_unparsed"] == 1 and "pooled_pearson" in metrics


def test_meta_eval_pairwise_report_has_two_way_columns():
    run = evaluate_critiques(hhh_critiques(), "critic", "hhh")
    m = run.metrics
    assert (m["first_order_agreement"], m["two_way_accuracy"], m["two_way_accuracy_combined"]) == (0.25, 0.75, 0.625)
    text = render_markdown([run])
    assert "| **Agr.** | **Cons.** | **First-order** | **2-way** | **2-way comb.** |" in text
    assert "| critic | 0.00 | 50.00 | 25.00 | 75.00 | 62.50 |" in text
    assert "the tie option dropped" in text and "`--two-way auto|on|off`" in text
    # The verdict-sources table carries them too: first order 75.00, both orders combined 62.50.
    assert "| critic | hhh | probability, first order | 0.00 | 50.00 | 25.00 | 75.00 | – |" in text
    # The combined labels (0, tie, tie, 0) agree with the gold on pair 0 alone.
    assert "| critic | hhh | probability, both orders combined | 25.00 | – | – | – | 62.50 |" in text
    # Text verdicts: ties count half; off: no two-way columns; a gold tie: auto leaves them out.
    text_run = evaluate_critiques(hhh_critiques(probability=False), "critic", "hhh")
    assert text_run.metrics["two_way_accuracy"] == 0.5 and text_run.metrics["two_way_source"] == "labels"
    off = evaluate_critiques(hhh_critiques(), "critic", "hhh", two_way="off")
    assert "two_way_accuracy" not in off.metrics and "2-way" not in render_markdown([off])
    tied = evaluate_critiques(hhh_critiques(gold=[0, 1, 2, 1]), "critic", "hhh")
    assert "two_way_accuracy" not in tied.metrics


def test_meta_eval_cli_two_way_option(tmp_path):
    hhh_critiques().to_json(tmp_path / "hhh.jsonl", lines=True)

    def run(*extra):
        parser = argparse.ArgumentParser()
        meta_eval.register(parser.add_subparsers(dest="command"))
        out = tmp_path / f"out{len(extra)}"
        args = parser.parse_args(
            [
                "meta-eval",
                "--critiques",
                f"c/hhh={tmp_path / 'hhh.jsonl'}",
                "--no-plots",
                "--output-dir",
                str(out),
                *extra,
            ]
        )
        assert args.func(args) == 0
        return json.loads((out / "report.json").read_text())["runs"][0]["metrics"]

    assert run()["two_way_accuracy"] == 0.75
    assert "two_way_accuracy" not in run("--two-way", "off")


# ------------------------------------------------------------------------------------------------ summaries
def test_grade_summary_line_has_within_question_accuracy():
    args = argparse.Namespace(task="grade", human_score=None)
    line, length = critique_command._figures(pointwise_critiques(), args)
    assert line.startswith("vs human_score (text verdicts): row-level Pearson ")
    assert length.startswith("vs human_score (baseline: the answer's length in words as its score): row-level")
    # text-level: q1 r(3 5 9; 1 2 3) = 0.98198, q2 two parsed rows: -1, q3 r(8 2 8; 4 1 3) = 0.94491 -> mean 0.309
    assert "text-level Pearson 0.309 over 3 questions" in line
    assert "within-question accuracy 78.6% [n too small]" in line  # three questions
    assert "over 7 pairs of one question's responses with different human_score (1 critic ties counted half, " in line
    assert "1 with an unparsed score left out)" in line
    figures = pointwise_verdict_figures(pointwise_critiques(), "human_score", bootstrap=100)
    assert figures["text"]["within_question_accuracy"] == pytest.approx(5.5 / 7)
    assert figures["text"]["ci"]["within_question_accuracy"] == "n too small"
    assert "78.6% [n too small]" in figure_lines(figures, "grade", "human_score")[0]


def test_compare_summary_two_way():
    figures = pairwise_verdict_figures(hhh_critiques(), "label")
    assert figures["two_way_n"] == 4
    assert figures["probability_first_order"]["two_way_accuracy"] == 0.75
    assert figures["combined"] == {"agreement": 0.25, "two_way_accuracy_combined": 0.625}
    assert figures["always_response_1"]["two_way_accuracy"] == 0.5
    lines = critique_command._figures(hhh_critiques(), argparse.Namespace(task="compare", human_label=None))
    assert any("probability, first order): " in x and "two-way accuracy 75.00" in x for x in lines)
    assert any("two-way accuracy (both orders) 62.50" in x for x in lines)
    assert any(
        x.startswith("two-way: the choice between response 1 and response 2 alone over the 4 pairs") for x in lines
    )
    off = critique_command._figures(
        hhh_critiques(), argparse.Namespace(task="compare", human_label=None, two_way="off")
    )
    assert not any("two-way" in x for x in off)
    text = pairwise_verdict_figures(hhh_critiques(probability=False), "label", two_way="on")
    assert text["text"]["two_way_accuracy"] == 0.5 and text["text"]["two_way_accuracy_combined"] == 0.5


def test_compare_cli_two_way_option():
    parser = argparse.ArgumentParser()
    critique_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["compare", "--data", "d.jsonl", "--output", "o.jsonl", "--two-way", "on"])
    assert args.two_way == "on"
    assert parser.parse_args(["compare", "--data", "d.jsonl", "--output", "o.jsonl"]).two_way == "auto"


# ------------------------------------------------------------------------------------------------ SFT validation
def test_validation_callback_logs_within_question_accuracy(monkeypatch):
    from hf_critic.training.callbacks import CritiquePearsonCallback

    records = datasets.Dataset.from_dict(
        {"question": [f"Question {q}" for q in QUERIES], "response": ["r"] * 9, "score": HUMAN, "qid": QUERIES}
    )
    callback = CritiquePearsonCallback(records, query_column="qid")
    monkeypatch.setattr(callback, "_grade", lambda model, tokenizer, indices: [CRITIC[i] for i in indices])

    class Model:
        training = True

        def eval(self):
            self.training = False

        def train(self, mode=True):
            self.training = mode

    values = callback.evaluate_model(Model(), tokenizer=None)
    assert values["critique_pearson_within_question_accuracy"] == pytest.approx(5.5 / 7)
    assert values["critique_pearson_within_question_pairs"] == 7.0
    assert values["critique_pearson_parse_rate"] == pytest.approx(8 / 9)
