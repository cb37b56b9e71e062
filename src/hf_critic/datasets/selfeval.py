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
answers GPT-4 graded (MT-Bench llama2-7b-chat: 2 of 80 first-turn answers agree), see :func:`answers_match`.

The paper's Table 1 correlates each feature with the GPT-4 grades over all graded turns of one model on one
benchmark (160 answers on MT-Bench, 80 on Vicuna-Bench); :func:`precomputed_table` does the same through
:func:`hf_critic.meta_eval.correlation.text_level_correlation` (one group: the plain Pearson / Spearman / Kendall tau-b).
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
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "answers_match",
    "correlations",
    "judged_records",
    "load_feature_file",
    "load_judgments",
    "load_questions",
    "precomputed_table",
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

#: Table 1 of the paper (Pearson, Kendall, Spearman) per (model, benchmark, row).
PAPER_TABLE1: dict[tuple[str, str, str], tuple[float, float, float]] = {}
_T1 = {
    "llama2-7b-chat": {
        "SentProb": (0.2034, 0.2099, 0.3067, 0.4970, 0.2304, 0.3192),
        "Softmax-Ent": (0.4666, 0.4395, 0.5978, 0.3730, 0.2441, 0.3223),
        "Softmax-Var": (0.5612, 0.4695, 0.6239, 0.6506, 0.4534, 0.5894),
        "Softmax-combo": (0.5879, 0.4638, 0.6222, 0.6209, 0.4352, 0.5650),
        "DecEnsem-Exp": (0.4105, 0.3877, 0.3526, 0.5606, 0.3545, 0.5051),
        "DecEnsem-Var": (0.3535, 0.3215, 0.3023, 0.2504, 0.1615, 0.3197),
        "PrmEnsem-Exp": (0.4242, 0.3054, 0.3692, 0.5381, 0.3359, 0.4675),
        "PrmEnsem-Var": (0.1695, 0.1692, 0.2441, 0.1321, 0.0895, 0.1250),
        "AttnEnt-Min": (0.1444, 0.1150, 0.1563, 0.1182, 0.1161, 0.1584),
        "AttnEnt-Avg": (0.1361, 0.1094, 0.1475, 0.0977, 0.1181, 0.1600),
        "GPT-3.5-Turbo": (0.4342, 0.3982, 0.5033, 0.6695, 0.3858, 0.4330),
        "Auto-J": (0.5024, 0.4092, 0.5112, 0.5233, 0.3403, 0.3773),
    },
    "vicuna-7b": {
        "SentProb": (0.2350, 0.1706, 0.2547, 0.4606, 0.2545, 0.3051),
        "Softmax-Ent": (0.4690, 0.3003, 0.4291, 0.6379, 0.2851, 0.3855),
        "Softmax-Var": (0.4632, 0.3171, 0.4403, 0.6146, 0.2879, 0.3772),
        "Softmax-combo": (0.5358, 0.3578, 0.5022, 0.6856, 0.3276, 0.4270),
        "DecEnsem-Exp": (0.4518, 0.2645, 0.2168, 0.5099, 0.5137, 0.6548),
        "DecEnsem-Var": (0.2091, 0.1476, 0.1622, 0.3246, 0.2931, 0.3014),
        "PrmEnsem-Exp": (0.4414, 0.2677, 0.2229, 0.4897, 0.4873, 0.6312),
        "PrmEnsem-Var": (0.2353, 0.0875, 0.1239, 0.2028, 0.1860, 0.3201),
        "AttnEnt-Min": (0.0463, 0.0307, 0.0530, 0.2161, 0.1888, 0.2459),
        "AttnEnt-Avg": (0.0355, 0.0234, 0.0043, 0.2254, 0.1981, 0.2567),
        "GPT-3.5-Turbo": (0.4812, 0.4358, 0.5353, 0.6946, 0.5901, 0.6733),
        "Auto-J": (0.5673, 0.4302, 0.5405, 0.6003, 0.4818, 0.5345),
    },
}
for _model, _rows in _T1.items():
    for _row, _v in _rows.items():
        PAPER_TABLE1[(_model, "mt_bench", _row)] = _v[:3]
        PAPER_TABLE1[(_model, "vicuna_bench", _row)] = _v[3:]


#: Table 2 of the paper (Vicuna-Bench, Pearson, Kendall, Spearman) per (model, row, strategy), strategy in
#: ``""`` (plain), ``"illustration"`` (§3.1), ``"calibration"`` (§3.2).
PAPER_TABLE2: dict[tuple[str, str, str], tuple[float, float, float]] = {
    ("llama2-7b-chat", "Softmax-Ent", ""): (0.3730, 0.2441, 0.3223),
    ("llama2-7b-chat", "Softmax-Ent", "illustration"): (0.3678, 0.2429, 0.3370),
    ("llama2-7b-chat", "Softmax-Ent", "calibration"): (0.3930, 0.2631, 0.3490),
    ("llama2-7b-chat", "Softmax-Var", ""): (0.6506, 0.4534, 0.5894),
    ("llama2-7b-chat", "Softmax-Var", "illustration"): (0.6580, 0.4472, 0.5865),
    ("llama2-7b-chat", "Softmax-Var", "calibration"): (0.6617, 0.4360, 0.5625),
    ("vicuna-7b", "Softmax-Ent", ""): (0.6379, 0.2851, 0.3855),
    ("vicuna-7b", "Softmax-Ent", "illustration"): (0.6375, 0.2982, 0.3960),
    ("vicuna-7b", "Softmax-Ent", "calibration"): (0.6441, 0.3177, 0.4240),
    ("vicuna-7b", "Softmax-Var", ""): (0.6146, 0.2879, 0.3772),
    ("vicuna-7b", "Softmax-Var", "illustration"): (0.6247, 0.2976, 0.3903),
    ("vicuna-7b", "Softmax-Var", "calibration"): (0.6526, 0.3099, 0.4133),
}


def load_questions(selfeval_dir: str | Path, bench: str) -> dict[int, dict]:
    """``question_id -> {"category", "turns"}`` from ``<bench>/question.jsonl``."""
    questions = read_questions(Path(selfeval_dir) / bench)
    return {qid: {"category": category, "turns": turns} for qid, (category, turns) in questions.items()}


def load_judgments(selfeval_dir: str | Path, bench: str) -> pd.DataFrame:
    """GPT-4 single-answer grades of ``<bench>/model_judgment/gpt-4_single.jsonl`` (read by
    :func:`hf_critic.datasets.fastchat.read_judgments`).

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


def answers_match(joined: pd.DataFrame) -> int:
    """How many rows of a judgments ⋈ feature-file join graded exactly the answer the feature was computed on."""
    return int(
        sum(a[-1].strip() == (b or "").strip() for a, b in zip(joined["answers"], joined["answer"], strict=True))
    )


def correlations(values: Iterable[float], scores: Iterable[float]) -> dict[str, float]:
    """Pearson, Kendall (tau-b) and Spearman between feature values and grades, via the project's metric.

    Uses :func:`hf_critic.meta_eval.correlation.text_level_correlation` with no query ids (one group = the plain coefficient
    over all rows, as Table 1 computes it). Rows with a missing value or grade are dropped.

    Returns:
        ``pearson``, ``kendall``, ``spearman`` and ``n`` (rows used).
    """
    from hf_critic.meta_eval.correlation import text_level_correlation

    x = np.asarray(list(values), dtype=np.float64)
    y = np.asarray(list(scores), dtype=np.float64)
    res = text_level_correlation(x, y)
    n = int((np.isfinite(x) & np.isfinite(y)).sum())
    return {"pearson": res["pearson"], "kendall": res["kendall"], "spearman": res["spearman"], "n": n}


def _minmax(v: np.ndarray) -> np.ndarray:
    lo, hi = np.nanmin(v), np.nanmax(v)
    return (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)


def precomputed_table(selfeval_dir: str | Path, benches: Iterable[str] = BENCHES) -> pd.DataFrame:
    """Correlation of every released feature file with the GPT-4 grades (the paper's Table 1 protocol).

    Each file is joined with the judgments of its model on (question_id, turn); all graded turns are pooled.
    Softmax-combo is added as the min-max normalised sum of the Softmax-Ent and Softmax-Var files (the release's
    ``normalize``), each taken in the direction it is published in (both correlate positively in Table 1).

    Returns:
        One row per (bench, model, feature): ``file``, ``what`` (what the released code computed), ``n``
        (rows used), ``n_nan`` (non-finite feature values dropped), ``n_unparsed`` (grades -1 dropped),
        ``duplicates`` (file rows dropped), ``n_matched`` (rows whose file answer is the graded answer),
        ``pearson``, ``kendall``, ``spearman``, and the paper's ``paper_pearson`` / ``paper_kendall`` /
        ``paper_spearman`` where Table 1 has the row.
    """
    root = Path(selfeval_dir)
    out = []
    for bench in benches:
        judgments = load_judgments(root, bench)
        for model in MODELS:
            jm = judgments[judgments.model == model]
            per_feature: dict[str, pd.DataFrame] = {}
            for suffix, (feature, what) in FEATURE_FILES.items():
                path = root / bench / "model_answer" / f"{model}-{suffix}.jsonl"
                if not path.is_file():
                    continue
                ff = load_feature_file(path)
                joined = jm.merge(ff, on=["question_id", "turn"], how="inner")
                per_feature[feature] = joined
                out.append(_row(bench, model, feature, path.name, what, joined, ff.attrs["duplicates"]))
            if "Softmax-Ent" in per_feature and "Softmax-Var" in per_feature:
                e, v = per_feature["Softmax-Ent"], per_feature["Softmax-Var"]
                both = e.merge(
                    v[["question_id", "turn", "value", "answer"]], on=["question_id", "turn"], suffixes=("_e", "_v")
                )
                both["value"] = _minmax(both["value_e"].to_numpy()) + _minmax(both["value_v"].to_numpy())
                both["answer"] = both["answer_e"]
                out.append(
                    _row(
                        bench,
                        model,
                        "Softmax-combo",
                        "entropy + variance files",
                        "min-max(ent) + min-max(var)",
                        both,
                        0,
                    )
                )
    return pd.DataFrame(out)


def _row(bench, model, feature, file, what, joined: pd.DataFrame, duplicates: int) -> dict:
    values = joined["value"].to_numpy(dtype=np.float64)
    scores = joined["score"].to_numpy(dtype=np.float64)
    res = correlations(values, scores)
    paper = PAPER_TABLE1.get((model, bench, feature), (math.nan,) * 3)
    return {
        "bench": bench,
        "model": model,
        "feature": feature,
        "file": file,
        "what": what,
        "n": res["n"],
        "n_nan": int((~np.isfinite(values)).sum()),
        "n_unparsed": int((~np.isfinite(scores)).sum()),
        "duplicates": duplicates,
        "n_matched": answers_match(joined),
        "pearson": res["pearson"],
        "kendall": res["kendall"],
        "spearman": res["spearman"],
        "paper_pearson": paper[0],
        "paper_kendall": paper[1],
        "paper_spearman": paper[2],
    }


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
