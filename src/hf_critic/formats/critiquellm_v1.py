"""CritiqueLLM v1 (Ke et al., 2023, arXiv:2311.18702v1): pointwise grading only, referenced and reference-free,
Appendix C Table 7 prompts (English prompts asking for English or Chinese critiques); the verdict is MT-Bench's
``Rating: [[8]]`` (Table 9, :data:`hf_critic.formats.mtbench.RATING_BRACKETS`).
"""

from __future__ import annotations

from .family import CriticFamily

__all__ = ["FAMILY"]

FAMILY = CriticFamily(
    name="critiquellm_v1",
    title="CritiqueLLM v1 (Ke et al., 2023)",
    source="arXiv:2311.18702v1, Appendix C, Table 7 (prompts) and Table 9 (verdict)",
    templates={"pointwise_referenced": ("en", "zh"), "pointwise_reference_free": ("en", "zh")},
)
