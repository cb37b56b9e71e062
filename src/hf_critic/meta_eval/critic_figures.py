"""A critic's meta-evaluation figures from its critique file, in the papers' layouts (computed here, no file written).

How well critics agree with humans (behind ``hf-critic meta-eval``); the per-stage report of an Eval-Instruct run
(items, rejections, cost) is another thing, in :mod:`hf_critic.eval_instruct.stage_report`.

* **Table 2 layout** (CritiqueLLM v2 §4.4.1): text-level and system-level Pearson r / Spearman ρ / Kendall τ of
  each critic's pointwise grades against human scores, one column group per dataset (e.g. AlignBench
  referenced and reference-free);
* **within-question pairwise accuracy** of pointwise grades (does the critic score a question's better answer
  above its worse one? :func:`~hf_critic.meta_eval.within_question.within_question_accuracy`), beside text-level and
  row-level (pooled) correlation;
* **Table 3 layout** (v2 §4.4.2): agreement and consistency of pairwise verdicts under order swap, per dataset;
  where the human labels have no tie, also the **two-way accuracy** (response 1 or response 2, the tie option
  dropped; :func:`~hf_critic.meta_eval.agreement.two_way_decisions`);
* **per-category breakdown** (v1 Figure 2: text-level Pearson per AlignBench task; agreement per category for
  pairwise data), as a table and as grouped bars;
* **parse-failure rate** of every run (critiques without a score or label are never given one: they are left
  out of correlations and count as wrong in agreement, see :mod:`hf_critic.meta_eval.agreement`);
* **abstentions**: a cascade's rows that no critic was confident enough to keep (status ``abstained``) are neither
  unparsed nor wrong: they are counted apart (``n_abstained``), every figure is of the decided rows, and the
  coverage (decided / all rows) stands beside them;
* **score confusion heat map** per run: human score (rows) against critic score (columns, rounded to integers,
  plus an "unparsed" column); for pairwise runs, human label against verdict (counts; the heat map is drawn by
  :mod:`hf_critic.reports.critic_plots`).

:func:`evaluate_critiques` turns one critique dataset (the output of :meth:`hf_critic.critic.Critic.grade` /
``compare``, or a file written by ``hf-critic grade`` / ``compare``) into a
:class:`~hf_critic.meta_eval.run_result.RunResult`;
:func:`hf_critic.reports.meta_eval_report.write_report` writes ``report.md``, ``report.json`` and the plots for a list
of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import normalize_labels, swap_codes
from ..loaders.annotators import annotator_agreement
from .agreement import pairwise_agreement
from .correlation import critique_correlation
from .critic_extras import PPISpec, pairwise_extras, pointwise_extras
from .risk_coverage import risk_coverage_report
from .run_result import LABEL_SHORT, RunResult
from .verdict_sources import pairwise_verdict_figures, pointwise_verdict_figures

__all__ = ["PPISpec", "evaluate_critiques"]


def _column(dataset, name: str | None) -> list | None:
    return dataset[name] if name and name in dataset.column_names else None


def _score_confusion(human: np.ndarray, critic: np.ndarray) -> dict[str, Any]:
    """Counts of (rounded human score, rounded critic score or 'unparsed'); vectorised with np.unique."""
    keep = np.isfinite(human)
    human, critic = np.rint(human[keep]).astype(int), critic[keep]
    parsed = np.isfinite(critic)
    rows = sorted(set(human.tolist()))
    columns = sorted(set(np.rint(critic[parsed]).astype(int).tolist()))
    counts = np.zeros((len(rows), len(columns) + 1), dtype=int)
    r = np.searchsorted(rows, human)
    c = np.full(len(critic), len(columns))
    c[parsed] = np.searchsorted(columns, np.rint(critic[parsed]).astype(int))
    np.add.at(counts, (r, c), 1)
    return {
        "rows": [str(v) for v in rows],
        "columns": [str(v) for v in columns] + ["unparsed"],
        "counts": counts.tolist(),
        "row_title": "human score",
        "column_title": "critic score",
    }


def _label_confusion(human: np.ndarray, verdict: np.ndarray) -> dict[str, Any]:
    counts = np.zeros((3, 4), dtype=int)
    keep = human >= 0
    np.add.at(counts, (human[keep], np.where(verdict[keep] >= 0, verdict[keep], 3)), 1)
    return {
        "rows": [LABEL_SHORT[k] for k in range(3)],
        "columns": [LABEL_SHORT[k] for k in range(3)] + ["unparsed"],
        "counts": counts.tolist(),
        "row_title": "human label",
        "column_title": "critic verdict (original order)",
    }


def evaluate_critiques(
    dataset,
    critic: str,
    name: str,
    *,
    human_score: str = "human_score",
    label: str = "label",
    category: str | None = "category",
    swapped_mapped_back: bool = True,
    unparsed: str = "wrong",
    bootstrap: int = 0,
    seed: int = 0,
    annotators: Sequence[str] = (),
    two_way: str = "auto",
    ppi: PPISpec | None = None,
) -> RunResult:
    """Meta-evaluate one critique dataset against its human scores or labels.

    Args:
        dataset: a ``datasets.Dataset`` with the schema's critique columns: ``critique_score`` (pointwise) or
            ``critique_label`` and optionally ``critique_label_swapped`` (pairwise), plus the human column.
            ``query_id`` groups responses for text-level correlation (default: the question text),
            ``system_id`` (or ``model``) enables system-level correlation.
        critic: the critic's name in the report.
        name: the dataset's name in the report.
        human_score: the human score column (pointwise).
        label: the human label column (pairwise).
        category: the category column for the breakdown (None or absent: no breakdown).
        swapped_mapped_back: see :func:`hf_critic.meta_eval.agreement.pairwise_agreement` (hf-critic's own columns are).
        unparsed: the policy for unparsed pairwise verdicts (``wrong``, ``tie``, ``drop``), see
            :data:`hf_critic.meta_eval.agreement.UNPARSED_POLICIES`; pointwise correlations always leave
            unparsed scores out (a correlation has no "wrong").
        bootstrap: resamples for 95% confidence intervals on every headline and per-category figure (0: none).
        seed: the bootstrap's seed.
        annotators: several annotators' columns (codes 0 / 1 / 2 or scores, as
            :func:`hf_critic.loaders.generic.gold_labels` leaves them): their agreement with the gold column (their
            aggregate) is the human ceiling.
        two_way: pairwise: when to add the two-way accuracies (``auto``: when the human labels have no tie;
            ``on``; ``off``), see :func:`hf_critic.meta_eval.agreement.pairwise_agreement`. They are read from
            ``critique_distribution`` (first order) and ``critique_distribution_combined`` (both orders, with
            ``--swap``) where the file has them (P(response 1) against P(response 2), the tie dropped), else from
            the labels (a tie verdict counts as half).
        ppi: which rows count as human-labelled for prediction-powered inference (``--ppi``); None: no PPI.

    Returns:
        A :class:`RunResult` (with its baselines, agreement beyond chance, length and position figures). Rows whose
        ``critique_status`` is ``abstained`` (a cascade kept no verdict) are left out of every figure and counted in
        ``n_abstained`` (and, where there are any, in ``metrics["n_abstained"]`` beside ``metrics["coverage"]``, the
        share of rows with a decided verdict).

    Raises:
        ValueError: no critique column, the human column is missing, or every row was abstained.
    """
    dataset, abstained = _without_abstained(dataset, name)
    result = _evaluate(
        dataset,
        critic,
        name,
        human_score=human_score,
        label=label,
        category=category,
        swapped_mapped_back=swapped_mapped_back,
        unparsed=unparsed,
        bootstrap=bootstrap,
        seed=seed,
        annotators=annotators,
        two_way=two_way,
        ppi=ppi,
    )
    if abstained:  # a cascade's output: the figures above are of the decided rows
        result.n_abstained = abstained
        result.metrics.update(n_abstained=abstained, coverage=result.coverage)
    return result


def _without_abstained(dataset, name: str):
    """``(dataset without its abstained rows, how many were abstained)``.

    Raises:
        ValueError: every row was abstained (nothing decided to evaluate).
    """
    statuses = _column(dataset, schema.CRITIQUE_STATUS)
    if statuses is None:
        return dataset, 0
    decided = [i for i, s in enumerate(statuses) if s != schema.ParseStatus.ABSTAINED.value]
    abstained = len(statuses) - len(decided)
    if abstained and not decided:
        raise BadInputError(
            f"{name}: all {abstained} rows were abstained (no critic of the cascade kept a verdict): "
            "no decided row to evaluate"
        )
    return (dataset.select(decided) if abstained else dataset), abstained


def _evaluate(
    dataset,
    critic,
    name,
    *,
    human_score,
    label,
    category,
    swapped_mapped_back,
    unparsed,
    bootstrap,
    seed,
    annotators,
    two_way,
    ppi,
) -> RunResult:
    """:func:`evaluate_critiques` on the decided rows."""
    columns = dataset.column_names
    categories = _column(dataset, category)
    figures = {"bootstrap": bootstrap, "seed": seed}
    if schema.CRITIQUE_SCORE in columns:
        if human_score not in columns:
            raise BadInputError(f"{name}: human score column {human_score!r} missing (have {columns})")
        return _pointwise_run(
            dataset,
            critic,
            name,
            human_score=human_score,
            categories=categories,
            unparsed=unparsed,
            bootstrap=bootstrap,
            figures=figures,
            annotators=annotators,
            ppi=ppi,
        )
    if schema.CRITIQUE_LABEL in columns:
        if label not in columns:
            raise BadInputError(f"{name}: human label column {label!r} missing (have {columns})")
        return _pairwise_run(
            dataset,
            critic,
            name,
            label=label,
            categories=categories,
            swapped_mapped_back=swapped_mapped_back,
            unparsed=unparsed,
            bootstrap=bootstrap,
            figures=figures,
            annotators=annotators,
            two_way=two_way,
            ppi=ppi,
        )
    raise BadInputError(
        f"{name}: no {schema.CRITIQUE_SCORE!r} or {schema.CRITIQUE_LABEL!r} column: not a critique file"
    )


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def _per_category_correlation(pred, human, categories, queries, figures) -> dict[str, dict[str, Any]]:
    """Text-level correlation and within-question accuracy per category (CritiqueLLM v1 Figure 2); {} without."""
    per_category: dict[str, dict[str, Any]] = {}
    if categories is None:
        return per_category
    cats = np.asarray([str(c) for c in categories], dtype=object)
    queries_arr = np.asarray(queries, dtype=object)
    for cat in dict.fromkeys(cats.tolist()):  # one call per category, not per row
        m = cats == cat
        r = critique_correlation(pred[m], human[m], query_ids=queries_arr[m], **figures)
        keys = (
            "text_pearson",
            "text_spearman",
            "text_kendall",
            "n_queries_used",
            "n_rows",
            "within_question_accuracy",
            "within_question_pairs",
            "ci",
            "ci_dropped",
        )
        per_category[cat] = {k: r[k] for k in keys if k in r}
    return per_category


def _annotator_correlation(dataset, annotators: Sequence[str], human, queries) -> dict[str, dict[str, float]]:
    """Each annotator's text-level Pearson with the gold scores, and their mean: the human ceiling ({} without)."""
    ceiling = {}
    for annotator in annotators:
        r = critique_correlation(np.asarray(dataset[annotator], dtype=float), human, query_ids=queries)
        ceiling[annotator] = {"text_pearson": r["text_pearson"], "n": r["n_queries_used"]}
    if ceiling:
        ceiling["mean"] = {"text_pearson": float(np.nanmean([v["text_pearson"] for v in ceiling.values()]))}
    return ceiling


def _numbers(dataset, column: str) -> np.ndarray:
    """A column of scores as floats (None: NaN); ValueError naming the first row that holds no number."""
    values = dataset[column][:]
    try:
        return np.asarray([np.nan if v is None else v for v in values], dtype=float)
    except (TypeError, ValueError):
        row = next(i for i, v in enumerate(values) if v is not None and not isinstance(v, (int, float)))
        raise BadInputError(f"row {row}: {column} {values[row]!r} is not a number") from None


def _pointwise_run(
    dataset, critic, name, *, human_score, categories, unparsed, bootstrap, figures, annotators, ppi=None
) -> RunResult:
    """The :class:`RunResult` of a pointwise critique file (see :func:`evaluate_critiques`)."""
    referenced = schema.REFERENCE in dataset.column_names
    probability = schema.CRITIQUE_DISTRIBUTION in dataset.column_names
    queries = _column(dataset, "query_id") or [schema.query_id(q) for q in dataset[schema.QUESTION]]
    systems = _column(dataset, "system_id") or _column(dataset, "model")
    pred, human = _numbers(dataset, schema.CRITIQUE_SCORE), _numbers(dataset, human_score)
    metrics = critique_correlation(pred, human, query_ids=queries, system_ids=systems, **figures)
    per_category = _per_category_correlation(pred, human, categories, queries, figures)
    ceiling = _annotator_correlation(dataset, annotators, human, queries)
    extras = pointwise_extras(dataset, pred, human, queries, systems, annotators=annotators, ppi=ppi)
    return RunResult(
        critic=critic,
        dataset=name,
        task="pointwise",
        referenced=referenced,
        n_rows=len(pred),
        n_critiques=len(pred),
        n_unparsed=int(metrics["n_unparsed"]),
        metrics=metrics,
        per_category=per_category,
        confusion=_score_confusion(human, pred),
        unparsed=unparsed,
        bootstrap=bootstrap,
        ceiling=ceiling,
        verdicts=pointwise_verdict_figures(dataset, human_score, query_ids=queries) if probability else {},
        **extras,
    )


def _pairwise_run(
    dataset,
    critic,
    name,
    *,
    label,
    categories,
    swapped_mapped_back,
    unparsed,
    bootstrap,
    figures,
    annotators,
    two_way,
    ppi=None,
) -> RunResult:
    """The :class:`RunResult` of a pairwise critique file (see :func:`evaluate_critiques`)."""
    referenced = schema.REFERENCE in dataset.column_names
    probability = schema.CRITIQUE_DISTRIBUTION in dataset.column_names
    swapped = _column(dataset, schema.CRITIQUE_LABEL_SWAPPED)
    # Probability read-outs with --swap: Table 3 (agreement, consistency) is of each order's own decision;
    # the both-orders-combined decision (critique_label) is in the verdict-sources table.
    first = _column(dataset, schema.CRITIQUE_LABEL_FIRST) or dataset[schema.CRITIQUE_LABEL]
    combined = _column(dataset, schema.CRITIQUE_DISTRIBUTION_COMBINED) if swapped is not None else None
    result = pairwise_agreement(
        first,
        dataset[label],
        swapped,
        swapped_mapped_back=swapped_mapped_back,
        groups=[str(c) for c in categories] if categories is not None else None,
        unparsed=unparsed,
        two_way=two_way,
        distributions=_column(dataset, schema.CRITIQUE_DISTRIBUTION),
        combined_distributions=combined,
        **figures,
    )
    per_group = result.pop("per_group", {})
    n_pairs = result["n"] + result["n_dropped"]
    n_critiques = n_pairs * (2 if swapped is not None else 1)
    n_unparsed = result["n_unparsed"] + result.get("n_unparsed_swapped", 0)
    verdicts = normalize_labels(first, name="critique_label")
    humans = normalize_labels(dataset[label], name=label)
    ceiling = annotator_agreement({a: normalize_labels(dataset[a], name=a) for a in annotators}, humans)
    if swapped is not None and not swapped_mapped_back:
        swapped = swap_codes(normalize_labels(swapped, name=schema.CRITIQUE_LABEL_SWAPPED))
    extras = pairwise_extras(
        dataset,
        label=label,
        first=first,
        swapped=swapped,
        unparsed=unparsed,
        two_way=two_way,
        distributions=_column(dataset, schema.CRITIQUE_DISTRIBUTION),
        combined=combined,
        annotators=annotators,
        ppi=ppi,
    )
    risk, curves = _risk_coverage(dataset, critic, label, bootstrap, figures["seed"])
    return RunResult(
        critic=critic,
        dataset=name,
        task="pairwise",
        referenced=referenced,
        n_rows=n_pairs,
        n_critiques=n_critiques,
        n_unparsed=n_unparsed,
        metrics=result,
        per_category={str(k): v for k, v in per_group.items()},
        confusion=_label_confusion(humans, verdicts),
        unparsed=unparsed,
        bootstrap=bootstrap,
        ceiling=ceiling,
        verdicts=pairwise_verdict_figures(dataset, label, two_way=two_way) if probability else {},
        risk_coverage=risk,
        risk_curves=curves,
        **extras,
    )


def _risk_coverage(dataset, critic: str, label: str, bootstrap: int, seed: int) -> tuple[dict, dict]:
    """The run's risk-coverage block (with the baselines') and curves: the decided label (``critique_label``) and its
    ``critique_confidence``, or the confidence its verdict source gives (:func:`hf_critic.selective.confidence_of`)."""
    from ..selective import confidence_of

    columns = {c: dataset[c] for c in dataset.column_names if c.startswith("critique_")}
    confidence = columns.get(schema.CRITIQUE_CONFIDENCE) or confidence_of(columns)[0]
    texts = [_column(dataset, c) for c in (schema.RESPONSE_1, schema.RESPONSE_2)]
    blocks, curves = risk_coverage_report(
        {critic: (normalize_labels(columns[schema.CRITIQUE_LABEL], name=schema.CRITIQUE_LABEL).tolist(), confidence)},
        dataset[label],
        questions=_column(dataset, "query_id") or _column(dataset, schema.QUESTION),
        response_1=texts[0],
        response_2=texts[1],
        resamples=bootstrap,
        seed=seed,
    )
    return {**blocks.pop(critic), "baselines": blocks}, curves
