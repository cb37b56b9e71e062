"""The report folder of ``hf-critic calibrate --report-dir``: each critic's critiques on the calibration rows
(``critiques/<critic>.jsonl``), ``report.md``, ``report.json``, ``risk_coverage.png`` and, with ``--splits``,
``agreement_coverage.png``. The figures are computed by the command (:mod:`hf_critic.meta_eval.risk_coverage`, the
split protocol of :mod:`hf_critic.selective.evaluation`); this module only writes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..io import save_records, write_text
from .risk_coverage import plot_curves, plot_risk_coverage

__all__ = ["write_calibration_report"]


def write_calibration_report(
    out: str | Path, critiques: Mapping[str, Any], report: dict, *, splits: bool
) -> list[Path]:
    """Write the calibration report folder ``out``.

    Args:
        out: the folder (made if missing).
        critiques: ``{critic name: its rows}`` (``datasets.Dataset`` s with the records' columns, ``critique_label``
            and ``critique_confidence``), each written as ``critiques/<name>.jsonl``.
        report: ``{"json": ..., "markdown": str, "curves": {title: {critic: (coverage, risk)}}, "points": {label:
            (coverage, agreement)}}`` as the command computed it; ``report["json"]["curves"]`` holds the
            agreement-coverage curves with ``splits``.
        splits: the split protocol ran: draw ``agreement_coverage.png`` too.

    Returns:
        The PNGs written: ``risk_coverage.png``, then ``agreement_coverage.png`` with ``splits``.
    """
    out = Path(out)
    for name, rows in critiques.items():
        save_records(rows, out / "critiques" / f"{name}.jsonl")
    pictures = [plot_risk_coverage(report["curves"], out / "risk_coverage.png")]
    if splits:
        plot_curves(report["json"]["curves"], report["points"], out / "agreement_coverage.png")
        pictures.append(out / "agreement_coverage.png")
    write_text(out / "report.md", report["markdown"])
    write_text(out / "report.json", json.dumps(report["json"], indent=1))
    return pictures
