"""A backend behind the generation cache: what makes long runs resumable.

:class:`CachedBackend` wraps any :class:`~hf_critic.backends.base.Backend` and a
:class:`~hf_critic.backends.cache.GenerationCache`. Every generation of hf-critic (critic, generator, judge, CriticBench
answers) goes through it, keyed by model, messages and decoding, so a killed run restarted repeats no finished
generation and a rerun of the same configuration makes no model or API call at all.

What is stored is not always final: :meth:`CachedBackend.generate` takes the caller's acceptance rule (its parser),
and a stored answer that fails it is generated again (see :func:`acceptable`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cache import GenerationCache, cache_key

__all__ = ["CachedBackend", "Check", "Generations", "acceptable"]

#: The caller's parser as an acceptance rule: ``text -> reason it is refused | None``.
Check = Callable[[str], "str | None"]


@dataclass
class Generations:
    """What :meth:`CachedBackend.generate` returns.

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


class CachedBackend:
    """A backend's generation through a :class:`~hf_critic.backends.cache.GenerationCache` (or straight through without one).

    Args:
        backend: a :class:`~hf_critic.backends.base.Backend` (its ``name`` is part of every key; its ``batch_size``
            sets how often finished work is committed).
        cache: the store, or None to generate everything in one backend call.
    """

    def __init__(self, backend, cache: GenerationCache | None):
        self.backend = backend
        self.cache = cache

    def key(self, conversation, decoding) -> str:
        """The cache key of one conversation under ``decoding``: model name, messages and decoding parameters."""
        return cache_key(model=self.backend.identity, messages=conversation, decoding=decoding.__dict__)

    def generate(self, conversations, decoding, check: Check | None = None) -> Generations:
        """Generate through the cache: what is stored and acceptable is read back, the rest generated in committed
        chunks (every few batches, so a killed run keeps everything finished before the kill).

        With ``check``, a stored entry is read back only when :func:`acceptable`: an answer that does not parse (say,
        a flaky server's garbled critique, kept by an older version or by an earlier run) is generated again,
        replaces the stored one and is counted in :attr:`Generations.reasked`; answers cut off at ``max_new_tokens``
        are kept. A backend with ``generate_checked(conversations, decoding, check)``
        (:class:`~hf_critic.backends.openai.OpenAIBackend`: answers from a server, which can go bad on the way) is
        handed the check, so it asks again at once for the answers it refuses (bounded), and says which completions
        stopped at ``max_new_tokens``; they are stored with that flag. Pass a check only for such backends: a local
        engine given the same input writes the same text again.

        Args:
            conversations: chat messages per input; None entries (inputs skipped upstream) stay None.
            decoding: the :class:`~hf_critic.critic.decoding.DecodingConfig` (part of the key).
            check: ``text -> reason | None``, the caller's parser, or None to read back every stored entry.

        Returns:
            :class:`Generations` (equal conversations share one generation).
        """
        keys = [None if c is None else self.key(c, decoding) for c in conversations]
        done, refused = self._stored(keys, check)
        first = {}  # one generation per distinct key: equal inputs in one call are generated once
        for i, k in enumerate(keys):
            if k and k not in done:
                first.setdefault(k, i)
        todo = list(first.values())
        checked = check is not None and hasattr(self.backend, "generate_checked")
        chunk = max(getattr(self.backend, "batch_size", 8) * 4, 1) if self.cache is not None else max(len(todo), 1)
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            inputs = [conversations[i] for i in part]
            if checked:
                outputs, cut = self.backend.generate_checked(inputs, decoding, check)
            else:
                outputs, cut = self.backend.generate(inputs, decoding), [None] * len(part)
            fresh = {keys[i]: (list(out), c) for i, out, c in zip(part, outputs, cut, strict=True)}
            if self.cache is not None:
                stored = {k: t if c is None else {"texts": t, "cut_off": list(c)} for k, (t, c) in fresh.items()}
                self.cache.put_many(stored)
            done.update(fresh)
        return Generations(
            texts=[done[k][0] if k else None for k in keys],
            cut_off=[done[k][1] if k else None for k in keys],
            cached=sum(1 for k in keys if k and k in done and k not in first),
            reasked=sum(1 for k in keys if k in refused),
        )

    def _stored(self, keys, check: Check | None) -> tuple[dict, set]:
        """``(acceptable stored entries by key, keys whose stored entry ``check`` refused)``."""
        stored = self.cache.get_many([k for k in keys if k]) if self.cache is not None else {}
        done, refused = {}, set()
        for key, value in stored.items():
            entry = _entry(value)
            if check is not None and not acceptable(*entry, check):
                refused.add(key)
            else:
                done[key] = entry
        return done, refused
