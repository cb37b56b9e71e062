"""The reward recipe's PEFT configurations (issue 27 item 3): which parameters each one trains."""

from __future__ import annotations

import pytest
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForSequenceClassification

from hf_critic.tiny_models import build_tiny_reward_model
from hf_critic.training.reward import RewardScriptArguments, configure_peft


def _trained(tmp_path, **choices) -> tuple[set[tuple[str, str]], int]:
    """The trainable parameters as (module, "lora" | "full") after the recipe's PEFT choices, and the layer count."""
    model = AutoModelForSequenceClassification.from_pretrained(build_tiny_reward_model(tmp_path / "rm"))
    layers = model.config.num_hidden_layers
    config = LoraConfig(task_type="SEQ_CLS", r=4, target_modules="all-linear")
    configure_peft(config, RewardScriptArguments(**choices), layers)
    peft_model = get_peft_model(model, config)
    names = set()
    for name, param in peft_model.named_parameters():
        if param.requires_grad:
            parts = name.split(".")
            layer = next((parts[i + 1] for i, p in enumerate(parts) if p == "layers"), None)
            names.add(
                (
                    "score" if "score" in parts else f"layer{layer}",
                    "lora" if "lora_A" in name or "lora_B" in name else "full",
                )
            )
    return names, layers


def test_lora_on_the_top_layers_only(tmp_path):
    names, layers = _trained(tmp_path, lora_top_layers=1)
    assert names == {(f"layer{layers - 1}", "lora"), ("score", "full")}


def test_score_head_only_trains_the_head_alone(tmp_path):
    names, _ = _trained(tmp_path, score_head_only=True)
    assert names == {("score", "full")}


def test_full_top_layers_train_those_layers_in_full_without_lora(tmp_path):
    names, layers = _trained(tmp_path, full_top_layers=1)
    assert names == {(f"layer{layers - 1}", "full"), ("score", "full")}


@pytest.mark.parametrize("choice", ["lora_top_layers", "full_top_layers"])
def test_layer_counts_outside_the_model_are_refused(choice):
    with pytest.raises(ValueError, match=f"{choice} must be in \\[0, 2\\]"):
        configure_peft(LoraConfig(task_type="SEQ_CLS"), RewardScriptArguments(**{choice: 3}), 2)
