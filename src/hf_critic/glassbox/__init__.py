"""Glass-box self-evaluation: response quality from a causal LM's own softmax and attention distributions.

Implements Huang et al., "Self-Evaluation of Large Language Model based on Glass-box Features" (seed ``001_…``;
code: HuihuiChyan/SelfEval): every feature of a response comes from teacher-forced forward passes of the scoring
model over ``chat_template(instruction) + response``; only the decoding-based ensemble generates. The features,
their directions (the paper's and the one observed against GPT-4 grades), the three readings of Softmax-Var, the
combo normalisation and the token alignment are described in ``docs/glassbox.md``.

Modules: :mod:`.features` (:data:`FEATURES`, the one list of features, names and directions; no torch),
:mod:`.maths` (per-token statistics, entropies, variances), :mod:`.encoding` (records to conversations to token
ids), :mod:`.evaluator` (:class:`GlassBoxEvaluator`). The torch-backed names are imported on first use, so the
CLI can read :data:`FEATURES` without loading torch.
"""

from __future__ import annotations

import importlib

from . import features
from .features import *  # noqa: F403 - the names, light: no torch

# Public name -> the submodule defining it, imported on first access (PEP 562).
_LAZY = {
    **dict.fromkeys(
        (
            "ComboNormalization",
            "attention_entropy",
            "attention_entropy_summary",
            "ensemble_uncertainty",
            "features_from_token_statistics",
            "masked_mean",
            "masked_variance",
            "response_features",
            "shift_for_causal_lm",
            "token_entropy",
            "token_log_probs",
            "token_statistics",
            "token_vocab_log_prob_variance",
        ),
        "maths",
    ),
    **dict.fromkeys(
        (
            "AlignmentError",
            "Conversation",
            "EncodedTurn",
            "conversation_from_record",
            "encode_turn",
            "end_of_turn_token_id",
            "load_system_prompt_pool",
        ),
        "encoding",
    ),
    "GlassBoxEvaluator": "evaluator",
}

__all__ = [*features.__all__, *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
