"""GBNF grammars that force a critique's verdict line into its template's syntax (``--constrain-verdict``).

Small critics often explain well enough but never write the verdict the prompt asks for (the embedded 135M default
critic writes one in the requested format for 12 of 80 MT-Bench prompts). With ``--constrain-verdict`` the
explanation stays free: the critic generates it unconstrained; then, for every critique whose verdict does not
parse, generation continues from that text under :func:`verdict_grammar`, which admits exactly one verdict line in
the template's own syntax (``[[8]]``, ``{'Overall Score': 7}``, ``[[A]]``, ``{'Overall Comparison Result':
'Assistant 1'}``) with the values the template allows. The model still chooses the value; only the syntax is
forced. Grammars are llama.cpp's GBNF (``grammar`` request field, in-process or on llama.cpp's server).
"""

from __future__ import annotations

import json
import math

from ..core.errors import BadInputError
from ..formats import verdict_format
from ..prompts import OutputSpec

__all__ = [
    "critique_grammar",
    "difficulty_grammar",
    "gbnf_literal",
    "query_generation_grammar",
    "score_values",
    "verdict_ending",
    "verdict_grammar",
]


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal (double quotes; backslash, quote and control characters escaped)."""
    return json.dumps(text, ensure_ascii=False)


def score_values(score_range: tuple[float, float]) -> list[str]:
    """The integer scores of an inclusive range as strings, longest first (GBNF alternatives try them in order).

    Args:
        score_range: ``(low, high)``, e.g. ``(1, 10)``.

    Returns:
        E.g. ``["10", "9", ..., "1"]``.

    Raises:
        ValueError: the range holds no integer.
    """
    low, high = math.ceil(score_range[0]), math.floor(score_range[1])
    if low > high:
        raise BadInputError(f"score range {score_range} holds no integer score")
    return sorted((str(v) for v in range(low, high + 1)), key=lambda v: (-len(v), v))


def verdict_grammar(output: OutputSpec) -> str:
    """The GBNF grammar of one verdict line in ``output``'s format, starting on a new line.

    The line is the template's verdict prefix (``Rating: [[``, ``{'Overall Score':``, ``{'综合比较结果': '``,
    ``[RESULT]``, ``So, the final decision is``; a space after a prefix ending in ``:`` or a word), one allowed value,
    and the format's closing (``]]``, ``}``, ``'}``): the verdict formats of CritiqueLLM v1 Table 9 / MT-Bench,
    CritiqueLLM v2 Tables 11-14, Prometheus 2 and Auto-J, each parsed by :mod:`hf_critic.parsing`.

    Args:
        output: the template's :class:`~hf_critic.prompts.OutputSpec`.

    Returns:
        A GBNF grammar (rule ``root``) matching ``"\\n"`` followed by exactly one verdict; the values are the
        template's allowed verdicts (``output.verdicts``, else the labels, else the integers of the score range).

    Raises:
        ValueError: a format whose verdict opens the critique (JudgeLM's and PandaLM's first lines).
    """
    ending = verdict_ending(output)
    if ending is None:  # JudgeLM's and PandaLM's verdicts open the critique
        raise BadInputError(
            f"no verdict grammar for output format {output.format!r}: its verdict comes first, not after the explanation"
        )
    prefix, closing = ending
    if prefix[-1].isascii() and prefix[-1] not in "['":  # "Score:", "[RESULT]", "is" take a space before the value
        prefix += " "
    values = output.verdicts or (output.labels if output.kind == "label" else score_values(output.score_range))
    value = " | ".join(gbnf_literal(v) for v in sorted(values, key=lambda v: (-len(v), v)))
    closing = f" {gbnf_literal(closing)}" if closing else ""
    return f'root ::= "\\n" {gbnf_literal(prefix)} value{closing}\nvalue ::= {value}\n'


def verdict_ending(output: OutputSpec) -> tuple[str, str] | None:
    """How a verdict in ``output``'s format ends a critique: ``(prefix, closing)``, e.g. ``("Rating: [[", "]]")``.

    The prefix is the template's ``verdict_prefix``, else its verdict format's default opening (the Eval-Instruct
    teacher prompts declare none: ``[[``, ``[RESULT]``, ``{'Overall Score':``); the closing is the one its format
    declares (:class:`hf_critic.formats.VerdictFormat`).

    Returns:
        ``(prefix, closing)``; None when the format's verdict opens the critique (JudgeLM, PandaLM), the format is not
        registered, or there is no prefix.
    """
    fmt = verdict_format(output.format)
    if fmt is None or fmt.closing is None:
        return None
    prefix = output.verdict_prefix if output.verdict_prefix is not None else fmt.prefix_for(output.overall_key)
    return (prefix, fmt.closing) if prefix else None


def critique_grammar(output: OutputSpec, max_explanation_chars: int) -> str:
    """The GBNF grammar of a whole critique: a free explanation, then one verdict line in ``output``'s format.

    For one-shot requests (the Eval-Instruct teacher), where the verdict cannot be appended afterwards as
    ``--constrain-verdict`` does. The explanation is any text without the verdict's opening character (``[`` or
    ``{``, so the verdict is the only marker), at least 10 and at most ``max_explanation_chars`` characters, so the
    verdict fits the request's ``max_tokens`` (give at most 2 characters per token of budget).

    Args:
        output: the template's output format.
        max_explanation_chars: upper bound on the explanation's length (>= 10).

    Returns:
        A GBNF grammar with rule ``root``.
    """
    fmt = verdict_format(output.format)
    opening = fmt.opening if fmt is not None else "{"
    opening = f"\\{opening}" if opening in "[]\\^-" else opening  # escaped in a GBNF character class
    verdict = verdict_grammar(output).replace("root ::=", "verdict ::=", 1)
    return (
        f"root ::= explanation verdict\nexplanation ::= [^{opening}]{{10,{max(10, max_explanation_chars)}}}\n{verdict}"
    )


def query_generation_grammar(categories: list[str], max_tokens: int = 256) -> str:
    """GBNF of the Appendix A query-generation answer: ``k. @@query@@ &&category&&`` lines, categories from a list.

    The answer must end within ``max_tokens`` (a cut-off answer is rejected): queries are 8-120 characters and there
    are at most ``max_tokens // 64`` lines (at least 1, at most the 10 the prompt asks for), ~64 tokens a line.

    Args:
        categories: the category names as the prompt writes them (read back by
            :func:`hf_critic.core.schema.normalize_category`).
        max_tokens: the request's ``max_tokens``.
    """
    names = " | ".join(gbnf_literal(c) for c in categories)
    return (
        f"root ::= item{{1,{min(10, max(1, max_tokens // 64))}}}\n"
        'item ::= [1-9] [0-9]? ". @@" query "@@ &&" category "&&\\n"\n'
        "query ::= [^@\\n]{8,120}\n"
        f"category ::= {names}\n"
    )


def difficulty_grammar(max_items: int = 3) -> str:
    """GBNF of the Appendix A difficulty answer: ``k.@@query@@&&category&&##d##`` lines numbered 1, 2, ... (at most
    ``max_items``; the prompt lists three queries), each difficulty d in 1-3, read by
    :func:`hf_critic.eval_instruct.stages.parse_difficulties`."""
    item = '"@@" [^@\\n]{1,400} "@@&&" [^&\\n]{1,60} "&&##" [1-3] "##\\n"'
    rule = ""
    for k in range(max_items, 0, -1):
        rule = f'"{k}." {item}' + (f" ({rule})?" if rule else "")
    return f"root ::= {rule}\n"
