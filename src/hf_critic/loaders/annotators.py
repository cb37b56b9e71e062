"""Several annotators per item: their aggregate gold label or score, and each one's agreement with it.

Published pairwise benchmarks often carry one label per annotator (PandaLM's test set: three annotators, MT-Bench
human judgments: several experts per pair). The gold label is their **majority** (or their **mean** preference),
and the agreement of each annotator with that majority is the *human ceiling* a critic is compared with (PandaLM,
Wang et al., 2024, Table 2; MT-Bench, Zheng et al., 2023, §4.2 report human-human agreement the same way).

Aggregation rules (:data:`AGGREGATIONS`):

* pairwise, ``majority``: the label most annotators gave, over the annotators who gave one; a **split vote**
  (two or more labels share the top count, e.g. response 1 / response 2 / tie, or 1-1 with two annotators) is a
  **tie**: the annotators do not agree that either response is better.
* pairwise, ``mean``: each label as a preference (response 1 = +1, tie = 0, response 2 = -1) averaged over the
  annotators; its sign is the label (0 = tie).
* pointwise, ``mean``: the mean score; ``majority``: the most frequent score, a split between several scores
  resolved by their mean.

A missing annotation (None / NaN) is left out; an item no annotator labelled has no gold label (-1 / NaN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ..core.errors import BadInputError
from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE, UNPARSED

__all__ = ["AGGREGATIONS", "aggregate_labels", "aggregate_scores", "annotator_agreement"]

#: ``--aggregate`` choices.
AGGREGATIONS = ("majority", "mean")


def _matrix(values, dtype, how: str, what: str) -> np.ndarray:
    matrix = np.asarray(values, dtype=dtype)
    if matrix.ndim != 2:
        raise BadInputError(f"annotator {what} must be (items, annotators), got shape {matrix.shape}")
    if how not in AGGREGATIONS:
        raise BadInputError(f"aggregate must be one of {AGGREGATIONS}, got {how!r}")
    return matrix


def aggregate_labels(codes: np.ndarray, how: Literal["majority", "mean"] = "majority") -> np.ndarray:
    """The gold label of each pair from several annotators' labels (see the module docstring for the rules).

    Args:
        codes: int array ``(n, annotators)`` of schema codes 0 / 1 / 2, -1 for a missing annotation (the output
            of :func:`~hf_critic.core.labels.normalize_labels` per annotator column, stacked).
        how: ``"majority"`` (split votes are ties) or ``"mean"`` (sign of the mean preference).

    Returns:
        int64 array ``(n,)`` of codes; -1 where no annotator labelled the pair.

    Raises:
        ValueError: an unknown ``how`` or a matrix that is not two-dimensional.
    """
    codes = _matrix(codes, np.int64, how, "labels")
    votes = np.stack([(codes == k).sum(axis=1) for k in (RESPONSE_1_WINS, RESPONSE_2_WINS, TIE)], axis=1)
    labelled = votes.sum(axis=1) > 0
    if how == "majority":
        top = votes.max(axis=1)
        winners = (votes == top[:, None]).sum(axis=1)
        label = np.where(winners == 1, np.array([RESPONSE_1_WINS, RESPONSE_2_WINS, TIE])[votes.argmax(axis=1)], TIE)
    else:
        preference = votes[:, 0] - votes[:, 1]  # the mean's sign is the sum's sign
        label = np.where(preference > 0, RESPONSE_1_WINS, np.where(preference < 0, RESPONSE_2_WINS, TIE))
    return np.where(labelled, label, UNPARSED).astype(np.int64)


def aggregate_scores(scores: np.ndarray, how: Literal["majority", "mean"] = "mean") -> np.ndarray:
    """The gold score of each response from several annotators' scores.

    Args:
        scores: float array ``(n, annotators)``, NaN for a missing annotation.
        how: ``"mean"`` or ``"majority"`` (the most frequent score; a split resolved by the mean of the tied
            scores).

    Returns:
        float64 array ``(n,)``; NaN where no annotator scored the response.

    Raises:
        ValueError: an unknown ``how`` or a matrix that is not two-dimensional.
    """
    scores = _matrix(scores, np.float64, how, "scores")
    finite = np.isfinite(scores)
    count = finite.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite, scores, 0.0).sum(axis=1) / count
        if how == "mean":
            return np.where(count > 0, mean, np.nan)
        # How many annotators gave each annotator's score (pairwise equality across the few annotator columns).
        same = (scores[:, :, None] == scores[:, None, :]).sum(axis=2)
        same = np.where(finite, same, 0)
        top = same.max(axis=1, keepdims=True)
        modal = finite & (same == top)
        return np.where(count > 0, np.where(modal, scores, 0.0).sum(axis=1) / modal.sum(axis=1), np.nan)


def annotator_agreement(
    annotations: Mapping[str, Sequence[Any] | np.ndarray], gold: Sequence[Any] | np.ndarray
) -> dict[str, dict[str, float]]:
    """Each annotator's agreement with the aggregate label: the human ceiling of pairwise comparison.

    Args:
        annotations: ``{annotator: codes (n,)}`` with -1 for missing annotations.
        gold: the aggregate codes ``(n,)`` (:func:`aggregate_labels`), -1 where there is none.

    Returns:
        ``{annotator: {"agreement": share of the pairs the annotator labelled whose label equals the aggregate
        (their own vote included, as the papers count it), "n": those pairs}}``, plus ``"mean"``: ``{"agreement"}``,
        the mean over annotators.
    """
    gold = np.asarray(gold, dtype=np.int64)
    out: dict[str, dict[str, float]] = {}
    for name, codes in annotations.items():
        codes = np.asarray(codes, dtype=np.int64)
        labelled = (codes >= 0) & (gold >= 0)
        n = int(labelled.sum())
        out[name] = {"agreement": float((codes[labelled] == gold[labelled]).mean()) if n else np.nan, "n": n}
    if out:
        values = [v["agreement"] for v in out.values()]
        out["mean"] = {"agreement": float(np.nanmean(values)) if np.isfinite(values).any() else np.nan}
    return out
