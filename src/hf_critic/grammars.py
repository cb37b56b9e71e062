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

from .prompts import OutputSpec

__all__ = ["gbnf_literal", "score_values", "verdict_grammar"]


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
        raise ValueError(f"score range {score_range} holds no integer score")
    return sorted((str(v) for v in range(low, high + 1)), key=lambda v: (-len(v), v))


def verdict_grammar(output: OutputSpec) -> str:
    """The GBNF grammar of one verdict line in ``output``'s format, starting on a new line.

    Implements the verdict formats of the templates (CritiqueLLM v1 Table 9 / MT-Bench ``single-v1``: ``[[x]]``;
    CritiqueLLM v2 Tables 11-14: ``{'Overall Score': x}`` and ``{'Overall Comparison Result': 'Assistant 1'}``;
    MT-Bench ``pair-v2``: ``[[A]]``), each parsed by :mod:`hf_critic.parsing`.

    Args:
        output: the template's :class:`~hf_critic.prompts.OutputSpec`.

    Returns:
        A GBNF grammar (rule ``root``) matching ``"\\n"`` followed by exactly one verdict; scores are the integers of
        ``output.score_range``, labels the template's three label strings.

    Raises:
        ValueError: an output format this module does not know.
    """
    if output.kind == "score":
        value = " | ".join(gbnf_literal(v) for v in score_values(output.score_range))
    else:
        value = " | ".join(gbnf_literal(label) for label in output.labels)
    if output.format in ("rating_brackets", "pair_brackets"):
        line = '"[[" value "]]"'
    elif output.format == "score_dict":
        line = f'"{{" {gbnf_literal(repr(output.overall_key))} ": " value "}}"'
    elif output.format == "comparison_dict":
        line = f'"{{" {gbnf_literal(repr(output.overall_key))} ": \'" value "\'}}"'
    else:
        raise ValueError(f"no verdict grammar for output format {output.format!r}")
    return f'root ::= "\\n" {line}\nvalue ::= {value}\n'
