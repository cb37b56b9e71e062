"""Model folders as plain checkpoints: what a folder converted from GGUF keeps that it should not.

``from_pretrained(..., gguf_file=...)`` de-quantises GGUF weights to plain float tensors, but ``save_pretrained`` of such
a model keeps ``quantization_config: {quant_method: gguf}`` in ``config.json``. vLLM refuses that folder ("Unknown
quantization method: gguf"), transformers flags the model as quantized (it refuses full fine-tuning, and warns at
inference that a non-float32 dtype casts every matmul, which it does not). hf-critic's embedded default critic is such a
folder (:func:`hf_critic.backends.models.default_model_dir`): the entry is dropped when it is converted, and from folders
converted by older versions when they are used.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from ..core.errors import BadInputError

logger = logging.getLogger(__name__)

__all__ = ["dequantized_gguf_config", "drop_gguf_quantization"]


def _stale_gguf_entry(folder: Path) -> dict | None:
    """``config.json`` of ``folder`` when it says ``quant_method: gguf`` over safetensors weights (no ``.gguf`` file
    beside them), else None."""
    path = folder / "config.json"
    if not path.is_file() or not any(folder.glob("*.safetensors")) or any(folder.glob("*.gguf")):
        return None
    try:  # io stands on this floor: the one line read_json writes, written here
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise BadInputError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None
    return config if (config.get("quantization_config") or {}).get("quant_method") == "gguf" else None


def dequantized_gguf_config(path: str | os.PathLike):
    """The config of a GGUF-converted model folder without its stale ``quantization_config``, or None.

    For a folder whose ``config.json`` is not rewritten (:func:`drop_gguf_quantization`), e.g. one read-only or written
    by another tool (module docstring). Passing the returned config to ``from_pretrained`` loads the same weights as an
    ordinary model (:func:`hf_critic.backends.models.load_model` and ``recipes/sft.py`` do), and a trained checkpoint is saved
    with a clean config.

    Args:
        path: a model folder or Hub id.

    Returns:
        A ``PretrainedConfig`` without ``quantization_config`` when ``path`` is a local folder whose config says
        ``gguf`` and that holds safetensors weights (no ``.gguf`` file); None otherwise.
    """
    folder = Path(path)
    if _stale_gguf_entry(folder) is None:
        return None
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder)
    del config.quantization_config
    return config


def drop_gguf_quantization(folder: str | os.PathLike) -> bool:
    """Remove the stale ``quantization_config: {quant_method: gguf}`` from a GGUF-converted folder's ``config.json``.

    ``save_pretrained`` of a model loaded with ``gguf_file=`` keeps that entry although the saved weights are plain
    float tensors; vLLM then refuses the folder ("Unknown quantization method: gguf") and transformers flags the model
    as quantized. The file is rewritten atomically (a temporary file renamed over it), other keys unchanged.

    Args:
        folder: a model folder holding ``config.json`` and safetensors weights (no ``.gguf`` file).

    Returns:
        True when the entry was there and is now gone; False when there was nothing to drop (no config, another
        quantization method, no safetensors weights, or a folder that holds a ``.gguf`` file).
    """
    path = Path(folder) / "config.json"
    config = _stale_gguf_entry(Path(folder))
    if config is None:
        return False
    del config["quantization_config"]
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    logger.info("dropped the stale GGUF quantization_config from %s", path)
    return True
