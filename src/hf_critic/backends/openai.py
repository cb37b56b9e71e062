"""The critic on an OpenAI-compatible server: :class:`OpenAIBackend`, a :class:`~hf_critic.backends.base.Backend` over
the HTTP client of :mod:`~hf_critic.backends.openai_client`, so the critic itself can run against a server
(``Critic(OpenAIBackend(client))``, or :meth:`OpenAIBackend.connect`).

Decoding maps onto request parameters, verdict probabilities come from the server's ``top_logprobs``, a GBNF grammar
rides in llama.cpp's ``grammar`` field, and token counts are estimates (no local tokenizer for a remote model).

The server's kind (:func:`~hf_critic.backends.chat.server_kind`, from ``GET /v1/models``) decides what a read-out
request carries: vLLM reads a prefilled assistant message as a closed turn and opens a new one unless asked
``continue_final_message: true, add_generation_prompt: false`` (the verdict would be read at the wrong position);
llama.cpp continues it by itself. A run whose read-outs mostly land outside the allowed verdicts is an error
(:class:`~hf_critic.backends.retry.ServedReadoutError`), never a file of ``low_mass`` rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError
from ..core.schema import ParseStatus
from ..critic.decoding import DecodingConfig
from ..critic.verdicts import VerdictProbabilityError, VerdictReadout, walk_top_logprobs
from .base import Backend, Messages
from .cache import GenerationCache
from .chat import ChatRequest, ChatResult, Check, approximate_tokens, server_kind
from .models import is_embedded_critic
from .openai_client import OpenAIClient
from .retry import RequestsFailedError, RetryPolicy, ServedReadoutError

logger = logging.getLogger(__name__)

__all__ = ["CONTINUE_FINAL_MESSAGE", "OpenAIBackend"]

#: What a read-out request adds so that vLLM (and servers of unknown kind) continue the prefilled assistant message
#: instead of closing it and opening a new turn (vLLM's chat API defaults are the opposite).
CONTINUE_FINAL_MESSAGE = {"continue_final_message": True, "add_generation_prompt": False}


class OpenAIBackend(Backend):
    """A :class:`~hf_critic.backends.base.Backend` over :class:`OpenAIClient`: the critic on an HTTP server.

    Decoding maps onto request parameters: greedy = ``temperature 0``; sampling = ``temperature`` / ``top_p`` /
    ``seed``; self-consistency = ``num_samples`` requests with seeds ``seed, seed+1, ...`` (``n`` is not sent:
    several servers, ``transformers serve`` among them, do not implement it). Beam search has no API equivalent.

    Token counts are estimates (:func:`~hf_critic.backends.chat.approximate_tokens`, ~4 UTF-8 bytes per token)
    since the server's tokenizer is not local; leave ``context_length`` None (the default) unless you know the
    window, and truncation by the critic is then skipped.

    Args:
        client: the HTTP client (its cache may be None: the critic caches generations itself).
        context_length: the model's window in tokens, or None.
        stage: usage-ledger stage the critic's requests are booked under.
        progress: show a progress bar.
        top_logprobs: alternatives asked per read-out position by :meth:`verdict_probabilities` (OpenAI allows at most
            20); verdicts outside them count as missing mass.

    Attributes:
        kind: the server's kind from ``GET /v1/models`` (``"vllm"``, ``"llama.cpp"``, None: unknown).
        embedded: the served model is the embedded default critic (:func:`hf_critic.backends.models.is_embedded_critic`, by the
            served name or vLLM's ``root``), so ``--verdict auto`` reads probabilities as it does in-process.

    Raises:
        RequestsFailedError (from :meth:`generate`, :meth:`verdict_probabilities`, :meth:`continue_under_grammar`):
            some requests still failed after retries, e.g. the server died mid-run (one line: the count, the first
            error, and the cache file a rerun resumes from).
    """

    def __init__(
        self,
        client: OpenAIClient,
        *,
        context_length: int | None = None,
        stage: str = "critique",
        progress: bool = True,
        top_logprobs: int = 20,
    ):
        self.client, self.context_length, self.stage, self.progress = client, context_length, stage, progress
        self.top_logprobs = top_logprobs
        self.kind = server_kind(client.served)
        self.embedded = is_embedded_critic(client.model, client.served)
        self._said_kind = False

    @property
    def name(self) -> str:
        """The model's identity in cache keys and fingerprints: base URL, model name and what the server reports of
        it (:attr:`OpenAIClient.identity`); two servers serving one name never share cached critiques."""
        return f"openai-compatible:{self.client.identity}"

    @classmethod
    def connect(
        cls,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout: float = 300.0,
        max_retries: int = 6,
        cache_path: str | Path | None = None,
        progress: bool = True,
    ) -> OpenAIBackend:
        """The critic on the server at ``base_url`` serving ``model``, checked before any work.

        Requests go through an :class:`OpenAIClient` with bounded retries (``max_retries``) in which a critique cut
        off at the generation budget is kept and cached at once, not asked again (what that budget gives, as the
        local engines keep it), and a per-request cache in ``cache_path`` (None: none), so a killed run resumes.

        Args:
            base_url: the server's OpenAI-compatible base URL (a key in it is used, never printed).
            model: the model name the server serves.
            api_key_env: the environment variable holding the key (unset is fine locally).
            concurrency: requests in flight at once (>= 1).
            timeout: seconds per request.
            max_retries: retries of a failed request (>= 0).
            cache_path: the SQLite request cache, or None.
            progress: show a progress bar.

        Raises:
            hf_critic.backends.retry.EndpointError: the server is down, not OpenAI-compatible, refuses the key or does
                not serve ``model`` (see :meth:`OpenAIClient.check`).
        """
        client = OpenAIClient(
            base_url,
            model,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout=timeout,
            retry=RetryPolicy(max_retries=max_retries, accept_truncated=True),
            cache=GenerationCache(cache_path) if cache_path else None,
        )
        client.check()
        return cls(client, progress=progress)

    def verdict_probabilities(
        self, conversations: Sequence[Messages], continuations: Sequence[str], verdicts: Sequence[str]
    ) -> list[VerdictReadout]:
        """Verdict probabilities from the server's ``logprobs`` + ``top_logprobs`` (see
        :meth:`Backend.verdict_probabilities`).

        Each read-out position is the conversation with the assistant turn prefilled by its continuation (a final
        assistant message, which llama.cpp's server continues; vLLM and servers of unknown kind are sent
        :data:`CONTINUE_FINAL_MESSAGE`, see :meth:`prefill_params`); one greedy one-token request returns the top-k
        next tokens, and
        :func:`hf_critic.critic.verdicts.walk_top_logprobs` extends multi-token verdicts with further requests. Verdicts
        absent from the top-k get probability 0 and are reported unseen (missing mass).

        Raises:
            VerdictProbabilityError: the server answered without ``top_logprobs`` (e.g. ``transformers serve``).
            RequestsFailedError: requests that failed after retries.
        """
        if len(continuations) != len(conversations):
            raise BadInputError("verdict_probabilities needs one continuation per conversation")
        params = {"max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": self.top_logprobs}
        params.update(self.prefill_params())

        def next_tokens(positions: Sequence[tuple[int, str]]) -> list[dict[str, float]]:
            requests = [
                ChatRequest(
                    str(i), [*conversations[row], {"role": "assistant", "content": continuations[row] + text}], params
                )
                for i, (row, text) in enumerate(positions)
            ]
            results = self.client.complete_many(requests, stage=self.stage, progress=False)
            self._raise_if_failed([r for r in results if not r.ok], len(results))
            if any(r.top_logprobs is None for r in results):
                raise VerdictProbabilityError(
                    f"backend {type(self).__name__} ({self.name}) got no top_logprobs from the server; use "
                    "verdict=text, or a server that returns them (llama.cpp, vLLM)"
                )
            return [r.top_logprobs for r in results]

        return walk_top_logprobs(next_tokens, len(conversations), verdicts)

    def prefill_params(self) -> dict[str, bool]:
        """What a request with a prefilled final assistant message adds for this server's :attr:`kind`.

        Returns:
            ``{}`` for llama.cpp (it continues a final assistant message); :data:`CONTINUE_FINAL_MESSAGE` for vLLM, and
            for a server of unknown kind, said once as a warning (a server that closes the turn anyway gives read-outs
            off the allowed verdicts, which :meth:`check_readouts` stops).
        """
        if self.kind == "llama.cpp":
            return {}
        if self.kind is None and not self._said_kind:
            logger.warning(
                "%s: GET /v1/models does not say which server this is (no vLLM root / max_model_len, no llama.cpp "
                "meta): the read-out sends vLLM's continue_final_message: true, add_generation_prompt: false",
                self.client.display_url,
            )
            self._said_kind = True
        return dict(CONTINUE_FINAL_MESSAGE)

    def check_readouts(self, verdicts: Sequence) -> None:
        """Stop a run whose read-outs mostly missed the allowed verdicts: on a server that is a read at the wrong
        position (a prefilled turn closed) or a top-k too small, not the critic's judgement.

        Args:
            verdicts: the run's :class:`~hf_critic.critic.verdicts.ProbabilityVerdict` per row (skipped rows ignored).

        Raises:
            ServedReadoutError: more than half of the read rows are ``low_mass`` (one line: the counts, how many had
                verdicts outside the top-k, the URL and the server kind).
        """
        read = [v for v in verdicts if v.status is not ParseStatus.SKIPPED]
        low = [v for v in read if v.status is ParseStatus.LOW_MASS]
        if read and 2 * len(low) > len(read):
            unseen = sum(1 for v in low if v.unseen)
            raise ServedReadoutError(
                f"{len(low)} of {len(read)} verdict read-outs from {self.client.display_url} (model "
                f"{self.client.model!r}, server kind {self.kind or 'unknown'}) put almost no probability on the allowed "
                f"verdicts ({unseen} with verdicts outside the server's top-{self.top_logprobs}): the server does not "
                "continue the prefilled assistant message or the model ignores the format; use verdict=text"
            )

    # llama.cpp's server reads a GBNF grammar from the request's ``grammar`` field; others reject or ignore it.
    supports_grammar = True

    def generate(self, conversations: Sequence[Messages], config: DecodingConfig) -> list[list[str]]:
        """``config.num_return_sequences`` completions per conversation (see the class docstring for the mapping).

        Raises:
            ValueError: beam search.
            RequestsFailedError: items that failed after retries.
        """
        return self.generate_checked(conversations, config)[0]

    def generate_checked(
        self, conversations: Sequence[Messages], config: DecodingConfig, check: Check | None = None
    ) -> tuple[list[list[str]], list[list[bool]]]:
        """:meth:`generate` with the caller's parser as the client's ``check``, and which completions were cut off.

        An answer ``check`` refuses (a garbled critique), fresh or from the client's cache, is asked again up to
        ``retry.max_invalid_retries`` times and never cached; one still refused after that is returned as it came
        (the critic reports it unparsed, and asks again on its next run). Under ``retry.accept_truncated`` an answer
        cut off at ``max_tokens`` is kept and cached at once, check or not.

        Returns:
            ``(texts, cut_off)``: the completions per conversation, and per completion whether it stopped at
            ``max_new_tokens`` (``finish_reason: "length"``).

        Raises:
            ValueError: beam search.
            RequestsFailedError: items that failed after retries without an answer (transport errors).
        """
        if config.strategy == "beam":
            raise BadInputError("beam search is not available over an OpenAI-compatible API; use greedy or sampling")
        base: dict[str, Any] = {"max_tokens": config.max_new_tokens}
        if config.strategy == "greedy":
            base["temperature"] = 0.0
        else:
            base.update(temperature=config.temperature, top_p=config.top_p)
        n = config.num_return_sequences
        requests = []
        for i, conversation in enumerate(conversations):
            for j in range(n):
                params = dict(base)
                if config.strategy != "greedy":
                    params["seed"] = config.seed + j
                requests.append(ChatRequest(f"{i}/{j}", conversation, params))
        results = self.client.complete_many(requests, stage=self.stage, progress=self.progress, check=check)
        # An answer still refused after the bounded retries (cut off at max_new_tokens, or not passing the check) is
        # the critique this budget gives (as a local backend returns it): the critic parses it and reports it
        # unparsed if the verdict is missing. Only transport failures leave no text.
        # Stripped as the local engines strip their decoded text: the same critique on every path (a greedy critique
        # cut at max_new_tokens inside an indented line would otherwise end in whitespace here only).
        texts = [t.strip() if t is not None else None for t in (r.text if r.ok else r.rejected for r in results)]
        self._raise_if_failed([r for r, text in zip(results, texts, strict=True) if text is None], len(results))
        cut = [
            r.finish_reason == "length" if r.ok else (r.error or "").startswith("answer rejected: length")
            for r in results
        ]
        per = range(len(conversations))
        return [texts[i * n : (i + 1) * n] for i in per], [cut[i * n : (i + 1) * n] for i in per]  # type: ignore[misc]

    def continue_under_grammar(
        self, conversations: Sequence[Messages], prefixes: Sequence[str], grammar: str, max_new_tokens: int = 32
    ) -> list[str]:
        """Greedy continuations of the assistant ``prefixes`` under a GBNF ``grammar``: llama.cpp's server only (its
        ``grammar`` field and assistant prefill).

        Raises:
            RequestsFailedError: requests that failed after retries (e.g. a server that rejects ``grammar``).
        """
        from .llamacpp import prefill_tail

        params = {"max_tokens": max_new_tokens, "temperature": 0.0, "grammar": grammar}
        requests = [
            ChatRequest(str(i), [*c, {"role": "assistant", "content": p}], params)
            for i, (c, p) in enumerate(zip(conversations, prefixes, strict=True))
        ]
        results = self.client.complete_many(requests, stage=self.stage, progress=self.progress)
        self._raise_if_failed([r for r in results if not r.ok], len(results))
        return [prefill_tail(r.text, p) for r, p in zip(results, prefixes, strict=True)]

    def _raise_if_failed(self, failed: Sequence[ChatResult], total: int) -> None:
        """Raise :class:`RequestsFailedError` when any of ``total`` requests ``failed``."""
        if failed:
            cache = self.client.cache.path if self.client.cache is not None else None
            raise RequestsFailedError(len(failed), total, failed[0].error or "", self.client.display_url, cache)

    def count_tokens(self, text: str) -> int:
        """Estimated tokens of ``text`` (no local tokenizer for a remote model)."""
        return approximate_tokens(text)

    def prompt_tokens(self, conversation: Messages) -> int:
        """Estimated prompt tokens: the messages' contents plus 4 per message for the chat template."""
        return sum(approximate_tokens(m.get("content", "")) + 4 for m in conversation)

    def truncate_middle(self, text: str, num_tokens: int) -> str:
        """Cut about ``num_tokens`` tokens (4 bytes each, on character boundaries) from the middle of ``text``."""
        cut = min(len(text), num_tokens * 4 if text.isascii() else num_tokens)
        keep = len(text) - cut
        head, tail = keep - keep // 2, keep // 2
        return text[:head] + " ... " + (text[len(text) - tail :] if tail else "")
