"""Measuring selective judging: the guarantee's success rate over random calibration / test splits, coverage, each
critic's share and the calls saved against the strongest critic (the agreement-coverage curve is
:func:`hf_critic.selective.risk_coverage.agreement_coverage_curve`).

The protocol of Trust or Escalate (Jung, Brahman, Choi, ICLR 2025, §4.1): the human-labelled rows are split at random
into a calibration half and a test half R times; the cascade is calibrated on the first and applied to the second; the
guarantee holds on a split when the kept test rows agree with humans at rate at least ``1 - alpha``. A split that
keeps no row says nothing about agreement: it is counted apart (``empty_splits``), never as a success, and the
success rate is over the splits that kept rows (None when none did). It should be at least ``1 - delta``. Two references run on the same splits: no selection (the strongest critic, the cascade's last, on every
row) and a plain confidence cut-off (the lowest threshold whose observed calibration agreement is at least
``1 - alpha``, no bound).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..core.errors import BadInputError
from .calibration import DEFAULT_MIN_ROWS, as_confidences, calibrate_cascade, cascade_decisions

__all__ = ["selective_figures", "split_protocol"]


def _arrays(confidences, corrects) -> tuple[np.ndarray, np.ndarray]:
    conf = np.array([as_confidences(row) for row in confidences], dtype=float).reshape(len(confidences), -1)
    ok = np.array(corrects, dtype=bool)
    if conf.shape != ok.shape or conf.ndim != 2 or not conf.shape[1]:
        raise BadInputError(
            f"confidences {conf.shape} and corrects {ok.shape} must both be (critics, rows), rows >= 1"
        )
    return conf, ok


def _refitted(conf: np.ndarray, ok: np.ndarray, refit, cal: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The confidences and corrects of one split, with each refitted critic's rows from its fit on rows of ``cal``,
    and the calibration rows left to set thresholds on (``cal`` less every row a fit used)."""
    if not refit:
        return conf, ok, cal
    conf, ok = conf.copy(), ok.copy()
    used = []
    for i, fn in refit.items():
        confidence, correct, fitted_on = fn(cal)
        conf[i] = [np.nan if c is None else c for c in confidence]
        ok[i] = correct
        used.append(np.asarray(fitted_on, dtype=int))
    return conf, ok, cal[~np.isin(cal, np.concatenate(used))]


def selective_figures(decided: np.ndarray, ok: np.ndarray) -> dict:
    """Coverage, agreement on the kept rows, each critic's share and each critic's calls, from a cascade's decisions.

    Args:
        decided: the deciding critic per row, -1 for abstained (:func:`cascade_decisions`), shape ``(rows,)``.
        ok: whether each critic's verdict agrees with the human label, shape ``(critics, rows)``.

    Returns:
        ``{"rows", "kept", "coverage", "agreement" (None without kept rows), "shares": [per critic, of all rows],
        "asked": [per critic: rows it judged, i.e. those no predecessor kept], "abstained"}``.
    """
    rows = decided.shape[0]
    kept = decided >= 0
    hits = ok[decided[kept], np.flatnonzero(kept)] if kept.any() else np.array([], dtype=bool)
    asked, remaining = [], rows
    for i in range(ok.shape[0]):
        asked.append(int(remaining))
        remaining -= int((decided == i).sum())
    return {
        "rows": int(rows),
        "kept": int(kept.sum()),
        "coverage": float(kept.mean()),
        "agreement": float(hits.mean()) if hits.size else None,
        "shares": [float((decided == i).mean()) for i in range(ok.shape[0])],
        "asked": asked,
        "abstained": int((~kept).sum()),
    }


def split_protocol(
    confidences: Sequence[Sequence[float | None]],
    corrects: Sequence[Sequence[bool]],
    *,
    alpha: float,
    delta: float,
    splits: int = 1000,
    calibration_fraction: float = 0.5,
    min_rows: int = DEFAULT_MIN_ROWS,
    seed: int = 0,
    bound: str = "exact",
    refit: Mapping[int, Callable[[np.ndarray], tuple[Sequence, Sequence]]] | None = None,
    delta_shares: Sequence[float] | None = None,
) -> dict:
    """The guarantee over ``splits`` random calibration / test splits (Trust or Escalate §4.1).

    Args:
        confidences / corrects: per critic (cascade order, strongest last) and row, shape ``(critics, rows)``.
        alpha, delta, min_rows, bound: as in :func:`~hf_critic.selective.calibration.calibrate_cascade`.
        splits: R, the number of random splits (>= 1).
        calibration_fraction: the share of rows in each calibration half, in (0, 1).
        seed: seed of the splits.
        refit: ``{critic index: fn}`` for critics fitted on calibration rows (a fitted jury): on each split,
            ``fn(calibration row indices)`` refits on some of those rows only and returns that critic's
            ``(confidences, corrects)`` on every row, which replace its row of ``confidences`` / ``corrects`` for the
            split, and the indices of the rows it fitted on, which set no threshold (sample splitting: a bound on
            rows that shaped the ranking would be optimistic).
        delta_shares: each critic's share of ``delta`` (:func:`~hf_critic.selective.calibration.calibrate_cascade`);
            None: equal.

    Returns:
        ``{"target", "splits", "success_rate" (share of the splits that kept test rows whose kept rows reach the
        target; None when no split kept a row), "successes", "empty_splits" (splits that kept no test row: neither
        success nor failure), "coverage" / "agreement": {"mean", "low", "high"} (2.5th and 97.5th percentiles over
        splits; agreement over splits that kept rows),
        "shares": mean share per critic, "strongest_asked": mean share of rows the last critic judged,
        "no_selection": {"agreement", "success_rate"} of the last critic on every test row}``.

    Raises:
        ValueError: shapes, ``splits < 1`` or a calibration fraction that leaves an empty half.
    """
    base_conf, base_ok = _arrays(confidences, corrects)
    rows = base_conf.shape[1]
    n_cal = int(round(calibration_fraction * rows))
    if splits < 1 or not 0 < n_cal < rows:
        raise BadInputError(
            f"split_protocol needs splits >= 1 and both halves non-empty ({rows} rows, fraction "
            f"{calibration_fraction})"
        )
    rng = np.random.default_rng(seed)
    coverage, agreement, success, shares, last_asked, plain = [], [], [], [], [], []
    for _ in range(splits):
        order = rng.permutation(rows)
        cal, test = order[:n_cal], order[n_cal:]
        conf, ok, cal = _refitted(base_conf, base_ok, refit, cal)
        fitted = calibrate_cascade(
            conf[:, cal], ok[:, cal], alpha=alpha, delta=delta, min_rows=min_rows, bound=bound, shares=delta_shares
        )
        decided = cascade_decisions(conf[:, test], [f[0] for f in fitted])
        figures = selective_figures(decided, ok[:, test])
        coverage.append(figures["coverage"])
        if figures["agreement"] is not None:  # a split that keeps nothing is neither a success nor a failure
            success.append(figures["agreement"] >= 1 - alpha)
            agreement.append(figures["agreement"])
        shares.append(figures["shares"])
        last_asked.append(figures["asked"][-1] / len(test))
        plain.append(ok[-1, test].mean())

    def spread(values):
        if not values:
            return {"mean": None, "low": None, "high": None}
        return {
            "mean": float(np.mean(values)),
            "low": float(np.percentile(values, 2.5)),
            "high": float(np.percentile(values, 97.5)),
        }

    plain = np.asarray(plain)
    return {
        "target": 1 - alpha,
        "splits": splits,
        "success_rate": float(np.mean(success)) if success else None,
        "successes": int(np.sum(success)),
        "empty_splits": splits - len(agreement),
        "coverage": spread(coverage),
        "agreement": spread(agreement),
        "shares": np.mean(shares, axis=0).tolist(),
        "strongest_asked": float(np.mean(last_asked)),
        "no_selection": {"agreement": float(plain.mean()), "success_rate": float((plain >= 1 - alpha).mean())},
    }
