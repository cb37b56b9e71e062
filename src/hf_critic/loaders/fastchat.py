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
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import datasets

from ..core.errors import BadInputError
from ..io import RecordError, read_json_rows
from ._rows import as_dataset, field

__all__ = ["FastChatJudgment", "load_fastchat", "read_judgments", "read_questions"]

# FastChat's judge prompts: single-v1 / single-math-v1 (turn 1, the math one with a reference answer) and the
# multi-turn single-v1-multi-turn (the first exchange, then the graded second answer).
_SINGLE = re.compile(
    r"(?:\[Question\]\n(?P<question>.*?)\n\n)?"
    r"(?:\[The Start of Reference Answer\]\n(?P<reference>.*?)\n\[The End of Reference Answer\]\n\n)?"
    r"\[The Start of Assistant's Answer\]\n(?P<answer>.*)\n\[The End of Assistant's Answer\]",
    re.S,
)
_MULTI = re.compile(
    r"### Assistant A:\n(.*?)\n\n### User:\n.*?\n\n### Assistant A:\n(.*)\n\n"
    r"<\|The End of Assistant A's Conversation with User\|>",
    re.S,
)


@dataclass(frozen=True)
class FastChatJudgment:
    """One line of ``model_judgment/<judge>_single.jsonl`` with its question (Zheng et al., 2023, §3).

    Attributes:
        where: ``"<file>:<line>"``, for messages.
        question_id, model, turn: what was graded (turn 1 or 2).
        score: the judge's 1-10 grade; None where FastChat recorded -1 (the judge's rating was unparsed).
        judge_prompt: FastChat's prompt name (``"single-v1"``, ``"single-math-v1"``, ...), None when not recorded.
        user_prompt: the prompt the judge saw; judgment: the judge's text (None when absent).
        category: from ``question.jsonl``; questions: the user turns 1..turn.
    """

    where: str
    question_id: int
    model: str
    turn: int
    score: float | None
    judge_prompt: str | None
    user_prompt: str
    judgment: str | None
    category: str | None
    questions: tuple[str, ...]

    def prompt_fields(self) -> dict[str, str | None]:
        """What the judge was shown, read back from the prompt.

        Returns:
            ``answers`` (tuple of the graded assistant turns 1..turn); for turn 1 also ``question`` (as the prompt
            writes it, None when absent) and ``reference`` (None unless the math prompt).

        Raises:
            RecordError: the prompt is not in FastChat's layout for that turn.
        """
        match = (_SINGLE if self.turn == 1 else _MULTI).search(self.user_prompt)
        if match is None:
            raise RecordError(
                f"{self.where}: field 'user_prompt' holds no turn-{self.turn} answer in FastChat's layout"
            )
        if self.turn != 1:
            return {"answers": match.groups()}
        return {"answers": (match["answer"],), "question": match["question"], "reference": match["reference"]}


def read_questions(bench_dir: str | os.PathLike) -> dict[int, tuple[str | None, list[str]]]:
    """``question_id -> (category, user turns)`` from a FastChat folder's ``question.jsonl``.

    Raises:
        RecordError: a missing file, a missing or ill-typed field (naming file and line).
    """
    questions = {}
    for where, raw in read_json_rows(Path(bench_dir).expanduser() / "question.jsonl"):
        qid = field(raw, "question_id", where, kind="int")
        questions[qid] = (field(raw, "category", where, default=None), _turns(raw, where))
    return questions


def read_judgments(bench_dir: str | os.PathLike, judge: str = "gpt-4") -> list[FastChatJudgment]:
    """Every judgment of ``model_judgment/<judge>_single.jsonl``: the one reader of FastChat single-answer grades.

    Args:
        bench_dir: the benchmark folder (``question.jsonl``, ``model_judgment/``).
        judge: the judge's file stem.

    Returns:
        One :class:`FastChatJudgment` per line, in file order.

    Raises:
        RecordError: naming file, line and field: missing files or fields, a question absent from
            ``question.jsonl``, a turn the question does not have, two judgments of the same (model, question, turn).
    """
    root = Path(bench_dir).expanduser()
    if not root.is_dir():
        raise RecordError(f"{root}: not a FastChat benchmark folder")
    questions = read_questions(root)
    judgments, seen = [], {}
    for where, raw in read_json_rows(root / "model_judgment" / f"{judge}_single.jsonl"):
        turn = field(raw, "turn", where, kind="int", default=1)
        model = str(field(raw, "model", where, kind="any"))
        qid = field(raw, "question_id", where, kind="int")
        if qid not in questions:
            raise RecordError(f"{where}: field 'question_id' = {qid} is not in {root / 'question.jsonl'}")
        if (model, qid, turn) in seen:
            raise RecordError(
                f"{where}: a second judgment of {model!r} on question {qid} turn {turn} ({seen[model, qid, turn]})"
            )
        seen[model, qid, turn] = where
        category, user_turns = questions[qid]
        if len(user_turns) < turn:
            raise RecordError(f"{root / 'question.jsonl'}: question {qid} has no turn {turn}")
        score = field(raw, "score", where, kind="score")
        judge_field = raw.get("judge")
        judgments.append(
            FastChatJudgment(
                where=where,
                question_id=qid,
                model=model,
                turn=turn,
                score=None if score == -1 else score,
                judge_prompt=judge_field[1] if isinstance(judge_field, list) and len(judge_field) > 1 else None,
                user_prompt=field(raw, "user_prompt", where, kind="str", default=""),
                judgment=field(raw, "judgment", where, default=None),
                category=category,
                questions=tuple(user_turns[:turn]),
            )
        )
    return judgments


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
        raise BadInputError(f"turn must be 1 or 2, got {turn!r}")
    if answers not in ("judged", "model_answer"):
        raise BadInputError(f"answers must be 'judged' or 'model_answer', got {answers!r}")
    root = Path(bench_dir).expanduser()
    judgments = read_judgments(root, judge)
    references: dict[int, list[str]] = {}
    if with_reference:
        for where, raw in read_json_rows(root / "reference_answer" / f"{judge}.jsonl"):
            references[field(raw, "question_id", where, kind="int")] = _turns(raw, where, "choices")

    answer_files: dict[str, dict[int, list[str]]] = {}

    def answer_file(model: str) -> dict[int, list[str]]:
        if model not in answer_files:
            table = {}
            for where, raw in read_json_rows(root / "model_answer" / f"{model}.jsonl"):
                table[field(raw, "question_id", where, kind="int")] = _turns(raw, where, "choices")  # last wins
            answer_files[model] = table
        return answer_files[model]

    rows = []
    for j in judgments:
        if j.turn != turn or (models is not None and j.model not in models):
            continue
        if with_reference and j.question_id not in references:
            continue
        if answers == "judged":
            graded = j.prompt_fields()["answers"]
        else:
            table = answer_file(j.model)
            if j.question_id not in table or len(table[j.question_id]) < turn:
                raise RecordError(
                    f"{root / 'model_answer' / (j.model + '.jsonl')}: no turn-{turn} answer to question {j.question_id}"
                )
            graded = tuple(table[j.question_id][:turn])
        question = j.questions[0] if turn == 1 else _dialogue(j.questions[0], graded[0], j.questions[1])
        row = {"query_id": str(j.question_id), "system_id": j.model, "question": question}
        if with_reference:
            if len(references[j.question_id]) < turn:
                raise RecordError(
                    f"{root / 'reference_answer' / (judge + '.jsonl')}: question {j.question_id} has no turn {turn}"
                )
            row["reference"] = references[j.question_id][turn - 1]
        row.update(response=graded[-1], human_score=j.score, category=j.category, turn=turn, judgment=j.judgment)
        rows.append(row)
    return as_dataset(rows, {"turn": datasets.Value("int64"), "judgment": datasets.Value("string")})
