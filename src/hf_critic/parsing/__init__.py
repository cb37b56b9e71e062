"""Score and label extraction from critique texts: the general grammar every CritiqueLLM and MT-Bench format goes
through (:mod:`.grammar`: ``[[8]]``, verdict dicts, result lines; its docstring gives the rules). The published
critics' own formats (Prometheus 2, Auto-J, JudgeLM, PandaLM) are parsed in their families' modules, and
:func:`hf_critic.formats.parse_output` chooses by a template's output format. Never a default: what does not parse is
``UNPARSED`` (CritiqueLLM v2 §3.1).
"""

from .grammar import ParsedCritique, normalize, parse, parse_label, parse_score

__all__ = ["ParsedCritique", "normalize", "parse", "parse_label", "parse_score"]
