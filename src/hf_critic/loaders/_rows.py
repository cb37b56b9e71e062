"""Shared plumbing of the benchmark loaders: typed field access and Dataset building.

Every loader reads raw rows as ``(location, dict)`` pairs (:func:`hf_critic.io.iter_rows`), where the location names the file and the line
(JSONL, 1-based), the item (JSON array, 0-based) or the row (Hub dataset, 0-based), so that an error says
exactly where the bad value is: ``RecordError("autoj/test/testdata_pairwise.jsonl:17: field 'label' ...")``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import datasets

from ..io import RecordError

__all__ = ["as_dataset", "field"]

_MISSING = object()


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
