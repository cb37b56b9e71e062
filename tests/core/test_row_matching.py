"""Rows of two files matched exactly (hf_critic.core.matching): recorded verdicts and meta-eval's critique files pair rows by
id only where the id holds the same pair in both, else by their text after whitespace normalisation only (no Unicode
folding); every unmatched or conflicting row is counted and named."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import datasets
import numpy as np
import pytest

from hf_critic.cli import main
from hf_critic.commands import meta_eval
from hf_critic.core import schema
from hf_critic.core.matching import id_conflicts, name_rows, text_identity
from tests.selective.test_selective_claims import recorded_cascade


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------ the identity
def test_text_identity_normalises_whitespace_only():
    assert text_identity("Factor  x² +\n2x + 1 ", "a") == text_identity("Factor x² + 2x + 1", "a")
    assert text_identity("Factor x² + 2x + 1", "a") != text_identity("Factor x2 + 2x + 1", "a")  # NFKC would fold
    assert text_identity("ＡＢＣ", "a") != text_identity("ABC", "a")  # full-width letters are other text
    assert text_identity("Abc", "a") != text_identity("abc", "a")
    assert text_identity("a b", "c") != text_identity("a", "b c")  # the texts' boundaries count
    assert text_identity(None, "x") == text_identity("", "x")


def test_rows_are_named_by_id_else_by_position():
    assert name_rows([]) == ""
    assert name_rows([3]) == "row 3"
    assert name_rows([0, 2], ["x", "y", "z"]) == "ids 'x', 'z'"
    assert name_rows(list(range(8)), limit=5) == "rows 0, 1, 2, 3, 4 and 3 more"
    assert id_conflicts([(0, 1), (1, 0)], ["k1", "k2"], ["k2", "k9"]) == [0]  # a[0] is k1, its b row k9


# ------------------------------------------------------------------------------------- recorded verdicts
def recorded(tmp_path: Path, bench: list[dict], verdicts: list[int]):
    from hf_critic.selective.cascade import RecordedVerdicts

    path = write_jsonl(tmp_path / "verdicts.jsonl", [{"output": v} for v in verdicts])
    return RecordedVerdicts.from_verdict_files("judge", datasets.Dataset.from_list(bench), str(path))


def test_recorded_verdicts_for_x_squared_do_not_decide_x2(tmp_path):
    """Before: NFKC folding made "x²" and "x2" one pair, and the verdict recorded for one decided the other."""
    bench = [
        {"question": "Factor x² + 2x + 1.", "response_1": "(x+1)²", "response_2": "x(x+2)+1"},
        {"question": "Capital of France?", "response_1": "Paris", "response_2": "Lyon"},
    ]
    critic = recorded(tmp_path, bench, [0, 0])
    data = datasets.Dataset.from_list(
        [
            {"question": "Factor x2 + 2x + 1.", "response_1": "(x+1)2", "response_2": "x(x+2)+1"},
            {
                "question": "Capital  of France?\n",
                "response_1": "Paris",
                "response_2": "Lyon",
            },  # only whitespace differs
        ]
    )
    columns, unmatched, conflicting = critic.compare(data)
    assert columns[schema.CRITIQUE_LABEL] == [None, 0] and unmatched == [0] and conflicting == []
    assert columns[schema.CRITIQUE_STATUS] == ["skipped", "ok"]


def test_recorded_ids_holding_other_pairs_are_refused_counted_and_named(tmp_path):
    bench = [{"id": f"q{i}", "question": f"Question {i}?", "response_1": "a", "response_2": "b"} for i in range(4)]
    critic = recorded(tmp_path, bench, [0, 1, 0, 1])
    data = datasets.Dataset.from_list(
        [
            {**bench[0]},
            {**bench[2], "id": "q1"},
            {**bench[1], "id": "q2"},
            {**bench[3], "question": "Another question?"},
        ]
    )
    with pytest.raises(
        ValueError,
        match=r"verdicts\.jsonl: 3 of the 4 ids found in both hold another pair in the "
        r"recorded verdicts than in the data \(ids 'q1', 'q2', 'q3'\)",
    ):
        critic.compare(data)
    fine = datasets.Dataset.from_list([{**bench[2]}, {**bench[0], "id": "new"}])
    columns, unmatched, _ = critic.compare(fine)
    assert columns[schema.CRITIQUE_LABEL] == [0, None] and unmatched == [1]  # an id only the data has: unmatched


def test_compare_with_a_cascade_names_the_rows_a_recorded_critic_lacks(tmp_path, capsys):
    rows = [
        {
            "id": f"r{i}",
            "question": f"Question {i}?",
            "response_1": f"answer {i} one",
            "response_2": f"answer {i} two",
            "label": i % 2,
        }
        for i in range(12)
    ]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    cascade = recorded_cascade(tmp_path, rows[:9], [r["label"] for r in rows[:9]])
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
        str(tmp_path / "cal.json"),
    ]
    assert main(argv) == 0
    assert "judge: the rows not in its files: ids 'r9', 'r10', 'r11'" in capsys.readouterr().out
    argv = [
        "compare",
        "--data",
        str(data),
        "--cascade",
        str(cascade),
        "--calibration",
        str(tmp_path / "cal.json"),
        "--output",
        str(tmp_path / "out.jsonl"),
    ]
    assert main(argv) == 0
    assert "3 rows not in its files (ids 'r9', 'r10', 'r11')" in capsys.readouterr().out


# ------------------------------------------------------------------------------- meta-eval: two critique files
def critique_rows(questions: list[str], ids: list | None = None) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for i, q in enumerate(questions):
        label = int(rng.integers(0, 2))
        row = {
            "question": q,
            "response_1": f"one {i}",
            "response_2": f"two {i}",
            "label": label,
            schema.CRITIQUE_LABEL: label,
        }
        rows.append({**({"id": ids[i]} if ids else {}), **row})
    return rows


def meta_eval_argv(a: Path, b: Path, out: Path) -> list[str]:
    """``hf-critic meta-eval`` comparing the critique files ``a`` and ``b`` (critics a and b on one dataset)."""
    return [
        "meta-eval",
        "--critiques",
        f"a/bench={a}",
        "--critiques",
        f"b/bench={b}",
        "--output-dir",
        str(out),
        "--no-plots",
        "--paired-resamples",
        "100",
    ]


def meta_eval_args(tmp_path: Path, a: Path, b: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    meta_eval.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(meta_eval_argv(a, b, tmp_path / "out"))


def test_meta_eval_refuses_critique_files_whose_ids_hold_other_pairs(tmp_path, capsys):
    """Before: "[6 rows matched by id]" and figures over pairs that were never the same."""
    ids = [str(i) for i in range(6)]
    a = write_jsonl(tmp_path / "a.jsonl", critique_rows([f"Question {i}?" for i in range(6)], ids))
    b = write_jsonl(tmp_path / "b.jsonl", critique_rows([f"Other question {i}?" for i in range(6)], ids))
    args = meta_eval_args(tmp_path, a, b)
    with pytest.raises(
        ValueError,
        match=r"^bench: a vs b: 6 of the 6 rows paired by id hold another question or "
        r"other responses in each file \(ids '0', '1', '2', '3', '4' and 1 more\)",
    ):
        args.func(args)
    assert not (tmp_path / "out" / "report.md").exists()  # refused before the report is written
    assert main(meta_eval_argv(a, b, tmp_path / "cli")) == 2
    assert "6 of the 6 rows paired by id hold another question" in capsys.readouterr().err


def test_meta_eval_pairs_rows_by_exact_text_and_names_the_unmatched(tmp_path):
    questions = [f"Question {i}?" for i in range(40)]
    folded = [q if i != 7 else "Factor x2 + 2x + 1." for i, q in enumerate(questions)]
    questions[7] = "Factor x² + 2x + 1."
    spaced = [q if i != 3 else f"  {q}\n" for i, q in enumerate(folded)]  # whitespace alone: the same row
    a = write_jsonl(tmp_path / "a.jsonl", critique_rows(questions))
    b = write_jsonl(tmp_path / "b.jsonl", critique_rows(spaced))
    args = meta_eval_args(tmp_path, a, b)
    assert args.func(args) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    (entry,) = [c for c in report["paired"] if (c["a"], c["b"]) == ("a", "b")]
    assert entry["rows"] == 39 and entry["unmatched"] == [1, 1]
    assert entry["line"].endswith(
        "[39 rows matched by content; 1 of A's and 1 of B's rows unmatched (A: row 7; B: row 7)]"
    )
