"""MT-Bench (Zheng et al., NeurIPS 2023): FastChat's LLM-as-a-judge prompts (``single-v1``, ``single-ref-v1``,
``pair-v2``, ``pair-ref-v2``), English only, all four settings.

It introduced the bracket verdicts ``Rating: [[8]]`` and ``[[A]]`` / ``[[B]]`` / ``[[C]]``, read by the general grammar
(:mod:`hf_critic.parsing.grammar`) and also used by CritiqueLLM v1.
"""

from __future__ import annotations

from .family import CriticFamily, VerdictFormat, every_setting

__all__ = ["FAMILY", "PAIR_BRACKETS", "RATING_BRACKETS"]

#: ``Rating: [[8]]`` (MT-Bench ``single-v1``; CritiqueLLM v1 Table 9).
RATING_BRACKETS = VerdictFormat(
    "rating_brackets", ("score",), closing="]]", default_prefix="[[", opening="[", example="Rating: [[8]]"
)
#: ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (C = tie; MT-Bench ``pair-v2``).
PAIR_BRACKETS = VerdictFormat(
    "pair_brackets", ("label",), closing="]]", default_prefix="[[", opening="[", example="[[A]]"
)
FAMILY = CriticFamily(
    name="mtbench",
    title="MT-Bench judge prompts (Zheng et al., NeurIPS 2023)",
    source="lm-sys/FastChat fastchat/llm_judge/data/judge_prompts.jsonl (single-v1, single-ref-v1, pair-v2, pair-ref-v2)",
    templates=every_setting("en"),
    formats=(RATING_BRACKETS, PAIR_BRACKETS),
)
