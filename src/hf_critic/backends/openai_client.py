"""OpenAI-compatible HTTP generation: the client behind the Eval-Instruct teacher and the critic on a server.

:class:`OpenAIClient` is the one home for HTTP in hf-critic. It talks to any server that implements
``POST /v1/chat/completions`` (OpenAI, vLLM, ``transformers serve``, llama.cpp's server, ...) through the ``openai``
package's ``AsyncOpenAI``:

- bounded concurrency (an ``asyncio.Semaphore``; released while a request waits to be retried);
- retries with exponential backoff and jitter on 408 / 409 / 429 / 5xx, timeouts, connection errors and garbage
  bodies (status 200 whose JSON is unreadable or has no message); ``Retry-After`` is honoured; after
  ``max_retries`` retries the item is returned as failed (:attr:`ChatResult.error`), never dropped;
- answers that are cut off (``finish_reason: "length"``) or that the caller's ``check`` (the stage's parser) rejects
  are asked again up to ``max_invalid_retries`` times; only an answer that passes is cached, so one that never
  passes fails the item ("answer rejected: unparseable (after 3 attempts)") and is asked again on the next run, never remembered
  as final (a cache hit that no longer passes is asked again too);
- other 4xx answers fail the item at once, and 401 / 403 / 404 (bad key, no such model or endpoint) stop the run
  with :class:`FatalAPIError`, since every later request would fail the same way;
- a persistent request cache (:class:`~hf_critic.backends.cache.GenerationCache`, keyed by
  :func:`~hf_critic.backends.chat.chat_cache_key` over model, messages and sampling parameters): each result is
  committed as soon as it arrives, so a rerun makes no repeated call and a killed run resumes where it stopped;
- identical requests in one batch are sent once and share the answer;
- token and cost accounting per stage (:class:`~hf_critic.backends.chat.UsageLedger`);
- the API key read from an environment variable (``api_key_env``) or taken out of the base URL
  (``http://user:KEY@host/v1``), sent the same way in both cases (``Authorization: Bearer``), never stored, logged,
  cached or printed (:mod:`hf_critic.core.redaction`).

CritiqueLLM v2 §3.2 (Eval-Instruct) and v1 §3.2 prompt GPT-4 tens of thousands of times; the authors' scripts retry
forever in 64 threads. This client is that loop made bounded, resumable and accountable.

:class:`~hf_critic.backends.openai.OpenAIBackend` (:mod:`hf_critic.backends.openai`) adapts the client to the
:class:`~hf_critic.backends.base.Backend` interface, so the critic itself can run against a server
(``Critic(OpenAIBackend(client))``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import logging
import os
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import BadInputError
from ..core.redaction import redact_url, register_secret, split_url_credentials
from ..critic.verdicts import top_k_table
from .cache import GenerationCache
from .chat import (
    ChatRequest,
    ChatResult,
    Check,
    Pricing,
    UsageLedger,
    chat_cache_key,
    rejection,
    served_identity,
    server_kind,
)
from .retry import (
    Attempts,
    EndpointError,
    RetryPolicy,
    _Fail,
    _Retry,
    status_error,
)

logger = logging.getLogger(__name__)

__all__ = ["OpenAIClient"]

KEY_HEADER = "X-HF-Critic-Cache-Key"
STAGE_HEADER = "X-HF-Critic-Stage"
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def _http_response_type() -> type:
    """``Response`` of the HTTP library the installed ``openai`` is built on (httpx2 from openai 3, httpx before)."""
    import openai._base_client as base

    return (getattr(base, "httpx2", None) or base.httpx).Response


def _read_completion(raw: bytes) -> tuple[str, int, int, str | None, dict[str, float] | None]:
    """``(text, prompt_tokens, completion_tokens, finish_reason, top_logprobs)`` of a chat.completion body;
    ``top_logprobs`` is ``{text: log-probability}`` of the first generated token's alternatives as
    :func:`~hf_critic.critic.verdicts.top_k_table` reads them (by their bytes and ids where the server sends them; empty
    special tokens and partial characters dropped, a token listed twice counted once), None when the body has none.

    Raises:
        _Retry: kind ``"garbage"`` when the body is not JSON or has no assistant text.
    """
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        text = choice["message"]["content"]
        if not isinstance(text, str):
            raise TypeError(f"message content is {type(text).__name__}")
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        content = (choice.get("logprobs") or {}).get("content") or []
        entries = (content[0].get("top_logprobs") or []) if content else []
        top = top_k_table(entries) if entries else None  # {} when no alternative can lead to a verdict
        return text, prompt_tokens, completion_tokens, choice.get("finish_reason"), top
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
        snippet = raw[:60].decode("utf-8", "replace")
        raise _Retry("garbage", f"garbage body ({type(err).__name__}): {snippet!r}") from None


class OpenAIClient:
    """Async client for an OpenAI-compatible chat-completions server, with retries, a cache and accounting.

    Args:
        base_url: the server's base URL, e.g. ``"https://api.openai.com/v1"`` or ``"http://127.0.0.1:8000/v1"``. A key
            in it (``http://user:KEY@host/v1`` or ``https://KEY@host/v1``) is taken out of the URL
            (:func:`~hf_critic.core.redaction.split_url_credentials`) and sent as the bearer key, in place of
            ``$api_key_env``; :attr:`base_url` is the URL without it, :attr:`display_url` the URL as given with the
            key masked (:func:`~hf_critic.core.redaction.redact_url`), for messages.
        model: the model name sent with every request (for ``transformers serve <path>``: that path).
        api_key_env: name of the environment variable holding the API key (default ``OPENAI_API_KEY``). Read when a
            run starts; when unset, the placeholder ``"EMPTY"`` is sent (local servers need no key; a remote one
            answers 401 and the run stops with :class:`FatalAPIError` naming this variable).
        params: default sampling parameters merged under each request's own, e.g. ``{"temperature": 0,
            "max_tokens": 2048}`` (CritiqueLLM's scripts use temperature 0). Unknown names go in ``extra_body``.
        concurrency: requests in flight at most (>= 1).
        timeout: seconds per attempt (> 0).
        retry: the :class:`RetryPolicy`.
        pricing: token prices for the cost column.
        cache: persistent cache (None: no cache).
        ledger: usage ledger shared by the run's sources (a new one if None).
        name: display name (default: ``model``).
        seed: seed of the jitter draws.
        sleep: the coroutine used to wait between retries (tests pass a recorder); default ``asyncio.sleep``.
        stage_params: per pipeline stage, request parameters added to every request of that stage (under the
            request's own), e.g. ``{"score_difficulty": {"grammar": "root ::= ..."}}``: a GBNF grammar per stage for
            llama.cpp's server. Part of each request's cache key.

    Every request carries two extra headers, ``X-HF-Critic-Stage`` (the pipeline stage) and ``X-HF-Critic-Cache-Key``
    (the request's cache key, a hash): they let a proxy or server log tell stages and repeated work apart (the
    fault-injection tests rely on them) and hold nothing secret.

    Raises:
        ValueError: bad ``concurrency`` / ``timeout``, or an API key put in ``params``.

    Example:
        >>> client = OpenAIClient("http://127.0.0.1:8000/v1", "my-model", params={"max_tokens": 16})  # doctest: +SKIP
        >>> [r.text for r in client.complete_many([ChatRequest("a", [{"role": "user", "content": "Hi"}])],
        ...                                       stage="demo")]  # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        params: Mapping[str, Any] | None = None,
        concurrency: int = 8,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
        cache: GenerationCache | None = None,
        ledger: UsageLedger | None = None,
        name: str | None = None,
        seed: int = 0,
        sleep: Callable[[float], Any] | None = None,
        stage_params: Mapping[str, Mapping[str, Any]] | None = None,
    ):
        if concurrency < 1 or timeout <= 0:
            raise BadInputError("concurrency must be >= 1 and timeout > 0")
        params = dict(params or {})
        if {"api_key", "authorization"} & {k.lower() for k in params}:
            raise BadInputError(f"never put credentials in params; set ${api_key_env} instead")
        # A key in the URL (user:KEY@host, KEY@host) is taken out and sent as the bearer key, exactly as one from
        # $api_key_env: left in the URL, httpx would send it as Basic auth and log it with every request.
        self.display_url = redact_url(base_url.rstrip("/"))
        url, self._url_key = split_url_credentials(base_url.rstrip("/"))
        self.base_url, self.model, self.api_key_env = url, model, api_key_env
        self.params, self.concurrency, self.timeout = params, concurrency, timeout
        self.retry, self.pricing = retry or RetryPolicy(), pricing or Pricing()
        self.cache, self.ledger = cache, ledger or UsageLedger()
        self.name = name or model
        self.served: dict[str, Any] = {}  # what GET /models says of the model (check()), part of every cache key
        self._rng = random.Random(seed)
        self._sleep = sleep or asyncio.sleep
        self.stage_params = {k: dict(v) for k, v in (stage_params or {}).items()}

    def check(self, timeout: float = 10.0) -> list[str]:
        """Ask the server which models it serves (``GET /models``) before a run, so a bad URL fails in seconds.

        Args:
            timeout: seconds to wait for the answer.

        Returns:
            The served model ids (empty when the server has no ``/models`` route; the check is then skipped). What the
            server says of :attr:`model` is kept in :attr:`served` (:func:`~hf_critic.backends.chat.served_identity`).

        Raises:
            EndpointError: nothing answers at the base URL (down, wrong port), it answers 401 / 403 (the key in
                ``$api_key_env`` is missing or refused), or :attr:`model` is not among the served ids.
        """
        import openai

        client = openai.OpenAI(base_url=self.base_url, api_key=self._api_key(), max_retries=0, timeout=timeout)
        try:
            entries = [m.model_dump() for m in client.models.list()]
            served = [e.get("id") for e in entries]
        except openai.APIConnectionError as err:
            cause = err.__cause__ or err
            raise EndpointError(f"no OpenAI-compatible server answers at {self.display_url} ({cause})") from None
        except openai.APIStatusError as err:
            if err.status_code in (401, 403):
                raise EndpointError(
                    f"{self.display_url} answered {err.status_code} to GET /models; check ${self.api_key_env}"
                ) from None
            return []  # no /models route (404) or another answer: the first request will tell
        finally:
            client.close()
        if served and self.model not in served:
            raise EndpointError(
                f"the server at {self.display_url} does not serve model {self.model!r}; it serves: {', '.join(served)}"
            )
        self.served = served_identity(entries, self.model)
        return served

    @property
    def identity(self) -> str:
        """The model behind this client, for cache keys: base URL (without credentials), model name and what the
        server reported of it (:attr:`served`, after :meth:`check`). Two servers serving one name never share keys."""
        import json

        return f"{self.display_url}|{self.model}|{json.dumps(self.served, sort_keys=True, default=str)}"

    def __repr__(self) -> str:  # no key, ever
        return (
            f"OpenAIClient(base_url={self.display_url!r}, model={self.model!r}, api_key_env={self.api_key_env!r}, "
            f"concurrency={self.concurrency})"
        )

    # ------------------------------------------------------------------------------------------- keys
    def request_params(self, request: ChatRequest) -> dict[str, Any]:
        """The sampling parameters sent for ``request``: client defaults overridden by the request's own."""
        return {k: v for k, v in {**self.params, **dict(request.params)}.items() if v is not None}

    def request_key(self, request: ChatRequest) -> str:
        """The cache key of ``request`` (the model's :attr:`identity`, messages, merged parameters)."""
        return chat_cache_key(self.identity, request.messages, self.request_params(request))

    def _api_key(self) -> str:
        """The bearer key: the one in the base URL, else ``$api_key_env``, else the placeholder ``"EMPTY"``; a real
        key is registered for redaction (:func:`~hf_critic.core.redaction.register_secret`) before it is used."""
        key = self._url_key or os.environ.get(self.api_key_env)
        if key:
            register_secret(key)
            return key
        host = urlsplit(self.base_url).hostname or ""
        if host not in _LOCAL_HOSTS:
            logger.warning("$%s is not set; sending no API key to %s", self.api_key_env, self.display_url)
        return "EMPTY"

    def _rejection(self, text: str, finish: str | None, params: Mapping[str, Any], check: Check | None) -> str | None:
        """Why an answer to a request with ``params`` is not kept (see :func:`~hf_critic.backends.chat.rejection`);
        the same for a fresh answer and a cache hit."""
        if params.get("logprobs") and params.get("max_tokens") == 1:
            return None  # a one-token log-probability probe (verdict read-out) stops at its length by design
        if finish == "length" and self.retry.accept_truncated:
            return None  # kept as the budget cut it: the check is for answers that ended on their own
        return rejection(text, finish, check, self.retry.accept_truncated)

    # ------------------------------------------------------------------------------------------- async core
    async def _attempt(self, http, request: ChatRequest, params: dict, key: str, stage: str):
        import openai

        # The client's generic ``post`` (its documented route for raw requests) rather than
        # ``chat.completions.create``: the body is already plain JSON, and skipping the SDK's per-request TypedDict
        # transform halves the client's CPU per request, which bounds throughput at high concurrency
        # (benchmarks/bench_teacher.py). Timeouts, status errors and headers behave the same.
        try:
            raw = await http.post(
                "/chat/completions",
                cast_to=_http_response_type(),
                body={"model": self.model, "messages": list(request.messages), **params},
                options={"headers": {KEY_HEADER: key, STAGE_HEADER: stage}},
            )
            body = raw.content
        except openai.APIStatusError as err:
            detail = f"{err.status_code}: {str(err.message)[:120]}"
            fatal = (
                f"{self.display_url} answered {detail} for model {self.model!r}; check the model name and "
                f"${self.api_key_env}"
            )
            if err.status_code == 404 and server_kind(self.served) == "vllm":  # served, yet no chat route
                fatal = (
                    f"{self.display_url} serves {self.model!r} as a pooling model (vLLM --runner pooling: no chat "
                    "completions): judge with it as a reward critic, add --pooling"
                )
            raise status_error(err.status_code, detail, err.response.headers, fatal) from None
        except openai.APITimeoutError:
            raise _Retry("timeout", f"timeout after {self.timeout:g} s") from None
        except openai.APIConnectionError as err:
            raise _Retry("connection", f"connection error: {str(err)[:120]}") from None
        return _read_completion(body)

    async def _one(
        self, http, request: ChatRequest, key: str, stage: str, gate: asyncio.Semaphore, check: Check | None
    ) -> ChatResult:
        usage = self.ledger.stage(stage)
        params = self.request_params(request)
        attempts, tries, rejected = 0, Attempts(self.retry, self._rng), None
        while True:
            backoff: float | None = 0.0  # a rejected answer is asked again at once: the server is healthy
            async with gate:
                attempts += 1
                usage.requests += 1
                try:
                    text, prompt_tokens, completion_tokens, finish, top = await self._attempt(
                        http, request, params, key, stage
                    )
                except _Retry as err:
                    usage.errors[err.kind] += 1
                    backoff = tries.wait(err)
                except _Fail as err:
                    usage.errors["client_error"] += 1
                    usage.failed += 1
                    return ChatResult(request.id, None, str(err), attempts=attempts, key=key)
                else:
                    usage.prompt_tokens += prompt_tokens
                    usage.completion_tokens += completion_tokens
                    usage.cost += self.pricing.cost(prompt_tokens, completion_tokens)
                    reason = self._rejection(text, finish, params, check)
                    if reason is None:
                        result = ChatResult(
                            request.id, text, None, prompt_tokens, completion_tokens, False, attempts, finish, key, top
                        )
                        if self.cache is not None:
                            self.cache.put(key, result.to_cache())
                        usage.succeeded += 1
                        return result
                    usage.errors[f"rejected:{reason.split(':', 1)[0]}"] += 1
                    rejected = text
                    if not tries.rejected(reason):
                        break
            if backoff is None:  # retries spent
                break
            usage.retries += 1
            if backoff:
                await self._sleep(backoff)
        usage.failed += 1
        error = f"{tries.last} (after {attempts} attempts)"
        if not tries.last.startswith("answer rejected"):
            rejected = None  # the last attempt was a transport error: no answer to show
        return ChatResult(request.id, None, error, attempts=attempts, key=key, rejected=rejected)

    async def acomplete_many(
        self, requests: Sequence[ChatRequest], *, stage: str, progress: bool = True, check: Check | None = None
    ) -> list[ChatResult]:
        """Async form of :meth:`complete_many`."""
        import openai
        from tqdm.auto import tqdm

        usage = self.ledger.stage(stage)
        if self.stage_params.get(stage):
            requests = [dataclasses.replace(r, params={**self.stage_params[stage], **r.params}) for r in requests]
        keys = [self.request_key(r) for r in requests]
        hits = self.cache.get_many(keys) if self.cache is not None else {}
        results: list[ChatResult | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}  # identical requests are sent once and share the answer
        for i, (request, key) in enumerate(zip(requests, keys, strict=True)):
            value = hits.get(key)
            if isinstance(value, Mapping) and value.get("text") is not None:
                if (
                    self._rejection(value["text"], value.get("finish_reason"), self.request_params(request), check)
                    is None
                ):
                    results[i] = ChatResult.from_cache(request.id, key, value)
                    continue
                usage.errors["rejected_from_cache"] += 1  # kept by an older version or another check: ask again
            groups.setdefault(key, []).append(i)
        todo = [indices[0] for indices in groups.values()]
        missing = sum(len(indices) for indices in groups.values())
        usage.items += len(requests)
        usage.cache_hits += len(requests) - missing
        usage.succeeded += len(requests) - missing
        if todo:
            logger.info(
                "%s: %d request(s) to %s, %d from cache", stage, len(todo), self.name, len(requests) - len(todo)
            )
            gate = asyncio.Semaphore(self.concurrency)
            http = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self._api_key(), max_retries=0, timeout=self.timeout
            )
            bar = tqdm(total=len(todo), desc=f"{stage} ({self.name})", unit="req", disable=not progress, leave=False)

            async def indexed(i: int) -> tuple[int, ChatResult]:
                return i, await self._one(http, requests[i], keys[i], stage, gate, check)

            tasks = [asyncio.ensure_future(indexed(i)) for i in todo]
            try:
                for future in asyncio.as_completed(tasks):
                    i, result = await future
                    for j in groups[keys[i]]:
                        results[j] = result if j == i else dataclasses.replace(result, id=requests[j].id)
                    copies = len(groups[keys[i]]) - 1
                    if result.ok:
                        usage.succeeded += copies
                    else:
                        usage.failed += copies
                    bar.update(1)
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
            finally:
                bar.close()
                await http.close()
        return results  # type: ignore[return-value]

    def complete_many(
        self, requests: Sequence[ChatRequest], *, stage: str, progress: bool = True, check: Check | None = None
    ) -> list[ChatResult]:
        """Answer every request (cache first, then the server), concurrently, in input order.

        Args:
            requests: the chat requests.
            stage: the pipeline stage they belong to (usage is booked under it; sent as the
                ``X-HF-Critic-Stage`` header, with ``X-HF-Critic-Cache-Key``).
            progress: show a tqdm bar.
            check: ``text -> reason | None``, the stage's parser: an answer it rejects (or one cut off by
                ``finish_reason: "length"``) is asked again up to ``retry.max_invalid_retries`` times and never
                cached; a cached answer it rejects is asked again.

        Returns:
            One :class:`ChatResult` per request: a text that passed, or ``error`` set after bounded retries
            (``"answer rejected: length (after 3 attempts)"``).

        Raises:
            FatalAPIError: 401 / 403 / 404 from the server (the run cannot succeed; nothing is lost: finished
                results are cached).
        """
        coro = self.acomplete_many(requests, stage=stage, progress=progress, check=check)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from inside an event loop (notebooks)
            return pool.submit(asyncio.run, coro).result()
