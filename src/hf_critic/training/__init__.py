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
* :mod:`~hf_critic.training.card`: the Hub model card;
* :mod:`~hf_critic.training.sft`: the script's steps kept in the library, as alignment-handbook keeps
  ``get_tokenizer`` / ``get_model`` / ``get_dataset``: logging, checkpoint resume, tokenizer and chat template, the
  data mixture, the model's init arguments, save / evaluate / push, and :class:`~hf_critic.training.sft.RecipeError`.

v2 §4.3 settings (ChatGLM3-6B, ZeRO-2, AdamW, weight decay 0.1, lr 6e-5, 10% warm-up, batch 64, length 8192,
5 epochs) live in ``recipes/chatglm3-6b/sft/full.yaml``.
"""

from .callbacks import CriticSFTTrainer, CritiquePearsonCallback, logged_eval_metrics, validation_callback
from .card import model_card, sft_model_card
from .config import (
    ScriptArguments,
    ValidationArguments,
    deepspeed_config_from_accelerate,
    lora_on_top_layers,
    parser,
)
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
    tokenize_for_trl,
)
from .messages import MESSAGES, critique_messages, ensure_messages, to_prompt_completion
from .mixture import DatasetMixture, DatasetSource, MixtureResult, load_mixture, templates_in, weighted_subset
from .sft import (
    RecipeError,
    evaluate_selected,
    get_dataset,
    get_tokenizer,
    last_checkpoint,
    model_init_kwargs,
    peft_config,
    push_with_card,
    resolve_loss_mode,
    save_model_and_card,
    setup_logging,
)

__all__ = [
    "CriticSFTTrainer",
    "CritiquePearsonCallback",
    "DatasetMixture",
    "DatasetSource",
    "LOSS_MODES",
    "LossMask",
    "MESSAGES",
    "MixtureResult",
    "RecipeError",
    "ScriptArguments",
    "ValidationArguments",
    "compute_loss_mask",
    "critique_messages",
    "deepspeed_config_from_accelerate",
    "dry_run_report",
    "ensure_messages",
    "evaluate_selected",
    "filter_by_length",
    "format_loss_mask",
    "get_dataset",
    "get_tokenizer",
    "has_generation_markers",
    "last_checkpoint",
    "load_mixture",
    "lora_on_top_layers",
    "logged_eval_metrics",
    "loss_mode",
    "model_card",
    "model_init_kwargs",
    "peft_config",
    "parser",
    "push_with_card",
    "resolve_loss_mode",
    "save_model_and_card",
    "set_chat_template",
    "setup_logging",
    "sft_model_card",
    "templates_in",
    "to_prompt_completion",
    "tokenize_for_trl",
    "validation_callback",
    "weighted_subset",
]
