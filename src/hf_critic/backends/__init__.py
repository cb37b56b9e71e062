"""Generation backends behind one small interface (see :class:`~hf_critic.backends.base.Backend`)."""

from __future__ import annotations

from ..core.errors import BadInputError
from .base import Backend

__all__ = ["Backend", "load_backend"]


def load_backend(
    model: str | None = None,
    *,
    engine: str = "auto",
    batch_size: int = 8,
    num_threads: int | None = None,
    dtype: str = "auto",
    trust_remote_code: bool = False,
    progress: bool = True,
    gguf_recode: str = "auto",
    tensor_parallel_size: int = 1,
    data_parallel_size: int = 1,
) -> Backend:
    """A local backend for ``model`` on the engine :func:`hf_critic.backends.models.resolve_engine` picks.

    Args:
        model: a model folder, Hub id or ``.gguf`` file; None = the embedded default critic.
        engine: ``"auto"``, ``"transformers"``, ``"llamacpp"`` or ``"vllm"`` (:mod:`hf_critic.backends.vllm`).
        batch_size: transformers: sequences per ``generate`` call; llama.cpp: parallel slots. Also decides ``auto``.
        num_threads: CPU threads >= 1 (default: OMP_NUM_THREADS when set, else one per physical core).
        dtype: transformers' dtype (``"auto"``: :func:`hf_critic.backends.models.auto_dtype`); llama.cpp runs the GGUF's own
            quantisation and refuses another dtype.
        trust_remote_code: transformers only; run the model repository's own code.
        progress: progress bars.
        gguf_recode: llama.cpp only: ``"auto"``, ``"off"``, ``"Q8_0"`` or ``"F32"``, the re-encoding of the GGUF it
            runs (:func:`hf_critic.backends.gguf_files.recoded_gguf`).
        tensor_parallel_size, data_parallel_size: vLLM only: its tensor and data parallelism (>= 1).

    Returns:
        A :class:`~hf_critic.backends.transformers.TransformersBackend`, ``LlamaCppBackend`` or ``VllmBackend``.

    Raises:
        ValueError: an unknown engine, a GGUF path or a ``gguf_recode`` other than ``auto`` for transformers, a dtype
            for llama.cpp, a parallel size other than 1 off vLLM.
        hf_critic.core.errors.MissingExtraError: engine=vllm without vLLM (``make vllm``).
        hf_critic.backends.llamacpp.GGUFError: a missing or non-GGUF file for llama.cpp.
        hf_critic.backends.models.ModelNotFoundError: a transformers model that cannot be found offline.
    """
    from .models import default_gguf_file, is_embedded_critic, resolve_engine
    from .vllm_venv import refuse_parallel

    chosen = resolve_engine(engine, model, batch_size)
    refuse_parallel(chosen, tensor_parallel_size, data_parallel_size)
    common = {"trust_remote_code": trust_remote_code, "batch_size": batch_size, "progress": progress}
    if chosen == "vllm":
        backend = _vllm_backend(model, dtype, gguf_recode, (tensor_parallel_size, data_parallel_size), **common)
    elif chosen == "llamacpp":
        from .llamacpp import LlamaCppBackend

        if dtype != "auto":
            raise BadInputError(f"dtype={dtype}: the llama.cpp engine runs the GGUF file's own quantisation")
        backend = LlamaCppBackend(
            model or default_gguf_file(),
            parallel=batch_size,
            threads=num_threads,
            progress=progress,
            recode=gguf_recode,
        )
    else:
        from .transformers import TransformersBackend

        if gguf_recode != "auto":
            raise BadInputError(
                f"gguf_recode={gguf_recode}: the transformers engine runs no GGUF file (it re-encodes "
                "for engine=llamacpp only)"
            )
        backend = TransformersBackend.from_pretrained(model, num_threads=num_threads, dtype=dtype, **common)
    backend.embedded = is_embedded_critic(model)  # what --verdict auto keys on, the same on every path
    return backend


def _vllm_backend(model: str | None, dtype: str, gguf_recode: str, parallel: tuple[int, int], **common) -> Backend:
    """:meth:`hf_critic.backends.vllm.VllmBackend.from_pretrained` with ``parallel = (tensor, data)`` sizes; no GGUF
    re-encoding (ValueError)."""
    from .vllm import VllmBackend

    if gguf_recode != "auto":
        raise BadInputError(f"gguf_recode={gguf_recode}: engine=vllm runs no GGUF file")
    tensor, data = parallel
    return VllmBackend.from_pretrained(
        model, dtype=dtype, tensor_parallel_size=tensor, data_parallel_size=data, **common
    )
