"""Meta-evaluation maths (hf_critic.meta_eval): scipy is the oracle for correlations, Auto-J for agreement."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from hf_critic.core.labels import UNPARSED, normalize_labels, swap_label
from hf_critic.meta_eval import grouped
from hf_critic.meta_eval.agreement import map_groups, pairwise_agreement
from hf_critic.meta_eval.correlation import critique_correlation, system_level_correlation, text_level_correlation
from hf_critic.meta_eval.grouped import KENDALL_PAIRWISE_MAX_GROUP, grouped_correlations

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}


def scipy_per_group(x, y, groups):
    """Oracle: scipy on each group's finite rows; NaN where scipy has no value (n < 2 or constant)."""
    x, y, groups = np.asarray(x, float), np.asarray(y, float), np.asarray(groups, dtype=object)
    out = {name: {} for name in SCIPY}
    for g in dict.fromkeys(groups.tolist()):
        m = (groups == g) & np.isfinite(x) & np.isfinite(y)
        for name, fn in SCIPY.items():
            if m.sum() < 2:
                out[name][g] = math.nan
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[name][g] = float(fn(x[m], y[m]).statistic)
    return out


# --------------------------------------------------------------------------------------------------
# Correlations
# --------------------------------------------------------------------------------------------------


def test_grouped_correlations_match_scipy_on_a_fixed_example():
    x = [8, 6, 3, 9, 4, 7, 2, 2, 5, 1]
    y = [5, 3, 4, 4, 2, 3, 1, 1, 2, 2]
    g = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "c"]
    res = grouped_correlations(x, y, g)
    oracle = scipy_per_group(x, y, g)
    assert res.groups.tolist() == ["a", "b", "c"]
    assert res.n.tolist() == [3, 3, 4]
    assert res.valid.all()
    for name in SCIPY:
        np.testing.assert_allclose(getattr(res, name), [oracle[name][k] for k in "abc"], rtol=0, atol=1e-12)
    # Hand-checked values for group a: Pearson of (8,6,3) vs (5,3,4).
    assert res.pearson[0] == pytest.approx(6 / math.sqrt(228), abs=1e-12)
    assert res.spearman[0] == pytest.approx(0.5)
    assert res.kendall[0] == pytest.approx(1 / 3)


def test_text_level_skips_and_counts_constant_small_and_unparsed_groups():
    x = [1, 2, 3, 5, 5, 5, 4, None, 2, 7, 1, 2, float("nan"), float("nan")]
    y = [1, 3, 2, 1, 2, 3, 2, 5, 4, 5, 9, 9, 1, 2]
    q = [
        "ok",
        "ok",
        "ok",
        "const_x",
        "const_x",
        "const_x",
        "one_left",
        "one_left",
        "ok2",
        "ok2",
        "const_y",
        "const_y",
        "all_nan",
        "all_nan",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from empty / constant groups
        out = text_level_correlation(x, y, q)
    assert out["n_queries"] == 6
    assert out["n_queries_used"] == 2  # ok and ok2
    assert out["n_queries_skipped"] == 4
    assert out["n_unparsed"] == 3
    assert out["n_missing_references"] == 0
    assert out["n_rows"] == 14
    # ok: r = rho = 0.5, tau = 1/3; ok2 (two rows, both increasing): 1 for all three.
    assert out["pearson"] == pytest.approx(0.75) and out["kendall"] == pytest.approx(2 / 3)
    oracle = scipy_per_group(x, y, q)
    for name in SCIPY:
        assert out[name] == pytest.approx(np.nanmean(list(oracle[name].values())), abs=1e-12)


def test_text_level_nan_only_when_no_query_is_usable():
    out = text_level_correlation([1, 1, 2], [1, 2, 3], ["a", "a", "b"])
    assert math.isnan(out["pearson"]) and out["n_queries_used"] == 0 and out["n_queries_skipped"] == 2


def test_missing_references_are_excluded_and_counted():
    out = text_level_correlation([1, 2, 3, 4], [1, None, 2, 3])
    assert out["n_missing_references"] == 1 and out["n_unparsed"] == 0
    assert out["pearson"] == pytest.approx(stats.pearsonr([1, 3, 4], [1, 2, 3]).statistic)


def test_query_ids_none_is_one_group_and_row_order_does_not_matter():
    rng = np.random.default_rng(0)
    x, y = rng.integers(1, 11, 50).astype(float), rng.integers(1, 6, 50).astype(float)
    g = rng.integers(0, 7, 50)
    one = text_level_correlation(x, y)
    assert one["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert one["kendall"] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    perm = rng.permutation(50)
    a, b = text_level_correlation(x, y, g), text_level_correlation(x[perm], y[perm], g[perm])
    for name in SCIPY:
        assert a[name] == pytest.approx(b[name], abs=1e-12)


def test_system_level_correlates_per_system_means():
    x = [8, 6, None, 9, 4, 7, 5, 5, 5]
    y = [5, 3, 2, 4, 2, 3, 1, 3, 5]
    s = ["gpt", "glm", "llama"] * 3
    out = system_level_correlation(x, y, s)
    # Means over rows with a parsed prediction: gpt (8,9,5) vs (5,4,1); glm (6,4,5) vs (3,2,3); llama (7,5) vs (3,5).
    mx, my = [22 / 3, 5.0, 6.0], [10 / 3, 8 / 3, 4.0]
    assert out["n_systems"] == 3
    for name, fn in SCIPY.items():
        assert out[name] == pytest.approx(fn(mx, my).statistic, abs=1e-12)
    assert math.isnan(system_level_correlation([1, 2], [1, 2], ["a", "a"])["pearson"])


def test_critique_correlation_keys():
    out = critique_correlation([1, 2, 3, 3], [1, 3, 2, 4], query_ids=[0, 0, 1, 1], system_ids=["a", "b", "a", "b"])
    assert set(out) == {
        "text_pearson",
        "text_spearman",
        "text_kendall",
        "n_queries",
        "n_queries_used",
        "n_queries_skipped",
        "n_rows",
        "n_unparsed",
        "n_missing_references",
        "system_pearson",
        "system_spearman",
        "system_kendall",
        "n_systems",
        "per_system",
        "pooled_pearson",
        "pooled_spearman",
        "pooled_kendall",
        "within_question_accuracy",
        "within_question_pairs",
        "within_question_ties",
        "within_question_pairs_unparsed",
        "within_question_queries",
        "quadratic_weighted_kappa",
        "quadratic_weighted_kappa_n",
    }
    assert "system_pearson" not in critique_correlation([1, 2, 3], [1, 3, 2])


def test_kendall_large_group_and_chunked_pairs(monkeypatch):
    rng = np.random.default_rng(1)
    n = KENDALL_PAIRWISE_MAX_GROUP + 500  # one group takes the scipy O(n log n) path
    x = np.r_[rng.integers(1, 11, n), rng.integers(1, 11, 300)].astype(float)
    y = np.r_[rng.integers(1, 6, n), rng.integers(1, 6, 300)].astype(float)
    g = np.r_[np.zeros(n, int), rng.integers(1, 40, 300)]
    oracle = scipy_per_group(x, y, g)
    monkeypatch.setattr(grouped, "_PAIR_CHUNK", 7)  # many chunks of small groups
    res = grouped_correlations(x, y, g)
    expected = np.array([oracle["kendall"][k] for k in res.groups.tolist()])
    np.testing.assert_allclose(res.kendall, expected, rtol=0, atol=1e-12)


def test_bad_inputs_raise_with_position():
    with pytest.raises(ValueError, match=r"predictions\[1\] is not a number: 'x'"):
        grouped_correlations([1, "x"], [1, 2])
    with pytest.raises(ValueError, match="differ in length"):
        grouped_correlations([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"groups\[1\] is missing"):
        grouped_correlations([1, 2], [1, 2], ["a", None])


@st.composite
def grouped_scores(draw):
    """Uneven groups in shuffled order, constant groups, NaN predictions and references."""
    n_groups = draw(st.integers(1, 8))
    constant = draw(st.lists(st.sampled_from([None, "x", "y"]), min_size=n_groups, max_size=n_groups))
    n = draw(st.integers(0, 60))
    groups = draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n))
    score = st.integers(-20, 40).map(lambda v: v / 4)  # ties are common, no near-degenerate floats
    xs = draw(st.lists(st.one_of(score, score, score, st.just(math.nan)), min_size=n, max_size=n))
    ys = draw(st.lists(st.one_of(score, score, score, st.just(math.nan)), min_size=n, max_size=n))
    xs = [2.5 if constant[g] == "x" and not math.isnan(v) else v for g, v in zip(groups, xs, strict=True)]
    ys = [1.0 if constant[g] == "y" and not math.isnan(v) else v for g, v in zip(groups, ys, strict=True)]
    return np.array(xs, float), np.array(ys, float), np.array([f"q{g}" for g in groups], dtype=object)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grouped_scores())
def test_property_critique_correlation_matches_scipy_group_by_group(data):
    x, y, g = data
    oracle = scipy_per_group(x, y, g)
    res = grouped_correlations(x, y, g)
    assert res.groups.tolist() == list(dict.fromkeys(g.tolist()))
    for name in SCIPY:
        expected = np.array([oracle[name][k] for k in res.groups.tolist()])
        np.testing.assert_array_equal(np.isnan(getattr(res, name)), np.isnan(expected))
        np.testing.assert_allclose(getattr(res, name), expected, rtol=0, atol=1e-9, equal_nan=True)
    out = critique_correlation(x, y, query_ids=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in SCIPY:
            want = np.nanmean(list(oracle[name].values())) if len(g) else math.nan
            assert (math.isnan(out[f"text_{name}"]) and math.isnan(want)) or out[f"text_{name}"] == pytest.approx(
                want, abs=1e-9
            )
    assert out["n_queries_used"] == int(np.sum(~np.isnan(list(oracle["pearson"].values()))))
    assert out["n_queries_used"] + out["n_queries_skipped"] == len(set(g.tolist()))
    assert out["n_unparsed"] == int(np.isnan(x).sum())
    # Shuffling the rows changes nothing.
    perm = np.random.default_rng(len(x)).permutation(len(x))
    again = critique_correlation(x[perm], y[perm], query_ids=g[perm])
    for key, value in out.items():
        assert (isinstance(value, float) and math.isnan(value) and math.isnan(again[key])) or again[
            key
        ] == pytest.approx(value, abs=1e-12)


# --------------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, code",
    [
        (0, 0),
        (1, 1),
        (2, 2),
        (np.int64(1), 1),
        (2.0, 2),
        ("0", 0),
        ("1", 1),
        ("2", 2),
        (" 2 ", 2),
        ("Assistant 1", 0),
        ("assistant_2", 1),
        ("Assistant A", 0),
        ("Assistant B", 1),
        ("response_1", 0),
        ("Response 2", 1),
        ("A", 0),
        ("b", 1),
        ("C", 2),
        ("[[A]]", 0),
        ("[[B]]", 1),
        ("[[C]]", 2),
        ("Output (a)", 0),
        ("Output (b)", 1),
        ("tie", 2),
        ("Tie.", 2),
        ("TIE", 2),
        ("draw", 2),
        ("equal", 2),
        ("first", 0),
        ("second", 1),
        ("win", 0),
        ("lose", 1),
        ("model-a", 0),
        (None, UNPARSED),
        (float("nan"), UNPARSED),
    ],
)
def test_normalize_labels_mapping(value, code):
    assert normalize_labels(["tie", value]).tolist() == [2, code]


def test_normalize_labels_digit_positions_and_numeric_fast_path():
    assert normalize_labels(["1", "2", "tie"], digits="position").tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match=r"labels\[0\] = '0'"):
        normalize_labels(["0"], digits="position")
    assert normalize_labels(np.array([0, 2, 1])).tolist() == [0, 2, 1]
    assert normalize_labels(np.array([0.0, np.nan, 1.0])).tolist() == [0, UNPARSED, 1]
    assert normalize_labels([0, None, 1]).tolist() == [0, UNPARSED, 1]


@pytest.mark.parametrize("bad, index", [([0, 1, 3], 2), (["A", "maybe"], 1), ([0, True], 1), ([0, ""], 1), ([-1], 0)])
def test_normalize_labels_unknown_values_name_value_and_index(bad, index):
    with pytest.raises(ValueError, match=re.escape(f"verdicts[{index}] = {bad[index]!r}")):
        normalize_labels(bad, name="verdicts")


def test_map_groups():
    mapping = {"Code": ["code_generation", "explaining_code"], "Writing": ["writing_email"]}
    assert map_groups(["writing_email", "code_generation"], mapping) == ["Writing", "Code"]
    with pytest.raises(ValueError, match=r"values\[1\] = 'poetry' is in no group"):
        map_groups(["writing_email", "poetry"], mapping)


# --------------------------------------------------------------------------------------------------
# Pairwise agreement
# --------------------------------------------------------------------------------------------------


def reference_prf(pred, ref):
    """Loop oracle: macro P / R / F1 over classes in ref or pred (scikit-learn's zero_division=0)."""
    classes = sorted({*ref, *(p for p in pred if p >= 0)})
    ps, rs, fs = [], [], []
    for c in classes:
        tp = sum(p == r == c for p, r in zip(pred, ref, strict=True))
        npred, ntrue = sum(p == c for p in pred), sum(r == c for r in ref)
        p_ = tp / npred if npred else 0.0
        r_ = tp / ntrue if ntrue else 0.0
        ps.append(p_), rs.append(r_), fs.append(2 * p_ * r_ / (p_ + r_) if p_ + r_ else 0.0)
    return np.mean(ps), np.mean(rs), np.mean(fs)


def test_pairwise_agreement_by_hand():
    pred = [0, 1, 2, 0, None, 1]
    ref = [0, 1, 1, 0, 2, 2]
    swapped = [0, 0, 2, 0, 2, None]  # already mapped back
    out = pairwise_agreement(pred, ref, swapped)
    # both orders right: rows 0 and 3; consistent: rows 0, 2, 3
    assert out["agreement"] == pytest.approx(2 / 6)
    assert out["consistency"] == pytest.approx(3 / 6)
    assert out["first_order_agreement"] == pytest.approx(3 / 6)
    assert out["accuracy"] == out["first_order_agreement"]
    assert out["n"] == 6 and out["n_unparsed"] == 1 and out["n_unparsed_swapped"] == 1
    p, r, f = reference_prf([0, 1, 2, 0, -1, 1], ref)
    assert (out["macro_precision"], out["macro_recall"], out["macro_f1"]) == pytest.approx((p, r, f))
    # Precision 0: 2/2, 1: 1/2, 2: 0/1 -> 1/2; recall 0: 2/2, 1: 1/2, 2: 0/2 -> 1/2.
    assert out["macro_precision"] == pytest.approx(0.5) and out["macro_recall"] == pytest.approx(0.5)


def test_pairwise_agreement_swapped_terms_flag_and_missing_references():
    rng = np.random.default_rng(3)
    pred, ref, raw = rng.integers(0, 3, 200), rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    mapped = [swap_label(int(v)) for v in raw]
    a = pairwise_agreement(pred, ref, raw, swapped_mapped_back=False)
    b = pairwise_agreement(pred, ref, mapped)
    assert a == b
    ref_missing = ref.astype(object)
    ref_missing[:10] = None
    c = pairwise_agreement(pred, ref_missing, mapped)
    d = pairwise_agreement(pred[10:], ref[10:], mapped[10:])
    assert c["n_missing_references"] == 10 and c["n"] == 190
    assert {k: v for k, v in c.items() if k != "n_missing_references"} == {
        k: v for k, v in d.items() if k != "n_missing_references"
    }


def test_pairwise_agreement_without_swap_and_errors():
    out = pairwise_agreement(["Assistant 1", "tie"], [0, 1])
    assert "agreement" not in out and "consistency" not in out and out["first_order_agreement"] == 0.5
    with pytest.raises(ValueError, match=r"swapped_predictions\[0\] = 'both bad'"):
        pairwise_agreement([0], [0], ["both bad"])
    with pytest.raises(ValueError, match="differ in length"):
        pairwise_agreement([0, 1], [0])


def test_pairwise_agreement_per_group():
    out = pairwise_agreement([0, 1, 2, 0], [0, 1, 1, 1], [0, 0, 2, 0], groups=["x", "y", "x", "y"], two_way="off")
    assert out["per_group"] == {
        "x": {"agreement": 0.5, "consistency": 1.0, "first_order_agreement": 0.5, "n": 2},
        "y": {"agreement": 0.0, "consistency": 0.5, "first_order_agreement": 0.5, "n": 2},
    }
    # No tie in the gold: the two-way figures join each group by default. x: rows 0 (right) and 2 (a tie in both
    # orders: half) -> 0.75 and 0.75; y: row 1 right first (1), its orders opposite (half), row 3 wrong in both -> 0.5
    # and 0.25.
    out = pairwise_agreement([0, 1, 2, 0], [0, 1, 1, 1], [0, 0, 2, 0], groups=["x", "y", "x", "y"])
    assert out["per_group"]["x"] == {
        "agreement": 0.5,
        "consistency": 1.0,
        "first_order_agreement": 0.5,
        "two_way_accuracy": 0.75,
        "two_way_accuracy_combined": 0.75,
        "n": 2,
    }
    assert out["per_group"]["y"]["two_way_accuracy"] == 0.5
    assert out["per_group"]["y"]["two_way_accuracy_combined"] == 0.25


# Auto-J leaderboard README (GAIR-NLP/auto-j, codes/leaderboard/README.md): Auto-J-13B on Eval-P.
AUTOJ_PER_GROUP = {
    "Summarization": (45.83, 73.61, 56.94),
    "Exam Questions": (38.89, 69.44, 41.67),
    "Code": (47.5, 75.83, 54.17),
    "Rewriting": (49.17, 74.17, 57.5),
    "Creative Writing": (59.72, 87.04, 63.43),
    "Functional Writing": (61.67, 81.67, 68.33),
    "General Communication": (55.21, 92.36, 57.29),
    "NLP Tasks": (57.58, 86.36, 62.12),
}


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_autoj_eval_p_reproduces_published_numbers(shared_data):
    root = shared_data / "autoj"
    data = _jsonl(root / "test" / "testdata_pairwise.jsonl")
    first = [r["output"] for r in _jsonl(root / "outputs" / "pairwise_example_output.jsonl")]
    exchange = [r["output"] for r in _jsonl(root / "outputs" / "pairwise_exchange_example_output.jsonl")]
    groups = map_groups([r["scenario"] for r in data], json.loads((root / "scenario_groups.json").read_text()))
    out = pairwise_agreement(first, [r["label"] for r in data], exchange, swapped_mapped_back=False, groups=groups)
    assert out["n"] == 1392
    assert round(100 * out["agreement"], 2) == 54.96
    assert round(100 * out["consistency"], 2) == 83.41
    assert round(100 * out["first_order_agreement"], 2) == 59.99
    assert set(out["per_group"]) == set(AUTOJ_PER_GROUP)
    for group, (agreement, consistency, single) in AUTOJ_PER_GROUP.items():
        values = out["per_group"][group]
        assert round(100 * values["agreement"], 2) == agreement, group
        assert round(100 * values["consistency"], 2) == consistency, group
        assert round(100 * values["first_order_agreement"], 2) == single, group


# ------------------------------------------------------------------------------------------- intervals that mean something
def test_bootstrap_intervals_need_resamples_and_units_and_hold_their_estimate():
    from hf_critic.meta_eval.bootstrap import EXCLUDES_ESTIMATE, TOO_SMALL, bootstrap_intervals

    values = np.arange(20, dtype=float)
    mean = lambda w: {"mean": (w @ values) / w.sum(axis=1)}  # noqa: E731
    with pytest.raises(ValueError, match="must be 0 \\(no interval\\) or at least 100, got 1"):
        bootstrap_intervals(mean, 20, 1)
    assert bootstrap_intervals(lambda w: {"mean": w @ values[:1]}, 1, 100) == {"mean": TOO_SMALL}  # one row
    low, high = bootstrap_intervals(mean, 20, 200)["mean"]
    assert low < values.mean() < high
    # a statistic whose resamples all miss its estimate (once reported as [1.970, 1.970] for 1.787)
    shifted = lambda w: {"x": (w @ values) / w.sum(axis=1) + (w.std(axis=1) > 0) * 100}  # noqa: E731
    assert bootstrap_intervals(shifted, 20, 100)["x"] == EXCLUDES_ESTIMATE


def test_meta_eval_refuses_too_few_resamples(tmp_path, capsys):
    from hf_critic.cli import main

    data = tmp_path / "c.jsonl"
    data.write_text('{"question": "q", "response_1": "a", "response_2": "b", "label": 0, "critique_label": 0}\n')
    for option, allowed in (
        ("--paired-resamples", "at least 100"),
        ("--bootstrap", "0 (no interval) or at least 100"),
    ):
        code = main(["meta-eval", "--critiques", str(data), "--output-dir", str(tmp_path / option), option, "1"])
        assert code == 2 and f"{option} must be {allowed}, got 1" in capsys.readouterr().err


def test_system_level_correlation_of_a_critic_all_unparsed_is_nan_not_a_traceback():
    from hf_critic.meta_eval.correlation import system_level_correlation

    out = system_level_correlation([None, None, None], [1.0, 2.0, 3.0], ["a", "b", "c"])
    assert math.isnan(out["pearson"]) and out["n_systems"] == 0


def test_bootstrap_says_how_many_resamples_it_left_out(caplog):
    """Non-finite resamples are counted, logged and shown next to the interval."""
    from hf_critic.meta_eval.bootstrap import bootstrap_intervals, resample_counts
    from hf_critic.reports.markdown_tables import with_interval

    x = np.array([1.0, 1.0, 1.0, 1.0, 2.0])  # a resample that never draws the 2.0 gives 0 / 0 for "share"

    def statistic(w):
        with np.errstate(invalid="ignore", divide="ignore"):
            spread = w @ (x - 1.0)
            return {"share": spread / spread, "mean": (w @ x) / w.sum(axis=1)}

    n = 400
    expected = int(sum((counts[:, 4] == 0).sum() for counts in resample_counts(5, n, seed=3)))
    with caplog.at_level("WARNING"):
        intervals = bootstrap_intervals(statistic, 5, n, seed=3)
    assert expected > 0 and intervals.dropped == {"share": expected} and intervals.n_resamples == n
    assert f"share {expected}" in caplog.text
    assert intervals["share"] == [1.0, 1.0]
    line = with_interval({"share": 1.0, "ci": {"share": [1.0, 1.0]}, "ci_dropped": intervals.dropped}, "share")
    assert line == f"1.000 [1.000, 1.000] ({expected} resamples undefined)"
