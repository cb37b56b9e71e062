"""The published-judgment data on disk and on the Hub: its dataset card, licence file, validation files and push."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import datasets

from .published import PublishedBuildReport
from .sources import PUBLISHED_CONFIGS, PUBLISHED_SOURCES

logger = logging.getLogger(__name__)


#: The card template :func:`render_published_card` renders (in ``dataset_cards/``, shipped as
#: ``hf_critic._dataset_cards``).
PUBLISHED_CARD_TEMPLATE = "published_judgments.md"
#: The validation files :func:`save_published_judgment_data` writes for ``hf-critic grade`` / ``meta-eval``.
_VALIDATION_FILES = ("pointwise_reference_free", "pairwise_reference_free")


def _licence_text(report: PublishedBuildReport) -> str:
    """The ``LICENSE`` file of the Hub folder: each source's licence, as its authors state it."""
    lines = [
        "This dataset is derived from published LLM judgments; each part keeps its source's licence, and a model",
        "trained on it inherits them. The judgments were written by OpenAI models, whose terms of use may also apply.",
        "",
    ]
    for source in report.sources:
        info = PUBLISHED_SOURCES[source]
        lines.append(f"- {source}: {info['licence']} ({info['repository']} @ {info['commit']})")
    if any(PUBLISHED_SOURCES[s]["repository"] == "tatsu-lab/alpaca_eval" for s in report.sources):
        lines += ["", "CC BY-NC 4.0: https://creativecommons.org/licenses/by-nc/4.0/"]
    return "\n".join(lines) + "\n"


def published_outputs(configs: Iterable[str] = PUBLISHED_CONFIGS) -> list[str]:
    """The names :func:`save_published_judgment_data` writes in its folder (for ``check_output_dir``)."""
    configs = list(configs)
    files = [f"validation_{c}.jsonl" for c in _VALIDATION_FILES if c in configs]
    return [*configs, "hub", "build_report.json", *files]


def render_published_card(
    configs: Mapping[str, datasets.DatasetDict],
    report: PublishedBuildReport,
    *,
    repo_id: str | None = None,
    template_path: str | Path | None = None,
):
    """The Hub dataset card of :func:`build_published_judgment_data`'s output, with the build's real counts.

    Args:
        configs: the configs returned by the build.
        report: its report (sources, decontamination, explanations, rows, settings).
        repo_id: the Hub id shown in the usage snippet (``"<your-repo>"`` when None).
        template_path: the Jinja card template (default ``dataset_cards/published_judgments.md``).

    Returns:
        A ``huggingface_hub.DatasetCard``: YAML header (``license``: ``cc-by-nc-4.0`` when only AlpacaEval data is
        in, else ``other`` with ``license_name``; ``configs`` with ``data_files`` per split; ``dataset_info``), then
        Summary, Structure, Creation (each source with its repository@commit, licence and row counts;
        decontamination counts per benchmark; swap augmentation; split), Bias and Limitations, Citation.

    Raises:
        FileNotFoundError: the card template is missing (a broken install).
    """
    from importlib.resources import files

    from huggingface_hub import DatasetCard, DatasetCardData

    from .._version import __version__
    from ..eval_instruct.hub import CARD_PACKAGE, _size_category

    path = Path(template_path) if template_path else Path(str(files(CARD_PACKAGE) / PUBLISHED_CARD_TEMPLATE))
    if not path.is_file():
        raise FileNotFoundError(f"dataset card template {path} not found (a broken install?)")
    autoj = "autoj_single_train" in report.sources
    card_data = DatasetCardData(
        license="other" if autoj else "cc-by-nc-4.0",
        language=["en"],
        task_categories=["text-generation", "text-classification"],
        pretty_name="Published LLM-judge critiques for critic training (AlpacaEval, Auto-J)",
        size_categories=[_size_category(sum(len(d) for dd in configs.values() for d in dd.values()))],
        tags=["llm-as-a-judge", "critique", "critiquellm", "alpacaeval", "auto-j", "preference"],
        configs=[
            {
                "config_name": name,
                "data_files": [{"split": split, "path": f"{name}/{split}-*"} for split in splits],
            }
            for name, splits in configs.items()
        ],
    )
    if autoj:
        card_data.license_name = "cc-by-nc-4.0-and-research-only"
        card_data.license_link = "LICENSE"
    infos = datasets.info.DatasetInfosDict(
        {
            name: datasets.DatasetInfo(
                features=next(iter(splits.values())).features,
                splits=datasets.SplitDict({s: datasets.SplitInfo(s, num_examples=len(d)) for s, d in splits.items()}),
            )
            for name, splits in configs.items()
        }
    )
    infos.to_dataset_card_data(card_data)
    sources = [
        {"name": name, **PUBLISHED_SOURCES[name], **info, "skipped_total": sum(info["skipped"].values())}
        for name, info in report.sources.items()
    ]
    return DatasetCard.from_template(
        card_data,
        template_path=str(path),
        repo_id=repo_id or "<your-repo>",
        configs=[{"name": n, "splits": report.rows.get(n, {})} for n in configs],
        sources=sources,
        decontamination=report.decontamination,
        explanations=report.explanations,
        questions=report.questions,
        settings=report.settings,
        autoj=autoj,
        version=__version__,
    )


def save_published_judgment_data(
    configs: Mapping[str, datasets.DatasetDict],
    report: PublishedBuildReport,
    out_dir: str | Path,
    *,
    card: Any = None,
) -> dict[str, Path]:
    """Write the build's output folder.

    Layout: ``<out_dir>/<config>/`` (``save_to_disk`` ``DatasetDict`` with ``train`` / ``validation``, what a
    recipe's ``dataset_mixture`` points at: ``id: <out_dir>``, ``config: <config>``), ``<out_dir>/hub/``
    (``<config>/<split>-00000-of-00001.parquet`` per config and split, ``LICENSE`` (each source's licence) and
    ``README.md`` = ``card`` when given: the folder :func:`push_published_judgment_data` uploads), ``<out_dir>/build_report.json``
    (:meth:`PublishedBuildReport.to_dict`), and ``<out_dir>/validation_<config>.jsonl`` for the pointwise and the
    pairwise SFT configs without ``messages`` / ``template`` columns (``hf-critic grade --human-score score``,
    ``hf-critic meta-eval --benchmark generic:...``). Each folder is written under a temporary name and renamed
    into place.

    Args:
        configs, report: what :func:`build_published_judgment_data` returned.
        out_dir: target folder (created). Keep it out of version control (``outputs/`` is git-ignored): AlpacaEval's
            data is CC BY-NC 4.0 and Auto-J's has no licence.
        card: the dataset card (:func:`render_published_card`), or None for no ``README.md``.

    Returns:
        ``{name: path}`` for every config folder, ``hub``, ``report`` and each validation file.
    """
    from ..io import write_text

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    quiet = not datasets.are_progress_bars_disabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        for config, splits in configs.items():
            shards = {s: 1 for s, d in splits.items() if len(d) == 0}
            _replace_folder(
                out_dir / config,
                lambda tmp, splits=splits, shards=shards: splits.save_to_disk(str(tmp), num_shards=shards),
            )
            written[config] = out_dir / config
        _replace_folder(out_dir / "hub", lambda tmp: _write_hub(tmp, configs, report, card))
        written["hub"] = out_dir / "hub"
    finally:
        if quiet:
            datasets.enable_progress_bars()
    for config in _VALIDATION_FILES:
        if config not in configs or "validation" not in configs[config]:
            continue
        data = configs[config]["validation"]
        data = data.remove_columns([c for c in ("messages", "template", "template_version") if c in data.column_names])
        lines = [json.dumps(row, ensure_ascii=False) for row in data]
        path = out_dir / f"validation_{config}.jsonl"
        write_text(path, "".join(line + "\n" for line in lines))
        written[f"validation_{config}"] = path
    written["report"] = write_text(out_dir / "build_report.json", json.dumps(report.to_dict(), indent=2) + "\n")
    return written


def _replace_folder(target: Path, write) -> None:
    """``write(tmp)`` into a new temporary folder beside ``target``, then that folder renamed onto ``target`` (which
    is removed first); the temporary folder is removed if anything fails."""
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        write(tmp)
        if target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_hub(tmp: Path, configs: Mapping[str, datasets.DatasetDict], report: PublishedBuildReport, card) -> None:
    """The Hub folder into ``tmp``: one parquet file per config and split, ``README.md`` (``card``, when given) and
    ``LICENSE``."""
    for config, splits in configs.items():
        (tmp / config).mkdir(parents=True)
        for split, data in splits.items():
            data.to_parquet(str(tmp / config / f"{split}-00000-of-00001.parquet"))
    if card is not None:
        (tmp / "README.md").write_text(str(card), encoding="utf-8")
    (tmp / "LICENSE").write_text(_licence_text(report), encoding="utf-8")


def push_published_judgment_data(out_dir: str | Path, repo_id: str, *, private: bool = True, api: Any = None) -> str:
    """Upload ``<out_dir>/hub`` (parquet per config and split, and the card) to the Hub dataset ``repo_id``.

    Args:
        out_dir: the folder :func:`save_published_judgment_data` wrote (with a card).
        repo_id: ``org/name``.
        private: create the repository private (an existing one keeps its visibility).
        api: an ``huggingface_hub.HfApi`` (tests pass a stand-in).

    Returns:
        The repository URL.

    Raises:
        RuntimeError: the Hub is offline (``HF_HUB_OFFLINE`` set): nothing is attempted.
        FileNotFoundError: no ``hub/README.md`` (save with a card first).
        Exception: whatever ``huggingface_hub`` raises for a failed upload (network, authentication).
    """
    import os

    from ..eval_instruct.hub import push_to_hub

    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE"):
        raise RuntimeError("the Hugging Face Hub is offline (HF_HUB_OFFLINE is set)")
    return push_to_hub(
        Path(out_dir) / "hub",
        repo_id,
        private=private,
        commit_message="Published judgment training data (hf-critic)",
        api=api,
    )
