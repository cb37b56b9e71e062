"""One critic's verdicts compared by source (text, probability read-out, both orders combined), with baselines and
calibration.

A critique file written with ``--verdict probability`` or ``both`` carries, beside the verdict, the distribution it
was read from (:mod:`hf_critic.critic.verdicts`). This module puts the verdict sources of one file side by side:

* pointwise grading: pooled Pearson / Spearman / Kendall of the expected score and of the text score with the human
  scores, their within-question pairwise accuracy
  (:func:`~hf_critic.meta_eval.within_question.within_question_accuracy`), and the accuracy of the distribution's
  mode where the human scores lie on the critic's scale;
* pairwise comparison (CritiqueLLM v2 §4.4.2, Auto-J's protocol): agreement, consistency and first-order-only
  agreement of the text verdicts and of the first-order probability verdicts, the agreement of the combined
  distribution (both orders averaged before deciding, Wang et al. 2025 §3.2), next to the always-"response 1" and
  label-prior (most frequent human label) baselines of the same rows; where the human labels have no tie, the
  two-way accuracies (response 1 or 2, the tie option dropped: :func:`~hf_critic.meta_eval.agreement.two_way_decisions`);
  and the expected calibration error (ECE, Guo et al. 2017 §2: top-label confidence against accuracy in equal-width
  bins) of the combined distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, TIE, normalize_labels
from .agreement import TWO_WAY_MODES, pairwise_agreement
from .bootstrap import format_interval
from .correlation import critique_correlation
from .length import label_prior, pairwise_baselines, pointwise_length_baseline
from .within_question import within_question_accuracy

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
        raise BadInputError("expected_calibration_error needs equal lengths, confidences in [0, 1] and n_bins >= 1")
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
        bins.append(
            {
                "low": float(edges[b]),
                "high": float(edges[b + 1]),
                "count": count,
                "confidence": mean_conf,
                "accuracy": accuracy,
            }
        )
    return {"ece": float(ece) if len(conf) else float("nan"), "n": int(len(conf)), "bins": bins}


def _distributions(values: Sequence[str | None]) -> list[dict[str, float] | None]:
    return [schema.read_distribution(v) for v in values]


def _query_ids(dataset) -> list | None:
    """The rows' query ids: the ``query_id`` column, else the question's :func:`hf_critic.core.schema.query_id`; None
    without either."""
    if "query_id" in dataset.column_names:
        return list(dataset["query_id"])
    if schema.QUESTION in dataset.column_names:
        return [schema.query_id(q) for q in dataset[schema.QUESTION]]
    return None


_WITHIN = (
    "within_question_accuracy",
    "within_question_pairs",
    "within_question_ties",
    "within_question_pairs_unparsed",
)


def pointwise_verdict_figures(
    dataset, human_score: str = "human_score", *, query_ids: Sequence | None = None, bootstrap: int = 0, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Pooled correlation and within-question pairwise accuracy with the human scores per verdict source of a
    ``grade`` output.

    Args:
        dataset: a ``datasets.Dataset`` (or anything with ``column_names`` and ``__getitem__`` by column).
        human_score: the human (or GPT-4) score column.
        query_ids: the query of each row, shape ``(n,)``; None: the ``query_id`` column, else the question text's
            id, else all rows one query.
        bootstrap: resamples of the queries for a 95% interval of the within-question accuracy (0: none).
        seed: the bootstrap's seed.

    Returns:
        ``{source: {"pearson", "spearman", "kendall", "n", "n_without_verdict", "within_question_accuracy",
        "within_question_pairs", "within_question_ties", "within_question_pairs_unparsed", "text_pearson"?,
        "n_queries_used"?, "ci"?, "mode_accuracy"?}}`` with source ``"probability"`` (expected score) and
        ``"text"`` (parsed score) where the file has them, and the baseline ``"length"`` (the answer's length in
        words as its score, :func:`~hf_critic.meta_eval.length.pointwise_length_baseline`) with a ``response``
        column. ``pearson`` / ``spearman`` / ``kendall`` are pooled
        (row-level: all rows one sample, in [-1, 1]); with query ids, ``text_pearson`` is the text-level Pearson
        (mean over the ``n_queries_used`` queries, CritiqueLLM v2 §4.4.1); the within-question
        accuracy (in [0, 1], :func:`~hf_critic.meta_eval.within_question.within_question_accuracy`) orders every pair of
        one query's responses with different human scores, a critic tie counting half; ``ci``:
        ``{"within_question_accuracy": [low, high]}`` with ``bootstrap``. ``mode_accuracy`` (share of rows whose
        most probable verdict equals the human score) only when every human score is one of the allowed verdicts.
        Rows without a human score are left out.
    """
    columns = dataset.column_names
    human = dataset[human_score]
    queries = list(query_ids) if query_ids is not None else _query_ids(dataset)
    sources = {}
    if schema.CRITIQUE_DISTRIBUTION in columns:
        sources["probability"] = dataset[schema.CRITIQUE_SCORE]
        if schema.CRITIQUE_TEXT_SCORE in columns:
            sources["text"] = dataset[schema.CRITIQUE_TEXT_SCORE]
    else:
        sources["text"] = dataset[schema.CRITIQUE_SCORE]
    figures = {}
    for source, scores in sources.items():
        r = critique_correlation(scores, human, query_ids=queries)
        used = sum(p is not None and h is not None for p, h in zip(scores, human, strict=True))
        figures[source] = {
            "pearson": r["pooled_pearson"],
            "spearman": r["pooled_spearman"],
            "kendall": r["pooled_kendall"],
            "n": used,
            "n_without_verdict": r["n_unparsed"],
        }
        figures[source].update({k: r[k] for k in _WITHIN})
        if queries is not None:
            figures[source].update(text_pearson=r["text_pearson"], n_queries_used=r["n_queries_used"])
        if bootstrap and queries is not None:
            ci = within_question_accuracy(scores, human, queries, bootstrap=bootstrap, seed=seed)["ci"]
            figures[source]["ci"] = ci
    if schema.RESPONSE in columns:  # the answer's length as its score: the floor a critic must beat
        length = pointwise_length_baseline(dataset[schema.RESPONSE], human, queries)
        figures["length"] = {
            "pearson": length["pooled_pearson"],
            "spearman": length["pooled_spearman"],
            "kendall": length["pooled_kendall"],
            "n": sum(h is not None for h in human),
            "n_without_verdict": 0,
            **{k: length[k] for k in _WITHIN},
        }
        if queries is not None:
            figures["length"].update(text_pearson=length["text_pearson"], n_queries_used=length["n_queries_used"])
    if "probability" in figures:
        rows = [
            (d, h)
            for d, h in zip(_distributions(dataset[schema.CRITIQUE_DISTRIBUTION]), human, strict=True)
            if d and h is not None
        ]
        if (
            rows
            and all(str(int(h)) in d for d, h in rows if float(h).is_integer())
            and all(float(h).is_integer() for _, h in rows)
        ):
            hits = [max(d, key=d.get) == str(int(h)) for d, h in rows]
            figures["probability"]["mode_accuracy"] = float(np.mean(hits))
    return figures


def pairwise_verdict_figures(dataset, label: str = "label", n_bins: int = 10, two_way: str = "auto") -> dict[str, Any]:
    """Agreement figures per verdict source of a ``compare`` output, baselines, and calibration.

    Args:
        dataset: a ``compare`` output (``critique_*`` columns plus the human ``label`` column).
        label: the human label column (0 / 1 / 2 or any spelling :func:`normalize_labels` accepts).
        n_bins: bins of the reliability diagram.
        two_way: when to add the two-way accuracies, one of :data:`~hf_critic.meta_eval.agreement.TWO_WAY_MODES`:
            ``auto`` (default) when the human labels have no tie (chosen / rejected data), ``on``, ``off``.

    Returns:
        ``{"text": {agreement, consistency, first_order_agreement}?, "probability_first_order": {...}?,
        "combined": {"agreement"}?, "always_response_1": {"first_order_agreement"}, "label_prior":
        {"first_order_agreement", "label"}, "longer_wins": {...}?, "shorter_wins": {...}? (with the response texts:
        the longer / shorter response as the verdict, :func:`~hf_critic.meta_eval.length.pairwise_baselines`),
        "calibration": expected_calibration_error(...)?, "n": pairs, "verdict_source": "reward"?}`` (the last for an
        order-free reward critic, a ``critique_reward_2`` column: its one pass sits under ``probability_first_order``
        and it has no consistency to measure); figures
        are shares in [0, 1]. With the two-way figures (the critic's choice between response 1 and response 2
        alone, see :func:`~hf_critic.meta_eval.agreement.two_way_decisions`), also ``two_way_n`` (pairs without a
        gold tie, the only ones they count) and: ``two_way_accuracy`` in ``text`` (a tie verdict counts half),
        ``probability_first_order`` (from ``critique_distribution``: P(response 1) against P(response 2), the tie
        dropped) and both baselines; ``two_way_accuracy_combined`` in ``text`` (both orders' verdicts added) and
        ``combined`` (from ``critique_distribution_combined``). Rows without a human label are left out.

    Raises:
        ValueError: an unknown ``two_way`` mode.
    """
    if two_way not in TWO_WAY_MODES:
        raise BadInputError(f"two_way must be one of {TWO_WAY_MODES}, got {two_way!r}")
    columns = dataset.column_names
    human = normalize_labels(dataset[label], name=label)
    keep = human >= 0  # unparsed / missing labels are -1
    n = int(keep.sum())
    out: dict[str, Any] = {"n": n}
    if schema.CRITIQUE_REWARD_2 in columns:  # an order-free reward critic: one pass, consistency not applicable
        out["verdict_source"] = "reward"
    labels = human[keep].astype(int)
    counts = np.bincount(labels, minlength=3) if n else np.zeros(3, dtype=int)
    on = two_way == "on" or (two_way == "auto" and n > 0 and counts[TIE] == 0)
    mode = "on" if on else "off"
    three_way = ("agreement", "consistency", "first_order_agreement")

    def agreement(first, swapped, **distributions):
        r = pairwise_agreement(first, dataset[label], swapped_predictions=swapped, two_way=mode, **distributions)
        return {k: r[k] for k in (*three_way, "two_way_accuracy", "two_way_accuracy_combined") if k in r}

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
        combined_column = schema.CRITIQUE_DISTRIBUTION_COMBINED
        figures = agreement(
            first,
            dataset[schema.CRITIQUE_LABEL_SWAPPED] if swap else None,
            distributions=dataset[schema.CRITIQUE_DISTRIBUTION],
            combined_distributions=dataset[combined_column] if swap and combined_column in columns else None,
        )
        combined_two_way = figures.pop("two_way_accuracy_combined", None)
        out["probability_first_order"] = figures
        if swap:
            out["combined"] = {"agreement": agreement(dataset[schema.CRITIQUE_LABEL], None)["first_order_agreement"]}
            if combined_two_way is not None:
                out["combined"]["two_way_accuracy_combined"] = combined_two_way
        out["calibration"] = _pairwise_calibration(dataset, human, swap, n_bins)
    if schema.RESPONSE_1 in columns and schema.RESPONSE_2 in columns:  # length needs no critic either
        lengths = pairwise_baselines(human, dataset[schema.RESPONSE_1], dataset[schema.RESPONSE_2], two_way=mode)
        for key in ("longer_wins", "shorter_wins"):
            out[key] = {k: v for k, v in lengths[key].items() if k in ("first_order_agreement", "two_way_accuracy")}
    out.update(_label_baselines(counts, label_prior(labels)[0], n, on))
    return out


def _pairwise_calibration(dataset, human: np.ndarray, swap: bool, n_bins: int) -> dict[str, Any]:
    """:func:`expected_calibration_error` of the decided verdicts' probabilities (both orders combined with
    ``swap``) against the human labels; rows without a distribution, a verdict or a human label left out."""
    column = schema.CRITIQUE_DISTRIBUTION_COMBINED if swap else schema.CRITIQUE_DISTRIBUTION
    names = [LABEL_NAMES[k] for k in sorted(LABEL_NAMES)]
    conf, correct = [], []
    for d, decided, h in zip(_distributions(dataset[column]), dataset[schema.CRITIQUE_LABEL], human, strict=True):
        if d is None or decided is None or h < 0:
            continue
        conf.append(d[names[decided]])
        correct.append(decided == int(h))
    return expected_calibration_error(conf, correct, n_bins)


def _label_baselines(counts: np.ndarray, prior: int, n: int, on: bool) -> dict[str, Any]:
    """The baselines that need no critic, from the human labels' ``counts`` over ``n`` pairs and their label prior
    ``prior`` (a label code, :func:`~hf_critic.meta_eval.length.label_prior`): ``always_response_1`` and
    ``label_prior`` (their first-order agreement; with the two-way figures ``on``, their two-way accuracy and
    ``two_way_n``, the pairs without a gold tie)."""
    out: dict[str, Any] = {}
    out["always_response_1"] = {"first_order_agreement": float(counts[0] / n) if n else float("nan")}
    out["label_prior"] = {
        "first_order_agreement": float(counts[prior] / n) if n else float("nan"),
        "label": LABEL_NAMES[prior],
    }
    if on:
        decided = int(counts[0] + counts[1])  # pairs without a gold tie
        out["two_way_n"] = decided
        with np.errstate(invalid="ignore", divide="ignore"):
            out["always_response_1"]["two_way_accuracy"] = float(np.float64(counts[0]) / decided)
            prior_hits = 0.5 * decided if prior == TIE else counts[prior]  # a tie answer: half of each pair
            out["label_prior"]["two_way_accuracy"] = float(np.float64(prior_hits) / decided)
    return out


def figure_lines(figures: dict[str, Any], task: str, column: str, reward: bool = False) -> list[str]:
    """The figures of :func:`pointwise_verdict_figures` / :func:`pairwise_verdict_figures` as printed lines.

    ``reward``: the verdicts came from an order-free reward critic (a reward model: a ``critique_reward``
    column): named "reward", not "text" (its score column) or "probability" (its distribution), and its one pass is
    not called a "first order"."""
    if task == "grade":
        lines = []
        for source, f in figures.items():
            what = "reward" if reward else f"{source} verdicts"
            if source == "length":
                what = "baseline: the answer's length in words as its score"
            line = (
                f"vs {column} ({what}): row-level Pearson {f['pearson']:.3f}, Spearman "
                f"{f['spearman']:.3f}, Kendall {f['kendall']:.3f} over {f['n']} rows ({f['n_without_verdict']} "
                "without a verdict left out)"
            )
            if "text_pearson" in f:
                line += f"; text-level Pearson {f['text_pearson']:.3f} over {f['n_queries_used']} questions"
            if "within_question_accuracy" in f:
                ci = (f.get("ci") or {}).get("within_question_accuracy")
                finite = isinstance(ci, str) or (ci and not np.isnan(ci[0]))
                interval = format_interval(ci, lambda x: f"{100 * x:.1f}") if finite else ""
                line += (
                    f"; within-question accuracy {100 * f['within_question_accuracy']:.1f}%{interval} over "
                    f"{f['within_question_pairs']} pairs of one question's responses with different {column} "
                    f"({f['within_question_ties']} critic ties counted half, "
                    f"{f['within_question_pairs_unparsed']} with an unparsed score left out)"
                )
            if "mode_accuracy" in f:
                line += f"; mode of the distribution = {column}: {100 * f['mode_accuracy']:.1f}%"
            lines.append(line)
        return lines
    verdicts = "reward" if reward else "probability"
    names = {
        "text": "text verdicts",
        "probability_first_order": "reward, order-free" if reward else "probability, first order",
        "combined": f"{verdicts}, both orders combined",
        "always_response_1": "baseline always 'response 1'",
        "label_prior": "baseline label prior",
        "longer_wins": "baseline longer wins",
        "shorter_wins": "baseline shorter wins",
    }
    words = {"two_way_accuracy": "two-way accuracy", "two_way_accuracy_combined": "two-way accuracy (both orders)"}
    lines = []
    for key, name in names.items():
        if key not in figures:
            continue
        f = figures[key]
        parts = [f"{words.get(k, k.replace('_', ' '))} {100 * v:.2f}" for k, v in f.items() if isinstance(v, float)]
        extra = f" ('{f['label']}')" if "label" in f else ""
        lines.append(f"vs {column} ({name}{extra}): {', '.join(parts)} over {figures['n']} pairs")
    if "two_way_n" in figures:
        lines.append(
            f"two-way: the choice between response 1 and response 2 alone over the {figures['two_way_n']} pairs "
            "without a tie as gold label (from a verdict distribution: P(response 1) against P(response 2), the "
            "tie dropped; a tie verdict in text counts as half; --two-way auto|on|off)"
        )
    if "calibration" in figures:
        c = figures["calibration"]
        lines.append(
            f"calibration of the decided label: ECE {c['ece']:.3f} over {c['n']} pairs ({len(c['bins'])} bins)"
        )
    return lines
