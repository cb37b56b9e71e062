"""A local model known by the content of the files that decide its outputs, never by its path.

A model folder's name and dtype say nothing of what is in it: a folder retrained in place, or two checkpoints saved
under one name, would share cached critiques and calibrations, and a byte-identical copy at another path would be
refused as another critic. :func:`weights_digest` hashes every weight, configuration, tokenizer and chat-template file
of a folder (SHA-256 of the bytes, under their names relative to the folder). Each file's digest is kept by its path,
size, inode, modification time and status-change time (``st_ctime``, which every write or ``utime`` moves and no
user can set back), in memory and, given a ``store``, in a small JSON file, so a file is read once, not on every run,
and a digest never outlives a change of the file's content.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

__all__ = ["WEIGHT_SUFFIXES", "file_digest", "value_digest", "weights_digest"]

#: The files whose bytes decide a model's outputs: weights (full models and adapters), ...
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".msgpack", ".h5")
#: ... their configuration, the tokenizer and its chat template (what the model reads), and a reward critic's
#: calibration file (its pointwise map, tie band and ``max_length`` context).
_CONFIGS = (
    "config.json",
    "adapter_config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "hf_critic_reward.json",
)

_MEMORY: dict[str, str] = {}
_LOCK = threading.Lock()


def _file_key(path: Path) -> str:
    # st_ctime_ns moves on every write and utime: an edit that restores size and mtime still misses the cache
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_ino}|{stat.st_mtime_ns}|{stat.st_ctime_ns}"


def _read_store(store: Path | None) -> dict[str, str]:
    if store is None or not store.is_file():
        return {}
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # a damaged store is recomputed, never trusted
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_store(store: Path, known: dict[str, str]) -> None:
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
        tmp.replace(store)
    except OSError:  # a read-only cache folder: the digest is still right, only computed again next run
        pass


def _file_digest(path: Path, known: dict[str, str]) -> tuple[str, bool]:
    key = _file_key(path)
    if key in _MEMORY:
        return _MEMORY[key], False
    if key in known:
        _MEMORY[key] = known[key]
        return known[key], False
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    _MEMORY[key] = known[key] = digest
    return digest, True


def file_digest(path: str | os.PathLike, store: str | os.PathLike | None = None) -> str:
    """16 hex digits of SHA-256 over one file's bytes (a GGUF file, say), kept as :func:`weights_digest` keeps them.

    Args:
        path: the file.
        store: as in :func:`weights_digest`.

    Returns:
        The digest: equal only for equal bytes, whatever the file's name or folder.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    return _digests([Path(path)], store)[0][:16]


def _digests(files: list[Path], store: str | os.PathLike | None) -> list[str]:
    store = Path(store) if store is not None else None
    with _LOCK:
        known = _read_store(store)
        digests, fresh = [], False
        for path in files:
            digest, new = _file_digest(path, known)
            digests.append(digest)
            fresh |= new
        if fresh and store is not None:
            _write_store(store, known)
    return digests


def _model_files(root: Path) -> list[Path]:
    decides = (p for p in root.iterdir() if p.name.endswith(WEIGHT_SUFFIXES) or p.name in _CONFIGS)
    return sorted(p for p in decides if p.is_file())


def weights_digest(folder: str | os.PathLike, store: str | os.PathLike | None = None) -> str:
    """16 hex digits of SHA-256 over the files of a model folder that decide its outputs (or over one weight file).

    Args:
        folder: a model folder (its files ending in :data:`WEIGHT_SUFFIXES`, its configuration, tokenizer and chat
            template files, and ``hf_critic_reward.json``, one level deep), or a single file such as a GGUF.
        store: a JSON file keeping each file's digest by path, size, inode, modification and status-change time
            (created when missing); None: kept in memory only, for this process.

    Returns:
        The digest: equal only when every such file has equal bytes under the same name relative to the folder, so a
        byte-identical copy at another path has the same digest. A folder with none of these files gives the digest of
        an empty list (the folder is then known by its name alone).

    Raises:
        FileNotFoundError: ``folder`` does not exist.
    """
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such model folder or file")
    if root.is_file():
        return file_digest(root, store)
    files = _model_files(root)
    parts = [[path.name, digest] for path, digest in zip(files, _digests(files, store), strict=True)]
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:16]


def value_digest(value) -> str:
    """16 hex digits of SHA-256 over ``value`` as sorted JSON (a chat template, a calibration's fields): the part of an
    identity that lives in memory rather than in a file.

    Args:
        value: anything JSON can write (objects that it cannot are written as ``str``); None digests as ``null``.

    Returns:
        The digest: equal only for equal values.
    """
    blob = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
