"""docs/judge/choosing.md names one architecture per kind of critic; a tiny random model of each class, built here from
a config, loads and judges through the same path the real checkpoint would take (no weights downloaded):

- Skywork-Reward-V2 (Qwen3): ``Qwen3ForSequenceClassification`` with one label, a reward critic;
- Prometheus 2 7B (Mistral): ``MistralForCausalLM`` with the ``prometheus2`` template;
- Auto-J-13B (Llama 2): ``LlamaForCausalLM`` with the ``autoj`` template.

Generative critics judge with ``verdict="probability"`` (a random model writes no parsable verdict, but its next-token
distribution over the allowed verdicts is a verdict for every row, kept whatever mass it has: min_verdict_mass=0). The embedded critic and smollm2-135m-critic are
tested elsewhere (tests/critics/test_trained_critic.py, tests/critic/test_critic.py).
"""

from __future__ import annotations

import pytest

from hf_critic.testing.tiny_models import chatml_tokenizer

pytest.importorskip("transformers")

COMMON = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
COMMON["num_key_value_heads"] = 2
PAIRS = [
    {"question": "What is 2+2?", "response_1": "4", "response_2": "5"},
    {"question": "Name a colour.", "response_1": "Blue.", "response_2": "A table."},
]
ROWS = [{"question": "What is 2+2?", "response": "4", "reference": "4"}]


def _save(model, tokenizer, path):
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def _config(cls, tokenizer, **extra):
    return cls(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        max_position_embeddings=2048,
        **COMMON,
        **extra,
    )


def test_a_qwen3_reward_model_like_skywork_reward_v2_judges_as_a_reward_critic(tmp_path):
    import torch
    from transformers import Qwen3Config, Qwen3ForSequenceClassification

    from hf_critic import Critic

    tokenizer = chatml_tokenizer()
    torch.manual_seed(0)
    model = Qwen3ForSequenceClassification(_config(Qwen3Config, tokenizer, num_labels=1, head_dim=8)).eval()
    with torch.no_grad():
        model.score.weight.normal_(0, 1.0)
    critic = Critic.from_pretrained(_save(model, tokenizer, tmp_path / "Skywork-Reward-V2-Qwen3-tiny"))
    compared = critic.compare(PAIRS)
    assert set(compared["critique_label"]) <= {0, 1, 2} and set(compared["critique_status"]) == {"ok"}
    graded = critic.grade(ROWS)
    assert graded[0]["critique_status"] == "ok" and graded[0]["critique_score"] is not None


@pytest.mark.parametrize(
    "arch,template,name",
    [("mistral", "prometheus2", "prometheus-7b-v2.0-tiny"), ("llama", "autoj", "autoj-13b-tiny")],
)
def test_a_published_generative_critic_architecture_judges_with_its_template(tmp_path, arch, template, name):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    from hf_critic import Critic

    tokenizer = chatml_tokenizer()
    torch.manual_seed(0)
    config_cls, model_cls = {"mistral": (MistralConfig, MistralForCausalLM), "llama": (LlamaConfig, LlamaForCausalLM)}[
        arch
    ]
    model = model_cls(_config(config_cls, tokenizer)).eval()
    path = _save(model, tokenizer, tmp_path / name)
    critic = Critic.from_pretrained(
        path, template=template, verdict="probability", explanation="none", min_verdict_mass=0.0
    )
    pairs = [{**p, "rubric": "Is the response correct and helpful?"} for p in PAIRS]  # Prometheus grades on one
    compared = critic.compare(pairs)
    assert set(compared["critique_status"]) == {"ok"}, compared["critique_status"]
    assert set(compared["critique_label"]) <= {0, 1, 2}
