"""The body of a verdict dict (CritiqueLLM v2, Tables 11-14: ``{'Overall Score': 7}``, ``{'综合比较结果': '助手2'}``):
its ``key: value`` pairs read by a one-pass tokenizer, and the keys and values that make a verdict. The general
grammar (:mod:`.grammar`) finds the dict and puts its body through :func:`~.grammar.normalize` first.
"""

from __future__ import annotations

import re

__all__ = ["DICT_LABEL", "DICT_NUMBER", "LABEL_KEYS", "OVERALL_SCORE_KEYS", "dict_key", "dict_pairs"]

# On the normalised dict body: 'key': value pairs, either quote, or none.
# A pair starts at the body start or after a comma, which keeps the scan linear on long brace blocks.
# Tokens of a dict body: quoted strings, separators, and runs of anything else. Each token is a maximal run, so the
# scan is linear (a pattern with nested whitespace quantifiers took cubic time on a brace full of spaces).
_DICT_TOKEN = re.compile(r"""'[^']*'|"[^"]*"|[,:]|[^'",:]+|['"]""")
DICT_NUMBER = re.compile(r"\s*([+-]?\d{1,3}(?:\.\d{1,3})?)(?:\s*/\s*(\d{1,3}(?:\.\d{1,3})?))?\s*分?\s*")
DICT_LABEL = re.compile(
    r"\s*(?:(?:assistant|response|answer|助手|回答|答案)\s*([12ab])|([12ab])|(tie|质量相当|平局|相当))\s*"
)
_SPACES = re.compile(r"[\s_\-]+")

#: Keys (after :func:`dict_key`) whose value is a pointwise verdict; every other numeric key is a dimension.
OVERALL_SCORE_KEYS = frozenset(
    {
        "overall score",
        "overall rating",
        "overall",
        "final score",
        "final rating",
        "score",
        "rating",
        "综合得分",
        "综合评分",
        "总分",
        "总体评分",
        "最终得分",
        "得分",
        "评分",
    }
)
#: Keys (after :func:`dict_key`) whose value is a pairwise verdict.
LABEL_KEYS = frozenset(
    {
        "overall comparison result",
        "comparison result",
        "overall result",
        "result",
        "winner",
        "verdict",
        "综合比较结果",
        "比较结果",
        "综合质量比较结果",
    }
)


def dict_pairs(body: str) -> list[tuple[str, str]]:
    """``[(key, value), ...]`` of a normalised one-level dict body such as ``'a': 9, "b": '8'``, stripped.

    A pair is ``key : value`` between commas; key and value are each one quoted string or one unquoted run (quotes
    removed). A part of another shape (no colon, two strings on one side) is no pair. One linear pass.
    """
    pairs = []
    sides: list[list[str]] = [[]]
    for token in [*_DICT_TOKEN.findall(body), ","]:
        if token == ",":
            if len(sides) >= 2:
                key, value = (_dict_side(side) for side in sides[:2])
                if key and value is not None:
                    pairs.append((key, value))
            sides = [[]]
        elif token == ":" and len(sides) == 1:
            sides.append([])
        else:
            sides[-1].append(token)
    return pairs


def _dict_side(tokens: list[str]) -> str | None:
    """One side of a dict pair as text: a quoted string's content, else the unquoted run stripped; None if neither."""
    parts = [t for t in tokens if t.strip()]
    if not parts:
        return ""
    if len(parts) == 1 and len(parts[0]) >= 2 and parts[0][0] in "'\"" and parts[0][-1] == parts[0][0]:
        return parts[0][1:-1].strip()
    text = "".join(tokens).strip()
    return None if any(q in text for q in "'\"") else text


def dict_key(raw: str) -> str:
    """A dict key for comparison: lower case, ``*`` stripped, ``_`` / ``-`` / space runs as one space."""
    return _SPACES.sub(" ", raw.strip("* ")).lower()
