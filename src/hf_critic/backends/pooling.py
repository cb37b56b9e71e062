"""A reward model that vLLM serves as a pooling model: one scalar reward per (question, response) conversation.

A sequence-classification checkpoint with one label (e.g. ``Skywork/Skywork-Reward-V2-Qwen3-0.6B``, or one trained by
TRL's ``RewardTrainer``) is served with ``vllm serve MODEL --runner pooling``, under vLLM's sequence-wise ``classify``
pooling task. Its Pooling API scores one chat per request::

    POST {server}/pooling   {"model": M, "messages": [user, assistant], "task": "classify", "use_activation": false}
    -> {"id": ..., "object": "list", "created": ..., "model": M, "usage": {...},
        "data": [{"index": 0, "object": "pooling", "data": [reward]}]}

The server renders ``messages`` with the model's chat template (no generation prompt: the text ends on the response).
The text-style ``{"input": [str, ...]}`` batches texts already templated (that needs the tokenizer here), so a batch
of ``batch_size`` conversations is ``batch_size`` chat requests in flight. ``task: "classify"`` asks for the sequence
output (token-level tasks give one row per token); ``use_activation: false`` for the raw logit (the Bradley-Terry
reward, as TRL and RewardBench read it), not its sigmoid; servers before v0.11.1 ignore that field (same ranking).

Source: vLLM 0.18 docs, Pooling Models > Pooling API and Reward Usages:
https://docs.vllm.ai/en/v0.18.0/models/pooling_models/ (docs/models/pooling_models/{README,reward}.md), the example
https://docs.vllm.ai/en/v0.18.1/examples/pooling/pooling/, ``PoolingChatRequest`` / ``PoolingResponseData`` (``data:
list[list[float]] | list[float] | str``) in vllm/entrypoints/pooling/pooling/protocol.py; ``use_activation``:
https://docs.vllm.ai/en/v0.11.1/api/vllm/pooling_params/.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import BadInputError
from ..core.redaction import redact_text, redact_url, register_secret, split_url_credentials
from .chat import served_identity
from .retry import (
    Attempts,
    EndpointError,
    FatalAPIError,
    RequestsFailedError,
    RetryPolicy,
    _Fail,
    _Retry,
    status_error,
)

try:  # the HTTP library openai is built on: httpx2 from openai 3 (the same API), httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx

logger = logging.getLogger(__name__)
__all__ = ["PoolingRewardClient"]
_PROBE = [{"role": "user", "content": "Say yes."}, {"role": "assistant", "content": "Yes."}]


def _scalar(data: Any) -> float:
    """The reward in one item's pooled ``data``: one number, bare or nested in one-element lists (``[r]``, ``[[r]]``).
    Anything else (one row per token, several labels, base64 text) raises ValueError."""
    value = data
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(data, list) and len(data) > 1 and all(isinstance(row, list) for row in data):
        shape = f"token-level ({len(data)} rows, one per token)"
    elif isinstance(value, list):
        shape = f"{len(value)} values" if value else "empty"
    else:
        shape = f"a {type(value).__name__}"
    raise BadInputError(
        f"the pooled output of one conversation is {shape}, not one number: the server is not running a "
        "sequence reward model (serve a one-label sequence classifier with `vllm serve MODEL --runner "
        "pooling`)"
    )


def _message(response) -> str:
    """The server's error message (``{"error": {"message": ...}}`` or ``{"message": ...}``), one redacted line."""
    try:
        body = response.json()
        error = body.get("error", body) if isinstance(body, dict) else body
        text = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    except ValueError:
        text = response.text
    return redact_text(" ".join(text.split()))[:160]


class PoolingRewardClient:
    """Scalar rewards of chat conversations from a reward model that vLLM serves as a pooling model.

    Args:
        base_url: as given to ``--base-url``, ``http://host:8000/v1`` or ``http://host:8000`` (``/pooling`` is at the
            root, ``/v1/models`` under it). A key in it (``http://user:KEY@host/v1``) is taken out of the URL and sent
            as the bearer key, as :class:`~hf_critic.backends.openai_client.OpenAIClient` does; :attr:`display_url`
            masks it.
        model: the served model name; None = the only model the server serves (resolved by :meth:`check`).
        api_key_env: the environment variable holding the key (vLLM's ``--api-key``; unset: none is sent). The key
            travels only in the ``Authorization: Bearer`` header, never in a log line or a message.
        timeout: seconds per attempt (> 0).
        batch_size: conversations in flight at once (>= 1).
        policy: retries of 408 / 409 / 425 / 429 / 5xx, timeouts, lost connections, bad bodies (``RetryPolicy()``).
        cache_path: the cache file the caller keeps finished rewards in, named when requests fail (None: none).

    Raises:
        ValueError: ``batch_size < 1`` or ``timeout <= 0``.

    Source: vLLM docs, Pooling Models > Pooling API and Reward Usages (see the module docstring).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        batch_size: int = 8,
        policy: RetryPolicy | None = None,
        cache_path: str | os.PathLike | None = None,
    ):
        if batch_size < 1 or timeout <= 0:
            raise BadInputError("batch_size must be >= 1 and timeout > 0")
        self.display_url = redact_url(base_url.rstrip("/"))
        url, self._url_key = split_url_credentials(base_url.rstrip("/"))
        self.root = url[: -len("/v1")] if url.endswith("/v1") else url
        self.model, self.api_key_env = model, api_key_env
        self.timeout, self.batch_size = timeout, batch_size
        self.policy, self._rng = policy or RetryPolicy(), random.Random(0)
        self.cache_path = cache_path
        self.served: dict[str, Any] = {}  # what GET /v1/models says of the model (check()), part of the identity

    @property
    def identity(self) -> str:
        """The model behind this client: base URL (without credentials), model name and what the server reported of
        it after :meth:`check` (:func:`~hf_critic.backends.chat.served_identity`)."""
        import json

        return f"{self.display_url}|{self.model}|{json.dumps(self.served, sort_keys=True, default=str)}"

    def __repr__(self) -> str:  # no key, ever
        return f"PoolingRewardClient(base_url={self.display_url!r}, model={self.model!r}, key=${self.api_key_env})"

    def _client(self, timeout: float) -> httpx.Client:
        key = self._url_key or os.environ.get(self.api_key_env)
        register_secret(key)  # masked in every log line and message from now on
        return httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {key}"} if key else {})

    def check(self) -> None:
        """Before a run: the server serves the model as a sequence reward model (a bad URL fails in seconds).

        Lists the served models (``GET {server}/v1/models``), takes the only one when :attr:`model` is None, and scores
        one probe conversation (``POST {server}/pooling``, once, not retried).

        Raises:
            EndpointError: one line naming the URL and the model: nothing answers; 401 / 403 (check ``$api_key_env``);
                not a vLLM server; several models and none named; the model not served; no Pooling API (404 on
                ``/pooling``: not run with ``--runner pooling``); an output that is not one number per conversation.

        Source: vLLM docs, Pooling Models > Pooling API (its example lists ``/v1/models``, then posts to ``/pooling``).
        """
        where = f"{self.display_url} (model {self.model or 'not named'})"
        with self._client(min(self.timeout, 10.0)) as client:
            try:
                response = client.get(f"{self.root}/v1/models")
            except httpx.HTTPError as err:
                raise EndpointError(f"no server answers at {where} ({redact_text(str(err)) or repr(err)})") from None
            status = response.status_code
            if status in (401, 403):
                raise EndpointError(f"{where} answered {status} to GET /v1/models; check ${self.api_key_env}")
            try:
                entries = response.json()["data"] if status == 200 else None
                served = [m["id"] for m in entries] if entries is not None else None
            except (ValueError, KeyError, TypeError):
                served = None
            if served is None:
                raise EndpointError(f"{where} is not a vLLM server: GET /v1/models answered {status}")
            if self.model is None and len(served) != 1:
                raise EndpointError(f"{where}: the server serves {len(served)} models: {', '.join(served)}; name one")
            self.model = self.model if self.model is not None else served[0]
            if self.model not in served:
                raise EndpointError(f"{self.display_url} does not serve model {self.model!r}: {', '.join(served)}")
            self.served = served_identity(entries, self.model)
            try:
                self._attempt(client, self._body(_PROBE))
            except FatalAPIError as err:
                raise EndpointError(str(err)) from None
            except (_Retry, _Fail, ValueError) as err:
                raise EndpointError(f"{self.display_url} cannot score with model {self.model!r}: {err}") from None

    def _body(self, conversation: Sequence[Mapping[str, str]] | Sequence[int]) -> dict[str, Any]:
        """The ``/pooling`` request of one input: chat messages (the server applies the chat template) or token ids
        encoded by the caller (sent as ``input``, scored as they are)."""
        if all(isinstance(t, int) for t in conversation):
            given: dict[str, Any] = {"input": list(conversation)}
        else:
            given = {"messages": [dict(m) for m in conversation]}
        return {"model": self.model, **given, "task": "classify", "use_activation": False}

    def _attempt(self, client: httpx.Client, body: Mapping[str, Any]) -> float:
        """One ``POST /pooling``: the reward, or ``_Retry`` / ``_Fail`` / ``FatalAPIError`` / ``ValueError``."""
        try:
            response = client.post(f"{self.root}/pooling", json=body)
        except httpx.TimeoutException:
            raise _Retry("timeout", f"timeout after {self.timeout:g} s") from None
        except httpx.TransportError as err:
            raise _Retry("connection", f"connection error: {redact_text(str(err))[:120]}") from None
        status = response.status_code
        if status != 200:
            message = _message(response)
            fatal = (
                f"{self.display_url} answered {status} to POST /pooling for model {self.model!r} ({message}); "
                f"check the model name, ${self.api_key_env}, and that the server runs `--runner pooling`"
            )
            raise status_error(status, f"{status}: {message}", response.headers, fatal)
        try:
            data = next(item["data"] for item in response.json()["data"] if item.get("index", 0) == 0)
        except (ValueError, KeyError, TypeError, AttributeError, StopIteration):
            raise _Retry("garbage", f"unreadable body: {response.text[:60]!r}") from None
        return _scalar(data)

    def _one(self, client: httpx.Client, conversation: Sequence[Mapping[str, str]]) -> float:
        """The reward of one conversation, retried under :attr:`policy`; ``_Fail`` once retries are spent or the
        waits would pass ``policy.max_total_wait`` (:class:`~hf_critic.backends.retry.Attempts`); a wait of 5 s or
        more is said before it starts."""
        body, tries = self._body(conversation), Attempts(self.policy, self._rng)
        while True:
            try:
                return self._attempt(client, body)
            except _Retry as err:
                wait = tries.wait(err)
                if wait is None:
                    raise _Fail(f"{tries.last} (after {tries.errors} attempts)") from None
                if wait >= 5:
                    logger.warning(
                        "%s: %s; retry %d of %d in %.0f s",
                        self.display_url,
                        err.detail,
                        tries.errors,
                        self.policy.max_retries,
                        wait,
                    )
                time.sleep(wait)

    def rewards(self, conversations: Sequence[Sequence[Mapping[str, str]]]) -> list[float]:
        """One scalar reward per conversation, in input order.

        Args:
            conversations: chat conversations, each a list of ``{"role", "content"}`` messages (the user's question,
                then the assistant's response), sent as they are; the server applies the model's chat template. Or
                token ids encoded with the critic's own tokenizer and cut to its context, scored as they are.

        Returns:
            ``len(conversations)`` floats: each conversation's raw reward (the logit).

        Raises:
            EndpointError: :attr:`model` is None and :meth:`check` cannot pick one.
            FatalAPIError: 401 / 403 / 404 (bad key, unknown model, no ``/pooling``): every request would fail.
            RequestsFailedError: requests of a batch failed after retries (or with a 400); later batches are not sent.
            ValueError: an output that is not one number (the server is not running a sequence reward model).

        Source: vLLM docs, Pooling Models > Pooling API (chat-style request, ``PoolingResponseData.data``).
        """
        if not conversations:
            return []
        if self.model is None:
            self.check()
        rewards: list[float] = []
        with self._client(self.timeout) as client, concurrent.futures.ThreadPoolExecutor(self.batch_size) as pool:
            for start in range(0, len(conversations), self.batch_size):
                batch = conversations[start : start + self.batch_size]
                futures = [pool.submit(self._one, client, conversation) for conversation in batch]
                failed = [str(err) for err in (future.exception() for future in futures) if isinstance(err, _Fail)]
                if failed:  # requests that failed after retries; a fatal error or a bad output is raised below
                    raise RequestsFailedError(
                        len(failed), start + len(batch), failed[0], self.display_url, self.cache_path
                    )
                rewards.extend(future.result() for future in futures)
                logger.info("%d / %d conversations scored by %s", len(rewards), len(conversations), self.model)
        return rewards
