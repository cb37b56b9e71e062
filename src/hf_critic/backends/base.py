"""The interface every generation backend implements.

Implementations: :class:`~hf_critic.backends.transformers.TransformersBackend` (a local model, in-process),
:class:`~hf_critic.backends.llamacpp.LlamaCppBackend` (a GGUF file through llama.cpp, in-process) and
:class:`~hf_critic.backends.openai.OpenAIBackend` (any OpenAI-compatible server: OpenAI, vLLM, ``transformers serve``,
llama.cpp's server).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..critic.decoding import DecodingConfig
from ..critic.verdicts import VerdictProbabilityError, VerdictReadout

Messages = list[dict[str, str]]


class Backend(ABC):
    """Turns chat conversations into generations.

    Attributes:
        name: the model behind the backend, for messages (its path or id, and what it is known by).
        identity: what the backend's outputs depend on, by content and never by path (weights, tokenizer and chat
            template, dtype, engine; a server's URL, model and what it reports): part of every cache key and of a
            calibration's fingerprint, so two models never share cached generations or a guarantee and a
            byte-identical copy of a model at another path shares both. Defaults to ``name``.
        context_length: the model's context window in tokens (prompt + generation), or None if unknown.
        supports_grammar: True when :meth:`continue_under_grammar` is implemented (llama.cpp, in-process or
            behind its server).
        embedded: True for the embedded default critic however it is reached (:func:`hf_critic.backends.models.is_embedded_critic`,
            set by :func:`hf_critic.backends.load_backend` and by the server backend); the critic's ``verdict="auto"``
            reads probabilities for it.
        keeps_text: True when the engine itself tokenises the prompt and keeps the control-token strings of the
            judged text as text (:mod:`hf_critic.core.control_tokens`); False for a server, which tokenises for itself.
        control_tokens: the model's own control-token strings when known (flagged besides the common ones).
    """

    name: str
    _identity: str | None = None
    context_length: int | None = None
    embedded: bool = False
    supports_grammar: bool = False
    keeps_text: bool = False
    control_tokens: tuple[str, ...] = ()

    @property
    def identity(self) -> str:
        """See the class docstring: the content identity when the backend knows one, else ``name``."""
        return self._identity or self.name

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

    def verdict_probabilities(
        self, conversations: Sequence[Messages], continuations: Sequence[str], verdicts: Sequence[str]
    ) -> list[VerdictReadout]:
        """Probabilities of the allowed verdict strings right after each prompt and its continuation.

        The read-out position is the chat prompt (template and generation prompt, as in :meth:`generate`) followed
        by ``continuations[i]``: the verdict prefix (``"Rating: [["``), after the critique's explanation under
        ``--explanation first``. Each verdict is scored as written and with one leading space, all its tokens
        (``"10"`` = ``"1"`` then ``"0"``); verdicts whose path is a prefix of another's are made exclusive (see
        :mod:`hf_critic.critic.verdicts`). Backends that see only the top-k next tokens report the verdicts outside it as
        :attr:`~hf_critic.critic.verdicts.VerdictReadout.unseen` (probability 0).

        Args:
            conversations: chat messages ending in a user turn, as for :meth:`generate`.
            continuations: text of the assistant turn so far, one per conversation (may be empty).
            verdicts: the allowed verdict strings (e.g. ``"1"`` .. ``"10"``, or ``"A"``, ``"B"``, ``"C"``), distinct.

        Returns:
            One :class:`~hf_critic.critic.verdicts.VerdictReadout` per conversation, in input order.

        Raises:
            VerdictProbabilityError: this backend cannot return probabilities (the default; the message names it).
        """
        raise VerdictProbabilityError(
            f"backend {type(self).__name__} ({self.name}) cannot return verdict probabilities; use verdict=text"
        )

    def check_readouts(self, verdicts: Sequence) -> None:
        """Refuse a run's probability verdicts when the engine knows they cannot be trusted; the default accepts them
        (a local engine reads the exact distribution). A server overrides it
        (:meth:`hf_critic.backends.openai.OpenAIBackend.check_readouts`).

        Args:
            verdicts: one :class:`~hf_critic.critic.verdicts.ProbabilityVerdict` per row.
        """
        return None

    def continue_under_grammar(
        self, conversations: Sequence[Messages], prefixes: Sequence[str], grammar: str, max_new_tokens: int = 32
    ) -> list[str]:
        """Greedily continue each conversation's assistant answer ``prefixes[i]`` under a GBNF ``grammar``.

        Used by ``--constrain-verdict`` (:mod:`hf_critic.critic.grammars`) to append a verdict line in the template's
        syntax to a critique that has none.

        Args:
            conversations: chat messages ending in a user turn.
            prefixes: the assistant text generated so far, one per conversation.
            grammar: GBNF grammar the continuation must match.
            max_new_tokens: budget of the continuation.

        Returns:
            The continuation only (without the prefix), one per conversation.

        Raises:
            NotImplementedError: the engine has no grammar-constrained decoding.
        """
        raise NotImplementedError(
            f"{self.name}: this engine cannot constrain generation with a grammar; use engine=llamacpp or "
            "base_url= of a llama.cpp server"
        )
