"""The reward recipe's PEFT configurations: which parameters each one trains."""

from __future__ import annotations

import pytest
import yaml
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForSequenceClassification

from hf_critic.testing.tiny_models import build_tiny_reward_model
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


# ------------------------------------------------------------------------------- model card and push (recipes/reward.py)
def _finished_trainer(output_dir, *, push: bool = False):
    """A finished RewardTrainer as the recipe's save step sees it: real RewardConfig, the log history of two
    evaluations, save_model and push_to_hub recorded instead of run."""
    from types import SimpleNamespace

    from trl import RewardConfig

    args = RewardConfig(
        output_dir=str(output_dir),
        per_device_train_batch_size=8,
        learning_rate=2e-4,
        max_length=256,
        metric_for_best_model="within_question_accuracy",
        push_to_hub=push,
        hub_model_id="org/my-critic" if push else None,
        report_to=[],
        bf16=False,
        use_cpu=True,
    )
    history = [
        {"step": 250, "eval_within_question_accuracy": 0.84, "eval_length_correlation": 0.69},
        {"step": 500, "loss": 0.4},
        {"step": 750, "eval_within_question_accuracy": 0.9, "eval_length_correlation": 0.68},
    ]
    calls = []
    import torch

    trainer = SimpleNamespace(
        args=args,
        model=torch.nn.Module(),  # no score head to cut (keep_quality_head is ODIN's)
        state=SimpleNamespace(
            log_history=history, best_model_checkpoint=f"{output_dir}/checkpoint-750", best_metric=0.9
        ),
        train_dataset=[None] * 10091,
        accelerator=SimpleNamespace(is_main_process=True),
        hub_model_id="org/my-critic",
        save_model=lambda folder: calls.append(("save_model", folder)),
        push_to_hub=lambda **kw: calls.append(("push_to_hub", kw)),
    )
    return trainer, calls


def test_reward_recipe_writes_a_model_card(tmp_path, monkeypatch):
    from trl import ModelConfig

    from hf_critic.critics.reward import RewardCalibration
    from hf_critic.training import reward

    calibration = RewardCalibration(slope=0.1122, intercept=4.556, max_length=256, source="least squares on 77 grades")
    monkeypatch.setattr(reward, "calibrate", lambda *a, **k: calibration)
    trainer, calls = _finished_trainer(tmp_path)
    script = reward.RewardScriptArguments(dataset_name="outputs/judgment_data")
    model_args = ModelConfig(model_name_or_path="default", use_peft=True, lora_r=16, lora_alpha=32)
    card = reward.save_reward_model(trainer, script, model_args, tokenizer=None)

    assert calls == [("save_model", str(tmp_path))]
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == card
    header = yaml.safe_load(card.split("---")[1])
    assert header["library_name"] == "peft" and header["pipeline_tag"] == "text-classification"
    assert "reward-model" in header["tags"] and "base_model" not in header  # "default": the embedded model
    assert f"hf-critic compare --model {tmp_path} --data pairs.jsonl" in card
    assert "`outputs/judgment_data/pairwise_preference`: 10091 training pairs" in card
    assert "least squares on 77 grades" in card and "Context: 256 tokens" in card
    assert "| 250 | 0.84 | 0.69 |" in card and "| 750 | 0.9 | 0.68 |" in card
    assert "| LoRA r / alpha / dropout | 16 / 32 / " in card
    assert f"Selected checkpoint: `{tmp_path}/checkpoint-750` (within_question_accuracy = 0.9)." in card
    assert (tmp_path / "training_summary.json").is_file() and (tmp_path / "hf_critic_reward.json").is_file()


def test_reward_recipe_pushes_with_its_card(tmp_path, monkeypatch):
    """--push_to_hub: the recipe uploads the folder (trainer.push_to_hub) then its own card in place of TRL's (the
    Hub is unreachable here: both calls are recorded, not sent)."""
    import importlib.util
    from pathlib import Path

    import huggingface_hub
    from trl import ModelConfig

    spec = importlib.util.spec_from_file_location("reward_recipe", Path(__file__).parents[2] / "recipes" / "reward.py")
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    trainer, calls = _finished_trainer(tmp_path, push=True)
    trainer.train = lambda resume_from_checkpoint=None: type("Out", (), {"metrics": {}})()
    trainer.log_metrics = trainer.save_metrics = lambda *a: None
    trainer.save_state = lambda: None
    monkeypatch.setattr(recipe.reward, "get_tokenizer_and_model", lambda *a: (None, None))
    monkeypatch.setattr(recipe.reward, "get_pairs", lambda *a: {})
    monkeypatch.setattr(recipe.reward, "get_trainer", lambda *a, **k: trainer)
    monkeypatch.setattr(recipe.reward, "save_reward_model", lambda *a: "# the card\n")
    uploads = []
    monkeypatch.setattr(huggingface_hub, "upload_file", lambda **kw: uploads.append(kw))
    recipe.main(RewardScriptArguments(), trainer.args, ModelConfig(model_name_or_path="default"))

    assert ("push_to_hub", {"tags": ["hf-critic", "reward-model"]}) in calls
    assert uploads == [
        {"path_or_fileobj": b"# the card\n", "path_in_repo": "README.md", "repo_id": "org/my-critic", "token": None}
    ]
    assert (tmp_path / "README.md").read_text() == "# the card\n"


def test_eval_instruct_pairs_train_a_reward_model_after_split_by_query(tmp_path, tiny_model_dir):
    """The route of docs/build-a-critic.md: Eval-Instruct's pairwise config, split by query, is what recipes/reward.py
    reads with --dataset_name data/eval_instruct --dataset_config pairwise_reference_free."""
    import importlib.util
    from pathlib import Path

    import datasets
    from transformers import AutoTokenizer

    from hf_critic.eval_instruct.stages.output import OUTPUT_FEATURES
    from hf_critic.training.reward import load_pairs, preference_pairs

    spec = importlib.util.spec_from_file_location(
        "split_by_query", Path(__file__).parents[2] / "scripts" / "eval_instruct" / "split_by_query.py"
    )
    split = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(split)
    features = OUTPUT_FEATURES["pairwise_reference_free"]
    rows = [
        {
            **dict.fromkeys(features),
            "query_id": f"q{i // 2}",
            "question": f"Question {i // 2}?",
            "response_1": f"Good answer {i}.",
            "response_2": f"Bad {i}",
            "label": i % 3 % 2,
            "swapped": i % 2 == 1,
            "messages": [{"role": "user", "content": "judge"}],
        }
        for i in range(40)
    ]
    configs = split.split_configs(
        datasets.DatasetDict({"pairwise_reference_free": datasets.Dataset.from_list(rows, features=features)}),
        validation_fraction=0.2,
        test_fraction=0.0,
        seed=0,
    )
    configs["pairwise_reference_free"].save_to_disk(str(tmp_path / "pairwise_reference_free"))

    script = RewardScriptArguments(dataset_name=str(tmp_path), dataset_config="pairwise_reference_free")
    pairs = load_pairs(script, seed=0)
    assert len(pairs["train"]) + len(pairs["validation"]) == 40 and len(pairs["validation"]) > 0
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    encoded = preference_pairs(pairs["train"], tokenizer, 64, source="eval_instruct")
    kept = [r for r in pairs["train"] if not r["swapped"] and r["label"] in (0, 1)]
    assert len(encoded) == len(kept) > 0 and encoded[0]["chosen_ids"] and encoded[0]["rejected_ids"]


def test_the_reward_trainer_keeps_the_length_columns_through_the_public_route(tmp_path):
    """Remove_unused_columns=False carries the length columns to the collator (TRL's private
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
    args = RewardConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        report_to=[],
        per_device_eval_batch_size=4,
        max_length=128,
    )
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
