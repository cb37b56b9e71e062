"""The critic on an OpenAI-compatible server: :class:`OpenAIBackend`, a :class:`~hf_critic.backends.base.Backend` over
the HTTP client of :mod:`~hf_critic.backends.openai_client`, so the critic itself can run against a server
(``Critic(OpenAIBackend(client))``, or :meth:`OpenAIBackend.connect`).

Decoding maps onto request parameters, verdict probabilities come from the server's ``top_logprobs``, a GBNF grammar
rides in llama.cpp's ``grammar`` field, and token counts are estimates (no local tokenizer for a remote model).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cache import GenerationCache
from ..critic.decoding import DecodingConfig
from ..critic.verdicts import VerdictProbabilityError, VerdictReadout, walk_top_logprobs
from .base import Backend, Messages
from .chat import ChatRequest, ChatResult, Check, approximate_tokens
from .openai_client import OpenAIClient
from .retry import RequestsFailedError, RetryPolicy

__all__ = ["OpenAIBackend"]


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
        assistant message, which llama.cpp's server continues; vLLM needs ``continue_final_message`` in the client's
        params); one greedy one-token request returns the top-k next tokens, and
        :func:`hf_critic.critic.verdicts.walk_top_logprobs` extends multi-token verdicts with further requests. Verdicts
        absent from the top-k get probability 0 and are reported unseen (missing mass).

        Raises:
            VerdictProbabilityError: the server answered without ``top_logprobs`` (e.g. ``transformers serve``).
            RequestsFailedError: requests that failed after retries.
        """
        if len(continuations) != len(conversations):
            raise ValueError("verdict_probabilities needs one continuation per conversation")
        params = {"max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": self.top_logprobs}

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
                    f"backend {type(self).__name__} ({self.name}) got no top_logprobs from the server; use --verdict "
                    "text, or a server that returns them (llama.cpp, vLLM)"
                )
            return [r.top_logprobs for r in results]

        return walk_top_logprobs(next_tokens, len(conversations), verdicts)

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
            raise ValueError("beam search is not available over an OpenAI-compatible API; use greedy or sampling")
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
        texts = [r.text if r.ok else r.rejected for r in results]
        self._raise_if_failed([r for r, text in zip(results, texts, strict=True) if text is None], len(results))
        cut = [r.finish_reason == "length" if r.ok else (r.error or "").startswith("answer rejected: length")
               for r in results]  # fmt: skip
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
