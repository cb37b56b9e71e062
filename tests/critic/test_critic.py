"""Critic logic with a scripted backend: settings, parsing into columns, swap mapping, self-consistency, resume."""

from __future__ import annotations

import json

import pytest

from hf_critic.backends.base import Backend
from hf_critic.core import schema
from hf_critic.core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, swap_label
from hf_critic.critic import ContextLengthError, Critic
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.io import RecordError


class ScriptedBackend(Backend):
    """Answers with ``reply(user_text, sample_index)``; counts calls; a whitespace 'tokenizer'."""

    def __init__(self, reply, context_length=None):
        self.reply, self.name, self.context_length = reply, "scripted", context_length
        self.calls, self.batch_size = 0, 2

    def generate(self, conversations, config):
        self.calls += len(conversations)
        return [[self.reply(c[-1]["content"], k) for k in range(config.num_return_sequences)] for c in conversations]

    def count_tokens(self, text):
        return len(text.split())

    def prompt_tokens(self, conversation):
        return sum(len(m["content"].split()) for m in conversation)

    def truncate_middle(self, text, num_tokens):
        words = text.split()
        keep = max(len(words) - num_tokens, 0)
        return " ".join(words[: keep - keep // 2] + ["..."] + (words[-(keep // 2) :] if keep // 2 else []))


POINT = [
    {"question": "Capital of France?", "response": "Paris."},
    {"question": "Capital of France?", "response": "Berlin."},
    {"question": "2+2?", "response": "five"},
]


def grader(text, k):
    if "Paris." in text:
        return "Correct and concise. Rating: [[9]]"
    if "Berlin." in text:
        return "Wrong city. Rating: [[2]]"
    return "I cannot decide."  # no verdict: must stay unparsed


def test_grade_reference_free_columns_and_unparsed():
    critic = Critic(ScriptedBackend(grader), template="mtbench")
    out = critic.grade(POINT)
    assert out[schema.CRITIQUE_SCORE] == [9.0, 2.0, None]
    assert out[schema.CRITIQUE_STATUS] == ["ok", "ok", "unparsed"]
    assert out[schema.CRITIQUE_EXPLANATION][0].startswith("Correct and concise")
    assert "[[9]]" not in out[schema.CRITIQUE_EXPLANATION][0]
    assert out[schema.CRITIQUE_GENERATION][2] == "I cannot decide."
    assert out["question"] == [r["question"] for r in POINT]  # input rows kept
    stats = critic.last_stats
    assert (stats.total, stats.parsed, stats.unparsed) == (3, 2, 1)
    assert "2/3 parsed" in stats.summary()


def test_setting_chosen_from_data_and_forced():
    seen = []
    critic = Critic(ScriptedBackend(lambda t, k: seen.append(t) or "Rating: [[5]]"), template="mtbench")
    critic.grade([{**POINT[0], "reference": "REFTEXT"}])
    assert "REFTEXT" in seen[-1]  # reference column present -> referenced template
    critic.grade([{**POINT[0], "reference": "REFTEXT"}], referenced=False)
    assert "REFTEXT" not in seen[-1]


def test_out_of_range_is_not_clipped():
    out = Critic(ScriptedBackend(lambda t, k: "Rating: [[11]]"), template="mtbench").grade(POINT[:1])
    assert out[schema.CRITIQUE_SCORE] == [None]
    assert out[schema.CRITIQUE_STATUS] == ["out_of_range"]


def test_missing_column_and_empty_field_are_named():
    critic = Critic(ScriptedBackend(grader), template="mtbench")
    with pytest.raises(RecordError, match=r"required column\(s\) \['response'\]"):
        critic.grade([{"question": "q", "answer": "a"}])
    with pytest.raises(RecordError, match=r"row 1, field 'question': empty"):
        critic.grade([POINT[0], {"question": " ", "response": "r"}])
    with pytest.raises(RecordError, match=r"row 1, field 'response': missing \(None\)"):
        critic.grade([POINT[0], {"question": "q", "response": None}])


def test_empty_response_is_judged_not_rejected():
    seen = []
    out = Critic(
        ScriptedBackend(lambda t, k: seen.append(t) or "Nothing was answered. Rating: [[1]]"), template="mtbench"
    ).compare([{"question": "q", "response_1": "an answer", "response_2": ""}])
    assert out[schema.CRITIQUE_LABEL] is not None and "[The Start of Assistant B's Answer]\n\n[The End" in seen[0]


PAIRS = [
    {"question": "Capital of France?", "response_1": "Paris.", "response_2": "Berlin.", "label": 0},
    {"question": "2+2?", "response_1": "five", "response_2": "4", "label": 1},
]


def position_biased(text, k):
    # Always prefers whatever is shown first, except it recognises "4" as correct.
    first = text.index("[The Start of Assistant A's Answer]")
    shown_first = text[first : text.index("[The End of Assistant A's Answer]")]
    return "A is better. [[B]]" if "five" in shown_first else "A is better. [[A]]"


def test_compare_swap_maps_back_and_records_consistency():
    critic = Critic(ScriptedBackend(position_biased), template="mtbench")
    out, stats = critic.compare(PAIRS, swap=True, return_stats=True)
    assert stats.total == 4 and stats.parsed == 4
    assert out[schema.CRITIQUE_LABEL] == [RESPONSE_1_WINS, RESPONSE_2_WINS]
    # Swapped pair 1 shows Berlin first -> "[[A]]" = Berlin = response 2 in original terms.
    assert out[schema.CRITIQUE_LABEL_SWAPPED] == [RESPONSE_2_WINS, RESPONSE_2_WINS]
    assert out[schema.CRITIQUE_CONSISTENT] == [False, True]
    assert critic.last_stats.total == 4


def test_swap_label_mapping():
    assert [swap_label(x) for x in (0, 1, 2, None)] == [1, 0, 2, None]
    with pytest.raises(ValueError):
        swap_label(3)


def test_self_consistency_mean_and_closest_explanation():
    scores = [2, 8, 9, 7, "x"]  # sample 4 unparsed, left out of the mean (6.5); closest is 7 (index 3)
    critic = Critic(
        ScriptedBackend(lambda t, k: f"sample {k}. Rating: [[{scores[k]}]]"),
        template="mtbench",
        decoding=DecodingConfig(strategy="self_consistency", num_samples=5),
    )
    out = critic.grade(POINT[:1])
    assert out[schema.CRITIQUE_SCORE] == [6.5]
    assert out[schema.CRITIQUE_EXPLANATION][0].startswith("sample 3")
    assert len(out[schema.CRITIQUE_SAMPLES][0]) == 5


def test_truncation_policies():
    long = {"question": "q", "response": "word " * 400}
    backend = ScriptedBackend(lambda t, k: f"Rating: [[{4 if '...' in t else 6}]]", context_length=300)
    decoding = DecodingConfig(max_new_tokens=50)
    out = Critic(backend, template="mtbench", decoding=decoding).grade([long, POINT[0]])
    assert out[schema.CRITIQUE_TRUNCATED] == [True, False]
    assert out[schema.CRITIQUE_SCORE][0] == 4.0  # the model saw the cut text
    prompt_len = backend.prompt_tokens(
        Critic(backend, template="mtbench")
        .template_for(schema.Setting(schema.Task.POINTWISE, False))
        .render({**long, "response": "x"})
    )
    assert prompt_len < 250
    skipped = Critic(backend, template="mtbench", decoding=decoding, truncate="skip").grade([long])
    assert skipped[schema.CRITIQUE_STATUS] == ["skipped"] and skipped[schema.CRITIQUE_SCORE] == [None]
    with pytest.raises(ContextLengthError, match="row 0"):
        Critic(backend, template="mtbench", decoding=decoding, truncate="error").grade([long])


def test_cache_makes_reruns_free_and_resumes(tmp_path):
    backend = ScriptedBackend(grader)
    cache = tmp_path / "gen.sqlite"
    Critic(backend, template="mtbench", cache_path=cache).grade(POINT[:2])
    assert backend.calls == 2
    critic = Critic(backend, template="mtbench", cache_path=cache)
    out, stats = critic.grade(POINT, return_stats=True)  # two finished, one new; the counts come with the result
    assert backend.calls == 3
    assert stats.cached == 2 and stats.total == 3 and critic.last_stats is stats
    assert out[schema.CRITIQUE_SCORE] == [9.0, 2.0, None]
    again = critic.grade(POINT, return_stats=True)
    assert again.stats.cached == 3 and again.critiques[schema.CRITIQUE_SCORE] == out[schema.CRITIQUE_SCORE]
    # Another decoding configuration is another cache entry.
    Critic(backend, template="mtbench", cache_path=cache, decoding=DecodingConfig(strategy="beam")).grade(POINT[:1])
    assert backend.calls == 4


def test_template_for_wrong_setting_is_refused():
    critic = Critic(ScriptedBackend(grader), template="mtbench_pairwise_reference_free_en")
    with pytest.raises(ValueError, match="pointwise_reference_free"):
        critic.grade(POINT)


def test_dimensions_column_is_json():
    reply = "ok. {'Correctness': 8, 'Richness': 6, 'Overall Score': 7}"
    out = Critic(ScriptedBackend(lambda t, k: reply), template="critiquellm_v2").grade(POINT[:1])
    assert out[schema.CRITIQUE_SCORE] == [7.0]
    assert json.loads(out[schema.CRITIQUE_DIMENSIONS][0]) == {"Correctness": 8.0, "Richness": 6.0}
