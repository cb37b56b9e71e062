"""Bootstrap confidence intervals for the meta-evaluation figures (percentile bootstrap, vectorised, seeded).

Every figure of :mod:`~hf_critic.meta_eval.agreement` and :mod:`~hf_critic.meta_eval.correlation` is a function of
per-unit values (a pair's correctness, a query's correlation, a query's per-system score sums). A bootstrap
resample draws the units with replacement; here a resample is a row of **counts** (how often each unit was drawn),
so a figure over all resamples is one matrix product (``counts @ values``) instead of a Python loop over resamples
(Efron and Tibshirani, 1993, ch. 13: the percentile interval). Units are pairs for pairwise comparison and queries
for pointwise grading (a cluster bootstrap: a query's responses stay together, as text-level correlation is a mean
over queries).

The point estimate is the same function evaluated on a row of ones, so the figure and its interval come from one
formula. Counts are drawn in blocks of at most :data:`MAX_CELLS` cells, so memory stays bounded on large data.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from ..core.errors import BadInputError

__all__ = [
    "EXCLUDES_ESTIMATE",
    "Intervals",
    "MAX_CELLS",
    "MIN_RESAMPLES",
    "MIN_UNITS",
    "TOO_SMALL",
    "bootstrap_intervals",
    "check_resamples",
    "format_interval",
    "resample_counts",
]

logger = logging.getLogger(__name__)


class Intervals(dict):
    """``{figure: [low, high] or a note}``, with :attr:`dropped`: ``{figure: resamples left out as non-finite}`` (only the
    figures that lost any) and :attr:`n_resamples`."""

    def __init__(self, intervals: Mapping[str, Any], dropped: Mapping[str, int], n_resamples: int):
        super().__init__(intervals)
        self.dropped, self.n_resamples = dict(dropped), n_resamples


#: Most resample × unit cells drawn at once (float64: 64 MiB).
MAX_CELLS = 1 << 23
#: Fewest resamples behind a 95% percentile interval: each 2.5% tail then rests on 2.5 resamples or more
#: (one resample gave an "interval" that excluded its own estimate).
MIN_RESAMPLES = 100
#: Fewest units (pairs, questions) a bootstrap interval is given for: with fewer, resamples barely vary (one unit
#: gives a zero-width "95%" interval), so the interval is reported as :data:`TOO_SMALL` instead.
MIN_UNITS = 5
#: What an interval is reported as when there are fewer than :data:`MIN_UNITS` units.
TOO_SMALL = "n too small"
#: What an interval is reported as when the resamples' percentiles exclude the estimate itself.
EXCLUDES_ESTIMATE = "unstable (the resamples' percentiles exclude the estimate)"


def check_resamples(n_resamples: int, option: str = "resamples", none: bool = True) -> None:
    """Refuse a number of bootstrap resamples that gives no interval worth printing.

    Args:
        n_resamples: the number asked for.
        option: its name in the message.
        none: whether 0 (no interval) is allowed.

    Raises:
        ValueError: ``n_resamples`` negative, 0 when ``none`` is False, or between 1 and :data:`MIN_RESAMPLES` - 1.
    """
    if n_resamples < 0 or (0 < n_resamples or not none) and n_resamples < MIN_RESAMPLES:
        allowed = f"0 (no interval) or at least {MIN_RESAMPLES}" if none else f"at least {MIN_RESAMPLES}"
        raise BadInputError(f"{option} must be {allowed}, got {n_resamples}")


def format_interval(interval, fmt) -> str:
    """``" [low, high]"`` with ``fmt`` applied to each bound, ``" [n too small]"`` (or the other note) for a note,
    "" for none."""
    if not interval:
        return ""
    if isinstance(interval, str):
        return f" [{interval}]"
    return f" [{fmt(interval[0])}, {fmt(interval[1])}]"


def resample_counts(n_units: int, n_resamples: int, seed: int = 0) -> Iterator[np.ndarray]:
    """Blocks of bootstrap resamples as count matrices.

    Args:
        n_units: units to resample (pairs or queries), ≥ 1.
        n_resamples: resamples in all, ≥ 1.
        seed: seed of :func:`numpy.random.default_rng`; the same seed gives the same resamples.

    Yields:
        float64 arrays of shape ``(b, n_units)``, ``b`` ≤ ``n_resamples``: how many times each unit was drawn in
        each resample (every row sums to ``n_units``); the blocks' rows add up to ``n_resamples``.

    Raises:
        ValueError: ``n_units`` or ``n_resamples`` below 1.
    """
    if n_units < 1 or n_resamples < 1:
        raise BadInputError(f"bootstrap needs at least one unit and one resample, got {n_units} and {n_resamples}")
    rng = np.random.default_rng(seed)
    block = max(1, min(n_resamples, MAX_CELLS // n_units))
    done = 0
    while done < n_resamples:
        b = min(block, n_resamples - done)
        draws = rng.integers(0, n_units, size=(b, n_units)) + (np.arange(b) * n_units)[:, None]
        yield np.bincount(draws.ravel(), minlength=b * n_units).reshape(b, n_units).astype(np.float64)
        done += b


def bootstrap_intervals(
    statistic: Callable[[np.ndarray], Mapping[str, np.ndarray]],
    n_units: int,
    n_resamples: int,
    seed: int = 0,
    confidence: float = 0.95,
) -> Intervals:
    """Percentile bootstrap intervals of several figures computed by one weighted ``statistic``.

    Args:
        statistic: maps a ``(b, n_units)`` weight matrix to ``{figure: (b,) values}``; a row of ones must give
            the point estimate.
        n_units: units the weights index.
        n_resamples: resamples (e.g. 1000).
        seed: see :func:`resample_counts`.
        confidence: the interval's coverage in (0, 1), e.g. 0.95 for the 2.5th and 97.5th percentiles.

    Returns:
        ``{figure: [low, high]}``; NaN bounds where no resample gave a finite value (a resample whose figure is
        undefined, e.g. a correlation over constant scores, is left out of the percentiles); :data:`TOO_SMALL` for
        every figure when ``n_units < MIN_UNITS``, and :data:`EXCLUDES_ESTIMATE` where the percentiles exclude the
        point estimate (never an interval that does); an :class:`Intervals` whose ``.dropped`` counts, per figure,
        the non-finite resamples left out (a warning names them).

    Raises:
        ValueError: ``confidence`` outside (0, 1), fewer than :data:`MIN_RESAMPLES` resamples, or see
            :func:`resample_counts`.
    """
    if not 0 < confidence < 1:
        raise BadInputError(f"confidence must be in (0, 1), got {confidence}")
    check_resamples(n_resamples, "bootstrap resamples")
    if n_units < 1:
        raise BadInputError(f"bootstrap needs at least one unit, got {n_units}")
    estimates = {k: float(np.asarray(v, dtype=np.float64)[0]) for k, v in statistic(np.ones((1, n_units))).items()}
    if n_units < MIN_UNITS:
        return Intervals(dict.fromkeys(estimates, TOO_SMALL), {}, n_resamples)
    samples: dict[str, list[np.ndarray]] = {}
    for counts in resample_counts(n_units, n_resamples, seed):
        for name, values in statistic(counts).items():
            samples.setdefault(name, []).append(np.asarray(values, dtype=np.float64))
    tail = 100 * (1 - confidence) / 2
    out: dict[str, Any] = {}
    dropped: dict[str, int] = {}
    for name, parts in samples.items():
        values = np.concatenate(parts)
        finite = values[np.isfinite(values)]
        if len(finite) < len(values):
            dropped[name] = len(values) - len(finite)
        if not len(finite):
            out[name] = [np.nan, np.nan]
            continue
        low, high = float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))
        estimate, slack = estimates.get(name, np.nan), 1e-9 * max(1.0, abs(high), abs(low))
        outside = math.isfinite(estimate) and not low - slack <= estimate <= high + slack
        out[name] = EXCLUDES_ESTIMATE if outside else [low, high]
    if dropped:
        said = ", ".join(f"{name} {count}" for name, count in dropped.items())
        logger.warning("bootstrap: non-finite resamples left out of the intervals (of %d): %s", n_resamples, said)
    return Intervals(out, dropped, n_resamples)
