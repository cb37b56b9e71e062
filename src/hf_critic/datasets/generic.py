"""Any pointwise or pairwise JSON / JSONL / CSV / parquet file or Hub dataset, with a column and label mapping."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any, Literal

import datasets
import numpy as np

from ..io import RecordError, check_fields, load_records, parse_columns
from ..meta_eval.agreement import normalize_labels
from ..schema import query_id

__all__ = ["load_generic"]

_REQUIRED = {
    "pointwise": ("question", "response"),
    "pairwise": ("question", "response_1", "response_2"),
}


def load_generic(
    source: str | os.PathLike,
    task: Literal["pointwise", "pairwise"],
    columns: Mapping[str, str] | str | None = None,
    label_map: Mapping[Any, Any] | None = None,
    digits: Literal["label", "position"] = "label",
    split: str = "train",
) -> datasets.Dataset:
    """Load a benchmark in any tabular layout and map it to the schema (CritiqueLLM v2 §3.1 settings).

    Args:
        source: a ``.jsonl`` / ``.json`` / ``.csv`` / ``.parquet`` file or a Hub dataset id.
        task: ``"pointwise"`` (needs ``question``, ``response``, ``human_score``) or ``"pairwise"`` (needs
            ``question``, ``response_1``, ``response_2``, ``label``). Optional everywhere: ``reference``
            (referenced setting), ``query_id`` (default: derived from the question text), ``system_id``,
            ``category``.
        columns: ``{canonical: source_column}`` renames, or the CLI form ``"question=prompt,label=winner"``.
        label_map: pairwise only: ``{value in the file: label}`` applied before the standard label spellings of
            :func:`hf_critic.meta_eval.agreement.normalize_labels` (e.g. ``{"model_a": 0, "model_b": 1, "tie (bothbad)": 2}``).
        digits: how digit strings are read, see :func:`hf_critic.meta_eval.agreement.normalize_labels`.
        split: split to read from a Hub dataset.

    Returns:
        The dataset with canonical columns: ``query_id`` (string), ``human_score`` (float) or ``label``
        (0 / 1 / 2) cleaned, other columns kept as they are.

    Raises:
        RecordError: naming the source, row (0-based) and field: a missing column, empty text, a non-numeric
            human score, or an unknown label.
        ValueError: an unknown ``task``.
    """
    if task not in _REQUIRED:
        raise ValueError(f"task must be 'pointwise' or 'pairwise', got {task!r}")
    mapping = parse_columns(columns) if isinstance(columns, str) or columns is None else dict(columns)
    dataset = load_records(source, mapping, split=split)
    target = "human_score" if task == "pointwise" else "label"
    check_fields(dataset, ["question"], source=str(source))
    for name in _REQUIRED[task][1:]:  # responses must be text; an empty answer is a (bad) answer, not an error
        if name not in dataset.column_names:
            raise RecordError(f"{source}: required column {name!r} missing (have {dataset.column_names})")
        for row, value in enumerate(dataset[name]):
            if not isinstance(value, str):
                raise RecordError(f"{source}: row {row}, field {name!r}: not text: {repr(value)[:40]}")
    if target not in dataset.column_names:
        raise RecordError(
            f"{source}: required column {target!r} missing (have {dataset.column_names}); map yours with "
            f"columns={{'{target}': '<your column>'}}"
        )
    if "reference" in dataset.column_names:
        check_fields(dataset, ["reference"], source=str(source))

    values = dataset[target]
    if task == "pointwise":
        cleaned = []
        for row, value in enumerate(values):
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise RecordError(f"{source}: row {row}, field 'human_score': not a number: {value!r}") from None
            if isinstance(value, bool) or not math.isfinite(number):
                raise RecordError(f"{source}: row {row}, field 'human_score': not a finite number: {value!r}")
            cleaned.append(number)
        feature = datasets.Value("float64")
    else:
        raw = np.asarray(values, dtype=object)
        if label_map:
            lookup = {(k.strip().lower() if isinstance(k, str) else k): v for k, v in label_map.items()}
            raw = np.asarray(
                [lookup.get(v.strip().lower() if isinstance(v, str) else v, v) for v in raw.tolist()], dtype=object
            )
        try:
            codes = normalize_labels(raw, name="label", digits=digits)
        except ValueError as err:
            raise RecordError(f"{source}: field {err}") from None
        if (codes < 0).any():
            row = int(np.flatnonzero(codes < 0)[0])
            raise RecordError(f"{source}: row {row}, field 'label' is missing")
        cleaned = codes.tolist()
        feature = datasets.Value("int64")
    dataset = dataset.remove_columns(target).add_column(target, cleaned, feature=feature)

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
