"""CriticBench (Lan et al., 2024; ``opencompass/CriticBench`` on the Hub) and prediction folders in its format.

Two kinds of folders:

* **the benchmark** (the Hub layout, gold labels included)::

      {obj,sub}_{dev,test}_data/{task}_feedback_correction.json          feedback and correction items
      {obj,sub}_{dev,test}_data/correction_part/{task}_feedback.json     feedback on (near-)correct responses
      {obj,sub}_{dev,test}_data/{task}_comp_feedback.json                comparison pairs
      obj_{dev,test}_data/meta_feedback_single/meta_feedback_singlewise_{task}.json

  Each file is a JSON array; fields specific to one evaluation format sit in a nested ``obj`` / ``sub`` object that
  CriticEval's own loader lifts to the top level (so does :func:`load_criticbench`).
* **predictions** (what CriticEval's inference writes, e.g. ``example_data/deepseek-67b-chat-hf-prediction.tgz``):
  ``{split}_{task}_{dimension}_{obj|sub}[_reverse|_correction_part].json``, each ``{"0": {"origin_prompt",
  "prediction"}, ...}``; read by :func:`load_criticbench_predictions`.

Field names of the Hub files follow CriticEval's evaluators (``critic_bench/evaluators``): ``question``,
``generation``, ``article`` (summary), ``unit_test``, ``exec_rest`` (code_exec), ``data_source``, ``feedback``,
``feedback_score`` (1-7, feedback), ``ground_truth_answer`` (math), ``metadata.quality``; comparison:
``generation_a``, ``generation_b``, ``exec_rest_a/b``, ``preference`` (its last character A / B / C),
``metadata.quality_a_sub/quality_b_sub``; meta-feedback: ``ground_truth_feedback``, ``evaluated_feedback``,
``meta_feedback_score``, ``raw_quality``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import datasets

from ..core.errors import BadInputError
from ..core.labels import CHOICE_LETTERS
from ..io import RecordError, read_json_rows
from ..loaders._rows import field
from .prompts import CRITICBENCH_DIMENSIONS, CRITICBENCH_TASKS, get_criticbench_template

__all__ = [
    "OBJECTIVE_CORRECTION_TASKS",
    "PREDICTION_FILE",
    "criticbench_files",
    "load_criticbench",
    "load_criticbench_predictions",
    "strip_opencompass_wrapper",
]

#: Tasks whose correction is scored objectively (answer match / unit tests); the others are judged by GPT-4.
OBJECTIVE_CORRECTION_TASKS = ("math_cot", "math_pot", "code_exec", "code_not_exec")
#: Prediction file names: split, task, dimension, format, optional part (``reverse`` / ``correction_part``).
PREDICTION_FILE = re.compile(
    r"^(?P<split>dev|test)_(?P<task>" + "|".join(sorted(CRITICBENCH_TASKS, key=len, reverse=True)) + r")_"
    r"(?P<dimension>comp_feedback|meta_feedback|feedback|correction)_(?P<evaluation>obj|sub)"
    r"(?:_(?P<part>reverse|correction_part))?\.json$"
)
# OpenCompass's chat wrapper around the message in the shared DeepSeek-67B prompts.
_WRAPPER = ("User: ", "\n\nAssistant: ")


def strip_opencompass_wrapper(origin_prompt: str) -> str:
    """The user message inside an OpenCompass ``origin_prompt`` (``"User: {message}\\n\\nAssistant: "``).

    Raises:
        ValueError: the prompt does not have that wrapper.
    """
    head, tail = _WRAPPER
    if not (origin_prompt.startswith(head) and origin_prompt.endswith(tail)):
        raise BadInputError("not an OpenCompass 'User: ...\\n\\nAssistant: ' prompt")
    return origin_prompt[len(head) : -len(tail)]


def criticbench_files(root: str | os.PathLike, dimension: str, split: str, evaluation: str, task: str):
    """The Hub files holding one task's items of a dimension: ``[(part, path), ...]`` (part ``main`` or
    ``correction_part``), existing or not, in the order CriticEval reads them and its prediction files follow."""
    folder = Path(root) / f"{evaluation}_{split}_data"
    if dimension == "meta_feedback":
        return [("main", folder / "meta_feedback_single" / f"meta_feedback_singlewise_{task}.json")]
    if dimension == "comp_feedback":
        return [("main", folder / f"{task}_comp_feedback.json")]
    files = [("main", folder / f"{task}_feedback_correction.json")]
    if dimension == "feedback" and task != "code_exec":  # code_exec has no correction part (CriticEval run_feedback)
        files.append(("correction_part", folder / "correction_part" / f"{task}_feedback.json"))
    return files


def _flat(row: dict, evaluation: str, where: str) -> dict:
    """Lift the format-specific ``obj`` / ``sub`` object to the top level; code results to their ``detail`` text."""
    flat = {k: v for k, v in row.items() if k not in ("obj", "sub")}
    nested = row.get(evaluation)
    if nested is not None:
        if not isinstance(nested, dict):
            raise RecordError(f"{where}: field {evaluation!r} must be an object, got {type(nested).__name__}")
        flat.update(nested)
    for key in ("exec_rest", "exec_rest_a", "exec_rest_b"):
        if isinstance(flat.get(key), dict):
            flat[key] = field(flat[key], "detail", f"{where}.{key}", kind="str")
    return flat


def _preference(row: dict, where: str) -> int:
    value = field(row, "preference", where, kind="text")
    letter = value.strip()[-1:].upper()
    if letter not in CHOICE_LETTERS:
        raise RecordError(f"{where}: field 'preference' must end in A, B or C, got {value[:40]!r}")
    return CHOICE_LETTERS[letter]


def _quality(row: dict, dimension: str, where: str) -> str | None:
    metadata = row.get("metadata") or {}
    if dimension == "meta_feedback":
        return field(row, "raw_quality", where, kind="str", default=None)
    if dimension == "comp_feedback":
        pair = {metadata.get("quality_a_sub"), metadata.get("quality_b_sub")}
        return "easy" if pair == {"low", "high"} else "hard"  # CriticEval: low vs high is the easy comparison
    return metadata.get("quality")


def _record(row: dict, dimension: str, task: str, evaluation: str, where: str) -> dict[str, Any]:
    """One Hub item -> hf-critic columns (schema names where they exist) + the rendered prompt(s)."""
    flat = _flat(row, evaluation, where)
    template = get_criticbench_template(dimension, task, evaluation)
    for name in template.fields:
        field(flat, name, where, kind="str")  # every prompt field present and text: errors name file, item, field
    record: dict[str, Any] = {
        "question": flat["question"],
        "category": task,
        "quality": _quality(flat, dimension, where),
        "prompt": template.render(flat),
    }
    if dimension == "comp_feedback":
        reverse = {**flat, "generation_a": flat["generation_b"], "generation_b": flat["generation_a"]}
        if "exec_rest_a" in flat:
            reverse.update(exec_rest_a=flat["exec_rest_b"], exec_rest_b=flat["exec_rest_a"])
        record.update(
            response_1=flat["generation_a"],
            response_2=flat["generation_b"],
            prompt_reverse=template.render(reverse),
            label=_preference(flat, where) if evaluation == "obj" else None,
        )
        return record
    record["response"] = flat["generation"]
    if dimension == "feedback":
        gold = {} if evaluation == "obj" else {"default": None}  # objective feedback is scored against it
        record["human_score"] = field(flat, "feedback_score", where, kind="score", **gold)
    elif dimension == "meta_feedback":
        record.update(
            critique=flat["evaluated_feedback"],
            reference_feedback=flat["ground_truth_feedback"],
            human_score=field(flat, "meta_feedback_score", where, kind="score"),
        )
    elif dimension == "correction":
        record.update(
            feedback=flat["feedback"],
            reference=field(flat, "ground_truth_answer", where, kind="any", default=None),
            unit_test=field(flat, "unit_test", where, kind="str", default=None),
            data_source=field(flat, "data_source", where, kind="str", default=None),
        )
        if record["reference"] is not None:
            record["reference"] = str(record["reference"])
    return record


def load_criticbench(
    root: str | os.PathLike,
    dimension: str,
    *,
    split: str = "test",
    evaluation: str = "obj",
    tasks: tuple[str, ...] | None = None,
) -> datasets.Dataset:
    """Load one dimension of CriticBench from a folder in the Hub layout (see the module docstring).

    Args:
        root: the folder holding ``obj_test_data/`` etc. (a local snapshot of ``opencompass/CriticBench``).
        dimension: ``feedback``, ``comp_feedback``, ``correction`` or ``meta_feedback``.
        split: ``dev`` or ``test``.
        evaluation: ``obj`` (objective: gold scores, preferences, answers) or ``sub``; meta-feedback is ``obj`` only.
        tasks: the tasks to read (default: all present, in benchmark order; for objective correction only
            the math and code tasks exist).

    Returns:
        One row per item, in file order: ``task``, ``part`` (``main`` / ``correction_part``), ``index`` (position
        within its file, the key of the matching prediction file), ``prediction_file`` (CriticEval's name for the
        model's answers), ``question``, ``category`` (= task), ``quality``, ``prompt`` (the rendered message);
        feedback: ``response``, ``human_score`` (1-7 or None); comparison: ``response_1``, ``response_2``,
        ``prompt_reverse`` (the two swapped), ``label`` (0 = A better, 1 = B, 2 = neither; None for ``sub``);
        correction: ``response``, ``feedback``, ``reference`` (math answer or None), ``unit_test``,
        ``data_source``; meta-feedback: ``response``, ``critique``, ``reference_feedback``, ``human_score``.

    Raises:
        ValueError: unknown dimension, split or format.
        RecordError: no file found for any task; malformed JSON; an item lacking a prompt or gold field (the
            message names file, item and field).
    """
    if dimension not in CRITICBENCH_DIMENSIONS or split not in ("dev", "test") or evaluation not in ("obj", "sub"):
        raise BadInputError(
            f"unknown CriticBench dimension / split / format: {dimension!r} / {split!r} / {evaluation!r}"
        )
    if dimension == "meta_feedback" and evaluation != "obj":
        raise BadInputError("CriticBench meta-feedback is evaluated objectively only (evaluation='obj')")
    if tasks is None and dimension == "correction":  # CriticEval scores these objectively, the rest by GPT-4
        objective = evaluation == "obj"
        tasks = tuple(t for t in CRITICBENCH_TASKS if (t in OBJECTIVE_CORRECTION_TASKS) == objective)
    rows: list[dict[str, Any]] = []
    for task in tasks or CRITICBENCH_TASKS:
        for part, path in criticbench_files(root, dimension, split, evaluation, task):
            if not path.is_file():
                continue
            suffix = "_correction_part" if part == "correction_part" else ""
            for index, (where, row) in enumerate(read_json_rows(path)):
                rows.append(
                    {
                        "task": task,
                        "part": part,
                        "index": index,
                        "prediction_file": f"{split}_{task}_{dimension}_{evaluation}{suffix}.json",
                        **_record(row, dimension, task, evaluation, where),
                    }
                )
    if not rows:
        raise RecordError(f"{root}: no CriticBench {dimension} files for {evaluation}_{split}_data (Hub layout)")
    return datasets.Dataset.from_list(rows)


def load_criticbench_predictions(folder: str | os.PathLike) -> datasets.Dataset:
    """All prediction files of a folder in CriticEval's format (see the module docstring), one row per item.

    Args:
        folder: the folder, or a file / glob pattern of files in it (``.../test_chat_*_obj*.json``: a subset).

    Returns:
        Columns ``file``, ``split``, ``task``, ``dimension``, ``evaluation``, ``part`` (``main``, ``reverse`` or
        ``correction_part``), ``index`` (int key), ``message`` (the user message, OpenCompass wrapper removed; None
        when the prompt has no such wrapper), ``origin_prompt`` and ``prediction``; sorted by file and key.

    Raises:
        RecordError: no prediction file in the folder, a file that is not ``{"0": {...}}``, or an item without a
            string ``origin_prompt`` / ``prediction`` (names file, key and field).
    """
    folder = Path(folder)
    pattern = ("*.json", folder) if folder.is_dir() else (folder.name, folder.parent)
    files = sorted(p for p in pattern[1].glob(pattern[0]) if PREDICTION_FILE.match(p.name))
    if not files:
        raise RecordError(
            f"{folder}: no CriticBench prediction files ({{split}}_{{task}}_{{dimension}}_obj|sub*.json)"
        )
    rows = []
    for path in files:
        meta = PREDICTION_FILE.match(path.name).groupdict()
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise RecordError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None
        if not isinstance(items, dict) or not all(str(k).isdigit() for k in items):
            raise RecordError(f"{path}: expected an object keyed by item number ('0', '1', ...)")
        for key in sorted(items, key=int):
            where = f"{path}[{key!r}]"
            item = items[key]
            if not isinstance(item, dict):
                raise RecordError(f"{where}: expected an object with origin_prompt and prediction")
            prompt = field(item, "origin_prompt", where, kind="str")
            try:
                message = strip_opencompass_wrapper(prompt)
            except ValueError:
                message = None
            rows.append(
                {
                    "file": path.name,
                    **{k: meta[k] for k in ("split", "task", "dimension", "evaluation")},
                    "part": meta["part"] or "main",
                    "index": int(key),
                    "message": message,
                    "origin_prompt": prompt,
                    "prediction": field(item, "prediction", where, kind="str"),
                }
            )
    return datasets.Dataset.from_list(rows)
