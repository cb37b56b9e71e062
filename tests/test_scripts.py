"""The helper scripts under scripts/ that the README's commands run on critique files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / script), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_length_baseline_on_compare_and_grade_files(tmp_path):
    pairs = _write(
        tmp_path / "pairs.jsonl",
        [
            {"response_1": "a b c", "response_2": "a", "label": 0},  # longer is response 1: right
            {"response_1": "a", "response_2": "a b", "label": 0},  # longer is response 2: wrong
            {"response_1": "a", "response_2": "a b", "label": 2},  # a tie: never right (it never says tie)
            {"response_1": "a", "response_2": "a b c d", "label": 1},  # right
        ],
    )
    graded = _write(
        tmp_path / "graded.jsonl",
        [
            {"query_id": "1", "response": "a b c", "human_score": 9},
            {"query_id": "1", "response": "a", "human_score": 2},
            {"query_id": "2", "response": "a b c", "human_score": 1},
            {"query_id": "2", "response": "a", "human_score": 5},
            {"query_id": "2", "response": "a b", "human_score": None},
        ],
    )
    out = _run("length_baseline.py", pairs, graded)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first == (
        "pairs.jsonl: longer response wins: first order agreement 50.00 over 4 pairs, "
        "two-way accuracy 66.67 over 3 pairs"
    )
    assert second.startswith("graded.jsonl: length as the score: within-question accuracy 50.0% over 2 pairs")
    bad = _write(tmp_path / "other.jsonl", [{"x": 1}])
    assert _run("length_baseline.py", bad).returncode == 2


def test_heldout_pearson_reads_grade_files_and_names_a_missing_one(tmp_path):
    """recipes/smollm2-135m step 4: Pearson of each file and pooled; an unmatched glob is one line, exit 2."""
    script = REPO_ROOT / "scripts" / "smollm2-135m" / "heldout_pearson.py"
    good = _write(tmp_path / "a.jsonl", [{"critique_score": s, "score": g} for s, g in ((1, 2), (5, 6), (9, 7))])
    done = subprocess.run([sys.executable, str(script), str(good)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pooled = done.stdout.splitlines()[-1].split()
    assert pooled[:3] == ["pooled", "3", "3"] and 0.9 < float(pooled[3]) <= 1.0
    missing = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "after_*.jsonl")], capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 2 and "after_*.jsonl: no such file" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_show_verdicts_counts_the_critic_beside_the_longer_answer(tmp_path):
    graded = _write(
        tmp_path / "graded.jsonl",
        [
            {"id": "q1-good", "question": "q1", "response": "right and long answer", "critique_score": 2.0},
            {
                "id": "q1-bad",
                "question": "q1",
                "response": "wrong",
                "critique_score": 7.0,
            },  # critic wrong, length right
            {"id": "q2-good", "question": "q2", "response": "42", "critique_score": 9.0},
            {
                "id": "q2-bad",
                "question": "q2",
                "response": "a long wrong answer",
                "critique_score": 1.0,
            },  # the reverse
        ],
    )
    pairs = _write(
        tmp_path / "pairs.jsonl",
        [
            {"response_1": "a b c", "response_2": "a", "label": 0, "critique_label": 0},  # both right
            {"response_1": "a b", "response_2": "a c", "label": 1, "critique_label": 1},  # equal lengths: length wrong
        ],
    )
    out = _run("show_verdicts.py", graded, pairs)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == (
        "3 of 4 verdicts match the known better answer (the longer answer wins: 2 of 4)"
    )
