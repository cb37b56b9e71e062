"""Report writers: a run as one HTML page (the run viewer) and as a Hub dataset folder with its card.

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
