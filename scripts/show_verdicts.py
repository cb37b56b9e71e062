"""Print the verdict of every row of critique files (``make demo``): expected score or label, and the verdict mass.

python scripts/show_verdicts.py outputs/demo/*.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LABELS = {0: "response 1", 1: "response 2", 2: "tie", None: "no verdict"}


def main(paths: list[str]) -> None:
    for path in paths:
        print(Path(path).name)
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            question = " ".join(str(row.get("question", "")).split())[:60]
            if "critique_score" in row:
                score = row["critique_score"]
                verdict = "no verdict" if score is None else f"score {score:.2f}"
            else:
                verdict = LABELS[row.get("critique_label")]
            mass = row.get("critique_verdict_mass")
            extra = f" (verdict mass {mass:.2f})" if mass is not None else ""
            print(f"  {verdict:<12} [{row.get('critique_status')}]{extra}  {question}")


if __name__ == "__main__":
    main(sys.argv[1:])
