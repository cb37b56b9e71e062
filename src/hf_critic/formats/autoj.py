"""Auto-J (Li et al., ICLR 2024, arXiv:2310.05470): single-response rating (1-10) and pairwise comparison with ties,
reference-free, English and Chinese (the bilingual model). Its verdicts ``Rating: [[5]]`` and ``So, the final decision
is Response 1`` are read by :func:`parse_autoj_rating` and :func:`parse_autoj_decision`; its input wrapper is Llama 2's
``[INST] ... [/INST]`` without a system message.
"""

from __future__ import annotations

import re

from hf_critic.parsing import ParsedCritique
from hf_critic.parsing.grammar import _explanation, _lower, _number

from ..core.schema import ParseStatus
from ._common import FLOAT, SP, last_unquoted, score_result
from .family import CriticFamily, VerdictFormat

__all__ = ["AUTOJ_DECISION", "AUTOJ_RATING", "FAMILY", "parse_autoj_decision", "parse_autoj_rating"]

_AUTOJ_RATING = re.compile(rf"{SP}{FLOAT}{SP}\]\]")
_AUTOJ_DECISION_KEYS = ("final decision is", "最终决定是")


def parse_autoj_rating(text: str, output) -> ParsedCritique:
    """Auto-J's single-response rating: ``Rating: [[5]]`` (zh: ``评分: [[5]]``), the template's verdict prefix.

    Implements the format of Auto-J's ``single`` prompt (GAIR-NLP/auto-j ``constants_prompt.py``; README, "Extract
    results": the last ``"Rating: [["`` up to ``"]]"``). The last occurrence of the prefix outside quotations is read
    (a ``'Rating: [[10]]'`` the critique quotes from the judged answer is not its own): a number (``5``,
    ``5.0``) then ``]]``. ``Rating: [5]``, ``Rating [[5]]``, ``rating: [[5]]``, ``Rating: [[five]]``, ``Rating:
    [[5/10]]`` and a prefix without a number are unparsed (Auto-J's own code returns 0.0 there).

    Args:
        text: the critique as generated.
        output: the template's output spec (``verdict_prefix``, ``score_range``).

    Returns:
        :class:`ParsedCritique`; the explanation is the critique without the rating.
    """
    pos = last_unquoted(text, output.verdict_prefix)
    m = _AUTOJ_RATING.match(text, pos + len(output.verdict_prefix)) if pos != -1 else None
    if m is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    return score_result(_number(m.group(1)), output, _explanation(text, pos, m.end(), fallback=False))


def parse_autoj_decision(text: str, output) -> ParsedCritique:
    """Auto-J's pairwise decision: ``So, the final decision is Response 1`` / ``Response 2`` / ``Tie`` (zh:
    ``所以，最终决定是回应1`` / ``回应2`` / ``平局``).

    Implements the extraction of Auto-J's README ("Extract results"): the text after the last ``final decision is``
    (``最终决定是``) outside quotations, case-insensitive, must start with one of the template's labels, as a whole word. Also unparsed:
    the format echoed (``Response 1 / Response 2 / Tie``), ``Response 10``, ``Tied``, ``not Response 1``, ``that
    Response 1``, and a text without the phrase (Auto-J's own code returns -1 there).

    Args:
        text: the critique as generated.
        output: the template's output spec (``labels`` in the order response 1, response 2, tie).

    Returns:
        :class:`ParsedCritique` with label 0 / 1 / 2; the decision statement is cut from the explanation when it ends
        the critique.
    """
    low = _lower(text)
    key, pos = max(((k, last_unquoted(text, k, low)) for k in _AUTOJ_DECISION_KEYS), key=lambda kp: kp[1])
    if pos == -1:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    start = pos + len(key)
    while start < len(low) and low[start] in " \t\r\n":
        start += 1
    for label, verdict in enumerate(output.labels):
        end = start + len(verdict)
        if low.startswith(verdict.lower(), start) and (end == len(low) or not low[end].isalnum()):
            if low[end : end + 3].lstrip(" \t").startswith("/"):  # "Response 1 / Response 2 / Tie": the format echoed
                break
            line = low.rfind("\n", 0, pos) + 1
            end += low[end : end + 1] in (".", "。", "!", "！")  # the statement's full stop goes with it
            return ParsedCritique(
                ParseStatus.OK, label=label, explanation=_explanation(text, line, end, fallback=True)
            )
    return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())


#: ``Rating: [[5]]`` (zh: ``评分: [[5]]``), the template's verdict prefix.
AUTOJ_RATING = VerdictFormat(
    "autoj_rating",
    ("score",),
    parse_autoj_rating,
    closing="]]",
    default_prefix="[[",
    opening="[",
    example="Rating: [[5]]",
)
#: ``So, the final decision is Response 1`` / ``Response 2`` / ``Tie`` (zh: ``所以，最终决定是回应1``).
AUTOJ_DECISION = VerdictFormat(
    "autoj_decision", ("label",), parse_autoj_decision, closing=".", example="So, the final decision is Response 1."
)

_BOTH = ("en", "zh")
FAMILY = CriticFamily(
    name="autoj",
    title="Auto-J (Li et al., ICLR 2024)",
    source="arXiv:2310.05470; GAIR-NLP/auto-j @ 5e280be codes/usage/constants_prompt.py, zh_constants_prompt.py",
    templates={"pointwise_reference_free": _BOTH, "pairwise_reference_free": _BOTH},
    formats=(AUTOJ_RATING, AUTOJ_DECISION),
    model_names=("autoj",),
    chat_template=(
        "{{ bos_token or '' }}[INST] {% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] }}{% endif %}"
        "{% endfor %} [/INST]"
    ),
    chat_template_source=(
        "GAIR-NLP/auto-j @ 5e280be codes/usage/constants_prompt.py (llama2_wrapper without a system message, "
        'PROMPT_INPUT_WO_SYSTEM "[INST] {input} [/INST]"); the same in zh_constants_prompt.py for the bilingual model.'
    ),
)
