"""More preference pairs for reward training: Anthropic's HH-RLHF harmlessness pairs and Auto-J's
GPT-4 grades turned into within-query pairs, decontaminated against the evaluation sets like the published judgments.

* :func:`hh_rlhf_pairs`: ``hh_rlhf/harmless-base-test.jsonl.gz`` (Bai et al. 2022, MIT): each row holds two whole
  dialogues (``\\n\\nHuman: ... \\n\\nAssistant: ...``) that differ only in the last assistant turn; the question is
  the dialogue before it, the two responses the two last turns, the human-preferred one the winner;
* :func:`within_query_pairs`: graded responses (the ``pointwise_reference_free`` config: Auto-J's 960 critiques)
  paired within their query wherever GPT-4's grades differ, the higher grade the winner (a tie is no pair).

Rows have the ``pairwise_preference`` columns :func:`hf_critic.training.reward.preference_pairs` reads
(``question``, ``response_1``, ``response_2``, ``label`` 0 / 1, ``preference`` None, ``swapped`` False) plus
``query_id`` and ``source``; the winner alternates between positions.
"""

from __future__ import annotations

import gzip
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

from ..core.schema import query_id
from ..io import RecordError, json_line

__all__ = [
    "HH_RLHF_SOURCE",
    "WITHIN_QUERY_SOURCE",
    "first_human_turn",
    "hh_rlhf_pairs",
    "pair_row",
    "within_query_pairs",
]

HH_RLHF_SOURCE = "hh_rlhf_harmless_base"
WITHIN_QUERY_SOURCE = "autoj_single_within_query"
_ASSISTANT = "\n\nAssistant:"


def pair_row(question: str, winner: str, loser: str, index: int, source: str) -> dict[str, Any]:
    """One preference row, the winner first for even ``index`` and second for odd."""
    first = index % 2 == 0
    return {
        "query_id": query_id(question),
        "question": question,
        "response_1": winner if first else loser,
        "response_2": loser if first else winner,
        "label": 0 if first else 1,
        "preference": None,
        "swapped": False,
        "source": source,
    }


def first_human_turn(dialogue: str) -> str:
    """The first ``Human:`` turn of an HH-RLHF dialogue (what decontamination matches a benchmark question with)."""
    text = dialogue.strip()
    text = text[len("Human:") :] if text.startswith("Human:") else text
    return text.split(_ASSISTANT, 1)[0].split("\n\nHuman:", 1)[0].strip()


def _split_last_turn(dialogue: str, where: str) -> tuple[str, str]:
    at = dialogue.rfind(_ASSISTANT)
    if at < 0:
        raise RecordError(f"{where}: no '\\n\\nAssistant:' turn in the dialogue")
    return dialogue[:at].strip(), dialogue[at + len(_ASSISTANT) :].strip()


def hh_rlhf_pairs(path: str | os.PathLike) -> tuple[list[dict], dict[str, int]]:
    """HH-RLHF pairs from a ``.jsonl.gz`` / ``.jsonl`` of ``chosen`` / ``rejected`` dialogues.

    Returns:
        ``(rows, counts)``: rows as :func:`pair_row` writes them (question: the dialogue before the last assistant
        turn, as published, ``Human:`` / ``Assistant:`` markers included); counts ``read``, ``kept``, ``skipped``
        (the two dialogues differ before the last turn, or their last turns are equal).

    Raises:
        RecordError: a row without ``chosen`` / ``rejected`` or without an assistant turn (names file and row).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    rows, skipped = [], 0
    with opener(path, "rt", encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()]
    for i, line in enumerate(lines):
        where = f"{path}[row {i}]"
        raw = json_line(line, where)
        if not isinstance(raw.get("chosen"), str) or not isinstance(raw.get("rejected"), str):
            raise RecordError(f"{where}: 'chosen' and 'rejected' must be dialogue strings")
        (question, chosen), (other, rejected) = (_split_last_turn(raw[k], where) for k in ("chosen", "rejected"))
        if question != other or chosen == rejected or not question:
            skipped += 1
            continue
        rows.append(pair_row(question, chosen, rejected, len(rows), HH_RLHF_SOURCE))
    return rows, {"read": len(lines), "kept": len(rows), "skipped": skipped}


def within_query_pairs(graded: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Every pair of one query's graded responses whose grades differ, the higher grade the winner.

    Args:
        graded: rows with ``query_id``, ``question``, ``response`` and ``score``.

    Returns:
        Rows as :func:`pair_row` writes them, queries in first-seen order.
    """
    by_query: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in graded:
        by_query[row["query_id"]].append(row)
    out = []
    for rows in by_query.values():
        for a, b in combinations(rows, 2):
            if a["score"] == b["score"] or a["response"] == b["response"]:
                continue
            winner, loser = (a, b) if a["score"] > b["score"] else (b, a)
            out.append(pair_row(a["question"], winner["response"], loser["response"], len(out), WITHIN_QUERY_SOURCE))
    return out
