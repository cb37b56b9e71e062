"""Glass-box self-evaluation: response quality from a causal LM's own softmax and attention distributions.

Implements Huang et al., "Self-Evaluation of Large Language Model based on Glass-box Features" (seed
``001_…``; code: HuihuiChyan/SelfEval). Every feature of a response ``y = y_1 … y_T`` to an instruction ``x``
comes from teacher-forced forward passes of the scoring model over ``chat_template(x) + y``; nothing is
generated except for the decoding-based ensemble, which by definition samples new responses.

Features (column ``glassbox_<name>``). Two directions are given: *paper*, the one §2 argues for (a
concentrated softmax = a confident model = a better response), and *observed*, the sign of the correlation
with GPT-4's 1-10 grades on the shared SelfEval answers (docs/glassbox.md; consistent in all four
benchmark x answering-model cells, else "?"). They disagree for SentProb and Softmax-Ent:

==========================  ==================  ===========  ==========================================  =====  ========
name                        paper               §            value, range                                paper  observed
==========================  ==================  ===========  ==========================================  =====  ========
``sent_prob``               SentProb            2.1 Eq. 1    mean_t log p(y_t), (-inf, 0] nats           +      −
``sent_prob_sum``           SentProb (log)      2.1 Eq. 1    sum_t log p(y_t) = log Π_t p(y_t)           +      −
``softmax_ent``             Softmax-Ent         2.1 Eq. 2    mean_t −Σ_v p_t(v) log p_t(v), [0, log V]   −      +
``softmax_var``             Softmax-Var         2.1 Eq. 3    Var_t p(y_t) (Eq. 3 as printed), [0, 1/4]   +      +
``softmax_var_logprob``     Softmax-Var (text)  2.1          Var_t log p(y_t), [0, inf)                  ?      +
``softmax_var_vocab``       Softmax-Var (code)  2.1 / code   mean_t Var_v log p_t(v), [0, inf)           +      +
``softmax_combo``           Softmax-combo       Table 1      normalised Softmax-Ent + Softmax-Var        +      +
``prm_ensemble_exp``        PrmEnsem-Exp        2.2 Eq. 4    Unt-Exp: mean SP over the A.1 prompts       +      ?
``prm_ensemble_var``        PrmEnsem-Var        2.2 Eq. 5    Unt-Var over the A.1 prompts, [0, inf)      −      ?
``dec_ensemble_exp``        DecEnsem-Exp        2.2 Eq. 4    Unt-Exp over N top-k sampled responses      +      ?
``dec_ensemble_var``        DecEnsem-Var        2.2 Eq. 5    Unt-Var over N sampled responses            −      ?
``attn_ent``                AttnEnt_hl          2.3 Eq. 6    per (layer, head) attention entropy [L][H]  ?      ?
``attn_ent_min``            AttnEnt-Min         2.3 Eq. 7    min over (layer, head), [0, log n]          ?      ?
``attn_ent_avg``            AttnEnt-Avg         2.3 Eq. 8    mean over (layer, head), [0, log n]         ?      ?
==========================  ==================  ===========  ==========================================  =====  ========

The paper's own released SentProb values correlate *negatively* with the grades (Table 1 prints the
magnitudes; reproduced to 4 digits with the sign flipped), and a true entropy correlates positively: GPT-4
rewards long, specific answers, whose tokens are less predictable than formulaic or refusing ones. Use
:func:`oriented` to turn any feature into a "higher = better" score (observed direction by default).

Which Softmax-Var? The paper's prose says "the variance of word-level log-probabilities", its Eq. 3
``E[P²] − E[P]²`` defines ``P = p(y_1) … p(y_T)``, the word-level *probabilities*; ``softmax_var`` follows the
equation (the issue asks for that reading) and ``softmax_var_logprob`` the prose. The released code that
produced Table 1 (``estimation_mode == "logprobs-variance"`` in ``gen_single_answer_selfeval.py``) computes a
third quantity: at each response step the variance *over the vocabulary* of the log-softmax, averaged over
steps, which grows as the next-token distribution sharpens (0 for a uniform one): ``softmax_var_vocab``. All
three are variances (``E[X²] − E[X]²``, population, no Bessel correction).

Softmax-combo is, literally, "the normalized summation of Softmax-Ent and Softmax-Var" ("adding them
together", §4.2): min-max normalised Softmax-Ent plus min-max normalised ``softmax_var_vocab`` (the variance
behind Table 1) by default; see :class:`ComboNormalization` for the other choices.

Token alignment (the bugs of the released code are not repeated): the prompt is the tokenizer's chat
template of the conversation up to the scored assistant turn with the generation prompt, tokenised with the
template's own special tokens and with control-token strings inside messages encoded as text; the response is
tokenised on its own with special-token strings kept as text, and (by default) followed by the template's
end-of-turn token, as a generated response would be. Logits at position ``i`` score token ``i + 1``: the slice
is taken without wrap-around (no ``torch.roll``). Batches are right-padded so real tokens never attend to
padding, and each response's features are computed from its own rows only: batch size and padding do not
change any value. ``output_attentions`` is requested (with eager attention, switched on for that call only)
only when an attention feature is asked for.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import inspect
import logging
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import yaml

logger = logging.getLogger(__name__)

__all__ = [
    "BASIC_FEATURES",
    "CALIBRATABLE_FEATURES",
    "COLUMN_PREFIX",
    "DEFAULT_FEATURES",
    "FEATURES",
    "AlignmentError",
    "ComboNormalization",
    "EncodedTurn",
    "FeatureInfo",
    "GlassBoxEvaluator",
    "attention_entropy",
    "attention_entropy_summary",
    "column_name",
    "conversation_from_record",
    "encode_turn",
    "end_of_turn_token_id",
    "ensemble_uncertainty",
    "load_system_prompt_pool",
    "masked_mean",
    "masked_variance",
    "oriented",
    "resolve_features",
    "response_features",
    "shift_for_causal_lm",
    "token_entropy",
    "features_from_token_statistics",
    "token_log_probs",
    "token_statistics",
    "token_vocab_log_prob_variance",
]

COLUMN_PREFIX = "glassbox_"
# Response positions whose vocabulary-sized statistics are computed at once (bounds memory: CHUNK x V floats).
_CHUNK = 512


@dataclass(frozen=True)
class FeatureInfo:
    """Description of one glass-box feature.

    Attributes:
        name: feature name, also the column suffix (``glassbox_<name>``).
        paper_name: the paper's name (Table 1).
        section: paper section or table defining it.
        higher_is_better: the direction the paper argues for (§2: confident = better): True / False, or None
            where it gives none.
        group: what computing it costs: ``basic`` (one forward pass), ``combo`` (basic + a normalisation),
            ``prompt_ensemble`` (one pass per system prompt), ``decoding_ensemble`` (N sampled generations
            plus a pass each), ``attention`` (the basic pass with attention weights).
        observed_sign: +1 / -1, the sign of the feature's correlation with GPT-4 grades on the SelfEval answers
            in every benchmark x answering-model cell measured (docs/glassbox.md); None when not measured or
            not consistent.
    """

    name: str
    paper_name: str
    section: str
    higher_is_better: bool | None
    group: str
    observed_sign: int | None = None


FEATURES: dict[str, FeatureInfo] = {
    f.name: f
    for f in (
        FeatureInfo("sent_prob", "SentProb", "§2.1 Eq. 1", True, "basic", -1),
        FeatureInfo("sent_prob_sum", "SentProb (sum of log-probs)", "§2.1 Eq. 1", True, "basic", -1),
        FeatureInfo("softmax_ent", "Softmax-Ent", "§2.1 Eq. 2", False, "basic", +1),
        FeatureInfo("softmax_var", "Softmax-Var (Eq. 3, probabilities)", "§2.1 Eq. 3", True, "basic", +1),
        FeatureInfo("softmax_var_logprob", "Softmax-Var (prose, log-probabilities)", "§2.1", None, "basic", +1),
        FeatureInfo("softmax_var_vocab", "Softmax-Var (released code, vocabulary)", "§2.1 / code", True, "basic", +1),
        FeatureInfo("softmax_combo", "Softmax-combo", "Table 1", True, "combo", +1),
        FeatureInfo("prm_ensemble_exp", "PrmEnsem-Exp (Unt-Exp)", "§2.2 Eq. 4", True, "prompt_ensemble"),
        FeatureInfo("prm_ensemble_var", "PrmEnsem-Var (Unt-Var)", "§2.2 Eq. 5", False, "prompt_ensemble"),
        FeatureInfo("dec_ensemble_exp", "DecEnsem-Exp (Unt-Exp)", "§2.2 Eq. 4", True, "decoding_ensemble"),
        FeatureInfo("dec_ensemble_var", "DecEnsem-Var (Unt-Var)", "§2.2 Eq. 5", False, "decoding_ensemble"),
        FeatureInfo("attn_ent", "AttnEnt per head and layer", "§2.3 Eq. 6", None, "attention"),
        FeatureInfo("attn_ent_min", "AttnEnt-Min", "§2.3 Eq. 7", None, "attention"),
        FeatureInfo("attn_ent_avg", "AttnEnt-Avg", "§2.3 Eq. 8", None, "attention"),
    )
}

#: Features from one teacher-forced pass over the logits.
BASIC_FEATURES = tuple(n for n, f in FEATURES.items() if f.group == "basic")
#: What :meth:`GlassBoxEvaluator.score` computes when no feature is named.
DEFAULT_FEATURES = ("sent_prob", "softmax_ent", "softmax_var")
#: Features that probability calibration (§3.2) can be applied to: ``<f>_calibrated = f(response) − f(reference)``.
CALIBRATABLE_FEATURES = BASIC_FEATURES

_ALIASES = {
    "sentprob": "sent_prob",
    "softmaxent": "softmax_ent",
    "softmaxentropy": "softmax_ent",
    "softmaxvar": "softmax_var",
    "softmaxvariance": "softmax_var",
    "softmaxcombo": "softmax_combo",
    "decensemexp": "dec_ensemble_exp",
    "decensemvar": "dec_ensemble_var",
    "prmensemexp": "prm_ensemble_exp",
    "prmensemvar": "prm_ensemble_var",
    "prmtensemexp": "prm_ensemble_exp",
    "prmtensemvar": "prm_ensemble_var",
    "attnent": "attn_ent",
    "attnentmin": "attn_ent_min",
    "attnentavg": "attn_ent_avg",
}
_GROUPS = {"basic": BASIC_FEATURES, "default": DEFAULT_FEATURES, "all": tuple(FEATURES)}


def resolve_features(features: str | Iterable[str] | None) -> tuple[str, ...]:
    """Canonical feature names from names, the paper's names, or groups.

    Args:
        features: None (:data:`DEFAULT_FEATURES`), a comma-separated string, or an iterable of names. Accepts
            the names of :data:`FEATURES`, the paper's spellings (``"Softmax-Ent"``, ``"DecEnsem-Var"``,
            ``"AttnEnt-Min"``; case, ``-`` and ``_`` ignored) and the groups ``basic``, ``default``, ``all``.

    Returns:
        Names in :data:`FEATURES`, first-mention order, without duplicates.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if features is None:
        return DEFAULT_FEATURES
    items = features.split(",") if isinstance(features, str) else [p for f in features for p in str(f).split(",")]
    out: list[str] = []
    for item in filter(None, (i.strip() for i in items)):
        if item in FEATURES:
            names: Sequence[str] = (item,)
        elif item.lower() in _GROUPS:
            names = _GROUPS[item.lower()]
        else:
            key = re.sub(r"[\s_\-]+", "", item.lower())
            known = {re.sub(r"_", "", n): n for n in FEATURES} | _ALIASES
            if key not in known:
                raise ValueError(f"unknown glass-box feature {item!r}; known: {', '.join(FEATURES)} (or basic, all)")
            names = (known[key],)
        out.extend(n for n in names if n not in out)
    if not out:
        raise ValueError("no glass-box feature given")
    return tuple(out)


def column_name(feature: str) -> str:
    """Output column of a feature: ``glassbox_<feature>`` (e.g. ``glassbox_softmax_ent``)."""
    return COLUMN_PREFIX + feature


def oriented(values: Sequence[float] | np.ndarray, feature: str, direction: str = "observed") -> np.ndarray:
    """Values of ``feature`` turned so that higher = better, ready for a correlation metric.

    Args:
        values: feature values, shape ``(n,)``; None becomes NaN.
        feature: a name from :data:`FEATURES` (a ``glassbox_`` prefix and ``_calibrated`` / ``_ref`` suffixes
            are accepted and keep the base feature's direction).
        direction: ``"observed"`` (default: :attr:`FeatureInfo.observed_sign`, falling back to the paper's
            direction where none was measured) or ``"paper"`` (:attr:`FeatureInfo.higher_is_better`).

    Returns:
        float64 array ``(n,)``: ``values`` or ``-values``; unchanged where no direction is known.

    Raises:
        ValueError: unknown feature or direction.
    """
    base = re.sub(r"_(calibrated|ref)$", "", feature.removeprefix(COLUMN_PREFIX))
    if base not in FEATURES:
        raise ValueError(f"unknown glass-box feature {feature!r}")
    if direction not in ("observed", "paper"):
        raise ValueError(f"direction must be 'observed' or 'paper', got {direction!r}")
    info = FEATURES[base]
    sign = -1 if info.higher_is_better is False else 1
    if direction == "observed" and info.observed_sign is not None:
        sign = info.observed_sign
    arr = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return sign * arr


# --------------------------------------------------------------------------------------------------
# Feature maths (pure torch; §2)
# --------------------------------------------------------------------------------------------------


def shift_for_causal_lm(
    logits: torch.Tensor, input_ids: torch.Tensor, response_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Align a causal LM's logits with the tokens they score, without wrap-around.

    The logits at position ``i`` are the distribution of token ``i + 1``. The last position scores nothing and
    the first token is never scored (no ``torch.roll``, which would score token 0 with the last position).

    Args:
        logits: ``(B, L, V)``.
        input_ids: ``(B, L)`` token ids.
        response_mask: ``(B, L)`` bool, True on the tokens to score (response tokens; padding False).

    Returns:
        ``(logits[:, :-1], input_ids[:, 1:], response_mask[:, 1:])``, shapes ``(B, L-1, V)``, ``(B, L-1)``,
        ``(B, L-1)``: row ``t`` of the logits scores target ``t``. A True in ``response_mask[:, 0]`` is
        dropped (nothing predicts the first token).

    Raises:
        ValueError: mismatched shapes.
    """
    if logits.shape[:2] != input_ids.shape or input_ids.shape != response_mask.shape:
        raise ValueError(
            f"shapes differ: logits {tuple(logits.shape)}, ids {tuple(input_ids.shape)}, mask {tuple(response_mask.shape)}"
        )
    return logits[:, :-1], input_ids[:, 1:], response_mask[:, 1:].bool()


def token_log_probs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(y_t): log-softmax of each row of ``logits`` at its target token (§2.1, SentProb's factors).

    Args:
        logits: ``(..., V)`` unnormalised scores (any float dtype; computed in float32 or wider).
        targets: ``(...)`` token ids in ``[0, V)``.

    Returns:
        ``(...)`` log-probabilities in ``(-inf, 0]`` nats.
    """
    logp = torch.log_softmax(_wide(logits), dim=-1)
    return logp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy −Σ_v p(v) log p(v) of each next-token distribution (§2.1, Eq. 2, inner sum).

    Args:
        logits: ``(..., V)``. ``-inf`` logits (masked vocabulary) contribute 0 (0 · log 0 = 0).

    Returns:
        ``(...)`` entropies in nats, in ``[0, log V]``; 0 for a one-hot distribution, ``log V`` for a uniform one.
    """
    logp = torch.log_softmax(_wide(logits), dim=-1)
    p = logp.exp()
    return -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1)


def token_vocab_log_prob_variance(logits: torch.Tensor) -> torch.Tensor:
    """Variance over the vocabulary of log p(v) at each step (the released SelfEval code's Softmax-Var).

    Population variance ``E_v[(log p(v))²] − (E_v[log p(v)])²`` with the uniform average over the ``V``
    vocabulary entries. 0 for a uniform distribution; grows as the distribution sharpens.

    Args:
        logits: ``(..., V)``, finite (a ``-inf`` logit makes the variance infinite).

    Returns:
        ``(...)`` variances in nats², ``>= 0``.
    """
    logp = torch.log_softmax(_wide(logits), dim=-1)
    return logp.var(dim=-1, correction=0)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the last axis of the entries where ``mask`` is True.

    Args:
        values: ``(B, T)``.
        mask: ``(B, T)`` bool.

    Returns:
        ``(B,)``; NaN for a row with no True entry.
    """
    mask = mask.bool()
    n = mask.sum(-1)
    total = torch.where(mask, values, torch.zeros_like(values)).sum(-1)
    return torch.where(n > 0, total / n.clamp(min=1), torch.full_like(total, math.nan))


def masked_variance(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Population variance ``E[X²] − (E[X])²`` over the masked entries of each row (§2.1 Eq. 3, §2.2 Eq. 5).

    Computed in the centred form ``E[(X − E[X])²]`` (the same number, without cancellation).

    Args:
        values: ``(B, T)``.
        mask: ``(B, T)`` bool.

    Returns:
        ``(B,)``, ``>= 0``; 0 for a single entry; NaN for a row with no True entry.
    """
    mask = mask.bool()
    mean = masked_mean(values, mask)
    dev = torch.where(mask, values - mean.unsqueeze(-1).nan_to_num(0.0), torch.zeros_like(values))
    return masked_mean(dev * dev, mask)


def token_statistics(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The three per-token quantities every basic feature is built from, in one pass over the vocabulary.

    Args:
        logits: ``(..., V)``; row ``t`` is the distribution of ``targets[..., t]``.
        targets: ``(...)`` token ids.

    Returns:
        ``(log p(y_t), entropy −Σ_v p log p, variance over v of log p)``, each ``(...)``: see
        :func:`token_log_probs`, :func:`token_entropy`, :func:`token_vocab_log_prob_variance`.
    """
    logp = torch.log_softmax(_wide(logits), dim=-1)
    tok_logp = logp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    p = logp.exp()
    ent = -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1)
    vocab_var = logp.var(dim=-1, correction=0) if logp.numel() else logp.sum(-1)
    return tok_logp, ent, vocab_var


def features_from_token_statistics(
    tok_logp: torch.Tensor, entropy: torch.Tensor, vocab_var: torch.Tensor, mask: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Sentence-level :data:`BASIC_FEATURES` from :func:`token_statistics` outputs (§2.1, Eqs. 1-3).

    Args:
        tok_logp, entropy, vocab_var: ``(B, T)`` each.
        mask: ``(B, T)`` bool, True on response tokens.

    Returns:
        ``{name: (B,)}``; see :func:`response_features`.
    """
    mask = mask.bool()
    tok_logp_m = torch.where(mask, tok_logp, torch.zeros_like(tok_logp))
    return {
        "sent_prob": masked_mean(tok_logp_m, mask),
        "sent_prob_sum": tok_logp_m.sum(-1),
        "softmax_ent": masked_mean(entropy, mask),
        "softmax_var": masked_variance(tok_logp_m.exp(), mask),
        "softmax_var_logprob": masked_variance(tok_logp_m, mask),
        "softmax_var_vocab": masked_mean(vocab_var, mask),
    }


def response_features(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """All :data:`BASIC_FEATURES` of a batch of responses from aligned logits (§2.1).

    Args:
        logits: ``(B, T, V)``; row ``t`` is the distribution of ``targets[:, t]`` (use
            :func:`shift_for_causal_lm` on raw model outputs).
        targets: ``(B, T)`` token ids.
        mask: ``(B, T)`` bool, True on response tokens (False on prompt and padding).

    Returns:
        ``{name: (B,) float tensor}`` for every name in :data:`BASIC_FEATURES`; see the module table for the
        definitions, ranges and signs. Rows without response tokens give NaN (``sent_prob_sum``: 0).
    """
    return features_from_token_statistics(*token_statistics(logits, targets), mask)


def attention_entropy(attentions: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Attention entropy of one layer, per head, averaged over the response tokens (§2.3, Eq. 6).

    For each response token ``j`` (a query) the entropy ``−Σ_k α_jk log α_jk`` of its attention distribution
    over the positions it may attend to (causal context; padded keys have weight 0 and add nothing), then the
    mean over the response tokens. This is the decoder-only reading of Eq. 6 (after Fomicheva et al., 2020,
    where target tokens attend to source tokens); the released code also took the response tokens' attention
    over the whole context.

    Args:
        attentions: ``(B, H, Q, K)`` attention weights (rows sum to 1).
        query_mask: ``(B, Q)`` bool, True on the response tokens.

    Returns:
        ``(B, H)`` entropies in nats, in ``[0, log K]``; NaN for a row with no response token.
    """
    a = _wide(attentions)
    ent = -torch.where(a > 0, a * torch.log(a.clamp_min(1e-45)), torch.zeros_like(a)).sum(-1)  # (B, H, Q)
    b, h, q = ent.shape
    mask = query_mask.bool().unsqueeze(1).expand(b, h, q).reshape(b * h, q)
    return masked_mean(ent.reshape(b * h, q), mask).reshape(b, h)


def attention_entropy_summary(per_layer_head: torch.Tensor | np.ndarray) -> tuple[float, float]:
    """AttnEnt-Min and AttnEnt-Avg (§2.3, Eqs. 7 and 8) of one response.

    Args:
        per_layer_head: ``(L, H)`` AttnEnt values of every layer and head.

    Returns:
        ``(min over (l, h), mean over (l, h))`` in nats.

    Raises:
        ValueError: an empty array.
    """
    arr = np.asarray(per_layer_head, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("no attention entropies")
    return float(arr.min()), float(arr.mean())


def ensemble_uncertainty(values: torch.Tensor | np.ndarray | Sequence[float]) -> tuple[float, float]:
    """Unt-Exp and Unt-Var over N forward passes (§2.2, Eqs. 4 and 5).

    Args:
        values: ``(N,)`` sentence-level scores ``SP`` of the N passes (by default SentProb, mean log-prob).

    Returns:
        ``(mean, population variance E[SP²] − E[SP]²)``; NaN, NaN when no value is finite.
    """
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.var())


@dataclass(frozen=True)
class ComboNormalization:
    """Normalisation of Softmax-combo, "the normalized summation of Softmax-Ent and Softmax-Var" (Table 1).

    ``combo = ent_sign · (ent − ent_center) / ent_scale + var_sign · (var − var_center) / var_scale``. The paper
    adds the two features as they are ("simply adding them together", §4.2), so both signs default to +1:
    that is also the observed direction of both (higher Softmax-Ent and higher variance go with higher GPT-4
    grades on the SelfEval answers; docs/glassbox.md). ``ent_sign=-1`` gives the §2.1 reading (low entropy =
    confident = better). With ``method="minmax"`` (the release's ``normalize``) each term is mapped to [0, 1] on
    the fitting data (a term with sign -1 as ``(max − x) / (max − min)``) and the combo lies in [0, 2]; with
    ``"zscore"`` each term is a standard score times its sign.

    Attributes:
        method: ``"minmax"`` or ``"zscore"``.
        var_feature: which Softmax-Var variant enters the sum (a name from :data:`BASIC_FEATURES`).
        ent_sign, var_sign: +1 or -1, the direction each term enters the sum with.
        ent_center, ent_scale, var_center, var_scale: the fitted constants (scales > 0).
    """

    method: str
    var_feature: str
    ent_sign: int
    var_sign: int
    ent_center: float
    ent_scale: float
    var_center: float
    var_scale: float

    @classmethod
    def fit(
        cls,
        ent: Sequence[float] | np.ndarray,
        var: Sequence[float] | np.ndarray,
        *,
        method: str = "minmax",
        var_feature: str = "softmax_var_vocab",
        ent_sign: int = 1,
        var_sign: int = 1,
    ) -> ComboNormalization:
        """Fit the constants on the data at hand (NaN / None values ignored).

        Args:
            ent: Softmax-Ent values ``(n,)``.
            var: values ``(n,)`` of ``var_feature``.
            method: ``"minmax"`` or ``"zscore"``.
            var_feature: the Softmax-Var variant ``var`` holds (default: the released code's, behind Table 1).
            ent_sign, var_sign: +1 (the paper's plain sum, default) or -1.

        Returns:
            The fitted normalisation. A constant (or single) value gets scale 1.

        Raises:
            ValueError: unknown method, a sign other than ±1, or no finite value.
        """
        if method not in ("minmax", "zscore"):
            raise ValueError(f"combo normalisation must be 'minmax' or 'zscore', got {method!r}")
        if ent_sign not in (1, -1) or var_sign not in (1, -1):
            raise ValueError("ent_sign and var_sign must be +1 or -1")
        e = _finite(ent, "Softmax-Ent")
        v = _finite(var, var_feature)
        if method == "minmax":
            ec, es = (float(e.min()) if ent_sign > 0 else float(e.max())), float(e.max() - e.min())
            vc, vs = (float(v.min()) if var_sign > 0 else float(v.max())), float(v.max() - v.min())
        else:
            ec, es, vc, vs = float(e.mean()), float(e.std()), float(v.mean()), float(v.std())
        return cls(method, var_feature, ent_sign, var_sign, ec, es if es > 0 else 1.0, vc, vs if vs > 0 else 1.0)

    def apply(self, ent: Sequence[float] | np.ndarray, var: Sequence[float] | np.ndarray) -> np.ndarray:
        """Softmax-combo of each response.

        Args:
            ent: Softmax-Ent ``(n,)``.
            var: ``var_feature`` values ``(n,)``.

        Returns:
            float64 ``(n,)``; NaN where either input is missing.
        """
        e = np.array([np.nan if x is None else x for x in ent], dtype=np.float64)
        v = np.array([np.nan if x is None else x for x in var], dtype=np.float64)
        return (
            self.ent_sign * (e - self.ent_center) / self.ent_scale
            + self.var_sign * (v - self.var_center) / self.var_scale
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (inverse: :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComboNormalization:
        """Rebuild from :meth:`to_dict` output.

        Raises:
            ValueError: missing or unknown keys.
        """
        try:
            return cls(**dict(data))
        except TypeError as err:
            raise ValueError(f"bad combo normalisation {dict(data)}: {err}") from err


def _finite(values, name: str) -> np.ndarray:
    arr = np.array([np.nan if x is None else x for x in values], dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        raise ValueError(f"cannot fit the combo normalisation: no finite {name} value")
    return arr


def _wide(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


def load_system_prompt_pool() -> list[str]:
    """The seven system prompts of the prompt-based ensemble (Appendix A.1, Figure 1), in the paper's order.

    Read from the package data file ``hf_critic/prompts/glassbox/system_prompts.yaml``.
    """
    text = (
        importlib.resources.files("hf_critic.prompts").joinpath("glassbox", "system_prompts.yaml").read_text("utf-8")
    )
    return list(yaml.safe_load(text)["prompts"])


# --------------------------------------------------------------------------------------------------
# Conversations and token alignment
# --------------------------------------------------------------------------------------------------


class AlignmentError(ValueError):
    """The prompt and response tokens cannot be laid out as the model would have generated them."""


@dataclass
class EncodedTurn:
    """Token ids of one (prompt, response) pair for teacher-forced scoring.

    Attributes:
        input_ids: prompt ids followed by response ids (and the end-of-turn token when included).
        response_start: index of the first scored token in ``input_ids`` (>= 1: something precedes it).
        response_end: one past the last scored token; tokens ``[response_start, response_end)`` are scored.
        truncated: True when the prompt (from the left) or the response (from the right) was cut to fit.
    """

    input_ids: list[int]
    response_start: int
    response_end: int
    truncated: bool = False

    @property
    def num_response_tokens(self) -> int:
        """T, the number of scored tokens."""
        return self.response_end - self.response_start


def _supports_kwarg(fn, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params


def _prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    if not getattr(tokenizer, "chat_template", None):
        raise AlignmentError("the tokenizer has no chat template; glass-box features score chat-templated prompts")
    kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": True}
    if _supports_kwarg(tokenizer.apply_chat_template, "sanitize_control_tokens"):
        kwargs["sanitize_control_tokens"] = True  # "<|im_end|>" typed by a user stays text
    if _supports_kwarg(tokenizer.apply_chat_template, "return_dict"):
        kwargs["return_dict"] = False
    ids = tokenizer.apply_chat_template(messages, **kwargs)
    if hasattr(ids, "keys"):
        ids = ids["input_ids"]
    if ids and isinstance(ids[0], list):
        ids = ids[0]
    return [int(i) for i in ids]


def _text_ids(tokenizer, text: str) -> list[int]:
    kwargs: dict[str, Any] = {"add_special_tokens": False}
    if getattr(tokenizer, "is_fast", False):
        kwargs["split_special_tokens"] = True  # special-token strings inside a response are text
    return [int(i) for i in tokenizer(text, **kwargs)["input_ids"]]


def end_of_turn_token_id(tokenizer) -> int | None:
    """The special token the chat template writes right after an assistant message (e.g. ``<|im_end|>``).

    Found by templating ``[user "x", assistant "y"]`` and taking the first token after the assistant text
    when it is a special token; else the tokenizer's ``eos_token_id``.

    Returns:
        A token id, or None when neither exists.
    """
    marker = "glassboxmarker"
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": marker}], tokenize=False
        )
        after = text[text.rindex(marker) + len(marker) :]
        ids = tokenizer(after, add_special_tokens=False)["input_ids"]
        if ids and ids[0] in set(tokenizer.all_special_ids):
            return int(ids[0])
    except Exception:  # noqa: BLE001 - templates that reject this probe fall back to eos
        pass
    return tokenizer.eos_token_id


def encode_turn(
    tokenizer,
    context: list[dict],
    response: str | Sequence[int],
    *,
    end_token_id: int | None = None,
    max_length: int | None = None,
) -> EncodedTurn:
    """Lay out ``chat_template(context) + response (+ end-of-turn)`` exactly as generation would produce it.

    Args:
        tokenizer: a tokenizer with a chat template.
        context: the conversation before the scored assistant message (``[{"role", "content"}, …]``), ending
            with a user message; templated with the generation prompt (``<|im_start|>assistant\\n``).
        response: the response text (tokenised alone, no special tokens added, special-token strings kept as
            text) or its token ids (e.g. a sampled continuation).
        end_token_id: appended and scored after the response (see :func:`end_of_turn_token_id`); None: not.
        max_length: total token budget; the prompt is cut from the left first, then the response from the right.

    Returns:
        An :class:`EncodedTurn`; ``input_ids[response_start:response_end]`` are the response ids (+ end token).

    Raises:
        AlignmentError: no chat template, or an empty prompt (nothing would predict the first response token).
    """
    prompt = _prompt_ids(tokenizer, context)
    resp = _text_ids(tokenizer, response) if isinstance(response, str) else [int(i) for i in response]
    if end_token_id is not None:
        resp = resp + [int(end_token_id)]
    if not prompt:
        raise AlignmentError("the templated prompt is empty")
    truncated = False
    if max_length is not None and len(prompt) + len(resp) > max_length:
        truncated = True
        keep_prompt = max(1, max_length - len(resp))
        prompt = prompt[-keep_prompt:]
        resp = resp[: max(0, max_length - len(prompt))]
    return EncodedTurn(prompt + resp, len(prompt), len(prompt) + len(resp), truncated)


@dataclass
class Conversation:
    """A record as chat messages.

    Attributes:
        messages: ``[{"role", "content"}, …]`` including the scored assistant messages.
        assistant_indices: positions in ``messages`` of the assistant messages, in order.
        references: one reference answer (or None) per assistant message.
    """

    messages: list[dict]
    assistant_indices: list[int]
    references: list[str | None] = field(default_factory=list)


def conversation_from_record(record: Mapping[str, Any], row: int = 0) -> Conversation:
    """Turn one record into a :class:`Conversation`.

    Accepted layouts (first match wins):

    * ``messages``: ``[{"role": "system"|"user"|"assistant", "content": str}, …]``; every assistant message is
      a response that can be scored.
    * ``turns`` (FastChat ``question.jsonl``: the user turns) with ``response`` (or ``responses``) a list of
      the same length (the assistant turns; FastChat ``choices[0]["turns"]``); a single string is accepted
      for a one-turn record.
    * ``question`` and ``response`` strings.

    Optional: ``system`` (a system message put first), ``reference`` (a string for the last assistant turn, or
    a list aligned with the assistant turns, entries may be None).

    Raises:
        hf_critic.io.RecordError: missing or malformed fields (the message names the row).
    """
    from hf_critic.io import RecordError

    def bad(msg: str) -> RecordError:
        return RecordError(f"row {row}: {msg}")

    messages: list[dict]
    if record.get("messages"):
        messages = []
        for m in record["messages"]:
            if not isinstance(m, Mapping) or m.get("role") not in ("system", "user", "assistant"):
                raise bad(f"messages must be {{'role': system|user|assistant, 'content': str}} dicts, got {m!r:.80}")
            if not isinstance(m.get("content"), str):
                raise bad(f"message content must be text, got {m.get('content')!r:.80}")
            messages.append({"role": m["role"], "content": m["content"]})
    elif record.get("turns"):
        turns = record["turns"]
        responses = record.get("responses", record.get("response"))
        if isinstance(turns, str):
            turns = [turns]
        if isinstance(responses, str):
            responses = [responses]
        if not isinstance(responses, Sequence) or len(responses) != len(turns):
            n = len(responses) if isinstance(responses, Sequence) else 0
            raise bad(f"'turns' has {len(turns)} user turns but 'response' has {n} assistant turns")
        messages = []
        for q, a in zip(turns, responses, strict=True):
            if not isinstance(q, str) or not isinstance(a, str):
                raise bad("turns and responses must be strings")
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    else:
        q, a = record.get("question"), record.get("response")
        if not isinstance(q, str) or not q.strip():
            raise bad("needs a non-empty 'question' (or 'turns' / 'messages'); map yours with --columns")
        if not isinstance(a, str):
            raise bad("needs a 'response' string")
        messages = [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    system = record.get("system")
    if isinstance(system, str) and system and not (messages and messages[0]["role"] == "system"):
        messages = [{"role": "system", "content": system}] + messages
    assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if not assistant:
        raise bad("no assistant message to score")
    for i in assistant:
        if i == 0 or messages[i - 1]["role"] == "assistant":
            raise bad(f"assistant message {i} does not follow a user message")
    ref = record.get("reference")
    if ref is None or isinstance(ref, str):
        refs: list[str | None] = [None] * (len(assistant) - 1) + [ref or None]
    elif isinstance(ref, Sequence):
        if len(ref) != len(assistant):
            raise bad(f"'reference' has {len(ref)} entries for {len(assistant)} assistant turns")
        refs = [r if isinstance(r, str) and r else None for r in ref]
    else:
        raise bad(f"'reference' must be a string or a list, got {type(ref).__name__}")
    return Conversation(messages, assistant, refs)


def _with_system(messages: list[dict], system: str) -> list[dict]:
    rest = messages[1:] if messages and messages[0]["role"] == "system" else messages
    return [{"role": "system", "content": system}] + rest


def _illustrated(conv: Conversation, k: int) -> list[dict] | None:
    """Context of assistant turn ``k`` with the reference conversation as a prior demonstration (Appendix A.2).

    The demonstration repeats the user turns up to ``k`` with the references as assistant answers; None when a
    reference is missing.
    """
    upto = conv.assistant_indices[k]
    refs = conv.references[: k + 1]
    if any(r is None for r in refs):
        return None
    system = [m for m in conv.messages[:1] if m["role"] == "system"]
    body = [m for m in conv.messages[: upto + 1] if m["role"] != "system"]
    demo, j = [], 0
    for m in body:
        if m["role"] == "assistant":
            demo.append({"role": "assistant", "content": refs[j]})
            j += 1
        else:
            demo.append(dict(m))
    return system + demo + body[:-1]


# --------------------------------------------------------------------------------------------------
# The evaluator
# --------------------------------------------------------------------------------------------------


@dataclass
class _Item:
    key: tuple
    enc: EncodedTurn


class GlassBoxEvaluator:
    """Score responses with glass-box features of a causal LM (Huang et al., §2-3).

    Args:
        model: a loaded causal LM (a ``transformers`` model, or any module whose ``forward(input_ids,
            attention_mask=…)`` returns an object with ``.logits``), a local folder / Hub id, or None for the
            embedded default critic (SmolLM2-135M-Instruct), loaded with :func:`hf_critic.models.load_model`.
        tokenizer: required when ``model`` is a module; must have a chat template.
        batch_size: sequences per forward pass (>= 1). Values do not depend on it.
        trust_remote_code: passed to :func:`~hf_critic.models.load_model`.
        include_end_token: score the template's end-of-turn token after the response, as part of ``y``
            (a generated response ends with it); False scores the response text only.
        max_length: token budget per sequence (default: the model's ``max_position_embeddings``).
        ensemble_size: N, the decoding-based ensemble's sampled passes (§4.2: "forward-pass number as 10").
        prompt_ensemble_size: passes of the prompt-based ensemble; None uses each pool prompt once (the released
            code, N = 7); an int draws that many prompts at random with replacement (§2.2, "randomly choose").
        top_k, temperature, max_new_tokens: the decoding-based ensemble's random top-k sampling (Fan et al.,
            2018; ``generate``'s defaults top_k=50 and FastChat's temperature 0.7 were used by the paper's code).
        ensemble_base: per-pass sentence score SP of the ensembles (§2.2: sentence-level probability, i.e.
            ``sent_prob``); any of :data:`BASIC_FEATURES` (the released files average entropy / variance).
        system_prompts: the prompt pool (default: :func:`load_system_prompt_pool`, Appendix A.1).
        seed: seeds the ensembles' draws; sampled passes of row r, turn k use ``seed + 1000 * r + k``.
        progress: show a progress bar.

    Raises:
        ValueError: bad arguments, or a module given without a tokenizer.
        hf_critic.models.ModelNotFoundError: ``model`` cannot be loaded.
    """

    def __init__(
        self,
        model=None,
        *,
        tokenizer=None,
        batch_size: int = 8,
        trust_remote_code: bool = False,
        include_end_token: bool = True,
        max_length: int | None = None,
        ensemble_size: int = 10,
        prompt_ensemble_size: int | None = None,
        top_k: int = 50,
        temperature: float = 0.7,
        max_new_tokens: int = 256,
        ensemble_base: str = "sent_prob",
        system_prompts: Sequence[str] | None = None,
        seed: int = 0,
        progress: bool = False,
    ):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if ensemble_size < 1 or (prompt_ensemble_size is not None and prompt_ensemble_size < 1):
            raise ValueError("ensemble sizes must be >= 1")
        if ensemble_base not in BASIC_FEATURES:
            raise ValueError(f"ensemble_base must be one of {BASIC_FEATURES}, got {ensemble_base!r}")
        if model is None or isinstance(model, str) or hasattr(model, "__fspath__"):
            from hf_critic.models import load_model

            model, tokenizer = load_model(model, trust_remote_code=trust_remote_code, dtype="float32")
        elif tokenizer is None:
            raise ValueError("pass the tokenizer together with a loaded model")
        self.model, self.tokenizer = model, tokenizer
        self.batch_size = batch_size
        self.include_end_token = include_end_token
        config = getattr(model, "config", None)
        self.max_length = max_length or getattr(config, "max_position_embeddings", None)
        self.ensemble_size, self.prompt_ensemble_size = ensemble_size, prompt_ensemble_size
        self.top_k, self.temperature, self.max_new_tokens = top_k, temperature, max_new_tokens
        self.ensemble_base = ensemble_base
        self.system_prompts = list(system_prompts) if system_prompts is not None else load_system_prompt_pool()
        if not self.system_prompts:
            raise ValueError("the system prompt pool is empty")
        self.seed, self.progress = seed, progress
        self.end_token_id = end_of_turn_token_id(tokenizer) if include_end_token else None
        self.combo_normalization_: ComboNormalization | None = None
        self._logits_to_keep = _supports_kwarg(model.forward, "logits_to_keep")
        self._use_cache_kwarg = _supports_kwarg(model.forward, "use_cache")

    # ---------------------------------------------------------------- public API

    def score(
        self,
        records,
        features: str | Iterable[str] | None = None,
        *,
        turn: str | int = "last",
        illustration: bool = False,
        calibrate: bool = False,
        combo_normalization: ComboNormalization | Mapping[str, Any] | None = None,
        combo_method: str = "minmax",
        combo_var_feature: str = "softmax_var_vocab",
        combo_ent_sign: int = 1,
    ):
        """Add glass-box feature columns to ``records``.

        Args:
            records: a ``datasets.Dataset`` or a list of dicts in a layout of :func:`conversation_from_record`.
            features: names for :func:`resolve_features` (default :data:`DEFAULT_FEATURES`).
            turn: which assistant turn(s) to score: ``"last"``, ``"all"`` (every assistant turn; each feature
                column then holds one value per turn, in order, like FastChat's ``evaluations``) or a 1-based
                turn number (rows with fewer assistant turns get None).
            illustration: in-context illustration (§3.1, Appendix A.2): when the scored turn (and the turns
                before it) have a reference, the instruction and its reference are prepended as a prior
                exchange; adds ``glassbox_illustrated`` (bool, False where no reference).
            calibrate: probability calibration (§3.2): for each requested feature in
                :data:`CALIBRATABLE_FEATURES` also the same feature of the reference answer under the same
                (non-illustrated) prompt, ``glassbox_<f>_ref``, and ``glassbox_<f>_calibrated = f(response) −
                f(reference)`` (None without a reference). For ``sent_prob`` this is SentProb − SentProb-Ref.
            combo_normalization: fixed normalisation for ``softmax_combo`` (a :class:`ComboNormalization` or
                its dict); None fits one on these records (all scored turns) and stores it in
                ``self.combo_normalization_``.
            combo_method, combo_var_feature, combo_ent_sign: used when fitting (see
                :meth:`ComboNormalization.fit`; the variance enters with its paper direction, +1).

        Returns:
            A ``datasets.Dataset``: the input columns plus ``glassbox_<feature>`` per feature (float; None where
            undefined, e.g. an empty response), ``glassbox_num_tokens`` (T, scored tokens) and
            ``glassbox_truncated``; ``glassbox_prm_ensemble_values`` / ``glassbox_dec_ensemble_values`` (the N
            per-pass SP values) with the ensembles; ``glassbox_attn_ent`` is an ``[L][H]`` list.

        Raises:
            ValueError: unknown feature or ``turn``; hf_critic.io.RecordError: malformed records;
            AlignmentError: the tokenizer has no chat template.
        """
        import datasets

        feats = resolve_features(features)
        if turn not in ("last", "all") and not (isinstance(turn, int) and turn >= 1):
            raise ValueError(f"turn must be 'last', 'all' or a 1-based turn number, got {turn!r}")
        if combo_var_feature not in BASIC_FEATURES:
            raise ValueError(f"combo_var_feature must be one of {BASIC_FEATURES}")
        ds = records if isinstance(records, datasets.Dataset) else datasets.Dataset.from_list(list(records))
        groups = {FEATURES[f].group for f in feats}
        want_attn = "attention" in groups

        # 1. conversations and the turns to score: slots[row] = list of assistant-turn numbers (0-based) or None
        convs: list[Conversation] = []
        slots: list[list[int | None]] = []
        for row, rec in enumerate(ds):
            conv = conversation_from_record(rec, row)
            convs.append(conv)
            n = len(conv.assistant_indices)
            if turn == "last":
                slots.append([n - 1])
            elif turn == "all":
                slots.append(list(range(n)))
            else:
                slots.append([turn - 1 if turn <= n else None])

        # 2. teacher-forced items
        main: list[_Item] = []
        refs: list[_Item] = []
        prm: list[_Item] = []
        illustrated: dict[tuple, bool] = {}
        rng = random.Random(self.seed)
        for row, conv in enumerate(convs):
            for k in slots[row]:
                if k is None:
                    continue
                idx = conv.assistant_indices[k]
                context = conv.messages[:idx]
                response = conv.messages[idx]["content"]
                ctx = context
                if illustration:
                    ill = _illustrated(conv, k)
                    illustrated[(row, k)] = ill is not None
                    ctx = ill if ill is not None else context
                main.append(_Item((row, k), self._encode(ctx, response)))
                if calibrate and conv.references[k] is not None:
                    refs.append(_Item((row, k), self._encode(context, conv.references[k])))
                if "prompt_ensemble" in groups:
                    pool = self.system_prompts
                    if self.prompt_ensemble_size is None:
                        chosen = list(range(len(pool)))
                    else:
                        chosen = [rng.randrange(len(pool)) for _ in range(self.prompt_ensemble_size)]
                    for n_pass, p in enumerate(chosen):
                        prm.append(_Item((row, k, n_pass), self._encode(_with_system(ctx, pool[p]), response)))

        results = self._run(main, attention=want_attn, desc="glass-box")
        ref_results = self._run(refs, attention=False, desc="references") if refs else {}
        prm_results = self._run(prm, attention=False, desc="prompt ensemble") if prm else {}
        prm_values: dict[tuple, list[float]] = {}
        for key in sorted(prm_results):  # (row, turn, pass): passes in order
            prm_values.setdefault(key[:2], []).append(prm_results[key][self.ensemble_base])
        dec_values: dict[tuple, list[float]] = {}
        if "decoding_ensemble" in groups:
            dec_values = self._decoding_ensemble(convs, slots, illustration)

        # 3. combo normalisation
        combo_norm = None
        if "softmax_combo" in feats:
            if combo_normalization is None:
                ent = [r["softmax_ent"] for r in results.values()]
                var = [r[combo_var_feature] for r in results.values()]
                sign = -1 if FEATURES[combo_var_feature].higher_is_better is False else 1
                combo_norm = ComboNormalization.fit(
                    ent,
                    var,
                    method=combo_method,
                    var_feature=combo_var_feature,
                    ent_sign=combo_ent_sign,
                    var_sign=sign,
                )
            elif isinstance(combo_normalization, ComboNormalization):
                combo_norm = combo_normalization
            else:
                combo_norm = ComboNormalization.from_dict(combo_normalization)
            self.combo_normalization_ = combo_norm
            logger.info("Softmax-combo normalisation: %s", combo_norm.to_dict())

        # 4. per-(row, turn) values
        def value(row: int, k: int | None, name: str):
            if k is None:
                return None
            r = results[(row, k)]
            if name in BASIC_FEATURES or name in ("num_tokens", "truncated"):
                return r[name]
            if name == "softmax_combo":
                return float(combo_norm.apply([r["softmax_ent"]], [r[combo_norm.var_feature]])[0])
            if name in ("attn_ent", "attn_ent_min", "attn_ent_avg"):
                return r[name]
            if name.startswith("prm_ensemble"):
                return _ensemble_value(name, prm_values.get((row, k), []))
            if name.startswith("dec_ensemble"):
                return _ensemble_value(name, dec_values.get((row, k), []))
            if name == "illustrated":
                return illustrated.get((row, k), False)
            if name.endswith("_ref") or name.endswith("_calibrated"):
                base = name.rsplit("_", 1)[0]
                rr = ref_results.get((row, k))
                if rr is None or rr[base] is None or r[base] is None:
                    return None
                return rr[base] if name.endswith("_ref") else r[base] - rr[base]
            raise KeyError(name)

        names = list(feats) + ["num_tokens", "truncated"]
        if "prompt_ensemble" in groups:
            names.append("prm_ensemble_values")
        if "decoding_ensemble" in groups:
            names.append("dec_ensemble_values")
        if illustration:
            names.append("illustrated")
        if calibrate:
            for f in feats:
                if f in CALIBRATABLE_FEATURES:
                    names += [f"{f}_ref", f"{f}_calibrated"]
        out = ds
        for name in names:
            col = column_name(name)
            cells = []
            for row in range(len(ds)):
                per_turn = [value(row, k, name) for k in slots[row]]
                cells.append(per_turn if turn == "all" else per_turn[0])
            if col in out.column_names:
                out = out.remove_columns(col)
            out = out.add_column(col, cells)
        return out

    # ---------------------------------------------------------------- internals

    def _encode(self, context: list[dict], response) -> EncodedTurn:
        return encode_turn(
            self.tokenizer, context, response, end_token_id=self.end_token_id, max_length=self.max_length
        )

    @property
    def _device(self) -> torch.device:
        try:
            return next(self.model.parameters()).device
        except (StopIteration, AttributeError):
            return torch.device("cpu")

    @contextlib.contextmanager
    def _eval_mode(self):
        """Dropout off while scoring (features must be deterministic); the caller's mode is restored."""
        training = bool(getattr(self.model, "training", False))
        if training:
            self.model.eval()
        try:
            yield
        finally:
            if training:
                self.model.train()

    @contextlib.contextmanager
    def _eager_attention(self):
        """Switch the model to eager attention (the only one returning weights) for the duration."""
        config = getattr(self.model, "config", None)
        before = getattr(config, "_attn_implementation", None)
        switch = before not in (None, "eager") and hasattr(self.model, "set_attn_implementation")
        if switch:
            self.model.set_attn_implementation("eager")
        try:
            yield
        finally:
            if switch:
                self.model.set_attn_implementation(before)

    @torch.inference_mode()
    def _run(self, items: list[_Item], *, attention: bool, desc: str) -> dict[tuple, dict[str, Any]]:
        """Forward ``items`` in right-padded batches; basic (and attention) features per item key."""
        out: dict[tuple, dict[str, Any]] = {}
        if not items:
            return out
        order = sorted(range(len(items)), key=lambda i: -len(items[i].enc.input_ids))
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        device = self._device
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(items), desc=desc, unit="resp")
        ctx = self._eager_attention() if attention else contextlib.nullcontext()
        with ctx, self._eval_mode():
            for batch in batches:
                encs = [items[i].enc for i in batch]
                length = max(len(e.input_ids) for e in encs)
                ids = torch.full((len(encs), length), pad_id, dtype=torch.long)
                mask = torch.zeros((len(encs), length), dtype=torch.long)
                for b, e in enumerate(encs):
                    ids[b, : len(e.input_ids)] = torch.tensor(e.input_ids)
                    mask[b, : len(e.input_ids)] = 1
                kwargs: dict[str, Any] = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
                first_scored = min(e.response_start for e in encs) - 1  # position whose logits score token 1
                keep = length - first_scored
                if self._logits_to_keep:
                    kwargs["logits_to_keep"] = keep
                if attention:
                    kwargs["output_attentions"] = True
                if self._use_cache_kwarg:
                    kwargs["use_cache"] = False
                output = self.model(**kwargs)
                logits = output.logits
                offset = length - logits.shape[1]  # absolute position of logits row 0
                for b, (i, e) in enumerate(zip(batch, encs, strict=True)):
                    s, t = e.response_start, e.response_end
                    lg = logits[b, s - 1 - offset : t - 1 - offset]  # (T, V): row j scores token s + j
                    tgt = ids[b, s:t].to(lg.device)
                    stats = [
                        token_statistics(lg[c : c + _CHUNK], tgt[c : c + _CHUNK]) for c in range(0, t - s, _CHUNK)
                    ]
                    stats = (
                        [torch.cat(parts)[None] for parts in zip(*stats, strict=True)]
                        if stats
                        else [lg[:0, 0][None]] * 3
                    )
                    m = torch.ones((1, t - s), dtype=torch.bool, device=lg.device)
                    feats = {k: _to_float(v[0]) for k, v in features_from_token_statistics(*stats, m).items()}
                    feats["num_tokens"] = t - s
                    feats["truncated"] = e.truncated
                    if attention:
                        per = []
                        for layer in output.attentions:
                            a = layer[b : b + 1, :, s:t, :]  # (1, H, T, L): response tokens as queries
                            per.append(attention_entropy(a, torch.ones((1, t - s), dtype=torch.bool))[0])
                        mat = torch.stack(per).double().cpu().numpy() if per else np.zeros((0, 0))
                        feats["attn_ent"] = [[_to_float(x) for x in r] for r in mat] if t > s else None
                        if t > s and mat.size:
                            feats["attn_ent_min"], feats["attn_ent_avg"] = attention_entropy_summary(mat)
                        else:
                            feats["attn_ent_min"] = feats["attn_ent_avg"] = None
                    out[items[i].key] = feats
                if bar is not None:
                    bar.update(len(batch))
        if bar is not None:
            bar.close()
        return out

    def _decoding_ensemble(self, convs, slots, illustration: bool) -> dict[tuple, list[float]]:
        """§2.2 decoding-based ensemble: N responses sampled with random top-k decoding, each scored.

        As in the released code (``ensemble-temper``), each pass samples a new response to the same prompt
        (``do_sample``, ``top_k``, ``temperature``) and SP is that response's ``ensemble_base`` feature under
        the unmodified (temperature 1) distribution. The spread reflects the model's uncertainty about the
        instruction, not about the given response.
        """
        if not hasattr(self.model, "generate"):
            raise ValueError("the decoding-based ensemble needs a model with .generate()")
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        stop = {self.end_token_id, self.tokenizer.eos_token_id} - {None}
        items: list[_Item] = []
        device = self._device
        for row, conv in enumerate(convs):
            for k in slots[row]:
                if k is None:
                    continue
                idx = conv.assistant_indices[k]
                ctx = conv.messages[:idx]
                if illustration:
                    ctx = _illustrated(conv, k) or ctx
                prompt = _prompt_ids(self.tokenizer, ctx)
                with _seeded(self.seed + 1000 * row + k, device), torch.inference_mode(), self._eval_mode():
                    gen = self.model.generate(
                        input_ids=torch.tensor([prompt], device=device),
                        attention_mask=torch.ones((1, len(prompt)), dtype=torch.long, device=device),
                        do_sample=True,
                        top_k=self.top_k,
                        top_p=1.0,
                        temperature=self.temperature,
                        max_new_tokens=self.max_new_tokens,
                        num_return_sequences=self.ensemble_size,
                        pad_token_id=pad_id,
                        eos_token_id=sorted(stop) or None,
                    )
                for n_pass, seq in enumerate(gen[:, len(prompt) :].tolist()):
                    cut = next((j for j, tok in enumerate(seq) if tok in stop), None)
                    sample = seq if cut is None else seq[:cut]
                    enc = encode_turn(
                        self.tokenizer,
                        ctx,
                        sample,
                        end_token_id=self.end_token_id if cut is not None else None,
                        max_length=self.max_length,
                    )
                    items.append(_Item((row, k, n_pass), enc))
        res = self._run(items, attention=False, desc="decoding ensemble")
        values: dict[tuple, list[float]] = {}
        for key in sorted(res):
            values.setdefault(key[:2], []).append(res[key][self.ensemble_base])
        return values


def _ensemble_value(name: str, vals: list[float | None]):
    clean = [v for v in vals if v is not None]
    if name.endswith("_values"):
        return clean
    exp, var = ensemble_uncertainty(clean)
    return _to_float(exp if name.endswith("_exp") else var)


@contextlib.contextmanager
def _seeded(seed: int, device: torch.device):
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def _to_float(x) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None
