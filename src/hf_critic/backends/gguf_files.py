"""GGUF files: their facts (weight type, fingerprint) and re-encodings that llama.cpp's CPU kernels run fast.

llama.cpp multiplies each weight type with its own kernel, and on x86 some types have no fast one: Q4_1 has neither
llamafile's tiled matrix multiply nor a repacked layout, Q8_0 has both. Measured here: the the probability read-out of
the embedded critic (SmolLM2-135M-Instruct, the shipped Q4_1 file) on 24 MT-Bench turn-1 rows, 4 slots, 2 threads,
a 2-core AMD EPYC with AVX-512 BF16, against transformers float32 on the same rows in the same run (1.50-1.71 rows/s):

============================  ==========================  ===========================
weights                       prebuilt wheel (AVX2)       llama.cpp built for the CPU
============================  ==========================  ===========================
Q4_1 (the file)               0.75-0.80 rows/s            0.78
Q8_0 (re-encoded)             1.18-1.30                   1.56-1.66
BF16 / F16 (re-encoded)       0.63 / 0.62                 1.63 / 1.29
F32 (exact)                   0.79                        1.29
============================  ==========================  ===========================

Text critiques (64 new tokens, greedy, 8 rows) from the Q8_0 re-encoding took 12.6 s at 1 slot and 11.1 s at 8,
against 16.1-16.9 s and 16.3 s from the Q4_1 file: a 135M model decodes at its compute, not its bandwidth, so the
larger file costs nothing there. So ``recode="auto"`` re-encodes Q4_1 to Q8_0 for models up to
:data:`AUTO_MAX_PARAMETERS` (larger ones decode bound by memory bandwidth, where Q8_0's 8.5 bits a weight read 1.7x
the bytes of Q4_1's 5: not measured here, left as they are). Verdict probabilities move by at most 0.06 (the Q4_1
file's own distance to transformers float32 is 0.035-0.038 on the same rows; ``tests/backends/test_llamacpp.py``).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from ..core.errors import BadInputError
from ..core.identity import file_digest

__all__ = [
    "AUTO_MAX_PARAMETERS",
    "GGUFError",
    "RECODE_CHOICES",
    "RECODE_TYPES",
    "SLOW_ON_CPU",
    "check_gguf",
    "control_tokens",
    "file_type",
    "fingerprint",
    "parameter_count",
    "recoded_gguf",
    "requantize_gguf",
]

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"


class GGUFError(BadInputError):
    """A ``--model`` given to the llama.cpp engine is not a readable GGUF file (the message names the path)."""


def check_gguf(path: str | os.PathLike) -> Path:
    """Check that ``path`` is a GGUF file (by its 4-byte magic) before llama.cpp is asked to load it.

    Args:
        path: the file.

    Returns:
        The path, user-expanded.

    Raises:
        GGUFError: the file does not exist, is a folder, or does not start with ``GGUF``.
    """
    file = Path(path).expanduser()
    if not file.exists():
        raise GGUFError(f"GGUF file {str(path)!r} does not exist")
    if not file.is_file():
        raise GGUFError(f"{str(path)!r} is a folder, not a GGUF file (the llama.cpp engine loads one .gguf file)")
    with file.open("rb") as handle:
        magic = handle.read(4)
    if magic != GGUF_MAGIC:
        raise GGUFError(f"{str(path)!r} is not a GGUF file (it starts with {magic!r}, not b'GGUF')")
    _read_header(file)
    return file


def _read_header(file: Path):
    """The file's ``GGUFReader`` (None without the ``gguf`` package); GGUFError naming the file when its header or
    tensor table does not parse or its tensors run past its end (a truncated or fake file)."""
    try:
        from gguf import GGUFReader
    except ImportError:  # pragma: no cover - gguf ships with hf-critic's llama.cpp extra
        return None
    try:
        return GGUFReader(file)
    except Exception as err:  # the reader raises ValueError, KeyError, IndexError... on damaged bytes
        detail = " ".join(str(err).split())[:160] or type(err).__name__
        raise GGUFError(
            f"{str(file)!r} starts with b'GGUF' but is not a readable GGUF file (truncated or damaged: {detail})"
        ) from None


#: Weight types llama.cpp's x86 kernels run slowly, and the type ``recode="auto"`` re-encodes them into.
SLOW_ON_CPU = {"Q4_1": "Q8_0"}
#: ``recode="auto"`` re-encodes models up to this many parameters (measured on 135M; see the module's docstring).
AUTO_MAX_PARAMETERS = 1_000_000_000
#: Weight types :func:`requantize_gguf` writes.
RECODE_TYPES = ("Q8_0", "F32")
#: ``--gguf-recode`` values: ``auto`` (:data:`SLOW_ON_CPU`, small models), ``off``, or a type to re-encode into.
RECODE_CHOICES = ("auto", "off", *RECODE_TYPES)
#: Row length of a Q8_0 block: a matrix whose rows are not a multiple of it stays float32 under Q8_0.
_Q8_0_BLOCK = 32


def fingerprint(path: str | os.PathLike) -> str:
    """SHA-256 prefix (16 hex digits) of the whole file: two files share it only when their bytes are equal.

    A name, size and first MiB are all metadata for a small model, so two checkpoints could share them: every byte is
    hashed (:func:`hf_critic.core.identity.file_digest`, once per process for a file unchanged since).
    """
    return file_digest(path)


def file_type(path: str | os.PathLike) -> str | None:
    """The GGUF's weight type from its metadata (``general.file_type``, e.g. ``"Q4_1"``, ``"ALL_F32"``), or None when
    the ``gguf`` package is absent or the header cannot say."""
    try:
        from gguf import GGUFReader, LlamaFileType
    except ImportError:
        return None
    try:
        field = GGUFReader(path).fields.get("general.file_type")
        return LlamaFileType(int(field.parts[field.data[0]][0])).name.removeprefix("MOSTLY_") if field else None
    except Exception:  # a damaged or exotic header: the fingerprint still identifies the file
        return None


def control_tokens(path: str | os.PathLike) -> tuple[str, ...]:
    """The token strings llama.cpp parses as tokens of their own in a prompt (``parse_special``): the vocabulary's
    control and user-defined tokens (``tokenizer.ggml.token_type`` 3 and 4), longest first.

    Raises:
        GGUFError: see :func:`check_gguf`.
    """
    from gguf import GGUFReader, TokenType

    fields = GGUFReader(check_gguf(path)).fields
    tokens, types = fields.get("tokenizer.ggml.tokens"), fields.get("tokenizer.ggml.token_type")
    if tokens is None or types is None:
        return ()
    special = {int(TokenType.CONTROL), int(TokenType.USER_DEFINED)}
    found = {
        bytes(tokens.parts[tokens.data[i]]).decode("utf-8", "replace")
        for i, part in enumerate(types.data)
        if int(types.parts[part][0]) in special
    }
    return tuple(sorted(found, key=lambda t: (-len(t), t)))


def parameter_count(path: str | os.PathLike) -> int:
    """Weights in the GGUF file (every tensor's elements), read from its header."""
    from gguf import GGUFReader

    return sum(int(t.n_elements) for t in GGUFReader(path).tensors)


def requantize_gguf(source: str | os.PathLike, target: str | os.PathLike, tensor_type: str = "F32") -> Path:
    """Write a copy of a GGUF file with its weight matrices in ``tensor_type``; metadata (tokenizer, chat template)
    is copied unchanged and ``general.file_type`` names the new type.

    ``"F32"`` de-quantises every tensor: the same weights, exactly, which llama.cpp then multiplies in float32 (its
    critiques match transformers'; on a quantised file it also quantises the activations to 8 bits). ``"Q8_0"``
    re-quantises the matrices (8-bit, one scale per 32 weights) from their float32 values, so a Q4_1 matrix moves by
    at most half a Q8_0 step; vectors (norms) stay float32, as llama.cpp's own quantiser leaves them.

    Args:
        source: a GGUF file (any type the ``gguf`` package can de-quantise: Q4_0/1, Q5_0/1, Q8_0, K-quants, F16...).
        target: the file to write (its folder must exist; an existing file is replaced).
        tensor_type: ``"F32"`` or ``"Q8_0"``.

    Returns:
        ``target`` as a Path.

    Raises:
        GGUFError: ``source`` is not a GGUF file.
        ValueError: another ``tensor_type``.
        NotImplementedError: a tensor type the ``gguf`` package cannot de-quantise.
    """
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter, LlamaFileType
    from gguf.quants import dequantize, quantize

    if tensor_type not in RECODE_TYPES:
        raise BadInputError(f"tensor_type must be 'F32' or 'Q8_0', not {tensor_type!r}")
    kind = GGMLQuantizationType[tensor_type]
    reader = GGUFReader(check_gguf(source))
    writer = GGUFWriter(target, arch=reader.fields["general.architecture"].contents())
    new_file_type = LlamaFileType.ALL_F32 if tensor_type == "F32" else LlamaFileType.MOSTLY_Q8_0
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter itself
        value = new_file_type if field.name == "general.file_type" else field.contents()
        kind_of_field = field.types[0]
        sub_type = field.types[-1] if kind_of_field == GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, kind_of_field, sub_type=sub_type)
    for tensor in reader.tensors:
        weights = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        if kind == GGMLQuantizationType.Q8_0 and weights.ndim == 2 and weights.shape[-1] % _Q8_0_BLOCK == 0:
            writer.add_tensor(tensor.name, quantize(weights, kind), raw_dtype=kind)
        else:
            writer.add_tensor(tensor.name, weights, raw_dtype=GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(target)


def _seal(target: Path) -> Path:
    """The file beside a re-encoding holding its fingerprint, written once the re-encoding is complete."""
    return target.with_name(target.name + ".sha256")


def _verified(target: Path) -> bool:
    """Whether a kept re-encoding is whole: its bytes hash to the fingerprint written beside it when it was complete.
    A truncated, damaged or unsealed one is said and written again (no run fails on a broken cache file)."""
    if not target.is_file():
        return False
    seal = _seal(target)
    if seal.is_file() and seal.read_text(encoding="utf-8").strip() == fingerprint(target):
        return True
    logger.warning(
        "%s: the kept re-encoding does not match its fingerprint (truncated or damaged); writing it again", target
    )
    return False


def recoded_gguf(path: str | os.PathLike, recode: str = "auto", folder: str | os.PathLike | None = None) -> Path:
    """The file llama.cpp should load for ``path``: itself, or its re-encoding (written once, then reused).

    Args:
        path: a GGUF file.
        recode: ``"auto"``: a weight type of :data:`SLOW_ON_CPU` in a model of at most :data:`AUTO_MAX_PARAMETERS`
            parameters is re-encoded into the type listed there; ``"off"``: the file as it is; ``"Q8_0"`` or
            ``"F32"``: re-encoded into that type (unless it already is).
        folder: where re-encodings are kept (default ``hf_critic.backends.models.cache_dir() / "gguf"``), named by the
            source's stem, fingerprint (of its whole content) and the new type, so a changed source gets a new one.
            Written to a temporary name and renamed: a run killed mid-write leaves no half file behind; its own
            fingerprint is kept beside it (``.sha256``) and checked before each use, a broken one written again.

    Returns:
        The path to load.

    Raises:
        ValueError: an unknown ``recode``.
        GGUFError: a forced type (not ``auto``) whose re-encoding cannot be written, one line naming the folder
            (``auto`` then logs a warning and returns ``path``).
    """
    if recode not in RECODE_CHOICES:
        raise BadInputError(f"recode must be one of {', '.join(RECODE_CHOICES)}, not {recode!r}")
    source = Path(path)
    current = file_type(source)
    if recode == "off" or current is None:
        return source
    if recode == "auto":
        target_type = SLOW_ON_CPU.get(current)
        if target_type is None or parameter_count(source) > AUTO_MAX_PARAMETERS:
            return source
    else:
        target_type = recode
    if current in (target_type, f"ALL_{target_type}"):
        return source
    if folder is None:
        from .models import cache_dir

        folder = cache_dir() / "gguf"
    target = Path(folder) / f"{source.stem}.{fingerprint(source)}.{target_type}.gguf"
    if not _verified(target):
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        started = time.perf_counter()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            requantize_gguf(source, partial, target_type)
            os.replace(partial, target)
            _seal(target).write_text(fingerprint(target) + "\n", encoding="utf-8")
        except OSError as err:  # a full disk or a read-only cache: auto falls back to the file, a forced type fails
            if partial.is_file():
                partial.unlink()
            reason = f"{err.strerror or err}: {err.filename or folder}"
            if recode != "auto":
                raise GGUFError(
                    f"gguf_recode={recode}: cannot write the re-encoding of {source} into {folder} "
                    f"({reason}); set HF_CRITIC_CACHE to a writable folder or pass gguf_recode=off"
                ) from None
            logger.warning(
                "%s: could not write its %s re-encoding (%s); running the file as it is",
                source.name,
                target_type,
                reason,
            )
            return source
        logger.info(
            "%s: %s weights re-encoded as %s for llama.cpp's fast CPU kernels in %.0f s, kept as %s (--gguf-recode "
            "off keeps the file as it is)",
            source.name,
            current,
            target_type,
            time.perf_counter() - started,
            target,
        )
    return target
