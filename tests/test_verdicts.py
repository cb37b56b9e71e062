"""Verdicts read from probabilities: the maths by hand, and the transformers read-out against a plain softmax."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_critic.verdicts import (
    TokenTrie,
    VerdictReadout,
    combine_orders,
    decide_label,
    expected_score,
    swap_distribution,
    walk_top_logprobs,
)

SCORES = [str(i) for i in range(1, 11)]


# ------------------------------------------------------------------------------------------------ maths by hand
def test_swap_combination_by_hand():
    first = {"response_1": 0.6, "response_2": 0.1, "tie": 0.3}
    swapped = {"response_1": 0.5, "response_2": 0.2, "tie": 0.3}  # judged with response 2 shown first
    back = swap_distribution(swapped)
    assert back == {"response_2": 0.5, "response_1": 0.2, "tie": 0.3}
    combined = combine_orders(first, back)
    assert combined == pytest.approx({"response_1": 0.4, "response_2": 0.3, "tie": 0.3})
    assert decide_label(combined) == 0
    assert decide_label(first) == 0 and decide_label(back) == 1  # the orders disagree; the average decides
    assert decide_label({"response_1": 0.4, "response_2": 0.4, "tie": 0.2}) == 0
    assert decide_label({"response_1": 0.4, "response_2": 0.2, "tie": 0.4}) == 2
    with pytest.raises(ValueError, match="same verdicts"):
        combine_orders(first, {"A": 1.0})


def test_readout_mass_distribution_entropy_expected_score():
    readout = VerdictReadout({"1": 0.1, "5": 0.3, "10": 0.2})
    assert readout.mass == pytest.approx(0.6)
    assert readout.distribution == pytest.approx({"1": 1 / 6, "5": 0.5, "10": 1 / 3})
    h = -(1 / 6 * math.log(1 / 6) + 0.5 * math.log(0.5) + 1 / 3 * math.log(1 / 3))
    assert readout.entropy == pytest.approx(h)
    assert expected_score(readout.distribution, {v: float(v) for v in readout.distribution}) == pytest.approx(
        1 / 6 + 2.5 + 10 / 3
    )
    with pytest.raises(ValueError):
        expected_score({"1": 0.5}, {"1": 1.0})


def test_trie_makes_prefix_verdicts_exclusive():
    # tokens: "1" = 11, "0" = 10, "2" = 12, " " = 9 (the space spelling of "2": [9, 12])
    trie = TokenTrie({"1": [[11]], "10": [[11, 10]], "2": [[12], [9, 12]]})
    assert [trie.tokens[n] for n in trie.fed] == [11, 9]
    lp = np.zeros((1, len(trie.tokens)))
    node = {(trie.tokens[trie.parents[n]], trie.tokens[n]): n for n in range(1, len(trie.tokens))}
    lp[0, node[(-1, 11)]] = math.log(0.5)  # P("1") at the root
    lp[0, node[(11, 10)]] = math.log(0.4)  # P("0" | "1")
    lp[0, node[(-1, 12)]] = math.log(0.2)
    lp[0, node[(-1, 9)]] = math.log(0.1)
    lp[0, node[(9, 12)]] = math.log(0.5)
    (readout,) = trie.probabilities(lp)
    assert readout.probabilities == pytest.approx({"1": 0.5 * 0.6, "10": 0.5 * 0.4, "2": 0.2 + 0.1 * 0.5})
    with pytest.raises(ValueError, match="same token path"):
        TokenTrie({"a": [[1, 2]], "b": [[1, 2]]})


def test_walk_top_logprobs_strings():
    """A server's top-k: "1" continues into "10"; "Ti" + "e" is a two-token tie; absent verdicts are unseen."""
    tables = {
        "": {"1": math.log(0.5), " 2": math.log(0.2), "A": math.log(0.1), "x": math.log(0.2)},
        "1": {"0": math.log(0.4), "]]": math.log(0.5), "5": math.log(0.1)},
    }
    calls = []

    def top(items):
        calls.append(list(items))
        return [tables.get(text, {}) for _, text in items]

    (readout,) = walk_top_logprobs(top, 1, ["1", "2", "10", "3"])
    assert readout.probabilities == pytest.approx({"1": 0.5 * 0.6, "2": 0.2, "10": 0.5 * 0.4, "3": 0.0})
    assert readout.unseen == ("3",)
    assert calls == [[(0, "")], [(0, "1")]]
    # a token that runs past a verdict with a non-word character ends it: "A]]"
    (pair,) = walk_top_logprobs(
        lambda items: [{"A]]": math.log(0.3), "Ti": math.log(0.2)} if t == "" else {"e": 0.0} for _, t in items],
        1,
        ["A", "B", "Tie"],
    )
    assert pair.probabilities == pytest.approx({"A": 0.3, "B": 0.0, "Tie": 0.2})


# ------------------------------------------------------------------------------------------------ transformers
@pytest.fixture(scope="module")
def tiny_backend(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hf_critic.backends.transformers import TransformersBackend

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    return TransformersBackend(model, tokenizer, name="tiny", batch_size=2, progress=False)


CONVERSATIONS = [
    [{"role": "user", "content": "Rate this answer: Paris."}],
    [
        {"role": "system", "content": "You are a judge."},
        {"role": "user", "content": "Rate: the capital of France is Paris, a city."},
    ],
    [{"role": "user", "content": "Which is better, A or B?"}],
]


def _reference(backend, conversation, continuation, spelling) -> float:
    """P(spelling | prompt + continuation) from unbatched full forward passes and a numpy softmax."""
    import torch

    tok = backend.tokenizer
    prompt = tok.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False) + continuation
    head = tok(prompt, add_special_tokens=False)["input_ids"]
    full = tok(prompt + spelling, add_special_tokens=False)["input_ids"]
    assert full[: len(head)] == head
    with torch.no_grad():
        logits = backend.model(torch.tensor([full])).logits[0].double().numpy()
    p = 1.0
    for k in range(len(head), len(full)):
        z = logits[k - 1] - logits[k - 1].max()
        p *= float(np.exp(z[full[k]]) / np.exp(z).sum())
    return p


def test_readout_equals_numpy_softmax_with_multi_token_and_space_spellings(tiny_backend):
    continuations = ["Rating: [[", "A short explanation.\n\nRating: [[", "Rating: [["]
    got = tiny_backend.verdict_probabilities(CONVERSATIONS, continuations, SCORES)
    for conversation, continuation, readout in zip(CONVERSATIONS, continuations, got, strict=True):
        ref = {
            v: _reference(tiny_backend, conversation, continuation, v)
            + _reference(tiny_backend, conversation, continuation, " " + v)
            for v in SCORES
        }
        # "1" keeps only what does not continue into "10" (both spellings)
        for space in ("", " "):
            ref["1"] -= _reference(tiny_backend, conversation, continuation, space + "10")
        assert readout.probabilities == pytest.approx(ref, abs=1e-5)
        assert 0 < readout.mass <= 1


def test_readout_multi_token_pair_verdicts(tiny_backend):
    verdicts = ["[[A]]", "[[B]]", "[[C]]"]
    got = tiny_backend.verdict_probabilities(CONVERSATIONS, ["Verdict:"] * 3, verdicts)
    for conversation, readout in zip(CONVERSATIONS, got, strict=True):
        ref = {v: sum(_reference(tiny_backend, conversation, "Verdict:", s + v) for s in ("", " ")) for v in verdicts}
        assert readout.probabilities == pytest.approx(ref, abs=1e-5)
    # batch order and padding do not change the figures
    alone = tiny_backend.verdict_probabilities(CONVERSATIONS[1:2], ["Verdict:"], verdicts)[0]
    assert alone.probabilities == pytest.approx(got[1].probabilities, abs=1e-6)


def test_backend_without_probabilities_fails_with_one_line():
    from hf_critic.backends.base import Backend
    from hf_critic.verdicts import VerdictProbabilityError

    class TextOnly(Backend):
        name = "text-only"

        def generate(self, conversations, config):
            return [["x"] for _ in conversations]

        def count_tokens(self, text):
            return len(text)

        def prompt_tokens(self, conversation):
            return 1

        def truncate_middle(self, text, num_tokens):
            return text

    with pytest.raises(VerdictProbabilityError, match=r"^backend TextOnly \(text-only\) cannot return verdict") as err:
        TextOnly().verdict_probabilities([[{"role": "user", "content": "q"}]], [""], ["1"])
    assert "\n" not in str(err.value)
