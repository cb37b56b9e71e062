"""Juries and risk-coverage: AURC and coverage at agreement against a hand computation, "longer wins" as a
critic whose confidence grows with the length difference, juries (vote ties and missing member verdicts counted, a
jury of identical members equal to one member, a fitted aggregate fitted on calibration rows only and refused once a
member changed), and the risk_coverage block of report.json from ``calibrate`` and ``meta-eval``. Tiny data, no
model: the members are recorded critique files and ``longer-wins``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hf_critic.cli import main
from hf_critic.core import schema
from hf_critic.meta_eval.length import length_confidence, length_verdicts
from hf_critic.selective.jury import (
    PENALTIES,
    aggregate,
    fit_features,
    fit_jury,
    fit_rows,
    group_folds,
    jury_features,
)
from hf_critic.selective.risk_coverage import (
    agreement_at_coverage,
    agreement_coverage_curve,
    aurc,
    coverage_at_agreement,
    risk_coverage_curve,
)

# ------------------------------------------------------------------------------------------- risk-coverage maths
CONF = [0.9, 0.8, 0.8, 0.6, None]  # two tied rows, one row without a verdict
CREDIT = [1, 0, 1, 1, 0]


def test_aurc_and_the_coverage_figures_match_a_hand_computation():
    # Top k by confidence, ties in expectation: k=1 {0.9 right}: risk 0; k=2 takes one of the two tied 0.8 rows
    # (one right, one wrong): expected risk 0.5 / 2; k=3: 1/3; k=4: 1/4; k=5 (the row without a verdict, a miss): 2/5.
    risks = [0, 0.25, 1 / 3, 0.25, 0.4]
    coverage, risk = risk_coverage_curve(CONF, CREDIT)
    assert coverage.tolist() == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert risk == pytest.approx(risks)
    assert aurc(CONF, CREDIT) == pytest.approx(sum(risks) / 5)  # 0.24667
    # agreement at coverage c: the top ceil(c * 5) rows
    assert agreement_at_coverage(CONF, CREDIT, (0.1, 0.25, 0.5, 1.0)) == pytest.approx(
        {0.1: 1.0, 0.25: 0.75, 0.5: 2 / 3, 1.0: 0.6}
    )
    # coverage at agreement a: the largest k / 5 whose top k agree at rate >= a (agreements 1, .75, .667, .75, .6)
    assert coverage_at_agreement(CONF, CREDIT, (0.7, 0.75, 0.8, 0.85)) == pytest.approx(
        {0.7: 0.8, 0.75: 0.8, 0.8: 0.2, 0.85: 0.2}
    )


def test_the_agreement_coverage_curve_is_the_risk_coverage_curve_at_each_threshold():
    """One risk-coverage computation: the agreement-coverage curve (calibrate's split report) reads the risk-coverage
    curve at the end of each block of equal confidence; a row without a usable confidence is never kept."""
    coverages, agreements = agreement_coverage_curve(CONF, [bool(c) for c in CREDIT])
    # thresholds 0.9, 0.8, 0.6: keep 1 row (right), 3 rows (2 right), 4 rows (3 right); the None row never
    assert coverages == [0.2, 0.6, 0.8]
    assert agreements == [1.0, 2 / 3, 0.75]
    cov, risk = risk_coverage_curve(CONF, CREDIT)
    assert agreements == pytest.approx([1 - risk[k] for k in (0, 2, 3)]) and coverages == [cov[k] for k in (0, 2, 3)]
    # as a mean over the kept rows gives them, to the last bit: 7 of 10 rows right at a constant confidence
    assert agreement_coverage_curve([0.5] * 10, [True] * 7 + [False] * 3) == ([1.0], [0.7])
    assert agreement_coverage_curve([None, 2.0, "x"], [True, True, False]) == ([], [])  # no usable confidence
    with pytest.raises(ValueError, match=r"confidence \(\(3,\)\) and correct \(\(2,\)\)"):
        agreement_coverage_curve([0.5, 0.6, 0.7], [True, False])


def test_tie_handling_is_the_expectation_over_orders_and_weights_are_copies():
    import itertools

    conf, credit = [0.7, 0.7, 0.7, 0.2], [1, 0, 0, 1]
    brute = np.mean(
        [
            np.mean([1 - np.mean([credit[i] for i in order[:k]]) for k in range(1, 5)])
            for order in (list(p) + [3] for p in itertools.permutations(range(3)))
        ]
    )
    assert aurc(conf, credit) == pytest.approx(brute)
    assert aurc([0.5] * 4, credit) == pytest.approx(0.5)  # a constant confidence: its error rate
    assert aurc([0.9, 0.8, 0.1, 0.05], [1, 1, 0, 0]) < aurc([0.05, 0.1, 0.8, 0.9], [1, 1, 0, 0])
    weights = np.array([[2, 0, 1, 1], [1, 1, 1, 1]])  # row 0 drawn twice, row 1 not: as if duplicated
    assert aurc(conf, credit, weights) == pytest.approx([aurc([0.7, 0.7, 0.7, 0.2], [1, 1, 0, 1]), aurc(conf, credit)])


def test_longer_wins_confidence_grows_with_the_length_difference_and_a_length_tie_is_a_tie():
    other = np.full(8, 10.0)
    longer = np.array([10, 11, 12, 15, 20, 40, 100, 1000], dtype=float)
    confidence = length_confidence(longer, other)
    assert np.all(np.diff(confidence) > 0) and confidence[0] == 0.5 and confidence[-1] < 1
    assert length_confidence(other, longer).tolist() == confidence.tolist()  # order-free
    assert length_confidence(["a b c d", ""], ["a b", ""]).tolist() == [0.75, 0.5]  # 0.5 + 0.5 * 2 / 4
    assert length_verdicts(["a b", "a", "a b"], ["a", "a b", "c d"]).tolist() == [0, 1, 2]


# ------------------------------------------------------------------------------------------- jury aggregates
def member(labels, confidences=None):
    return {schema.CRITIQUE_LABEL: labels, schema.CRITIQUE_CONFIDENCE: confidences or [0.8] * len(labels)}


def test_vote_ties_between_labels_are_undecided_and_missing_member_verdicts_are_skipped_and_counted():
    members = {
        "a": member([0, 0, 1, None, 0, None]),
        "b": member([0, 1, 1, None, 1, None]),
        "c": member([1, None, 0, 1, 2, None]),
    }
    labels, confidences, counts = aggregate("vote", members)
    assert labels == [0, None, 1, 1, None, None]  # row 1: 1-1 tie; row 4: 0/1/tie one each; row 5: no verdict
    assert confidences[0] == pytest.approx(2 / 3) and confidences[2] == pytest.approx(2 / 3)
    assert confidences[3] == 1.0  # the one member that voted agrees with itself: the others are skipped
    assert (counts.rows, counts.undecided, counts.no_member_verdict) == (6, 3, 1)
    assert counts.missing == {"a": 2, "b": 2, "c": 2}
    assert "3 of 6 rows undecided" in counts.line()


def test_mean_aggregate_averages_each_members_probability_of_response_1():
    members = {"a": member([0, 1, 0], [0.9, 0.6, 0.6]), "b": member([1, 1, 1], [0.7, 0.8, 0.6])}
    labels, confidences, counts = aggregate("mean", members)
    # P(response 1): row 0 (0.9 + 0.3) / 2 = 0.6; row 1 (0.4 + 0.2) / 2 = 0.3; row 2 (0.6 + 0.4) / 2 = 0.5: undecided
    assert labels == [0, 1, None] and confidences[:2] == pytest.approx([0.6, 0.7]) and counts.undecided == 1


@pytest.mark.parametrize("how", ["vote", "mean", "fitted"])
def test_a_jury_of_identical_members_equals_one_member(how):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 40).tolist()
    one = member(labels, rng.uniform(0.5, 1, 40).round(3).tolist())
    human = [lab if rng.uniform() < 0.8 else 1 - lab for lab in labels]
    if how == "fitted":
        single, triple = fit_jury({"a": one}, human), fit_jury({"a": one, "b": one, "c": one}, human)
        jury_labels, jury_conf, _ = aggregate(how, {"a": one, "b": one, "c": one}, triple)
        member_labels, member_conf, _ = aggregate(how, {"a": one}, single)
        assert jury_labels == member_labels and jury_conf == pytest.approx(member_conf, abs=1e-6)
        assert triple.weights[1:] == [0.0, 0.0]  # the duplicates carry no weight
        return
    jury_labels, jury_conf, _ = aggregate(how, {"a": one, "b": one, "c": one})
    assert jury_labels == labels
    assert jury_conf == (pytest.approx(one[schema.CRITIQUE_CONFIDENCE]) if how == "mean" else [1.0] * 40)


def test_group_folds_keep_a_questions_pairs_together_and_use_every_fold():
    questions = [f"q{i // 3}" for i in range(30)]
    folds = group_folds(questions, 2)
    for q in set(questions):
        assert len({int(f) for f, qq in zip(folds, questions, strict=True) if qq == q}) == 1
    assert sorted(np.bincount(folds).tolist()) == [15, 15]
    assert folds.tolist() == group_folds(list(reversed(questions)), 2)[::-1].tolist()  # by key, not row order


def test_the_fit_chooses_a_strong_penalty_on_few_noisy_rows_and_a_weak_one_on_many_informative_rows():
    rng = np.random.default_rng(3)
    names = [f"s{j}" for j in range(7)]
    # 40 rows, 7 signals of pure noise: held-out log-loss is best with the weights shrunk to nothing
    noise = fit_features(names, rng.normal(size=(40, 7)), rng.integers(0, 2, 40).tolist())
    assert noise.penalty == max(PENALTIES)
    # 2,000 rows whose first signal decides the label: the weakest penalty predicts best
    x = rng.normal(size=(2000, 7))
    human = (x[:, 0] + 0.3 * rng.normal(size=2000) < 0).astype(int).tolist()  # response 1 (code 0) when s0 > 0
    strong = fit_features(names, x, human)
    assert strong.penalty < 1 and strong.weights[0] > 5 * max(abs(w) for w in strong.weights[1:])
    # folds by question: rows of one question never sit on both sides of a fold
    groups = [f"q{i // 4}" for i in range(2000)]
    assert fit_features(names, x, human, groups).penalty == strong.penalty
    with pytest.raises(ValueError, match="groups for 2000 jury rows"):
        fit_features(names, x, human, groups[:-1])


# ------------------------------------------------------------------------------------------- juries in cascades
ROWS = 40


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def jury_files(tmp_path, aggregate_how="fitted", flip_member=False):
    """Pairs with human labels, two members' recorded critiques (one mostly right and confident when right, one
    noise) and a cascade file with a jury of them and ``longer-wins``."""
    rng = np.random.default_rng(1)
    rows, good, noisy = [], [], []
    for i in range(ROWS):
        label = int(rng.integers(0, 2))
        long, short = "word " * int(rng.integers(5, 30)), "word " * int(rng.integers(1, 5))
        pair = {
            "question": f"Question {i // 2}?",
            "response_1": long if label == 0 else short,
            "response_2": short if label == 0 else long,
            "label": label,
        }
        if i % 5 == 0:  # a fifth of the pairs: the longer one is worse
            pair["response_1"], pair["response_2"] = pair["response_2"], pair["response_1"]
        rows.append(pair)
        right = rng.uniform() < 0.8
        good.append(
            {
                **pair,
                schema.CRITIQUE_LABEL: label if right else 1 - label,
                schema.CRITIQUE_CONFIDENCE: round(float(rng.uniform(0.7, 1.0) if right else rng.uniform(0.5, 0.8)), 3),
            }
        )
        noisy.append(
            {
                **pair,
                schema.CRITIQUE_LABEL: int(rng.integers(0, 2)),
                schema.CRITIQUE_CONFIDENCE: round(float(rng.uniform(0.5, 1.0)), 3),
            }
        )
    if flip_member:
        good[0][schema.CRITIQUE_LABEL] = 1 - good[0][schema.CRITIQUE_LABEL]
    data = write_jsonl(tmp_path / "pairs.jsonl", rows)
    write_jsonl(tmp_path / "good.jsonl", good)
    write_jsonl(tmp_path / "noisy.jsonl", noisy)
    spec = {
        "critics": [
            {
                "name": "jury",
                "jury": {
                    "aggregate": aggregate_how,
                    "members": [
                        {"name": "good", "recorded": {"critiques": str(tmp_path / "good.jsonl")}},
                        {"name": "noisy", "recorded": {"critiques": str(tmp_path / "noisy.jsonl")}},
                        "longer-wins",
                    ],
                },
            }
        ]
    }
    cascade = tmp_path / "jury.yaml"
    cascade.write_text(json.dumps(spec), encoding="utf-8")
    return data, cascade


def calibrate(data, cascade, out, *extra):
    argv = [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        str(cascade),
        "--target-agreement",
        "0.6",
        "--delta",
        "0.2",
        "--min-rows",
        "5",
        "--output",
        str(out),
        *extra,
    ]
    assert main(argv) == 0
    return out


def test_a_fitted_jury_is_fitted_on_its_calibration_rows_only(tmp_path, capsys):
    from hf_critic import load_cascade
    from hf_critic.commands.calibrate_report import jury_refits, question_keys
    from hf_critic.io import load_records
    from hf_critic.selective import load_calibration
    from hf_critic.selective.cascade import judge_all

    data, cascade = jury_files(tmp_path)
    calibration = load_calibration(calibrate(data, cascade, tmp_path / "cal.json"))
    (entry,) = calibration.critics
    assert entry.confidence == "fitted aggregate" and [m["name"] for m in entry.jury["members"]] == [
        "good",
        "noisy",
        "longer-wins",
    ]
    records = load_records(str(data))
    (stage,) = load_cascade(str(cascade))
    with pytest.raises(ValueError, match="a fitted jury needs a calibration file"):  # no labels, no fit: refused
        judge_all([stage], records)  # (after its members judged: their columns are kept)
    # the stored fit is the fit on half the calibration questions; the thresholds are set on the other rows only
    questions = question_keys(records)
    fitting = fit_rows(questions)
    assert 0 < fitting.sum() < ROWS and calibration.data["rows"] == ROWS - fitting.sum()
    assert calibration.data["jury_fit_rows"] == fitting.sum() and entry.calibration_rows == ROWS - fitting.sum()
    human = np.array(records["label"])
    expected = fit_jury(stage.critic.member_columns, np.where(fitting, human, -1).tolist(), questions)
    assert entry.jury["fit"]["weights"] == pytest.approx(expected.weights)
    # under --splits: the fit of a split reads the labels of rows of its calibration half, never those of its test
    # half, and the rows it fitted on set no threshold
    (refit,) = jury_refits([stage], human.tolist(), questions).values()
    cal, test = np.arange(0, ROWS, 2), np.arange(1, ROWS, 2)
    conf, _, fitted_on = refit(cal)
    assert set(fitted_on) < set(cal) and len(fitted_on) > 0
    changed = human.copy()
    changed[test] = 1 - changed[test]  # every test label flipped: the fit on the calibration half is unchanged
    changed[np.setdiff1d(cal, fitted_on)] = 0  # and so are the threshold rows' labels
    (refit_changed,) = jury_refits([stage], changed.tolist(), questions).values()
    assert refit_changed(cal)[0] == conf
    changed = human.copy()
    changed[fitted_on[:5]] = 1 - changed[fitted_on[:5]]  # labels of rows it fitted on flipped: the fit changes
    (refit_cal,) = jury_refits([stage], changed.tolist(), questions).values()
    assert refit_cal(cal)[0] != conf
    names, x = jury_features(stage.critic.member_columns)
    assert fit_features(names, x[cal], human[cal]).weights != fit_features(names, x[test], human[test]).weights


def test_a_jurys_fit_share_sets_how_many_calibration_rows_fit_it_and_a_bad_one_is_refused(tmp_path, capsys):
    from hf_critic.commands.calibrate_report import question_keys
    from hf_critic.io import load_records
    from hf_critic.selective import load_calibration

    data, cascade = jury_files(tmp_path)
    spec = json.loads(cascade.read_text())
    spec["critics"][0]["jury"]["fit_share"] = 0.25
    cascade.write_text(json.dumps(spec), encoding="utf-8")
    calibration = load_calibration(calibrate(data, cascade, tmp_path / "cal.json"))
    fitting = fit_rows(question_keys(load_records(str(data))), 0.25)
    assert (
        calibration.data["jury_fit_rows"] == fitting.sum() < ROWS / 2
        and calibration.data["rows"] == ROWS - fitting.sum()
    )
    spec["critics"][0]["jury"]["fit_share"] = 1.5
    cascade.write_text(json.dumps(spec), encoding="utf-8")
    argv = [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        str(cascade),
        "--target-agreement",
        "0.6",
        "--output",
        str(tmp_path / "bad.json"),
    ]
    assert main(argv) == 2
    assert "jury fit_share must be a number in (0, 1)" in capsys.readouterr().err


def test_a_jury_in_a_cascade_keeps_its_members_verdicts_and_a_changed_member_is_refused(tmp_path, capsys):
    data, cascade = jury_files(tmp_path)
    calibration = calibrate(data, cascade, tmp_path / "cal.json")
    printed = capsys.readouterr().out
    assert "jury jury (fitted):" in printed and "undecided" in printed
    out = tmp_path / "judged.jsonl"
    argv = [
        "compare",
        "--data",
        str(data),
        "--cascade",
        str(cascade),
        "--calibration",
        str(calibration),
        "--output",
        str(out),
    ]
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(set(r["jury_members"]) == {"good", "noisy", "longer-wins"} for r in rows)
    assert {r[schema.CRITIQUE_STATUS] for r in rows} <= {"ok", "abstained"}
    capsys.readouterr()
    jury_files(tmp_path, flip_member=True)  # the member "good" now says something else on one row
    assert main([*argv[:-1], str(tmp_path / "again.jsonl")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "examples" not in line and line.strip()]
    assert len(err) == 1 and "jury 'jury': member 'good' changed since its fitted aggregate was calibrated" in err[0]
    assert str(calibration) in err[0] and "hf-critic calibrate" in err[0]


@pytest.mark.parametrize("how", ["vote", "mean"])
def test_vote_and_mean_juries_need_no_fit_and_report_with_and_without_longer_wins(tmp_path, capsys, how):
    data, cascade = jury_files(tmp_path, aggregate_how=how)
    report_dir = tmp_path / "report"
    calibrate(data, cascade, tmp_path / "cal.json", "--report-dir", str(report_dir), "--bootstrap", "100")
    report = json.loads((report_dir / "report.json").read_text())
    names = list(report["risk_coverage"])
    assert names == ["jury", "jury/good", "jury/noisy", "jury without longer-wins", "longer-wins", "label-prior"]
    assert report["juries"]["jury"]["rows"] == ROWS
    assert (report_dir / "risk_coverage.png").stat().st_size > 0


def test_calibrate_report_json_gains_the_risk_coverage_block(tmp_path, capsys):
    data, cascade = jury_files(tmp_path)
    report_dir = tmp_path / "report"
    calibrate(
        data, cascade, tmp_path / "cal.json", "--report-dir", str(report_dir), "--splits", "20", "--bootstrap", "200"
    )
    report = json.loads((report_dir / "report.json").read_text())
    block = report["risk_coverage"]["jury"]
    assert set(block) >= {"aurc", "interval", "agreement_at_coverage", "coverage_at_agreement"}
    assert list(block["agreement_at_coverage"]) == ["0.1", "0.25", "0.5", "1.0"]
    assert list(block["coverage_at_agreement"]) == ["0.7", "0.75", "0.8", "0.85"]
    low, high = block["interval"]
    assert low <= block["aurc"] <= high
    prior = report["risk_coverage"]["label-prior"]
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    held = ~fit_rows([r["question"] for r in rows])  # the blocks are of the rows the jury was not fitted on
    labels = [r["label"] for r, h in zip(rows, held, strict=True) if h]
    assert prior["aurc"] == pytest.approx(1 - max(labels.count(0), labels.count(1)) / len(labels))  # flat at its error
    assert report["levels"] and (report_dir / "agreement_coverage.png").exists()
    assert "## Risk-coverage" in (report_dir / "report.md").read_text()


def test_meta_eval_report_json_gains_the_risk_coverage_block(tmp_path, capsys):
    jury_files(tmp_path)
    out = tmp_path / "meta"
    argv = [
        "meta-eval",
        "--critiques",
        f"good/pairs={tmp_path / 'good.jsonl'}",
        "--output-dir",
        str(out),
        "--bootstrap",
        "100",
    ]
    assert main(argv) == 0
    (run,) = json.loads((out / "report.json").read_text())["runs"]
    block = run["risk_coverage"]
    assert set(block) >= {"aurc", "interval", "agreement_at_coverage", "coverage_at_agreement", "baselines"}
    assert set(block["baselines"]) == {"longer-wins", "label-prior"}
    rows = [json.loads(line) for line in (tmp_path / "good.jsonl").read_text().splitlines()]
    credit = [r[schema.CRITIQUE_LABEL] == r["label"] for r in rows]
    assert block["aurc"] == pytest.approx(aurc([r[schema.CRITIQUE_CONFIDENCE] for r in rows], credit))
    assert math.isclose(block["agreement_at_coverage"]["1.0"], sum(credit) / ROWS)
    assert (out / "risk_coverage.png").exists() and "## Risk-coverage" in (out / "report.md").read_text()


def test_the_example_jury_files_name_their_members_and_copy_auto_j_13b_s_recorded_block():
    import yaml

    from hf_critic.critics.baselines import LONGER_WINS

    examples = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "cascades"
    local, then = (yaml.safe_load((examples / f).read_text()) for f in ("local_jury.yaml", "jury_then_autoj.yaml"))
    (stage,) = local["critics"]
    members = stage["jury"]["members"]
    assert stage["jury"]["aggregate"] == "fitted" and members[-1] == LONGER_WINS
    assert members[0]["options"] == {"model": "smollm2-135m-critic"}
    assert members[1]["options"] == {
        "template": "mtbench",
        "verdict": "probability",
        "explanation": "none",
        "swap": True,
        "dtype": "float32",
    }
    assert then["critics"][0] == stage
    (autoj,) = yaml.safe_load((examples / "autoj_13b.yaml").read_text())["critics"]
    assert then["critics"][1] == autoj
    (cheap,) = yaml.safe_load((examples / "reward_length_jury.yaml").read_text())["critics"]  # without the read-out
    assert cheap["jury"] == {"aggregate": "fitted", "members": [members[0], members[2]]}


def test_delta_shares_split_the_cascades_delta_as_the_file_says_and_the_calibration_records_them(tmp_path, capsys):
    from hf_critic.critics.baselines import LongerWins
    from hf_critic.selective import load_calibration
    from hf_critic.selective.cascade import CascadeStage, delta_shares

    def stages(*shares):
        return [CascadeStage(f"c{i}", LongerWins(), delta_share=s) for i, s in enumerate(shares)]

    assert delta_shares(stages(None, None)) == [0.5, 0.5]  # Bonferroni
    assert delta_shares(stages(None, 0.8, None)) == pytest.approx([0.1, 0.8, 0.1])
    for bad in [(0.7, 0.6), (1.0, None), (0.5, 0.3)]:  # above 1, nothing left for a critic, named and not summing to 1
        with pytest.raises(ValueError, match="delta_share values"):
            delta_shares(stages(*bad))
    data, cascade = jury_files(tmp_path)
    spec = json.loads(cascade.read_text())
    spec["critics"].append({"name": "length", "baseline": "longer-wins", "delta_share": 0.8})
    cascade.write_text(json.dumps(spec), encoding="utf-8")
    calibration = load_calibration(calibrate(data, cascade, tmp_path / "cal.json"))  # its claims checked on load
    assert [c.delta for c in calibration.critics] == pytest.approx([0.2 * 0.2, 0.2 * 0.8])  # --delta 0.2
    spec["critics"][0]["jury"]["members"][0]["delta_share"] = 0.5
    cascade.write_text(json.dumps(spec), encoding="utf-8")
    argv = [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        str(cascade),
        "--target-agreement",
        "0.6",
        "--output",
        str(tmp_path / "bad.json"),
    ]
    assert main(argv) == 2
    assert "delta_share belongs to a critic of the cascade, not to a jury member" in capsys.readouterr().err
