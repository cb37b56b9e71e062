"""Agreement beyond chance: Cohen's kappa between a critic and the gold, Krippendorff's alpha among annotators.

A raw agreement of 60% means little on its own: two raters who answer at random with the gold's label frequencies
agree by chance too. These coefficients take chance out.

* **Cohen's kappa** (Cohen, 1960, Educational and Psychological Measurement 20(1)) between two raters of the same
  items: ``kappa = (p_o - p_e) / (1 - p_e)``, ``p_o`` the observed agreement, ``p_e`` the agreement expected from the
  two raters' marginals. The **weighted** kappa (Cohen, 1968, Psychological Bulletin 70(4)) gives partial credit to
  near misses on an ordered scale: ``kappa_w = 1 - sum(w * O) / sum(w * E)`` with disagreement weights ``w_ij`` =
  ``|i - j|`` (linear) or ``(i - j)^2`` (quadratic) over the categories' positions in sorted order (as
  ``sklearn.metrics.cohen_kappa_score`` does). :func:`cohen_kappa`.
* Pointwise critics grade on their own scale (1-10) while humans often use another (1-5): :func:`bin_to_scale` maps
  the critic's scores onto the gold's categories before the quadratic-weighted kappa (:func:`binned_weighted_kappa`).
* **Krippendorff's alpha** (Krippendorff, 2011, "Computing Krippendorff's Alpha-Reliability", Annenberg School for
  Communication, §A-§E; Hayes and Krippendorff, 2007) among any number of annotators with missing values:
  ``alpha = 1 - D_o / D_e`` from the coincidence matrix of the values each unit received, with the nominal,
  ordinal, interval or ratio difference function. :func:`krippendorff_alpha`. Computing it among the annotators of
  ``--label-columns`` with and without the critic as one more annotator says whether the critic fits in with the
  humans (:func:`annotator_alpha`).

Everything is vectorised over items (``np.bincount`` and one matrix product); nothing loops over rows in Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ..core.errors import BadInputError
from ..core.labels import normalize_labels

__all__ = [
    "ALPHA_LEVELS",
    "KAPPA_WEIGHTS",
    "alpha_with_critic",
    "annotator_alpha",
    "bin_to_scale",
    "binned_weighted_kappa",
    "cohen_kappa",
    "krippendorff_alpha",
]

#: Disagreement weights of :func:`cohen_kappa`: ``None`` (unweighted, nominal), ``"linear"``, ``"quadratic"``.
KAPPA_WEIGHTS = (None, "linear", "quadratic")

#: Levels of measurement of :func:`krippendorff_alpha` (Krippendorff, 2011, §E: the difference functions).
ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _floats(values: Any, name: str) -> np.ndarray:
    """A 1-D float64 array, None read as NaN."""
    arr = np.asarray([np.nan if v is None else v for v in values] if not isinstance(values, np.ndarray) else values)
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise BadInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def cohen_kappa(
    rater_a: Sequence[float] | np.ndarray,
    rater_b: Sequence[float] | np.ndarray,
    *,
    weights: Literal["linear", "quadratic"] | None = None,
    labels: Sequence[float] | None = None,
) -> dict[str, float]:
    """Cohen's kappa (1960), or the weighted kappa (1968), between two raters of the same items.

    Args:
        rater_a: one rater's category per item, shape ``(n,)``: numbers (label codes 0 / 1 / 2, or scores); None /
            NaN = no rating (the item is left out and counted). For the critic against the gold, the critic.
        rater_b: the other rater's categories, shape ``(n,)`` (the gold).
        weights: ``None`` (every disagreement weighs 1), ``"linear"`` (``|i - j|``) or ``"quadratic"``
            (``(i - j)^2``), over the positions ``i, j`` of the categories in sorted order.
        labels: the categories, in order; None: the sorted union of the values both raters used. A value outside
            ``labels`` is an error.

    Returns:
        ``{"kappa": float in [-1, 1] (NaN without items, or when chance agreement is already perfect: both raters
        used one and the same category), "observed": p_o (unweighted: share of equal ratings; weighted: 1 - mean
        disagreement weight, in [0, 1]), "expected": p_e from the marginals, "n": items rated by both,
        "n_missing": items left out}``. Equals ``sklearn.metrics.cohen_kappa_score(a, b, weights=...)`` on the items
        rated by both.

    Raises:
        ValueError: different lengths, an unknown ``weights``, or a value outside ``labels``.
    """
    if weights not in KAPPA_WEIGHTS:
        raise BadInputError(f"weights must be one of {KAPPA_WEIGHTS}, got {weights!r}")
    a, b = _floats(rater_a, "rater_a"), _floats(rater_b, "rater_b")
    if len(a) != len(b):
        raise BadInputError(f"rater_a and rater_b differ in length: {len(a)} != {len(b)}")
    both = np.isfinite(a) & np.isfinite(b)
    a, b = a[both], b[both]
    out = {"kappa": math.nan, "observed": math.nan, "expected": math.nan, "n": int(both.sum())}
    out["n_missing"] = int((~both).sum())
    if not len(a):
        return out
    cats = np.union1d(a, b) if labels is None else np.asarray(labels, dtype=np.float64)
    ia, ib = np.searchsorted(cats, a), np.searchsorted(cats, b)
    for name, values, index in (("rater_a", a, ia), ("rater_b", b, ib)):
        bad = (index >= len(cats)) | (cats[np.minimum(index, len(cats) - 1)] != values)
        if bad.any():
            raise BadInputError(f"{name} has {values[bad][0]!r}, which is not one of the labels {cats.tolist()}")
    k = len(cats)
    observed = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k) / len(a)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    w = {None: (i != j).astype(float), "linear": np.abs(i - j).astype(float), "quadratic": (i - j) ** 2.0}[weights]
    do, de = float((w * observed).sum()), float((w * expected).sum())
    scale = float(w.max()) if w.max() > 0 else 1.0
    out.update(observed=1 - do / scale, expected=1 - de / scale)
    out["kappa"] = 1 - do / de if de > 0 else math.nan
    return out


def bin_to_scale(
    scores: Sequence[float] | np.ndarray,
    scale: Sequence[float] | np.ndarray,
    *,
    score_range: tuple[float, float] | None = None,
) -> np.ndarray:
    """A critic's scores mapped onto the gold's categories (e.g. 1-10 grades onto a 1-5 human scale).

    Where every score already lies within the scale's range (the critic grades on the gold's scale), each score goes
    to the nearest category; otherwise the scores are first mapped linearly from ``score_range`` (default: the lowest
    and highest score seen) onto ``[min(scale), max(scale)]``. A score halfway between two categories goes to the
    lower one.

    Args:
        scores: the critic's scores, shape ``(n,)``; None / NaN stay NaN.
        scale: the gold's categories (any order, repeats allowed: e.g. the gold scores themselves).
        score_range: the critic's scale ``(low, high)`` when known (e.g. ``(1, 10)``).

    Returns:
        float64 array ``(n,)`` of categories of ``scale`` (NaN where the score is missing).

    Raises:
        ValueError: an empty ``scale`` or a ``score_range`` whose low is not below its high.
    """
    x = _floats(scores, "scores")
    cats = np.unique(_floats(scale, "scale")[np.isfinite(_floats(scale, "scale"))])
    if not len(cats):
        raise BadInputError("bin_to_scale needs at least one category in scale")
    finite = np.isfinite(x)
    if not finite.any():
        return x
    if score_range is None:
        inside = x[finite].min() >= cats[0] and x[finite].max() <= cats[-1]
        low, high = (cats[0], cats[-1]) if inside else (x[finite].min(), x[finite].max())
    else:
        low, high = map(float, score_range)
        if not low < high:
            raise BadInputError(f"score_range must be (low, high) with low < high, got {score_range}")
    mapped = cats[0] + (x - low) * (cats[-1] - cats[0]) / (high - low) if high > low else np.full_like(x, cats[0])
    index = np.clip(np.searchsorted(cats, mapped), 1, max(len(cats) - 1, 1))
    lower, upper = cats[index - 1], cats[np.minimum(index, len(cats) - 1)]
    nearest = np.where(np.abs(mapped - lower) <= np.abs(upper - mapped), lower, upper) if len(cats) > 1 else cats[0]
    return np.where(finite, nearest, np.nan)


def binned_weighted_kappa(
    predictions: Sequence[float] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    *,
    score_range: tuple[float, float] | None = None,
) -> dict[str, float]:
    """Quadratic-weighted kappa of a critic's scores, binned to the gold's scale (:func:`bin_to_scale`), against
    the gold scores (Cohen, 1968).

    Args:
        predictions: critic scores, shape ``(n,)``; None / NaN = unparsed (left out, counted in ``n_missing``).
        references: gold scores, shape ``(n,)``; their distinct values are the categories.
        score_range: the critic's scale when known, see :func:`bin_to_scale`.

    Returns:
        :func:`cohen_kappa`'s dict (``kappa``, ``observed``, ``expected``, ``n``, ``n_missing``) with quadratic
        weights over the gold's categories.

    Raises:
        ValueError: different lengths.
    """
    x, y = _floats(predictions, "predictions"), _floats(references, "references")
    if len(x) != len(y):
        raise BadInputError(f"predictions and references differ in length: {len(x)} != {len(y)}")
    gold = y[np.isfinite(y)]
    if not len(gold):
        return cohen_kappa(x[:0], y[:0]) | {"n_missing": len(x)}
    binned = bin_to_scale(np.where(np.isfinite(y), x, np.nan), gold, score_range=score_range)
    return cohen_kappa(binned, y, weights="quadratic", labels=np.unique(gold))


def _difference(level: str, values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Squared difference ``delta^2(c, k)`` between the distinct values (Krippendorff, 2011, §E)."""
    c, k = values[:, None], values[None, :]
    if level == "nominal":
        return (c != k).astype(np.float64)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nan_to_num(((c - k) / (c + k)) ** 2)
    # ordinal: (sum of n_g for g from c to k) - (n_c + n_k) / 2, squared
    cum = np.cumsum(totals)
    index = np.arange(len(values))
    lo, hi = np.minimum.outer(index, index), np.maximum.outer(index, index)
    between = cum[hi] - cum[lo] + totals[lo]
    return (between - (totals[:, None] + totals[None, :]) / 2) ** 2


def krippendorff_alpha(
    reliability_data: Sequence[Sequence[float]] | np.ndarray,
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal",
) -> dict[str, float]:
    """Krippendorff's alpha-reliability of several annotators (coders), missing values allowed.

    Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", §C (nominal data, any number of coders,
    missing values) and §E (the difference functions): each unit's values give ``n_u (n_u^T) - diag(n_u)`` pairs of
    values divided by ``m_u - 1`` (``m_u`` values in the unit) to the coincidence matrix ``o``; with ``n_c`` its row
    sums and ``n`` the pairable values, ``alpha = 1 - (n - 1) * sum(o * delta^2) / sum(n_c n_k delta^2)``. Units with
    fewer than two values are not pairable and left out.

    Args:
        reliability_data: shape ``(coders, units)``: each coder's value for each unit (numbers: label codes or
            scores); None / NaN = missing.
        level: ``"nominal"`` (labels), ``"ordinal"`` (ranks), ``"interval"`` (scores) or ``"ratio"``.

    Returns:
        ``{"alpha": float (1 = perfect, 0 = chance, below 0 = systematic disagreement; NaN without two pairable
        values or when every pairable value is the same), "n_units": pairable units, "n_values": pairable values,
        "n_coders": coders}``. Equals the ``krippendorff`` package's ``alpha(reliability_data, level_of_measurement=...)``.

    Raises:
        ValueError: an unknown ``level`` or data that is not two-dimensional.
    """
    if level not in ALPHA_LEVELS:
        raise BadInputError(f"level must be one of {ALPHA_LEVELS}, got {level!r}")
    rows = [_floats(r, "reliability_data") for r in reliability_data]
    data = np.vstack(rows) if rows else np.zeros((0, 0))
    if data.ndim != 2:
        raise BadInputError(f"reliability_data must be (coders, units), got shape {data.shape}")
    out = {"alpha": math.nan, "n_units": 0, "n_values": 0, "n_coders": int(data.shape[0])}
    finite = np.isfinite(data)
    values = np.unique(data[finite])
    if not len(values):
        return out
    unit = np.broadcast_to(np.arange(data.shape[1]), data.shape)[finite]
    code = np.searchsorted(values, data[finite])
    v = len(values)
    counts = np.bincount(unit * v + code, minlength=data.shape[1] * v).reshape(data.shape[1], v)  # n_uc
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable].astype(np.float64), m[pairable].astype(np.float64)
    scaled = counts / (m - 1)[:, None]
    coincidence = scaled.T @ counts - np.diag(scaled.sum(axis=0))  # o_ck, Krippendorff (2011) §C
    totals = coincidence.sum(axis=1)
    n = float(totals.sum())
    out.update(n_units=int(pairable.sum()), n_values=int(round(n)))
    if n < 2:
        return out
    delta = _difference(level, values, totals)
    expected = float(totals @ delta @ totals)
    if expected <= 0:
        return out
    out["alpha"] = 1.0 - (n - 1) * float((coincidence * delta).sum()) / expected
    return out


def annotator_alpha(
    annotations: Mapping[str, Sequence[float] | np.ndarray],
    critic: Sequence[float] | np.ndarray | None = None,
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal",
) -> dict[str, Any]:
    """Krippendorff's alpha among the annotators, and again with the critic as one more annotator.

    If the critic's alpha with the humans is as high as theirs among themselves, it is as reliable as one more human
    (the comparison behind ``--label-columns`` in ``hf-critic meta-eval``).

    Args:
        annotations: ``{annotator: values (n,)}`` (label codes 0 / 1 / 2 with -1 or NaN for missing, or scores with
            NaN); at least two annotators for ``alpha_annotators``.
        critic: the critic's values on the same items ``(n,)`` (codes, -1 / NaN = unparsed; or scores already on the
            annotators' scale: see :func:`bin_to_scale`); None: no ``alpha_with_critic``.
        level: see :func:`krippendorff_alpha` (``nominal`` for pairwise labels, ``interval`` for scores).

    Returns:
        ``{"alpha_annotators", "alpha_with_critic"?, "n_annotators", "n_units", "level"}``; empty when fewer than two
        annotators are given.
    """
    if len(annotations) < 2:
        return {}

    def clean(values):
        arr = _floats(values, "annotations")
        return np.where(arr < 0, np.nan, arr) if level == "nominal" else arr

    humans = [clean(v) for v in annotations.values()]
    alone = krippendorff_alpha(humans, level)
    out = {
        "alpha_annotators": alone["alpha"],
        "n_annotators": len(humans),
        "n_units": alone["n_units"],
        "level": level,
    }
    if critic is not None:
        out["alpha_with_critic"] = krippendorff_alpha([*humans, clean(critic)], level)["alpha"]
    return out


def alpha_with_critic(
    annotations: Sequence[Sequence[Any]],
    predictions: Sequence[Any],
    *,
    pairwise: bool,
    references: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Krippendorff's alpha of several annotators' judgments, alone and with the critic: the ``evaluate`` modules'
    ``annotations`` argument.

    Args:
        annotations: one sequence per annotator, each ``(n,)``: pairwise labels in any spelling
            :func:`~hf_critic.core.labels.normalize_labels` reads (None = not labelled), or scores (None / NaN).
        predictions: the critic's verdicts (pairwise) or scores ``(n,)``.
        pairwise: labels (nominal alpha) or scores (interval alpha; the critic's scores binned to the scale of
            ``references`` first, :func:`bin_to_scale`).
        references: the gold scores ``(n,)`` whose categories the critic's scores are binned to (pointwise); None:
            the annotators' own values.

    Returns:
        ``{"krippendorff_alpha", "krippendorff_alpha_with_critic", "krippendorff_alpha_level"}``; empty with fewer
        than two annotators.
    """
    if pairwise:
        humans = {str(i): normalize_labels(a, name=f"annotations[{i}]") for i, a in enumerate(annotations)}
        critic = normalize_labels(predictions, name="predictions")
    else:
        humans = {str(i): _floats(a, f"annotations[{i}]") for i, a in enumerate(annotations)}
        scale = _floats(references, "references") if references is not None else np.concatenate(list(humans.values()))
        scale = scale[np.isfinite(scale)]
        critic = bin_to_scale(predictions, scale) if len(scale) else _floats(predictions, "predictions")
    out = annotator_alpha(humans, critic, "nominal" if pairwise else "interval")
    if not out:
        return {}
    return {
        "krippendorff_alpha": out["alpha_annotators"],
        "krippendorff_alpha_with_critic": out["alpha_with_critic"],
        "krippendorff_alpha_level": out["level"],
    }
