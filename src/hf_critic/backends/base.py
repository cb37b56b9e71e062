"""The interface every generation backend implements.

Implementations: :class:`~hf_critic.backends.transformers.TransformersBackend` (a local model, in-process) and
:class:`~hf_critic.backends.openai.OpenAIBackend` (any OpenAI-compatible server: OpenAI, vLLM, ``transformers serve``,
llama.cpp's server).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..decoding import DecodingConfig

Messages = list[dict[str, str]]


class Backend(ABC):
    """Turns chat conversations into generations.

    Attributes:
        name: identity of the model behind the backend; part of every cache key, so two models never
            share cached generations.
        context_length: the model's context window in tokens (prompt + generation), or None if unknown.
    """

    name: str
    context_length: int | None = None

    @abstractmethod
    def generate(self, conversations: Sequence[Messages], config: DecodingConfig) -> list[list[str]]:
        """Generate ``config.num_return_sequences`` completions for each conversation.

        Args:
            conversations: chat messages (``[{"role": ..., "content": ...}, ...]``) ending in a user turn.
            config: decoding strategy and sampling parameters.

        Returns:
            One list of completion strings per conversation, in input order.
        """

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` alone (no special tokens)."""

    @abstractmethod
    def prompt_tokens(self, conversation: Messages) -> int:
        """Number of tokens of the full prompt the model sees (chat template and generation prompt included)."""

    @abstractmethod
    def truncate_middle(self, text: str, num_tokens: int) -> str:
        """Cut ``num_tokens`` tokens out of the middle of ``text``, keeping its head and tail."""
