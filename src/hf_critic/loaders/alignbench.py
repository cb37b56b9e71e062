"""AlignBench in CritiqueLLM's evaluation format (thu-coai/CritiqueLLM ``evaluation/{pointwise,pairwise}``).

CritiqueLLM v2 §4.1 (Table 1) evaluates pointwise grading and pairwise comparison on AlignBench (Liu et al.,
2023): human scores 1-5 for answers of 8 LLMs, and pairs of answers to the same query whose label follows
from their human scores. Published rows:

* pointwise: ``id, category, question, [reference], response, model, human_score``;
* pairwise: ``id, category, question, [reference], response_1, response_2, human_score_1, human_score_2, label``
  (0 = response 1 better, 1 = response 2 better, 2 = tie).

``id`` numbers rows, not queries (the 100-row pointwise samples hold 86 / 90 distinct questions), so the
query id used for text-level correlation is derived from the question text (:func:`query_id`).
A file with a ``reference`` field is the referenced setting; the column is absent for reference-free files,
which is how :class:`hf_critic.critic.Critic` picks the setting.
"""

from __future__ import annotations

import os

import datasets

from ..core.schema import query_id
from ..io import RecordError, iter_rows
from ._rows import as_dataset, field

__all__ = ["load_alignbench"]


def load_alignbench(source: str | os.PathLike, split: str = "train") -> datasets.Dataset:
    """Load a CritiqueLLM-format AlignBench file (pointwise or pairwise, referenced or reference-free).

    Args:
        source: a local ``.jsonl`` / ``.json`` file, or a Hub dataset id with the same fields.
        split: split to read from a Hub dataset.

    Returns:
        Pointwise: ``query_id, system_id (= model), question, [reference], response, human_score (1-5),
        category, id``. Pairwise: ``query_id, question, [reference], response_1, response_2, label (0/1/2),
        human_score_1, human_score_2, category, id``. One row per published row, in file order.

    Raises:
        RecordError: naming file, line and field, for a missing or ill-typed field, a label outside 0/1/2,
            rows that mix pointwise and pairwise, or a reference present in some rows only.
    """
    rows, task, referenced = [], None, None
    for where, raw in iter_rows(source, split=split):
        row_task = "pairwise" if "response_1" in raw or "response_2" in raw else "pointwise"
        has_reference = raw.get("reference") is not None
        if task is None:
            task, referenced = row_task, has_reference
        elif row_task != task:
            raise RecordError(f"{where}: a {row_task} row in a {task} file")
        elif has_reference != referenced:
            raise RecordError(
                f"{where}: field 'reference' is {'present' if has_reference else 'missing'} here but "
                f"{'present' if referenced else 'missing'} in the first row"
            )
        question = field(raw, "question", where)
        row = {"query_id": query_id(question)}
        if task == "pointwise":
            row["system_id"] = str(field(raw, "model", where, kind="any"))
        row["question"] = question
        if referenced:
            row["reference"] = field(raw, "reference", where)
        if task == "pointwise":
            row["response"] = field(raw, "response", where, kind="str")
            row["human_score"] = field(raw, "human_score", where, kind="score")
        else:
            row["response_1"] = field(raw, "response_1", where, kind="str")
            row["response_2"] = field(raw, "response_2", where, kind="str")
            label = field(raw, "label", where, kind="int")
            if label not in (0, 1, 2):
                raise RecordError(f"{where}: field 'label' must be 0, 1 or 2, got {label!r}")
            row["label"] = label
            row["human_score_1"] = field(raw, "human_score_1", where, kind="score", default=None)
            row["human_score_2"] = field(raw, "human_score_2", where, kind="score", default=None)
        row["category"] = field(raw, "category", where, default=None)
        row["id"] = str(field(raw, "id", where, kind="any", default=len(rows)))
        rows.append(row)
    extra = {
        "human_score_1": datasets.Value("float64"),
        "human_score_2": datasets.Value("float64"),
        "id": datasets.Value("string"),
    }
    return as_dataset(rows, extra)
