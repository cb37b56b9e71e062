"""Read-out batches cut by padded tokens as well as rows: the cut, and outputs equal to before.

:func:`hf_critic.backends.prefill.token_batches` keeps long rows alone and short ones together; the probability
read-out over those batches must equal the read-out over batches cut by rows only (float32, a tiny model, rows of
very different lengths, with and without the shared-prefix prefill).
"""

from __future__ import annotations

import pytest

from hf_critic.backends.models import READOUT_BATCH_TOKENS
from hf_critic.backends.prefill import token_batches
from hf_critic.backends.transformers import TransformersBackend


def test_token_batches_cap_rows_and_padded_tokens():
    lengths = [900, 40, 600, 300, 35, 290, 30]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # 0, 2, 3, 5, 1, 4, 6
    assert token_batches(order, lengths, 8, None) == [order]
    assert token_batches(order, lengths, 3, None) == [[0, 2, 3], [5, 1, 4], [6]]
    # 900 and 600 alone (2 x 600 > 1000); 3 x 300 <= 1000; the fourth would pass 1000: a new batch led by 35
    assert token_batches(order, lengths, 8, 1000) == [[0], [2], [3, 5, 1], [4, 6]]
    assert token_batches(order, lengths, 2, 1000) == [[0], [2], [3, 5], [1, 4], [6]]
    assert token_batches(order, lengths, 8, 100) == [[0], [2], [3], [5], [1, 4], [6]]  # a row over the cap alone


def test_every_row_once_in_order():
    lengths = [17, 3, 250, 90, 90, 4, 61, 120, 8, 33]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for batch_size in (1, 2, 5, 16):
        for cap in (None, 1, 100, 256, 10_000):
            batches = token_batches(order, lengths, batch_size, cap)
            assert [i for b in batches for i in b] == order
            assert all(1 <= len(b) <= batch_size for b in batches)
            if cap is not None:
                assert all(len(b) == 1 or len(b) * lengths[b[0]] <= cap for b in batches)


def test_default_budget_on_cpu(tiny_model_dir):
    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", progress=False)
    assert backend.model.device.type == "cpu" and backend.max_batch_tokens == READOUT_BATCH_TOKENS
    rows_only = TransformersBackend(backend.model, backend.tokenizer, name="t", max_batch_tokens=None)
    assert rows_only.max_batch_tokens is None


@pytest.mark.parametrize("shared", [True, False], ids=["shared prefix", "plain"])
def test_readout_equals_the_rows_only_batches(tiny_model_dir, shared, monkeypatch):
    from hf_critic.backends import prefill as engine

    if not shared:
        monkeypatch.setattr(engine, "MIN_SHARED_PREFIX", 10**9)
    instructions = "You are a careful judge. Rate the answer below from 1 to 10 and explain briefly why. " * 3
    answers = ["Yes.", "Paris is the capital of France. " * 12, "4", "It depends. " * 30, "No, because " * 5]
    conversations = [[{"role": "user", "content": f"{instructions}\nAnswer: {a}"}] for a in answers]
    verdicts = [str(v) for v in range(1, 11)]
    prefixes = ["Rating: [["] * len(conversations)
    model_dir = str(tiny_model_dir)
    before = TransformersBackend.from_pretrained(model_dir, dtype="float32", progress=False, max_batch_tokens=None)
    ours = TransformersBackend(before.model, before.tokenizer, name="t", batch_size=8, progress=False)
    ours.max_batch_tokens = 200  # the tiny tokenizer's prompts are 100-400 tokens: several batches
    lengths = [len(before.tokenizer(before._prompt_text(c) + "Rating: [[")["input_ids"]) for c in conversations]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    assert len(token_batches(order, lengths, 8, 200)) >= 3  # the budget really cuts differently
    expected = before.verdict_probabilities(conversations, prefixes, verdicts)
    got = ours.verdict_probabilities(conversations, prefixes, verdicts)
    for a, b in zip(got, expected, strict=True):
        assert a.unseen == b.unseen
        assert max(abs(a.probabilities[v] - b.probabilities[v]) for v in verdicts) < 1e-5
