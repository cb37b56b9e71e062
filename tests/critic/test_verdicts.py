"""Verdicts read from probabilities: the maths by hand, and the transformers read-out against a plain softmax."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hf_critic.critic.verdicts import (
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


def _bounded(tables, limit=10):
    """A fake top-k provider over ``{text: top-k}`` that records its calls and fails (instead of hanging) after
    ``limit`` rounds."""
    calls = []

    def top(items):
        calls.append(list(items))
        if len(calls) > limit:
            raise RuntimeError(f"the walk did not end: {len(calls)} rounds, last {items[:3]}")
        return [tables.get(text, {}) for _, text in items]

    return top, calls


def test_walk_ends_on_the_issue_top_k_with_an_empty_token():
    """``{"": -1.0, "5": -0.7, "1": -2.0}`` at every position looped forever, counting the same mass again."""
    top, calls = _bounded({"": {"": -1.0, "5": -0.7, "1": -2.0}, "1": {"": -1.0, "5": -0.7, "1": -2.0}})
    (readout,) = walk_top_logprobs(top, 1, SCORES)
    # "5" is a verdict no other extends; "1" is extended by "10" only, and "1" + "5" / "1" + "1" lead to none
    assert readout.probabilities == pytest.approx(
        dict.fromkeys(SCORES, 0.0) | {"5": math.exp(-0.7), "1": math.exp(-2.0)}
    )
    assert calls == [[(0, "")], [(0, "1")]]


def test_walk_counts_empty_whitespace_and_duplicate_tokens_exactly():
    """Empty tokens (specials) and tokens leading to no verdict contribute nothing and are not extended; a whitespace
    token that leads to a leading-space spelling is extended once; a token listed twice counts once."""
    lp = math.log
    tables = {
        "": {"": lp(0.2), "5": lp(0.3), "1": lp(0.2), " ": lp(0.1), "\n": lp(0.05), "  ": lp(0.05), " 1": lp(0.02)},
        "1": {"": lp(0.3), "0": lp(0.4), "]]": lp(0.2), " ": lp(0.05)},
        " ": {"": lp(0.5), "7": lp(0.4), " ": lp(0.05), "1": lp(0.05)},
        " 1": {"": lp(0.6), "0": lp(0.25)},
    }
    top, calls = _bounded(tables)
    (readout,) = walk_top_logprobs(top, 1, SCORES)
    expected = dict.fromkeys(SCORES, 0.0) | {
        "5": 0.3,
        "1": 0.2 * (1 - 0.4) + (0.02 + 0.1 * 0.05) * (1 - 0.25),  # " 1" in one token and " " then "1": both
        "10": 0.2 * 0.4 + (0.02 + 0.1 * 0.05) * 0.25,
        "7": 0.1 * 0.4,
    }
    assert readout.probabilities == pytest.approx(expected)
    assert readout.mass == pytest.approx(0.3 + 0.2 + 0.02 + 0.1 * 0.45)
    # one request per position: " 1", reached by two token paths in two rounds, is asked once
    assert calls == [[(0, "")], [(0, "1"), (0, " "), (0, " 1")]]

    # the wire format: a token listed twice (same id) counts once; partial characters and specials are dropped,
    # though llama.cpp writes them as " " and ""; distinct ids with the same text add up
    def entry(token, p, token_id, raw=None):
        raw = list(raw if raw is not None else token.encode())
        return {"token": token, "logprob": lp(p), "id": token_id, "bytes": raw}

    wire = {
        "": [
            entry("5", 0.3, 37),
            entry("5", 0.3, 37),
            entry(" ", 0.2, 216),
            entry(" ", 0.05, 4636, b" \xe2"),  # " " + the first byte of a 3-byte character
            entry("", 0.02, 10813, b"\xf0\x9f"),  # half an emoji
            entry("", 0.1, 2, b""),  # <|im_end|>
            entry("8", 0.01, 40),
            entry("8", 0.02, 900),  # another token that writes "8"
        ],
        " ": [entry("8", 0.5, 40), entry("", 0.3, 2, b"")],
    }
    top, calls = _bounded(wire)
    (readout,) = walk_top_logprobs(top, 1, SCORES)
    assert readout.probabilities == pytest.approx(dict.fromkeys(SCORES, 0.0) | {"5": 0.3, "8": 0.03 + 0.2 * 0.5})
    assert calls == [[(0, "")], [(0, " ")]]
    # without ids, the same text twice is the same token listed twice: once, at its larger probability
    top, _ = _bounded({"": [("5", lp(0.3)), ("5", lp(0.3)), ("6", lp(0.1)), ("6", lp(0.2))]})
    (readout,) = walk_top_logprobs(top, 1, SCORES)
    assert readout.probabilities == pytest.approx(dict.fromkeys(SCORES, 0.0) | {"5": 0.3, "6": 0.2})


def test_walk_over_a_server_sending_empty_and_duplicate_tokens():
    """The same walk through the OpenAI client against a local server answering llama.cpp-shaped top-k lists."""
    from hf_critic.backends.openai import OpenAIBackend
    from hf_critic.backends.openai_client import OpenAIClient
    from hf_critic.backends.retry import RetryPolicy
    from hf_critic.testing.servers import StubOpenAIServer, chat_completion_body

    def entry(token, p, token_id, raw=None):
        raw = list(raw if raw is not None else token.encode())
        return {"token": token, "logprob": math.log(p), "id": token_id, "bytes": raw}

    tables = {
        "Rating:": [
            entry(" ", 0.6, 216),
            entry(" ", 0.05, 4636, b" \xe2"),
            entry("", 0.1, 2, b""),
            entry("", 0.02, 10813, b"\xf0\x9f"),
            entry(" 9", 0.1, 900),
        ],
        "Rating: ": [entry("7", 0.5, 39), entry("1", 0.2, 33), entry("", 0.2, 2, b"")],
        "Rating: 1": [entry("0", 0.5, 32), entry("", 0.5, 2, b"")],
    }

    def respond(body, headers):
        if server.requests > 20:
            return 400, {}, b'{"error": {"message": "the walk does not end"}}'
        text = body["messages"][-1]["content"]
        answer = json.loads(chat_completion_body("x", "m"))
        content = [{"token": "x", "logprob": -1.0, "bytes": [120], "top_logprobs": tables.get(text, [])}]
        answer["choices"][0]["logprobs"] = {"content": content}
        return 200, {}, json.dumps(answer).encode()

    with StubOpenAIServer(respond=respond) as server:
        client = OpenAIClient(
            server.url, "m", retry=RetryPolicy(max_retries=0, initial_backoff=0.01, max_backoff=0.01)
        )
        backend = OpenAIBackend(client, progress=False)
        (readout,) = backend.verdict_probabilities([[{"role": "user", "content": "q"}]], ["Rating:"], SCORES)
        assert server.requests == 3  # "Rating:", "Rating: ", "Rating: 1"
    expected = dict.fromkeys(SCORES, 0.0) | {"9": 0.1, "7": 0.6 * 0.5, "1": 0.6 * 0.2 * 0.5, "10": 0.6 * 0.2 * 0.5}
    assert readout.probabilities == pytest.approx(expected)


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


def test_model_runs_print_no_library_deprecation(tiny_backend, caplog, recwarn):
    """Every read-out and generation warned that ``past_key_values`` is deprecated (transformers 5.x names
    the KV cache ``cache``): the read-out with and without a shared prefix (the trie step reuses the cache) and
    generation with a shared prefix, checked as warnings and as the library's log lines."""
    import logging

    from hf_critic.critic.decoding import DecodingConfig

    judge = [{"role": "system", "content": "You are a strict judge. " * 8}]
    shared = [judge + c[-1:] for c in CONVERSATIONS]  # one long shared prefix: its KV cache is prefilled once
    with caplog.at_level(logging.WARNING):
        tiny_backend.verdict_probabilities(CONVERSATIONS, ["Rating: [["] * 3, SCORES)
        tiny_backend.verdict_probabilities(shared, ["Rating: [["] * 3, SCORES)
        tiny_backend.generate(shared, DecodingConfig(max_new_tokens=3))
    said = [str(w.message) for w in recwarn] + [r.getMessage() for r in caplog.records]
    assert not [line for line in said if "deprecat" in line.lower()], said


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
    from hf_critic.critic.verdicts import VerdictProbabilityError

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


# ------------------------------------------------------------------------------------------------ the critic
class ReadoutBackend:
    """A scripted backend: text critiques from ``reply``; verdict probabilities from ``probs(user_text, continuation)``."""

    def __new__(cls, reply, probs):
        from hf_critic.backends.base import Backend

        class _Scripted(Backend):
            name, batch_size, context_length = "scripted", 2, None

            def __init__(self):
                self.seen = []

            def generate(self, conversations, config):
                return [
                    [reply(c[-1]["content"], k) for k in range(config.num_return_sequences)] for c in conversations
                ]

            def verdict_probabilities(self, conversations, continuations, verdicts):
                self.seen += list(continuations)
                return [
                    VerdictReadout({v: probs(c[-1]["content"], t).get(v, 0.0) for v in verdicts})
                    for c, t in zip(conversations, continuations, strict=True)
                ]

            def count_tokens(self, text):
                return len(text.split())

            def prompt_tokens(self, conversation):
                return 1

            def truncate_middle(self, text, num_tokens):
                return text

        return _Scripted()


POINT = [
    {"question": "Capital of France?", "response": "Paris."},
    {"question": "Capital of France?", "response": "Berlin."},
    {"question": "2+2?", "response": "five"},
]


def _point_probs(text, continuation):
    if "Paris." in text:
        return {"8": 0.5, "10": 0.3}  # mass 0.8 -> 8 * 5/8 + 10 * 3/8 = 8.75
    if "Berlin." in text:
        return {"2": 0.2, "3": 0.2}  # mass 0.4 -> 2.5
    return {"5": 0.004}  # mass 0.004 < 0.01: low_mass, never scored


def test_critic_probability_none_low_mass_counted_never_scored():
    from hf_critic.core import schema
    from hf_critic.critic import Critic

    backend = ReadoutBackend(lambda t, k: "never called", _point_probs)
    critic = Critic(backend, template="mtbench", verdict="probability", explanation="none")
    out = critic.grade(POINT)
    assert out[schema.CRITIQUE_SCORE][:2] == pytest.approx([8.75, 2.5]) and out[schema.CRITIQUE_SCORE][2] is None
    assert out[schema.CRITIQUE_STATUS] == ["ok", "ok", "low_mass"]
    assert out[schema.CRITIQUE_VERDICT_MASS] == pytest.approx([0.8, 0.4, 0.004])
    assert json.loads(out[schema.CRITIQUE_DISTRIBUTION][0])["10"] == pytest.approx(0.375)
    assert out[schema.CRITIQUE_GENERATION] == [None, None, None]  # no decoding
    assert backend.seen == ["Rating: [["] * 3
    stats = critic.last_stats
    assert (stats.total, stats.parsed, stats.low_mass) == (3, 2, 1)
    assert "2/3 verdicts from probabilities" in stats.summary() and "low mass 1" in stats.summary()
    critic = Critic(backend, template="mtbench", verdict="probability", explanation="none", min_verdict_mass=0.5)
    assert critic.grade(POINT)[schema.CRITIQUE_STATUS] == ["ok", "low_mass", "low_mass"]


def test_critic_explanation_first_cuts_the_verdict_and_both_keeps_text_columns():
    from hf_critic.core import schema
    from hf_critic.critic import Critic

    backend = ReadoutBackend(lambda t, k: "Good answer.\nRating: [[9]]" if "Paris." in t else "Hmm.", _point_probs)
    critic = Critic(backend, template="mtbench", verdict="both", explanation="first")
    out = critic.grade(POINT)
    assert backend.seen == ["Good answer.\n\nRating: [[", "Hmm.\n\nRating: [[", "Hmm.\n\nRating: [["]
    assert out[schema.CRITIQUE_TEXT_SCORE] == [9.0, None, None]
    assert out[schema.CRITIQUE_TEXT_STATUS] == ["ok", "unparsed", "unparsed"]
    assert out[schema.CRITIQUE_SCORE][0] == pytest.approx(8.75)
    assert out[schema.CRITIQUE_EXPLANATION][0] == "Good answer."
    assert "text verdicts: 1/3 parsed" in critic.last_stats.summary()


def test_a_resume_with_critiques_cached_and_read_outs_not_counts_both_truly(tmp_path):
    """A run killed after its critiques (cached) and before its read-outs: the resume said "from cache 0"."""
    from hf_critic.critic import Critic

    backend = ReadoutBackend(lambda t, k: "Good answer.\nRating: [[9]]", _point_probs)
    cache = tmp_path / "cache.sqlite"

    def killed(*args):
        raise KeyboardInterrupt

    first = Critic(backend, template="mtbench", verdict="both", explanation="first", cache_path=cache)
    backend.verdict_probabilities = killed
    with pytest.raises(KeyboardInterrupt):
        first.grade(POINT)
    del backend.verdict_probabilities
    resumed = Critic(backend, template="mtbench", verdict="both", explanation="first", cache_path=cache)
    resumed.grade(POINT)
    assert (resumed.last_stats.cached, resumed.last_stats.cached_readouts) == (3, 0)
    assert "from cache 3 critique(s) and 0 read-out(s)" in resumed.last_stats.summary()
    again = Critic(backend, template="mtbench", verdict="both", explanation="first", cache_path=cache)
    again.grade(POINT)
    assert "from cache 3 critique(s) and 3 read-out(s)" in again.last_stats.summary()


def test_critic_self_consistency_is_mean_of_expected_scores():
    from hf_critic.core import schema
    from hf_critic.critic import Critic
    from hf_critic.critic.decoding import DecodingConfig

    def probs(text, continuation):  # sample k's explanation says "k"; its read-out puts all mass on score 2k + 1
        return {str(2 * int(continuation[0]) + 1): 1.0}

    critic = Critic(
        ReadoutBackend(lambda t, k: f"{k}", probs),
        template="mtbench",
        verdict="probability",
        decoding=DecodingConfig(strategy="self_consistency", num_samples=3),
    )
    out = critic.grade(POINT[:1])
    assert out[schema.CRITIQUE_SCORE] == [pytest.approx((1 + 3 + 5) / 3)]


def test_critic_compare_swap_combines_both_orders():
    from hf_critic.core import schema
    from hf_critic.core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
    from hf_critic.critic import Critic

    pairs = [{"question": "Capital of France?", "response_1": "Paris.", "response_2": "Berlin."}]

    def probs(text, continuation):  # position-biased: prefers A, a little more when Paris is shown first
        paris_first = text.index("Paris.") < text.index("Berlin.")
        return {"A": 0.45, "B": 0.35, "C": 0.2} if paris_first else {"A": 0.4, "B": 0.1, "C": 0.5}

    critic = Critic(
        ReadoutBackend(lambda t, k: "x", probs), template="mtbench", verdict="probability", explanation="none"
    )
    out = critic.compare(pairs, swap=True)
    # first: r1 .45, r2 .35, tie .2; swapped mapped back: r1 .1, r2 .4, tie .5; mean: r1 .275, r2 .375, tie .35
    assert json.loads(out[schema.CRITIQUE_DISTRIBUTION_COMBINED][0]) == pytest.approx(
        {"response_1": 0.275, "response_2": 0.375, "tie": 0.35}
    )
    assert out[schema.CRITIQUE_LABEL] == [RESPONSE_2_WINS]
    assert out[schema.CRITIQUE_LABEL_FIRST] == [RESPONSE_1_WINS]
    assert out[schema.CRITIQUE_LABEL_SWAPPED] == [TIE]
    assert out[schema.CRITIQUE_CONSISTENT] == [False]


def test_auto_picks_probability_only_for_the_embedded_critic():
    from hf_critic.critic.verdicts import AUTO_EMBEDDED, resolve_verdict

    assert resolve_verdict("auto", None, embedded=True) == AUTO_EMBEDDED
    assert resolve_verdict("auto", None, embedded=False) == ("text", "first")
    assert resolve_verdict("probability", None, embedded=False) == ("probability", "first")
    with pytest.raises(ValueError, match="verdict must be"):
        resolve_verdict("logits", None, embedded=True)


def test_tiny_model_grade_probability_end_to_end(tiny_backend):
    from hf_critic.core import schema
    from hf_critic.critic import Critic

    critic = Critic(tiny_backend, template="mtbench", verdict="probability", explanation="none", min_verdict_mass=0)
    out = critic.grade(POINT)
    assert out[schema.CRITIQUE_STATUS] == ["ok"] * 3
    assert all(1 <= s <= 10 for s in out[schema.CRITIQUE_SCORE])
    assert all(0 < m < 1 for m in out[schema.CRITIQUE_VERDICT_MASS])


# ------------------------------------------------------------------------------------------------ meta-evaluation
def test_expected_calibration_error_by_hand():
    from hf_critic.meta_eval.verdict_sources import expected_calibration_error

    # bin [0.5, 0.6): conf .5, .55 -> mean .525, accuracy 1/2; bin [0.9, 1.0]: conf .9, 1.0 -> mean .95, accuracy 1
    c = expected_calibration_error([0.5, 0.55, 0.9, 1.0], [True, False, True, True], n_bins=10)
    assert c["ece"] == pytest.approx(0.5 * abs(0.5 - 0.525) + 0.5 * abs(1.0 - 0.95))
    assert [b["count"] for b in c["bins"]] == [0, 0, 0, 0, 0, 2, 0, 0, 0, 2]
    with pytest.raises(ValueError):
        expected_calibration_error([1.5], [True])


def test_pairwise_figures_sources_and_baselines():
    import datasets

    from hf_critic.core import schema
    from hf_critic.meta_eval.verdict_sources import figure_lines, pairwise_verdict_figures

    def dist(r1, r2, tie):
        return json.dumps({"response_1": r1, "response_2": r2, "tie": tie})

    data = datasets.Dataset.from_dict(
        {
            "label": [0, 0, 1, 2],
            schema.CRITIQUE_LABEL: [0, 1, 1, 0],  # combined decisions
            schema.CRITIQUE_LABEL_FIRST: [0, 0, 0, 0],
            schema.CRITIQUE_LABEL_SWAPPED: [0, 1, 1, 1],
            schema.CRITIQUE_DISTRIBUTION: [dist(0.5, 0.3, 0.2)] * 4,
            schema.CRITIQUE_DISTRIBUTION_COMBINED: [
                dist(0.6, 0.3, 0.1),
                dist(0.3, 0.6, 0.1),
                dist(0.2, 0.7, 0.1),
                dist(0.9, 0.05, 0.05),
            ],
            schema.text_column(schema.CRITIQUE_LABEL): [None, 0, None, None],
        }
    )
    f = pairwise_verdict_figures(data, "label", n_bins=10)
    assert f["n"] == 4
    assert f["combined"] == {"agreement": 0.5}
    first = f["probability_first_order"]
    assert first["first_order_agreement"] == 0.5 and first["consistency"] == 0.25 and first["agreement"] == 0.25
    assert f["text"] == {"first_order_agreement": 0.25}
    assert f["always_response_1"]["first_order_agreement"] == 0.5
    assert f["label_prior"] == {"first_order_agreement": 0.5, "label": "response_1"}
    # decided-label confidences .6 (right), .6 (wrong), .7 (right), .9 (wrong)
    assert f["calibration"]["ece"] == pytest.approx(0.5 * abs(0.5 - 0.6) + 0.25 * abs(1 - 0.7) + 0.25 * 0.9)
    assert any("both orders combined" in line for line in figure_lines(f, "compare", "label"))


# ------------------------------------------------------------------------------------------------ a real server
@pytest.mark.slow
def test_openai_logprob_readout_against_llamacpp_server(tmp_path):
    """The OpenAI-compatible path against llama.cpp's real server (top_logprobs; "10" through a second request),
    next to the in-process transformers read-out of the same weights (GGUF Q4_1 vs its float32 de-quantisation)."""
    pytest.importorskip("xllamacpp")
    from hf_critic.backends.openai import OpenAIBackend
    from hf_critic.backends.openai_client import OpenAIClient
    from hf_critic.backends.transformers import TransformersBackend
    from hf_critic.testing.servers import LlamaCppServerProcess

    conversations = [
        [{"role": "user", "content": "Rate the answer 'Paris' to 'What is the capital of France?' from 1 to 10."}],
        [{"role": "user", "content": "Rate the answer 'Berlin' to 'What is the capital of France?' from 1 to 10."}],
    ]
    with LlamaCppServerProcess(parallel=2, threads=1, log=tmp_path / "server.log") as server:
        backend = OpenAIBackend(OpenAIClient(server.url, server.alias), progress=False)
        served = backend.verdict_probabilities(conversations, ["Rating: [["] * 2, SCORES)
    local = TransformersBackend.from_pretrained(None, dtype="float32", batch_size=2, progress=False)
    reference = local.verdict_probabilities(conversations, ["Rating: [["] * 2, SCORES)
    for got, ref in zip(served, reference, strict=True):
        assert 0.3 < got.mass <= 1.0 and got.unseen == ()
        assert got.probabilities["10"] > 0  # the second request, after "1"
        assert got.probabilities == pytest.approx(ref.probabilities, abs=0.05)


def test_meta_eval_report_has_verdict_sources_and_reliability_plot(tmp_path):
    import datasets

    from hf_critic.core import schema
    from hf_critic.meta_eval import compare_critics, evaluate_critiques
    from hf_critic.reports.meta_eval_report import write_report

    def dist(r1, r2, tie):
        return json.dumps({"response_1": r1, "response_2": r2, "tie": tie})

    data = datasets.Dataset.from_dict(
        {
            "question": ["q1", "q2", "q3", "q4"],
            "label": [0, 0, 1, 2],
            schema.CRITIQUE_LABEL: [0, 1, 1, 0],
            schema.CRITIQUE_LABEL_FIRST: [0, 0, 0, 0],
            schema.CRITIQUE_LABEL_SWAPPED: [0, 1, 1, 1],
            schema.CRITIQUE_DISTRIBUTION: [dist(0.5, 0.3, 0.2)] * 4,
            schema.CRITIQUE_DISTRIBUTION_COMBINED: [dist(0.6, 0.3, 0.1)] * 4,
        }
    )
    result = evaluate_critiques(data, "critic", "pairs")
    assert result.metrics["first_order_agreement"] == 0.5  # Table 3 reads each order's own decision
    assert result.verdicts["combined"] == {"agreement": 0.5}
    written = write_report([result], tmp_path, paired=compare_critics([result]))
    text = written["markdown"].read_text()
    assert "| critic | pairs | probability, both orders combined | 50.00 |" in text and "ECE" in text
    assert (tmp_path / "reliability_critic_pairs.png").stat().st_size > 1000


def test_sample_option_is_a_seeded_sample_of_the_whole_file():
    import argparse

    import datasets

    from hf_critic.commands.options import select_rows

    data = datasets.Dataset.from_dict({"i": list(range(100))})
    pick = select_rows(data, argparse.Namespace(sample=10, sample_seed=0, limit=None))["i"]
    assert len(pick) == 10 == len(set(pick)) and pick == data.shuffle(seed=0)["i"][:10]
    assert pick != list(range(10)) and max(pick) > 50
    assert select_rows(data, argparse.Namespace(sample=10, sample_seed=0, limit=3))["i"] == pick[:3]
    assert select_rows(data, argparse.Namespace(sample=None, sample_seed=0, limit=3))["i"] == [0, 1, 2]


def test_rows_without_a_human_score_are_judged_and_left_out_of_the_figures():
    """FastChat's MT-Bench has one turn-1 answer without a GPT-4 grade: grade judges it, the figures count it."""
    import datasets

    from hf_critic.io import RecordError
    from hf_critic.loaders.generic import gold_labels

    data = datasets.Dataset.from_dict({"question": ["a", "b", "c"], "human_score": [3.0, None, 5.0]})
    out = gold_labels(data, "pointwise", source="d", required=False)
    assert out["human_score"] == [3.0, None, 5.0]
    with pytest.raises(RecordError, match="row 1"):
        gold_labels(data, "pointwise", source="d", required=True)


def test_readouts_are_cached_and_counted(tmp_path):
    from hf_critic.critic import Critic

    backend = ReadoutBackend(lambda t, k: "never called", _point_probs)
    kwargs = {"template": "mtbench", "verdict": "probability", "explanation": "none", "cache_path": tmp_path / "c.db"}
    first = Critic(backend, **kwargs)
    first.grade(POINT)
    assert first.last_stats.cached == 0 and len(backend.seen) == 3
    again = Critic(backend, **kwargs)
    out = again.grade(POINT)
    assert again.last_stats.cached == 3 and len(backend.seen) == 3  # no model call the second time
    assert out["critique_score"][:2] == pytest.approx([8.75, 2.5])


# ------------------------------------------------------------------------------------------------ sliding windows
def _architecture(name: str, tokenizer):
    """A tiny random model of ``name``, its sliding window (16 tokens) far shorter than the prompts below."""
    import torch
    from transformers import AutoModelForCausalLM, Gemma3TextConfig, LlamaConfig, MistralConfig, Qwen2Config

    common = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    config = {
        "llama": lambda: LlamaConfig(**common),
        "mistral-sliding": lambda: MistralConfig(sliding_window=16, **common),  # every layer slides
        "gemma3": lambda: Gemma3TextConfig(sliding_window=16, head_dim=16, **common),
        "qwen2-mixed": lambda: Qwen2Config(use_sliding_window=True, sliding_window=16, max_window_layers=1, **common),
    }[name]()
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).eval()


@pytest.mark.parametrize("name", ["llama", "mistral-sliding", "gemma3", "qwen2-mixed"])
def test_verdict_readout_is_exact_with_sliding_window_layers(name):
    """The cached trie step against one uncached forward pass per trie node, on prompts 15x the window."""
    import torch

    from hf_critic.backends.transformers import TransformersBackend
    from hf_critic.testing.tiny_models import chatml_tokenizer

    tokenizer = chatml_tokenizer()
    model = _architecture(name, tokenizer)
    backend = TransformersBackend(model, tokenizer, name=name, batch_size=2, progress=False)
    assert backend._prefix_sharing is (name in ("llama",))  # padding inside a window would count as context
    judge = "You are a strict judge. " * 12
    conversations = [
        [{"role": "system", "content": judge}, {"role": "user", "content": f"Answer {i}: " + "yes " * i}]
        for i in range(3)
    ]
    verdicts, prefixes = [str(v) for v in range(1, 11)], ["Rating: [["] * 3
    readouts = backend.verdict_probabilities(conversations, prefixes, verdicts)
    trie = backend._verdict_trie(prefixes, verdicts)
    assert trie.fed  # "1" continues into "10": the tree-masked step runs
    for conversation, prefix, readout in zip(conversations, prefixes, readouts, strict=True):
        ids = tokenizer(backend._prompt_text(conversation) + prefix, add_special_tokens=False)["input_ids"]
        assert len(ids) > 15 * 16
        lp = np.zeros((1, len(trie.tokens)))
        for node in range(1, len(trie.tokens)):
            path, parent = [], trie.parents[node]
            while parent > 0:
                path.insert(0, trie.tokens[parent])
                parent = trie.parents[parent]
            with torch.inference_mode():
                logits = model(input_ids=torch.tensor([ids + path])).logits[0, -1].double()
            lp[0, node] = torch.log_softmax(logits, -1)[trie.tokens[node]].item()
        exact = trie.probabilities(lp)[0]
        assert max(abs(exact.probabilities[v] - readout.probabilities[v]) for v in verdicts) < 1e-6


def test_the_verdict_plan_says_what_a_critic_does():
    """The verdict mode is resolved once into a type the critic asks, no mode strings compared."""
    from hf_critic.critic.verdicts import VerdictMode, resolve_verdict

    both = resolve_verdict("both", None, embedded=False)
    assert both.mode is VerdictMode.BOTH and both == ("both", "first")
    assert both.generates and both.reads_probabilities and both.parses_text and both.keeps_text
    direct = resolve_verdict("auto", None, embedded=True)
    assert direct == ("probability", "none") and direct.reads_probabilities
    assert not (direct.generates or direct.parses_text or direct.keeps_text)
    assert resolve_verdict("probability", "first", embedded=True).generates
    text = resolve_verdict("auto", None, embedded=False)
    assert text.mode is VerdictMode.TEXT and text.generates and text.parses_text and not text.reads_probabilities
