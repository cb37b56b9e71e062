"""scripts/smollm2-135m/jury_halves.py: a jury measured the way choices are made here, fitted and
chosen on dev, reported on test. No model: the jury's members are recorded critique files and ``longer-wins``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from hf_critic.core import schema
from hf_critic.selective.jury import aggregate, fit_jury
from hf_critic.selective.risk_coverage import aurc
from tests.critics.test_jury import ROWS, jury_files

REPO = Path(__file__).resolve().parents[2]
HALF = ROWS // 2  # the first half of the questions (two pairs each): dev


def _script():
    spec = importlib.util.spec_from_file_location("jury_halves", REPO / "scripts/smollm2-135m/jury_halves.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


jh = _script()


def test_dev_aurc_the_choice_and_the_goal_on_hand_computed_values():
    # credits 1, 0, 1 in confidence order: risks 0, 1/2, 1/3 at k = 1, 2, 3
    assert jh.dev_aurc([0, 1, 0], [0.9, 0.8, 0.6], [0, 0, 0]) == pytest.approx((0 + 1 / 2 + 1 / 3) / 3)
    assert jh.dev_aurc([0, None], [0.9, None], [0, 1]) == pytest.approx((0 + 1 / 2) / 2)  # no verdict: a miss, last
    assert jh.choose({"jury (vote)": 0.31, "jury (fitted)": None, "jury (mean)": 0.24}) == "jury (mean)"
    assert jh.choose({"jury (vote)": 0.2, "jury (mean)": 0.2}) == "jury (vote)"  # a tie: the first listed
    assert jh.choose({"jury (fitted)": None, "jury (mean)": float("nan")}) is None
    blocks = {"j": {"aurc": 0.2}, "j/a": {"aurc": 0.3}, "j/b": {"aurc": 0.1}, "longer-wins": {"aurc": 0.4}}
    g = jh.goal(blocks, "j", ["j/a", "j/b"])
    assert g["beats"] == {"longer-wins": True, "j/a": True, "j/b": False} and g["holds"] is False
    assert jh.goal(blocks, "j/b", ["j/a"])["holds"] is True


def _halves(tmp_path):
    """test_jury's pairs (two a question) and its jury cascade (recorded members ``good`` and ``noisy``, and
    ``longer-wins``), the first half of the questions as dev; returns the halves' rows and each member's critiques."""
    data, cascade = jury_files(tmp_path)
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    members = {
        m: [json.loads(line) for line in (tmp_path / f"{m}.jsonl").read_text(encoding="utf-8").splitlines()]
        for m in ("good", "noisy")
    }
    return rows[:HALF], rows[HALF:], members, cascade


def _stage(cascade):
    from hf_critic import load_cascade

    (stage,) = load_cascade(str(cascade))
    return stage


def _columns(critiques):
    return {c: [r[c] for r in critiques] for c in (schema.CRITIQUE_LABEL, schema.CRITIQUE_CONFIDENCE)}


def test_measure_fits_and_chooses_on_dev_and_reports_on_test(tmp_path):
    import datasets

    dev_rows, test_rows, members, cascade = _halves(tmp_path)
    dev, test = datasets.Dataset.from_list(dev_rows), datasets.Dataset.from_list(test_rows)
    result = jh.measure(_stage(cascade), dev, test, resamples=0)

    # the fit is the fit on the dev rows only, applied unchanged to test
    dev_cols = {m: _columns(c[:HALF]) for m, c in members.items()}
    test_cols = {m: _columns(c[HALF:]) for m, c in members.items()}
    labels, confidences, _ = aggregate("fitted", test_cols, fit_jury(dev_cols, dev["label"]))
    credit = [float(lab == h) for lab, h in zip(labels, test["label"], strict=True)]
    blocks = result["test"]["blocks"]
    assert blocks["jury (fitted) without longer-wins"]["aurc"] == pytest.approx(aurc(confidences, credit))
    for name in (
        "jury (fitted)",
        "jury (vote)",
        "jury (mean)",
        "jury/good",
        "jury/noisy",
        "longer-wins",
        "label-prior",
    ):
        assert name in blocks and blocks[name]["n"] == len(test_rows)
    assert "jury/longer-wins" not in blocks  # the member is the baseline
    assert result["test"]["agreement"]["jury/good"] == pytest.approx(
        np.mean([r[schema.CRITIQUE_LABEL] == r["label"] for r in members["good"][HALF:]])
    )

    # the dev AURC of a fitted aggregate is cross-fitted: each row's verdict from a fit on the other fold's questions
    dev_aurc = result["dev"]["dev_aurc"]
    cross = jh.cross_fitted(dev_cols, dev["label"], dev["question"])
    assert dev_aurc["jury (fitted) without longer-wins"] == pytest.approx(jh.dev_aurc(*cross, dev["label"]))
    in_sample = aggregate("fitted", dev_cols, fit_jury(dev_cols, dev["label"]))[:2]
    assert cross != in_sample
    assert result["chosen"] == min((k for k, v in dev_aurc.items() if v is not None), key=dev_aurc.get)
    assert blocks[result["chosen"]].get("chosen") is True
    assert result["goal"]["jury"] == "jury (fitted)" and set(result["goal"]["beats"]) == {
        "longer-wins",
        "jury/good",
        "jury/noisy",
    }
    assert result["goal"]["holds"] == all(
        blocks["jury (fitted)"]["aurc"] < blocks[k]["aurc"] for k in ("longer-wins", "jury/good", "jury/noisy")
    )
    lines = jh.summary_lines("toy", result)
    assert lines[0] == f"toy: dev {HALF} pairs, test {len(test_rows)} pairs"
    assert any(line.startswith("  goal (") for line in lines)


def test_test_labels_never_reach_the_fit_or_the_choice(tmp_path):
    import datasets

    dev_rows, test_rows, _, cascade = _halves(tmp_path)
    dev = datasets.Dataset.from_list(dev_rows)
    first = jh.measure(_stage(cascade), dev, datasets.Dataset.from_list(test_rows), resamples=0)
    flipped = [{**r, "label": 1 - r["label"]} for r in test_rows]  # every test label flipped
    again = jh.measure(_stage(cascade), dev, datasets.Dataset.from_list(flipped), resamples=0)
    assert again["dev"]["dev_aurc"] == first["dev"]["dev_aurc"] and again["chosen"] == first["chosen"]
    # the same verdicts on test, so each critic's agreement there is one minus the first run's
    assert again["test"]["agreement"]["jury (fitted)"] == pytest.approx(
        1 - first["test"]["agreement"]["jury (fitted)"]
    )


def test_main_writes_nothing_and_exits_2_without_a_split(tmp_path, capsys):
    assert jh.main(["--splits", str(tmp_path / "none"), "--output-dir", str(tmp_path / "out")]) == 2
    assert "no split file" in capsys.readouterr().err and not (tmp_path / "out").exists()
