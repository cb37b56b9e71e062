"""Prediction-powered inference: human-corrected estimates from a few human labels and a critic's verdicts on all rows.

Critic verdicts are cheap and biased; human labels are dear and unbiased. **Prediction-powered inference** (PPI;
Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382, 2023, §"Mean
estimation", Eq. 1-2 and Algorithm 1) combines ``n`` human-labelled rows with the critic's predictions on ``N``
further rows into an unbiased estimate of a mean and a confidence interval that is narrower than the human-only one
whenever the critic's predictions are informative:

    theta_PP = mean(f(X_unlabelled)) - mean(f(X_labelled) - Y)        (the *rectifier* corrects the critic's bias)
    C_PP     = theta_PP +/- z_(1 - alpha/2) * sqrt(var(f_unlabelled) / N + var(f_labelled - Y) / n)

Whatever the critic, the interval keeps its coverage: a useless critic only widens it. **PPI++** (Angelopoulos,
Duchi and Zrnic, "PPI++: Efficient Prediction-Powered Inference", arXiv:2311.01453, 2023, §2 and Example 6.1)
scales the predictions by a tuned ``lambda`` (:func:`ppi_mean_interval` with ``power_tuning=True``): ``lambda = 0``
is the human-only estimate, ``lambda = 1`` the PPI of the Science paper; the tuned value is never much worse than
either, and it absorbs a critic whose scale differs from the humans' (a critic grading 1-10 for humans grading 1-5).
Both match the ``ppi_python`` package (``ppi_mean_ci`` with ``lam=1`` and ``lam=None``) to rounding.

In ``hf-critic meta-eval --ppi`` the estimand is the human win rate of response 1 (pairwise: response 1 better = 1,
response 2 better = 0, a tie 1/2) or a system's mean human score (pointwise); the human-labelled rows are a column
of their own or, for a simulation on a fully labelled benchmark, a seeded random subset (:func:`draw_human_subset`).
:func:`ppi_comparison` adds the human-only interval on the same labelled rows and the number of human labels a
human-only estimate would need to be as narrow as the PPI one (``n_equivalent``, so ``labels_saved = n_equivalent
- n``: the interval's width falls as ``1 / sqrt(n)``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, RESPONSE_1_WINS, RESPONSE_2_WINS, TIE, normalize_labels
from ..core.schema import read_distribution
from .bootstrap import TOO_SMALL

__all__ = [
    "classical_mean_interval",
    "draw_human_subset",
    "ppi_by_group",
    "ppi_comparison",
    "ppi_mean_interval",
    "win_predictions",
    "win_values",
]


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise BadInputError(f"confidence must be in (0, 1), got {confidence}")
    return float(stats.norm.ppf(0.5 + confidence / 2))


def _split(labels, predictions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Y, f(X) on the labelled rows, f(X) on the unlabelled rows)`` from row-aligned arrays (NaN = no label)."""
    y = np.asarray([np.nan if v is None else v for v in labels], dtype=np.float64)
    f = np.asarray([np.nan if v is None else v for v in predictions], dtype=np.float64)
    if y.shape != f.shape or y.ndim != 1:
        raise BadInputError(f"labels and predictions must be 1-D of one length, got {y.shape} and {f.shape}")
    if not np.isfinite(f).all():
        raise BadInputError("PPI needs a prediction on every row: give unparsed rows a value (e.g. 0.5)")
    labelled = np.isfinite(y)
    return y[labelled], f[labelled], f[~labelled]


def classical_mean_interval(labels: Sequence[float] | np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
    """The human-only (classical, central limit theorem) interval of a mean: ``mean(Y) +/- z * sd(Y) / sqrt(n)``.

    Args:
        labels: the human values ``(n,)``; None / NaN (unlabelled rows) are left out.
        confidence: the interval's coverage in (0, 1).

    Returns:
        ``{"estimate", "ci": [low, high], "se", "width", "n"}`` (the standard deviation with divisor ``n``, as
        ``ppi_python``'s ``classical_mean_ci``); NaN without labels; with one label its value, ``"ci":``
        :data:`~hf_critic.meta_eval.bootstrap.TOO_SMALL` and NaN ``se`` / ``width``.

    Raises:
        ValueError: ``confidence`` outside (0, 1).
    """
    z = _z(confidence)
    y = np.asarray([np.nan if v is None else v for v in labels], dtype=np.float64)
    y = y[np.isfinite(y)]
    n = len(y)
    if n < 2:  # one label: no spread to measure, never a zero-width "95%" interval
        estimate = float(y.mean()) if n else math.nan
        return {
            "estimate": estimate,
            "ci": TOO_SMALL if n else [math.nan, math.nan],
            "se": math.nan,
            "width": math.nan,
            "n": n,
        }
    mean, se = float(y.mean()), float(y.std() / math.sqrt(n))
    return {"estimate": mean, "ci": [mean - z * se, mean + z * se], "se": se, "width": 2 * z * se, "n": n}


def ppi_mean_interval(
    labels: Sequence[float] | np.ndarray,
    predictions: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
    *,
    power_tuning: bool = False,
) -> dict[str, Any]:
    """The prediction-powered estimate of a mean and its interval (Angelopoulos et al., Science 2023, Eq. 1-2).

    Args:
        labels: the human value of each row ``(n_rows,)``, None / NaN where the row has no human label.
        predictions: the critic's prediction of that value on **every** row ``(n_rows,)``, on the humans' scale where
            possible (a win probability for a win rate; a score for a mean score).
        confidence: the interval's coverage in (0, 1) (``1 - alpha`` in the paper).
        power_tuning: False: ``lambda = 1``, the Science paper's PPI; True: PPI++'s tuned ``lambda`` in [0, 1]
            (Angelopoulos, Duchi and Zrnic, 2023, Example 6.1: ``lambda = Cov(Y, f) / ((1 + n / N) Var(f))``, the
            covariance over the labelled rows, the variance over all rows).

    Returns:
        ``{"estimate", "ci": [low, high], "se", "width", "n" (labelled rows), "n_unlabelled", "lambda"}``; NaN
        estimate with fewer than 2 labelled or 1 unlabelled row.

    Raises:
        ValueError: different lengths, a missing prediction, or ``confidence`` outside (0, 1).
    """
    z = _z(confidence)
    y, f_lab, f_unl = _split(labels, predictions)
    n, big_n = len(y), len(f_unl)
    out: dict[str, Any] = {"n": n, "n_unlabelled": big_n}
    if n < 2 or big_n < 1:
        return out | {
            "estimate": math.nan,
            "ci": [math.nan, math.nan],
            "se": math.nan,
            "width": math.nan,
            "lambda": math.nan,
        }
    lam = 1.0
    if power_tuning:
        cov = float(((y - y.mean()) * (f_lab - f_lab.mean())).mean())
        var = float(np.var(np.concatenate([f_lab, f_unl]), ddof=1))
        lam = float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0)) if var > 0 else 0.0
    estimate = float(lam * f_unl.mean() + (y - lam * f_lab).mean())
    se = math.sqrt(float(np.var(lam * f_unl)) / big_n + float(np.var(y - lam * f_lab)) / n)
    return out | {
        "estimate": estimate,
        "ci": [estimate - z * se, estimate + z * se],
        "se": se,
        "width": 2 * z * se,
        "lambda": lam,
    }


def ppi_comparison(
    labels: Sequence[float] | np.ndarray,
    predictions: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
    *,
    power_tuning: bool = False,
) -> dict[str, Any]:
    """The prediction-powered estimate beside the human-only one, and the human labels the critic saves.

    Args: as :func:`ppi_mean_interval`.

    Returns:
        ``{"ppi": ppi_mean_interval(...), "human_only": classical_mean_interval(labelled rows), "width_ratio":
        PPI width / human-only width, "n_equivalent": human labels a human-only interval needs to be as narrow as the
        PPI one (``n * (human-only width / PPI width)^2``), "labels_saved": n_equivalent - n (negative when the critic
        widens the interval)}``; NaN ratios when a width is 0 or NaN.
    """
    ppi = ppi_mean_interval(labels, predictions, confidence, power_tuning=power_tuning)
    human = classical_mean_interval(labels, confidence)
    ratio = ppi["width"] / human["width"] if human["width"] and ppi["width"] else math.nan
    out: dict[str, Any] = {"ppi": ppi, "human_only": human, "width_ratio": ratio}
    equivalent = human["n"] / ratio**2 if ratio and math.isfinite(ratio) else math.nan
    out["n_equivalent"] = equivalent
    out["labels_saved"] = equivalent - human["n"] if math.isfinite(equivalent) else math.nan
    return out


def ppi_by_group(
    labels: Sequence[float] | np.ndarray,
    predictions: Sequence[float] | np.ndarray,
    groups: Sequence[Hashable] | np.ndarray,
    confidence: float = 0.95,
    *,
    power_tuning: bool = False,
) -> dict[Hashable, dict[str, Any]]:
    """:func:`ppi_comparison` within each group (e.g. a system's mean human score over its responses).

    Returns:
        ``{group: ppi_comparison(...)}`` in order of first appearance.

    Raises:
        ValueError: different lengths.
    """
    y = np.asarray([np.nan if v is None else v for v in labels], dtype=np.float64)
    f = np.asarray(predictions, dtype=np.float64)
    codes, uniques = pd.factorize(np.asarray(groups, dtype=object), sort=False)
    if len(codes) != len(y) or len(f) != len(y):
        raise BadInputError("labels, predictions and groups differ in length")
    return {
        key: ppi_comparison(y[codes == k], f[codes == k], confidence, power_tuning=power_tuning)
        for k, key in enumerate(uniques.tolist())
    }


def draw_human_subset(n_rows: int, fraction: float, seed: int = 0) -> np.ndarray:
    """A seeded random subset of the rows, as if only they had human labels (for a PPI simulation on a benchmark whose
    every row is labelled).

    Args:
        n_rows: rows in all.
        fraction: the share in (0, 1) to keep as human-labelled; at least 2 and at most ``n_rows - 1`` rows are drawn.
        seed: seed of :func:`numpy.random.default_rng`.

    Returns:
        bool array ``(n_rows,)``: True = human-labelled.

    Raises:
        ValueError: ``fraction`` outside (0, 1) or fewer than 3 rows.
    """
    if not 0 < fraction < 1:
        raise BadInputError(f"the human subset is a fraction in (0, 1), got {fraction}")
    if n_rows < 3:
        raise BadInputError(f"a human subset needs at least 3 rows, got {n_rows}")
    k = min(max(2, round(fraction * n_rows)), n_rows - 1)
    mask = np.zeros(n_rows, dtype=bool)
    mask[np.random.default_rng(seed).choice(n_rows, size=k, replace=False)] = True
    return mask


def win_values(labels: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Pairwise labels as the win of response 1: 1.0 (response 1 better), 0.0 (response 2 better), 0.5 (tie), NaN
    (no label / unparsed); the mean is the win rate of response 1, a tie counting half (as AlpacaEval counts it).

    Raises:
        ValueError: an unknown label (see :func:`~hf_critic.core.labels.normalize_labels`).
    """
    codes = normalize_labels(labels, name="labels")
    return np.select([codes == RESPONSE_1_WINS, codes == RESPONSE_2_WINS, codes == TIE], [1.0, 0.0, 0.5], np.nan)


def win_predictions(
    labels: Sequence[Any] | np.ndarray,
    swapped_labels: Sequence[Any] | np.ndarray | None = None,
    distributions: Sequence[Any] | None = None,
) -> np.ndarray:
    """A critic's prediction of :func:`win_values` on every pair, for PPI.

    From verdict distributions (``critique_distribution``, or ``critique_distribution_combined`` of both orders):
    ``P(response 1) + P(tie) / 2`` of the distribution renormalised over its verdicts; otherwise each order's verdict
    as a win value, both orders averaged (a swapped verdict mapped back to the original order). An unparsed pair
    (no verdict in either order, no distribution) predicts 1/2: PPI needs a prediction on every row, and the
    rectifier corrects whatever the critic predicts.

    Args:
        labels: original-order verdicts ``(n,)``.
        swapped_labels: the swapped order's verdicts mapped back ``(n,)``, or None.
        distributions: per pair a JSON object / mapping ``{verdict: probability}`` or None, or None.

    Returns:
        float64 array ``(n,)`` in [0, 1], no NaN.
    """
    first = win_values(labels)
    if distributions is not None:
        r1, r2, tie = (LABEL_NAMES[k] for k in (RESPONSE_1_WINS, RESPONSE_2_WINS, TIE))
        values = []
        for d in distributions:
            d = read_distribution(d)
            total = sum(float(d.get(k, 0.0)) for k in (r1, r2, tie)) if d else 0.0
            values.append((float(d.get(r1, 0.0)) + float(d.get(tie, 0.0)) / 2) / total if total > 0 else np.nan)
        first = np.where(np.isfinite(values), np.asarray(values, dtype=np.float64), first)
    elif swapped_labels is not None:
        both = np.stack([first, win_values(swapped_labels)])
        count = np.isfinite(both).sum(axis=0)
        first = np.where(count > 0, np.nansum(both, axis=0) / np.maximum(count, 1), np.nan)
    return np.where(np.isfinite(first), first, 0.5)
