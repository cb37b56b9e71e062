"""Reading records (files, folders, Hub ids) and writing critiques through `datasets`; errors name file, line, field.

Outputs are safe: :func:`check_output` / :func:`check_output_dir` run before any model loads (the target is writable,
is not an input, is a file where a file is meant, and exists only with ``overwrite``), and :func:`atomic_path` writes
to a temporary file in the same folder that is renamed into place, so a killed run never leaves half a file; the
temporary files of a killed write are removed by the next write of the same target.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import secrets
import string
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import datasets

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
#: The record columns that hold text (CritiqueLLM v2 §3.1 fields): a number or a boolean there is an error unless
#: the caller asks to stringify it (``--coerce-text``).
TEXT_FIELDS = ("question", "reference", "response", "response_1", "response_2")
#: The UTF-8 byte-order mark that Excel's "CSV UTF-8" (and Notepad's "UTF-8 with BOM") write first: read past, never
#: part of the first column name or the first row.
BOM = b"\xef\xbb\xbf"
# Files that mark a ``save_to_disk`` folder (dataset_info.json also sits in folders of data files).
_DISK_MARKERS = ("dataset_dict.json", "state.json", "dataset_info.json")


class RecordError(ValueError):
    """Bad input data: the message names the source, the row (0-based) or line (1-based), and the field."""


class OutputError(ValueError):
    """An output that cannot or must not be written: the message names the path and the fix."""


#: Suffixes :func:`save_records` writes.
OUTPUT_SUFFIXES = (".jsonl", ".json", ".parquet")


def _writable_folder(path: Path, what: str) -> None:
    """Raise OutputError unless ``path``'s nearest existing ancestor is a folder this process may write in."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"{what} {path}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path}: no permission to write in {ancestor}")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_output(
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike | None] = (),
    overwrite: bool = False,
    suffixes: Iterable[str] = OUTPUT_SUFFIXES,
    what: str = "--output",
) -> Path:
    """Check an output file before any work is done (before a model loads).

    Args:
        path: the file to be written.
        inputs: files the command reads (None entries are skipped); the output must be none of them.
        overwrite: allow replacing an existing file (``--overwrite``).
        suffixes: accepted file suffixes (lower case).
        what: the option's name for messages.

    Returns:
        ``path`` as a Path.

    Raises:
        OutputError: a suffix not in ``suffixes``, a directory at ``path``, an output equal to an input, an existing
            file without ``overwrite``, or a parent that is a file or not writable.
    """
    path = Path(path).expanduser()
    suffixes = tuple(suffixes)
    if path.suffix.lower() not in suffixes:
        raise OutputError(f"{what} {path}: must end in one of {', '.join(suffixes)}")
    if path.is_dir():
        raise OutputError(f"{what} {path}: is a directory; give a file name")
    for source in inputs:
        if source is not None and _same_file(path, Path(source).expanduser()):
            raise OutputError(f"{what} {path}: is also the input; write to another file")
    if path.exists() and not overwrite:
        raise OutputError(f"{what} {path}: already exists; pass --overwrite to replace it")
    _writable_folder(path, what)
    return path


def check_output_dir(
    path: str | os.PathLike,
    *,
    outputs: Iterable[str] = (),
    overwrite: bool = False,
    what: str = "--output-dir",
    inputs: Iterable[str | os.PathLike | None] = (),
) -> Path:
    """Check an output folder before any work is done.

    Args:
        path: the folder to be written (it may exist: runs resume there).
        outputs: names inside it that a run writes (``report.json``, ``dataset``); one that exists needs
            ``overwrite``.
        overwrite: allow replacing them (``--overwrite``).
        what: the option's name for messages.
        inputs: files or folders the command reads (None entries are skipped); the output folder must be none of
            them, nor inside one (writing there would change the input).

    Raises:
        OutputError: ``path`` is a file, is an input or inside one, a parent is a file or not writable, or an output
            exists without ``overwrite``.
    """
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise OutputError(f"{what} {path}: is a file, not a folder")
    for source in inputs:
        within = (path.resolve(), *path.resolve().parents)
        if source is not None and any(_same_file(folder, Path(source).expanduser()) for folder in within):
            raise OutputError(f"{what} {path}: is the input {source} or inside it; write to another folder")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputError(f"{what} {path}: no permission to write in it")
        existing = [name for name in outputs if (path / name).exists()]
        if existing and not overwrite:
            raise OutputError(f"{what} {path}: already holds {', '.join(existing)}; pass --overwrite to replace")
    else:
        _writable_folder(path, what)
    return path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path in ``path``'s folder to write to; renamed onto ``path`` when the block ends without error.

    A killed write leaves only a hidden ``.<name>.*.tmp`` file, which the next write of ``path`` removes; an error
    removes it at once. The folder is created.

    Example:
        >>> with atomic_path(out) as tmp:  # doctest: +SKIP
        ...     tmp.write_text("done")
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        stale.unlink(missing_ok=True)
    tmp = _new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _new_file(folder: Path, prefix: str, suffix: str) -> Path:
    """A new empty file ``<folder>/<prefix><random><suffix>``, made as ``open`` makes one: mode 0666 less the umask
    (``tempfile.mkstemp`` makes it 0600, and the file renamed into place kept that whatever the umask)."""
    while True:
        path = folder / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` through :func:`atomic_path`; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


# A --columns item starts at the string's start or after a comma followed by ``name=``; commas inside a join stay.
_COLUMN_ITEM = re.compile(r"(?:^|,)\s*([A-Za-z_][\w ]*?)\s*=")
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\\\": "\\"}


def parse_columns(spec: str | None) -> dict[str, str]:
    """Parse a ``--columns`` mapping ``"question=prompt,response=answer"`` (canonical=source).

    A source may be a join: a format string over source columns, ``question={instruction}\\n\\n{input}`` (the
    escapes ``\\n`` and ``\\t`` are read as a newline and a tab, so a shell user can type them); see
    :func:`rename_columns`. A comma inside a join is kept unless it is followed by ``name=``.

    Returns:
        ``{canonical_name: source_column_or_join}``; empty for None or "".

    Raises:
        ValueError: an item without ``=`` or with an empty side, or a join that is not a valid format string.
    """
    spec = (spec or "").strip()
    starts = list(_COLUMN_ITEM.finditer(spec))
    if spec and (not starts or starts[0].start() != 0):
        item = spec.split(",")[0]
        raise ValueError(f"--columns item {item!r} must look like canonical=source, e.g. question=prompt")
    mapping: dict[str, str] = {}
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(spec)
        canonical, source = match.group(1).strip(), spec[match.end() : end].strip()
        if not source or ("{" not in source and "," in source):
            raise ValueError(
                f"--columns item {spec[match.start() : end].lstrip(',')!r} must look like canonical=source, "
                "e.g. question=prompt"
            )
        if "{" in source:
            source = re.sub(r"\\[nt\\]", lambda m: _ESCAPES[m.group(0)], source)
            join_fields(source)  # validate now, not on the first row
        mapping[canonical] = source
    return mapping


def join_fields(template: str) -> list[str]:
    """The source columns a ``--columns`` join names, in order (``"{instruction}\\n\\n{input}"`` -> both).

    Raises:
        ValueError: a malformed format string, or a placeholder without a column name.
    """
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as err:
        raise ValueError(f"--columns join {template!r}: {err}") from None
    if not names or any(not n for n in names):
        raise ValueError(f"--columns join {template!r}: every {{...}} must name a source column")
    return names


def parse_label_map(spec: str | None) -> dict[str, str]:
    """Parse a ``--label-map`` / ``--verdict-label-map`` ``"0=tie,1=response_1,2=response_2"`` (value in the file =
    label).

    The label side is any spelling :func:`hf_critic.labels.normalize_labels` accepts (``tie``,
    ``response_1``, ``Assistant 2``, ``A``, ``0`` / ``1`` / ``2`` as schema codes); it is checked when the map is
    applied (:func:`~hf_critic.labels.normalize_labels`'s ``label_map``). Keys are compared as text:
    the integer 1 in a file matches the key ``1``.

    Returns:
        ``{value_in_file: label}`` (keys stripped, in the order given); empty for None or "".

    Raises:
        ValueError: an item without ``=``, an empty side, or a key given twice.
    """
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in (spec or "").split(","))):
        key, sep, label = (s.strip() for s in item.rpartition("="))
        if not sep or not key or not label:
            raise ValueError(f"label map item {item!r} must look like value=label, e.g. 0=tie or model_a=response_1")
        if key in mapping:
            raise ValueError(f"label map: value {key!r} is mapped twice")
        mapping[key] = label
    return mapping


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
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise RecordError(f"{path}:{number}: malformed JSON line ({err.msg})") from None
                if not isinstance(row, dict):
                    raise RecordError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
                yield f"{path}:{number}", row
        return
    _check_text(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # "-sig": a leading byte-order mark is dropped
    except json.JSONDecodeError as err:
        raise RecordError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None
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
        raise RecordError(f"{files[0]}: reading .xlsx needs openpyxl: pip install 'hf-critic[xlsx]'") from None
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


def rename_columns(
    dataset: datasets.Dataset, columns: Mapping[str, str], source: str = "data", coerce_text: bool = False
) -> datasets.Dataset:
    """Apply a ``{canonical: source_column}`` mapping; a source holding ``{...}`` is a join of source columns.

    A join ``"{instruction}\\n\\n{input}"`` is filled row by row (``str.format``); a missing (None) part joins as
    an empty string, so PandaLM-style rows with an empty ``input`` keep their instruction alone.

    Args:
        dataset: the records as read.
        columns: ``{canonical: source column or join}``.
        source: file name or id, for messages.
        coerce_text: stringify numbers and booleans in mapped or joined :data:`TEXT_FIELDS` and join parts.

    Raises:
        RecordError: a source column (or a join's column) is not in the dataset (lists the columns that are);
            a number or a boolean where text is expected, naming the row, the canonical field and the source
            column the user wrote, unless ``coerce_text``.
    """
    names = {c: (join_fields(src) if "{" in src else [src]) for c, src in columns.items()}
    missing = [n for ns in names.values() for n in ns if n not in dataset.column_names]
    if missing:
        spell = "; ".join(f"{c}={columns[c]!r}" for c, ns in names.items() if set(ns) & set(missing))
        raise RecordError(
            f"{source}: column(s) {missing} not found (--columns {spell}); the data has {dataset.column_names}"
        )
    joins = {c: src for c, src in columns.items() if "{" in src}
    for canonical, template in joins.items():
        parts = {n: _texts(dataset[n], source, canonical, n, coerce_text) for n in names[canonical]}
        values = [template.format_map({n: parts[n][i] or "" for n in parts}) for i in range(len(dataset))]
        if canonical in dataset.column_names:
            dataset = dataset.remove_columns(canonical)
        dataset = dataset.add_column(canonical, values, feature=datasets.Value("string"))
    renames = {src: canonical for canonical, src in columns.items() if src != canonical and canonical not in joins}
    clashing = [c for c in renames.values() if c in dataset.column_names and c not in renames]
    if clashing:
        dataset = dataset.remove_columns(clashing)
    dataset = dataset.rename_columns(renames) if renames else dataset
    for canonical in TEXT_FIELDS:
        if canonical in dataset.column_names and canonical not in joins:
            column = columns.get(canonical, canonical)
            values = dataset[canonical]
            if any(not isinstance(v, str) and v is not None for v in values):
                texts = _texts(values, source, canonical, column, coerce_text)
                dataset = dataset.remove_columns(canonical).add_column(
                    canonical, texts, feature=datasets.Value("string")
                )
    return dataset


def _texts(values: list, source: str, canonical: str, column: str, coerce: bool) -> list[str | None]:
    """Text values of one column: numbers and booleans stringified with ``coerce``, else an error naming the row."""
    out = []
    for row, value in enumerate(values):
        if value is None or isinstance(value, str):
            out.append(value)
        elif coerce and isinstance(value, (int, float, bool)):
            out.append(str(value))
        else:
            where = f"field {canonical!r}" + (f" (column {column!r} of the data)" if column != canonical else "")
            hint = "; stringify numbers and booleans with --coerce-text" if isinstance(value, (int, float)) else ""
            raise RecordError(f"{source}: row {row}, {where}: not text: {repr(value)[:40]}{hint}")
    return out


def check_fields(
    dataset: datasets.Dataset,
    fields: Iterable[str],
    source: str = "data",
    allow_empty: Iterable[str] = (),
    columns: Mapping[str, str] | None = None,
) -> None:
    """Check that every required field exists and holds a string in every row, non-empty unless allowed.

    Args:
        dataset: the records.
        fields: required column names.
        source: file name or id used in the message.
        allow_empty: fields that may hold an empty string (responses: an empty answer is still judged).
        columns: the ``--columns`` mapping, so a message names the column of the data the user mapped as well.

    Raises:
        RecordError: a missing column (listing what exists), or rows whose field is missing, not text, or
            empty where not allowed (the first ten named as ``row N, field F``; rows counted from 0).
    """
    fields = list(fields)
    missing = [f for f in fields if f not in dataset.column_names]
    if missing:
        raise RecordError(
            f"{source}: required column(s) {missing} missing (have {dataset.column_names}); "
            "map yours with --columns, e.g. --columns question=prompt"
        )
    bad, allow_empty = [], set(allow_empty)
    for field in fields:
        for row, value in enumerate(dataset[field]):
            if not isinstance(value, str) or (not value.strip() and field not in allow_empty):
                what = "missing (None)" if value is None else "empty" if isinstance(value, str) else "not text"
                original = (columns or {}).get(field, field)
                named = f"field {field!r}" + (f" (column {original!r} of the data)" if original != field else "")
                bad.append(f"row {row}, {named}: {what}")
    if bad:
        more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
        raise RecordError(f"{source}: {len(bad)} bad value(s): " + "; ".join(bad[:10]) + more)


def save_records(dataset: datasets.Dataset, path: str | os.PathLike) -> Path:
    """Write records as JSONL (UTF-8, one object per line) or parquet, chosen by the extension, atomically
    (:func:`atomic_path`). Commands check the target first with :func:`check_output`.

    Returns:
        The written path.

    Raises:
        OutputError: an extension other than .jsonl / .json / .parquet.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise OutputError(f"{path}: output must end in .jsonl or .parquet")
    with atomic_path(path) as tmp:  # a killed run leaves the previous file (or none), never half of one
        if suffix == ".parquet":
            dataset.to_parquet(str(tmp))
        else:
            dataset.to_json(str(tmp), lines=True, force_ascii=False)
    return path
