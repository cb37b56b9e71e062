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


def test_the_reward_trainer_keeps_the_length_columns_through_the_public_route(tmp_path):
    """Issue 38 item 4: remove_unused_columns=False carries the length columns to the collator (TRL's private
    _set_signature_columns_if_needed is no longer overridden), and evaluation still sees whole pairs."""
    import datasets
    from transformers import AutoTokenizer
    from trl import RewardConfig

    from hf_critic.training.reward import CriticRewardTrainer, get_trainer, preference_pairs

    assert "_set_signature_columns_if_needed" not in CriticRewardTrainer.__dict__
    folder = build_tiny_reward_model(tmp_path / "rm")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = datasets.Dataset.from_list(
        [
            {"question": f"q{i}", "response_1": "a" * (i + 1), "response_2": "bb" * (i + 2), "label": i % 2}
            for i in range(6)
        ]
    )
    pairs = preference_pairs(rows, tokenizer, 128)
    args = RewardConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to=[],
                        per_device_eval_batch_size=4, max_length=128)  # fmt: skip
    model = AutoModelForSequenceClassification.from_pretrained(folder)
    trainer = get_trainer(model, tokenizer, {"train": pairs, "validation": pairs}, args, None)
    assert trainer.args.remove_unused_columns is False
    batch = next(iter(trainer.get_eval_dataloader()))
    assert batch["chosen_length"].tolist()[:2] == pairs["chosen_length"][:2]
    metrics = trainer.evaluate()
    assert metrics["eval_longer_wins_accuracy"] == pytest.approx(
        sum((c > r) + 0.5 * (c == r) for c, r in zip(pairs["chosen_length"], pairs["rejected_length"], strict=True))
        / 6
    )
