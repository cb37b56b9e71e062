"""CritiqueLLM v2 (Ke et al., ACL 2024, arXiv:2311.18702v2): AlignBench-style multi-dimension grading and comparison
in all four settings (§3.1), prompts of §3.2 and Appendix B, verdicts as dicts (Tables 11-14); the default family.

It introduced the two dict verdict formats, read by the general grammar (:mod:`hf_critic.parsing.grammar`) and also
used by CritiqueLLM-6B and the Eval-Instruct teacher prompts.
"""

from __future__ import annotations

from .family import CriticFamily, VerdictFormat, every_setting

__all__ = ["COMPARISON_DICT", "FAMILY", "SCORE_DICT"]

#: ``{'Overall Score': 7}`` / ``{'综合得分': 7}``, optionally with per-dimension keys (Tables 11-12).
SCORE_DICT = VerdictFormat(
    "score_dict", ("score",), closing="}", default_prefix="{{{key!r}:", example="{'Overall Score': 7}"
)
#: ``{'Overall Comparison Result': 'Assistant 1'}`` / ``{'综合比较结果': '助手1'}`` (Tables 13-14).
COMPARISON_DICT = VerdictFormat(
    "comparison_dict",
    ("label",),
    closing="'}",
    default_prefix="{{{key!r}: '",
    example="{'Overall Comparison Result': 'Assistant 1'}",
)
FAMILY = CriticFamily(
    name="critiquellm_v2",
    title="CritiqueLLM v2 (Ke et al., ACL 2024)",
    source="arXiv:2311.18702v2, §3.1-3.2 and Appendix B (Tables 7-8 prompts, Tables 11-14 verdicts)",
    templates=every_setting("en", "zh"),
    formats=(SCORE_DICT, COMPARISON_DICT),
)
