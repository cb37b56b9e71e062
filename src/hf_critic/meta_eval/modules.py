"""Where hf-critic's ``evaluate`` metric modules live, and how to make ``evaluate.load`` find them.

The modules (``critique_correlation``: CritiqueLLM v2 §4.4.1 / Table 2; ``pairwise_agreement``:
CritiqueLLM v2 §4.4.2 / Table 3) exist once, in the canonical ``evaluate`` layout under ``metrics/<name>/`` at
the repository root. ``pyproject.toml`` maps that folder to the package ``hf_critic._metrics``, so a wheel
carries it and an editable install points at the checkout; :func:`metric_path` finds it with
:mod:`importlib.resources` either way. Three ways to load a module, all offline:

* ``evaluate.load("metrics/critique_correlation")`` from a checkout;
* ``evaluate.load(hf_critic.metric_path("critique_correlation"))`` from a checkout or an install;
* ``evaluate.load("critique_correlation")`` after ``hf-critic metrics install``
  (:func:`hf_critic.reports.metric_modules.install_metrics`, which writes them into ``evaluate``'s caches).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from ..core.errors import BadInputError

__all__ = ["METRIC_NAMES", "MODULE_FILES", "check_metric_name", "metric_path"]

#: The metric modules hf-critic ships.
METRIC_NAMES = ("critique_correlation", "pairwise_agreement")
#: The files of one module folder, as in huggingface/evaluate's ``metrics/<name>/``.
MODULE_FILES = ("{name}.py", "README.md", "app.py", "requirements.txt")
#: The package ``metrics/`` is installed as (``[tool.setuptools.package-dir]``).
METRICS_PACKAGE = "hf_critic._metrics"


def check_metric_name(name: str) -> None:
    """Raise ValueError naming the available modules unless ``name`` is one of :data:`METRIC_NAMES`."""
    if name not in METRIC_NAMES:
        raise BadInputError(f"unknown hf-critic metric {name!r}; available: {', '.join(METRIC_NAMES)}")


def metric_path(name: str) -> str:
    """Folder of an hf-critic ``evaluate`` module, to pass to ``evaluate.load``.

    Args:
        name: one of :data:`METRIC_NAMES`.

    Returns:
        Absolute path of the module folder: ``metrics/<name>`` of the checkout under an editable install,
        ``site-packages/hf_critic/_metrics/<name>`` under a wheel install.

    Raises:
        ValueError: for an unknown name.
        FileNotFoundError: if the folder holds no ``<name>.py`` (a broken install).
    """
    check_metric_name(name)
    folder = Path(str(files(METRICS_PACKAGE) / name))
    if not (folder / f"{name}.py").is_file():
        raise FileNotFoundError(f"metric module {name!r} not found: no {name}.py in {folder}")
    return str(folder)
