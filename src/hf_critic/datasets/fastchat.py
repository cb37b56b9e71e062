"""MT-Bench and Vicuna-Bench in FastChat ``llm_judge`` layout, graded by GPT-4 (single-answer grading).

A benchmark folder (e.g. ``shared/data/selfeval/mt_bench``) holds ``question.jsonl`` (``question_id``,
``category``, ``turns``), ``reference_answer/<judge>.jsonl`` (reference answers for math / reasoning / coding),
``model_answer/<model>.jsonl`` (``choices[0]["turns"]``) and ``model_judgment/<judge>_single.jsonl``
(``question_id, model, judge, user_prompt, judgment, score, turn``; score 1-10, -1 when FastChat could not parse
the judge's rating). Zheng et al. (2023), "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", §3; the
glass-box self-evaluation paper (seed 001, Table 1) correlates with these GPT-4 grades.

By default the graded answer is taken from the judge prompt itself (``answers="judged"``): the answer files do
not always hold what GPT-4 graded (in the SelfEval release, MT-Bench ``llama2-7b-chat.jsonl`` matches 10 of the
80 graded first-turn answers). ``answers="model_answer"`` reads ``model_answer/<model>.jsonl`` instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import datasets

from ._rows import RecordError, as_dataset, field, read_rows

__all__ = ["load_fastchat"]

_SINGLE = re.compile(r"\[The Start of Assistant's Answer\]\n(.*)\n\[The End of Assistant's Answer\]", re.S)
_MULTI = re.compile(
    r"### Assistant A:\n(.*?)\n\n### User:\n.*?\n\n### Assistant A:\n(.*)\n\n"
    r"<\|The End of Assistant A's Conversation with User\|>",
    re.S,
)


def _turns(raw: dict, where: str, name: str = "turns") -> list[str]:
    value = raw.get(name)
    if name == "choices":
        if not isinstance(value, list) or not value or not isinstance(value[0], dict):
            raise RecordError(f"{where}: field 'choices' must be a non-empty list of objects")
        value = value[0].get("turns")
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise RecordError(f"{where}: field 'turns' must be a list of strings, got {repr(value)[:60]}")
    return value


def _dialogue(question_1: str, answer_1: str, question_2: str) -> str:
    """The second-turn question with its context, as FastChat's multi-turn judge prompt lays it out."""
    return f"### User:\n{question_1}\n\n### Assistant:\n{answer_1}\n\n### User:\n{question_2}"


def load_fastchat(
    bench_dir: str | os.PathLike,
    judge: str = "gpt-4",
    turn: int = 1,
    models: Sequence[str] | None = None,
    with_reference: bool = False,
    answers: Literal["judged", "model_answer"] = "judged",
) -> datasets.Dataset:
    """Load one FastChat benchmark folder as pointwise records scored by the judge.

    Args:
        bench_dir: the folder holding ``question.jsonl``, ``model_judgment/`` and, as needed, ``model_answer/``
            and ``reference_answer/``.
        judge: the judge's file stem: ``model_judgment/<judge>_single.jsonl``, ``reference_answer/<judge>.jsonl``.
        turn: 1 (default) or 2. For turn 2 the question holds the first exchange and the second user turn
            (``### User: ... ### Assistant: ... ### User: ...``) and the response is the second answer.
        models: keep only these models (default: every model the judge graded).
        with_reference: add a ``reference`` column (the reference answer of that turn) and keep only questions
            that have one (MT-Bench: 30 math / reasoning / coding questions); default reference-free.
        answers: where the graded answers come from, see the module docstring.

    Returns:
        ``query_id`` (question_id as a string), ``system_id`` (model), ``question``, [``reference``],
        ``response``, ``human_score`` (the judge's 1-10 grade; None where FastChat recorded -1, i.e. unparsed),
        ``category``, ``turn``, ``judgment`` (the judge's text). Rows in judgment-file order.

    Raises:
        RecordError: naming file, line and field: missing files or fields, a judged question absent from
            ``question.jsonl``, two judgments of the same (model, question, turn), an answer that cannot be found.
        ValueError: ``turn`` not 1 or 2, or an unknown ``answers``.
    """
    if turn not in (1, 2):
        raise ValueError(f"turn must be 1 or 2, got {turn!r}")
    if answers not in ("judged", "model_answer"):
        raise ValueError(f"answers must be 'judged' or 'model_answer', got {answers!r}")
    root = Path(bench_dir).expanduser()
    if not root.is_dir():
        raise RecordError(f"{root}: not a FastChat benchmark folder")

    questions: dict[int, tuple[str | None, list[str]]] = {}
    for where, raw in read_rows(root / "question.jsonl"):
        qid = field(raw, "question_id", where, kind="int")
        questions[qid] = (field(raw, "category", where, default=None), _turns(raw, where))

    references: dict[int, list[str]] = {}
    if with_reference:
        for where, raw in read_rows(root / "reference_answer" / f"{judge}.jsonl"):
            references[field(raw, "question_id", where, kind="int")] = _turns(raw, where, "choices")

    answer_files: dict[str, dict[int, list[str]]] = {}

    def answer_file(model: str) -> dict[int, list[str]]:
        if model not in answer_files:
            table = {}
            for where, raw in read_rows(root / "model_answer" / f"{model}.jsonl"):
                table[field(raw, "question_id", where, kind="int")] = _turns(raw, where, "choices")  # last wins
            answer_files[model] = table
        return answer_files[model]

    rows, seen = [], {}
    for where, raw in read_rows(root / "model_judgment" / f"{judge}_single.jsonl"):
        if field(raw, "turn", where, kind="int", default=1) != turn:
            continue
        model = str(field(raw, "model", where, kind="any"))
        if models is not None and model not in models:
            continue
        qid = field(raw, "question_id", where, kind="int")
        if qid not in questions:
            raise RecordError(f"{where}: field 'question_id' = {qid} is not in {root / 'question.jsonl'}")
        if (model, qid) in seen:
            raise RecordError(
                f"{where}: a second judgment of {model!r} on question {qid} turn {turn} ({seen[model, qid]})"
            )
        seen[model, qid] = where
        if with_reference and qid not in references:
            continue
        category, user_turns = questions[qid]
        if len(user_turns) < turn:
            raise RecordError(f"{root / 'question.jsonl'}: question {qid} has no turn {turn}")
        if answers == "judged":
            prompt = field(raw, "user_prompt", where)
            match = (_SINGLE if turn == 1 else _MULTI).search(prompt)
            if match is None:
                raise RecordError(f"{where}: field 'user_prompt' holds no turn-{turn} answer in FastChat's layout")
            graded = match.groups()
        else:
            table = answer_file(model)
            if qid not in table or len(table[qid]) < turn:
                raise RecordError(
                    f"{root / 'model_answer' / (model + '.jsonl')}: no turn-{turn} answer to question {qid}"
                )
            graded = tuple(table[qid][:turn])
        question = user_turns[0] if turn == 1 else _dialogue(user_turns[0], graded[0], user_turns[1])
        score = field(raw, "score", where, kind="score")
        row = {"query_id": str(qid), "system_id": model, "question": question}
        if with_reference:
            if len(references[qid]) < turn:
                raise RecordError(
                    f"{root / 'reference_answer' / (judge + '.jsonl')}: question {qid} has no turn {turn}"
                )
            row["reference"] = references[qid][turn - 1]
        row.update(
            response=graded[-1],
            human_score=None if score == -1 else score,
            category=category,
            turn=turn,
            judgment=field(raw, "judgment", where, default=None),
        )
        rows.append(row)
    return as_dataset(rows, {"turn": datasets.Value("int64"), "judgment": datasets.Value("string")})
