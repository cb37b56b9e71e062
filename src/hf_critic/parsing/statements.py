"""Verdicts a pairwise critique states in a sentence of its own: "Assistant A is better." (MT-Bench ``pair-v2``'s
wording of its verdict, written without the ``[[A]]`` marker).

The grammar's last fallback (:func:`hf_critic.parsing.grammar.parse_label`): read only when the critique has no
marker, no verdict dict and no result line. A sentence counts when it is nothing but the verdict, at a sentence start
and outside quotations, and every such sentence names the same side; a sentence that goes on ("Assistant 1 is better
in some respects", "Response 2 is better than ...") is none, and two sentences naming different sides leave the
critique unparsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..core.labels import VERDICT_WORDS

__all__ = ["stated_verdict"]

_BETTER = re.compile(
    r"(?:assistant|response|answer)\s?([12ab])\s+is\s+(?:the\s+)?better(?:\s+(?:one|response|answer))?[ \t*]*"
    r"(?:[.!。！]|$)",
    re.MULTILINE,
)
_SENTENCE_END = ("\n", ".", "!", "?", "。", "！", "？", ":", "：")
_MARKS = " \t*＊#>-"
_WINDOW = 40


def _at_sentence_start(low: str, start: int) -> bool:
    """True when nothing but list, quote or emphasis marks stands between ``start`` and the previous sentence's end."""
    before = low[max(0, start - _WINDOW) : start].rstrip(_MARKS)
    return before.endswith(_SENTENCE_END) or (not before and start <= _WINDOW)


def stated_verdict(low: str, in_quote: Callable[[int], bool]) -> tuple[int, int, int] | None:
    """The verdict a critique states in a sentence (module docstring).

    Args:
        low: the critique in lower case (positions as in the original).
        in_quote: tells whether a position lies inside a quotation.

    Returns:
        ``(start, end, label)`` of the last such sentence (label 0: A / 1 better, 1: B / 2 better), or None when there
        is none or two name different sides.
    """
    found = [m for m in _BETTER.finditer(low) if _at_sentence_start(low, m.start()) and not in_quote(m.start())]
    labels = {VERDICT_WORDS[m.group(1)] for m in found}
    if len(labels) != 1:
        return None
    return found[-1].start(), found[-1].end(), labels.pop()
