"""Saving the Eval-Instruct ``DatasetDict``: ``save_to_disk``, a Hub-layout parquet folder with a dataset card, and
``push_to_hub``.

The card is rendered from ``dataset_cards/eval_instruct.md`` (a Jinja template, rendered by
``huggingface_hub.DatasetCard.from_template``) with a YAML header holding ``license``, ``language``,
``task_categories``, ``pretty_name``, ``configs`` (one per setting, with ``data_files``) and ``dataset_info``
(features and row counts), then Summary, Structure, Creation (teacher, prompts and versions, filter statistics),
Bias and Limitations, Citation. The parquet folder is laid out as the card's ``configs`` say
(``<config>/train-00000-of-00001.parquet``), so ``load_dataset(folder, "<config>")`` reads it locally and
uploading the folder publishes exactly what was checked.
"""

from __future__ import annotations

import datetime
import os
import secrets
import shutil
from importlib.resources import files
from pathlib import Path
from typing import Any

import datasets

from .._version import __version__
from ..core.schema import SETTINGS
from .filters import REASONS
from .stage_report import PipelineReport

__all__ = ["default_card_template", "push_to_hub", "render_card", "save_outputs"]

CARD_TEMPLATE = "eval_instruct.md"
#: The package ``dataset_cards/`` is installed as (``[tool.setuptools.package-dir]``).
CARD_PACKAGE = "hf_critic._dataset_cards"


def default_card_template() -> Path:
    """``dataset_cards/eval_instruct.md``, shipped in the package as ``hf_critic._dataset_cards`` (pyproject.toml).

    The same file under an editable install (the checkout's folder) and a wheel install (its copy in
    ``site-packages``), found with :mod:`importlib.resources`; a recipe can still name another with
    ``hub.card_template``.

    Raises:
        FileNotFoundError: the template is missing from the installed package (a broken install).
    """
    path = Path(str(files(CARD_PACKAGE) / CARD_TEMPLATE))
    if not path.is_file():
        raise FileNotFoundError(f"dataset card template {CARD_TEMPLATE} not found at {path} (a broken install?)")
    return path


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M"


def render_card(
    dataset: datasets.DatasetDict,
    report: PipelineReport,
    *,
    license: str = "other",
    pretty_name: str = "Eval-Instruct critiques",
    repo_id: str | None = None,
    template_path: str | os.PathLike | None = None,
):
    """Render the dataset card of an Eval-Instruct run.

    Args:
        dataset: the four configs (keys: setting names).
        report: the run's report; ``report.info`` supplies teacher, prompts, generators, method (see
            :func:`hf_critic.eval_instruct.pipeline.run_eval_instruct`).
        license: licence id for the header.
        pretty_name: title.
        repo_id: the Hub id used in the usage snippet (``"<your-repo>"`` when None).
        template_path: the Jinja template (default :func:`default_card_template`).

    Returns:
        A ``huggingface_hub.DatasetCard``; ``card.data`` holds the YAML header (``configs``, ``dataset_info`` ...).
    """
    from huggingface_hub import DatasetCard

    info = report.info
    language = info.get("language", "en")
    card_data = _card_header(dataset, license=license, pretty_name=pretty_name, language=language)
    settings = {s.name: s for s in SETTINGS}
    kwargs: dict[str, Any] = {
        "pretty_name": pretty_name,
        "repo_id": repo_id or "<your-repo>",
        "method": info.get("method", "Eval-Instruct"),
        "method_details": info.get("method_details", ""),
        "language_name": {"en": "English", "zh": "Chinese"}.get(language, language),
        "family": info.get("family", "critiquellm_v2"),
        "teacher": info.get("teacher", "?"),
        "teacher_url": info.get("teacher_url", "?"),
        "teacher_params": info.get("teacher_params", {}),
        "configs": [
            {
                "name": name,
                "task": settings[name].task.value,
                "reference": "referenced" if settings[name].referenced else "reference-free",
                "rows": len(split),
            }
            for name, split in dataset.items()
        ],
        "swap": info.get("swap_augmentation", False),
        "queries": info.get("queries", ""),
        "generators": ", ".join(f"`{g}`" for g in info.get("generators", [])),
        "reference_generator": info.get("reference_generator", "?"),
        "revisions": info.get("revisions", False),
        "prompts": info.get("prompts", []),
        **_run_figures(report),
        "version": __version__,
        "fingerprint": info.get("fingerprint", "?"),
        "date": info.get("date", datetime.date.today().isoformat()),
        "license": license,
    }
    path = Path(template_path) if template_path else default_card_template()
    return DatasetCard.from_template(card_data, template_path=str(path), **kwargs)


def _run_figures(report: PipelineReport) -> dict[str, Any]:
    """The card's figures of the run: requests, cache hits, tokens and cost, rejections by reason, failures, the
    cross-validation share filtered, and one row per stage."""
    stages = [
        {
            "name": s.name,
            "items_in": s.items_in,
            "unit": s.unit,
            "items_out": s.items_out,
            "failed": s.failed,
            "rejected": ", ".join(f"{k}={v}" for k, v in sorted(s.rejected.items())) or "-",
        }
        for s in report.stages
    ]
    usage = report.total_usage()
    share = next((s.notes.get("filtered_share") for s in report.stages if "filtered_share" in s.notes), None)
    return {
        "requests": usage.requests,
        "cache_hits": usage.cache_hits,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost": f"{usage.cost:.4f}",
        "rejections": [
            {"reason": reason, "count": count, "meaning": REASONS.get(reason, "")}
            for reason, count in sorted(report.rejections().items())
        ],
        "failed": len(report.failures),
        "cross_validation": f"{100 * share:.1f}%" if share is not None else None,
        "stages": stages,
    }


def _card_header(dataset: datasets.DatasetDict, *, license: str, pretty_name: str, language: str):
    """The card's YAML header: licence, language, tags, one config per setting and each one's features and size."""
    from huggingface_hub import DatasetCardData

    configs = [
        {"config_name": name, "data_files": [{"split": "train", "path": f"{name}/train-*"}]} for name in dataset
    ]
    card_data = DatasetCardData(
        license=license,
        language=[language],
        task_categories=["text-generation"],
        pretty_name=pretty_name,
        size_categories=[_size_category(sum(len(d) for d in dataset.values()))],
        tags=["llm-as-a-judge", "critique", "eval-instruct", "critiquellm", "synthetic"],
        configs=configs,
    )
    infos = datasets.info.DatasetInfosDict(
        {
            name: datasets.DatasetInfo(
                features=split.features,
                splits=datasets.SplitDict({"train": datasets.SplitInfo("train", num_examples=len(split))}),
            )
            for name, split in dataset.items()
        }
    )
    infos.to_dataset_card_data(card_data)
    return card_data


#: The folders :func:`save_outputs` writes in the output folder; ``hub`` is moved into place last.
OUTPUT_FOLDERS = ("dataset", "hub")


def finished_outputs(output_dir: str | os.PathLike) -> tuple[str, ...]:
    """The outputs of a finished save in ``output_dir``: the ones a new run replaces only with ``--overwrite``.

    ``hub`` is moved into place last (:func:`save_outputs`), so it marks a finished save: then both folders that exist
    are finished outputs. A ``dataset`` folder without ``hub`` is what a run killed part-way through saving left (or
    a save of an earlier version killed while writing its hub folder); it is none, and the next save replaces it.
    """
    folder = Path(output_dir)
    if not (folder / "hub").is_dir():
        return ()
    return tuple(name for name in OUTPUT_FOLDERS if (folder / name).exists())


def _temporary_folder(parent: Path, prefix: str) -> Path:
    """A new empty folder ``<parent>/<prefix><random>``, made as ``mkdir`` makes one: mode 0777 less the umask
    (``tempfile.mkdtemp`` makes it 0700, and the folder renamed into place kept that whatever the umask)."""
    while True:
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


def save_outputs(dataset: datasets.DatasetDict, output_dir: str | os.PathLike, card=None) -> dict[str, Path]:
    """Write the DatasetDict as ``<output_dir>/dataset`` (``save_to_disk``) and ``<output_dir>/hub`` (one parquet
    file per config, Hub layout, plus ``README.md`` when ``card`` is given).

    Both folders are written under temporary names first and then renamed into place, ``hub`` last, so a run killed
    while saving leaves the previous complete output (or none), never a half-written one, and a ``hub`` folder marks
    a finished save (:func:`finished_outputs`). The temporary ``.dataset-*`` / ``.hub-*`` folders such a run leaves
    are removed here, by the next save. Folders and files are made with the umask's permissions, as ``open`` and
    ``mkdir`` make them.

    Returns:
        ``{"dataset": path, "hub": path}``.
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: output_dir / name for name in OUTPUT_FOLDERS}
    for target in paths.values():
        for stale in output_dir.glob(f".{target.name}-*"):
            shutil.rmtree(stale, ignore_errors=True)

    def replace(target: Path, tmp: Path) -> None:
        old = target.with_name(f".{target.name}-old")
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)

    def write_hub(tmp: Path) -> None:
        for name, split in dataset.items():
            (tmp / name).mkdir(parents=True)
            split.to_parquet(str(tmp / name / "train-00000-of-00001.parquet"))
        if card is not None:
            (tmp / "README.md").write_text(str(card), encoding="utf-8")

    quiet = not datasets.are_progress_bars_disabled()
    if quiet:
        datasets.disable_progress_bars()
    temporary: list[Path] = []
    try:
        # an empty split saved with the default sharding cannot be loaded back (no arrow file): give it one shard
        shards = {name: 1 for name, split in dataset.items() if len(split) == 0}
        temporary.append(_temporary_folder(output_dir, ".dataset-"))
        dataset.save_to_disk(str(temporary[0]), num_shards=shards)
        temporary.append(_temporary_folder(output_dir, ".hub-"))
        write_hub(temporary[1])
        replace(paths["dataset"], temporary[0])
        replace(paths["hub"], temporary[1])  # last: a hub folder marks a finished save
    finally:
        for tmp in temporary:
            shutil.rmtree(tmp, ignore_errors=True)
        if quiet:
            datasets.enable_progress_bars()
    return paths


def push_to_hub(
    hub_dir: str | os.PathLike,
    repo_id: str,
    *,
    private: bool = True,
    token_env: str = "HF_TOKEN",
    commit_message: str = "Eval-Instruct critiques (hf-critic)",
    api: Any = None,
) -> str:
    """Upload the Hub-layout folder written by :func:`save_outputs` (parquet per config and the card).

    Args:
        hub_dir: ``<output_dir>/hub``.
        repo_id: ``org/name``.
        private: create the dataset repository private (an existing one keeps its visibility).
        token_env: environment variable holding the Hub token (unset: huggingface_hub's own login is used).
        commit_message: the commit message.
        api: an ``huggingface_hub.HfApi`` (tests pass a stand-in).

    Returns:
        The repository URL.

    Raises:
        FileNotFoundError: ``hub_dir`` has no ``README.md`` (run :func:`save_outputs` with a card first).
    """
    from huggingface_hub import HfApi

    hub_dir = Path(hub_dir)
    if not (hub_dir / "README.md").is_file():
        raise FileNotFoundError(f"{hub_dir}: no README.md dataset card; save the outputs with a card first")
    api = api or HfApi(token=os.environ.get(token_env) or None)
    url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(hub_dir), commit_message=commit_message)
    return str(url)


def load_saved(output_dir: str | os.PathLike) -> datasets.DatasetDict:
    """The DatasetDict saved by :func:`save_outputs` under ``output_dir``."""
    return datasets.load_from_disk(str(Path(output_dir) / "dataset"))
