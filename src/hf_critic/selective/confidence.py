"""A confidence in [0, 1] on every verdict, per critic kind (``critique_confidence``).

Selective judging (Jung, Brahman, Choi, "Trust or Escalate", ICLR 2025, §3) keeps a verdict only when the critic's
confidence in it clears a threshold chosen on human-labelled data (:mod:`hf_critic.selective.calibration`). What the
confidence is depends on where the verdict comes from:

* **probability** read-out (``--verdict probability``): the decided label's probability in the verdict distribution;
  under ``--swap``, in the distribution of both orders averaged (the one the label was decided from). Pointwise: the
  probability of the most likely score.
* **votes** (text verdicts): the share of the "simulated annotators" that agree with the decided verdict, as in Trust
  or Escalate §3.2: every self-consistency sample in every judged order (the swapped order's labels mapped back) is
  one vote; an unparsed vote counts against. One greedy critique in one order is a single vote: confidence 1.
* **reward margin** (reward critics, pairwise): ``sigmoid(slope * |reward_1 - reward_2| + intercept)``; slope 1 and
  intercept 0 (the Bradley-Terry probability of the preferred response) until a calibration fits the logistic
  (:func:`fit_margin_logistic`). Pointwise rewards carry no confidence.
* **recorded** verdicts (a published or earlier run's verdict files, read not computed): the agreement of the two
  orders, 1.0 when both orders give the decided label and 0.5 when they differ.
* **constant**: a published judge's verdicts in one order only: no evidence of confidence, so every verdict gets
  1.0 and a threshold keeps the critic whole or not at all (as an earlier run's critiques file of single greedy
  verdicts does with its votes).

A verdict that is missing (unparsed, skipped, low mass) has no confidence (None): it is never kept, always escalated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES
from .logistic import fit_logistic

__all__ = [
    "CONFIDENCE_KINDS",
    "add_confidence_kind",
    "confidence_kinds",
    "confidence_of",
    "fit_margin_logistic",
    "margin_confidence",
    "probability_confidence",
    "sample_labels",
    "vote_confidence",
]

#: The confidence kinds (:func:`confidence_of`), as written in calibration files.
CONFIDENCE_KINDS = (
    "probability",
    "votes",
    "reward margin",
    "recorded",
    "constant",
    "length",  # longer-wins: the relative length difference (hf_critic.critics.baselines.LongerWins)
    "label prior",  # label-prior: the prior label's share (hf_critic.critics.baselines.LabelPrior)
    "vote aggregate",  # juries (hf_critic.critics.jury.Jury): their aggregated probability
    "mean aggregate",
    "fitted aggregate",
)
#: The confidence kinds of critic kinds registered from outside the package (:func:`add_confidence_kind`).
_ADDED_KINDS: list[str] = []


def add_confidence_kind(name: str) -> None:
    """Accept ``name`` as a confidence kind in calibration files: the confidence of a critic kind registered from
    outside the package (:func:`hf_critic.critics.registry.register` adds its ``confidence_kinds``).

    Raises:
        ValueError: an empty name.
    """
    if not isinstance(name, str) or not name.strip():
        raise BadInputError(f"a confidence kind needs a non-empty name, got {name!r}")
    if name not in CONFIDENCE_KINDS and name not in _ADDED_KINDS:
        _ADDED_KINDS.append(name)


def confidence_kinds() -> tuple[str, ...]:
    """Every confidence kind a calibration file may name: :data:`CONFIDENCE_KINDS`, then the added ones."""
    return (*CONFIDENCE_KINDS, *_ADDED_KINDS)


def probability_confidence(distribution: Mapping[str, float] | str | None, decided: Any) -> float | None:
    """The decided verdict's probability in a read-out distribution.

    Args:
        distribution: ``{verdict: probability}`` (or its JSON), renormalised over the allowed verdicts; pairwise keys
            are :data:`~hf_critic.core.labels.LABEL_NAMES`' values, pointwise keys the score spellings.
        decided: the decided label code (0 / 1 / 2) for pairwise comparison; None for pointwise grading, where the
            most likely score's probability is taken (the expected score has no probability of its own).

    Returns:
        A probability in [0, 1], or None without a distribution.
    """
    distribution = schema.read_distribution(distribution)
    if not distribution:
        return None
    if decided is None:
        return float(max(distribution.values()))
    return float(distribution.get(LABEL_NAMES[decided], 0.0))


def vote_confidence(votes: Sequence[Any], decided: Any, tolerance: float = 0.0) -> float | None:
    """The share of votes equal to the decided verdict (Trust or Escalate §3.2, simulated annotators).

    Args:
        votes: one verdict per sample and judged order (labels mapped back to the original order, scores as parsed);
            None for an unparsed vote, which counts against the decided verdict.
        decided: the decided verdict (label code or score); None when the row has none.
        tolerance: a vote within this distance of the decided verdict agrees (0 for labels; pointwise grading uses
            0.5: a sample score that rounds to the self-consistency mean).

    Returns:
        A share in [0, 1] (1.0 for a single vote that is the verdict), or None when there is no decided verdict or no
        vote.
    """
    if decided is None or not votes:
        return None
    return sum(v is not None and abs(v - decided) <= tolerance for v in votes) / len(votes)


def sample_labels(samples: Sequence | None) -> list:
    """The pairwise labels of one input's parsed self-consistency samples (``ParsedCritique``; None for an unparsed
    one, a vote against): the votes of :func:`vote_confidence`. ``[]`` for no samples (a skipped input)."""
    return [p.label for p in samples] if samples else []


def margin_confidence(margin: float | None, slope: float = 1.0, intercept: float = 0.0) -> float | None:
    """``sigmoid(slope * |margin| + intercept)``: a reward critic's confidence in its pairwise verdict.

    Args:
        margin: ``reward_1 - reward_2`` (reward units), or None when either reward is missing.
        slope, intercept: the logistic (defaults: the Bradley-Terry probability of the preferred response); fitted on
            calibration data by :func:`fit_margin_logistic`.

    Returns:
        A probability in (0, 1), or None without a margin.

    Raises:
        ValueError: a non-finite margin, slope or intercept.
    """
    if margin is None:
        return None
    if not all(math.isfinite(x) for x in (margin, slope, intercept)):
        raise BadInputError(
            f"reward margin confidence needs finite numbers, got margin={margin}, slope={slope}, intercept={intercept}"
        )
    z = slope * abs(margin) + intercept
    return float(0.5 * (1.0 + math.tanh(z / 2.0)))  # sigmoid without overflow


#: The smallest slope of a margin confidence: a larger margin is never less confident.
MIN_SLOPE = 1e-6
#: The ridge penalty that keeps a margin logistic finite where the margins separate right from wrong verdicts.
SEPARATED_PENALTY = 1e-6


def fit_margin_logistic(margins: Sequence[float], correct: Sequence[bool]) -> tuple[float, float]:
    """Fit ``P(verdict agrees with humans) = sigmoid(slope * |margin| + intercept)`` by maximum likelihood
    (:func:`~hf_critic.selective.logistic.fit_logistic`), the slope at least :data:`MIN_SLOPE`.

    Args:
        margins: reward margins of the calibration rows, shape ``(n,)``.
        correct: whether each row's verdict agrees with the human label, shape ``(n,)``.

    Returns:
        ``(slope, intercept)``; with a single class among ``correct`` the intercept alone is fitted (slope 0 would
        lose the ranking, so the slope stays 1). Where the margins separate right from wrong verdicts (the maximum
        lies at infinity) a ridge penalty of :data:`SEPARATED_PENALTY` keeps the slope finite; where the best slope is
        below :data:`MIN_SLOPE`, the slope is held there and the intercept fitted.

    Raises:
        ValueError: different lengths, no rows, or non-finite margins.
    """
    x = np.abs(np.asarray(margins, dtype=float))
    y = np.asarray(correct, dtype=float)
    if x.shape != y.shape or not len(x) or not np.isfinite(x).all():
        raise BadInputError("fit_margin_logistic needs equal lengths, at least one row and finite margins")
    if y.min() == y.max():
        rate = np.clip(y.mean(), 1e-3, 1 - 1e-3)
        return 1.0, float(math.log(rate / (1 - rate)))
    fit = fit_logistic(x[:, None], y)
    if not fit["converged"]:
        fit = fit_logistic(x[:, None], y, penalty=SEPARATED_PENALTY)
    intercept, slope = (float(v) for v in fit["coef"])
    if slope < MIN_SLOPE:  # the bound is active: the intercept alone, the slope held at it
        slope = MIN_SLOPE
        intercept = float(fit_logistic(np.empty((len(x), 0)), y, offset=MIN_SLOPE * x)["coef"][0])
    return slope, intercept


def _label_votes(columns: Mapping[str, Sequence], row: int) -> list:
    votes = [columns[schema.CRITIQUE_LABEL][row]]
    if schema.CRITIQUE_LABEL_SWAPPED in columns:
        votes.append(columns[schema.CRITIQUE_LABEL_SWAPPED][row])
    return votes


def confidence_of(
    columns: Mapping[str, Sequence],
    *,
    votes: Sequence[Sequence] | None = None,
    recorded: bool = False,
    logistic: tuple[float, float] | None = None,
) -> tuple[list[float | None], str | None]:
    """The confidence of every verdict of one critic run, from its critique columns.

    Args:
        columns: ``{column: values}`` of a critique run (``critique_label`` or ``critique_score`` and the columns of
            its verdict source: distributions, rewards, the swapped label).
        votes: per row, the text verdicts' votes (self-consistency samples of every judged order, mapped back); None
            to use the decided label and, under swap, the swapped order's label.
        recorded: the verdicts are a published judge's labels read from files (both orders: their agreement is the
            confidence; one order: 1.0 for every verdict, kind ``constant``); a critique file of an earlier hf-critic
            run is not "recorded" here: its own columns say.
        logistic: ``(slope, intercept)`` of a reward critic's fitted margin logistic (None: Bradley-Terry).

    Returns:
        ``(confidences, kind)``: one value in [0, 1] or None per row, and the kind (one of :data:`CONFIDENCE_KINDS`),
        None when the verdicts carry no confidence (pointwise rewards, recorded pointwise scores).
    """
    pairwise = schema.CRITIQUE_LABEL in columns
    decided = list(columns[schema.CRITIQUE_LABEL if pairwise else schema.CRITIQUE_SCORE])
    n = len(decided)
    if recorded:  # published verdicts: the two orders are the only evidence
        if not pairwise:
            return [None] * n, None
        if schema.CRITIQUE_LABEL_SWAPPED not in columns:  # one order: the critic is kept whole or not at all
            return [None if d is None else 1.0 for d in decided], "constant"
        return [vote_confidence(_label_votes(columns, i), decided[i]) for i in range(n)], "recorded"
    if schema.CRITIQUE_REWARD in columns:  # a reward critic: order-free, one reward per response
        if not pairwise:
            return [None] * n, None
        slope, intercept = logistic or (1.0, 0.0)
        r1, r2 = columns[schema.CRITIQUE_REWARD], columns[schema.CRITIQUE_REWARD_2]
        return [
            None if d is None or a is None or b is None else margin_confidence(a - b, slope, intercept)
            for d, a, b in zip(decided, r1, r2, strict=True)
        ], "reward margin"
    for name in (schema.CRITIQUE_DISTRIBUTION_COMBINED, schema.CRITIQUE_DISTRIBUTION):
        if name in columns:
            status = columns.get(schema.CRITIQUE_STATUS, [schema.ParseStatus.OK.value] * n)
            return [
                None
                if d is None or s != schema.ParseStatus.OK.value
                else probability_confidence(dist, d if pairwise else None)
                for d, dist, s in zip(decided, columns[name], status, strict=True)
            ], "probability"
    if votes is None:
        votes = [_label_votes(columns, i) if pairwise else [decided[i]] for i in range(n)]
    tolerance = 0.0 if pairwise else 0.5
    return [vote_confidence(v, d, tolerance) for v, d in zip(votes, decided, strict=True)], "votes"
