"""Meta-evaluation reports in the papers' layouts: Markdown, JSON and PNG plots, several critics side by side.

How well critics agree with humans (behind ``hf-critic meta-eval``); the per-stage report of an Eval-Instruct run
(items, rejections, cost) is another thing, in :mod:`hf_critic.eval_instruct.stage_report`.

* **Table 2 layout** (CritiqueLLM v2 §4.4.1): text-level and system-level Pearson r / Spearman ρ / Kendall τ of
  each critic's pointwise grades against human scores, one column group per dataset (e.g. AlignBench
  referenced and reference-free);
* **within-question pairwise accuracy** of pointwise grades (does the critic score a question's better answer
  above its worse one? :func:`~hf_critic.meta_eval.correlation.within_question_accuracy`), beside text-level and
  row-level (pooled) correlation;
* **Table 3 layout** (v2 §4.4.2): agreement and consistency of pairwise verdicts under order swap, per dataset;
  where the human labels have no tie, also the **two-way accuracy** (response 1 or response 2, the tie option
  dropped; :func:`~hf_critic.meta_eval.agreement.two_way_decisions`);
* **per-category breakdown** (v1 Figure 2: text-level Pearson per AlignBench task; agreement per category for
  pairwise data), as a table and as grouped bars;
* **parse-failure rate** of every run (critiques without a score or label are never given one: they are left
  out of correlations and count as wrong in agreement, see :mod:`hf_critic.meta_eval.agreement`);
* **score confusion heat map** per run: human score (rows) against critic score (columns, rounded to integers,
  plus an "unparsed" column); for pairwise runs, human label against verdict.

:func:`evaluate_critiques` turns one critique dataset (the output of :meth:`hf_critic.critic.Critic.grade` /
``compare``, or a file written by ``hf-critic grade`` / ``compare``) into a :class:`RunResult`;
:func:`write_report` writes ``report.md``, ``report.json`` and the plots for a list of them.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import schema
from ..io import write_text
from ..labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE, normalize_labels
from ..loaders.annotators import annotator_agreement
from .agreement import pairwise_agreement
from .correlation import critique_correlation
from .verdicts import pairwise_verdict_figures, pointwise_verdict_figures

__all__ = ["RunResult", "evaluate_critiques", "render_markdown", "write_report"]

_LABEL_SHORT = {RESPONSE_1_WINS: "resp. 1", RESPONSE_2_WINS: "resp. 2", TIE: "tie"}


@dataclass
class RunResult:
    """The meta-evaluation of one critic on one dataset.

    Attributes:
        critic: the critic's name (column of the side-by-side tables).
        dataset: the dataset's name.
        task: ``"pointwise"`` or ``"pairwise"``.
        referenced: whether the critic saw a reference answer (a ``reference`` column was present).
        n_rows: rows (responses or pairs) evaluated.
        n_critiques: critiques generated (pairs × 2 when both orders were judged).
        n_unparsed: critiques without a score / label; ``parse_failure_rate = n_unparsed / n_critiques``.
        metrics: :func:`hf_critic.meta_eval.correlation.critique_correlation` (pointwise) or
            :func:`hf_critic.meta_eval.agreement.pairwise_agreement` (pairwise) output, without ``per_group``.
        per_category: ``{category: {...}}``: text-level r / ρ / τ and query counts, or agreement / consistency / n.
        confusion: ``{"rows", "columns", "counts", "row_title", "column_title"}`` for the heat map.
        unparsed: the ``--unparsed`` policy the pairwise figures follow (``wrong``, ``tie`` or ``drop``).
        bootstrap: bootstrap resamples behind the confidence intervals in ``metrics["ci"]`` (0: none).
        ceiling: several annotators' agreement with their aggregate (the human ceiling), ``{annotator:
            {"agreement" or "text_pearson", "n"}}`` plus ``"mean"``; empty with one gold column.
        verdicts: for critique files with probability read-outs (``--verdict probability`` / ``both``): the verdict
            sources side by side, :func:`hf_critic.meta_eval.verdicts.pointwise_verdict_figures` /
            :func:`~hf_critic.meta_eval.verdicts.pairwise_verdict_figures` (baselines and calibration included);
            empty otherwise.
    """

    critic: str
    dataset: str
    task: str
    referenced: bool
    n_rows: int
    n_critiques: int
    n_unparsed: int
    metrics: dict[str, Any]
    per_category: dict[str, dict[str, Any]] = field(default_factory=dict)
    confusion: dict[str, Any] = field(default_factory=dict)
    unparsed: str = "wrong"
    bootstrap: int = 0
    ceiling: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdicts: dict[str, Any] = field(default_factory=dict)

    @property
    def parse_failure_rate(self) -> float:
        """Share of critiques without a score / label, in [0, 1] (NaN when there are none)."""
        return self.n_unparsed / self.n_critiques if self.n_critiques else math.nan


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
        "rows": [_LABEL_SHORT[k] for k in range(3)],
        "columns": [_LABEL_SHORT[k] for k in range(3)] + ["unparsed"],
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

    Returns:
        A :class:`RunResult`.

    Raises:
        ValueError: no critique column, or the human column is missing.
    """
    columns = dataset.column_names
    referenced = schema.REFERENCE in columns
    categories = _column(dataset, category)
    figures = {"bootstrap": bootstrap, "seed": seed}
    probability = schema.CRITIQUE_DISTRIBUTION in columns
    if schema.CRITIQUE_SCORE in columns:
        if human_score not in columns:
            raise ValueError(f"{name}: human score column {human_score!r} missing (have {columns})")
        queries = _column(dataset, "query_id") or [schema.query_id(q) for q in dataset[schema.QUESTION]]
        systems = _column(dataset, "system_id") or _column(dataset, "model")
        pred = np.asarray(dataset[schema.CRITIQUE_SCORE], dtype=float)
        human = np.asarray(dataset[human_score], dtype=float)
        metrics = critique_correlation(pred, human, query_ids=queries, system_ids=systems, **figures)
        per_category: dict[str, dict[str, Any]] = {}
        if categories is not None:
            cats = np.asarray([str(c) for c in categories], dtype=object)
            queries_arr = np.asarray(queries, dtype=object)
            for cat in dict.fromkeys(cats.tolist()):  # one call per category, not per row
                m = cats == cat
                r = critique_correlation(pred[m], human[m], query_ids=queries_arr[m], **figures)
                keys = ("text_pearson", "text_spearman", "text_kendall", "n_queries_used", "n_rows",
                        "within_question_accuracy", "within_question_pairs", "ci")  # fmt: skip
                per_category[cat] = {k: r[k] for k in keys if k in r}
        ceiling = {}
        for annotator in annotators:
            r = critique_correlation(np.asarray(dataset[annotator], dtype=float), human, query_ids=queries)
            ceiling[annotator] = {"text_pearson": r["text_pearson"], "n": r["n_queries_used"]}
        if ceiling:
            ceiling["mean"] = {"text_pearson": float(np.nanmean([v["text_pearson"] for v in ceiling.values()]))}
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
        )
    if schema.CRITIQUE_LABEL in columns:
        if label not in columns:
            raise ValueError(f"{name}: human label column {label!r} missing (have {columns})")
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
        )
    raise ValueError(f"{name}: no {schema.CRITIQUE_SCORE!r} or {schema.CRITIQUE_LABEL!r} column: not a critique file")


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def _f(value: Any, digits: int = 3, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.2f}" if percent else f"{value:.{digits}f}"


def _fci(values: dict[str, Any], key: str, percent: bool = False) -> str:
    """A figure with its bootstrap interval when there is one: ``54.96 [52.30, 57.61]``."""
    text = _f(values.get(key), percent=percent)
    interval = (values.get("ci") or {}).get(key)
    if interval and text != "–":
        text += f" [{_f(interval[0], percent=percent)}, {_f(interval[1], percent=percent)}]"
    return text


def _setting(result: RunResult) -> str:
    return "referenced" if result.referenced else "reference-free"


def _table(header: list[str], rows: list[list[str]], header2: list[str] | None = None) -> list[str]:
    """A Markdown table; ``header2`` is a second header row (Markdown has no column spans)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    if header2:
        lines.append("| " + " | ".join(f"**{h}**" if h else "" for h in header2) + " |")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _datasets(results: Sequence[RunResult], task: str) -> list[tuple[str, bool]]:
    return list(dict.fromkeys((r.dataset, r.referenced) for r in results if r.task == task))


def _critics(results: Sequence[RunResult]) -> list[str]:
    return list(dict.fromkeys(r.critic for r in results))


def render_markdown(results: Sequence[RunResult], title: str = "Meta-evaluation", plots: Sequence[str] = ()) -> str:
    """The report as Markdown: how figures were counted, Table 2 and Table 3 layouts, accuracy and macro P / R / F1
    with per-class counts, win / tie / lose, per-system means and ranks, the human ceiling, parse failures,
    per-category tables, plot links. Every headline figure carries its bootstrap interval when one was computed.

    Args:
        results: one :class:`RunResult` per (critic, dataset).
        title: the first heading.
        plots: relative paths of PNG files to link at the end.

    Returns:
        The Markdown text.
    """
    out = [f"# {title}", ""]
    out += _policy_section(results)
    out += _pointwise_section(results)
    out += _pairwise_section(results)
    out += _classes_section(results)
    out += _win_tie_lose_section(results)
    out += _systems_section(results)
    out += _ceiling_section(results)
    out += _parse_failures_section(results)
    out += _category_sections(results)
    if plots:
        out += ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in plots] + [""]
    return "\n".join(out)


def _policy_section(results: Sequence[RunResult]) -> list[str]:
    """How the figures were counted, stated up front so they can be compared with a paper's."""
    policies = sorted({r.unparsed for r in results if r.task == "pairwise"})
    meaning = {
        "wrong": "count as wrong (and as inconsistent), kept in every denominator",
        "tie": "count as a tie, as papers that map failures to tie do",
        "drop": "are dropped: the pair leaves every denominator",
    }
    lines = []
    for policy in policies:
        lines.append(f"- Unparsed pairwise verdicts {meaning[policy]} (`--unparsed {policy}`).")
    if any(r.task == "pointwise" for r in results):
        lines.append("- Unparsed pointwise scores are left out of the correlations and counted (Parse failures).")
        lines.append(
            "- Within-question accuracy: every pair of one question's responses with different human scores, "
            "ordered by the critic's scores; a tie in the critic's scores counts as half, a pair with an unparsed "
            "score is left out and counted."
        )
    if any("two_way_accuracy" in r.metrics for r in results if r.task == "pairwise"):
        lines.append(
            "- Two-way accuracy (on by default where the human labels have no tie; `--two-way auto|on|off`): the "
            "critic's choice between response 1 and response 2 alone. From a verdict distribution, P(response 1 "
            "better) against P(response 2 better), renormalised without the tie; from text verdicts, a tie counts "
            "as half. Pairs with a tie as gold label are left out of it."
        )
    resamples = sorted({r.bootstrap for r in results if r.bootstrap})
    if resamples:
        lines.append(
            f"- In brackets: 95% percentile bootstrap intervals over {', '.join(map(str, resamples))} resamples "
            "of the pairs (of the queries for correlations and the within-question accuracy; `--bootstrap`)."
        )
    return lines + [""] if lines else []


def _pointwise_section(results: Sequence[RunResult]) -> list[str]:
    by_key = {(r.critic, r.dataset): r for r in results}
    pointwise = _datasets(results, "pointwise")
    if not pointwise:
        return []
    out = ["## Pointwise grading: correlation with human scores (CritiqueLLM Table 2 layout)", ""]
    header = ["Critic"]
    sub = [""]
    for level in ("Text", "System"):
        for dataset, referenced in pointwise:
            header += [f"{level}-level: {dataset} ({'ref.' if referenced else 'ref.-free'})", "", ""]
            sub += ["r", "ρ", "τ"]
    rows = []
    for critic in _critics(results):
        row = [critic]
        for level in ("text", "system"):
            for dataset, _ in pointwise:
                r = by_key.get((critic, dataset))
                row += [_fci(r.metrics, f"{level}_{k}") if r else "" for k in ("pearson", "spearman", "kendall")]
        rows.append(row)
    out += _table(header, rows, sub)
    out += [
        "",
        "Text-level: per-query correlation averaged over queries; system-level: correlation of per-system mean "
        "scores (– when the data has no system ids or fewer than two systems). Queries used / skipped "
        "(fewer than two graded responses or constant scores):",
        "",
    ]
    for critic in _critics(results):
        for dataset, _ in pointwise:
            r = by_key.get((critic, dataset))
            if r:
                m = r.metrics
                out.append(
                    f"- {critic} on {dataset}: {m['n_queries_used']} / {m['n_queries_skipped']} queries, "
                    f"{m.get('n_systems', 0)} systems, {m['n_rows']} responses"
                )
    return out + [""] + _better_worse_section(results)


def _better_worse_section(results: Sequence[RunResult]) -> list[str]:
    """Within-question pairwise accuracy of every pointwise run, beside its text-level and row-level (pooled)
    correlation."""
    runs = [r for r in results if r.task == "pointwise"]
    if not runs:
        return []
    rows = [
        [r.critic, r.dataset, _fci(r.metrics, "within_question_accuracy", percent=True),
         str(r.metrics.get("within_question_pairs", "")), str(r.metrics.get("within_question_ties", "")),
         str(r.metrics.get("within_question_pairs_unparsed", "")), _fci(r.metrics, "text_pearson"),
         _fci(r.metrics, "pooled_pearson"), _f(r.metrics.get("pooled_spearman")), _f(r.metrics.get("pooled_kendall"))]
        for r in runs
    ]  # fmt: skip
    header = ["Critic", "Dataset", "Within-question acc. (%)", "Pairs", "Critic ties", "Unparsed pairs",
              "Text-level r", "Row-level r", "Row-level ρ", "Row-level τ"]  # fmt: skip
    out = ["## Pointwise grading: the better response of a question above the worse", ""]
    out += _table(header, rows)
    return out + [
        "",
        "Within-question accuracy: share of the pairs of one question's responses with different human scores that "
        "the critic's scores order the same way (a critic tie counts as half; pairs with an unparsed critic score "
        "left out). Row-level: one correlation over all responses pooled, whatever their question.",
        "",
    ]


def _pairwise_section(results: Sequence[RunResult]) -> list[str]:
    by_key = {(r.critic, r.dataset): r for r in results}
    pairwise = _datasets(results, "pairwise")
    if not pairwise:
        return []
    out = ["## Pairwise comparison: agreement and consistency (CritiqueLLM Table 3 layout)", ""]
    header, sub = ["Critic"], [""]
    keys_of = {}
    for dataset, referenced in pairwise:
        keys = ["agreement", "consistency", "first_order_agreement"]
        names = ["Agr.", "Cons.", "First-order"]
        if any("two_way_accuracy" in r.metrics for r in results if r.dataset == dataset and r.task == "pairwise"):
            keys += ["two_way_accuracy", "two_way_accuracy_combined"]
            names += ["2-way", "2-way comb."]
        keys_of[dataset] = keys
        header += [f"{dataset} ({'ref.' if referenced else 'ref.-free'})"] + [""] * (len(keys) - 1)
        sub += names
    rows = []
    for critic in _critics(results):
        row = [critic]
        for dataset, _ in pairwise:
            r = by_key.get((critic, dataset))
            keys = keys_of[dataset]
            row += [_fci(r.metrics, k, percent=True) for k in keys] if r else [""] * len(keys)
        rows.append(row)
    out += _table(header, rows, sub)
    out += [
        "",
        "Percentages. Agreement: both orders match the human label; consistency: the two orders agree; "
        "first-order: the original order alone (– without swapped verdicts).",
    ]
    if any(len(keys) > 3 for keys in keys_of.values()):
        out.append(
            "Two-way (where the human labels have no tie, or with `--two-way on`): which of the two responses the "
            "critic prefers, the tie option dropped: from the verdict distribution, P(response 1 better) against "
            "P(response 2 better), renormalised; from text verdicts, a tie counts as half. 2-way: the original "
            "order alone; 2-way comb.: both orders together (the averaged distributions, or both text verdicts "
            "added: opposite choices count as half)."
        )
    return out + [""]


def _classes_section(results: Sequence[RunResult]) -> list[str]:
    """Accuracy and macro precision / recall / F1 of the original-order verdicts, then counts per class."""
    runs = [r for r in results if r.task == "pairwise"]
    if not runs:
        return []
    keys = ("accuracy", "macro_precision", "macro_recall", "macro_f1")
    rows = [[r.critic, r.dataset, *(_fci(r.metrics, k, percent=True) for k in keys)] for r in runs]
    out = ["## Pairwise comparison: accuracy and macro precision / recall / F1", ""]
    out += _table(["Critic", "Dataset", "Accuracy", "Macro P", "Macro R", "Macro F1"], rows)
    out += ["", "Percentages, original-order verdicts; macro averages over the classes present. Per class:", ""]
    rows = [
        [r.critic, r.dataset, cls, str(v["n_gold"]), str(v["n_predicted"]), str(v["n_correct"]),
         _f(v["precision"], percent=True), _f(v["recall"], percent=True), _f(v["f1"], percent=True)]
        for r in runs
        for cls, v in r.metrics.get("per_class", {}).items()
    ]  # fmt: skip
    out += _table(["Critic", "Dataset", "Class", "Gold", "Predicted", "Correct", "P", "R", "F1"], rows)
    return out + [""]


def _win_tie_lose_section(results: Sequence[RunResult]) -> list[str]:
    """Win / tie / lose of response 1's system against response 2's, by the critic and by the humans (Auto-J
    Eval-C style)."""
    runs = [r for r in results if r.task == "pairwise"]
    if not runs:
        return []
    rows = []
    for r in runs:
        m, human = r.metrics, _human_rates(r)
        rest = 1 - sum(m.get(k, math.nan) for k in ("win_rate", "tie_rate", "lose_rate"))
        rows.append(
            [r.critic, r.dataset, *(_fci(m, k, percent=True) for k in ("win_rate", "tie_rate", "lose_rate")),
             _f(rest, percent=True), " / ".join(_f(human.get(k), percent=True) for k in ("win_rate", "tie_rate", "lose_rate"))]
        )  # fmt: skip
    out = ["## Win / tie / lose (response 1 against response 2)", ""]
    out += _table(["Critic", "Dataset", "Win", "Tie", "Lose", "Unparsed", "Humans (win / tie / lose)"], rows)
    return out + [
        "",
        "Percentages of pairs. With both orders judged, a pair whose two verdicts conflict is a tie.",
        "",
    ]


def _human_rates(result: RunResult) -> dict[str, float]:
    """Share of gold labels preferring response 1, tie, response 2: the confusion matrix's row sums."""
    counts = np.asarray(result.confusion.get("counts", [[]]), dtype=float).sum(axis=1)
    rows = dict(zip(result.confusion.get("rows", []), counts, strict=True)) if result.confusion else {}
    total = sum(rows.values()) or math.nan
    names = {"win_rate": RESPONSE_1_WINS, "tie_rate": TIE, "lose_rate": RESPONSE_2_WINS}
    return {k: rows.get(_LABEL_SHORT[code], 0) / total for k, code in names.items()}


def _systems_section(results: Sequence[RunResult]) -> list[str]:
    """Per-system mean scores and ranks, the table behind system-level correlation."""
    out = []
    for r in results:
        table = r.metrics.get("per_system") if r.task == "pointwise" else None
        if not table:
            continue
        rows = [
            [str(system), str(v["n"]), _f(v["human_mean"]), _f(v["human_rank"], 1), _f(v["critic_mean"]),
             _f(v["critic_rank"], 1)]
            for system, v in table.items()
        ]  # fmt: skip
        out += [f"## Per system: {r.critic} on {r.dataset} (mean scores and ranks)", ""]
        out += _table(["System", "Responses", "Human mean", "Human rank", "Critic mean", "Critic rank"], rows)
        out += ["", "Rank 1 = highest mean; only responses with a parsed critic score and a human score count.", ""]
    return out


def _ceiling_section(results: Sequence[RunResult]) -> list[str]:
    """Each annotator's agreement with the aggregate gold label, next to the critic's."""
    out = []
    for r in results:
        if not r.ceiling:
            continue
        pairwise = r.task == "pairwise"
        key = "agreement" if pairwise else "text_pearson"
        rows = [[name, _f(v.get(key), percent=pairwise), str(v.get("n", ""))] for name, v in r.ceiling.items()]
        critic = _fci(r.metrics, "first_order_agreement" if pairwise else "text_pearson", percent=pairwise)
        rows.append([f"critic: {r.critic}", critic, str(r.metrics.get("n", r.metrics.get("n_queries_used", "")))])
        what = "agreement with the majority (%)" if pairwise else "text-level Pearson r with the mean score"
        out += [f"## Human ceiling: {r.dataset} ({what})", ""]
        out += _table(["Annotator", "Value", "Pairs" if pairwise else "Queries"], rows)
        out += [
            "",
            "Each annotator against the aggregate of all annotators (their own vote included, as the papers count "
            "it); the critic's first-order figure against the same aggregate for comparison.",
            "",
        ]
    return out


def _parse_failures_section(results: Sequence[RunResult]) -> list[str]:
    out = ["## Parse failures", ""]
    rows = [
        [r.critic, r.dataset, r.task, _setting(r), str(r.n_rows), f"{r.n_unparsed} / {r.n_critiques}",
         _f(r.parse_failure_rate, percent=True)]
        for r in results
    ]  # fmt: skip
    out += _table(["Critic", "Dataset", "Task", "Setting", "Rows", "Unparsed", "Rate (%)"], rows)
    return out + [""]


def _category_sections(results: Sequence[RunResult]) -> list[str]:
    out = []
    for dataset in dict.fromkeys(r.dataset for r in results):
        runs = [r for r in results if r.dataset == dataset and r.per_category]
        if not runs:
            continue
        task = runs[0].task
        if task == "pointwise":
            key, label = "text_pearson", "text-level Pearson r"
        else:
            key, label = (
                "agreement",
                "agreement / consistency (%)" if "consistency" in runs[0].metrics else "agreement (%)",
            )
            if "consistency" not in runs[0].metrics:
                key = "first_order_agreement"
        out += [f"## Per category: {dataset} ({label})", ""]
        cats = list(dict.fromkeys(c for r in runs for c in r.per_category))
        rows = []
        for cat in cats:
            row = [f"{cat} ({english})" if (english := schema.normalize_category(cat)) and english != cat else cat]
            for r in runs:
                v = r.per_category.get(cat, {})
                count = v.get("n_queries_used", v.get("n"))
                value = _fci(v, key, percent=task == "pairwise")
                if task == "pairwise" and "consistency" in v:
                    value += f" / {_fci(v, 'consistency', percent=True)}"
                row.append(f"{value} ({count})" if v else "")
            rows.append(row)
        count_name = "queries used" if task == "pointwise" else "pairs"
        out += _table(["Category"] + [r.critic for r in runs], rows)
        out += ["", f"In parentheses: {count_name}.", ""]

    return out + _verdict_sources(results)


def _verdict_sources(results: Sequence[RunResult]) -> list[str]:
    """The verdict sources of runs with probability read-outs, one table per task (see :mod:`.verdicts`)."""
    out = []
    pointwise = [r for r in results if r.verdicts and r.task == "pointwise"]
    if pointwise:
        out += ["## Verdict sources: pointwise (pooled correlation with the human scores)", ""]
        rows = [
            [r.critic, r.dataset, source, _f(f["pearson"]), _f(f["spearman"]), _f(f["kendall"]), str(f["n"]),
             str(f["n_without_verdict"]), _f(f.get("within_question_accuracy"), percent=True),
             str(f.get("within_question_pairs", "")), _f(f.get("mode_accuracy"), percent=True)]
            for r in pointwise for source, f in r.verdicts.items()
        ]  # fmt: skip
        header = [
            "Critic",
            "Dataset",
            "Verdict",
            "Pearson",
            "Spearman",
            "Kendall",
            "Rows",
            "No verdict",
            "Within-question acc. (%)",
            "Pairs",
            "Mode = human (%)",
        ]
        out += _table(header, rows) + [""]
    pairwise = [r for r in results if r.verdicts and r.task == "pairwise"]
    if pairwise:
        out += ["## Verdict sources: pairwise (%, with baselines on the same pairs)", ""]
        names = {"text": "text", "probability_first_order": "probability, first order",
                 "combined": "probability, both orders combined", "always_response_1": "always 'response 1'",
                 "label_prior": "label prior"}  # fmt: skip
        two_way = any("two_way_n" in r.verdicts for r in pairwise)
        rows = []
        for r in pairwise:
            for key, name in names.items():
                f = r.verdicts.get(key)
                if f is not None:
                    row = [r.critic, r.dataset, name, _f(f.get("agreement"), percent=True),
                           _f(f.get("consistency"), percent=True), _f(f.get("first_order_agreement"), percent=True)]  # fmt: skip
                    if two_way:
                        row += [_f(f.get(k), percent=True) for k in ("two_way_accuracy", "two_way_accuracy_combined")]
                    rows.append(row)
        header = ["Critic", "Dataset", "Verdict", "Agreement", "Consistency", "First-order"]
        out += _table(header + (["2-way", "2-way comb."] if two_way else []), rows) + [""]
        for r in pairwise:
            c = r.verdicts.get("calibration")
            if c:
                out.append(f"- {r.critic} on {r.dataset}: ECE {_f(c['ece'])} of the decided label over {c['n']} pairs")
        out += [
            "",
            "The combined decision averages both orders' distributions, so it has no order to disagree with; the "
            "baselines answer 'response 1' always, or the most frequent human label (first-order agreement).",
            "",
        ]
    return out


# --------------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "run"


def plot_per_category(results: Sequence[RunResult], out_dir: str | Path) -> list[Path]:
    """One grouped bar chart per dataset: the per-category value of every critic (``per_category_<dataset>.png``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    written = []
    for dataset in dict.fromkeys(r.dataset for r in results):
        runs = [r for r in results if r.dataset == dataset and r.per_category]
        if not runs:
            continue
        pointwise = runs[0].task == "pointwise"
        key = "text_pearson" if pointwise else "agreement"
        cats = list(dict.fromkeys(c for r in runs for c in r.per_category))
        x = np.arange(len(cats))
        width = 0.8 / len(runs)
        fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(cats) + 2), 4.0))
        for i, r in enumerate(runs):
            values = [r.per_category.get(c, {}).get(key, math.nan) for c in cats]
            values = [100 * v if not pointwise else v for v in values]
            ax.bar(x + (i - (len(runs) - 1) / 2) * width, np.nan_to_num(values, nan=0.0), width, label=r.critic)
        # English names for AlignBench's categories: the default font has no CJK glyphs.
        ax.set_xticks(x, [schema.normalize_category(c) or c for c in cats], rotation=30, ha="right")
        ax.set_ylabel("text-level Pearson r" if pointwise else "agreement (%)")
        ax.set_title(f"{dataset}: per category")
        ax.axhline(0, color="black", linewidth=0.5)
        ax.legend(fontsize="small")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.tight_layout()
        path = out_dir / f"per_category_{_slug(dataset)}.png"
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def plot_confusions(results: Sequence[RunResult], out_dir: str | Path) -> list[Path]:
    """One heat map per run (``confusion_<critic>_<dataset>.png``): human score or label against the critic's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    written = []
    for r in results:
        conf = r.confusion
        if not conf or not conf["rows"]:
            continue
        counts = np.asarray(conf["counts"])
        fig, ax = plt.subplots(figsize=(1.0 + 0.55 * counts.shape[1] + 1.5, 1.0 + 0.45 * counts.shape[0] + 1.0))
        image = ax.imshow(counts, cmap="Blues", aspect="auto")
        ax.set_xticks(range(counts.shape[1]), conf["columns"], rotation=45, ha="right")
        ax.set_yticks(range(counts.shape[0]), conf["rows"])
        ax.set_xlabel(conf["column_title"])
        ax.set_ylabel(conf["row_title"])
        threshold = counts.max() / 2 if counts.size else 0
        for (i, j), value in np.ndenumerate(counts):
            if value:
                ax.text(
                    j,
                    i,
                    str(value),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if value > threshold else "black",
                )
        ax.set_title(f"{r.critic} on {r.dataset}", fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.046)
        path = out_dir / f"confusion_{_slug(r.critic)}_{_slug(r.dataset)}.png"
        with warnings.catch_warnings():  # names in scripts the default font lacks still render as boxes
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.tight_layout()
            fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def plot_reliability(results: Sequence[RunResult], out_dir: str | Path) -> list[Path]:
    """One reliability diagram per pairwise run with probability read-outs (``reliability_<critic>_<dataset>.png``):
    accuracy of the decided label against its probability, per confidence bin, with the diagonal of perfect
    calibration and the ECE in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for r in results:
        c = r.verdicts.get("calibration") if r.verdicts else None
        if not c or not c["n"]:
            continue
        bins = [b for b in c["bins"] if b["count"]]
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
        width = c["bins"][0]["high"] - c["bins"][0]["low"]
        ax.bar([b["low"] for b in bins], [b["accuracy"] for b in bins], width=width, align="edge", alpha=0.7,
               edgecolor="black", label="accuracy")  # fmt: skip
        ax.plot(
            [b["confidence"] for b in bins],
            [b["accuracy"] for b in bins],
            "o",
            color="tab:red",
            label="mean confidence",
        )
        for b in bins:
            ax.text(b["low"] + width / 2, min(b["accuracy"] + 0.02, 0.97), str(b["count"]), ha="center", fontsize=7)
        ax.plot([0, 1], [0, 1], "--", color="gray", label="perfect calibration")
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="probability of the decided label", ylabel="accuracy")
        ax.set_title(f"{r.critic} on {r.dataset}\nECE {c['ece']:.3f} (n={c['n']})", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        path = Path(out_dir) / f"reliability_{_slug(r.critic)}_{_slug(r.dataset)}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    return value


def write_report(
    results: Sequence[RunResult], out_dir: str | Path, title: str = "Meta-evaluation", plots: bool = True
) -> dict[str, Any]:
    """Write ``report.md``, ``report.json`` and (with ``plots``) the PNG plots into ``out_dir``.

    Returns:
        ``{"markdown": Path, "json": Path, "plots": [Path, ...]}``.

    Raises:
        ValueError: no results.
    """
    if not results:
        raise ValueError("no meta-evaluation results to report")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    images = (
        (plot_per_category(results, out_dir) + plot_confusions(results, out_dir) + plot_reliability(results, out_dir))
        if plots
        else []
    )
    markdown = write_text(out_dir / "report.md", render_markdown(results, title, [p.name for p in images]))
    payload = {
        "title": title,
        "runs": [{**asdict(r), "parse_failure_rate": r.parse_failure_rate} for r in results],
    }
    json_path = write_text(out_dir / "report.json", json.dumps(_jsonable(payload), indent=2, ensure_ascii=False))
    return {"markdown": markdown, "json": json_path, "plots": images}
