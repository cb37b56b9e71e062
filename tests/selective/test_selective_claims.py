"""Selective judging says nothing silently wrong: a calibration file is a claim checked field by
field; NaN, None and out-of-range confidences are never kept; abstained is its own status for meta-eval, calibrate and
the split report; recorded verdicts of one order carry a constant confidence, are matched by id or (text,
occurrence), and say which rows they lack; calibrate reads every layout meta-eval reads."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import datasets
import numpy as np
import pytest

from hf_critic.cli import main
from hf_critic.core import schema
from hf_critic.selective import cascade_decisions, load_calibration, split_protocol

ROWS = 12


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def pair_rows() -> list[dict]:
    """Pairs whose better answer alternates: label 0 on even rows, 1 on odd ones."""
    return [
        {
            "id": f"r{i}",
            "question": f"Question {i}?",
            "response_1": f"answer {i} one",
            "response_2": f"answer {i} two",
            "label": i % 2,
        }
        for i in range(ROWS)
    ]


def recorded_cascade(tmp_path: Path, bench: list[dict], first: list, swapped: list | None = None, **extra) -> Path:
    """A cascade file of one recorded critic ``judge`` over ``bench`` (a generic benchmark), verdict files written."""
    write_jsonl(tmp_path / "bench.jsonl", bench)
    write_jsonl(tmp_path / "first.jsonl", [{"output": v} for v in first])
    recorded = {"benchmark": f"generic:{tmp_path / 'bench.jsonl'}", "verdicts": str(tmp_path / "first.jsonl"), **extra}
    if swapped is not None:
        write_jsonl(tmp_path / "swapped.jsonl", [{"output": v} for v in swapped])
        recorded["swapped"] = str(tmp_path / "swapped.jsonl")
    path = tmp_path / "cascade.yaml"
    path.write_text(json.dumps({"critics": [{"name": "judge", "recorded": recorded}]}), encoding="utf-8")
    return path


def calibrate(data: Path, cascade: Path, out: Path, *extra: str, target: str = "0.8") -> int:
    argv = [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        str(cascade),
        "--target-agreement",
        target,
        "--delta",
        "0.2",
        "--min-rows",
        "5",
        "--output",
        str(out),
        *extra,
    ]
    return main(argv)


# ------------------------------------------------------------------------------ item 1: a calibration is a claim
@pytest.fixture
def written_calibration(tmp_path) -> dict:
    """A calibration ``hf-critic calibrate`` wrote: a two-order judge agreeing with itself on 8 of 12 rows (all
    right there), wrong in its first order on every third row."""
    bench = pair_rows()
    first = [r["label"] if i % 3 else 1 - r["label"] for i, r in enumerate(bench)]
    swapped = [1 - r["label"] for r in bench]  # swapped terms: always right
    cascade = recorded_cascade(tmp_path, bench, first, swapped)
    data = write_jsonl(tmp_path / "data.jsonl", bench)
    assert calibrate(data, cascade, tmp_path / "cal.json") == 0
    raw = json.loads((tmp_path / "cal.json").read_text())
    assert raw["critics"][0]["threshold"] == 1.0 and raw["critics"][0]["failed"]["threshold"] == 0.5
    load_calibration(tmp_path / "cal.json")  # what calibrate writes adds up
    return raw


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["critics"][0].update(threshold=0.0), "threshold 0.0 is not the one its selection implies"),
        (lambda c: c.update(alpha=0.01), "exceeds alpha 0.01"),
        (lambda c: c.update(alpha=0.5), "so fixed-sequence testing would not stop at threshold 1.0"),
        (lambda c: c.update(delta=0), "delta must lie in (0, 0.5]"),
        (lambda c: c.update(delta=0.1), "deltas [0.2] must be positive and sum to the cascade's delta 0.1"),
        (lambda c: c["critics"][0].update(n=10, coverage=10 / 12), "upper_bound"),
        (lambda c: c["critics"][0].update(upper_bound=0.01), "is not the exact bound of k=0 of n=8"),
        (lambda c: c["critics"][0].update(coverage=1.0), "coverage 1.0 is not n / data.rows"),
        (lambda c: c["critics"][0].update(calibration_rows=20), "calibration_rows 20 is not the 12 rows"),
        (lambda c: c["data"].update(rows=20), "calibration_rows 12 is not the 20 rows"),
        (lambda c: c["critics"][0].update(k=9), "k <= n"),
        (lambda c: c["critics"][0]["failed"].update(k=0), "is not the exact bound"),
        (lambda c: c.update(format="hf-critic-calibration/1"), "calibrate again"),
    ],
)
def test_a_calibration_whose_fields_do_not_add_up_is_refused_with_one_line(
    written_calibration, tmp_path, change, message
):
    change(written_calibration)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(written_calibration), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        load_calibration(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_nan_none_out_of_range_and_labelless_confidences_are_never_kept_and_are_counted(tmp_path, capsys):
    from hf_critic.selective import CalibrationFile, CriticThreshold
    from hf_critic.selective.cascade import CascadeStage, RecordedVerdicts, critic_fingerprint, run_cascade

    rows = pair_rows()[:6]
    earlier = datasets.Dataset.from_list(
        [
            {**r, schema.CRITIQUE_LABEL: lab, schema.CRITIQUE_CONFIDENCE: conf}
            for r, lab, conf in zip(rows, [0, 1, 0, 1, None, 1], [1.0, math.nan, 1.5, None, 1.0, -0.2], strict=True)
        ]
    )
    source = write_jsonl(tmp_path / "earlier.jsonl", [])  # the file the verdicts stand for (its digest: the identity)
    stage = CascadeStage("earlier", RecordedVerdicts("earlier", earlier, [str(source)], published=False))
    setting = schema.Setting(schema.Task.PAIRWISE, False)
    entry = CriticThreshold("earlier", critic_fingerprint(stage, setting), "votes", 0.5, 30, 0, 0.1, 0.1, 40, 0.75)
    result = run_cascade([stage], rows, CalibrationFile("pairwise", setting.name, 0.2, 0.1, 1, {}, [entry]))
    assert result.critiques[schema.CRITIQUE_STATUS] == ["ok"] + ["abstained"] * 5  # only the one usable confidence
    assert result.critiques[schema.CRITIQUE_LABEL] == [0, None, None, None, None, None]
    assert "5 of 6 rows without a usable confidence (never kept)" in "\n".join(result.summary_lines())
    # the arrays behind calibration and the split protocol: NaN and 1.5 keep nothing at any threshold
    assert cascade_decisions([[math.nan, 1.5, 0.9, None, -1.0]], [0.5]).tolist() == [-1, -1, 0, -1, -1]


# ---------------------------------------------------------------------------- item 2: abstained is its own status
def test_meta_eval_counts_abstained_rows_apart_and_reports_agreement_on_the_decided_rows_beside_coverage(tmp_path):
    from hf_critic.meta_eval import compare_critics, evaluate_critiques
    from hf_critic.reports.meta_eval_report import write_report

    rows = pair_rows()[:10]
    labels = [r["label"] for r in rows[:5]] + [1 - rows[5]["label"]] + [None] * 4  # 5 of 6 decided right
    statuses = ["ok"] * 6 + ["abstained"] * 4
    data = datasets.Dataset.from_list(
        [
            {**r, schema.CRITIQUE_LABEL: lab, schema.CRITIQUE_STATUS: s}
            for r, lab, s in zip(rows, labels, statuses, strict=True)
        ]
    )
    result = evaluate_critiques(data, "cascade", "pairs", category=None)
    assert result.metrics["first_order_agreement"] == pytest.approx(5 / 6)
    assert (result.n_unparsed, result.n_abstained, result.n_rows) == (0, 4, 6)
    assert result.metrics["coverage"] == pytest.approx(0.6)
    report = Path(
        write_report([result], tmp_path / "report", plots=False, paired=compare_critics([result]))["markdown"]
    ).read_text()
    assert "Coverage (decided rows)" in report and "| 6 | 0 / 6 | 0.00 | 4 | 60.00 |" in report
    everything = data.map(lambda r: {schema.CRITIQUE_STATUS: "abstained", schema.CRITIQUE_LABEL: None})
    with pytest.raises(ValueError, match="all 10 rows were abstained"):
        evaluate_critiques(everything, "cascade", "pairs", category=None)


def test_splits_that_keep_nothing_are_counted_apart_never_as_successes():
    rng = np.random.default_rng(0)
    confidence = np.ones((1, 200))  # one confidence level: kept whole or not at all
    correct = rng.uniform(size=(1, 200)) < 0.8  # 80% right: a 0.85 target fails on every calibration half
    result = split_protocol(confidence, correct, alpha=0.15, delta=0.1, splits=40, seed=0)
    assert result["empty_splits"] == 40 and result["success_rate"] is None and result["successes"] == 0
    result = split_protocol(confidence, correct, alpha=0.4, delta=0.1, splits=40, seed=0)
    assert result["empty_splits"] == 0 and result["success_rate"] == result["successes"] / 40


# ----------------------------------------------------------------------------------- item 3: recorded verdicts
def test_one_order_of_recorded_verdicts_gives_a_constant_confidence_not_an_abstention(tmp_path, capsys):
    bench = pair_rows()
    cascade = recorded_cascade(tmp_path, bench, [r["label"] for r in bench])  # no swapped file: one order
    data = write_jsonl(tmp_path / "data.jsonl", bench)
    assert calibrate(data, cascade, tmp_path / "cal.json", target="0.75") == 0
    printed = capsys.readouterr().out
    assert "judge (constant): threshold 1, keeps 12 of its 12 rows" in printed
    assert load_calibration(tmp_path / "cal.json").critics[0].confidence == "constant"


def test_recorded_duplicates_are_matched_by_id_else_by_occurrence_and_refused_when_they_cannot_be_told(tmp_path):
    from hf_critic.selective.cascade import RecordedVerdicts

    twin = {"question": "Same?", "response_1": "a", "response_2": "b"}
    bench = datasets.Dataset.from_list([{**twin, "id": "x"}, {**twin, "id": "y"}, {**pair_rows()[0], "id": "z"}])
    critic = RecordedVerdicts.from_verdict_files(
        "judge", bench, str(write_jsonl(tmp_path / "v.jsonl", [{"output": 0}, {"output": 1}, {"output": 0}]))
    )
    by_id = datasets.Dataset.from_list([{**twin, "id": "y"}, {**twin, "id": "x"}])
    assert critic.compare(by_id)[0][schema.CRITIQUE_LABEL] == [1, 0]  # each copy its own verdict, by id
    both = datasets.Dataset.from_list([twin, twin])
    columns, unmatched, conflicting = critic.compare(both)
    assert columns[schema.CRITIQUE_LABEL] == [0, 1] and (unmatched, conflicting) == ([], [0, 1])  # by occurrence
    with pytest.raises(ValueError, match="recorded 2 times with different verdicts and found 1 times in the data"):
        critic.compare(datasets.Dataset.from_list([twin]))
    wrong_id = datasets.Dataset.from_list([{**pair_rows()[1], "id": "x"}])
    with pytest.raises(ValueError, match=r"1 of the 1 ids found in both hold another pair .* \(id 'x'\)"):
        critic.compare(wrong_id)


def test_calibrate_says_which_rows_a_recorded_critic_lacks_and_reads_a_generic_layout_by_flags(tmp_path, capsys):
    rows = pair_rows()
    # the user's own layout: other column names, labels spelled A / B
    data = write_jsonl(
        tmp_path / "mine.jsonl",
        [
            {
                "id": r["id"],
                "prompt": r["question"],
                "a": r["response_1"],
                "b": r["response_2"],
                "winner": "AB"[r["label"]],
            }
            for r in rows
        ],
    )
    half = [
        {"id": r["id"], "q": r["question"], "one": r["response_1"], "two": r["response_2"], "label": r["label"]}
        for r in rows[:6]
    ]
    cascade = recorded_cascade(
        tmp_path, half, [r["label"] for r in half], columns={"question": "q", "response_1": "one", "response_2": "two"}
    )
    flags = [
        "--format",
        "generic",
        "--columns",
        "question=prompt,response_1=a,response_2=b,label=winner",
        "--label-map",
        "A=response_1,B=response_2",
    ]
    assert calibrate(data, cascade, tmp_path / "cal.json", *flags, target="0.6") == 0
    printed = capsys.readouterr().out
    assert "judge: 6 of 12 rows without a usable confidence (never kept): 6 not in its files" in printed
    assert "judge (constant): threshold 1, keeps 6 of its 12 rows" in printed


def test_the_split_table_gives_the_failing_share_of_all_splits_and_marks_one_above_delta():
    from hf_critic.commands.calibrate import split_markdown

    def result(successes, empty):
        spread = {"mean": 0.5, "low": 0.1, "high": 0.9}
        return {
            "splits": 1000,
            "successes": successes,
            "empty_splits": empty,
            "success_rate": successes / (1000 - empty),
            "coverage": spread,
            "agreement": spread,
            "shares": [0.5],
            "strongest_asked": 1.0,
            "no_selection": {"agreement": 0.7},
        }

    report = {
        "critics": ["jury"],
        "splits": 1000,
        "rows": 100,
        "delta": 0.1,
        "levels": [{"target": 0.8, "cascade": result(510, 351), "plain_cutoff": result(452, 30)}],
    }
    table = split_markdown(report)
    # 649 splits kept rows, 139 of them failed: 13.9% of all splits, above delta = 10%: the guarantee does not hold
    assert "| 0.80 | jury | 78.6 (510 of 649) | 13.9 (above delta) |" in table
    assert "| 0.80 | plain cut-off (no bound) | 46.6 (452 of 970) | 51.8 |" in table  # no bound claimed: no mark
    report["levels"][0]["cascade"] = result(21, 951)  # 28 failures of 1000: 2.8%, within delta
    assert "| 0.80 | jury | 42.9 (21 of 49) | 2.8 |" in split_markdown(report)
