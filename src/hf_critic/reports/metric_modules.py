"""The ``evaluate`` metric modules installed where ``evaluate.load("<name>")`` finds a bare name offline
(``hf-critic metrics install``): the scripts copied into ``evaluate``'s module cache with their JSON entry, and into
its downloads cache. Where the modules live is :mod:`hf_critic.meta_eval.modules`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from ..meta_eval.modules import METRIC_NAMES, MODULE_FILES, check_metric_name, metric_path

__all__ = ["install_metrics"]


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
        check_metric_name(name)
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
