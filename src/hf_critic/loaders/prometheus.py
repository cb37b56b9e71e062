"""Prometheus benchmark JSON (prometheus-eval/prometheus-eval ``eval/benchmark/data``).

Kim et al. (2024), "Prometheus: Inducing Fine-grained Evaluation Capability in Language Models", §5: absolute
grading sets (``mt_bench_eval.json``, ``vicuna_eval.json``: ``idx, response_source, category, instruction,
gpt4_score`` (3 GPT-4 runs, 1-5), ``gpt4_feedback``) whose ``instruction`` is the whole grading prompt, and the
HHH alignment set (``hhh_alignment_eval.json``: ``source, chosen_instruction, rejected_instruction``). The
question, response, reference answer and rubric are cut out of the prompt's ``###`` sections.
"""

from __future__ import annotations

import os
import re
from typing import Literal

import datasets

from ..core.errors import BadInputError
from ..io import RecordError, iter_rows
from ._rows import as_dataset, field

__all__ = ["load_prometheus", "split_prometheus_prompt"]

# Sections are separated by exactly one blank line, so the fields come out exactly as inserted (a response ending in
# a newline keeps it) and the prometheus2 templates render the shipped prompts byte for byte (tests/formats/test_families.py).
_PROMPT = re.compile(
    r"###The instruction to evaluate:\n(?P<question>.*?)\n\n###Response to evaluate:\n(?P<response>.*?)\n\n"
    r"(?:###Reference Answer \(Score 5\):\n(?P<reference>.*?)\n\n)?###Score Rubrics:\n(?P<rubric>.*?)\n\n###Feedback:\s*$",
    re.S,
)


def split_prometheus_prompt(prompt: str, where: str = "prompt") -> dict[str, str | None]:
    """Cut a Prometheus absolute-grading prompt into ``question``, ``response``, ``reference``, ``rubric``.

    Returns:
        The four parts; ``reference`` is None when the prompt has no "Reference Answer (Score 5)" section.

    Raises:
        RecordError: the prompt does not have Prometheus' ``###`` sections.
    """
    match = _PROMPT.search(prompt)
    if match is None:
        raise RecordError(
            f"{where}: not a Prometheus grading prompt (no '###The instruction to evaluate' ... sections)"
        )
    return match.groupdict()


def load_prometheus(
    source: str | os.PathLike,
    order: Literal["alternate", "chosen_first"] = "alternate",
    split: str = "train",
) -> datasets.Dataset:
    """Load a Prometheus benchmark file: absolute grading sets as pointwise, HHH as pairwise records.

    Args:
        source: a local ``.json`` / ``.jsonl`` file or a Hub dataset id with the same fields.
        order: for chosen/rejected pairs: ``"alternate"`` (default) puts the chosen response first on even rows
            and second on odd rows, so that the labels are balanced and a critic that always picks one position
            scores 50%; ``"chosen_first"`` always puts it first (label 0).

    Returns:
        Pointwise: ``query_id`` (idx), ``system_id`` (response_source), ``question``, ``reference`` (absent when
        no row has one), ``response``, ``human_score`` (mean of the GPT-4 scores, 1-5), ``category``, ``rubric``,
        ``gpt4_scores``. Pairwise: ``query_id`` (row position), ``question``, ``response_1``, ``response_2``,
        ``label`` (0/1), ``category`` (HHH source), ``rubric``.

    Raises:
        RecordError: naming file, item and field, for a missing field or a prompt without Prometheus' sections.
    """
    if order not in ("alternate", "chosen_first"):
        raise BadInputError(f"order must be 'alternate' or 'chosen_first', got {order!r}")
    rows: list[dict] = []
    kind = None
    for where, raw in iter_rows(source, split=split):
        row_kind = "pairwise" if "chosen_instruction" in raw else "pointwise"
        if kind is None:
            kind = row_kind
        elif row_kind != kind:
            raise RecordError(f"{where}: a {row_kind} row in a {kind} file")
        if kind == "pointwise":
            rows.append(_pointwise_row(raw, where))
        else:
            rows.append(_pairwise_row(raw, where, len(rows), swap=order == "alternate" and len(rows) % 2 == 1))
    if kind == "pointwise" and all(row["reference"] is None for row in rows):
        for row in rows:
            del row["reference"]
    elif kind == "pointwise" and any(row["reference"] is None for row in rows):
        missing = next(i for i, row in enumerate(rows) if row["reference"] is None)
        raise RecordError(f"{source}: item {missing} has no reference answer while others do")
    return as_dataset(
        rows, {"rubric": datasets.Value("string"), "gpt4_scores": datasets.Sequence(datasets.Value("float64"))}
    )


def _pointwise_row(raw: dict, where: str) -> dict:
    """One absolute grading item as a pointwise record (``human_score``: the mean of its GPT-4 scores)."""
    parts = split_prometheus_prompt(field(raw, "instruction", where), f"{where}: field 'instruction'")
    scores = raw.get("gpt4_score")
    if not isinstance(scores, list) or not scores:
        raise RecordError(f"{where}: field 'gpt4_score' must be a non-empty list of scores")
    values = [field({"gpt4_score": s}, "gpt4_score", where, kind="score") for s in scores]
    return {
        "query_id": str(field(raw, "idx", where, kind="any")),
        "system_id": str(field(raw, "response_source", where, kind="any")),
        "question": parts["question"],
        "reference": parts["reference"],
        "response": parts["response"],
        "human_score": sum(values) / len(values),
        "category": field(raw, "category", where, default=None),
        "rubric": parts["rubric"],
        "gpt4_scores": values,
    }


def _pairwise_row(raw: dict, where: str, index: int, swap: bool) -> dict:
    """One HHH chosen / rejected item as the pairwise record number ``index`` (``swap``: the chosen response
    second, label 1)."""
    chosen = split_prometheus_prompt(field(raw, "chosen_instruction", where), f"{where}: field 'chosen_instruction'")
    rejected = split_prometheus_prompt(
        field(raw, "rejected_instruction", where), f"{where}: field 'rejected_instruction'"
    )
    if chosen["question"] != rejected["question"]:
        raise RecordError(f"{where}: chosen and rejected prompts ask different questions")
    return {
        "query_id": str(index),
        "question": chosen["question"],
        "response_1": rejected["response"] if swap else chosen["response"],
        "response_2": chosen["response"] if swap else rejected["response"],
        "label": 1 if swap else 0,
        "category": field(raw, "source", where, default=None),
        "rubric": chosen["rubric"],
    }
