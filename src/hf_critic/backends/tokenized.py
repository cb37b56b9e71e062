"""Prompts tokenised by hf-critic itself, for the local engines that take token ids (transformers, vLLM in-process):
the chat template rendered with the judged text's control-token strings kept as text
(:mod:`hf_critic.core.control_tokens`), token counts, the middle cut, and the verdict trie of the read-out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..core.control_tokens import encode_rendered, encode_text, render_chat
from ..critic.verdicts import TokenTrie, verdict_spellings
from .base import Messages


class TokenizedPrompts:
    """The prompt side of a :class:`~hf_critic.backends.base.Backend` that owns its tokenizer (``self.tokenizer``, with
    a chat template): both engines built on it see the same token ids for the same conversation."""

    tokenizer = None

    def _prompt_text(self, conversation: Messages) -> str:
        """The chat-templated prompt with the messages' control-token strings marked as data
        (:func:`hf_critic.core.control_tokens.render_chat`; encode it with :meth:`_encode`)."""
        return render_chat(self.tokenizer, conversation, add_generation_prompt=True)

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of rendered prompts: the template's control tokens real, the judged text's kept as text."""
        return encode_rendered(self.tokenizer, list(texts))

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens (special-token strings in it count as the text they are)."""
        return len(encode_text(self.tokenizer, text))

    def prompt_tokens(self, conversation: Messages) -> int:
        """Tokens of the chat-templated prompt, generation prompt included."""
        return len(self._encode([self._prompt_text(conversation)])[0])

    def truncate_middle(self, text: str, num_tokens: int) -> str:
        """Remove ``num_tokens`` tokens from the middle of ``text`` and mark the cut with " ... "."""
        ids = encode_text(self.tokenizer, text)
        keep = max(len(ids) - num_tokens, 0)
        head, tail = keep - keep // 2, keep // 2
        return self.tokenizer.decode(ids[:head]) + " ... " + (self.tokenizer.decode(ids[-tail:]) if tail else "")

    def _verdict_trie(self, continuations: Sequence[str], verdicts: Sequence[str]) -> TokenTrie:
        """Token paths of every verdict spelling as they continue the rows' common tail (BPE merges across the
        boundary are what the model would see), else as tokenised alone."""
        tail = os.path.commonprefix([c[::-1] for c in continuations])[::-1][-32:]
        anchor = self.tokenizer(tail, add_special_tokens=False)["input_ids"] if tail else []
        paths = {}
        for verdict in verdicts:
            paths[verdict] = []
            for spelling in verdict_spellings(verdict):
                ids = self.tokenizer(tail + spelling, add_special_tokens=False)["input_ids"]
                alone = ids[len(anchor) :] if ids[: len(anchor)] == anchor else []
                paths[verdict].append(alone or self.tokenizer(spelling, add_special_tokens=False)["input_ids"])
        return TokenTrie(paths)
