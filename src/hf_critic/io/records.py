"""Reading records: data files, globs, local folders and Hub ids through `datasets`, the one loader of hf-critic
(:func:`load_records`), the rows of a JSON or JSONL file with their line (:func:`read_json_rows`), and one JSON file or
line as a value (:func:`read_json`, :func:`json_line`); errors name the file, the line and the field.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import datasets

from ..core.errors import MissingExtraError
from .columns import TEXT_FIELDS, rename_columns
from .errors import RecordError

#: Data-file suffix -> the ``datasets`` builder that reads it: the one table of file types (``excel``: pandas +
#: openpyxl, the ``xlsx`` extra; the first sheet).
DATA_FILE_BUILDERS = {
    ".jsonl": "json",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".arrow": "arrow",
    ".xlsx": "excel",
}
#: The UTF-8 byte-order mark that Excel's "CSV UTF-8" (and Notepad's "UTF-8 with BOM") write first: read past, never
#: part of the first column name or the first row.
BOM = b"\xef\xbb\xbf"
# Files that mark a ``save_to_disk`` folder (dataset_info.json also sits in folders of data files).
_DISK_MARKERS = ("dataset_dict.json", "state.json", "dataset_info.json")


def json_line(line: str, where: str) -> Any:
    """One line of a JSONL file as its value.

    Args:
        line: the line's text; where: ``"<path>:<line>"``, for the message.

    Raises:
        RecordError: malformed JSON, one line naming ``where`` and the JSON error.
    """
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        raise RecordError(f"{where}: malformed JSON line ({err.msg})") from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value of a local file (a report, a config, a benchmark's JSON file); a leading byte-order mark is
    dropped.

    Raises:
        RecordError: a missing file or a folder, bytes that are not UTF-8, or malformed JSON: one line naming the file,
            the line and the JSON error (``"<path>:<line>: malformed JSON (<error>)"``).
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise RecordError(f"{path}: is a directory, not a JSON file" if path.is_dir() else f"{path}: no such file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        start = err.start + (len(BOM) if raw.startswith(BOM) else 0)
        line = raw[:start].count(b"\n") + 1
        raise RecordError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[start]:02x}); save the file as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None


def read_json_rows(path: str | os.PathLike) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of a local ``.jsonl`` (one object per line) or ``.json`` (an array of objects, or one object of arrays).

    Yields:
        ``(location, row)``: location ``"<path>:<line>"`` (1-based) for JSONL, ``"<path>[<i>]"`` for JSON.

    Raises:
        RecordError: missing file, malformed JSON (with the line), or a row that is not an object.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise RecordError(f"{path}: no such file")
    if path.suffix.lower() == ".jsonl":
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                line = _utf8(raw[len(BOM) :] if number == 1 and raw.startswith(BOM) else raw, path, number)
                if not line.strip():
                    continue
                row = json_line(line, f"{path}:{number}")
                if not isinstance(row, dict):
                    raise RecordError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
                yield f"{path}:{number}", row
        return
    _check_text(path)
    data = read_json(path)
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        n = len(next(iter(data.values())))
        data = [{k: v[i] for k, v in data.items()} for i in range(n)]  # columnar JSON
    if not isinstance(data, list):
        raise RecordError(f"{path}: expected a JSON array of objects, got {type(data).__name__}")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise RecordError(f"{path}[{i}]: expected a JSON object, got {type(row).__name__}")
        yield f"{path}[{i}]", row


def _has_bom(path: Path) -> bool:
    """Whether ``path`` starts with the UTF-8 byte-order mark (Excel's "CSV UTF-8", Notepad's "UTF-8 with BOM")."""
    with path.open("rb") as handle:
        return handle.read(len(BOM)) == BOM


def _utf8(raw: bytes, path: Path, line: int) -> str:
    """One line of ``path`` decoded; RecordError naming file, line and column when it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecordError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1}); "
            "save the file as UTF-8"
        ) from None


def _check_text(path: Path) -> None:
    """RecordError for a directory, an empty file, or bytes that are not UTF-8 (naming the line): pyarrow's readers
    keep invalid bytes and fail only later, when a row is read, without naming the file. One streaming pass."""
    if path.is_dir():
        raise RecordError(f"{path}: is a directory, not a {path.suffix or 'data'} file")
    empty = True
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            _utf8(raw, path, number)
            empty = empty and not raw.strip()
    if empty:
        raise RecordError(f"{path}: the file is empty: no rows to judge")


def load_records(
    source: str | os.PathLike,
    columns: Mapping[str, str] | None = None,
    limit: int | None = None,
    split: str = "train",
    config: str | None = None,
    coerce_text: bool = False,
    split_must_exist: bool = False,
) -> datasets.Dataset:
    """Load records from a data file, a glob, a local folder or a Hub dataset id: the one loader of hf-critic.

    Args:
        source: a data file (``.jsonl`` / ``.json`` / ``.csv`` / ``.parquet`` / ``.arrow`` / ``.xlsx``) or a glob of them; a
            ``save_to_disk`` folder (a ``Dataset``, a ``DatasetDict`` keyed by splits or by configs), a folder with
            one such sub-folder per config, or a folder of data files; else a Hub dataset id (``org/name``).
        columns: ``{canonical: source_column}`` renames, e.g. ``{"question": "prompt"}``, or joins
            ``{"question": "{instruction}\\n\\n{input}"}`` (see :func:`rename_columns`).
        limit: keep only the first ``limit`` rows.
        split: the split of a folder or Hub dataset. A data file, a glob or a saved ``Dataset`` is one split: it gives
            its rows whatever split is asked (a file named as a validation set is read as one), unless
            ``split_must_exist``. A config's sub-folder holding one ``Dataset`` (Eval-Instruct's output) is one
            split, ``"train"``, and never gives its rows as another split.
        config: the config: a sub-folder, a key of a ``DatasetDict``, the Hub config, or, for data that holds
            several, the rows whose ``config`` (or ``setting``) column equals it.
        coerce_text: stringify numbers and booleans in the :data:`TEXT_FIELDS` (else they are an error).
        split_must_exist: a one-split source (data file, glob, saved ``Dataset``) answers only ``split="train"``:
            how a held-out split is asked for, so that training rows never come back as held-out rows.

    Returns:
        A ``datasets.Dataset`` with the canonical column names.

    Raises:
        RecordError: malformed JSONL (names the line), a mapped column absent from the data, an unsupported file
            type, a local-looking path (``./``, ``/``, ``~`` or a data-file suffix) that does not exist, a split or
            config a local dataset lacks (listing what it has), or a Hub id that cannot be loaded (offline, not
            cached); a text field holding a number or a boolean (without ``coerce_text``), naming the row and the
            column the data has.
    """
    dataset = _load_source(source, config, split, split_must_exist)
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    dataset = rename_columns(dataset, columns or {}, source=str(source), coerce_text=coerce_text)
    if Path(source).suffix.lower() == ".csv":
        dataset = _csv_numbers(dataset)
    return dataset


def _csv_numbers(dataset: datasets.Dataset) -> datasets.Dataset:
    """A CSV file read as text, with the columns that are not :data:`TEXT_FIELDS` and hold only numbers (scores,
    labels) cast to int64, else float64."""
    for column, feature in dataset.features.items():
        if column in TEXT_FIELDS or getattr(feature, "dtype", None) not in ("string", "large_string"):
            continue
        for dtype in ("int64", "float64"):
            try:
                dataset = dataset.cast_column(column, datasets.Value(dtype))
                break
            except (ValueError, TypeError, ArithmeticError):  # pyarrow's ArrowInvalid is a ValueError
                continue
    return dataset


def iter_rows(source: str | os.PathLike, split: str = "train") -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of any :func:`load_records` source with their location, for loaders that report bad fields by line.

    Yields:
        ``(location, row)``: from :func:`read_json_rows` for a ``.json`` / ``.jsonl`` file (file and line), else
        ``"<source>[row <i>]"`` (0-based) over :func:`load_records`.

    Raises:
        RecordError: see :func:`read_json_rows` and :func:`load_records`.
    """
    path = Path(source).expanduser()
    if path.suffix.lower() in (".json", ".jsonl") and not path.is_dir():
        yield from read_json_rows(path)
        return
    for i, row in enumerate(load_records(source, split=split)):
        yield f"{source}[row {i}]", row


def load_saved(path: str | os.PathLike) -> datasets.Dataset | datasets.DatasetDict:
    """A ``save_to_disk`` folder, loaded; RecordError in one line naming it and why when it cannot be."""
    try:
        return datasets.load_from_disk(str(path))
    except Exception as err:
        reason = " ".join(str(err).split())  # datasets' messages run over several lines
        raise RecordError(f"{path}: cannot be read as a save_to_disk dataset: {type(err).__name__}: {reason}") from err


def _load_source(
    source: str | os.PathLike, config: str | None, split: str, split_must_exist: bool
) -> datasets.Dataset:
    path = Path(source).expanduser()
    if path.is_dir():
        if path.suffix.lower() in DATA_FILE_BUILDERS and not any(path.iterdir()):
            raise RecordError(f"{path}: is an empty directory, not a {path.suffix} file")
        return _load_folder(path, config, split, split_must_exist)
    text = str(source)
    builder = DATA_FILE_BUILDERS.get(path.suffix.lower())
    if builder is not None:
        files = sorted(path.parent.glob(path.name)) if any(c in text for c in "*?[") else [path]
        if not files or not files[0].is_file():
            raise RecordError(f"{source}: no such file")
        _check_one_split(source, split, split_must_exist)
        dataset = _read_files(builder, files)
        return _filter_config(dataset, config, source) if config else dataset
    if path.exists():
        raise RecordError(f"{path}: unsupported file type {path.suffix!r}; use one of {sorted(DATA_FILE_BUILDERS)}")
    if text.startswith((".", "/", "~")):
        raise RecordError(f"{source}: no such file or folder")
    try:
        return datasets.load_dataset(text, config, split=split)
    except Exception as err:
        raise RecordError(
            f"{source}: not a local file, and loading it as a Hub dataset failed "
            f"(offline or not cached?): {type(err).__name__}: {err}"
        ) from err


def _read_files(builder: str, files: list[Path]) -> datasets.Dataset:
    kwargs = {}
    if builder in ("json", "csv"):
        for path in files:
            _check_text(path)  # names an empty file or the first line that is not UTF-8
        if any(_has_bom(path) for path in files):  # read the mark as what it is, not as part of the first name/row
            kwargs["encoding"] = "utf-8-sig"
    if builder == "csv":  # every column as text: "4" stays "4" (numbers are cast back by _csv_numbers)
        kwargs["features"] = datasets.Features({name: datasets.Value("string") for name in _csv_header(files[0])})
    try:
        if builder == "excel":
            return _read_excel(files)
        return datasets.load_dataset(builder, data_files=[str(f) for f in files], split="train", **kwargs)
    except RecordError:
        raise
    except Exception as err:
        rows = 0
        for path in files:
            if path.suffix.lower() in (".jsonl", ".json"):
                rows += sum(1 for _ in read_json_rows(path))  # raises naming the first bad line
            elif path.suffix.lower() == ".csv":
                rows += max(0, sum(1 for line in path.open(encoding="utf-8") if line.strip()) - 1)
            else:
                rows = -1
        if rows == 0:
            raise RecordError(f"{files[0]}: no rows to judge (the file holds no records)") from None
        raise RecordError(f"{files[0]}: cannot be read as {builder}: {err}") from err


def _csv_header(path: Path) -> list[str]:
    """The column names of a CSV file (its first row); RecordError when there is none."""
    with path.open(encoding="utf-8-sig", newline="") as handle:  # checked as UTF-8 by _check_text; BOM dropped
        header = next(csv.reader(handle), None)
    if not header:
        raise RecordError(f"{path}: the file is empty (no header row)")
    return header


def _read_excel(files: list[Path]) -> datasets.Dataset:
    """The first sheet of each workbook, concatenated (pandas + openpyxl: ``pip install hf-critic[xlsx]``)."""
    try:
        import openpyxl  # noqa: F401  (pandas needs it for .xlsx; say so plainly)
        import pandas as pd
    except ImportError:
        raise MissingExtraError(f"{files[0]}: reading .xlsx needs openpyxl", extra="xlsx") from None
    frames = [pd.read_excel(f, sheet_name=0) for f in files]
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    # Empty cells are NaN in pandas; in text columns they are missing values, as in a CSV read by datasets.
    frame = frame.astype(object).where(frame.notna(), None) if frame.isna().any().any() else frame
    return datasets.Dataset.from_pandas(frame, preserve_index=False)


def _check_one_split(source, split: str, split_must_exist: bool) -> None:
    """A one-split source asked for another split that must exist: RecordError (see :func:`load_records`)."""
    if split_must_exist and split != "train":
        raise RecordError(f"{source}: holds one split ('train'), no split {split!r}")


def _load_folder(path: Path, config: str | None, split: str, split_must_exist: bool) -> datasets.Dataset:
    if config and (path / config).is_dir():  # one split ('train') when the config's folder holds one Dataset
        return _load_folder(path / config, None, split, split_must_exist=True)
    if any((path / marker).is_file() for marker in _DISK_MARKERS):
        try:
            loaded = datasets.load_from_disk(str(path))
        except FileNotFoundError:
            pass  # dataset_info.json of a folder of data files, not a save_to_disk folder
        else:
            if isinstance(loaded, datasets.Dataset):
                _check_one_split(path, split, split_must_exist)
                return loaded
            if config and config in loaded:  # a DatasetDict keyed by configs
                return loaded[config]
            if split in loaded:
                return _filter_config(loaded[split], config, path) if config else loaded[split]
            raise RecordError(f"{path}: no split {split!r} (nor config {config!r}); it has {list(loaded)}")
    try:
        dataset = datasets.load_dataset(str(path), split=split)
    except Exception as err:
        raise RecordError(f"{path}: cannot be read as a folder of data files: {type(err).__name__}: {err}") from err
    return _filter_config(dataset, config, path) if config else dataset


def _filter_config(dataset: datasets.Dataset, config: str, where) -> datasets.Dataset:
    """Rows of one config from data that holds several, told apart by a ``config`` or ``setting`` column."""
    for column in ("config", "setting"):
        if column in dataset.column_names:
            return dataset.filter(lambda value: value == config, input_columns=column)
    raise RecordError(f"{where}: config {config!r} asked for, but the data has no 'config' or 'setting' column")
