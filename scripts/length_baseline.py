"""The "longer response wins" baseline on critique files, beside the critic's own figures.

python scripts/length_baseline.py outputs/heldout/*.jsonl

Human and GPT-4 judges both favour longer answers, so a critic must beat length to show judgement. For files of
``hf-critic compare`` (``response_1``, ``response_2``, ``label``): the longer response (in words) as the verdict,
never a tie: three-way first-order agreement with ``label`` and two-way accuracy on the pairs whose label is not a
tie. For files of ``hf-critic grade`` (``response``, ``human_score``, ``query_id``): the length as the score:
within-question accuracy and row-level Pearson with ``human_score``. Uses the toolkit's own meta-evaluation functions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

from hf_critic.meta_eval.correlation import within_question_accuracy


def _words(text: str | None) -> int:
    return len((text or "").split())


def pairwise(rows: list[dict]) -> str:
    """``longer wins``: three-way agreement (ties count as wrong: it never says tie) and two-way accuracy, in %."""
    gold = np.array([int(r["label"]) for r in rows])
    longer = np.array([0 if _words(r["response_1"]) >= _words(r["response_2"]) else 1 for r in rows])
    decided = gold != 2
    return (
        f"longer response wins: first order agreement {100 * np.mean(longer == gold):.2f} over {len(rows)} pairs, "
        f"two-way accuracy {100 * np.mean(longer[decided] == gold[decided]):.2f} over {int(decided.sum())} pairs"
    )


def pointwise(rows: list[dict]) -> str:
    """``length as the score``: within-question accuracy (ties half) and row-level Pearson with the human score."""
    rows = [r for r in rows if r.get("human_score") is not None]
    lengths = [_words(r["response"]) for r in rows]
    human = [float(r["human_score"]) for r in rows]
    wq = within_question_accuracy(lengths, human, [r["query_id"] for r in rows])
    return (
        f"length as the score: within-question accuracy {100 * wq['within_question_accuracy']:.1f}% over "
        f"{wq['within_question_pairs']} pairs, row-level Pearson {pearsonr(lengths, human)[0]:.3f} over {len(rows)} rows"
    )


def main(paths: list[str]) -> int:
    """Print one baseline line per file; returns the exit status (2 when a file has neither shape)."""
    for path in paths:
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        if rows and {"response_1", "response_2", "label"} <= rows[0].keys():
            print(f"{Path(path).name}: {pairwise(rows)}")
        elif rows and {"response", "human_score", "query_id"} <= rows[0].keys():
            print(f"{Path(path).name}: {pointwise(rows)}")
        else:
            print(f"{path}: neither compare rows (response_1, response_2, label) nor graded rows with human_score",
                  file=sys.stderr)  # fmt: skip
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
