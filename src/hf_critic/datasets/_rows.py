"""Shared plumbing of the benchmark loaders: rows with their location, typed field access, Dataset building.

Every loader reads raw rows as ``(location, dict)`` pairs, where the location names the file and the line
(JSONL, 1-based), the item (JSON array, 0-based) or the row (Hub dataset, 0-based), so that an error says
exactly where the bad value is: ``RecordError("autoj/test/testdata_pairwise.jsonl:17: field 'label' ...")``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets

from ..io import RecordError

__all__ = ["RecordError", "as_dataset", "field", "hub_or_file_rows", "query_id_of", "read_rows"]

_MISSING = object()


def read_rows(path: str | os.PathLike) -> Iterator[tuple[str, dict[str, Any]]]:
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
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
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


def hub_or_file_rows(source: str | os.PathLike, split: str = "train") -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of a local JSON / JSONL file, or of a Hub dataset id / local dataset folder (``datasets.load_dataset``).

    Raises:
        RecordError: see :func:`read_rows`; a Hub id that cannot be loaded (offline and not cached).
    """
    path = Path(source).expanduser()
    if (
        path.is_file()
        or path.suffix.lower() in (".json", ".jsonl")
        or (not path.exists() and str(source).startswith((".", "/", "~")))
    ):
        yield from read_rows(path)
        return
    try:  # a Hub id, or a local dataset folder (data files that datasets.load_dataset understands)
        dataset = datasets.load_dataset(str(path) if path.is_dir() else str(source), split=split)
    except Exception as err:
        raise RecordError(
            f"{source}: not a local file, and loading it as a Hub dataset failed (offline or not cached?): "
            f"{type(err).__name__}: {err}"
        ) from err
    for i, row in enumerate(dataset):
        yield f"{source}[row {i}]", row


def field(
    row: Mapping[str, Any],
    name: str,
    where: str,
    kind: str = "text",
    default: Any = _MISSING,
    aliases: Sequence[str] = (),
) -> Any:
    """One typed field of a raw row.

    Args:
        row: the raw row.
        name: the field to read; ``aliases`` are tried after it.
        where: the row's location, for messages.
        kind: ``"text"`` (non-empty string), ``"str"`` (any string, empty allowed: published responses can be
            empty), ``"score"`` (finite number, bools refused), ``"int"``, ``"any"``.
        default: returned when the field is absent or None; without it, absence is an error.

    Raises:
        RecordError: ``"<where>: field '<name>' ..."`` when absent (and no default) or of the wrong kind.
    """
    value = None
    for key in (name, *aliases):
        if key in row and row[key] is not None:
            value = row[key]
            break
    if value is None:
        if default is not _MISSING:
            return default
        raise RecordError(f"{where}: field {name!r} is missing (the row has {sorted(row)})")
    if kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise RecordError(f"{where}: field {name!r} must be non-empty text, got {repr(value)[:60]}")
    elif kind == "str":
        if not isinstance(value, str):
            raise RecordError(f"{where}: field {name!r} must be text, got {repr(value)[:60]}")
    elif kind in ("score", "int"):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise RecordError(f"{where}: field {name!r} must be a number, got {value[:60]!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise RecordError(f"{where}: field {name!r} must be a finite number, got {repr(value)[:60]}")
        if kind == "int":
            if not float(value).is_integer():
                raise RecordError(f"{where}: field {name!r} must be an integer, got {value!r}")
            value = int(value)
        else:
            value = float(value)
    return value


def query_id_of(question: str) -> str:
    """A stable id for a query from its text (for files whose row ids are not query ids): ``q`` + 12 hex digits."""
    return "q" + hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:12]


def as_dataset(rows: list[dict[str, Any]], features: Mapping[str, Any] | None = None) -> datasets.Dataset:
    """``datasets.Dataset`` from mapped rows (all rows have the same keys), with explicit types for known columns."""
    known = {
        "query_id": datasets.Value("string"),
        "system_id": datasets.Value("string"),
        "question": datasets.Value("string"),
        "reference": datasets.Value("string"),
        "response": datasets.Value("string"),
        "response_1": datasets.Value("string"),
        "response_2": datasets.Value("string"),
        "human_score": datasets.Value("float64"),
        "label": datasets.Value("int64"),
        "category": datasets.Value("string"),
        **(features or {}),
    }
    if not rows:
        return datasets.Dataset.from_dict({})
    columns = {key: [row[key] for row in rows] for key in rows[0]}
    feats = {key: known[key] for key in columns if key in known}
    if len(feats) == len(columns):
        return datasets.Dataset.from_dict(columns, features=datasets.Features(feats))
    dataset = datasets.Dataset.from_dict(columns)
    for key, feat in feats.items():
        if dataset.features[key] != feat:
            dataset = dataset.cast_column(key, feat)
    return dataset
