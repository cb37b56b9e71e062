"""A persistent generation cache: what makes long runs resumable.

Every finished generation is stored under a hash of everything that determines it (model, messages,
decoding parameters). A run killed part-way and started again finds its finished work here and
redoes none of it; a rerun of the same configuration makes no model or API call at all. SQLite in WAL
mode commits each batch atomically, so a SIGKILL loses at most the batch in flight.

This module is the store only: one key-value table that serves every cached thing (critiques and any generation,
verdict read-outs, rewards). Generation through it lives with the backends (:class:`hf_critic.backends.cached.CachedBackend`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError


def cache_key(**parts: Any) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (keys sorted, UTF-8): equal inputs give equal keys.

    Never pass secrets (API keys) as parts: keys are stable, but the cache is a file on disk.
    """
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _non_finite(name: str):
    raise BadInputError(f"non-finite number {name} in a cache entry")


#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def file_in_the_way(folder: str | os.PathLike) -> Path | None:
    """The file (anything but a folder) at ``folder`` or above it that stops ``folder`` from being created; None when
    the nearest existing one is a folder."""
    folder = Path(folder).expanduser()
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def check_cache_path(path: str | os.PathLike, what: str = "path") -> Path:
    """Check a cache file before anything is written or computed: a file (not a folder) whose folder can be created
    and written in, and, when it exists, a SQLite database (a cache this class wrote, not a data file).

    Args:
        path: the cache file.
        what: how the caller names it in messages (``"--cache"`` on the command line).

    Returns:
        ``path`` as a Path (``~`` expanded).

    Raises:
        ValueError: one line naming ``what`` and the path: a folder at ``path``, a file where a folder above it should
            be, no permission to write in its folder, or an existing file that is not SQLite.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        raise BadInputError(f"{what} {path}: is a folder; name the cache file (created if missing)")
    blocking = file_in_the_way(path.parent)
    if blocking is not None:
        raise BadInputError(f"{what} {path}: {blocking} is a file, not a folder")
    folder = next(p for p in (path.parent, *path.parent.parents) if p.exists())
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInputError(f"{what} {path}: no permission to write in {folder}")
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                raise BadInputError(f"{what} {path}: not a SQLite file, so not a generation cache; name another file")
    return path


class GenerationCache:
    """``key -> JSON value`` store in one SQLite file, safe to share between threads of one process.

    Args:
        path: the database file (created with its parent folder).

    Raises:
        ValueError: ``path`` cannot hold a cache (see :func:`check_cache_path`), or SQLite cannot open it.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = check_cache_path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as err:
            raise BadInputError(f"path {self.path}: cannot open it as a cache ({err})") from None

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """Values for the keys that are present (absent keys are simply missing from the result)."""
        keys = list(keys)
        found: dict[str, Any] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, value FROM generations WHERE key IN ({marks})", chunk)
                for k, v in rows:
                    try:  # an entry holding NaN / Infinity (written by older versions) is missing: computed again
                        found[k] = json.loads(v, parse_constant=_non_finite)
                    except ValueError:
                        continue
        return found

    def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None."""
        return self.get_many([key]).get(key)

    def put_many(self, items: Mapping[str, Any]) -> None:
        """Store all items in one transaction (all or nothing).

        Raises:
            ValueError: a value holding NaN or Infinity (nothing is stored: a non-finite result is never cached).
        """
        try:
            rows = [(k, json.dumps(v, ensure_ascii=False, allow_nan=False)) for k, v in items.items()]
        except ValueError:
            raise BadInputError(f"{self.path}: a result holding NaN or Infinity is not cached") from None
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO generations VALUES (?, ?)", rows)
            self._db.execute("COMMIT")

    def put(self, key: str, value: Any) -> None:
        """Store one item."""
        self.put_many({key: value})

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]

    def close(self) -> None:
        """Close the database (idempotent)."""
        with self._lock:
            self._db.close()
