"""The released CritiqueLLM-6B (thu-coai/CritiqueLLM-6B, CritiqueLLM v2, Ke et al., ACL 2024): the Chinese input
format the checkpoint was fine-tuned on, all four settings, with CritiqueLLM v2's dict verdicts
(:data:`hf_critic.formats.critiquellm_v2.SCORE_DICT`, :data:`~hf_critic.formats.critiquellm_v2.COMPARISON_DICT`).
``--template auto`` picks it for a model named ``CritiqueLLM`` (in Chinese only).
"""

from __future__ import annotations

from .family import CriticFamily, every_setting

__all__ = ["FAMILY"]
FAMILY = CriticFamily(
    name="critiquellm_6b",
    title="CritiqueLLM-6B (Ke et al., ACL 2024; thu-coai/CritiqueLLM-6B)",
    source="the input format of the released thu-coai/CritiqueLLM-6B checkpoint (CritiqueLLM v2, Appendix B)",
    templates=every_setting("zh"),
    model_names=("critiquellm",),
)
