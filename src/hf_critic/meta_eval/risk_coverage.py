"""Risk-coverage in the reports: each critic's AURC with a bootstrap interval over the questions, its agreement at
fixed coverages and its coverage at fixed agreements, beside the two critics that need no model, "longer wins" and
the label prior, on the same rows.

The maths is :mod:`hf_critic.selective.risk_coverage` (Geifman and El-Yaniv, 2017); the interval is the percentile
bootstrap of :mod:`hf_critic.meta_eval.bootstrap` with the questions as units (a question's pairs stay together).
``hf-critic meta-eval`` and ``hf-critic calibrate --report-dir`` both call :func:`risk_coverage_report`, then write
its blocks and curves with :mod:`hf_critic.reports.risk_coverage` (Markdown table, ``risk_coverage.png``).

The baselines are critics with a confidence:

* ``longer-wins``: the longer response (in words) wins, with confidence ``0.5 + 0.5 * |l1 - l2| / max(l1, l2)``
  (:func:`~hf_critic.meta_eval.length.longer_wins`); equal lengths are a tie verdict at confidence 0.5;
* ``label-prior``: always the most frequent human label of the rows it is given (in ``calibrate``: the calibration
  rows; :func:`~hf_critic.meta_eval.length.label_prior`), at a constant confidence (that label's share): its curve is flat at its error rate, its AURC that rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, normalize_labels
from ..selective.risk_coverage import (
    AGREEMENT_LEVELS,
    COVERAGE_LEVELS,
    agreement_at_coverage,
    aurc,
    coverage_at_agreement,
    risk_coverage_curve,
)
from .bootstrap import bootstrap_intervals
from .length import label_prior, longer_wins

__all__ = ["LABEL_PRIOR", "LONGER_WINS", "baseline_critics", "risk_coverage_block", "risk_coverage_report"]

#: The names of the baselines in reports.
LONGER_WINS, LABEL_PRIOR = "longer-wins", "label-prior"


def risk_coverage_block(
    confidence: Sequence[float | None],
    credit: Sequence[float | bool | None],
    questions: Sequence | None = None,
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """One critic's risk-coverage figures.

    Args:
        confidence: the confidence of each row's verdict, shape ``(n,)``; None where there is no verdict.
        credit: 1 / True where the verdict agrees with the human label, 0 where not (None counts 0), shape ``(n,)``.
        questions: the question of each row (ids or texts), the bootstrap's units; None: every row its own question.
        resamples: bootstrap resamples (0: no interval, else at least 100).
        seed: the bootstrap's seed.

    Returns:
        ``{"aurc", "interval": [low, high] (95% percentile bootstrap over questions) or a note or None,
        "agreement_at_coverage": {0.1, 0.25, 0.5, 1.0}, "coverage_at_agreement": {0.7, 0.75, 0.8, 0.85}, "n",
        "no_confidence": rows without a confidence (ranked last, counted as they are credited)}``.

    Raises:
        ValueError: lengths differ, or see :func:`~hf_critic.selective.risk_coverage.aurc` and
            :func:`~hf_critic.meta_eval.bootstrap.bootstrap_intervals`.
    """
    n = len(confidence)
    units = (
        np.arange(n)
        if questions is None
        else np.unique(np.asarray([str(q) for q in questions]), return_inverse=True)[1]
    )
    if len(units) != n:
        raise BadInputError(f"questions ({len(units)}) and confidences ({n}) differ in length")
    block = {
        "aurc": aurc(confidence, credit),
        "interval": None,
        "agreement_at_coverage": agreement_at_coverage(confidence, credit, COVERAGE_LEVELS),
        "coverage_at_agreement": coverage_at_agreement(confidence, credit, AGREEMENT_LEVELS),
        "n": n,
        "no_confidence": sum(c is None or c != c for c in confidence),
    }
    if resamples:
        intervals = bootstrap_intervals(
            lambda counts: {"aurc": aurc(confidence, credit, counts[:, units])},
            int(units.max()) + 1,
            resamples,
            seed=seed,
        )
        block["interval"] = intervals["aurc"]
    return block


def baseline_critics(
    human: Sequence, response_1: Sequence | None = None, response_2: Sequence | None = None
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The verdicts and confidences of the baselines on the given rows.

    Args:
        human: the human labels, shape ``(n,)`` (any spelling of :func:`~hf_critic.core.labels.normalize_labels`).
        response_1 / response_2: the responses' texts or word counts, shape ``(n,)``; None: no ``longer-wins``.

    Returns:
        ``{"longer-wins": (labels, confidences), "label-prior": (labels, confidences)}``, label codes and floats of
        shape ``(n,)``.

    Raises:
        ValueError: no human label at all, or different lengths.
    """
    gold = normalize_labels(human, name="human labels")
    if not (gold >= 0).any():
        raise BadInputError("baselines need at least one human label")
    prior, share = label_prior(gold[gold >= 0])
    out = {}
    if response_1 is not None and response_2 is not None:
        out[LONGER_WINS] = longer_wins(response_1, response_2)
    out[LABEL_PRIOR] = (np.full(len(gold), prior), np.full(len(gold), share))
    return out


def _credit(labels, gold: np.ndarray) -> list[float]:
    return [float(lab is not None and lab == lab and int(lab) == int(h)) for lab, h in zip(labels, gold, strict=True)]


def risk_coverage_report(
    critics: Mapping[str, tuple[Sequence, Sequence]],
    human: Sequence,
    *,
    questions: Sequence | None = None,
    response_1: Sequence | None = None,
    response_2: Sequence | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[dict[str, dict], dict[str, tuple]]:
    """The risk-coverage blocks and curves of several critics on the same rows, and of the baselines.

    A verdict is credited when its label code equals the human label (first-order agreement; a tie verdict on a pair
    humans did not call a tie is a miss, as in ``calibrate``). Rows without a human label are left out.

    Args:
        critics: ``{name: (labels, confidences)}``: label codes (None: no verdict) and confidences per row.
        human: the human labels ``(n,)``.
        questions: the question of each row (bootstrap units); None: every row its own.
        response_1 / response_2: texts or word counts, for ``longer-wins``.
        resamples, seed: the bootstrap's (0: no interval).

    Returns:
        ``(blocks, curves)``: ``{name: block}`` (:func:`risk_coverage_block`; baselines last, with ``"baseline":
        True``, the label prior with its ``"label"``) and ``{name: (coverage, risk)}`` (baselines prefixed
        ``"baseline:"``, for :func:`~hf_critic.reports.risk_coverage.plot_risk_coverage`).

    Raises:
        ValueError: a critic whose lengths differ from the human labels', or see :func:`risk_coverage_block`.
    """
    gold = normalize_labels(human, name="human labels")
    keep = np.flatnonzero(gold >= 0)  # rows without a human label say nothing about agreement

    def kept(values):
        return None if values is None else [values[i] for i in keep]

    for name, (labels, confidence) in critics.items():
        if not len(labels) == len(confidence) == len(gold):
            raise BadInputError(
                f"{name}: {len(labels)} verdicts and {len(confidence)} confidences for {len(gold)} rows"
            )
    questions, gold = kept(questions), gold[keep]
    blocks, curves = {}, {}
    everything = [
        (name, kept(list(labels)), kept(list(confidence)), False) for name, (labels, confidence) in critics.items()
    ]
    baselines = baseline_critics(gold, kept(response_1), kept(response_2))
    everything += [(name, *verdicts, True) for name, verdicts in baselines.items()]
    for name, labels, confidence, baseline in everything:
        labels, confidence = list(labels), [None if c is None else float(c) for c in confidence]
        credit = _credit(labels, gold)
        block = risk_coverage_block(confidence, credit, questions, resamples=resamples, seed=seed)
        if baseline:
            block["baseline"] = True
            if name == LABEL_PRIOR:
                block["label"] = LABEL_NAMES[int(labels[0])]
        blocks[name] = block
        curves[f"baseline:{name}" if baseline else name] = risk_coverage_curve(confidence, credit)
    return blocks, curves
