"""Score and label extraction from critique texts: the general grammar every CritiqueLLM and MT-Bench format goes
through (:mod:`.grammar`: ``[[8]]``, verdict dicts, result lines; its docstring gives the rules) and the published
critics' own formats (:mod:`.families`: Prometheus 2, Auto-J, JudgeLM, PandaLM), with :func:`parse_output` choosing
by a template's output format. Never a default: what does not parse is ``UNPARSED`` (CritiqueLLM v2 §3.1).
"""

from .families import (
    FAMILY_PARSERS,
    parse_autoj_decision,
    parse_autoj_rating,
    parse_judgelm,
    parse_output,
    parse_pandalm,
    parse_prometheus,
)
from .grammar import ParsedCritique, normalize, parse, parse_label, parse_score

__all__ = [
    "FAMILY_PARSERS",
    "ParsedCritique",
    "normalize",
    "parse",
    "parse_autoj_decision",
    "parse_autoj_rating",
    "parse_judgelm",
    "parse_label",
    "parse_output",
    "parse_pandalm",
    "parse_prometheus",
    "parse_score",
]
