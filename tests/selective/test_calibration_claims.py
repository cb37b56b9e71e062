"""A calibration file cannot be edited into a false guarantee, and calibrate checks everything before it writes.

The file carries its calibration rows (ids and human labels, each critic's verdicts and confidences on them, a fitted
jury's fit rows and its members' features): on load every threshold is re-derived by fixed-sequence testing and every
jury fit is made again, so an edited threshold (even with the record of its failed candidate removed), negated jury
weights or a removed field is refused in one line naming the file and the field. A served critic's calibration
records a few rows that ``compare --cascade`` judges again before trusting the threshold. ``calibrate`` refuses a
jury ``fit_share`` that leaves no row to fit or to set thresholds on, and a ``--calibration-fraction`` that leaves a
split half empty, naming the option and its value, before anything is written.
"""

from __future__ import annotations

import json
import re

import pytest

from hf_critic.cli import main
from hf_critic.selective import load_calibration
from hf_critic.testing.servers import StubOpenAIServer
from tests.critics.test_jury import calibrate as calibrate_jury
from tests.critics.test_jury import jury_files
from tests.selective.test_selective import calibrate as calibrate_served
from tests.selective.test_selective import cascade_file, cheap_reply, pairs, strong_reply
from tests.selective.test_selective_claims import calibrate, pair_rows, recorded_cascade, write_jsonl


def compare(data, cascade, calibration, out) -> int:
    """``hf-critic compare --cascade`` of ``data`` under ``calibration``; its exit code."""
    argv = ["compare", "--data", str(data), "--cascade", str(cascade), "--calibration", str(calibration)]
    return main([*argv, "--output", str(out)])


def refused(path) -> str:
    """The one-line error ``load_calibration`` gives for ``path``."""
    with pytest.raises(ValueError) as err:
        load_calibration(path)
    message = str(err.value)
    assert message.startswith(str(path)) and "\n" not in message
    return message


def edited(tmp_path, raw: dict, change) -> str:
    change(raw)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return refused(path)


def calibrated_judge(tmp_path):
    """A two-order recorded judge calibrated on 12 rows (threshold 1.0, failed candidate 0.5): data, cascade, file."""
    bench = pair_rows()
    first = [r["label"] if i % 3 else 1 - r["label"] for i, r in enumerate(bench)]
    cascade = recorded_cascade(tmp_path, bench, first, [1 - r["label"] for r in bench])
    data = write_jsonl(tmp_path / "data.jsonl", bench)
    assert calibrate(data, cascade, tmp_path / "cal.json") == 0
    return data, cascade, tmp_path / "cal.json"


@pytest.fixture
def written(tmp_path) -> dict:
    """What calibrate writes for :func:`calibrated_judge`, as JSON."""
    raw = json.loads(calibrated_judge(tmp_path)[2].read_text())
    assert raw["critics"][0]["threshold"] == 1.0 and len(raw["rows"]["ids"]) == 12
    return raw


def _threshold_zero_failed_removed(c):
    c["critics"][0].update(threshold=0.0, failed=None)


def _human_flipped_with_its_hash(c):
    from hf_critic.selective import data_hash

    c["rows"]["human"][0] = 1 - c["rows"]["human"][0]
    c["data"]["sha256"] = data_hash(c["rows"]["ids"], c["rows"]["human"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            _threshold_zero_failed_removed,
            "critics[0] (judge).threshold 0.0 is not what fixed-sequence testing gives "
            "on its stored rows (1.0): the file was edited",
        ),
        (lambda c: c["critics"][0].update(failed=None), "critics[0] (judge).failed None is not what fixed-sequence"),
        (lambda c: c.pop("rows"), "rows must be {ids, human}"),
        (lambda c: c["critics"][0].pop("verdicts"), "critics[0] (judge).verdicts must be {labels, confidences}"),
        (lambda c: c["critics"][0]["verdicts"]["labels"].pop(), "verdicts hold 11 labels and 12 confidences"),
        (lambda c: c["rows"]["human"].reverse(), "do not hash to data.sha256"),
        (_human_flipped_with_its_hash, "is not what fixed-sequence testing gives on its stored rows"),
        (
            lambda c: c["critics"][0]["verdicts"]["confidences"].__setitem__(1, None),
            "is not what fixed-sequence testing gives",
        ),
        (lambda c: c["critics"][0]["verdicts"]["labels"].__setitem__(1, None), "row 1: label None with confidence"),
        (lambda c: c.update(format="hf-critic-calibration/2"), "format 2, which does not carry the rows"),
    ],
)
def test_an_edited_calibration_is_refused_by_re_deriving_it_from_its_rows(written, tmp_path, change, message):
    assert message in edited(tmp_path, written, change)


def test_threshold_zero_without_its_failed_candidate_is_refused_by_compare_before_any_row_is_judged(tmp_path, capsys):
    data, cascade, path = calibrated_judge(tmp_path)
    raw = json.loads(path.read_text())
    _threshold_zero_failed_removed(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")
    capsys.readouterr()
    out = tmp_path / "judged.jsonl"
    assert compare(data, cascade, tmp_path / "cal.json", out) == 2
    captured = capsys.readouterr()
    assert "guaranteed" not in captured.out and not out.exists()
    assert "threshold 0.0 is not what fixed-sequence testing gives on its stored rows (1.0)" in captured.err


# ------------------------------------------------------------------------------------------------ a fitted jury
def calibrated_jury(tmp_path):
    """A fitted jury (two recorded members and longer-wins, 40 rows) calibrated: data, cascade, file, its JSON."""
    data, cascade = jury_files(tmp_path)
    out = calibrate_jury(data, cascade, tmp_path / "jury.json")
    return data, cascade, out, json.loads(out.read_text())


@pytest.fixture
def jury_calibration(tmp_path):
    data, cascade, out, raw = calibrated_jury(tmp_path)
    fit = raw["critics"][0]["jury"]["fit"]
    assert len(fit["fit_rows"]["features"]) == fit["rows"] > 0
    assert len(raw["critics"][0]["jury"]["threshold_features"]) == raw["data"]["rows"]
    return data, cascade, out, raw


def _negate_weights(c):
    fit = c["critics"][0]["jury"]["fit"]
    fit["weights"] = [-w for w in fit["weights"]]
    fit["intercept"] = -fit["intercept"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_negate_weights, "critics[0] (jury).jury.fit: intercept"),
        (lambda c: c["critics"][0]["jury"]["fit"].pop("fit_rows"), "jury.fit: the fit carries no fit_rows"),
        (lambda c: c["critics"][0]["jury"]["fit"]["fit_rows"]["human"].reverse(), "not the fit its stored fit rows"),
        (lambda c: c["critics"][0]["jury"].pop("threshold_features"), "jury.threshold_features must hold 3 features"),
        (
            lambda c: c["critics"][0]["jury"]["threshold_features"][0].__setitem__(0, 5.0),
            "is not what its fit from its members' features gives",
        ),
    ],
)
def test_an_edited_jury_fit_is_refused_by_fitting_it_again_from_its_stored_fit_rows(
    jury_calibration, tmp_path, change, message
):
    *_, raw = jury_calibration
    assert message in edited(tmp_path, raw, change)


def test_negated_jury_weights_are_refused_by_compare(tmp_path, capsys):
    data, cascade, path, raw = calibrated_jury(tmp_path)
    _negate_weights(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")
    capsys.readouterr()
    out = tmp_path / "judged.jsonl"
    assert compare(data, cascade, path, out) == 2
    captured = capsys.readouterr()
    assert not out.exists() and "guaranteed" not in captured.out
    assert "not the fit its stored fit rows give" in captured.err


# ----------------------------------------------------------------------------------------------- a served critic
def test_another_model_behind_the_same_url_and_name_is_refused_before_the_rows_are_judged(tmp_path, capsys):
    data = pairs(tmp_path)
    with StubOpenAIServer(cheap_reply) as cheap, StubOpenAIServer(strong_reply) as strong:
        spec = cascade_file(tmp_path, cheap.url, strong.url)
        calibration = calibrate_served(data, spec, tmp_path)
        probes = json.loads(calibration.read_text())["critics"][0]["probes"]
        assert len(probes) == 8 and set(probes[0]) == {"index", "row", "label", "confidence"}
        raw = json.loads(calibration.read_text())  # a probe edited to fit another model: it no longer repeats
        raw["critics"][0]["probes"][0]["label"] = 1 - raw["critics"][0]["probes"][0]["label"]  # its stored verdict
        message = edited(tmp_path, raw, lambda c: None)
        assert "critics[0] (cheap).probes[0]: label" in message and "differ from its stored verdict" in message
        raw["critics"][0]["probes"] = None  # removed: a served critic that keeps rows must have rows to re-check
        (tmp_path / "no_probes.json").write_text(json.dumps(raw), encoding="utf-8")
        capsys.readouterr()
        assert compare(data, spec, tmp_path / "no_probes.json", tmp_path / "none.jsonl") == 2
        assert "critic 'cheap' is served (http://127.0.0.1:" in capsys.readouterr().err
        cheap.reply = lambda body: "[[B]]"  # another model, same URL, same name, same /v1/models
        capsys.readouterr()
        out = tmp_path / "judged.jsonl"
        assert compare(data, spec, calibration, out) == 2
    err = capsys.readouterr().err
    assert not out.exists()
    assert re.search(
        r"critic 'cheap' \(http://127\.0\.0\.1:\d+/v1, cheap-critic\) judges \d of its 8 recorded "
        r"calibration rows otherwise \(probe \d: calibrated \d at 1\.000, now",
        err,
    )
    assert "calibrate again" in err


# ------------------------------------------------------------------------------- errors first, nothing written
def _calibrate_jury(tmp_path, capsys, share, *extra, rows=None) -> str:
    data, cascade = jury_files(tmp_path)
    if rows is not None:
        write_jsonl(data, rows)
    spec = json.loads(cascade.read_text())
    spec["critics"][0]["jury"]["fit_share"] = share
    cascade.write_text(json.dumps(spec), encoding="utf-8")
    out, report = tmp_path / "out.json", tmp_path / "report"
    argv = ["calibrate", "--data", str(data), "--cascade", str(cascade), "--target-agreement", "0.6"]
    argv += ["--delta", "0.2", "--min-rows", "5", "--output", str(out), *extra]
    capsys.readouterr()
    assert main(argv) == 2
    assert not out.exists() and not report.exists()  # nothing written
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hf-critic calibrate: error:")]
    assert len(err) == 1, err
    return err[0]


def test_a_fit_share_that_leaves_no_threshold_row_is_refused_naming_it_and_the_counts(tmp_path, capsys):
    err = _calibrate_jury(tmp_path, capsys, 0.99)
    assert "jury 'jury': fit_share 0.99 fits the jury on 20 of the data's 20 questions, all 40 rows" in err
    assert "leaves none to set thresholds on: lower fit_share" in err and "grouped by question text" in err


def test_a_fit_share_that_rounds_to_no_question_says_so_and_does_not_blame_the_data(tmp_path, capsys):
    err = _calibrate_jury(tmp_path, capsys, 0.01)
    assert "fit_share 0.01 of the data's 20 questions rounds to no question to fit the jury on" in err
    assert "raise fit_share to at least 0.05" in err and "prefer response" not in err


def test_rows_sharing_one_question_text_are_one_question_and_the_error_says_how_to_tell_them_apart(tmp_path, capsys):
    import datasets

    from hf_critic.commands.calibrate_report import question_keys

    data, _ = jury_files(tmp_path)
    rows = [{**json.loads(line), "question": "Which answer is better?"} for line in data.read_text().splitlines()]
    err = _calibrate_jury(tmp_path, capsys, 0.5, rows=rows)
    assert "fit_share 0.5: the data's 40 rows are 1 question (grouped by question text" in err
    assert "grouped by question text, as the data has no query_id column" in err and "give each row a query_id" in err
    # with a query_id, rows are grouped by it: the same text on 40 rows is 40 questions
    assert (
        len(set(question_keys(datasets.Dataset.from_list([{**r, "query_id": i} for i, r in enumerate(rows)])))) == 40
    )


def test_a_calibration_fraction_that_empties_a_split_half_is_refused_before_anything_is_written(tmp_path, capsys):
    err = _calibrate_jury(
        tmp_path,
        capsys,
        0.5,
        "--splits",
        "5",
        "--calibration-fraction",
        "0.99",
        "--report-dir",
        str(tmp_path / "report"),
    )
    assert (
        "--calibration-fraction 0.99 of the 40 rows gives 40 calibration and 0 test rows per split "
        "(--splits 5): both halves need rows; choose a fraction between 0.025 and 0.975"
    ) in err
    assert "split_protocol" not in err


def test_a_fit_share_too_small_for_a_split_half_is_refused_naming_it_before_anything_is_written(tmp_path, capsys):
    # 0.1 of the data's 20 questions fits on 2 questions; in a half of 20 rows (14 questions) on 1, one label only
    err = _calibrate_jury(tmp_path, capsys, 0.1, "--splits", "5", "--report-dir", str(tmp_path / "report"))
    assert (
        "--splits: jury 'jury' (fit_share 0.1) in a split's calibration half of 20 rows takes 1 of its 14 "
        "questions (2 rows), whose human labels do not prefer each response at least once: raise fit_share or "
        "--calibration-fraction"
    ) in err


# ------------------------------------------------------------------------------------------------ a reward critic
def reward_claim() -> dict:
    """A reward critic's calibration as ``calibrate`` writes it, built from 60 rows of margins: right where the margin
    is large, a coin flip where it is small."""
    import numpy as np

    from hf_critic.selective import CalibrationFile, CriticThreshold, calibrate_cascade, data_hash, margin_confidence

    rng = np.random.default_rng(0)
    margins = rng.uniform(-3, 3, 60).round(3).tolist()
    human = [0 if m > 0 else 1 for m in margins]
    labels = [h if abs(m) > 1 or rng.uniform() < 0.5 else 1 - h for h, m in zip(human, margins, strict=True)]
    logistic = [1.5, -0.5]
    confidences = [margin_confidence(m, *logistic) for m in margins]
    correct = [lab == h for lab, h in zip(labels, human, strict=True)]
    ((lam, n, k, upper, rows, failed),) = calibrate_cascade(
        [confidences], [correct], alpha=0.2, delta=0.1, min_rows=20
    )
    verdicts = {"labels": labels, "confidences": confidences, "margins": margins}
    critic = CriticThreshold("rm", "f" * 16, "reward margin", lam, n, k, upper, 0.1, rows, n / 60, logistic, failed)
    critic.verdicts = verdicts
    ids = list(range(60))
    data = {"path": "d", "rows": 60, "sha256": data_hash(ids, human)}
    calibration = CalibrationFile("pairwise", "pairwise_reference_free", 0.2, 0.1, 20, data, [critic])
    calibration.rows = {"ids": ids, "human": human}
    return json.loads(calibration.to_json())


def test_a_reward_critics_confidences_are_re_derived_from_its_margins_and_a_reversed_logistic_is_refused(tmp_path):
    raw = reward_claim()
    path = tmp_path / "reward.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert load_calibration(path).critics[0].threshold is not None  # as written, it re-derives
    reversed_slope = edited(
        tmp_path, json.loads(json.dumps(raw)), lambda c: c["critics"][0].update(logistic=[-1.5, 2.0])
    )
    assert "a reward critic's verdicts need margins on every row and a logistic with slope > 0" in reversed_slope
    intercept = edited(tmp_path, raw, lambda c: c["critics"][0].update(logistic=[1.5, 0.5]))
    assert "critics[0] (rm).verdicts row 0: confidence" in intercept and "through logistic [1.5, 0.5]" in intercept


def test_a_reward_critic_calibrated_end_to_end_re_derives_and_its_reversed_logistic_is_refused(tmp_path):
    from hf_critic.testing.tiny_models import build_tiny_reward_model

    model = build_tiny_reward_model(tmp_path / "rm")
    data = write_jsonl(tmp_path / "data.jsonl", pair_rows())
    options = {"model": str(model), "dtype": "float32", "no_cache": True, "progress": False}
    cascade = tmp_path / "reward.yaml"
    cascade.write_text(json.dumps({"critics": [{"name": "rm", "options": options}]}), encoding="utf-8")
    out = calibrate_jury(data, cascade, tmp_path / "reward.json")
    raw = json.loads(out.read_text())
    (critic,) = raw["critics"]
    assert critic["confidence"] == "reward margin" and len(critic["verdicts"]["margins"]) == 12
    assert critic["logistic"][0] > 0 and critic["probes"] is None  # a local model: known by its weights
    load_calibration(out)  # as written, it re-derives
    slope, intercept = critic["logistic"]
    message = edited(tmp_path, raw, lambda c: c["critics"][0].update(logistic=[-slope, intercept]))
    assert (
        "critics[0] (rm): a reward critic's verdicts need margins on every row and a logistic with slope > 0"
        in message
    )


@pytest.mark.parametrize("how", ["vote", "mean"])
def test_a_vote_or_mean_jurys_verdicts_are_aggregated_again_from_its_members_stored_verdicts(tmp_path, how):
    data, cascade = jury_files(tmp_path, aggregate_how=how)
    raw = json.loads(calibrate_jury(data, cascade, tmp_path / "jury.json").read_text())
    members = raw["critics"][0]["jury"]["threshold_members"]
    assert list(members) == ["good", "noisy", "longer-wins"] and len(members["good"]["labels"]) == raw["data"]["rows"]
    load_calibration(tmp_path / "jury.json")  # as written, it re-derives

    def flip_member(c):
        good = c["critics"][0]["jury"]["threshold_members"]["good"]["labels"]
        good[0] = 1 - good[0]

    message = edited(tmp_path, json.loads(json.dumps(raw)), flip_member)
    assert "critics[0] (jury).verdicts row 0: label" in message and f"is not what its members' {how} gives" in message
    message = edited(tmp_path, raw, lambda c: c["critics"][0]["jury"].pop("threshold_members"))
    assert "jury.threshold_members must hold each member's labels and confidences" in message
