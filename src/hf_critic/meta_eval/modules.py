"""Where hf-critic's ``evaluate`` metric modules live, and how to make ``evaluate.load`` find them.

The modules (``critique_correlation``: CritiqueLLM v2 §4.4.1 / Table 2; ``pairwise_agreement``:
CritiqueLLM v2 §4.4.2 / Table 3) exist once, in the canonical ``evaluate`` layout under ``metrics/<name>/`` at
the repository root. ``pyproject.toml`` maps that folder to the package ``hf_critic._metrics``, so a wheel
carries it and an editable install points at the checkout; :func:`metric_path` finds it with
:mod:`importlib.resources` either way. Three ways to load a module, all offline:

* ``evaluate.load("metrics/critique_correlation")`` from a checkout;
* ``evaluate.load(hf_critic.metric_path("critique_correlation"))`` from a checkout or an install;
* ``evaluate.load("critique_correlation")`` after ``hf-critic metrics install`` (:func:`install_metrics`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from importlib.resources import files
from pathlib import Path

from ..core.errors import BadInputError

__all__ = ["METRIC_NAMES", "MODULE_FILES", "install_metrics", "metric_path"]

#: The metric modules hf-critic ships.
METRIC_NAMES = ("critique_correlation", "pairwise_agreement")
#: The files of one module folder, as in huggingface/evaluate's ``metrics/<name>/``.
MODULE_FILES = ("{name}.py", "README.md", "app.py", "requirements.txt")
#: The package ``metrics/`` is installed as (``[tool.setuptools.package-dir]``).
METRICS_PACKAGE = "hf_critic._metrics"


def _check_name(name: str) -> None:
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
    _check_name(name)
    folder = Path(str(files(METRICS_PACKAGE) / name))
    if not (folder / f"{name}.py").is_file():
        raise FileNotFoundError(f"metric module {name!r} not found: no {name}.py in {folder}")
    return str(folder)


def install_metrics(
    names: Iterable[str] | None = None,
    modules_cache: str | os.PathLike | None = None,
    downloads_cache: str | os.PathLike | None = None,
) -> list[Path]:
    """Place the metric scripts where ``evaluate.load("<name>")`` resolves a bare name offline.

    ``evaluate`` (0.4.x) resolves a bare name by a ``<name>/<name>.py`` folder in the working
    directory, then the Hub namespace ``evaluate-metric/``, then its module cache
    ``$HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--<name>/<hash>/<name>.py`` (the most
    recently modified hash wins). This writes that last entry, with the SHA-256 of the script as the hash,
    so re-running after an upgrade makes the new version the most recent one. A module found only there makes
    ``evaluate`` warn that it "couldn't be found locally ... or remotely", so the script is also placed where the
    Hub step looks first when it cannot reach the Hub: its downloads cache, under the hashed URL of
    ``evaluate-metric/<name>`` (for ``evaluate``'s own version tag and ``main``). Offline, a bare name then loads
    without a warning.

    Args:
        names: modules to install; None installs all of :data:`METRIC_NAMES`.
        modules_cache: the ``HF_MODULES_CACHE`` to write to; None uses ``evaluate.config.HF_MODULES_CACHE``
            (the ``HF_MODULES_CACHE`` environment variable, else ``~/.cache/huggingface/modules``).
        downloads_cache: ``evaluate``'s downloads folder; None uses ``evaluate.config.DOWNLOADED_EVALUATE_PATH``
            (``$HF_EVALUATE_CACHE/downloads``) when ``modules_cache`` is None too, and writes no downloads copy when
            only ``modules_cache`` is given (an explicit cache gets nothing written elsewhere).

    Returns:
        The installed script paths, one per module.

    Raises:
        ValueError: for an unknown name.
    """
    import evaluate
    from evaluate import config as evaluate_config
    from evaluate.utils.file_utils import hash_url_to_filename, hf_hub_url

    cache = Path(modules_cache) if modules_cache is not None else Path(evaluate_config.HF_MODULES_CACHE)
    if downloads_cache is not None:
        downloads = Path(downloads_cache)
    elif modules_cache is None:
        downloads = Path(evaluate_config.DOWNLOADED_EVALUATE_PATH)
    else:
        downloads = None
    if downloads is not None:
        downloads.mkdir(parents=True, exist_ok=True)
    # The revisions evaluate's Hub step asks for: its version tag (v0.4.6), else main (see HubEvaluationModuleFactory).
    revisions = {
        "main",
        evaluate.SCRIPTS_VERSION if evaluate.SCRIPTS_VERSION == "main" else f"v{evaluate.SCRIPTS_VERSION}",
    }
    dynamic = cache / evaluate_config.MODULE_NAME_FOR_DYNAMIC_MODULES
    installed = []
    for name in METRIC_NAMES if names is None else tuple(names):
        _check_name(name)
        source = Path(metric_path(name))
        script = source / f"{name}.py"
        digest = hashlib.sha256(script.read_bytes()).hexdigest()  # 64 characters, as evaluate expects
        target = dynamic / "metrics" / f"evaluate-metric--{name}" / digest
        target.mkdir(parents=True, exist_ok=True)
        for folder in (dynamic, dynamic / "metrics", target.parent, target):
            (folder / "__init__.py").touch(exist_ok=True)
        for pattern in MODULE_FILES:
            shutil.copyfile(source / pattern.format(name=name), target / pattern.format(name=name))
        (target / f"{name}.json").write_text(
            json.dumps({"original file path": str(script), "local file path": str(target / f"{name}.py")})
        )
        os.utime(target / f"{name}.py")  # newest hash wins when several versions are cached
        for revision in sorted(revisions) if downloads is not None else ():
            url = hf_hub_url(path=f"evaluate-metric/{name}", name=f"{name}.py", revision=revision)
            shutil.copyfile(script, downloads / hash_url_to_filename(url))
        installed.append(target / f"{name}.py")
    return installed
