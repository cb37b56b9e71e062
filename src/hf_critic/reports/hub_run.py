"""A run on the Hub, the ecosystem's way (as lighteval pushes its details and alpaca_eval its annotations): the
run's rows as parquet, one config per critic and benchmark, its report files and viewer page, and a dataset card.

:func:`write_hub_folder` writes the folder exactly as the upload sends it; :func:`push_run` uploads that folder with
``huggingface_hub`` (``create_repo`` then ``upload_folder``). ``datasets.load_dataset(folder, config)`` reads the
folder back with the rows written, which is how the folder is checked offline.

Layout::

    README.md                                  the card: YAML header (licence, configs with data_files, dataset_info)
    data/<config>/train-00000-of-00001.parquet one config per critic and benchmark (config: <critic>--<dataset>)
    report/view.html                           the run viewer (hf_critic.reports.html_view)
    report/<folder>/...                        each report folder's report.md, report.json and PNG plots
"""

from __future__ import annotations

import datetime
import re
import shutil
from importlib.resources import files
from pathlib import Path

from .._version import __version__
from ..core.errors import BadInputError
from .figures import Measured, headline
from .runs import Run

__all__ = ["CARD_TEMPLATE", "config_names", "push_run", "render_run_card", "write_hub_folder"]

#: The card template in ``dataset_cards/`` (shipped as ``hf_critic._dataset_cards``).
CARD_TEMPLATE = "critic_run.md"
DATA_FILE = "train-00000-of-00001.parquet"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.") or "run"


def config_names(run: Run) -> list[str]:
    """One Hub config name per row set, ``<critic>--<dataset>`` made safe (letters, digits, ``_ . -``), numbered
    (``-2``, ``-3``) where two row sets would share one."""
    names: list[str] = []
    for row_set in run.row_sets:
        base = f"{_slug(row_set.critic)}--{_slug(row_set.dataset)}"
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}-{k}"
        names.append(name)
    return names


def _card_data(run: Run, names: list[str], *, license: str, pretty_name: str):
    """The card's YAML header: licence, tags, one config per row set with its data file, and each one's features."""
    import datasets
    from huggingface_hub import DatasetCardData

    card_data = DatasetCardData(
        license=license,
        pretty_name=pretty_name,
        task_categories=["text-generation"],
        tags=["llm-as-a-judge", "critique", "hf-critic", "evaluation"],
        configs=[
            {"config_name": n, "data_files": [{"split": "train", "path": f"data/{n}/{DATA_FILE}"}]} for n in names
        ],
    )
    infos = {
        n: datasets.DatasetInfo(
            features=r.rows.features,
            splits=datasets.SplitDict({"train": datasets.SplitInfo("train", num_examples=len(r.rows))}),
        )
        for n, r in zip(names, run.row_sets, strict=True)
    }
    datasets.info.DatasetInfosDict(infos).to_dataset_card_data(card_data)
    return card_data


def render_run_card(
    run: Run,
    names: list[str],
    figures,
    page_sets: list[dict],
    images: list[str],
    *,
    license: str,
    pretty_name: str,
    repo_id: str | None,
    options: dict[str, str],
):
    """The dataset card of a run, from ``dataset_cards/critic_run.md``.

    Args:
        run: the run.
        names: its config names (:func:`config_names`).
        figures: the run's :class:`~hf_critic.reports.runs.Figures` (their report.json runs give the headline).
        page_sets: :class:`~hf_critic.reports.view_rows.PageRows` ``.sets`` (the outcome counts).
        images: the plots' paths in the folder.
        license: the judged data's licence (a Hub licence id such as ``cc-by-4.0``, or ``other`` / ``unknown``).
        pretty_name: the card's title.
        repo_id: the Hub id in the usage snippet (``<your-repo>`` when None).
        options: the run's options to record (``--card-option``).

    Returns:
        A ``huggingface_hub.DatasetCard``.
    """
    from huggingface_hub import DatasetCard

    configs = [
        {
            "name": n,
            "critic": r.critic,
            "dataset": r.dataset,
            "path": r.path,
            "task": s["task"],
            "rows": len(r.rows),
            "counts": s["counts"],
        }
        for n, r, s in zip(names, run.row_sets, page_sets, strict=True)
    ]
    template = Path(str(files("hf_critic._dataset_cards") / CARD_TEMPLATE))
    return DatasetCard.from_template(
        _card_data(run, names, license=license, pretty_name=pretty_name),
        template_path=str(template),
        pretty_name=pretty_name,
        repo_id=repo_id or "<your-repo>",
        version=__version__,
        configs=configs,
        calibrations=run.calibrations,
        options=options,
        headline=headline(figures),
        images=images,
        license=license,
        date=datetime.date.today().isoformat(),
    )


def _copy_reports(figures, folder: Path) -> list[str]:
    """Each report folder's files under ``report/<name>/``; returns the plots' paths (relative to ``folder``)."""
    images = []
    for k, f in enumerate(figures):
        target = folder / "report" / (_slug(Path(f.source).name) if Path(f.source).is_dir() else f"measured-{k}")
        target.mkdir(parents=True, exist_ok=True)
        for name, png in f.images.items():
            (target / name).write_bytes(png)
            images.append(str((target / name).relative_to(folder)))
        if f.markdown:
            (target / "report.md").write_text(f.markdown, encoding="utf-8")
    return images


def write_hub_folder(
    measured: Measured,
    folder: str | Path,
    *,
    license: str = "unknown",
    pretty_name: str = "hf-critic run",
    repo_id: str | None = None,
    options: dict[str, str] | None = None,
    page: str | None = None,
) -> Path:
    """Write the folder the upload sends (see the module's layout), replacing ``folder`` if it exists.

    Args:
        measured: the run, its figures and rows (:func:`~hf_critic.reports.figures.measure`); it must hold rows.
        folder: where to write.
        license: the judged data's licence for the card's header.
        pretty_name: the card's title.
        repo_id: the Hub id named in the card's snippet.
        options: the run's options for the card (critic, template, decoding ...).
        page: the viewer page's HTML (:func:`~hf_critic.reports.html_view.render_view`) for ``report/view.html``.

    Returns:
        ``folder`` as a Path.

    Raises:
        ValueError: the run has no rows (a folder of figures only has nothing to browse).
    """
    run = measured.run
    if not run.row_sets:
        raise BadInputError("no critique rows to publish: give the critiques files (or folders holding critiques/)")
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    names = config_names(run)
    for name, row_set in zip(names, run.row_sets, strict=True):
        (folder / "data" / name).mkdir(parents=True)
        row_set.rows.to_parquet(str(folder / "data" / name / DATA_FILE))
    images = _copy_reports(measured.figures, folder)
    if page is not None:
        (folder / "report" / "view.html").parent.mkdir(parents=True, exist_ok=True)
        (folder / "report" / "view.html").write_text(page, encoding="utf-8")
    card = render_run_card(
        run,
        names,
        measured.figures,
        measured.page.sets,
        images,
        license=license,
        pretty_name=pretty_name,
        repo_id=repo_id,
        options=options or {},
    )
    (folder / "README.md").write_text(str(card), encoding="utf-8")
    return folder


def push_run(folder: str | Path, repo_id: str, *, private: bool = True, api=None) -> str:
    """Upload a folder :func:`write_hub_folder` wrote to the dataset repository ``repo_id`` (created if missing).

    Args:
        folder: the folder.
        repo_id: ``org/name``.
        private: create the repository private (an existing one keeps its visibility).
        api: an ``huggingface_hub.HfApi`` (tests pass a stand-in); default: one with ``HF_TOKEN`` or the saved login.

    Returns:
        The repository's URL.

    Raises:
        FileNotFoundError: the folder has no card (README.md).
    """
    from ..eval_instruct.hub import push_to_hub

    return push_to_hub(folder, repo_id, private=private, api=api, commit_message="hf-critic run: critiques and report")
