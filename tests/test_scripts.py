"""The helper scripts under scripts/ that the README's commands run on critique files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / script), *map(str, files)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_length_baseline_on_compare_and_grade_files(tmp_path):
    pairs = _write(tmp_path / "pairs.jsonl", [
        {"response_1": "a b c", "response_2": "a", "label": 0},  # longer is response 1: right
        {"response_1": "a", "response_2": "a b", "label": 0},  # longer is response 2: wrong
        {"response_1": "a", "response_2": "a b", "label": 2},  # a tie: never right (it never says tie)
        {"response_1": "a", "response_2": "a b c d", "label": 1},  # right
    ])  # fmt: skip
    graded = _write(tmp_path / "graded.jsonl", [
        {"query_id": "1", "response": "a b c", "human_score": 9}, {"query_id": "1", "response": "a", "human_score": 2},
        {"query_id": "2", "response": "a b c", "human_score": 1}, {"query_id": "2", "response": "a", "human_score": 5},
        {"query_id": "2", "response": "a b", "human_score": None},
    ])  # fmt: skip
    out = _run("length_baseline.py", pairs, graded)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first == ("pairs.jsonl: longer response wins: first order agreement 50.00 over 4 pairs, "
                     "two-way accuracy 66.67 over 3 pairs")  # fmt: skip
    assert second.startswith("graded.jsonl: length as the score: within-question accuracy 50.0% over 2 pairs")
    bad = _write(tmp_path / "other.jsonl", [{"x": 1}])
    assert _run("length_baseline.py", bad).returncode == 2
