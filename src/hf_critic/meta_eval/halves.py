"""Dev / test halves of the held-out benchmarks, split by question, and the one declared dev score.

A critic chosen on the benchmarks it is reported on is tuned to them. So every choice (configuration, checkpoint,
learning rate, tie band, which critic ships) is made on the **dev** half of each out-of-distribution benchmark and
the **test** half is only reported. The halves are seeded and by question, so no question, nor any of its answers,
is in both: HHH alignment (Prometheus copy, 102 questions), Auto-J Eval-P (1,182 prompts), MT-Bench and
Vicuna-Bench (80 question ids each). The split is committed as id files
(:func:`hf_critic.reports.heldout_halves.save_split`): FastChat question ids,
and for the others :func:`hf_critic.core.schema.query_id` of the question, so nothing of the data is copied.

:func:`hf_critic.reports.heldout_halves.write_half` writes a half in the benchmark's own format (so ``hf-critic compare|grade --format`` read it as
they read the whole file); :func:`heldout_figures` reads the critique files of
``scripts/smollm2-135m/evaluate_heldout.sh`` and gives each figure beside "the longer answer wins" on the same rows;
:func:`dev_score` is the declared score: the mean of the figures' margins over length, in points.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np

from ..core.errors import BadInputError
from ..core.labels import TIE
from ..core.schema import query_id
from ..io import RecordError, read_json, read_json_rows
from ..loaders import load_benchmark
from .agreement import two_way_decisions
from .length import longer_wins, response_lengths
from .within_question import within_question_accuracy

__all__ = [
    "BENCHMARKS",
    "FIGURES",
    "HALVES",
    "MODEL_FILE",
    "VERDICTS",
    "benchmark_keys",
    "candidates",
    "dev_score",
    "half_of",
    "heldout_figures",
    "load_split",
    "make_split",
    "training_facts",
    "verdicts_of",
]

#: benchmark -> (loader format, path under the shared data folder)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "hhh": ("prometheus", "prometheus/hhh_alignment_eval.json"),
    "autoj_eval_p": ("autoj", "autoj/test/testdata_pairwise.jsonl"),
    "mt_bench": ("fastchat", "selfeval/mt_bench"),
    "vicuna_bench": ("fastchat", "selfeval/vicuna_bench"),
}
HALVES = ("dev", "test")
#: the dev score's figures: (name, critique file of evaluate_heldout.sh, kind)
FIGURES = (
    ("hhh_two_way", "hhh.jsonl", "two_way"),
    ("eval_p_first_order", "autoj.jsonl", "agreement"),
    ("mt_vicuna_within_question", "mt_vicuna.jsonl", "within_question"),
    ("mt_bench_row_pearson", "mt_bench.jsonl", "pearson"),
)
#: where a figure's verdicts come from: the critique columns (the run's own --verdict: a probability read-out, a
#: reward or the text), or the written critique's parsed verdict that a ``--verdict both`` run keeps beside them
VERDICTS = {"run": ("critique_label", "critique_score"), "text": ("critique_text_label", "critique_text_score")}
HALF_FILE = "half.txt"  # written by evaluate_heldout.sh into its output folder: which half it judged
MODEL_FILE = "model.txt"  # written beside it: the --model it judged with


def benchmark_keys(benchmark: str, path: str | os.PathLike) -> list[str]:
    """One question key per loaded row, in the file's order (FastChat: the question id; else the query id)."""
    fmt, _ = BENCHMARKS[benchmark]
    rows = load_benchmark(fmt, path)
    if fmt == "fastchat":
        return [str(q) for q in rows["query_id"]]
    return [query_id(q) for q in rows["question"]]


def make_split(data_dir: str | os.PathLike, *, seed: int = 0) -> dict[str, dict[str, list[str]]]:
    """Split every benchmark's distinct questions into a dev and a test half at random (``seed``).

    Args:
        data_dir: the shared data folder (``../shared/data``).
        seed: numpy ``default_rng`` seed; the distinct keys are sorted, permuted, and the first ``ceil(n / 2)`` are dev.

    Returns:
        ``{benchmark: {"dev": [keys], "test": [keys]}}``, keys sorted.
    """
    out = {}
    for i, (name, (_, rel)) in enumerate(BENCHMARKS.items()):
        keys = sorted(set(benchmark_keys(name, Path(data_dir) / rel)))
        order = np.random.default_rng(seed + i).permutation(len(keys))
        cut = math.ceil(len(keys) / 2)
        out[name] = {"dev": sorted(keys[j] for j in order[:cut]), "test": sorted(keys[j] for j in order[cut:])}
    return out


def load_split(folder: str | os.PathLike) -> dict[str, dict[str, list[str]]]:
    """The committed split (:func:`hf_critic.reports.heldout_halves.save_split`'s files).

    Raises:
        RecordError: a benchmark's file is missing, lacks a half, or has a key in both halves.
    """
    out = {}
    for name in BENCHMARKS:
        path = Path(folder) / f"{name}.json"
        if not path.is_file():
            raise RecordError(f"{path}: no split file for {name}")
        halves = read_json(path)
        if set(halves) != set(HALVES):
            raise RecordError(f"{path}: expected the halves {list(HALVES)}, found {sorted(halves)}")
        both = set(halves["dev"]) & set(halves["test"])
        if both:
            raise RecordError(f"{path}: {len(both)} question(s) in both halves, e.g. {sorted(both)[0]}")
        out[name] = halves
    return out


def half_of(folder: str | os.PathLike) -> str:
    """The half an ``evaluate_heldout.sh`` output folder judged (its ``half.txt``).

    Raises:
        RecordError: no ``half.txt`` (a run on the whole benchmarks) or an unknown value.
    """
    path = Path(folder) / HALF_FILE
    if not path.is_file():
        raise RecordError(f"{folder}: no {HALF_FILE}; judge a half with evaluate_heldout.sh MODEL OUT dev|test")
    half = path.read_text(encoding="utf-8").strip()
    if half not in HALVES:
        raise RecordError(f"{path}: unknown half {half!r}")
    return half


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise RecordError(f"{path}: no critique file")
    return [row for _, row in read_json_rows(path)]


def _pairwise(rows: list[dict], two_way: bool, verdict: str = "run") -> tuple[float, float, int]:
    """(critic %, longer wins %, pairs) from the critic's first-order verdict (``critique_label_first`` when the run
    swapped, else ``critique_label``; the text verdict: ``critique_text_label``, the first order's; unparsed counts
    as wrong). Two-way: the pairs with a winner only, scored as hf-critic scores two-way accuracy
    (:func:`~hf_critic.meta_eval.agreement.two_way_decisions`): a probability read-out chooses between P(response 1)
    and P(response 2) of its first order's ``critique_distribution``, the tie dropped; a text tie counts half."""
    if two_way:
        rows = [r for r in rows if r["label"] != TIE]
    column = VERDICTS[verdict][0]
    labels = [r.get("critique_label_first", r.get(column)) if verdict == "run" else r.get(column) for r in rows]
    gold = np.array([r["label"] for r in rows], dtype=float)
    longer = longer_wins([r["response_1"] for r in rows], [r["response_2"] for r in rows], ties="response_1")[0]
    if two_way:
        distributions = [r.get("critique_distribution") for r in rows] if verdict == "run" else []
        decisions = two_way_decisions(labels, distributions if any(d is not None for d in distributions) else None)
        critic = np.nan_to_num(1 - np.abs(decisions - gold), nan=0.0)  # unparsed: wrong
    else:
        critic = np.array([v == g for v, g in zip(labels, gold, strict=True)], dtype=float)
    return 100 * float(np.mean(critic)), 100 * float(np.mean(longer == gold)), len(rows)


def _graded(rows: list[dict], kind: str, verdict: str = "run") -> tuple[float, float, int]:
    """(critic, length, rows) for graded rows: within-question accuracy in % or row-level Pearson x 100; rows
    without a critic score (the text verdict's: ``critique_text_score``) are left out of both."""
    from scipy.stats import pearsonr

    column = VERDICTS[verdict][1]
    rows = [r for r in rows if r.get(column) is not None and r.get("human_score") is not None]
    scores = [float(r[column]) for r in rows]
    lengths = response_lengths([r["response"] for r in rows]).tolist()
    human = [float(r["human_score"]) for r in rows]
    if kind == "within_question":
        qids = [r["query_id"] for r in rows]
        figure = lambda x: 100 * within_question_accuracy(x, human, qids)["within_question_accuracy"]  # noqa: E731
        pairs = within_question_accuracy(lengths, human, qids)["within_question_pairs"]
        return figure(scores), figure(lengths), pairs
    with warnings.catch_warnings():  # constant scores: nan, which the score then carries
        warnings.simplefilter("ignore")
        return 100 * float(pearsonr(scores, human)[0]), 100 * float(pearsonr(lengths, human)[0]), len(rows)


def verdicts_of(folder: str | os.PathLike) -> tuple[str, ...]:
    """The verdicts an ``evaluate_heldout.sh`` folder can be scored on: ``("run",)``, and ``"text"`` too where the
    run kept the written critique's parsed verdict (``--verdict both``: ``critique_text_*`` columns)."""
    rows = _rows(Path(folder) / FIGURES[0][1])
    return ("run", "text") if rows and VERDICTS["text"][0] in rows[0] else ("run",)


def candidates(folder: str | os.PathLike) -> list[tuple[str, dict[str, dict[str, float]]]]:
    """Every critic an ``evaluate_heldout.sh`` folder holds, as ``(name, figures)``: the folder's name with the run's
    verdict, and ``"NAME [text]"`` with its written critiques' parsed verdict where it kept them
    (:func:`verdicts_of`); ``figures`` as :func:`heldout_figures` returns them.

    Raises:
        RecordError: a critique file is missing.
    """
    name = Path(folder).name
    return [
        (name + (" [text]" if verdict == "text" else ""), heldout_figures(folder, verdict))
        for verdict in verdicts_of(folder)
    ]


def heldout_figures(folder: str | os.PathLike, verdict: str = "run") -> dict[str, dict[str, float]]:
    """Each figure of :data:`FIGURES` from an ``evaluate_heldout.sh`` output folder, beside "the longer answer
    wins" (length as the score) on the same rows.

    Args:
        folder: the output folder.
        verdict: ``"run"`` (the critique columns: the run's own verdict) or ``"text"`` (the written critique's parsed
            verdict of a ``--verdict both`` run, :func:`verdicts_of`).

    Returns:
        ``{figure: {"critic": x, "length": y, "margin": x - y, "n": pairs or rows}}``; percentages (Pearson x 100).

    Raises:
        RecordError: a critique file is missing, or has no text verdicts when ``verdict="text"``.
        ValueError: an unknown ``verdict``.
    """
    if verdict not in VERDICTS:
        raise BadInputError(f"verdict must be one of {sorted(VERDICTS)}, got {verdict!r}")
    out = {}
    for name, file, kind in FIGURES:
        rows = _rows(Path(folder) / file)
        if verdict == "text" and rows and not any(c in rows[0] for c in VERDICTS["text"]):
            raise RecordError(f"{Path(folder) / file}: no text verdicts (critique_text_*); judge with verdict='both'")
        critic, length, n = (
            _pairwise(rows, kind == "two_way", verdict)
            if kind in ("two_way", "agreement")
            else _graded(rows, kind, verdict)
        )
        out[name] = {"critic": critic, "length": length, "margin": critic - length, "n": n}
    return out


def training_facts(folder: str | os.PathLike) -> dict[str, float] | None:
    """What training cost the critic an ``evaluate_heldout.sh`` folder judged with: read from the ``trainer_state.json``
    of the model folder named in its ``model.txt`` (a ``recipes/sft.py`` or ``recipes/reward.py`` output), and the
    rows trained on x epochs from its ``train_results.json`` where the recipe wrote them.

    Returns:
        ``{"seen": examples or pairs trained on, "wall_s": training seconds, "per_hour": seen per hour}``, or None for
        a critic with no trainer state (the untrained critic, a Hub model, a folder moved since). A resumed run's
        wall time is its last leg's (transformers times each ``train()`` call) while ``seen`` counts the whole run.
    """
    model_file = Path(folder) / MODEL_FILE
    if not model_file.is_file():
        return None
    state = Path(model_file.read_text(encoding="utf-8").strip()) / "trainer_state.json"
    if not state.is_file():
        return None
    history = read_json(state).get("log_history", [])
    final = next((entry for entry in reversed(history) if "train_runtime" in entry), None)
    if final is None or not final.get("train_runtime"):
        return None
    seen = final["train_samples_per_second"] * final["train_runtime"]  # rounded by transformers to 3 decimals
    results = state.with_name("train_results.json")  # the recipes' own count: training rows x epochs
    if results.is_file():
        counted = read_json(results)
        if "train_samples" in counted and "epoch" in counted:
            seen = counted["train_samples"] * counted["epoch"]
    return {"seen": round(seen), "wall_s": final["train_runtime"], "per_hour": 3600 * seen / final["train_runtime"]}


def dev_score(figures: dict[str, dict[str, float]]) -> float:
    """The declared dev score: the mean of the figures' margins over "the longer answer wins", in points
    (HHH two-way, Eval-P first order, MT-Bench + Vicuna-Bench within-question, MT-Bench row Pearson x 100).
    Positive: the critic beats length on average; NaN when a figure is undefined (constant scores)."""
    return float(np.mean([figures[name]["margin"] for name, _, _ in FIGURES]))
