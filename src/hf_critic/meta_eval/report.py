"""Meta-evaluation reports in the papers' layouts: Markdown, JSON and PNG plots, several critics side by side.

How well critics agree with humans (behind ``hf-critic meta-eval``); the per-stage report of an Eval-Instruct run
(items, rejections, cost) is another thing, in :mod:`hf_critic.data.report`.

* **Table 2 layout** (CritiqueLLM v2 §4.4.1): text-level and system-level Pearson r / Spearman ρ / Kendall τ of
  each critic's pointwise grades against human scores, one column group per dataset (e.g. AlignBench
  referenced and reference-free);
* **Table 3 layout** (v2 §4.4.2): agreement and consistency of pairwise verdicts under order swap, per dataset;
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
from .agreement import normalize_labels, pairwise_agreement
from .correlation import critique_correlation

__all__ = ["RunResult", "evaluate_critiques", "render_markdown", "write_report"]

_LABEL_SHORT = {schema.RESPONSE_1_WINS: "resp. 1", schema.RESPONSE_2_WINS: "resp. 2", schema.TIE: "tie"}


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

    Returns:
        A :class:`RunResult`.

    Raises:
        ValueError: no critique column, or the human column is missing.
    """
    columns = dataset.column_names
    referenced = schema.REFERENCE in columns
    categories = _column(dataset, category)
    if schema.CRITIQUE_SCORE in columns:
        if human_score not in columns:
            raise ValueError(f"{name}: human score column {human_score!r} missing (have {columns})")
        queries = _column(dataset, "query_id") or [schema.query_id(q) for q in dataset[schema.QUESTION]]
        systems = _column(dataset, "system_id") or _column(dataset, "model")
        pred = np.asarray(dataset[schema.CRITIQUE_SCORE], dtype=float)
        human = np.asarray(dataset[human_score], dtype=float)
        metrics = critique_correlation(pred, human, query_ids=queries, system_ids=systems)
        per_category: dict[str, dict[str, Any]] = {}
        if categories is not None:
            cats = np.asarray([str(c) for c in categories], dtype=object)
            queries_arr = np.asarray(queries, dtype=object)
            for cat in dict.fromkeys(cats.tolist()):  # one call per category, not per row
                m = cats == cat
                r = critique_correlation(pred[m], human[m], query_ids=queries_arr[m])
                per_category[cat] = {
                    "text_pearson": r["text_pearson"],
                    "text_spearman": r["text_spearman"],
                    "text_kendall": r["text_kendall"],
                    "n_queries_used": r["n_queries_used"],
                    "n_rows": r["n_rows"],
                }
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
        )
    if schema.CRITIQUE_LABEL in columns:
        if label not in columns:
            raise ValueError(f"{name}: human label column {label!r} missing (have {columns})")
        swapped = _column(dataset, schema.CRITIQUE_LABEL_SWAPPED)
        result = pairwise_agreement(
            dataset[schema.CRITIQUE_LABEL],
            dataset[label],
            swapped,
            swapped_mapped_back=swapped_mapped_back,
            groups=[str(c) for c in categories] if categories is not None else None,
        )
        per_group = result.pop("per_group", {})
        n_critiques = result["n"] * (2 if swapped is not None else 1)
        n_unparsed = result["n_unparsed"] + result.get("n_unparsed_swapped", 0)
        verdicts = normalize_labels(dataset[schema.CRITIQUE_LABEL], name="critique_label")
        humans = normalize_labels(dataset[label], name=label)
        return RunResult(
            critic=critic,
            dataset=name,
            task="pairwise",
            referenced=referenced,
            n_rows=result["n"],
            n_critiques=n_critiques,
            n_unparsed=n_unparsed,
            metrics=result,
            per_category={str(k): v for k, v in per_group.items()},
            confusion=_label_confusion(humans, verdicts),
        )
    raise ValueError(f"{name}: no {schema.CRITIQUE_SCORE!r} or {schema.CRITIQUE_LABEL!r} column: not a critique file")


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def _f(value: Any, digits: int = 3, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.2f}" if percent else f"{value:.{digits}f}"


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
    """The report as Markdown: Table 2 and Table 3 layouts, parse failures, per-category tables, plot links.

    Args:
        results: one :class:`RunResult` per (critic, dataset).
        title: the first heading.
        plots: relative paths of PNG files to link at the end.

    Returns:
        The Markdown text.
    """
    by_key = {(r.critic, r.dataset): r for r in results}
    critics = _critics(results)
    out = [f"# {title}", ""]

    pointwise = _datasets(results, "pointwise")
    if pointwise:
        out += ["## Pointwise grading: correlation with human scores (CritiqueLLM Table 2 layout)", ""]
        header = ["Critic"]
        sub = [""]
        for level in ("Text", "System"):
            for dataset, referenced in pointwise:
                header += [f"{level}-level: {dataset} ({'ref.' if referenced else 'ref.-free'})", "", ""]
                sub += ["r", "ρ", "τ"]
        rows = []
        for critic in critics:
            row = [critic]
            for level in ("text", "system"):
                for dataset, _ in pointwise:
                    r = by_key.get((critic, dataset))
                    row += [_f(r.metrics.get(f"{level}_{k}")) if r else "" for k in ("pearson", "spearman", "kendall")]
            rows.append(row)
        out += _table(header, rows, sub)
        out += [
            "",
            "Text-level: per-query correlation averaged over queries; system-level: correlation of per-system mean "
            "scores (– when the data has no system ids or fewer than two systems). Queries used / skipped "
            "(fewer than two graded responses or constant scores):",
            "",
        ]
        for critic in critics:
            for dataset, _ in pointwise:
                r = by_key.get((critic, dataset))
                if r:
                    m = r.metrics
                    out.append(
                        f"- {critic} on {dataset}: {m['n_queries_used']} / {m['n_queries_skipped']} queries, "
                        f"{m.get('n_systems', 0)} systems, {m['n_rows']} responses"
                    )
        out.append("")

    pairwise = _datasets(results, "pairwise")
    if pairwise:
        out += ["## Pairwise comparison: agreement and consistency (CritiqueLLM Table 3 layout)", ""]
        header, sub = ["Critic"], [""]
        for dataset, referenced in pairwise:
            header += [f"{dataset} ({'ref.' if referenced else 'ref.-free'})", "", ""]
            sub += ["Agr.", "Cons.", "First-order"]
        rows = []
        for critic in critics:
            row = [critic]
            for dataset, _ in pairwise:
                r = by_key.get((critic, dataset))
                row += (
                    [_f(r.metrics.get(k), percent=True) for k in ("agreement", "consistency", "first_order_agreement")]
                    if r
                    else ["", "", ""]
                )
            rows.append(row)
        out += _table(header, rows, sub)
        out += [
            "",
            "Percentages. Agreement: both orders match the human label; consistency: the two orders agree; "
            "first-order: the original order alone (– without swapped verdicts). Unparsed verdicts count as wrong.",
            "",
        ]

    out += ["## Parse failures", ""]
    rows = [
        [
            r.critic,
            r.dataset,
            r.task,
            _setting(r),
            str(r.n_rows),
            f"{r.n_unparsed} / {r.n_critiques}",
            _f(r.parse_failure_rate, percent=True),
        ]
        for r in results
    ]
    out += _table(["Critic", "Dataset", "Task", "Setting", "Rows", "Unparsed", "Rate (%)"], rows)
    out.append("")

    for dataset, _ in pointwise + pairwise:
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
        out += [f"## Per category: {dataset} ({label})", ""]
        cats = list(dict.fromkeys(c for r in runs for c in r.per_category))
        rows = []
        for cat in cats:
            row = [f"{cat} ({english})" if (english := schema.normalize_category(cat)) and english != cat else cat]
            for r in runs:
                v = r.per_category.get(cat, {})
                count = v.get("n_queries_used", v.get("n"))
                value = _f(v.get(key), percent=task == "pairwise")
                if task == "pairwise" and "consistency" in v:
                    value += f" / {_f(v['consistency'], percent=True)}"
                row.append(f"{value} ({count})" if v else "")
            rows.append(row)
        count_name = "queries used" if task == "pointwise" else "pairs"
        out += _table(["Category"] + [r.critic for r in runs], rows)
        out += ["", f"In parentheses: {count_name}.", ""]

    if plots:
        out += ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in plots] + [""]
    return "\n".join(out)


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
    images = (plot_per_category(results, out_dir) + plot_confusions(results, out_dir)) if plots else []
    markdown = out_dir / "report.md"
    markdown.write_text(render_markdown(results, title, [p.name for p in images]), encoding="utf-8")
    payload = {
        "title": title,
        "runs": [{**asdict(r), "parse_failure_rate": r.parse_failure_rate} for r in results],
    }
    json_path = out_dir / "report.json"
    json_path.write_text(json.dumps(_jsonable(payload), indent=2, ensure_ascii=False), encoding="utf-8")
    return {"markdown": markdown, "json": json_path, "plots": images}
