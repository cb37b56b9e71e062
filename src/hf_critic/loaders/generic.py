"""Any pointwise or pairwise JSON / JSONL / CSV / parquet file or Hub dataset, with a column and label mapping; the
rows and verdicts of a script's FILE arguments (:func:`rows_by_source`, :func:`row_verdicts`)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import datasets
import numpy as np

from ..core.errors import BadInputError
from ..core.labels import normalize_labels, swap_label
from ..core.schema import query_id
from ..io import (
    DATA_FILE_BUILDERS,
    RecordError,
    check_fields,
    iter_rows,
    load_records,
    load_saved,
    parse_columns,
    parse_label_map,
)
from .annotators import aggregate_labels, aggregate_scores

__all__ = ["gold_labels", "load_generic", "load_verdict_file", "row_verdicts", "rows_by_source"]

_REQUIRED = {
    "pointwise": ("question", "response"),
    "pairwise": ("question", "response_1", "response_2"),
}


def load_generic(
    source: str | os.PathLike,
    task: Literal["pointwise", "pairwise"],
    columns: Mapping[str, str] | str | None = None,
    label_map: Mapping[Any, Any] | str | None = None,
    digits: Literal["label", "position"] = "label",
    split: str = "train",
    *,
    label_columns: Sequence[str] | str | None = None,
    aggregate: Literal["majority", "mean"] = "majority",
    coerce_text: bool = False,
) -> datasets.Dataset:
    """Load a benchmark in any tabular layout and map it to the schema (CritiqueLLM v2 §3.1 settings).

    Args:
        source: a ``.jsonl`` / ``.json`` / ``.csv`` / ``.parquet`` / ``.xlsx`` file or a Hub dataset id.
        task: ``"pointwise"`` (needs ``question``, ``response``, ``human_score``) or ``"pairwise"`` (needs
            ``question``, ``response_1``, ``response_2``, ``label``). Optional everywhere: ``reference``
            (referenced setting), ``query_id`` (default: derived from the question text), ``system_id``,
            ``category``.
        columns: ``{canonical: source_column}`` renames or joins (``{"question": "{instruction}\\n\\n{input}"}``),
            or the CLI form ``"question=prompt,label=winner"`` (see :func:`hf_critic.io.parse_columns`).
        label_map: pairwise only: ``{value in the file: label}`` (or the CLI form ``"0=tie,1=response_1"``) for a
            dataset's own convention; every label must then be a key (see
            :func:`hf_critic.core.labels.normalize_labels`).
        digits: how digit strings are read without a label map, see
            :func:`hf_critic.core.labels.normalize_labels`.
        split: split to read from a Hub dataset.
        label_columns: several annotators' columns (or ``"a1,a2,a3"``) instead of one gold column: the gold
            ``label`` / ``human_score`` is their aggregate (:mod:`hf_critic.loaders.annotators`); each column is
            kept, mapped to codes (pairwise) or floats (pointwise), for the human ceiling of the report.
        aggregate: ``"majority"`` (pairwise default; a split vote is a tie) or ``"mean"``.
        coerce_text: stringify numbers and booleans in the text columns instead of refusing them.

    Returns:
        The dataset with canonical columns: ``query_id`` (string), ``human_score`` (float) or ``label``
        (0 / 1 / 2) cleaned, other columns kept as they are.

    Raises:
        RecordError: naming the source, row (0-based) and field (and the source column the user mapped): a
            missing column, empty text, non-text responses (without ``coerce_text``), a non-numeric human score,
            an unknown label or one missing from ``label_map``, a pair no annotator labelled.
        ValueError: an unknown ``task`` or ``aggregate``.
    """
    if task not in _REQUIRED:
        raise BadInputError(f"task must be 'pointwise' or 'pairwise', got {task!r}")
    mapping = parse_columns(columns) if isinstance(columns, str) or columns is None else dict(columns)
    dataset = load_records(source, mapping, split=split, coerce_text=coerce_text)
    _check_texts(dataset, task, source, mapping)
    dataset = gold_labels(
        dataset,
        task,
        label_map=label_map,
        digits=digits,
        label_columns=label_columns,
        aggregate=aggregate,
        source=str(source),
        columns=mapping,
    )
    return _with_ids(dataset, "human_score" if task == "pointwise" else "label")


def _check_texts(dataset: datasets.Dataset, task: str, source, mapping: Mapping[str, str]) -> None:
    """RecordError unless the question (and a reference, if any) is non-empty text and the task's responses are
    text (an empty answer is a (bad) answer, not an error)."""
    check_fields(dataset, ["question"], source=str(source), columns=mapping)
    for name in _REQUIRED[task][1:]:
        if name not in dataset.column_names:
            raise RecordError(f"{source}: required column {name!r} missing (have {dataset.column_names})")
        for row, value in enumerate(dataset[name]):
            if not isinstance(value, str):
                raise RecordError(f"{source}: row {row}, field {name!r}: not text: {repr(value)[:40]}")
    if "reference" in dataset.column_names:
        check_fields(dataset, ["reference"], source=str(source), columns=mapping)


def _with_ids(dataset: datasets.Dataset, target: str) -> datasets.Dataset:
    """``query_id`` as text (derived from the question where the data has none), ``system_id`` as text, and the
    canonical columns first (``target``: the gold column)."""
    if "query_id" in dataset.column_names:
        ids = [str(v) for v in dataset["query_id"]]
        dataset = dataset.remove_columns("query_id")
    else:
        ids = [query_id(q) for q in dataset["question"]]
    dataset = dataset.add_column("query_id", ids, feature=datasets.Value("string"))
    if "system_id" in dataset.column_names:
        dataset = dataset.cast_column("system_id", datasets.Value("string"))
    first = [
        "query_id",
        "system_id",
        "question",
        "reference",
        "response",
        "response_1",
        "response_2",
        target,
        "category",
    ]
    order = [c for c in first if c in dataset.column_names]
    return dataset.select_columns(order + [c for c in dataset.column_names if c not in order])


def gold_labels(
    dataset: datasets.Dataset,
    task: Literal["pointwise", "pairwise"],
    *,
    label_map: Mapping[Any, Any] | str | None = None,
    digits: Literal["label", "position"] = "label",
    label_columns: Sequence[str] | str | None = None,
    aggregate: Literal["majority", "mean"] | None = None,
    source: str = "data",
    columns: Mapping[str, str] | None = None,
    target: str | None = None,
    required: bool = True,
) -> datasets.Dataset:
    """Put the human judgement in the schema's column: ``label`` (codes 0 / 1 / 2) or ``human_score`` (float).

    The one place where a dataset's gold convention is read, for :func:`load_generic` and for ``hf-critic grade``
    / ``compare``: a label map, several annotator columns and their aggregate, numbers given as text.

    Args:
        dataset: records with canonical column names.
        task: ``"pairwise"`` (``label``) or ``"pointwise"`` (``human_score``).
        label_map: see :func:`load_generic` (pairwise; applied to every annotator column too).
        digits: see :func:`load_generic`.
        label_columns: annotator columns, see :func:`load_generic`.
        aggregate: ``"majority"`` or ``"mean"``; None: majority for labels, mean for scores.
        source: the file, for messages.
        columns: the ``--columns`` mapping, so a message names the column of the file as well.
        target: the gold column (default: ``label`` for pairwise, ``human_score`` for pointwise).
        required: a missing gold column, or a row without a gold value, is an error (else the dataset is returned as it
            is, and rows without a gold value keep None).

    Returns:
        The dataset with the gold column cleaned (and the annotator columns as codes / floats).

    Raises:
        RecordError: see :func:`load_generic`.
        ValueError: a label map given for a pointwise task, or an unknown ``aggregate``.
    """
    target = target or ("human_score" if task == "pointwise" else "label")
    if isinstance(label_map, str):
        label_map = parse_label_map(label_map)
    if label_map and task == "pointwise":
        raise BadInputError("label_map= is for pairwise labels; pointwise human scores are numbers")
    if isinstance(label_columns, str):
        label_columns = [c.strip() for c in label_columns.split(",") if c.strip()]
    names = list(label_columns or [target])
    missing = [c for c in names if c not in dataset.column_names]
    if missing:
        if not required and not label_columns:
            return dataset
        if not label_columns:
            raise RecordError(
                f"{source}: required column {target!r} missing (have {dataset.column_names}); map yours with "
                f"columns= ({target}=<your column>), or give several annotators' columns with label_columns="
            )
        raise RecordError(f"{source}: label_columns= {missing} not found; the data has {dataset.column_names}")

    values = _gold_values(dataset, task, names, digits, label_map, source, columns)
    if label_columns:
        dataset, gold = _aggregate_annotators(dataset, task, names, values, aggregate)
    else:
        gold = values[target]
    unlabelled = np.flatnonzero(gold < 0) if task == "pairwise" else np.flatnonzero(~np.isfinite(gold))
    if len(unlabelled) and (required or label_columns):
        what = f"no annotator of {names} gave a label" if label_columns else f"{_where(target, columns)} is missing"
        raise RecordError(f"{source}: row {int(unlabelled[0])}: {what} ({len(unlabelled)} such row(s))")
    # Without gold options a row without a human judgement is still judged; the figures leave it out and count it
    # (e.g. FastChat's -1 "no grade" in MT-Bench).
    missing = set(unlabelled.tolist())
    cleaned = [None if i in missing else v for i, v in enumerate(gold.tolist())]
    feature = datasets.Value("int64") if task == "pairwise" else datasets.Value("float64")
    if target in dataset.column_names:
        dataset = dataset.remove_columns(target)
    return dataset.add_column(target, cleaned, feature=feature)


def _where(name: str, columns: Mapping[str, str] | None) -> str:
    """``field 'name'``, with the column of the data it was mapped from (``--columns``), for messages."""
    original = (columns or {}).get(name, name)
    return f"field {name!r}" + (f" (column {original!r} of the data)" if original != name else "")


def _gold_values(dataset, task: str, names, digits: str, label_map, source: str, columns) -> dict[str, np.ndarray]:
    """``{column: codes}`` (pairwise: :func:`~hf_critic.core.labels.normalize_labels`) or ``{column: floats}``
    (pointwise) of each gold column; RecordError naming the row and the field of a bad value."""
    values = {}
    for name in names:
        try:
            if task == "pairwise":
                values[name] = normalize_labels(dataset[name], name=name, digits=digits, label_map=label_map or None)
            else:
                values[name] = _scores(dataset[name], name)
        except ValueError as err:
            raise RecordError(f"{source}: {_row_message(err, name, _where(name, columns))}") from None
    return values


def _aggregate_annotators(dataset, task: str, names, values: dict[str, np.ndarray], aggregate: str | None):
    """``(dataset, gold)``: the annotators' aggregate (``aggregate``; None: majority for labels, mean for scores),
    each annotator column kept as codes (None where unlabelled) or floats."""
    how = aggregate or ("majority" if task == "pairwise" else "mean")
    stacked = np.stack([values[n] for n in names], axis=1)
    gold = aggregate_labels(stacked, how) if task == "pairwise" else aggregate_scores(stacked, how)
    feature = datasets.Value("int64") if task == "pairwise" else datasets.Value("float64")
    for name in names:
        codes = values[name]
        kept = [None if v < 0 else int(v) for v in codes] if task == "pairwise" else codes.tolist()
        dataset = dataset.remove_columns(name).add_column(name, kept, feature=feature)
    return dataset, gold


def _scores(values: list, name: str) -> np.ndarray:
    """Human scores as floats (numbers written as text accepted; None stays missing)."""
    out = np.full(len(values), np.nan)
    for row, value in enumerate(values):
        if value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise BadInputError(f"{name}[{row}] not a number: {value!r}") from None
        if isinstance(value, bool) or not math.isfinite(number):
            raise BadInputError(f"{name}[{row}] not a finite number: {value!r}")
        out[row] = number
    return out


def _row_message(err: ValueError, name: str, where: str) -> str:
    """``"label[3] = 'x' is ..."`` -> ``"row 3, field 'label' (column ...): 'x' is ..."``, as every loader says."""
    match = re.match(rf"{re.escape(name)}\[(\d+)\]\s*(?:=\s*)?", str(err))
    return f"row {match.group(1)}, {where}: {str(err)[match.end() :]}" if match else f"{where}: {err}"


def rows_by_source(paths: Iterable[str | os.PathLike]) -> Iterator[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """The rows of each source a script's FILE arguments name, as ``(name, [(location, row), ...])``, one at a time.

    A data file or a saved ``Dataset`` is one source (named by its file name); a saved ``DatasetDict`` one per key
    (``<folder>/<split>``); any other folder stands for the data files in it, one source each in name order, as its
    glob would (a folder of ``hf-critic compare --output`` files). Locations are :func:`~hf_critic.io.iter_rows`'s.

    Raises:
        RecordError: a path that does not exist, a folder with neither data files nor a saved dataset, a source
            without rows (an empty file or split), and see :func:`~hf_critic.io.iter_rows`.
    """
    for path in (Path(p).expanduser() for p in paths):
        if not path.exists():
            raise RecordError(f"{path}: no such file or folder")
        if (path / "dataset_dict.json").is_file():
            sources = [(f"{path.name}/{key}", f"{path}/{key}", part) for key, part in load_saved(path).items()]
        elif path.is_dir() and not (path / "state.json").is_file():  # not a saved Dataset: the data files in it
            files = [f for f in sorted(path.iterdir()) if f.is_file() and f.suffix.lower() in DATA_FILE_BUILDERS]
            sources = [(f.name, f, None) for f in files]
            if not sources:
                raise RecordError(f"{path}: a folder with no data files ({', '.join(DATA_FILE_BUILDERS)}) nor dataset")
        else:
            sources = [(path.name, path, None)]
        for name, source, part in sources:
            rows = list(iter_rows(source)) if part is None else [(f"{source}[row {i}]", r) for i, r in enumerate(part)]
            if not rows:
                raise RecordError(f"{source}: no rows (the file or split is empty)")
            yield name, rows


_TRUE = {"true", "1", "yes", "y", "swapped", "exchange", "exchanged"}
_FALSE = {"false", "0", "no", "n", "original", ""}


def load_verdict_file(
    path: str | os.PathLike,
    task: Literal["pointwise", "pairwise"],
    field: str | None = None,
    *,
    label_map: Mapping[Any, Any] | str | None = None,
    parse: Callable[[str], Any] | None = None,
    order_column: str | None = None,
) -> list[Any]:
    """A judge's verdicts from a file of any shape, one row per benchmark row, in the benchmark's order.

    Args:
        path: a JSONL / JSON / CSV / parquet / xlsx file (errors name its line or row).
        task: ``"pairwise"``: verdicts are labels (codes 0 / 1 / 2 out); ``"pointwise"``: scores (floats out).
        field: the field holding the verdict (default ``output``, as Auto-J's files).
        label_map: the file's label convention (pairwise), see
            :func:`hf_critic.core.labels.normalize_labels`.
        parse: read the field as free text with this parser (``text -> ParsedCritique``, e.g. a template's, see
            :func:`hf_critic.parsing.parse`); its ``label`` / ``score`` is the verdict, None when unparsed.
        order_column: pairwise only: a field that is true (``true`` / ``1`` / ``yes`` / ``swapped``) where the row
            was judged with the two responses swapped (the verdict in swapped terms); those verdicts are mapped
            back to the original order (:func:`hf_critic.core.labels.swap_label`). As in critique-comparison files
            where each row was judged in one order only (Auto-J Eval-C's ``exchange``).

    Returns:
        One verdict per row: label codes or scores, None for a missing (null) or unparsed verdict.

    Raises:
        RecordError: naming the file and line / row and the field: a missing field, a value that is not a label
            (or not in ``label_map``), not a number, not text for ``parse``, or an order flag that is not a
            boolean.
        ValueError: ``order_column`` for pointwise verdicts.
    """
    return row_verdicts(
        list(iter_rows(path)), task, field or "output", label_map=label_map, parse=parse, order_column=order_column
    )


def row_verdicts(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    task: Literal["pointwise", "pairwise"],
    field: str,
    *,
    label_map: Mapping[Any, Any] | str | None = None,
    parse: Callable[[str], Any] | None = None,
    order_column: str | None = None,
) -> list[Any]:
    """The verdicts in ``field`` of rows read with their locations (:func:`hf_critic.io.iter_rows`): labels read by
    the project's label vocabulary (:func:`hf_critic.core.labels.normalize_labels`, never ``int()``), scores as numbers.

    Args:
        rows: ``(location, row)`` pairs; the location names file and line (or row) in messages.
        task, field, label_map, parse, order_column: see :func:`load_verdict_file`.

    Returns:
        One verdict per row: label codes 0 / 1 / 2 or float scores, None for a missing (null) or unparsed verdict.

    Raises:
        RecordError: naming the row's location and the field; see :func:`load_verdict_file`.
        ValueError: ``order_column`` for pointwise verdicts.
    """
    if order_column and task != "pairwise":
        raise BadInputError("order_column= is for pairwise verdicts (the order of the two responses)")
    rows = list(rows)
    for where, row in rows:
        if field not in row:
            raise RecordError(f"{where}: field {field!r} is missing (the row has {sorted(row)})")
    values = [row[field] for _, row in rows]
    try:
        if parse is not None:
            verdicts = []
            for (where, _), value in zip(rows, values, strict=True):
                if value is not None and not isinstance(value, str):
                    raise RecordError(
                        f"{where}: field {field!r} must be text for parse= (a verdict parser), got {value!r}"
                    )
                parsed = parse(value) if value is not None else None
                verdicts.append(None if parsed is None else parsed.label if task == "pairwise" else parsed.score)
        elif task == "pairwise":
            if isinstance(label_map, str):
                label_map = parse_label_map(label_map)
            codes = normalize_labels(values, name=field, label_map=label_map or None)
            verdicts = [None if c < 0 else int(c) for c in codes]
        else:
            verdicts = [None if math.isnan(v) else v for v in _scores(values, field).tolist()]
    except ValueError as err:
        match = re.match(rf"{re.escape(field)}\[(\d+)\]\s*(?:=\s*)?", str(err))
        if not match or isinstance(err, RecordError):
            raise
        raise RecordError(f"{rows[int(match.group(1))][0]}: field {field!r}: {str(err)[match.end() :]}") from None
    if order_column:
        for i, (where, row) in enumerate(rows):
            flag = row.get(order_column)
            number = isinstance(flag, (int, float)) and not isinstance(flag, bool) and flag in (0, 1)
            text = str(int(flag)) if number else str(flag).strip().lower()
            if text not in _TRUE | _FALSE or (flag is not None and not isinstance(flag, (bool, int, str))):
                raise RecordError(
                    f"{where}: field {order_column!r} must say whether the row was swapped, got {flag!r}"
                )
            if text in _TRUE:
                verdicts[i] = swap_label(verdicts[i])
    return verdicts
