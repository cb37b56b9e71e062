"""Model loading: dtype choice, CPU threads, and the stale GGUF config of the converted default critic."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from hf_critic import models
from hf_critic.backends.transformers import TransformersBackend


def test_inference_dtype_names_and_auto(monkeypatch):
    assert models.inference_dtype("float32") is torch.float32
    assert models.inference_dtype("bfloat16") is torch.bfloat16
    assert models.inference_dtype(torch.float16) is torch.float16
    with pytest.raises(ValueError, match="unknown dtype 'fp8'"):
        models.inference_dtype("fp8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(models, "native_bf16_cpu", lambda: True)
    assert models.inference_dtype("auto") is torch.bfloat16
    monkeypatch.setattr(models, "native_bf16_cpu", lambda: False)
    assert models.inference_dtype("auto") is torch.float32  # emulated bfloat16 is slow: stay in float32
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert models.inference_dtype("auto") == "auto"  # the checkpoint's own dtype on GPU


def test_native_bf16_cpu_reads_torch_capabilities(monkeypatch):
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"amx_bf16": False, "avx512_bf16": True})
    assert models.native_bf16_cpu()
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"avx2": True})
    assert not models.native_bf16_cpu()


def test_default_num_threads_is_one_per_core():
    assert models.default_num_threads(cores=2) == 2
    assert models.default_num_threads(cores=0) >= 1
    assert models.default_num_threads() >= 1


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
    assert f32.name.endswith("|float32") and bf16.name.endswith("|bfloat16") and f32.name != bf16.name
