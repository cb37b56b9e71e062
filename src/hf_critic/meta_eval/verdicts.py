"""One critic's verdicts compared by source (text, probability read-out, both orders combined), with baselines and
calibration.

A critique file written with ``--verdict probability`` or ``both`` carries, beside the verdict, the distribution it
was read from (:mod:`hf_critic.verdicts`). This module puts the verdict sources of one file side by side:

* pointwise grading: pooled Pearson / Spearman / Kendall of the expected score and of the text score with the human
  scores, and the accuracy of the distribution's mode where the human scores lie on the critic's scale;
* pairwise comparison (CritiqueLLM v2 §4.4.2, Auto-J's protocol): agreement, consistency and first-order-only
  agreement of the text verdicts and of the first-order probability verdicts, the agreement of the combined
  distribution (both orders averaged before deciding, Wang et al. 2025 §3.2), next to the always-"response 1" and
  label-prior (most frequent human label) baselines of the same rows; and the expected calibration error (ECE,
  Guo et al. 2017 §2: top-label confidence against accuracy in equal-width bins) of the combined distribution.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import schema
from .agreement import normalize_labels, pairwise_agreement
from .correlation import critique_correlation

__all__ = ["expected_calibration_error", "pairwise_verdict_figures", "pointwise_verdict_figures"]


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = 10) -> dict:
    """Top-label expected calibration error (Guo et al., 2017, §2, Eq. 3) and the reliability-diagram bins.

    Args:
        confidences: probability of the decided label per row, in [0, 1], shape ``(n,)``.
        correct: whether the decided label equals the human label, shape ``(n,)``.
        n_bins: equal-width confidence bins over [0, 1] (>= 1).

    Returns:
        ``{"ece": float in [0, 1] (NaN without rows), "n": rows, "bins": [{"low", "high", "count", "confidence",
        "accuracy"}, ...]}``; empty bins have count 0 and NaN means.

    Raises:
        ValueError: different lengths, confidences outside [0, 1], or ``n_bins < 1``.
    """
    conf, ok = np.asarray(confidences, dtype=float), np.asarray(correct, dtype=bool)
    if conf.shape != ok.shape or n_bins < 1 or ((conf < 0) | (conf > 1)).any():
        raise ValueError("expected_calibration_error needs equal lengths, confidences in [0, 1] and n_bins >= 1")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    index = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    bins, ece = [], 0.0
    for b in range(n_bins):
        mask = index == b
        count = int(mask.sum())
        mean_conf = float(conf[mask].mean()) if count else float("nan")
        accuracy = float(ok[mask].mean()) if count else float("nan")
        if count:
            ece += count / len(conf) * abs(accuracy - mean_conf)
        bins.append({"low": float(edges[b]), "high": float(edges[b + 1]), "count": count,
                     "confidence": mean_conf, "accuracy": accuracy})  # fmt: skip
    return {"ece": float(ece) if len(conf) else float("nan"), "n": int(len(conf)), "bins": bins}


def _distributions(values: Sequence[str | None]) -> list[dict[str, float] | None]:
    return [None if v is None else json.loads(v) for v in values]


def pointwise_verdict_figures(dataset, human_score: str = "human_score") -> dict[str, dict[str, Any]]:
    """Pooled correlation with the human scores per verdict source of a ``grade`` output.

    Args:
        dataset: a ``datasets.Dataset`` (or anything with ``column_names`` and ``__getitem__`` by column).
        human_score: the human (or GPT-4) score column.

    Returns:
        ``{source: {"pearson", "spearman", "kendall", "n", "n_without_verdict", "mode_accuracy"?}}`` with source
        ``"probability"`` (expected score) and ``"text"`` (parsed score) where the file has them; ``mode_accuracy``
        (share of rows whose most probable verdict equals the human score) only when every human score is one of the
        allowed verdicts. Rows without a human score are left out.
    """
    columns = dataset.column_names
    human = dataset[human_score]
    sources = {}
    if schema.CRITIQUE_DISTRIBUTION in columns:
        sources["probability"] = dataset[schema.CRITIQUE_SCORE]
        if schema.CRITIQUE_TEXT_SCORE in columns:
            sources["text"] = dataset[schema.CRITIQUE_TEXT_SCORE]
    else:
        sources["text"] = dataset[schema.CRITIQUE_SCORE]
    figures = {}
    for source, scores in sources.items():
        r = critique_correlation(scores, human)
        used = sum(p is not None and h is not None for p, h in zip(scores, human, strict=True))
        figures[source] = {"pearson": r["text_pearson"], "spearman": r["text_spearman"], "kendall": r["text_kendall"],
                           "n": used, "n_without_verdict": r["n_unparsed"]}  # fmt: skip
    if "probability" in figures:
        rows = [(d, h) for d, h in zip(_distributions(dataset[schema.CRITIQUE_DISTRIBUTION]), human, strict=True)
                if d and h is not None]  # fmt: skip
        if (
            rows
            and all(str(int(h)) in d for d, h in rows if float(h).is_integer())
            and all(float(h).is_integer() for _, h in rows)
        ):
            hits = [max(d, key=d.get) == str(int(h)) for d, h in rows]
            figures["probability"]["mode_accuracy"] = float(np.mean(hits))
    return figures


def pairwise_verdict_figures(dataset, label: str = "label", n_bins: int = 10) -> dict[str, Any]:
    """Agreement figures per verdict source of a ``compare`` output, baselines, and calibration.

    Args:
        dataset: a ``compare`` output (``critique_*`` columns plus the human ``label`` column).
        label: the human label column (0 / 1 / 2 or any spelling :func:`normalize_labels` accepts).
        n_bins: bins of the reliability diagram.

    Returns:
        ``{"text": {agreement, consistency, first_order_agreement}?, "probability_first_order": {...}?,
        "combined": {"agreement"}?, "always_response_1": {"first_order_agreement"}, "label_prior":
        {"first_order_agreement", "label"}, "calibration": expected_calibration_error(...)?, "n": pairs}``; figures
        are shares in [0, 1]. Rows without a human label are left out.
    """
    columns = dataset.column_names
    human = normalize_labels(dataset[label], name=label)
    keep = human >= 0  # unparsed / missing labels are -1
    n = int(keep.sum())
    out: dict[str, Any] = {"n": n}

    def agreement(first, swapped):
        r = pairwise_agreement(first, dataset[label], swapped_predictions=swapped)
        keys = (
            ("agreement", "consistency", "first_order_agreement")
            if swapped is not None
            else ("first_order_agreement",)
        )
        return {k: r[k] for k in keys}

    probability = schema.CRITIQUE_DISTRIBUTION in columns
    swap = schema.CRITIQUE_LABEL_SWAPPED in columns
    if not probability:
        out["text"] = agreement(
            dataset[schema.CRITIQUE_LABEL], dataset[schema.CRITIQUE_LABEL_SWAPPED] if swap else None
        )
    else:
        text = schema.text_column(schema.CRITIQUE_LABEL)
        if text in columns:
            swapped_text = schema.text_column(schema.CRITIQUE_LABEL_SWAPPED)
            out["text"] = agreement(dataset[text], dataset[swapped_text] if swapped_text in columns else None)
        first = dataset[schema.CRITIQUE_LABEL_FIRST] if swap else dataset[schema.CRITIQUE_LABEL]
        out["probability_first_order"] = agreement(first, dataset[schema.CRITIQUE_LABEL_SWAPPED] if swap else None)
        if swap:
            out["combined"] = {"agreement": agreement(dataset[schema.CRITIQUE_LABEL], None)["first_order_agreement"]}
        column = schema.CRITIQUE_DISTRIBUTION_COMBINED if swap else schema.CRITIQUE_DISTRIBUTION
        names = [schema.LABEL_NAMES[k] for k in sorted(schema.LABEL_NAMES)]
        conf, correct = [], []
        for d, decided, h in zip(_distributions(dataset[column]), dataset[schema.CRITIQUE_LABEL], human, strict=True):
            if d is None or decided is None or h < 0:
                continue
            conf.append(d[names[decided]])
            correct.append(decided == int(h))
        out["calibration"] = expected_calibration_error(conf, correct, n_bins)
    labels = human[keep].astype(int)
    counts = np.bincount(labels, minlength=3) if n else np.zeros(3, dtype=int)
    out["always_response_1"] = {"first_order_agreement": float(counts[0] / n) if n else float("nan")}
    prior = int(np.argmax(counts))
    out["label_prior"] = {"first_order_agreement": float(counts[prior] / n) if n else float("nan"),
                          "label": schema.LABEL_NAMES[prior]}  # fmt: skip
    return out


def figure_lines(figures: dict[str, Any], task: str, column: str) -> list[str]:
    """The figures of :func:`pointwise_verdict_figures` / :func:`pairwise_verdict_figures` as printed lines."""
    if task == "grade":
        lines = []
        for source, f in figures.items():
            line = (f"vs {column} ({source} verdicts): Pearson {f['pearson']:.3f}, Spearman {f['spearman']:.3f}, "
                    f"Kendall {f['kendall']:.3f} over {f['n']} rows ({f['n_without_verdict']} without a verdict left out)")  # fmt: skip
            if "mode_accuracy" in f:
                line += f"; mode of the distribution = {column}: {100 * f['mode_accuracy']:.1f}%"
            lines.append(line)
        return lines
    names = {"text": "text verdicts", "probability_first_order": "probability, first order",
             "combined": "probability, both orders combined", "always_response_1": "baseline always 'response 1'",
             "label_prior": "baseline label prior"}  # fmt: skip
    lines = []
    for key, name in names.items():
        if key not in figures:
            continue
        f = figures[key]
        parts = [f"{k.replace('_', ' ')} {100 * v:.2f}" for k, v in f.items() if isinstance(v, float)]
        extra = f" ('{f['label']}')" if "label" in f else ""
        lines.append(f"vs {column} ({name}{extra}): {', '.join(parts)} over {figures['n']} pairs")
    if "calibration" in figures:
        c = figures["calibration"]
        lines.append(
            f"calibration of the decided label: ECE {c['ece']:.3f} over {c['n']} pairs ({len(c['bins'])} bins)"
        )
    return lines
