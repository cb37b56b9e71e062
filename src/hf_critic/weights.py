"""A local model known by the content of its weights (issue 49 item 4).

A model folder's name and dtype say nothing of what is in it: a folder retrained in place, or two checkpoints saved
under one name, would share cached critiques and calibrations. :func:`weights_digest` hashes every weight and
configuration file of a folder (SHA-256 of the bytes). Each file's digest is kept by its path, size and modification
time, in memory and, given a ``store``, in a small JSON file, so a file is read once, not on every run.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

__all__ = ["WEIGHT_SUFFIXES", "weights_digest"]

#: The files whose bytes decide a model's outputs: weights (full models and adapters) and their configuration.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".msgpack", ".h5")
_CONFIGS = ("config.json", "adapter_config.json", "generation_config.json")

_MEMORY: dict[str, str] = {}
_LOCK = threading.Lock()


def _file_key(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


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


def weights_digest(folder: str | os.PathLike, store: str | os.PathLike | None = None) -> str:
    """16 hex digits of SHA-256 over the weight and configuration files of a model folder (or one weight file).

    Args:
        folder: a model folder (its files ending in :data:`WEIGHT_SUFFIXES`, and ``config.json`` /
            ``adapter_config.json`` / ``generation_config.json``, one level deep), or a single file such as a GGUF.
        store: a JSON file keeping each file's digest by path, size and modification time (created when missing);
            None: kept in memory only, for this process.

    Returns:
        The digest: equal only when every such file has equal bytes under the same relative name. A folder with none of
        these files gives the digest of an empty list (the folder is then known by its name alone).

    Raises:
        FileNotFoundError: ``folder`` does not exist.
    """
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such model folder or file")
    files = [root] if root.is_file() else sorted(
        p for p in root.iterdir() if p.is_file() and (p.name.endswith(WEIGHT_SUFFIXES) or p.name in _CONFIGS)
    )  # fmt: skip
    store = Path(store) if store is not None else None
    with _LOCK:
        known = _read_store(store)
        parts, fresh = [], False
        for path in files:
            digest, new = _file_digest(path, known)
            parts.append([path.name, digest])
            fresh |= new
        if fresh and store is not None:
            _write_store(store, known)
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:16]
