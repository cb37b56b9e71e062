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


def cache_key(**parts: Any) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (keys sorted, UTF-8): equal inputs give equal keys.

    Never pass secrets (API keys) as parts: keys are stable, but the cache is a file on disk.
    """
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _non_finite(name: str):
    raise ValueError(f"non-finite number {name} in a cache entry")


class GenerationCache:
    """``key -> JSON value`` store in one SQLite file, safe to share between threads of one process.

    Args:
        path: the database file (created with its parent folder).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

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
                    try:  # an entry holding NaN / Infinity (written before issue 39) is missing: computed again
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
            raise ValueError(f"{self.path}: a result holding NaN or Infinity is not cached") from None
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
