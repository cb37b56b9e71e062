"""The figures above the run viewer's rows: each run's headline figures with their intervals, the plots (PNG, as
data URIs), the calibration of its confidences, and ``report.md``.

A report folder (``meta-eval --output-dir``, ``calibrate --report-dir``) brings its own plots and ``report.json``; a
critiques file with human labels and no report is meta-evaluated here as ``hf-critic meta-eval --critiques`` would
(:func:`hf_critic.meta_eval.evaluate_critiques` and :func:`hf_critic.reports.meta_eval_report.write_report`: agreement or correlation with
bootstrap intervals, confusion, per-category, reliability and risk-coverage plots).
"""

from __future__ import annotations

import base64
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..meta_eval.verdict_sources import expected_calibration_error
from .runs import Figures, Run, read_figures
from .view_rows import PageRows, rows_for_page

__all__ = ["Measured", "calibration_table", "data_uri", "headline", "measure", "meta_evaluate", "run_figures"]

#: Headline figures of a report.json run, in the order shown: (metrics key, label).
HEADLINE = {
    "pairwise": (
        ("agreement", "agreement"),
        ("first_order_agreement", "first-order agreement"),
        ("consistency", "consistency"),
        ("coverage", "coverage"),
    ),
    "pointwise": (
        ("text_pearson", "text-level Pearson"),
        ("text_spearman", "text-level Spearman"),
        ("text_kendall", "text-level Kendall"),
        ("within_question_accuracy", "within-question accuracy"),
        ("coverage", "coverage"),
    ),
}


def data_uri(png: bytes) -> str:
    """``data:image/png;base64,...``: a picture inside the page (no file beside it, no network)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _covered(run: Run) -> set[tuple[str, str]]:
    """``(critic, dataset)`` of the runs a report folder's report.json already measures."""
    return {(r.get("critic"), r.get("dataset")) for f in run.figures for r in (f.summary or {}).get("runs", [])}


def meta_evaluate(row_sets, *, bootstrap: int, plots: bool) -> tuple[Figures | None, list[str]]:
    """Meta-evaluate the row sets that have human labels, as ``meta-eval --critiques`` does, in a temporary folder.

    Args:
        row_sets: :class:`~hf_critic.reports.runs.RowSet` s.
        bootstrap: resamples of the 95% intervals (0: none).
        plots: draw the PNG plots (needs matplotlib).

    Returns:
        ``(figures or None when no row set could be measured, notes)``: a note per row set left out, saying why (no
        human column, every row abstained).
    """
    from ..meta_eval import compare_critics, evaluate_critiques
    from .meta_eval_report import write_report

    results, notes = [], []
    for row_set in row_sets:
        try:
            results.append(evaluate_critiques(row_set.rows, row_set.critic, row_set.dataset, bootstrap=bootstrap))
        except ValueError as err:
            notes.append(f"{row_set.path}: no figures ({err})")
    if not results:
        return None, notes
    with tempfile.TemporaryDirectory(prefix="hf-critic-view-") as folder:
        paired = compare_critics(results, resamples=max(bootstrap, 100))
        write_report(results, folder, title="Critique files", plots=plots, paired=paired)
        figures = read_figures(Path(folder))
    figures.source = ", ".join(r.path for r in row_sets)
    return figures, notes


def run_figures(run: Run, *, bootstrap: int = 200, plots: bool = True) -> tuple[list[Figures], list[str]]:
    """The figures of ``run``: its report folders' and, for row sets no report.json measures, those of
    :func:`meta_evaluate`.

    Returns:
        ``(figures, notes)``.
    """
    covered = _covered(run)
    missing = [r for r in run.row_sets if (r.critic, r.dataset) not in covered]
    figures, notes = list(run.figures), []
    if missing:
        made, notes = meta_evaluate(missing, bootstrap=bootstrap, plots=plots)
        if made is not None:
            figures.append(made)
    return figures, notes


def _number(value) -> float | None:
    """A finite number as a float; None for anything else (None, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


def _interval(value) -> tuple[float | None, float | None]:
    """``[low, high]`` of report.json's ``ci`` as two floats; ``(None, None)`` when it is no such pair."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and None not in map(_number, value):
        return _number(value[0]), _number(value[1])
    return None, None


def headline(figures: list[Figures]) -> list[dict]:
    """One entry per measured run of every report.json: ``{"critic", "dataset", "task", "rows", "figures":
    [{"name", "value", "low", "high"}]}`` (intervals where the report has them, None otherwise)."""
    out = []
    for f in figures:
        for r in (f.summary or {}).get("runs", []):
            metrics = r.get("metrics", {})
            intervals = metrics.get("ci") or {}
            shown = []
            for key, label in HEADLINE.get(r.get("task"), ()):
                value = _number(metrics.get(key))
                if value is not None:
                    low, high = _interval(intervals.get(key))
                    shown.append({"name": label, "value": value, "low": low, "high": high})
            out.append(
                {
                    "critic": r.get("critic"),
                    "dataset": r.get("dataset"),
                    "task": r.get("task"),
                    "rows": r.get("n_rows"),
                    "figures": shown,
                }
            )
    return out


def calibration_table(page_set: dict, n_bins: int = 5) -> dict | None:
    """The calibration of one row set's confidences on its right / wrong rows: the expected calibration error and
    the bins (:func:`~hf_critic.meta_eval.verdict_sources.expected_calibration_error`); None without such rows."""
    rows = [r for r in page_set["rows"] if r["o"] in ("right", "wrong") and r["conf"] is not None]
    if not rows:
        return None
    table = expected_calibration_error([r["conf"] for r in rows], [r["o"] == "right" for r in rows], n_bins=n_bins)
    table["bins"] = [b for b in table["bins"] if b["count"]]
    return table


@dataclass
class Measured:
    """A run measured once for every report of it (the page, the Hub folder).

    Attributes:
        run: the run.
        figures: :func:`run_figures`' figures.
        notes: why a row set has no figures.
        page: the rows as the viewer shows them (:func:`~hf_critic.reports.view_rows.rows_for_page`).
    """

    run: Run
    figures: list[Figures]
    notes: list[str]
    page: PageRows


def measure(run: Run, *, bootstrap: int = 200, plots: bool = True, tolerance: float = 1.0) -> Measured:
    """Measure ``run``: its figures (:func:`run_figures` with ``bootstrap`` resamples, ``plots`` drawn) and its rows
    (``tolerance``: see :func:`~hf_critic.reports.view_rows.rows_for_page`)."""
    figures, notes = run_figures(run, bootstrap=bootstrap, plots=plots)
    if any(f.summary and f.summary.get("runs") for f in run.figures) and not run.row_sets:
        notes.append(
            "This folder holds figures only: meta-eval keeps the rows of --critiques and --verdicts in their "
            "own files; give those files too to see the rows."
        )
    return Measured(run, figures, notes, rows_for_page(run.row_sets, tolerance=tolerance))
