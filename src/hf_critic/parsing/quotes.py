"""Quotations in a critique: the spans it quotes rather than states.

A verdict marker inside a quotation is the judged text's (or a format example), not the critic's own verdict: "Assistant
A is better. Assistant B's answer ends with '[[B]]'." states A and quotes B. :func:`quotation_spans` finds the quoted
spans in every quoting style critiques use, in one linear pass per style:

* straight double quotes ``"..."`` (a passage may run over lines of one paragraph; inside it, JSON's escaped ``\\"``
  does not close it), and escaped quotes ``\\"...\\"`` on their own (a JSON string quoted in a critique);
* straight single quotes ``'...'`` on one line; the full-width ``＂...＂`` (one paragraph) and ``＇...＇`` (one line);
* curly double quotes ``“...”`` (over paragraphs too);
* within one paragraph: curly single quotes ``‘...’``, low-9 quotes ``„...“`` / ``„...”``, guillemets ``«...»`` and
  ``‹...›``, corner brackets ``「...」`` and ``『...』``, ``〝...〞``;
* HTML ``<q>...</q>`` and ``<blockquote>...</blockquote>``, and Markdown ``>`` blockquote lines.

**Apostrophes are not quotes.** ``'`` and ``’`` are also apostrophes ("B's", "don't", "students' answers", "'90s"). A
symmetric quote character opens a quotation only after a character that is not a letter or digit and before one
that is not a space, and closes one only after a character that is not a space and before one that is not a letter
or digit: the apostrophe of "B's" or "don't" can do neither, so it neither opens nor ends a quotation, and an opener
with no closer (a stray "'90s") quotes nothing. ``’`` before a letter is an apostrophe, never a closing quote.

Inline code and fenced code are not here: the grammar treats them as code (:mod:`.grammar`).
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections.abc import Iterable

__all__ = ["QUOTING_STYLES", "Quotations", "quotation_spans"]


# Inside a quotation that may span a paragraph: a line break not followed by a blank line.
_NEWLINE = r"\n(?![ \t]*\n)"
_ALNUM = r"[^\W_]"


def _symmetric(quote: str, reach: str) -> str:
    """A symmetric quote's pattern: opens after no letter or digit and before no space, closes after no space and before
    no letter or digit; apostrophes between letters and, for ``"``, JSON's escaped ``\\"`` do not close it. The
    opening quote comes first in the pattern, so ``re`` finds its occurrences fast."""
    q = re.escape(quote)
    inside = [rf"[^{q}\\\n]", r"\\.", rf"(?<={_ALNUM}){q}(?={_ALNUM})"]
    if reach == "paragraph":
        inside.append(_NEWLINE)
    return rf"{q}(?<!{_ALNUM}{q})(?<!\\{q})(?=\S)(?:{'|'.join(inside)})+?(?<=\S){q}(?!{_ALNUM})"


def _paired(opener: str, closers: str, inner: str = "") -> str:
    """An asymmetric style's pattern: the opener, then anything but another opener or a closer within one paragraph,
    then a closer; ``inner`` adds what else may stand inside (``’`` before a letter: an apostrophe)."""
    stop = re.escape(opener + closers)
    inside = [rf"[^{stop}\n]", *([inner] if inner else []), _NEWLINE]
    return rf"{re.escape(opener)}(?:{'|'.join(inside)})*[{re.escape(closers)}]"


def _tagged(tag: str) -> str:
    """An HTML quotation element's pattern, ``<q>...</q>``, attributes allowed, in any case."""
    return rf"(?i:<{tag}\b[^<>]*>(?:[^<]|<(?!/?{tag}\b))*</{tag}\s*>)"


#: Every quoting style (module docstring): its name and its pattern.
QUOTING_STYLES = {
    "double quotes": _symmetric('"', "paragraph"),
    "escaped double quotes": r'\\"(?<!' + _ALNUM + r'\\")(?=\S)(?:[^"\\\n]|\\[^"\n])+?(?<=\S)\\"(?!' + _ALNUM + ")",
    "single quotes": _symmetric("'", "line"),
    "full-width double quotes": _symmetric("＂", "paragraph"),
    "full-width single quotes": _symmetric("＇", "line"),
    "curly double quotes": "“[^“”]*”",
    "curly single quotes": _paired("‘", "’", inner=rf"’(?={_ALNUM})"),
    "low-9 quotes": _paired("„", "“”"),
    "guillemets": _paired("«", "»"),
    "single guillemets": _paired("‹", "›"),
    "corner brackets": _paired("「", "」"),
    "white corner brackets": _paired("『", "』"),
    "double prime quotes": _paired("〝", "〞〟"),
    "<q>": _tagged("q"),
    "<blockquote>": _tagged("blockquote"),
    "> blockquote lines": r"(?m:^[ \t]*>[^\n]*)",
}
#: The character each style's quotation must open with, in the order of :data:`QUOTING_STYLES`: a text without it has
#: no quotation of that style, so its pattern is not run (a 100k-character critique without quotes costs no scan).
_OPENERS = ('"', "\\", "'", "＂", "＇", "“", "‘", "„", "«", "‹", "「", "『", "〝", "<", "<", ">")
_PATTERNS = list(zip(_OPENERS, (re.compile(p) for p in QUOTING_STYLES.values()), strict=True))


def quotation_spans(text: str) -> list[tuple[int, int]]:
    """The quotations of ``text`` in every style of :data:`QUOTING_STYLES`.

    Args:
        text: a critique.

    Returns:
        ``[(start, end), ...]``: each quotation from its opening to past its closing quote, in the order of their
        starts; quotations of different styles may nest or overlap (a caller merges them). Linear in ``len(text)``:
        a pattern's attempt stops at the next quote of its style.
    """
    styles = [list(map(re.Match.span, p.finditer(text))) for opener, p in _PATTERNS if opener in text]
    styles = [spans for spans in styles if spans]
    # One style's quotations are already in order and apart; only several styles need a sort.
    return styles[0] if len(styles) == 1 else sorted(itertools.chain.from_iterable(styles))


class Quotations:
    """Quoted spans merged, to tell in O(log n) whether a position lies inside one.

    Args:
        spans: ``(start, end)`` spans in the order of their starts (:func:`quotation_spans`, or a selection of them).
    """

    def __init__(self, spans: Iterable[tuple[int, int]]):
        spans = list(spans)
        starts, ends = (list(column) for column in zip(*spans, strict=True)) if spans else ([], [])
        if not any(map(operator.lt, starts[1:], ends)):  # apart already (one style's): nothing to merge
            self.starts, self.ends = starts, ends
            return
        merged: list[tuple[int, int]] = []
        for start, end in spans:
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        self.starts, self.ends = [s for s, _ in merged], [e for _, e in merged]

    @classmethod
    def of(cls, text: str) -> Quotations:
        """Every quotation of ``text`` (:func:`quotation_spans`)."""
        return cls(quotation_spans(text))

    def __contains__(self, pos: int) -> bool:
        """True when ``pos`` lies inside a quotation."""
        i = bisect.bisect_right(self.starts, pos) - 1
        return i >= 0 and pos < self.ends[i]
