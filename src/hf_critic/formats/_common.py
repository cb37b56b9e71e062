"""What the published critics' strict parsers share: the number patterns, the first line, a score checked against the
template's range. Each parser reads one position (str.rfind, the first line, the last tag) and matches an anchored
pattern there: linear time, never a default.
"""

from __future__ import annotations

from typing import Any

from hf_critic.parsing import ParsedCritique
from hf_critic.parsing.quotes import Quotations

from ..core.schema import ParseStatus

SP = r"[ \t]*"
#: A number with at most three digits before and after the point, ASCII or full-width.
FLOAT = r"(\d{1,3}(?:[.．]\d{1,3})?)(?![.．]?\d)"


def first_line(text: str) -> tuple[str, str]:
    """The first non-blank line of ``text`` and the rest after it, stripped."""
    body = text.lstrip()
    cut = body.find("\n")
    return (body, "") if cut == -1 else (body[:cut].rstrip("\r"), body[cut + 1 :].strip())


def last_unquoted(text: str, needle: str, haystack: str | None = None) -> int:
    """Where the last ``needle`` outside quotations starts (:mod:`hf_critic.parsing.quotes`: a verdict the critique
    quotes is the judged text's, not the critic's), -1 for none.

    Args:
        text: the critique.
        needle: what to find.
        haystack: ``text`` as searched, with the same positions (e.g. lower-cased); default ``text``.
    """
    haystack = text if haystack is None else haystack
    pos, quotes = haystack.rfind(needle), None
    while pos != -1:
        quotes = quotes or Quotations.of(text)
        if pos not in quotes:
            return pos
        pos = haystack.rfind(needle, 0, pos)
    return -1


def score_result(score: float, output: Any, explanation: str) -> ParsedCritique:
    """``OK`` with ``score`` when it lies in ``output.score_range`` (inclusive), else ``OUT_OF_RANGE`` with no score."""
    low, high = output.score_range
    if not low <= score <= high:
        return ParsedCritique(ParseStatus.OUT_OF_RANGE, explanation=explanation)
    return ParsedCritique(ParseStatus.OK, score=score, explanation=explanation)


#: The raw prompt after BOS, no chat roles: the input of critics trained without a chat format (JudgeLM, PandaLM).
#: BOS is written here because hf-critic tokenizes the rendered prompt without adding special tokens.
RAW_PROMPT_WRAPPER = (
    "{{ bos_token or '' }}{% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] }}{% endif %}{% endfor %}"
)
