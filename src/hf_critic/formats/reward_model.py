"""Reward models as critics (:mod:`hf_critic.critics.reward`): a sequence-classification checkpoint with one label
scores a (question, response) in its own chat template; no prompt, no explanation, no verdict text, order-free.

A reward model is recognised by its configuration (:func:`hf_critic.critics.reward.is_reward_model`), not by its name,
so the family declares no model names; it judges the two reference-free settings (CritiqueLLM v2 §3.1), grading on
the scale of the chosen family's reference-free pointwise template and comparing by the Rao-Kupper model.
"""

from __future__ import annotations

from .family import REWARD, CriticFamily

__all__ = ["FAMILY"]

FAMILY = CriticFamily(
    name="reward_model",
    title="Sequence-classification reward models (Ouyang et al., 2022, §3.5; TRL's RewardTrainer)",
    source="hf_critic.critics.reward: one scalar per (question, response), Bradley-Terry trained; Rao & Kupper (1967) ties",
    kind=REWARD,
    settings=("pointwise_reference_free", "pairwise_reference_free"),
)
