"""Glass-box feature maths, pure torch / numpy (Huang et al., seed ``001_…``, §2).

Per-token log-probabilities, the entropy −Σ_v p log p, the variances of §2.1, the attention entropy of §2.3, the
ensemble uncertainty of §2.2 and the Softmax-combo normalisation of Table 1. Logits at position ``i`` score token
``i + 1`` (:func:`shift_for_causal_lm`, no ``torch.roll`` wrap-around). Vocabulary-sized statistics are computed in
float32 or wider.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from ..core.errors import BadInputError


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
        raise BadInputError(
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
    """Sentence-level basic features from :func:`token_statistics` outputs (§2.1, Eqs. 1-3).

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
    """All basic features (:data:`~.features.BASIC_FEATURES`) of a batch of responses from aligned logits (§2.1).

    Args:
        logits: ``(B, T, V)``; row ``t`` is the distribution of ``targets[:, t]`` (use
            :func:`shift_for_causal_lm` on raw model outputs).
        targets: ``(B, T)`` token ids.
        mask: ``(B, T)`` bool, True on response tokens (False on prompt and padding).

    Returns:
        ``{name: (B,) float tensor}`` for every basic feature; see
        :data:`~hf_critic.glassbox.features.FEATURES` for the definitions, ranges and signs. Rows without response tokens give NaN (``sent_prob_sum``: 0).
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
        raise BadInputError("no attention entropies")
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
        var_feature: which Softmax-Var variant enters the sum (a name from :data:`~.features.BASIC_FEATURES`).
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
            raise BadInputError(f"combo normalisation must be 'minmax' or 'zscore', got {method!r}")
        if ent_sign not in (1, -1) or var_sign not in (1, -1):
            raise BadInputError("ent_sign and var_sign must be +1 or -1")
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
            raise BadInputError(f"bad combo normalisation {dict(data)}: {err}") from err


def _finite(values, name: str) -> np.ndarray:
    arr = np.array([np.nan if x is None else x for x in values], dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        raise BadInputError(f"cannot fit the combo normalisation: no finite {name} value")
    return arr


def _wide(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype in (torch.float32, torch.float64) else x.float()
