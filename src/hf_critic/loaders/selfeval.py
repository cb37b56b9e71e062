"""The SelfEval release (HuihuiChyan/SelfEval, the code of Huang et al.'s glass-box self-evaluation paper).

Layout of a ``selfeval/`` folder (FastChat ``llm_judge`` format), per benchmark (``mt_bench``, ``vicuna_bench``):

* ``question.jsonl``: ``question_id``, ``category``, ``turns`` (the user turns; MT-Bench has two).
* ``model_judgment/gpt-4_single.jsonl``: GPT-4's 1-10 grade (``score``; -1 = unparsed) of ``model``'s answer
  to ``question_id`` at ``turn``, with the full judge prompt (``user_prompt``) that contains the graded answers.
* ``model_answer/<model>-<feature>.jsonl``: answers (``choices[0]["turns"]``) and ``evaluations``, one glass-box
  value per turn, computed by the released code (see :data:`FEATURE_FILES`).

Known defects handled here: duplicated question ids (MT-Bench ``llama2-7b-chat-logprobs-{entropy,variance}``
have 156 / 150 rows for 80 questions: the last row of an id wins, as the release's ``reorg_answer_file`` does),
a NaN in the MT-Bench llama2 ensemble file (dropped, counted), grades of -1 (dropped, counted), and nested
``evaluations`` (``[[x], [y]]``). Not fixable and reported instead: the feature files do not always hold the
answers GPT-4 graded (MT-Bench llama2-7b-chat: 2 of 80 first-turn answers agree), see
:func:`hf_critic.meta_eval.selfeval.answers_match`; the paper's correlation tables are in :mod:`hf_critic.meta_eval.selfeval`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..io import read_json_rows
from .fastchat import read_judgments, read_questions

__all__ = [
    "BENCHES",
    "FEATURE_FILES",
    "judged_records",
    "load_feature_file",
    "load_judgments",
    "load_questions",
]

BENCHES = ("mt_bench", "vicuna_bench")
MODELS = ("llama2-7b-chat", "vicuna-7b")

#: ``model_answer/<model>-<suffix>.jsonl`` suffix -> (Table 1 row, what the released code computed).
FEATURE_FILES: dict[str, tuple[str, str]] = {
    "logprobs": ("SentProb", "mean token log-prob (off by one: first response token dropped, BOS wrapped in)"),
    "logprobs-entropy": ("Softmax-Ent", "sum_v log_softmax*logits / T / 32000 (not an entropy)"),
    "logprobs-variance": ("Softmax-Var", "mean over steps of the variance over the vocabulary of log-softmax"),
    "ensemble-prompt-logprobs-entropy": ("PrmEnsem (Softmax-Ent base)", "mean over the 7 system prompts"),
    "ensemble-prompt-logprobs-variance": ("PrmEnsem (Softmax-Var base)", "mean over the 7 system prompts"),
    "ensemble-temper-logprobs-entropy": ("DecEnsem (Softmax-Ent base)", "mean over 7 sampled answers"),
    "ensemble-temper-logprobs-variance": ("DecEnsem (Softmax-Var base)", "mean over 7 sampled answers"),
    "scores": ("generate() scores", "mean processed generation score of the output tokens"),
}


def load_questions(selfeval_dir: str | Path, bench: str) -> dict[int, dict]:
    """``question_id -> {"category", "turns"}`` from ``<bench>/question.jsonl``."""
    questions = read_questions(Path(selfeval_dir) / bench)
    return {qid: {"category": category, "turns": turns} for qid, (category, turns) in questions.items()}


def load_judgments(selfeval_dir: str | Path, bench: str) -> pd.DataFrame:
    """GPT-4 single-answer grades of ``<bench>/model_judgment/gpt-4_single.jsonl`` (read by
    :func:`hf_critic.loaders.fastchat.read_judgments`).

    Returns:
        One row per (model, question_id, turn): ``model``, ``question_id``, ``turn`` (1-based), ``score``
        (float 1-10, NaN where GPT-4's grade was -1 / unparsed), ``answers`` (the graded assistant turns
        1..turn, as shown to GPT-4), ``category``, ``questions`` (the user turns 1..turn).

    Raises:
        hf_critic.io.RecordError: missing files, a judge prompt not in FastChat's layout, duplicated
            (model, question_id, turn).
    """
    rows = [
        {
            "model": j.model,
            "question_id": j.question_id,
            "turn": j.turn,
            "score": j.score if j.score is not None and j.score >= 1 else math.nan,
            "answers": list(j.prompt_fields()["answers"]),
            "category": j.category,
            "questions": list(j.questions),
        }
        for j in read_judgments(Path(selfeval_dir) / bench)
    ]
    return pd.DataFrame(rows).sort_values(["model", "question_id", "turn"]).reset_index(drop=True)


def load_feature_file(path: str | Path) -> pd.DataFrame:
    """One ``model_answer/<model>-<feature>.jsonl`` as rows (question_id, turn, value, answer).

    The last row of a duplicated question id wins; a nested ``[[x], [y]]`` ``evaluations`` list is flattened
    to its first elements; non-finite values become NaN.

    Returns:
        Columns ``question_id``, ``turn`` (1-based), ``value`` (float), ``answer`` (that turn's answer text);
        ``attrs["duplicates"]`` counts dropped duplicate rows.
    """
    rows = [row for _, row in read_json_rows(path)]
    last = {r["question_id"]: r for r in rows}
    out = []
    for qid, r in sorted(last.items()):
        answers = r["choices"][0]["turns"]
        for t, v in enumerate(r.get("evaluations") or [], start=1):
            v = v[0] if isinstance(v, list) else v
            value = float(v) if v is not None and np.isfinite(float(v)) else math.nan
            out.append(
                {
                    "question_id": qid,
                    "turn": t,
                    "value": value,
                    "answer": answers[t - 1] if t <= len(answers) else None,
                }
            )
    df = pd.DataFrame(out, columns=["question_id", "turn", "value", "answer"])
    df.attrs["duplicates"] = len(rows) - len(last)
    return df


def judged_records(selfeval_dir: str | Path, benches: Iterable[str] = BENCHES) -> list[dict]:
    """The graded answers as hf-critic records, for scoring them with any model's glass-box features.

    Returns:
        One dict per graded (bench, model, question_id, turn): ``bench``, ``model``, ``question_id``, ``turn``,
        ``category``, ``score`` (GPT-4, NaN if unparsed) and ``messages`` (the conversation up to and including
        the graded assistant turn, exactly the text GPT-4 saw).
    """
    records = []
    for bench in benches:
        for r in load_judgments(selfeval_dir, bench).itertuples(index=False):
            messages = []
            for q, a in zip(r.questions, r.answers, strict=True):
                messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
            records.append(
                {
                    "bench": bench,
                    "model": r.model,
                    "question_id": int(r.question_id),
                    "turn": int(r.turn),
                    "category": r.category,
                    "score": float(r.score),
                    "messages": messages,
                }
            )
    return records
