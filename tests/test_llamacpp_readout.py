"""The llama.cpp probability read-out walks each row on one slot (issue 28), and its verdicts are those of before.

Fast: a stand-in for llama.cpp's in-process server records every request; each row's walk must stay on one slot
(``id_slot``), no slot serves two requests at once, and the verdict probabilities equal those of the walk done round
by round over all rows (the read-out before issue 28) on the same answers. Slow: the embedded GGUF gives the same
verdict distributions both ways, within llama.cpp's run-to-run tolerance.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import pytest

from hf_critic import models
from hf_critic.backends.llamacpp import LlamaCppBackend
from hf_critic.prompts import get_template
from hf_critic.schema import Setting, Task
from hf_critic.verdicts import walk_top_logprobs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
VERDICTS = [str(v) for v in range(1, 11)]


def _top(row: int, text: str) -> list[dict]:
    """A made-up next-token distribution per (row, text): at the verdict position ``"1"``, ``" "``, a digit and
    ``"<|im_end|>"``; after ``"1"`` a ``"0"`` (the verdict ``"10"``) or ``"]]"``; after ``" "`` a digit."""
    digit = str(row % 9 + 2)
    table = {
        "Rating: [[": [("1", 0.4), (" ", 0.1), (digit, 0.3), ("", 0.2)],
        "Rating: [[1": [("0", 0.3 + row / 100), ("]]", 0.7 - row / 100)],
        "Rating: [[ ": [(digit, 0.9), ("1", 0.1)],
        "Rating: [[ 1": [("]]", 1.0)],
    }
    return [{"token": t, "logprob": math.log(p), "bytes": list(t.encode()), "id": i} for i, (t, p) in
            enumerate(table[text])]  # fmt: skip


class FakeServer:
    """Answers chat completions from :func:`_top`, records ``(row, text, slot)`` and checks slot exclusivity."""

    def __init__(self):
        self.calls, self.busy, self.lock = [], set(), threading.Lock()

    def handle_chat_completions(self, body):
        row = int(body["messages"][0]["content"])
        text, slot = body["messages"][-1]["content"], body.get("id_slot")
        with self.lock:
            assert slot not in self.busy, f"slot {slot} asked twice at once"
            self.busy.add(slot)
            self.calls.append((row, text, slot))
        time.sleep(0.002)  # let the threads interleave
        with self.lock:
            self.busy.discard(slot)
        return {"choices": [{"logprobs": {"content": [{"top_logprobs": _top(row, text)}]}}]}


def _fake_backend(parallel: int) -> LlamaCppBackend:
    backend = object.__new__(LlamaCppBackend)  # no model: the server is the stand-in
    backend.server, backend.parallel, backend.progress = FakeServer(), parallel, False
    backend.top_logprobs, backend.path = 4, Path("fake.gguf")
    return backend


@pytest.mark.parametrize("parallel", [1, 3])
def test_each_row_walks_on_one_slot_and_gives_the_round_by_round_verdicts(parallel):
    backend = _fake_backend(parallel)
    conversations = [[{"role": "user", "content": str(row)}] for row in range(7)]
    ours = backend.verdict_probabilities(conversations, ["Rating: [["] * 7, VERDICTS)
    calls = backend.server.calls
    slots = {row: {slot for r, _, slot in calls if r == row} for row in range(7)}
    assert all(len(s) == 1 for s in slots.values()), slots  # the whole walk of a row on one slot
    assert set().union(*slots.values()) <= set(range(parallel))
    # each row asks its read-out position, then extends "1" and " " (and " 1"), each once
    assert sorted(t for r, t, _ in calls if r == 0) == ["Rating: [[", "Rating: [[ ", "Rating: [[ 1", "Rating: [[1"]

    def round_by_round(positions):
        return [_top(row, "Rating: [[" + text) for row, text in positions]

    before = walk_top_logprobs(round_by_round, 7, VERDICTS)
    for row, (a, b) in enumerate(zip(ours, before, strict=True)):
        assert a.probabilities == pytest.approx(b.probabilities, abs=1e-12) and a.unseen == b.unseen
        assert a.probabilities["10"] == pytest.approx(0.4 * (0.3 + row / 100))
    assert ours[0].probabilities["2"] == pytest.approx(0.3 + 0.1 * 0.9)


def test_an_error_answered_by_llamacpp_names_the_file():
    backend = _fake_backend(2)
    backend.server.handle_chat_completions = lambda body: {"error": {"message": "the prompt is too long"}}
    with pytest.raises(RuntimeError, match=r"llama.cpp \(fake.gguf\): the prompt is too long"):
        backend.verdict_probabilities([[{"role": "user", "content": "0"}]], ["Rating: [["], VERDICTS)
    with pytest.raises(ValueError, match="one continuation per conversation"):
        backend.verdict_probabilities([[{"role": "user", "content": "0"}]], [], VERDICTS)


@pytest.mark.slow
def test_the_embedded_gguf_reads_the_same_verdicts_as_before():
    """The read-out of issue 28 (one slot per row's walk) against the walk round by round over all rows with any
    free slot (before), on the demo records: llama.cpp's batches differ between the two, so its log-probabilities
    move by a few hundredths from run to run (measured: up to 0.034 on 16 MT-Bench rows); the distributions agree
    within 0.05 and the mass on the verdicts within 0.05."""
    pytest.importorskip("xllamacpp")
    template = get_template("mtbench", Setting(Task.POINTWISE, referenced=False), "en")
    rows = [json.loads(line) for line in (EXAMPLES / "pointwise_reference_free.jsonl").read_text().splitlines()]
    conversations = [template.render(r) for r in rows]
    backend = LlamaCppBackend(models.default_gguf_file(), parallel=2, threads=1, progress=False)
    try:
        ours = backend.verdict_probabilities(conversations, ["Rating: [["] * len(rows), VERDICTS)

        def round_by_round(positions):
            return [backend.next_token_logprobs(conversations[row], "Rating: [[" + text) for row, text in positions]

        before = walk_top_logprobs(round_by_round, len(rows), VERDICTS)
    finally:
        backend.close()
    for a, b in zip(ours, before, strict=True):
        assert a.mass > 0.5 and abs(a.mass - b.mass) < 0.05
        assert max(abs(a.probabilities[v] - b.probabilities[v]) for v in VERDICTS) < 0.05
