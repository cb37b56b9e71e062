"""Supervised fine-tuning of a critic (CritiqueLLM v2 §3.3 / §4.3, v1 §3.3 / §4.3): the library half of ``recipes/sft.py``.

The script keeps the alignment-handbook / open-r1 layout and calls these modules, one concern each:

* :mod:`~hf_critic.training.config`: the recipe's dataclasses (``ScriptArguments``, ``ValidationArguments``) read by
  ``trl.TrlParser``, and the accelerate / DeepSpeed config check;
* :mod:`~hf_critic.training.mixture`: weighted mixtures of Eval-Instruct configs (v2 §3.3: one model for all four
  settings; v1 §3.3: one setting per model);
* :mod:`~hf_critic.training.messages`: structured rows rendered into SFT conversations with the critic's own
  inference templates;
* :mod:`~hf_critic.training.masks`: chat templates and loss masks (the loss is on the critique only), ``--dry-run``;
* :mod:`~hf_critic.training.callbacks`: best checkpoint by validation Pearson (v1 §4.3);
* :mod:`~hf_critic.training.card`: the Hub model card.

v2 §4.3 settings (ChatGLM3-6B, ZeRO-2, AdamW, weight decay 0.1, lr 6e-5, 10% warm-up, batch 64, length 8192,
5 epochs) live in ``recipes/chatglm3-6b/sft/full.yaml``.
"""

from .callbacks import CritiquePearsonCallback, logged_eval_metrics, validation_callback
from .card import model_card
from .config import ScriptArguments, ValidationArguments, deepspeed_config_from_accelerate, parser
from .masks import (
    LOSS_MODES,
    LossMask,
    compute_loss_mask,
    dry_run_report,
    filter_by_length,
    format_loss_mask,
    has_generation_markers,
    loss_mode,
    set_chat_template,
)
from .messages import MESSAGES, critique_messages, ensure_messages, to_prompt_completion
from .mixture import DatasetMixture, DatasetSource, MixtureResult, load_mixture, templates_in, weighted_subset

__all__ = [
    "LOSS_MODES",
    "MESSAGES",
    "CritiquePearsonCallback",
    "DatasetMixture",
    "DatasetSource",
    "LossMask",
    "MixtureResult",
    "ScriptArguments",
    "ValidationArguments",
    "compute_loss_mask",
    "critique_messages",
    "deepspeed_config_from_accelerate",
    "dry_run_report",
    "ensure_messages",
    "filter_by_length",
    "format_loss_mask",
    "has_generation_markers",
    "load_mixture",
    "logged_eval_metrics",
    "loss_mode",
    "model_card",
    "parser",
    "set_chat_template",
    "templates_in",
    "to_prompt_completion",
    "validation_callback",
    "weighted_subset",
]
