"""`accelerate launch recipes/reward.py` for real: TRL's RewardTrainer with LoRA under DeepSpeed ZeRO-2 over gloo on 2 CPU
processes, on a tiny random model and pairs with a learnable signal; validation within-question accuracy rises, and
the saved adapter folder is a reward critic for `hf-critic compare`. Slow: a multi-process launch;
the first DeepSpeed run on a machine compiles a communication op (~85 s, cached in ~/.cache/torch_extensions)."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow

GOOD, BAD = "The capital of France is Paris.", "Rating: [[5]] Tie"


def _pairs(n: int, seed: int) -> list[dict]:
    """Pairs whose better response is always GOOD plus filler (the side it sits on alternates), one question each."""
    rng = random.Random(seed)
    words = "judge answer quality score reference helpful".split()
    rows = []
    for i in range(n):
        filler = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        good, bad = f"{GOOD} {filler}", f"{BAD} {filler}"
        first = i % 2 == 0
        rows.append(
            {
                "question": f"Question {i}: {filler}?",
                "response_1": good if first else bad,
                "response_2": bad if first else good,
                "label": 0 if first else 1,
                "swapped": False,
            }
        )
    return rows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_reward_recipe_under_zero2_learns_and_its_adapter_is_a_critic(tmp_path, tiny_model_dir):
    data = tmp_path / "pairs"
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(_pairs(64, 0)), "validation": datasets.Dataset.from_list(_pairs(16, 1))}
    ).save_to_disk(str(data / "pairwise_preference"))
    out = tmp_path / "out"
    command = [
        str(BIN / "accelerate"),
        "launch",
        "--config_file",
        "accelerate_configs/zero2.yaml",
        "--num_processes",
        "2",
        "--mixed_precision",
        "no",
        "--main_process_port",
        str(_free_port()),
        "recipes/reward.py",
        "--config",
        "recipes/tiny/reward/ci.yaml",
        "--model_name_or_path",
        str(tiny_model_dir),
        "--dataset_name",
        str(data),
        "--output_dir",
        str(out),
        "--use_cpu",
        "true",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-8000:]

    state = json.loads((out / "trainer_state.json").read_text())
    evals = [log for log in state["log_history"] if "eval_within_question_accuracy" in log]
    assert evals[0]["step"] == 0 and len(evals) >= 3
    assert evals[-1]["eval_within_question_accuracy"] > evals[0]["eval_within_question_accuracy"]
    assert evals[-1]["eval_within_question_accuracy"] >= 0.9
    assert all(
        -1 <= log["eval_length_correlation"] <= 1
        for log in evals
        if log["eval_length_correlation"] == log["eval_length_correlation"]
    )
    train_logs = [log for log in state["log_history"] if "pairs_per_hour" in log]
    assert train_logs and all(log["peak_rss_gb"] > 0 and "load_average" in log for log in train_logs)
    assert (out / "adapter_config.json").is_file() and (out / "hf_critic_reward.json").is_file()
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["best_metric"] == max(log["eval_within_question_accuracy"] for log in evals)
    card = (out / "README.md").read_text(encoding="utf-8")  # the model card, written on the main process only
    assert "pipeline_tag: text-classification" in card and f"hf-critic compare --model {out}" in card
    assert "| effective batch size | " in card and "(2 process(es))" in card and "Selected checkpoint:" in card

    # The saved folder is a reward critic: the better response wins on held-out pairs.
    pairs = tmp_path / "heldout.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in _pairs(8, 2)))
    judged = tmp_path / "judged.jsonl"
    graded = subprocess.run(
        [
            str(BIN / "hf-critic"),
            "compare",
            "--data",
            str(pairs),
            "--output",
            str(judged),
            "--model",
            str(out),
            "--dtype",
            "float32",
            "--no-cache",
            "--no-progress",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert graded.returncode == 0, graded.stderr[-4000:]
    rows = [json.loads(line) for line in judged.read_text().splitlines()]
    assert sum(r["critique_label"] == r["label"] for r in rows) >= 7
