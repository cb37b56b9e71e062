"""Report writers: every file of a report (Markdown, JSON, PNG, cards) is written here, from the figures
:mod:`hf_critic.meta_eval` and :mod:`hf_critic.selective` compute; a run as one HTML page (the run viewer) and as a
Hub dataset folder with its card.

- :mod:`~hf_critic.reports.meta_eval_report`: ``hf-critic meta-eval``'s ``report.md``, ``report.json`` and plots
  (:func:`~hf_critic.reports.meta_eval_report.write_report`), from :mod:`~hf_critic.reports.critic_markdown` (the
  papers' tables), :mod:`~hf_critic.reports.comparison_markdown` (baselines, chance, length, PPI, paired
  comparisons), :mod:`~hf_critic.reports.markdown_tables` (number formats, tables) and
  :mod:`~hf_critic.reports.critic_plots` (bars, confusion heat maps, reliability diagrams);
- :mod:`~hf_critic.reports.risk_coverage`: risk-coverage tables and plots, agreement-coverage plots (``meta-eval``,
  ``calibrate --report-dir``);
- :mod:`~hf_critic.reports.calibration_report`: ``calibrate --report-dir``'s folder (critiques, report.md, report.json,
  PNGs);
- :mod:`~hf_critic.reports.robustness_report`: the judge-attack report (``attacks.md``, ``attacks.json``);
- :mod:`~hf_critic.reports.heldout_halves`: the dev / test protocol's files (the split's id files, a half of each
  benchmark in its own format);
- :mod:`~hf_critic.reports.metric_modules`: the ``evaluate`` metric modules written into ``evaluate``'s caches
  (``hf-critic metrics install``);

- :mod:`~hf_critic.reports.runs`: what a run is on disk (critiques files, report folders, calibration files),
  read back (:func:`load_run`);
- :mod:`~hf_critic.reports.view_rows`: each row as the viewer shows it (verdict, confidence, status, human label,
  right / wrong / abstained / no verdict);
- :mod:`~hf_critic.reports.figures`: the figures above the rows (headline figures with intervals, plots,
  calibration);
- :mod:`~hf_critic.reports.html_view`: the page (:func:`write_view`);
- :mod:`~hf_critic.reports.hub_run`: the run's rows as parquet configs with a dataset card (:func:`write_hub_folder`)
  and its upload (:func:`push_run`).
"""

from __future__ import annotations

from .figures import Measured, measure
from .html_view import render_view, write_view
from .hub_run import push_run, write_hub_folder
from .runs import RowSet, Run, load_run

__all__ = [
    "Measured",
    "Run",
    "RowSet",
    "load_run",
    "measure",
    "push_run",
    "render_view",
    "write_hub_folder",
    "write_view",
]
