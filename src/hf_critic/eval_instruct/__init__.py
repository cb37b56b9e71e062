"""Eval-Instruct: building critique training data with an OpenAI-compatible teacher (CritiqueLLM v2 §3.2, v1 §3.2).

- :mod:`~hf_critic.eval_instruct.stages`: the stages, each ``datasets.Dataset -> datasets.Dataset`` (query augmentation,
  difficulty, balancing, responses, pseudo references, referenced pointwise grading, multi-path prompting with
  f_P2P / f_R2RF on Path#1 and Path#2, cross validation, swap augmentation, the v1 dialogue, SFT ``messages``);
- :mod:`~hf_critic.eval_instruct.filters`: rule-based filtering with rejection reasons;
- :mod:`~hf_critic.eval_instruct.text`: ROUGE-L, Self-BLEU, language and overlap measures;
- :mod:`~hf_critic.eval_instruct.pipeline`: :func:`run_eval_instruct`, the whole recipe;
- :mod:`~hf_critic.eval_instruct.config`: the recipe file; :mod:`~hf_critic.eval_instruct.stage_report`: per-stage counts;
- :mod:`~hf_critic.eval_instruct.hub`: save, dataset card, push to the Hub.

The teacher client is :class:`hf_critic.backends.openai_client.OpenAIClient`.
"""

from .config import EvalInstructConfig, load_config
from .filters import REASONS, FilterConfig, check_critique
from .pipeline import EvalInstructResult, run_eval_instruct
from .stage_report import PipelineReport, StageReport
from .stages import (
    add_pseudo_references,
    attach_pointwise_critiques,
    augment_queries,
    balance_queries,
    collect_responses,
    cross_validate,
    dialogue_revision,
    grade_pointwise_referenced,
    make_pairs,
    pointwise_to_pairwise,
    referenced_to_reference_free,
    score_difficulty,
    swap_augment,
    to_sft_dataset,
)

__all__ = [
    "REASONS",
    "EvalInstructConfig",
    "EvalInstructResult",
    "FilterConfig",
    "PipelineReport",
    "StageReport",
    "add_pseudo_references",
    "attach_pointwise_critiques",
    "augment_queries",
    "balance_queries",
    "check_critique",
    "collect_responses",
    "cross_validate",
    "dialogue_revision",
    "grade_pointwise_referenced",
    "load_config",
    "make_pairs",
    "pointwise_to_pairwise",
    "referenced_to_reference_free",
    "run_eval_instruct",
    "score_difficulty",
    "swap_augment",
    "to_sft_dataset",
]
