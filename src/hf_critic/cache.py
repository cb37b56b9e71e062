"""A persistent generation cache: what makes long runs resumable.

Every finished generation is stored under a hash of everything that determines it (model, messages,
decoding parameters). A run killed part-way and started again finds its finished work here and
redoes none of it; a rerun of the same configuration makes no model or API call at all. SQLite in WAL
mode commits each batch atomically, so a SIGKILL loses at most the batch in flight.

What is stored is not always final: :func:`generate_through_cache` takes the caller's acceptance rule (its parser),
and a stored answer that fails it is generated again (see :func:`acceptable`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def cache_key(**parts: Any) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (keys sorted, UTF-8): equal inputs give equal keys.

    Never pass secrets (API keys) as parts: keys are stable, but the cache is a file on disk.
    """
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


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
                found.update((k, json.loads(v)) for k, v in rows)
        return found

    def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None."""
        return self.get_many([key]).get(key)

    def put_many(self, items: Mapping[str, Any]) -> None:
        """Store all items in one transaction (all or nothing)."""
        rows = [(k, json.dumps(v, ensure_ascii=False)) for k, v in items.items()]
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


Check = Callable[[str], "str | None"]


@dataclass
class Generations:
    """What :func:`generate_through_cache` returns.

    Attributes:
        texts: one list of completions per conversation (None where the conversation was None).
        cut_off: per conversation, whether each completion stopped at ``max_new_tokens`` (a list of bools), or None
            where that is unknown (a backend that does not say, an entry stored without it, a None conversation).
        cached: inputs answered from the cache.
        reasked: inputs whose stored entry the acceptance rule refused, so they were generated again.
    """

    texts: list[list[str] | None]
    cut_off: list[list[bool] | None]
    cached: int = 0
    reasked: int = 0


def _entry(value: Any) -> tuple[list[str], list[bool] | None]:
    """A stored value as ``(texts, cut_off)``: a list of texts (no cut-off flags), or ``{"texts", "cut_off"}``."""
    if isinstance(value, Mapping):
        return list(value["texts"]), (list(value["cut_off"]) if value.get("cut_off") is not None else None)
    return list(value), None


def acceptable(texts: Sequence[str], cut_off: Sequence[bool] | None, check: Check) -> bool:
    """The acceptance rule of a stored generation: every completion passes ``check`` (``text -> reason | None``, the
    caller's parser) or stopped at ``max_new_tokens`` (the budget's answer, which asking again gives again). A check
    that raises refuses the text."""
    for k, text in enumerate(texts):
        if cut_off is not None and k < len(cut_off) and cut_off[k]:
            continue
        try:
            if check(text) is not None:
                return False
        except Exception:  # noqa: BLE001 - a text the parser chokes on is not a good answer
            return False
    return True


def generate_through_cache(
    backend, conversations, decoding, cache: GenerationCache | None, check: Check | None = None
) -> Generations:
    """Generate through the cache: what is stored and acceptable is read back, the rest generated in committed chunks.

    With ``check``, a stored entry is read back only when :func:`acceptable`: an answer that does not parse (say, a
    flaky server's garbled critique, kept by an older version or by an earlier run) is generated again, replaces the
    stored one and is counted in :attr:`Generations.reasked`; answers cut off at ``max_new_tokens`` are kept. A
    backend with ``generate_checked(conversations, decoding, check)`` (:class:`~hf_critic.backends.openai.OpenAIBackend`:
    answers from a server, which can go bad on the way) is handed the check, so it asks again at once for the answers
    it refuses (bounded), and says which completions stopped at ``max_new_tokens``; they are stored with that flag.
    Pass a check only for such backends: a local engine given the same input writes the same text again.

    Args:
        backend: a :class:`~hf_critic.backends.base.Backend` (its ``name`` is part of the key).
        conversations: chat messages per input; None entries (inputs skipped upstream) stay None.
        decoding: the :class:`~hf_critic.decoding.DecodingConfig` (part of the key).
        cache: the store, or None to generate everything (one backend call).
        check: ``text -> reason | None``, the caller's parser, or None to read back every stored entry.

    Returns:
        :class:`Generations` (equal conversations share one generation).
    """
    keys = [
        None if c is None else cache_key(model=backend.name, messages=c, decoding=decoding.__dict__)
        for c in conversations
    ]
    stored = cache.get_many([k for k in keys if k]) if cache is not None else {}
    done: dict[str, tuple[list[str], list[bool] | None]] = {}
    refused = set()
    for key, value in stored.items():
        entry = _entry(value)
        if check is not None and not acceptable(*entry, check):
            refused.add(key)
        else:
            done[key] = entry
    cached = sum(1 for k in keys if k in done)
    reasked = sum(1 for k in keys if k in refused)
    first = {}  # one generation per distinct key: equal inputs in one call are generated once
    for i, k in enumerate(keys):
        if k and k not in done:
            first.setdefault(k, i)
    todo = list(first.values())
    checked = check is not None and hasattr(backend, "generate_checked")
    # Commit every few batches, so a killed run keeps everything finished before the kill.
    chunk = max(getattr(backend, "batch_size", 8) * 4, 1) if cache is not None else max(len(todo), 1)
    for start in range(0, len(todo), chunk):
        part = todo[start : start + chunk]
        inputs = [conversations[i] for i in part]
        if checked:
            outputs, cut = backend.generate_checked(inputs, decoding, check)
        else:
            outputs, cut = backend.generate(inputs, decoding), [None] * len(part)
        fresh = {keys[i]: (list(out), c) for i, out, c in zip(part, outputs, cut, strict=True)}
        if cache is not None:
            cache.put_many({k: t if c is None else {"texts": t, "cut_off": list(c)} for k, (t, c) in fresh.items()})
        done.update(fresh)
    return Generations(
        texts=[done[k][0] if k else None for k in keys],
        cut_off=[done[k][1] if k else None for k in keys],
        cached=cached,
        reasked=reasked,
    )


def cached_generate(backend, conversations, decoding, cache: GenerationCache | None):
    """Generate through the cache: what is stored is read back, the rest generated in committed chunks.

    Every generation of hf-critic (critic, generator, judge) goes through here (or through
    :func:`generate_through_cache`, which this calls without a check), keyed by model, messages and decoding, so a
    killed run restarted repeats no finished generation and a rerun makes no model call.

    Args:
        backend: a :class:`~hf_critic.backends.base.Backend` (its ``name`` is part of the key).
        conversations: chat messages per input; None entries (inputs skipped upstream) stay None.
        decoding: the :class:`~hf_critic.decoding.DecodingConfig` (part of the key).
        cache: the store, or None to generate everything (one backend call).

    Returns:
        ``(generations, cached)``: one list of completions per conversation (None where the input was None; equal
        conversations share one generation), and how many inputs were answered from the cache.
    """
    out = generate_through_cache(backend, conversations, decoding, cache)
    return out.texts, out.cached
