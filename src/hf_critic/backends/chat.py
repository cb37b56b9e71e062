"""Chat requests and results shared by every text source of the Eval-Instruct pipeline, with usage accounting.

A *chat source* turns :class:`ChatRequest` items into :class:`ChatResult` items, through a persistent cache, and
books what it did per stage in a :class:`UsageLedger` (requests, retries, cache hits, tokens, cost). Two exist:
:class:`~hf_critic.backends.openai_client.OpenAIClient` (any OpenAI-compatible HTTP server: the teacher of
CritiqueLLM v2 §3.2 / v1 §3.2, and generators behind endpoints) and :class:`BackendSource` (any local
:class:`~hf_critic.backends.base.Backend`, e.g. a transformers model used as a generator, v2 §3.2.1).

A failed item is a result with ``error`` set, never dropped; only results that pass are cached, so a rerun asks
again for what failed and for nothing else. "Pass" means: not cut off (``finish_reason: "length"``) and accepted by
the caller's ``check`` (the stage's parser, :data:`Check`); see :func:`rejection`.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..core.errors import BadInputError
from ..critic.decoding import DecodingConfig
from .base import Backend, Messages
from .cache import GenerationCache, cache_key

__all__ = [
    "BackendSource",
    "ChatRequest",
    "ChatResult",
    "ChatSource",
    "Pricing",
    "StageUsage",
    "UsageLedger",
    "chat_cache_key",
    "served_identity",
    "server_kind",
    "rejection",
]

# The caller's verdict on an answer's text: None to keep it, else a short reason ("unparseable", "out_of_range").
Check = Callable[[str], "str | None"]


#: What a server's ``/v1/models`` entry may say about the model behind a name (OpenAI: ``owned_by``, ``created``;
#: vLLM: ``root`` (the weights' path), ``parent``, ``max_model_len``; llama.cpp: ``meta`` (parameters, size, vocabulary)).
SERVED_FIELDS = ("owned_by", "created", "root", "parent", "max_model_len", "meta")
#: A ``created`` this close to now (seconds) is the answer's own time, as vLLM and llama.cpp report it, not the model's.
_FRESH_CREATED = 86400


def served_identity(entries, model: str | None, now: float | None = None) -> dict:
    """What the server reports about ``model`` (its entry of ``GET /v1/models``), for cache keys and fingerprints.

    Args:
        entries: the ``data`` list of ``/v1/models``: dicts with ``id`` and any of :data:`SERVED_FIELDS`.
        model: the served name asked for.
        now: the current Unix time (default: the clock), to tell a model's ``created`` from the answer's time.

    Returns:
        ``{field: value}`` for the fields the entry has (None values left out); ``created`` only when it is more than a
        day old (vLLM and llama.cpp put the answer's time there, which would change every key); ``{}`` when the model
        is not listed.
    """
    import time

    entry = next((e for e in entries or () if isinstance(e, Mapping) and e.get("id") == model), None)
    if entry is None:
        return {}
    out = {k: entry[k] for k in SERVED_FIELDS if entry.get(k) is not None}
    created = out.get("created")
    if not isinstance(created, int | float) or abs((now or time.time()) - created) < _FRESH_CREATED:
        out.pop("created", None)
    return out


#: Server kinds :func:`server_kind` tells apart, and the ``/v1/models`` fields each one's entries carry.
SERVER_KINDS = {"vllm": ("root", "max_model_len"), "llama.cpp": ("meta",)}


def server_kind(served: Mapping[str, Any]) -> str | None:
    """Which server serves a model, from its ``/v1/models`` entry (:func:`served_identity`).

    vLLM's entries carry ``root`` (the weights it loaded) and ``max_model_len``; llama.cpp's carry ``meta`` (parameters,
    vocabulary, context of training). The kind decides what a prefilled assistant message needs: vLLM closes the turn
    unless the request says ``continue_final_message``; llama.cpp continues a final assistant message by itself.

    Args:
        served: the model's entry as :func:`served_identity` keeps it.

    Returns:
        ``"vllm"``, ``"llama.cpp"`` or None (neither: OpenAI, ``transformers serve``, another server, or no entry).
    """
    for kind, fields in SERVER_KINDS.items():
        if all(served.get(name) is not None for name in fields):
            return kind
    return None


def chat_cache_key(model: str, messages: Messages, params: Mapping[str, Any]) -> str:
    """The persistent-cache key of one chat request: SHA-256 over model, messages and sampling parameters.

    Args:
        model: the model name as sent to the server (or a local backend's name).
        messages: the chat messages, ``[{"role": ..., "content": ...}, ...]``.
        params: sampling parameters (temperature, top_p, max_tokens, seed, ...); None values are dropped so that
            an unset parameter and an explicit None give the same key.

    Returns:
        64 hex characters. Never pass credentials in ``params``: the key is stored on disk and sent as a header.
    """
    clean = {k: v for k, v in params.items() if v is not None}
    return cache_key(kind="chat.completions", model=model, messages=list(messages), params=clean)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to obtain.

    Attributes:
        id: the pipeline item it belongs to (e.g. ``"q-3f2a.../gpt-4"``), used in failure reports.
        messages: the conversation, ending in a user turn.
        params: sampling parameters for this request, merged over the source's defaults (e.g. ``{"seed": 3}``).
    """

    id: str
    messages: Messages
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatResult:
    """What became of one :class:`ChatRequest`.

    Attributes:
        id: the request's id.
        text: the assistant message, or None when the request failed.
        error: None on success; else a short reason (``"429: rate limited"``, ``"timeout"``, ``"garbage: ..."``).
        prompt_tokens / completion_tokens: usage reported by the server (0 when unknown), also for cache hits.
        cached: True when answered from the persistent cache (no call made).
        attempts: HTTP attempts made for it in this run (0 for a cache hit).
        finish_reason: the server's finish reason (``"stop"``, ``"length"``), when given.
        key: the cache key of the request.
        top_logprobs: ``{token: log-probability}`` of the first generated token's most likely alternatives, when the
            request asked for ``logprobs`` / ``top_logprobs`` and the server sent them; else None.
        rejected: for an item failed because every answer was rejected, the last answer (never cached); a caller
            that can use a cut-off text (the critic reports it as unparsed) takes it from here.
    """

    id: str
    text: str | None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    attempts: int = 0
    finish_reason: str | None = None
    key: str = ""
    top_logprobs: dict[str, float] | None = None
    rejected: str | None = None

    @property
    def ok(self) -> bool:
        """True when the request produced a text."""
        return self.error is None and self.text is not None

    def to_cache(self) -> dict[str, Any]:
        """The JSON value stored in the cache (text, usage, finish reason; no id, no credentials)."""
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason,
            **({"top_logprobs": self.top_logprobs} if self.top_logprobs is not None else {}),
        }

    @classmethod
    def from_cache(cls, request_id: str, key: str, value: Mapping[str, Any]) -> ChatResult:
        """Rebuild a cache hit."""
        return cls(
            id=request_id,
            text=value["text"],
            prompt_tokens=int(value.get("prompt_tokens") or 0),
            completion_tokens=int(value.get("completion_tokens") or 0),
            cached=True,
            finish_reason=value.get("finish_reason"),
            key=key,
            top_logprobs=value.get("top_logprobs"),
        )


def rejection(text: str, finish_reason: str | None, check: Check | None, accept_truncated: bool = False) -> str | None:
    """Why an answer cannot be kept as final: ``"length"`` when it was cut off, else ``check``'s reason; None if it passes.

    A ``check`` that raises rejects the answer (``"check_error: ..."``): one bad answer never stops a run.
    """
    if finish_reason == "length" and not accept_truncated:
        return "length"
    if check is None:
        return None
    try:
        return check(text)
    except Exception as err:  # noqa: BLE001 - the parser's failure on this answer is this answer's rejection
        return f"check_error: {type(err).__name__}: {str(err)[:80]}"


@dataclass(frozen=True)
class Pricing:
    """Token prices of an API, for cost accounting.

    Attributes:
        input_per_million: price of 1M prompt tokens (any currency, e.g. USD), >= 0.
        output_per_million: price of 1M completion tokens, >= 0.
    """

    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def __post_init__(self):
        if self.input_per_million < 0 or self.output_per_million < 0:
            raise BadInputError("prices must be >= 0")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Price of that many tokens: ``(p * input + c * output) / 1e6``."""
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6


@dataclass
class StageUsage:
    """What a chat source did for one pipeline stage.

    Attributes:
        items: requests asked for (each counted once, however many attempts).
        succeeded / failed: items with a text / reported failed after retries or a non-retryable error.
        cache_hits: items answered from the persistent cache (no call).
        requests: HTTP requests (attempts) actually sent, retries included; 0 for local backends.
        retries: attempts beyond the first.
        errors: attempt failures by kind (``"429"``, ``"500"``, ``"timeout"``, ``"connection"``, ``"garbage"``, ...).
        prompt_tokens / completion_tokens: usage of fresh calls only (cache hits cost nothing).
        cost: price of the fresh calls (see :class:`Pricing`).
    """

    items: int = 0
    succeeded: int = 0
    failed: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0
    errors: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def merge(self, other: StageUsage) -> None:
        """Add ``other``'s counts to these."""
        for name in ("items", "succeeded", "failed", "cache_hits", "requests", "retries"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost += other.cost
        self.errors.update(other.errors)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        out = asdict(self)
        out["errors"] = dict(self.errors)
        return out


class UsageLedger:
    """Per-stage :class:`StageUsage`, shared by the chat sources of one run (thread-safe).

    Example:
        >>> ledger = UsageLedger()
        >>> ledger.stage("grading").items += 2
        >>> ledger.total().items
        2
    """

    def __init__(self):
        self._stages: dict[str, StageUsage] = {}
        self._lock = threading.Lock()

    def stage(self, name: str) -> StageUsage:
        """The (created on first use) usage record of stage ``name``."""
        with self._lock:
            return self._stages.setdefault(name, StageUsage())

    def stages(self) -> dict[str, StageUsage]:
        """Every stage's usage, in first-use order."""
        with self._lock:
            return dict(self._stages)

    def total(self) -> StageUsage:
        """All stages summed."""
        out = StageUsage()
        for usage in self.stages().values():
            out.merge(usage)
        return out


class ChatSource(Protocol):
    """Anything that answers chat requests through a persistent cache and books usage per stage."""

    name: str
    ledger: UsageLedger

    def complete_many(
        self, requests: Sequence[ChatRequest], *, stage: str, progress: bool = True, check: Check | None = None
    ) -> list[ChatResult]:
        """One :class:`ChatResult` per request, in input order; failures are results with ``error`` set.

        An answer that ``check`` rejects (or that was cut off) is never cached and never returned as a text.
        """


class BackendSource:
    """A local :class:`~hf_critic.backends.base.Backend` (e.g. a transformers model) as a chat source.

    Used for generators that run in-process (CritiqueLLM v2 §3.2.1 collects responses from 10 models of different
    quality; locally hosted ones need no server). Requests are cached like the HTTP teacher's; generation runs in
    chunks and each chunk is committed, so a killed run keeps what finished.

    Args:
        backend: the backend; its ``name`` is the model part of the cache key.
        decoding: decoding configuration (``max_new_tokens``, greedy / sampling ...).
        cache: persistent cache, or None.
        ledger: usage ledger shared with the other sources (a new one if None).
        chunk_size: requests per ``backend.generate`` call between commits (>= 1).
        name: display name (default: the backend's name).

    Request ``params`` are not supported (a local backend decodes with ``decoding``); a request carrying params
    raises ValueError.
    """

    def __init__(
        self,
        backend: Backend,
        decoding: DecodingConfig | None = None,
        *,
        cache: GenerationCache | None = None,
        ledger: UsageLedger | None = None,
        chunk_size: int = 32,
        name: str | None = None,
    ):
        if chunk_size < 1:
            raise BadInputError("chunk_size must be >= 1")
        self.backend, self.decoding = backend, decoding or DecodingConfig()
        self.cache, self.ledger, self.chunk_size = cache, ledger or UsageLedger(), chunk_size
        self.name = name or backend.name
        self.model = backend.name

    def _params(self) -> dict[str, Any]:
        return {"decoding": dict(self.decoding.__dict__)}

    def complete_many(
        self, requests: Sequence[ChatRequest], *, stage: str, progress: bool = True, check: Check | None = None
    ) -> list[ChatResult]:
        """Generate the uncached requests with the backend; results in input order.

        A generation that ``check`` rejects is a failed result (``"answer rejected: <reason>"``), not cached: a local
        model decodes deterministically here, so it is not asked again in the same run.

        Raises:
            ValueError: a request has ``params``.
        """
        if any(r.params for r in requests):
            raise BadInputError(f"{self.name}: a local backend takes no per-request params")
        usage = self.ledger.stage(stage)
        keys = [chat_cache_key(self.model, r.messages, self._params()) for r in requests]
        done = self.cache.get_many(keys) if self.cache is not None else {}
        results: dict[int, ChatResult] = {}
        todo = []
        for i, (request, key) in enumerate(zip(requests, keys, strict=True)):
            value = done.get(key)
            if (
                isinstance(value, Mapping)
                and value.get("text") is not None
                and rejection(value["text"], None, check) is None
            ):
                results[i] = ChatResult.from_cache(request.id, key, value)
            else:
                todo.append(i)
        usage.items += len(requests)
        usage.cache_hits += len(results)
        usage.succeeded += len(results)
        for start in range(0, len(todo), self.chunk_size):
            part = todo[start : start + self.chunk_size]
            outputs = self.backend.generate([requests[i].messages for i in part], self.decoding)
            fresh = {}
            for i, texts in zip(part, outputs, strict=True):
                text = texts[0] if texts else ""
                prompt_tokens = self.backend.prompt_tokens(requests[i].messages)
                result = ChatResult(
                    requests[i].id, text, None, prompt_tokens, self.backend.count_tokens(text), False, 1, None, keys[i]
                )
                usage.prompt_tokens += result.prompt_tokens
                usage.completion_tokens += result.completion_tokens
                reason = rejection(text, None, check)
                if reason is not None:
                    usage.errors[f"rejected:{reason.split(':', 1)[0]}"] += 1
                    usage.failed += 1
                    results[i] = ChatResult(
                        requests[i].id, None, f"answer rejected: {reason}", attempts=1, key=keys[i]
                    )
                    continue
                results[i] = result
                fresh[keys[i]] = result.to_cache()
                usage.succeeded += 1
            if self.cache is not None:
                self.cache.put_many(fresh)
        return [results[i] for i in range(len(requests))]


def approximate_tokens(text: str) -> int:
    """A tokenizer-free token estimate: ``ceil(utf8_bytes / 4)`` (about 4 bytes per token for English BPE
    vocabularies, 0.75 tokens per CJK character); at least 1 for non-empty text, 0 for ""."""
    return math.ceil(len(text.encode("utf-8")) / 4)
