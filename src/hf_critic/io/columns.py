"""Columns of the records: the ``--columns`` and ``--label-map`` options parsed, source columns renamed or joined to
the canonical names, and the canonical fields checked (text where text is meant, present where required)."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping

import datasets

from ..core.errors import BadInputError
from .errors import RecordError

#: The record columns that hold text (CritiqueLLM v2 §3.1 fields): a number or a boolean there is an error unless
#: the caller asks to stringify it (``--coerce-text``).
TEXT_FIELDS = ("question", "reference", "response", "response_1", "response_2")

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
        raise BadInputError(f"columns= item {item!r} must look like canonical=source, e.g. question=prompt")
    mapping: dict[str, str] = {}
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(spec)
        canonical, source = match.group(1).strip(), spec[match.end() : end].strip()
        if not source or ("{" not in source and "," in source):
            raise BadInputError(
                f"columns= item {spec[match.start() : end].lstrip(',')!r} must look like canonical=source, "
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
        raise BadInputError(f"columns= join {template!r}: {err}") from None
    if not names or any(not n for n in names):
        raise BadInputError(f"columns= join {template!r}: every {{...}} must name a source column")
    return names


def parse_label_map(spec: str | None) -> dict[str, str]:
    """Parse a ``--label-map`` / ``--verdict-label-map`` ``"0=tie,1=response_1,2=response_2"`` (value in the file =
    label).

    The label side is any spelling :func:`hf_critic.core.labels.normalize_labels` accepts (``tie``,
    ``response_1``, ``Assistant 2``, ``A``, ``0`` / ``1`` / ``2`` as schema codes); it is checked when the map is
    applied (:func:`~hf_critic.core.labels.normalize_labels`'s ``label_map``). Keys are compared as text:
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
            raise BadInputError(
                f"label map item {item!r} must look like value=label, e.g. 0=tie or model_a=response_1"
            )
        if key in mapping:
            raise BadInputError(f"label map: value {key!r} is mapped twice")
        mapping[key] = label
    return mapping


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
            f"{source}: column(s) {missing} not found (columns= {spell}); the data has {dataset.column_names}"
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
            "map yours with columns=, e.g. question=prompt"
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
