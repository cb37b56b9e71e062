"""Print the verdict of every row of critique files (``make demo``), and whether it matches the known better answer.

python scripts/show_verdicts.py outputs/demo/*.jsonl

Pointwise rows whose ids end in ``-good`` / ``-bad`` are twins (same question): the good one must score higher.
Pairwise rows with a ``label`` column (0 = response 1 better, 1 = response 2 better) must get that label. The last
line counts the verdicts that match.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LABELS = {0: "response 1", 1: "response 2", 2: "tie", None: "no verdict"}


def _mark(ok: bool | None) -> str:
    return {True: "right", False: "WRONG", None: ""}[ok]


def _twins(rows: list[dict]) -> dict[str, bool | None]:
    """``{question id: good scored above bad}`` for rows whose ids end in -good / -bad (None when unscored)."""
    scores: dict[str, dict[str, float | None]] = {}
    for row in rows:
        stem, _, kind = str(row.get("id", "")).rpartition("-")
        if kind in ("good", "bad"):
            scores.setdefault(stem, {})[kind] = row.get("critique_score")
    return {
        stem: None if None in (s.get("good"), s.get("bad")) else s["good"] > s["bad"]
        for stem, s in scores.items()
        if len(s) == 2
    }


def main(paths: list[str]) -> int:
    right = total = 0
    for path in paths:
        print(Path(path).name)
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        twins = _twins(rows)
        for row in rows:
            question = " ".join(str(row.get("question", "")).split())[:60]
            ok = None
            if "critique_score" in row:
                score = row["critique_score"]
                verdict = "no verdict" if score is None else f"score {score:.2f}"
                stem, _, kind = str(row.get("id", "")).rpartition("-")
                ok = twins.get(stem) if kind == "good" else None
            else:
                verdict = LABELS[row.get("critique_label")]
                if row.get("label") in (0, 1):
                    ok = row.get("critique_label") == row["label"]
            mass = row.get("critique_verdict_mass")
            extra = f" (verdict mass {mass:.2f})" if mass is not None else ""
            note = f"  good above its bad twin: {_mark(ok)}" if "critique_score" in row and ok is not None else ""
            note = note or (f"  {_mark(ok)}" if ok is not None else "")
            print(f"  {verdict:<12} [{row.get('critique_status')}]{extra}  {question}{note}")
            if ok is not None:
                right, total = right + ok, total + 1
    print(f"{right} of {total} verdicts match the known better answer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
