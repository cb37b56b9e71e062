"""The meta-evaluation report of one or more critics behind ``hf-critic meta-eval``: ``report.md`` (the papers'
tables, :mod:`~hf_critic.reports.critic_markdown`, and the risk-coverage tables), ``report.json`` (every run's
figures and the paired comparisons) and the PNG plots (:mod:`~hf_critic.reports.critic_plots`,
``risk_coverage.png``). The figures are computed in :mod:`hf_critic.meta_eval` (:func:`~hf_critic.meta_eval.evaluate_critiques`,
:func:`~hf_critic.meta_eval.compare_critics`); this module only writes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import BadInputError
from ..io import write_text
from ..meta_eval.run_result import RunResult
from .critic_markdown import render_markdown
from .critic_plots import plot_confusions, plot_per_category, plot_reliability
from .risk_coverage import plot_risk_coverage, risk_coverage_markdown

__all__ = ["write_report"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    return value


def write_report(
    results: Sequence[RunResult],
    out_dir: str | Path,
    title: str = "Meta-evaluation",
    plots: bool = True,
    *,
    paired: list,
) -> dict[str, Any]:
    """Write ``report.md``, ``report.json`` and (with ``plots``) the PNG plots into ``out_dir``.

    Args:
        results: the runs (:func:`hf_critic.meta_eval.evaluate_critiques`).
        out_dir: the folder to write into (made if missing).
        title: the report's heading.
        plots: draw the PNG plots (needs matplotlib).
        paired: the paired comparisons of the critics judged on the same rows and of each with length
            (:func:`hf_critic.meta_eval.compare_critics` of ``results``), written as ``paired`` in report.json.

    Returns:
        ``{"markdown": Path, "json": Path, "plots": [Path, ...], "paired": [...]}``.

    Raises:
        ValueError: no results; raised before any file is written.
    """
    if not results:
        raise BadInputError("no meta-evaluation results to report")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    images = (
        (plot_per_category(results, out_dir) + plot_confusions(results, out_dir) + plot_reliability(results, out_dir))
        if plots
        else []
    )
    sections = _risk_sections(results)
    if plots and sections:
        images.append(
            plot_risk_coverage(
                {title: curves for title, (_, curves) in sections.items()}, out_dir / "risk_coverage.png"
            )
        )
    text = render_markdown(results, title, [p.name for p in images], paired)
    text += risk_coverage_markdown({title: blocks for title, (blocks, _) in sections.items()})
    markdown = write_text(out_dir / "report.md", text)
    payload = {
        "title": title,
        "runs": [{**_fields(r), "parse_failure_rate": r.parse_failure_rate} for r in results],
        "paired": paired,
    }
    json_path = write_text(out_dir / "report.json", json.dumps(_jsonable(payload), indent=2, ensure_ascii=False))
    return {"markdown": markdown, "json": json_path, "plots": images, "paired": paired}


def _risk_sections(results: Sequence[RunResult]) -> dict[str, tuple[dict, dict]]:
    """``{dataset: (blocks, curves)}`` of the pairwise runs: each critic judged on the dataset, then the baselines
    (of the dataset's first run: the same rows)."""
    sections: dict[str, tuple[dict, dict]] = {}
    for r in results:
        if not r.risk_coverage:
            continue
        blocks, curves = sections.setdefault(r.dataset, ({}, {}))
        blocks[r.critic] = {k: v for k, v in r.risk_coverage.items() if k != "baselines"}
        curves.update({k: v for k, v in r.risk_curves.items() if not k.startswith("baseline:")})
    for dataset, (blocks, curves) in sections.items():
        first = next(r for r in results if r.dataset == dataset and r.risk_coverage)
        blocks.update(first.risk_coverage["baselines"])
        curves.update({k: v for k, v in first.risk_curves.items() if k.startswith("baseline:")})
    return sections


def _fields(result: RunResult) -> dict[str, Any]:
    """The run's fields for report.json (the per-row values left out)."""
    return {f.name: getattr(result, f.name) for f in fields(result) if f.metadata.get("json", True)}
