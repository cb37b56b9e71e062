"""Model loading: dtype choice, CPU threads, and the stale GGUF config of the converted default critic."""

from __future__ import annotations

import functools
import json
import re
import shutil

import pytest
import torch

from hf_critic.backends import models
from hf_critic.backends.transformers import TransformersBackend
from hf_critic.critic.decoding import DecodingConfig

AMX = {"amx_bf16": True, "amx_tile": True, "avx512_bf16": True, "avx512_f": True, "avx2": True}
AVX512_BF16 = {"amx_bf16": False, "amx_tile": False, "avx512_bf16": True, "avx512_f": True, "avx2": True}
AVX2 = {"avx2": True}


def test_inference_dtype_names_and_auto(monkeypatch):
    assert models.inference_dtype("float32") is torch.float32
    assert models.inference_dtype("bfloat16") is torch.bfloat16
    assert models.inference_dtype(torch.float16) is torch.float16
    with pytest.raises(ValueError, match="unknown dtype 'fp8'"):
        models.inference_dtype("fp8")
    monkeypatch.setattr(models, "inference_device", lambda: torch.device("cpu"))
    monkeypatch.setattr(models, "cpu_flags", lambda: AMX)
    assert models.inference_dtype("auto", batch_size=1) is torch.float32
    assert models.inference_dtype("auto", batch_size=8) is torch.bfloat16
    monkeypatch.setattr(models, "cpu_flags", lambda: AVX2)
    assert models.inference_dtype("auto") is torch.float32  # emulated bfloat16 is slow: stay in float32
    monkeypatch.setattr(models, "inference_device", lambda: torch.device("cuda"))
    assert models.inference_dtype("auto") == "auto"  # the checkpoint's own dtype on GPU


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        # AMX: bfloat16 gains nothing on matrix-vector products at batch 1 (0.33 against 0.43 critiques/s)
        (AMX, {1: torch.float32, 3: torch.float32, 4: torch.bfloat16, 8: torch.bfloat16, 32: torch.bfloat16}),
        # AVX-512 BF16 without AMX: bfloat16 matrix-vector products are 4.3x slower than float32
        (AVX512_BF16, {1: torch.float32, 4: torch.float32, 8: torch.bfloat16, 32: torch.bfloat16}),
        (AVX2, {1: torch.float32, 8: torch.float32}),
    ],
)
def test_auto_dtype_per_cpu_and_batch_size(flags, expected):
    assert {b: models.auto_dtype(b, flags) for b in expected} == expected


def test_auto_dtype_never_picks_the_slower_measured_dtype():
    """Every measured (CPU, batch) figure: the dtype auto picks is at least as fast as float32."""
    classes = {"amx": AMX, "avx512_bf16": AVX512_BF16}
    for cpu, table in models.MEASUREMENTS.items():
        f32, bf16 = table["transformers float32"], table["transformers bfloat16"]
        for batch in f32.keys() & bf16.keys():
            picked = bf16 if models.auto_dtype(batch, classes[cpu]) is torch.bfloat16 else f32
            assert picked[batch] >= f32[batch], (cpu, batch)


def test_cpu_flags_reads_torch_capabilities(monkeypatch):
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"amx_bf16": False, "avx512_bf16": True})
    assert models.cpu_flags() == {
        "amx_bf16": False,
        "amx_tile": False,
        "avx512_bf16": True,
        "avx512_f": False,
        "avx2": False,
    }


def test_default_num_threads_is_one_per_core(monkeypatch):
    from hf_critic.backends.threads import default_num_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert default_num_threads(cores=2) == 2
    assert default_num_threads(cores=0) >= 1
    assert default_num_threads() >= 1


def test_stale_gguf_config_is_dropped_at_load(tiny_model_dir, tmp_path):
    folder = tmp_path / "converted"
    shutil.copytree(tiny_model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gguf", "gguf_file": "x.gguf", "dequantize": False}
    (folder / "config.json").write_text(json.dumps(config))

    clean = models.dequantized_gguf_config(folder)
    assert clean is not None and not hasattr(clean, "quantization_config")
    assert models.dequantized_gguf_config(tiny_model_dir) is None  # an ordinary folder is left alone
    (folder / "x.gguf").write_bytes(b"")
    assert models.dequantized_gguf_config(folder) is None  # a real GGUF checkpoint is not "converted"
    (folder / "x.gguf").unlink()

    lm, _ = models.load_model(folder, dtype="float32")
    assert getattr(lm, "hf_quantizer", None) is None and not hasattr(lm.config, "quantization_config")


def test_backend_name_carries_the_dtype(tiny_model_dir):
    # cached generations are keyed by the backend name: float32 and bfloat16 critiques must never mix
    f32 = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", num_threads=1)
    bf16 = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="bfloat16", num_threads=1)
    assert f32.model.dtype is torch.float32 and bf16.model.dtype is torch.bfloat16
    assert "|float32|weights:" in f32.name and "|bfloat16|weights:" in bf16.name and f32.name != bf16.name


# ------------------------------------------------------------------------------------------------ shared prefix
JUDGE = "You are a strict judge. " * 12  # the instructions every critic prompt of a template shares


def _conversations(n: int) -> list[list[dict]]:
    answers = ["yes", "a longer answer with several words in it", "no idea", "four", "it depends on the context"]
    return [
        [{"role": "system", "content": JUDGE}, {"role": "user", "content": f"Question {i}: {answers[i % 5]}"}]
        for i in range(n)
    ]


@pytest.mark.parametrize(
    "decoding",
    [
        DecodingConfig(max_new_tokens=8),
        DecodingConfig(strategy="self_consistency", num_samples=3, max_new_tokens=6, seed=3),
        DecodingConfig(strategy="beam", num_beams=2, max_new_tokens=6),
    ],
    ids=["greedy", "self_consistency", "beam"],
)
def test_shared_prefix_is_prefilled_once_and_changes_no_output(tiny_model_dir, monkeypatch, decoding):
    from hf_critic.backends import prefill as engine

    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", batch_size=3, progress=False)
    conversations = _conversations(7)
    encoded = backend.tokenizer([backend._prompt_text(c) for c in conversations], add_special_tokens=False)[
        "input_ids"
    ]
    prefix = backend._shared_prefix(encoded)
    assert len(prefix) >= engine.MIN_SHARED_PREFIX and all(ids[: len(prefix)] == prefix for ids in encoded)

    calls, forward = [], backend.model.forward

    @functools.wraps(forward)  # keeps the signature the engine inspects
    def counting(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape)
        return forward(*args, **kwargs)

    monkeypatch.setattr(backend.model, "forward", counting)
    shared = backend.generate(conversations, decoding)
    prefills = [shape for shape in calls if shape[-1] > 1]
    assert prefills[0] == (1, len(prefix))  # the prefix once, then only the rows' own tokens
    assert len(prefills) == 4 and all(shape[-1] <= max(map(len, encoded)) - len(prefix) for shape in prefills[1:])

    monkeypatch.setattr(engine, "MIN_SHARED_PREFIX", 10**9)
    assert backend.generate(conversations, decoding) == shared


def test_shared_prefix_leaves_verdict_probabilities_unchanged(tiny_model_dir, monkeypatch):
    from hf_critic.backends import prefill as engine

    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", batch_size=3, progress=False)
    conversations, verdicts = _conversations(5), [str(v) for v in range(1, 11)]
    shared = backend.verdict_probabilities(conversations, ["Rating: [["] * 5, verdicts)
    monkeypatch.setattr(engine, "MIN_SHARED_PREFIX", 10**9)
    plain = backend.verdict_probabilities(conversations, ["Rating: [["] * 5, verdicts)
    for a, b in zip(shared, plain, strict=True):
        assert abs(a.mass - b.mass) < 1e-5
        assert max(abs(a.probabilities[v] - b.probabilities[v]) for v in verdicts) < 1e-5


def test_no_prefix_sharing_for_a_single_prompt_or_a_short_prefix(tiny_model_dir):
    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", progress=False)
    assert backend._shared_prefix([[1, 2, 3] * 20]) == []  # one prompt: nothing to share
    assert backend._shared_prefix([[1] * 40 + [2], [1] * 40 + [3]]) == [1] * 40
    assert backend._shared_prefix([[1] * 10 + [2], [1] * 10 + [3]]) == []  # below MIN_SHARED_PREFIX
    assert backend._shared_prefix([[1] * 40, [1] * 60]) == [1] * 39  # every row keeps a token of its own


@pytest.mark.parametrize(
    ("files", "missing"),
    [
        ({}, "no config.json"),  # an empty folder
        ({"notes.txt": "x", "data.jsonl": "{}\n"}, "no config.json"),  # a folder of text files
        ({"config.json": "{}", "tokenizer.json": "{}"}, "no weights"),  # a config without the weights
    ],
)
def test_a_model_folder_without_a_model_says_so(tmp_path, capsys, files, missing):
    """A folder without config.json / weights gave a tokenizer error (or a traceback) instead of naming the folder."""
    from hf_critic.cli import main

    folder = tmp_path / "my-model"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    with pytest.raises(
        models.ModelNotFoundError, match=re.escape(f"model folder {str(folder)!r} holds no model: {missing}")
    ):
        models.resolve_model(folder)
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"question": "Q?", "response": "A"}) + "\n")
    argv = ["grade", "--model", str(folder), "--data", str(data), "--output", str(tmp_path / "out.jsonl")]
    assert main([*argv, "--template", "mtbench", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"hf-critic grade: error: model folder '{folder}' holds no model")


def test_model_folders_that_hold_a_model_resolve(tiny_model_dir, tmp_path):
    assert models.resolve_model(tiny_model_dir) == str(tiny_model_dir)
    adapter = tmp_path / "lora"  # a PEFT adapter folder (SFT with LoRA): transformers loads it onto its base
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    from safetensors.torch import save_file

    save_file({"lora_A": torch.zeros(2, 2)}, adapter / "adapter_model.safetensors")
    assert models.resolve_model(adapter) == str(adapter)
    (adapter / "adapter_model.safetensors").write_bytes(b"")  # an empty weights file is no adapter
    with pytest.raises(ValueError, match="adapter_model.safetensors: not a readable safetensors file \\(0 bytes"):
        models.resolve_model(adapter)


def test_a_model_folder_without_tokenizer_files_says_so_not_sentencepiece(tiny_model_dir, tmp_path, capsys):
    """Transformers asked to install sentencepiece or tiktoken."""
    from hf_critic.cli import main

    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_model_dir / name, folder / name)
    with pytest.raises(
        models.ModelNotFoundError, match=f"model folder {re.escape(repr(str(folder)))} holds no tokenizer"
    ):
        models.resolve_model(folder)
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"question": "Q?", "response": "A"}) + "\n")
    argv = ["grade", "--model", str(folder), "--data", str(data), "--output", str(tmp_path / "out.jsonl")]
    assert main([*argv, "--template", "mtbench", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "holds no tokenizer" in err and "sentencepiece" not in err


def test_models_go_to_the_device_accelerate_names(tiny_model_dir, tmp_path, monkeypatch):
    """The device comes from accelerate's PartialState (MPS, XPU, ... not CUDA alone); a stand-in
    state naming the meta device moves the causal LM and the reward model there."""
    import accelerate
    import torch

    from hf_critic.critics.reward import RewardModel
    from hf_critic.testing.tiny_models import build_tiny_reward_model

    class Elsewhere:
        device = torch.device("meta")

    monkeypatch.setattr(accelerate, "PartialState", Elsewhere)
    assert models.inference_device() == torch.device("meta")
    assert models.inference_dtype("auto") == "auto"  # an accelerator: the checkpoint's own dtype
    lm, _ = models.load_model(str(tiny_model_dir), dtype="float32")
    assert lm.device.type == "meta"
    reward = RewardModel.from_pretrained(str(build_tiny_reward_model(tmp_path / "rm")), dtype="float32")
    assert reward.model.device.type == "meta"
