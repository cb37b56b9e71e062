"""Training a reward critic against length: length-balanced sampling, soft labels and ODIN's
disentangled reward.

Human and GPT-4 judges favour longer answers, and a reward model trained on their preferences learns length first
(the shipped critic's reward follows length at r = 0.67-0.69). Three levers, each a ``recipes/reward.py`` option:

* :func:`length_balanced`: the training pairs resampled so that pairs whose preferred answer is the *shorter* one
  are as many as those where it is the longer one (on AlpacaEval's pairs the longer answer wins about 85% of the
  time, so the rarer pairs would otherwise be drowned out);
* soft labels: the Bradley-Terry loss against the judge's probability that the chosen answer is better
  (AlpacaEval's ``weighted_alpaca_eval_gpt4_turbo`` preferences) instead of a hard 1: ``-(p log sigma(d) +
  (1 - p) log sigma(-d))`` (:func:`preference_loss`);
* ODIN (Chen et al. 2024, "ODIN: Disentangled Reward Mitigates Hacking in RLHF", arXiv 2402.07319, §4): two
  heads, a quality reward ``r_Q`` and a length reward ``r_L``; the ranking loss is on ``r_Q + r_L``; a length loss
  ``|rho(r_Q, L)| - rho(r_L, L)`` (Pearson over the batch's responses, ``L`` their lengths) pushes length into
  ``r_L`` and out of ``r_Q``; an orthogonality loss ``|w_Q . w_L|`` keeps the two heads' weights apart
  (:func:`disentangled_loss`). Only ``r_Q`` judges: :func:`keep_quality_head` cuts the head to it before saving,
  so the saved critic is a plain one-label reward model.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import BadInputError

if TYPE_CHECKING:  # for the annotations only: the losses need numpy and torch alone
    import datasets

logger = logging.getLogger(__name__)

__all__ = [
    "disentangled_loss",
    "keep_quality_head",
    "length_balanced",
    "length_balanced_index",
    "pearson",
    "preference_loss",
    "score_heads",
]


def length_balanced_index(chosen_lengths, rejected_lengths, *, seed: int) -> np.ndarray:
    """Row indices of a length-balanced resample: as many "shorter wins" as "longer wins" pairs, the same number of
    rows in all.

    Args:
        chosen_lengths / rejected_lengths: the preferred and the other response's lengths, shape ``(n,)``.
        seed: numpy ``default_rng`` seed.

    Returns:
        ``n`` indices: pairs of equal lengths kept as they are, the rest half "longer wins" and half "shorter wins",
        each group cycled through in a seeded order (the smaller repeated, the larger cut), shuffled.

    Raises:
        ValueError: one of the two groups is empty (nothing to balance against).
    """
    chosen, rejected = np.asarray(chosen_lengths), np.asarray(rejected_lengths)
    longer, shorter = np.flatnonzero(chosen > rejected), np.flatnonzero(chosen < rejected)
    equal = np.flatnonzero(chosen == rejected)
    if not len(longer) or not len(shorter):
        raise BadInputError(
            f"length balance needs pairs of both kinds: {len(longer)} where the longer answer wins, "
            f"{len(shorter)} where the shorter one does"
        )
    rng = np.random.default_rng(seed)
    half = (len(chosen) - len(equal)) // 2
    sizes = ((longer, half), (shorter, len(chosen) - len(equal) - half))
    picks = [np.resize(rng.permutation(group), n) for group, n in sizes]
    logger.info(
        "length-balanced sampling: %d longer-wins and %d shorter-wins pairs -> %d and %d (%d of equal length)",
        len(longer),
        len(shorter),
        half,
        len(picks[1]),
        len(equal),
    )
    return rng.permutation(np.concatenate([*picks, equal]))


def length_balanced(pairs: datasets.Dataset, *, seed: int) -> datasets.Dataset:
    """:func:`length_balanced_index` applied to :func:`hf_critic.training.reward.preference_pairs` rows
    (``chosen_length``, ``rejected_length``).

    Raises:
        ValueError: as :func:`length_balanced_index`.
    """
    index = length_balanced_index(pairs["chosen_length"], pairs["rejected_length"], seed=seed)
    return pairs.select(index.tolist())


def preference_loss(margin, probability=None):
    """Bradley-Terry loss of ``margin = r_chosen - r_rejected`` (a tensor, shape ``(batch,)``), mean over the batch.

    Args:
        margin: reward differences.
        probability: the judge's probability that the chosen answer is better, shape ``(batch,)`` in [0, 1]
            (soft labels); None: 1 (hard labels, TRL's loss).
    """
    import torch.nn.functional as F

    if probability is None:
        return -F.logsigmoid(margin).mean()
    return -(probability * F.logsigmoid(margin) + (1 - probability) * F.logsigmoid(-margin)).mean()


def pearson(x, y, floor: float = 1.0):
    """Pearson correlation of rewards ``x`` with lengths ``y`` (1-D tensors), differentiable, with ``floor`` added to
    the rewards' variance: ``cov(x, y) / (std(y) * sqrt(var(x) + floor))``.

    Plain Pearson's gradient grows as ``1 / std(x)``: at the start of training, when the new head's rewards hardly
    vary, it swamps the ranking loss (and clipping then shrinks both). The floor bounds it; once the rewards spread
    over a few units it is Pearson's. 0 when ``y`` is constant.
    """
    x, y = x - x.mean(), y - y.mean()
    y_std = y.pow(2).mean().sqrt()
    if y_std == 0:
        return (x * 0).sum()
    return (x * y).mean() / (y_std * (x.pow(2).mean() + floor).sqrt())


def disentangled_loss(rewards, lengths, head_weight, *, correlation_weight: float, orthogonality_weight: float):
    """ODIN's extra losses (arXiv 2402.07319 §4, eq. 5-6) on one batch.

    Args:
        rewards: the two heads' outputs for every response of the batch, shape ``(n, 2)``: column 0 the quality
            reward ``r_Q``, column 1 the length reward ``r_L``.
        lengths: the responses' lengths, shape ``(n,)`` (characters).
        head_weight: the score head's weight, shape ``(2, hidden)``.
        correlation_weight: ``lambda_L`` of ``|rho(r_Q, L)| - rho(r_L, L)``.
        orthogonality_weight: ``lambda_O`` of ``|w_Q . w_L|``.

    Returns:
        ``(loss, {"quality_length_r": ..., "length_length_r": ...})`` (a scalar tensor, floats for the log).
    """
    lengths = lengths.to(rewards.dtype)
    quality_r, length_r = pearson(rewards[:, 0], lengths), pearson(rewards[:, 1], lengths)
    orthogonal = (head_weight[0] * head_weight[1]).sum().abs()
    loss = correlation_weight * (quality_r.abs() - length_r) + orthogonality_weight * orthogonal
    return loss, {"quality_length_r": float(quality_r.detach()), "length_length_r": float(length_r.detach())}


def score_heads(model) -> list:
    """The score head's linear layers of ``model`` (PEFT's trained copy and the original alike)."""
    import torch

    return [
        module
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and "score" in name.split(".")
    ]


def keep_quality_head(model) -> int:
    """Cut every two-output score head of ``model`` to its first (quality) row and set ``num_labels`` to 1, so the
    saved critic is a one-label reward model judging with ``r_Q`` only.

    Returns:
        The number of heads cut (0 when the model has one label already).
    """
    import torch

    cut = 0
    for head in score_heads(model):
        if head.out_features == 2:
            head.weight = torch.nn.Parameter(head.weight.data[:1].clone(), requires_grad=head.weight.requires_grad)
            if head.bias is not None:
                head.bias = torch.nn.Parameter(head.bias.data[:1].clone(), requires_grad=head.bias.requires_grad)
            head.out_features = 1
            cut += 1
    config = getattr(model, "config", None)
    if cut and config is not None:
        config.num_labels = 1
    return cut
