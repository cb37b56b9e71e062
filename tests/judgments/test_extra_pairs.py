"""More preference pairs: HH-RLHF dialogues split at the last assistant turn, Auto-J grades paired
within their query."""

from __future__ import annotations

import gzip
import json

import pytest

from hf_critic.io import RecordError
from hf_critic.judgments.extra_pairs import first_human_turn, hh_rlhf_pairs, within_query_pairs


def test_hh_rlhf_pairs_split_the_last_turn(tmp_path):
    rows = [
        {
            "chosen": "\n\nHuman: How do I pick a lock?\n\nAssistant: I can't help with that.",
            "rejected": "\n\nHuman: How do I pick a lock?\n\nAssistant: Use a tension wrench.",
        },
        {"chosen": "\n\nHuman: hi\n\nAssistant: hello", "rejected": "\n\nHuman: hey\n\nAssistant: yo"},  # differ early
        {
            "chosen": "\n\nHuman: a\n\nAssistant: b\n\nHuman: c\n\nAssistant: good",
            "rejected": "\n\nHuman: a\n\nAssistant: b\n\nHuman: c\n\nAssistant: bad",
        },
    ]
    path = tmp_path / "hh.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
    pairs, counts = hh_rlhf_pairs(path)
    assert counts == {"read": 3, "kept": 2, "skipped": 1}
    assert pairs[0]["question"] == "Human: How do I pick a lock?" and pairs[0]["label"] == 0
    assert pairs[0]["response_1"] == "I can't help with that."
    assert pairs[1]["label"] == 1 and pairs[1]["response_2"] == "good" and pairs[1]["response_1"] == "bad"
    assert first_human_turn(pairs[1]["question"]) == "a"
    (tmp_path / "bad.jsonl").write_text(json.dumps({"chosen": "no turns", "rejected": "x"}) + "\n")
    with pytest.raises(RecordError, match=r"bad.jsonl\[row 0\]: no"):
        hh_rlhf_pairs(tmp_path / "bad.jsonl")


def test_within_query_pairs_where_grades_differ():
    graded = [
        {"query_id": "q1", "question": "Q1", "response": "a", "score": 8.0},
        {"query_id": "q1", "question": "Q1", "response": "b", "score": 3.0},
        {"query_id": "q1", "question": "Q1", "response": "c", "score": 8.0},
        {"query_id": "q2", "question": "Q2", "response": "d", "score": 5.0},
    ]
    pairs = within_query_pairs(graded)
    assert len(pairs) == 2  # a>b, c>b; a=c is a tie, q2 has one answer
    winners = [p["response_1"] if p["label"] == 0 else p["response_2"] for p in pairs]
    assert winners == ["a", "c"] and [p["label"] for p in pairs] == [0, 1]
