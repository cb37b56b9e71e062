"""`accelerate launch recipes/sft.py` for real: DeepSpeed ZeRO-2 over gloo on 2 CPU processes, full and LoRA, then the
checkpoint graded by `hf-critic grade` (the SFT recipe end to end). Slow: two multi-process launches; the first DeepSpeed run
on a machine also compiles a communication op (~85 s, cached in ~/.cache/torch_extensions)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from hf_critic import training
from hf_critic.prompts import get_template

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow

CRITIQUE = {
    "pointwise_referenced": "The answer matches the reference. Rating: [[8]]",
    "pairwise_reference_free": "Assistant A is clearer. [[A]]",
}


def _rows(setting: str, n: int, offset: int = 0) -> list[dict]:
    template = get_template("mtbench", setting, "en")
    rows = []
    for i in range(offset, offset + n):
        record = {
            "question": f"What is {i} + {i}?",
            "reference": f"{2 * i}",
            "response": f"It is {2 * i + i % 2}.",
            "response_1": f"{2 * i}",
            "response_2": f"{2 * i + 1}",
        }
        record = {k: v for k, v in record.items() if k in template.setting.fields}
        rows.append({**record, "messages": training.critique_messages(record, template, CRITIQUE[setting])})
    return rows


@pytest.fixture(scope="module")
def launch_inputs(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("sft-launch")
    for setting in CRITIQUE:
        datasets.DatasetDict(
            {
                "train": datasets.Dataset.from_list(_rows(setting, 16)),
                "validation": datasets.Dataset.from_list(_rows(setting, 4, offset=100)),
            }
        ).save_to_disk(str(root / "data" / setting))
    validation = root / "validation.jsonl"
    with validation.open("w") as handle:
        for i in range(6):
            handle.write(
                json.dumps({"question": f"q{i}", "reference": "r", "response": f"a{i}", "score": i % 3 + 1}) + "\n"
            )
    mixture = {
        "datasets": [
            {"id": str(root / "data"), "config": "pointwise_referenced", "weight": 1.0},
            {"id": str(root / "data"), "config": "pairwise_reference_free", "weight": 0.5},
        ],
        "seed": 0,
        "test_split": "validation",
    }
    return {"root": root, "model": tiny_model_dir, "mixture": json.dumps(mixture), "validation": validation}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(inputs, output_dir: Path, *extra: str) -> subprocess.CompletedProcess:
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
        "recipes/sft.py",
        "--config",
        "recipes/tiny/sft/ci.yaml",
        "--model_name_or_path",
        str(inputs["model"]),
        "--output_dir",
        str(output_dir),
        "--dataset_mixture",
        inputs["mixture"],
        "--validation_dataset",
        str(inputs["validation"]),
        *extra,
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-8000:]
    return result


def _grade(model_dir: Path, tmp_path: Path) -> list[dict]:
    output = tmp_path / "graded.jsonl"
    command = [
        str(BIN / "hf-critic"),
        "grade",
        "--data",
        "examples/pointwise_referenced.jsonl",
        "--output",
        str(output),
    ]
    command += [
        "--model",
        str(model_dir),
        "--template",
        "mtbench",
        "--max-new-tokens",
        "8",
        "--no-cache",
        "--no-progress",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(rows) == len((REPO / "examples" / "pointwise_referenced.jsonl").read_text().splitlines())
    assert all("critique_generation" in r and r["critique_status"] for r in rows)
    return rows


def _check_run(output_dir: Path, log: str, probability: bool = False) -> dict:
    state = json.loads((output_dir / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    evals = [h for h in state["log_history"] if "eval_critique_pearson_n" in h]
    assert len(evals) == 1 and evals[0]["eval_critique_pearson_n"] == 6  # all 6 rows, split over 2 processes
    if probability:  # validation_verdict: probability: every row has a verdict, the Pearson is a number
        assert evals[0]["eval_critique_pearson_parse_rate"] == 1.0
        assert -1 <= evals[0]["eval_critique_pearson"] <= 1
    else:
        assert evals[0]["eval_critique_pearson_parse_rate"] == 0.0  # a random model writes no verdict: NaN, counted
    assert any("eval_loss" in h for h in state["log_history"])
    card = (output_dir / "README.md").read_text()
    assert "## Validation results" in card and "## Training data" in card
    assert "/pointwise_referenced` | train | 16 | 16 | 1 | 16 | 4 |" in card
    assert "/pairwise_reference_free` | train | 16 | 16 | 0.5 | 8 | 4 |" in card
    return state


def test_zero2_launch_then_grade(launch_inputs, tmp_path):
    out = tmp_path / "full"
    result = _launch(launch_inputs, out)
    log = result.stdout + result.stderr
    assert "world size: 2" in log  # two training processes
    _check_run(out, log)
    assert (out / "model.safetensors").is_file() and (out / "chat_template.jinja").is_file()
    # A DeepSpeed checkpoint with the optimizer states partitioned over the two ranks: ZeRO for real
    shards = sorted(p.name for p in (out / "checkpoint-2" / "global_step2").iterdir())
    assert shards == [
        "mp_rank_00_model_states.pt",
        "zero_pp_rank_0_mp_rank_00_optim_states.pt",
        "zero_pp_rank_1_mp_rank_00_optim_states.pt",
    ]
    eval_results = json.loads((out / "eval_results.json").read_text())
    assert eval_results["eval_critique_pearson_n"] == 6 and "eval_loss" in eval_results
    _grade(out, tmp_path)


def test_lora_zero2_launch_then_grade(launch_inputs, tmp_path):
    out = tmp_path / "lora"
    extra = ["--use_peft", "true", "--lora_r", "4", "--lora_alpha", "8", "--lora_target_modules", "all-linear"]
    extra += ["--validation_verdict", "probability"]  # defined from the first evaluation on, under ZeRO-2 too
    result = _launch(launch_inputs, out, *extra)
    _check_run(out, result.stdout + result.stderr, probability=True)
    adapter = json.loads((out / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and adapter["base_model_name_or_path"] == str(launch_inputs["model"])
    assert (out / "adapter_model.safetensors").is_file() and not (out / "model.safetensors").exists()
    _grade(out, tmp_path)
