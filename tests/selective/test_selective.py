"""Selective judging (Trust or Escalate, Jung et al. 2025): the guarantee on synthetic critics of known accuracy, the
fixed-sequence threshold against MAPIE's, abstention, and cascades that send only the rows a critic did not keep to
the next (counted requests on stand-in servers), refuse a stale calibration, and never give an abstained row a
verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from hf_critic.cli import main
from hf_critic.core import schema
from hf_critic.selective import (
    calibrate_cascade,
    cascade_decisions,
    clopper_pearson_upper,
    confidence_of,
    fit_margin_logistic,
    fixed_sequence_threshold,
    load_calibration,
    split_protocol,
)
from hf_critic.testing.servers import StubOpenAIServer


def synthetic_critic(rows: int, seed: int, *, floor: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """A critic of known accuracy: confidence c ~ U(0, 1), and its verdict is right with probability
    ``floor + (1 - floor) * c``."""
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(size=rows)
    correct = rng.uniform(size=rows) < floor + (1 - floor) * confidence
    return confidence, correct


def true_agreement(threshold: float | None, floor: float = 0.5) -> float:
    """The synthetic critic's agreement with humans on ALL rows (the population) at or above ``threshold``:
    the mean of ``floor + (1 - floor) c`` over c in [threshold, 1]; 1.0 when it keeps nothing (vacuous)."""
    return 1.0 if threshold is None else floor + (1 - floor) * (1 + threshold) / 2


# ------------------------------------------------------------------------------------------- the guarantee
@pytest.mark.parametrize("alpha", [0.15, 0.2])
def test_the_guarantee_holds_on_the_population_and_fails_with_the_plain_observed_rate(alpha):
    exact, plain, kept = [], [], []
    for seed in range(300):  # 300 calibration sets of 600 rows
        conf, ok = synthetic_critic(600, seed=seed)
        lam = fixed_sequence_threshold(conf, ok, alpha=alpha, delta=0.1)[0]
        exact.append(true_agreement(lam) >= 1 - alpha)
        kept.append(lam is not None)
        cut = fixed_sequence_threshold(conf, ok, alpha=alpha, delta=0.1, bound="observed")[0]
        plain.append(true_agreement(cut) >= 1 - alpha)
    assert np.mean(exact) >= 0.9  # agreement >= 1 - alpha with probability >= 1 - delta
    assert np.mean(kept) > 0.9  # and not by keeping nothing
    assert np.mean(plain) < 0.8  # the observed rate alone is no guarantee


def test_a_cascade_of_two_synthetic_critics_keeps_its_guarantee_and_escalates_the_rest():
    held = []
    for seed in range(200):
        weak, weak_ok = synthetic_critic(800, seed=2 * seed, floor=0.3)
        strong, strong_ok = synthetic_critic(800, seed=2 * seed + 1, floor=0.6)
        (lam1, *_), (lam2, *_) = calibrate_cascade([weak, strong], [weak_ok, strong_ok], alpha=0.15, delta=0.1)
        held.append(true_agreement(lam1, 0.3) >= 0.85 and true_agreement(lam2, 0.6) >= 0.85)
    assert np.mean(held) >= 0.9
    result = split_protocol([weak, strong], [weak_ok, strong_ok], alpha=0.15, delta=0.1, splits=50, seed=1)
    assert 0 < result["shares"][0] < result["coverage"]["mean"]  # the weak critic decides some rows, not all kept
    assert result["strongest_asked"] == pytest.approx(1 - result["shares"][0], abs=1e-9)


def test_the_exact_bound_is_clopper_pearson_from_scipy_binomtest():
    assert clopper_pearson_upper(138, 884, 0.1) == pytest.approx(
        binomtest(138, 884).proportion_ci(confidence_level=0.8, method="exact").high
    )
    assert clopper_pearson_upper(0, 10, 0.1) == pytest.approx(1 - 0.1 ** (1 / 10))  # (1 - p)^10 = delta


# -------------------------------------------------------------------------------------------- abstention
def test_a_critic_whose_top_bin_fails_keeps_no_row_even_when_lower_thresholds_would_pass():
    conf = np.r_[np.full(40, 0.99), np.linspace(0.9, 0.1, 500)]
    ok = np.r_[np.zeros(40, bool), np.ones(500, bool)]  # the 40 most confident verdicts are all wrong
    assert fixed_sequence_threshold(conf, ok, alpha=0.2, delta=0.1) == (None, 0, 0, None)
    assert (cascade_decisions([conf], [None]) == -1).all()


def test_a_critic_at_chance_keeps_no_row_and_rows_without_a_verdict_are_never_kept():
    rng = np.random.default_rng(0)
    conf = list(rng.uniform(size=500))
    ok = rng.uniform(size=500) < 0.5
    assert fixed_sequence_threshold(conf, ok, alpha=0.2, delta=0.1)[0] is None
    good = [None] * 100 + [1.0] * 400  # 100 unparsed verdicts: no confidence
    lam, n, k, _ = fixed_sequence_threshold(good, [True] * 500, alpha=0.2, delta=0.1)
    assert (lam, n, k) == (1.0, 400, 0)


def test_each_later_critic_is_calibrated_on_the_rows_its_predecessors_did_not_keep_with_a_share_of_delta():
    first = np.r_[np.ones(300), np.zeros(300)]  # sure of the first 300 rows (all right), unsure of the rest (wrong)
    first_ok = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    fitted = calibrate_cascade([first, np.ones(600)], [first_ok, np.ones(600, bool)], alpha=0.1, delta=0.1)
    assert [f[4] for f in fitted] == [600, 300]
    assert fitted[0][:3] == (1.0, 300, 0) and fitted[1][:3] == (1.0, 300, 0)


# ------------------------------------------------------------------------------------------- MAPIE cross-check
def test_mapie_fixed_sequence_testing_gives_the_same_threshold():
    risk_control = pytest.importorskip("mapie.risk_control")
    conf, ok = synthetic_critic(1500, seed=4)
    grid = np.round(np.linspace(0.99, 0.0, 100), 4)  # a fixed grid, highest first, as MAPIE's lambdas
    alpha, delta = 0.2, 0.1
    ours = fixed_sequence_threshold(conf, ok, alpha=alpha, delta=delta, min_rows=1, thresholds=grid)[0]
    p_values = []
    for lam in grid:
        kept = conf >= lam
        n, k = int(kept.sum()), int((~ok[kept]).sum())
        p_values.append(binomtest(k, n, alpha, alternative="less").pvalue if n else 1.0)
    valid = risk_control.control_fwer(np.array(p_values), delta, fwer_method="fixed_sequence")
    assert len(valid) > 0 and ours == pytest.approx(grid[max(valid)])


# ---------------------------------------------------------------------------------------------- confidences
def test_confidence_per_critic_kind():
    label, swapped = schema.CRITIQUE_LABEL, schema.CRITIQUE_LABEL_SWAPPED
    dist = {
        schema.CRITIQUE_LABEL: [0, 1],
        schema.CRITIQUE_STATUS: ["ok", "ok"],
        schema.CRITIQUE_DISTRIBUTION_COMBINED: [
            '{"response_1": 0.7, "response_2": 0.2, "tie": 0.1}',
            '{"response_1": 0.5, "response_2": 0.4, "tie": 0.1}',
        ],
    }
    assert confidence_of(dist) == ([0.7, 0.4], "probability")
    assert confidence_of({label: [0, 1, None], swapped: [0, 0, 1]}, recorded=True) == ([1.0, 0.5, None], "recorded")
    # one order: a constant 1.0 (the critic kept whole or not at all), never "no confidence" for every row
    assert confidence_of({label: [0, None]}, recorded=True) == ([1.0, None], "constant")
    votes = confidence_of({label: [0, 2]}, votes=[[0, 0, None, 1], [2]])
    assert votes == ([0.5, 1.0], "votes")  # an unparsed sample votes against
    rewards = {label: [0, 1], schema.CRITIQUE_REWARD: [2.0, 0.0], schema.CRITIQUE_REWARD_2: [0.0, 0.0]}
    values, kind = confidence_of(rewards)
    assert kind == "reward margin" and values == pytest.approx([1 / (1 + np.exp(-2)), 0.5])
    slope, intercept = fit_margin_logistic([0.1, 0.2, 2.0, 3.0, 0.15, 2.5], [0, 1, 1, 1, 0, 1])
    assert slope > 0


# ---------------------------------------------------------------------------------------------- cascades
ROWS = 12


def pairs(tmp_path: Path) -> Path:
    """Pairs whose better answer is ``good`` (label 0 or 1 alternating with the row)."""
    rows = []
    for i in range(ROWS):
        good, bad = f"Good answer {i}.", f"bad {i}"
        first = i % 2 == 0
        rows.append(
            {
                "question": f"Question {i}?",
                "response_1": good if first else bad,
                "response_2": bad if first else good,
                "label": 0 if first else 1,
            }
        )
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def cheap_reply(body: dict) -> str:
    """A cheap critic: sure and right on questions 0-5 (prefers the good answer in both orders); position-biased on
    the others (always the first answer: its two orders disagree)."""
    prompt = body["messages"][-1]["content"]
    i = int(re.search(r"Question (\d+)\?", prompt).group(1))
    if i >= 6:
        return "The first is better. [[A]]"
    return "[[A]]" if prompt.index("Good answer") < prompt.index("bad ") else "[[B]]"


def strong_reply(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    return "[[A]]" if prompt.index("Good answer") < prompt.index("bad ") else "[[B]]"


def cascade_file(tmp_path: Path, cheap: str, strong: str, template: str = "mtbench") -> Path:
    def options(url, model):  # a server's model name is its identity (in the cache too)
        return {
            "base_url": url,
            "model": model,
            "template": template,
            "verdict": "text",
            "swap": True,
            "cache": str(tmp_path / "cache.sqlite"),
            "concurrency": 1,
            "progress": False,
        }

    spec = {
        "critics": [
            {"name": "cheap", "options": options(cheap, "cheap-critic")},
            {"name": "strong", "options": options(strong, "strong-critic"), "price_per_call": 0.5},
        ]
    }
    path = tmp_path / f"cascade_{template}.yaml"
    path.write_text(json.dumps(spec), encoding="utf-8")  # JSON is YAML
    return path


def calibrate(data: Path, spec: Path, tmp_path: Path) -> Path:
    """``hf-critic calibrate`` of the two-critic cascade at target 0.75 (delta 0.5: 12 rows are few); its file."""
    calibration = tmp_path / "calibration.json"
    argv = [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        str(spec),
        "--target-agreement",
        "0.75",
        "--delta",
        "0.5",
        "--min-rows",
        "1",
        "--output",
        str(calibration),
    ]
    assert main(argv) == 0
    return calibration


def test_a_cascade_sends_only_the_unkept_rows_onward_and_abstains_where_no_critic_is_sure(tmp_path, capsys):
    data = pairs(tmp_path)
    with StubOpenAIServer(cheap_reply) as cheap, StubOpenAIServer(strong_reply) as strong:
        spec = cascade_file(tmp_path, cheap.url, strong.url)
        calibration = calibrate(data, spec, tmp_path)
        assert (cheap.requests, strong.requests) == (2 * ROWS, 2 * ROWS)  # calibration: every critic, every row
        written = load_calibration(calibration)
        assert [c.threshold for c in written.critics] == [1.0, 1.0]
        assert written.critics[0].n == 6 and written.critics[1].calibration_rows == 6
        capsys.readouterr()

        before = (cheap.requests, strong.requests)
        out = tmp_path / "judged.jsonl"
        argv = [
            "compare",
            "--data",
            str(data),
            "--cascade",
            str(spec),
            "--calibration",
            str(calibration),
            "--output",
            str(out),
        ]
        assert main(argv) == 0
        printed = capsys.readouterr().out
    # the cache answers every request of the cascade itself: only each served critic's 8 recorded calibration rows
    # are judged again past it (both orders), before the rows: count the calls the cascade makes instead
    assert (cheap.requests, strong.requests) == (before[0] + 16, before[1] + 16)
    assert "cheap: served; its 8 recorded calibration rows judged again agree" in printed
    assert "cheap: asked 12, decided 6 (50.0% of rows), threshold 1; 24 calls" in printed
    assert "strong: asked 6, decided 6 (50.0% of rows), threshold 1; 12 calls" in printed
    assert "6 in money" in printed  # 12 calls at 0.5
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r[schema.CRITIQUE_CRITIC] for r in rows] == ["cheap"] * 6 + ["strong"] * 6
    assert all(r[schema.CRITIQUE_LABEL] == r["label"] for r in rows)
    assert "vs label: agreement 100.00 on the 12 decided rows" in printed


def test_only_unkept_rows_reach_the_next_critic_without_a_cache_and_abstained_rows_get_no_verdict(tmp_path):
    from hf_critic import load_cascade
    from hf_critic.selective import CalibrationFile, CriticThreshold
    from hf_critic.selective.cascade import CascadeStage, critic_fingerprint, run_cascade

    data = [json.loads(line) for line in pairs(tmp_path).read_text(encoding="utf-8").splitlines()]
    with StubOpenAIServer(cheap_reply) as cheap, StubOpenAIServer(lambda body: "no verdict here") as strong:
        spec = json.loads(cascade_file(tmp_path, cheap.url, strong.url).read_text())
        for critic in spec["critics"]:
            critic["options"].pop("cache")
            critic["options"]["no_cache"] = True
        path = tmp_path / "nocache.yaml"
        path.write_text(json.dumps(spec), encoding="utf-8")
        stages: list[CascadeStage] = load_cascade(str(path))
        setting = schema.Setting(schema.Task.PAIRWISE, False)
        entries = [
            CriticThreshold(s.name, critic_fingerprint(s, setting), "votes", 1.0, 6, 0, 0.1, 0.05, 12, 0.5)
            for s in stages
        ]
        calibration = CalibrationFile("pairwise", setting.name, 0.2, 0.1, 1, {}, entries)
        result = run_cascade(stages, data, calibration)
        asked = {int(re.search(r"Question (\d+)\?", b["messages"][-1]["content"]).group(1)) for b in strong.bodies}
        assert cheap.requests == 2 * ROWS and asked == set(range(6, 12))  # only the 6 rows the cheap one did not keep
    rows = result.critiques
    abstained = [i for i, s in enumerate(rows[schema.CRITIQUE_STATUS]) if s == "abstained"]
    assert abstained == list(range(6, 12))  # the strong critic wrote no verdict on them
    for column in (schema.CRITIQUE_LABEL, schema.CRITIQUE_CONFIDENCE, schema.CRITIQUE_CRITIC):
        assert [rows[column][i] for i in abstained] == [None] * 6
    assert result.summary()["coverage"] == 0.5


def test_a_calibration_made_for_another_critic_or_setting_is_refused_with_one_line(tmp_path, capsys):
    data = pairs(tmp_path)
    with StubOpenAIServer(cheap_reply) as cheap, StubOpenAIServer(strong_reply) as strong:
        spec = cascade_file(tmp_path, cheap.url, strong.url)
        calibration = calibrate(data, spec, tmp_path)
        other = cascade_file(tmp_path, cheap.url, strong.url, template="autoj")  # another template
        capsys.readouterr()
        argv = [
            "compare",
            "--data",
            str(data),
            "--cascade",
            str(other),
            "--calibration",
            str(calibration),
            "--output",
            str(tmp_path / "x.jsonl"),
        ]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "critic 'cheap' differs from the one calibrated" in err[0]
        referenced = tmp_path / "ref.jsonl"
        referenced.write_text(
            "".join(
                json.dumps({**json.loads(line), "reference": "Good."}) + "\n" for line in data.read_text().splitlines()
            )
        )
        argv = [
            "compare",
            "--data",
            str(referenced),
            "--cascade",
            str(spec),
            "--calibration",
            str(calibration),
            "--output",
            str(tmp_path / "x.jsonl"),
        ]
        assert main(argv) == 2
        assert "calibrated for pairwise_reference_free, the data is pairwise_referenced" in capsys.readouterr().err
        argv = [
            "compare",
            "--data",
            str(data),
            "--cascade",
            str(spec),
            "--calibration",
            str(calibration),
            "--output",
            str(tmp_path / "y.jsonl"),
            "--model",
            "other",
        ]
        assert main(argv) == 2
        assert "--model with --cascade" in capsys.readouterr().err


def test_recorded_verdicts_stand_for_a_critic_matched_by_text_and_say_they_were_read(tmp_path, capsys):
    data = pairs(tmp_path)
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    # a published judge's files over a benchmark in another order, with one row the data lacks
    bench = list(reversed(rows)) + [{"question": "Other?", "response_1": "x", "response_2": "y", "label": 0}]
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bench))
    first = [r["label"] if i % 3 else 1 - r["label"] for i, r in enumerate(bench)]  # every third one wrong...
    swapped = [1 - r["label"] for r in bench]  # ...and the swapped order (in swapped terms) always right
    (tmp_path / "first.jsonl").write_text("".join(json.dumps({"output": v}) + "\n" for v in first))
    (tmp_path / "swapped.jsonl").write_text("".join(json.dumps({"output": v}) + "\n" for v in swapped))
    spec = {
        "critics": [
            {
                "name": "judge",
                "recorded": {
                    "benchmark": f"generic:{tmp_path / 'bench.jsonl'}",
                    "verdicts": str(tmp_path / "first.jsonl"),
                    "swapped": str(tmp_path / "swapped.jsonl"),
                },
            }
        ]
    }
    (tmp_path / "rec.yaml").write_text(json.dumps(spec))
    argv = [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        str(tmp_path / "rec.yaml"),
        "--target-agreement",
        "0.8",
        "--delta",
        "0.2",
        "--min-rows",
        "5",
        "--output",
        str(tmp_path / "cal.json"),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "judge (recorded): threshold 1, keeps 8 of its 12 rows" in printed  # both orders agree on 8
    argv = [
        "compare",
        "--data",
        str(data),
        "--cascade",
        str(tmp_path / "rec.yaml"),
        "--calibration",
        str(tmp_path / "cal.json"),
        "--output",
        str(tmp_path / "out.jsonl"),
    ]
    assert main(argv) == 0
    assert "judge: asked 12, decided 8 (66.7% of rows), threshold 1; verdicts read from files, not computed" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.update(format="other"), "not a calibration file of format"),
        (lambda c: c.update(alpha=float("nan")), "alpha must be a finite number"),
        (lambda c: c["critics"][0].update(threshold=1.5), "critics[0].threshold must lie in [0, 1]"),
        (lambda c: c["critics"][0].update(logistic=[1.0]), "critics[0].logistic must be [slope, intercept]"),
        (lambda c: c["critics"][0].pop("fingerprint"), "malformed calibration file"),
    ],
)
def test_a_broken_calibration_file_is_one_clear_error_naming_it(tmp_path, change, message):
    from dataclasses import asdict

    from hf_critic.selective import CalibrationFile, CriticThreshold

    good = CalibrationFile(
        "pairwise",
        "pairwise_reference_free",
        0.2,
        0.1,
        30,
        {"rows": 3},
        [CriticThreshold("a", "f" * 16, "votes", 1.0, 30, 1, 0.1, 0.1, 40, 0.75)],
    )
    raw = asdict(good)
    change(raw)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(raw, allow_nan=True), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        load_calibration(path)
    assert str(path) in str(err.value)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="invalid JSON"):
        load_calibration(path)
