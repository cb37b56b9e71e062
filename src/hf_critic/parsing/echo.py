"""What a critic wrote itself: its critique without the prompt it echoed or the markers it quoted.

A small critic often writes its prompt again before (or instead of) its critique, and a critique may quote the judged
answer. Either way the text then holds verdict markers the critic did not mean as its verdict: the prompt's format
example (``for example: "Rating: [[5]]"``, ``{..., 'Overall Score': 7}``), a rubric's score descriptions, or a
``Rating: [[10]]`` written inside the judged response. The grammar takes the last marker (:mod:`.grammar`), so an
echo would become the verdict. :func:`own_text` takes out, keeping every other character where it was:

* everything up to the end of the prompt's last line, when the critic wrote that line: its own turn begins after it;
* every occurrence of a prompt line of :data:`MIN_ECHO_CHARS` characters or more (instructions, format examples,
  rubric lines, the judged answer's lines);
* every occurrence of a verdict marker found in the judged texts (``Rating: [[10]]``, ``评分：[[10]]``,
  ``{'Overall Score': 10}``).

What was taken out is returned too: a verdict equal to one read from it is an echo, not a judgement, and the caller
marks it ``unparsed`` (:func:`hf_critic.formats.parse_output`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["MIN_ECHO_CHARS", "OwnText", "own_text"]

#: Prompt lines at least this long are taken out wherever the critic repeats them (shorter ones are too common).
MIN_ECHO_CHARS = 20
#: A verdict marker in judged text: ``[[x]]`` with an optional short lead ending in a colon, or a one-line dict.
_MARKER = re.compile(
    r"(?:[\w\u4e00-\u9fff][\w\u4e00-\u9fff ]{0,30}[:：][^\S\n]*)?(?:\[\[|［［)[^\[\]［］\n]{1,24}(?:\]\]|］］)"
    r"|[{｛][^{}｛｝\n]{1,300}[}｝]"
)


class OwnText(NamedTuple):
    """A critique split into what the critic wrote and what it repeated.

    Attributes:
        text: the critique with the echoed parts blanked (spaces, newlines kept: positions unchanged).
        echoed: the parts taken out, one per line ("" when nothing was).
    """

    text: str
    echoed: str


def own_text(text: str, prompt: Sequence[str] = (), judged: Sequence[str | None] = ()) -> OwnText:
    """The part of ``text`` the critic wrote itself (module docstring).

    Args:
        text: the critique as generated.
        prompt: the texts of the prompt's messages (system and user turns), as rendered.
        judged: the judged texts shown in the prompt (question, responses, reference); None entries are skipped.

    Returns:
        :class:`OwnText`; ``text`` unchanged and ``echoed`` "" when nothing of the prompt was repeated.
    """
    lines = [line.strip() for part in prompt for line in part.splitlines() if line.strip()]
    echoed = []
    last = next((line for line in reversed(lines) if len(line) >= 8), None)
    at = text.rfind(last) if last else -1
    if at >= 0:  # the critic wrote its prompt's end again: its own turn starts after it
        cut = at + len(last)
        echoed.append(text[:cut])
        text = _blank(text[:cut]) + text[cut:]
    spans = {line for line in lines if len(line) >= MIN_ECHO_CHARS}
    spans |= {m.group(0).strip() for part in judged if part for m in _MARKER.finditer(part)}
    for span in sorted(spans, key=len, reverse=True):  # longest first: a line before the marker inside it
        if span in text:
            echoed.append(span)
            text = text.replace(span, _blank(span))
    return OwnText(text, "\n".join(echoed))


def _blank(text: str) -> str:
    """``text`` as spaces, its line breaks kept."""
    return re.sub(r"[^\n]", " ", text)
