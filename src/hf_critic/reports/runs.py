"""A run as hf-critic wrote it, read back for a report: critique rows, figures and calibration files.

Every output the toolkit writes is one of:

* a critiques file (``grade`` / ``compare``, with ``--swap`` or ``--cascade``): JSONL or parquet rows, the record
  columns beside the ``critique_*`` columns of :mod:`hf_critic.core.schema`;
* a ``meta-eval --output-dir`` folder: ``report.md``, ``report.json``, PNG plots and, for critics run there,
  ``critiques/<critic>/<dataset>.jsonl``;
* a ``calibrate --report-dir`` folder: the same report files and ``critiques/<critic>.jsonl``;
* a ``calibrate --output`` calibration file (JSON): each critic's threshold, bound and coverage.

:func:`load_run` reads any mix of them into one :class:`Run`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import datasets

from ..core.errors import BadInputError
from ..io import read_json

__all__ = ["Figures", "Run", "RowSet", "load_run", "parse_run_spec", "read_figures"]

#: The suffixes of critique files (what ``save_records`` writes).
ROW_SUFFIXES = (".jsonl", ".parquet", ".json")
#: The ``format`` value that marks a calibration file (``calibrate --output``).
CALIBRATION_FORMAT = "hf-critic-calibration/"


@dataclass
class RowSet:
    """One critic's critiques of one dataset.

    Attributes:
        critic: the critic's name (``[CRITIC/DATASET=]`` of the spec, else the file's folder).
        dataset: the dataset's name (else the file's stem).
        path: the file the rows were read from.
        rows: the rows, as written.
    """

    critic: str
    dataset: str
    path: str
    rows: datasets.Dataset

    @property
    def name(self) -> str:
        """``critic on dataset``."""
        return f"{self.critic} on {self.dataset}"


@dataclass
class Figures:
    """The report files of one folder.

    Attributes:
        source: the folder.
        images: ``{file name: PNG bytes}``, sorted by name.
        markdown: ``report.md``'s text (None when absent).
        summary: ``report.json`` parsed (None when absent).
    """

    source: str
    images: dict[str, bytes] = field(default_factory=dict)
    markdown: str | None = None
    summary: dict | None = None


@dataclass
class Run:
    """Everything read from the paths given: row sets, report folders and calibration files (parsed JSON)."""

    row_sets: list[RowSet] = field(default_factory=list)
    figures: list[Figures] = field(default_factory=list)
    calibrations: list[dict] = field(default_factory=list)


def parse_run_spec(spec: str) -> tuple[str | None, str | None, str]:
    """``[CRITIC/DATASET=]PATH`` (as ``meta-eval --critiques`` takes it) -> ``(critic, dataset, path)``; the names are
    None where not given."""
    name, sep, path = spec.partition("=")
    if not sep or not path or Path(spec).exists():
        return None, None, spec
    critic, _, dataset = name.partition("/")
    return critic.strip() or None, dataset.strip() or None, path.strip()


def read_figures(folder: Path) -> Figures:
    """The report files of ``folder``: its PNG plots, report.md and report.json (each where present).

    Raises:
        RecordError: a report.json that is no JSON (naming the file and the line).
    """
    figures = Figures(str(folder))
    for png in sorted(folder.glob("*.png")):
        figures.images[png.name] = png.read_bytes()
    if (folder / "report.md").is_file():
        figures.markdown = (folder / "report.md").read_text(encoding="utf-8")
    if (folder / "report.json").is_file():  # malformed: RecordError naming the file and the line
        figures.summary = read_json(folder / "report.json")
    return figures


def _folder_row_files(folder: Path) -> list[tuple[str, str, Path]]:
    """``(critic, dataset, file)`` of the critiques under ``folder/critiques``: ``<critic>/<dataset>.jsonl``
    (meta-eval) or ``<critic>.jsonl`` (calibrate, whose dataset is the folder's name)."""
    found = []
    for path in sorted((folder / "critiques").rglob("*")):
        if path.suffix in ROW_SUFFIXES and path.is_file():
            parts = path.relative_to(folder / "critiques").parts
            if len(parts) == 1:
                found.append((path.stem, folder.resolve().name, path))
            else:
                found.append((parts[0], path.stem, path))
    return found


def _is_calibration(path: Path) -> dict | None:
    """The parsed calibration file at ``path``, or None when it is no calibration file."""
    if path.suffix != ".json":
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if isinstance(data, dict) and str(data.get("format", "")).startswith(CALIBRATION_FORMAT):
        return data
    return None


def _load_rows(critic: str, dataset: str, path: Path) -> RowSet:
    """Raises RecordError (naming the file) when the rows cannot be read, ValueError when they hold no verdict
    column."""
    from ..core import schema
    from ..io import load_records

    rows = load_records(str(path))
    if schema.CRITIQUE_LABEL not in rows.column_names and schema.CRITIQUE_SCORE not in rows.column_names:
        raise BadInputError(
            f"{path}: no {schema.CRITIQUE_LABEL} or {schema.CRITIQUE_SCORE} column: not a critiques "
            "file of hf-critic grade / compare / calibrate"
        )
    return RowSet(critic, dataset, str(path), rows)


def load_run(specs: list[str]) -> Run:
    """Read every ``[CRITIC/DATASET=]PATH`` of ``specs`` (a critiques file, a calibration file, or a meta-eval /
    calibrate report folder).

    Returns:
        A :class:`Run`; a folder adds its figures and its ``critiques/`` rows, a file its rows or its calibration.

    Raises:
        ValueError: a path that does not exist, a folder with no report and no critiques, or a file with no
            critique column (each naming the path).
        RecordError: a file that cannot be read (naming its line).
    """
    run = Run()
    for spec in specs:
        critic, dataset, text = parse_run_spec(spec)
        path = Path(text)
        if path.is_dir():
            figures = read_figures(path)
            rows = _folder_row_files(path)
            if not (figures.images or figures.markdown or rows):
                raise BadInputError(f"{path}: no report.md, plot or critiques/ folder: not an hf-critic output folder")
            run.figures.append(figures)
            run.row_sets += [_load_rows(c, d, p) for c, d, p in rows]
        elif not path.is_file():
            raise BadInputError(f"{spec}: no such file or folder")
        elif (calibration := _is_calibration(path)) is not None:
            run.calibrations.append({"path": str(path), **calibration})
        else:
            run.row_sets.append(_load_rows(critic or path.resolve().parent.name, dataset or path.stem, path))
    return run
