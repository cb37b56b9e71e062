"""CriticBench runs and reports: critics answer the benchmark's prompts, answers are parsed and scored.

Used by ``hf-critic meta-eval --benchmark criticbench:PATH`` (PATH: a benchmark folder in the Hub layout, or a
folder of CriticEval prediction files whose prompts are re-used) and ``--predictions [NAME=]DIR`` (existing answers
in CriticEval's format). For every set of answers the report gives the parse rate per file, the consistency of the
comparison verdicts between the two orders per task and, when the benchmark's gold labels are at hand, the objective
scores of :mod:`hf_critic.criticbench.scoring`.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import datasets

from ..backends.cached import CachedBackend
from ..io import RecordError
from .loaders import load_criticbench, load_criticbench_predictions
from .scoring import consistency_by_task, objective_scores, parse_rates

__all__ = [
    "answer_prompts",
    "criticbench_prompts",
    "criticbench_report",
    "is_benchmark_folder",
    "render_criticbench_markdown",
    "write_predictions",
]


def is_benchmark_folder(path: str | os.PathLike) -> bool:
    """True when ``path`` holds CriticBench's Hub layout (an ``{obj,sub}_{dev,test}_data`` folder)."""
    return any((Path(path) / f"{e}_{s}_data").is_dir() for e in ("obj", "sub") for s in ("dev", "test"))


def criticbench_prompts(path: str | os.PathLike, limit: int | None = None) -> datasets.Dataset:
    """The objective prompts of a CriticBench folder, one row per prediction a critic has to write.

    Args:
        path: a benchmark folder (Hub layout: both splits, every objective dimension; comparison in both orders)
            or a folder of CriticEval prediction files, or a glob pattern of some of them (their objective prompts,
            OpenCompass wrapper removed).
        limit: keep the first ``limit`` items of every prediction file (forward and reverse stay paired).

    Returns:
        Columns ``file`` (CriticEval prediction file name), ``split``, ``task``, ``dimension``, ``evaluation``,
        ``part``, ``index``, ``message``.

    Raises:
        RecordError: neither layout found, or malformed files (see the loaders).
    """
    rows: list[dict[str, Any]] = []
    if is_benchmark_folder(path):
        for split in ("dev", "test"):
            for dimension in ("feedback", "comp_feedback", "correction", "meta_feedback"):
                try:
                    records = load_criticbench(path, dimension, split=split, evaluation="obj")
                except RecordError as err:
                    if "no CriticBench" in str(err):
                        continue
                    raise
                for r in records:
                    base = {"split": split, "task": r["task"], "dimension": dimension, "evaluation": "obj"}
                    rows.append(
                        {
                            **base,
                            "file": r["prediction_file"],
                            "part": r["part"],
                            "index": r["index"],
                            "message": r["prompt"],
                        }
                    )
                    if dimension == "comp_feedback":
                        rows.append(
                            {
                                **base,
                                "file": r["prediction_file"].replace(".json", "_reverse.json"),
                                "part": "reverse",
                                "index": r["index"],
                                "message": r["prompt_reverse"],
                            }
                        )
    else:
        keep = ["file", "split", "task", "dimension", "evaluation", "part", "index", "message"]
        found = load_criticbench_predictions(path).filter(lambda r: r["evaluation"] == "obj")
        rows = [{k: r[k] for k in keep} for r in found]
        if any(r["message"] is None for r in rows):
            raise RecordError(f"{path}: prompts without the OpenCompass 'User: ...\\n\\nAssistant: ' wrapper")
    if limit is not None:
        rows = [r for r in rows if r["index"] < limit]
    if not rows:
        raise RecordError(f"{path}: no CriticBench objective prompts (neither the Hub layout nor prediction files)")
    return datasets.Dataset.from_list(rows)


def answer_prompts(backend, decoding, cache, prompts: datasets.Dataset) -> tuple[datasets.Dataset, int]:
    """A critic's answers to :func:`criticbench_prompts`, generated through the cache (a killed run resumes).

    Returns:
        ``(predictions, cached)``: the prompts plus ``origin_prompt`` (= the message) and ``prediction`` columns,
        in the layout of :func:`~hf_critic.criticbench.loaders.load_criticbench_predictions`, and how many
        answers came from the cache.
    """
    conversations = [[{"role": "user", "content": m}] for m in prompts["message"]]
    made = CachedBackend(backend, cache).generate(conversations, decoding)
    answers = [texts[0] for texts in made.texts]
    predictions = prompts.add_column("origin_prompt", list(prompts["message"])).add_column("prediction", answers)
    return predictions, made.cached


def write_predictions(predictions: datasets.Dataset, folder: str | os.PathLike) -> Path:
    """Write answers as CriticEval prediction files (``{file: {"0": {origin_prompt, prediction}}}``), so that
    ``--predictions`` or CriticEval's own evaluators read them back."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, dict[str, str]]] = defaultdict(dict)
    for r in predictions:
        files[r["file"]][str(r["index"])] = {"origin_prompt": r["origin_prompt"], "prediction": r["prediction"]}
    for name, items in files.items():
        (folder / name).write_text(json.dumps(items, ensure_ascii=False, indent=1), encoding="utf-8")
    return folder


def criticbench_report(
    predictions: datasets.Dataset, gold: str | os.PathLike | None = None, *, timeout: float = 10.0
) -> dict[str, Any]:
    """Everything measured on one set of answers.

    Args:
        predictions: a :func:`~hf_critic.criticbench.loaders.load_criticbench_predictions` dataset.
        gold: a benchmark folder in the Hub layout, for the objective scores (None: parse rates and consistency
            only).
        timeout: sandbox seconds per program (correction).

    Returns:
        ``{"parse_rates": [...], "consistency": [...], "objective": {split: scores} (only with gold)}``.
    """
    report: dict[str, Any] = {
        "parse_rates": parse_rates(predictions),
        "consistency": consistency_by_task(predictions),
    }
    if gold is not None:
        splits = sorted(set(predictions["split"]))
        report["objective"] = {split: objective_scores(predictions, gold, split, timeout=timeout) for split in splits}
    return report


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def render_criticbench_markdown(reports: dict[str, dict[str, Any]]) -> str:
    """Markdown of several :func:`criticbench_report` results keyed by critic name: objective scores (when present),
    consistency per task, parse rates per file."""
    lines = ["# CriticBench", ""]
    for critic, report in reports.items():
        rates = report["parse_rates"]
        n, parsed = sum(r["n"] for r in rates), sum(r["parsed"] for r in rates)
        lines += [
            f"## {critic}",
            "",
            f"{parsed}/{n} answers parsed ({_f(100 * parsed / n if n else None)}%) in {len(rates)} files.",
            "",
        ]
        for split, scores in (report.get("objective") or {}).items():
            fb, cmp_, cor, meta = (scores[k] for k in ("feedback", "comparison", "correction", "meta_feedback"))
            lines += [
                f"### Objective scores, {split} (CriticBench §3; Spearman x 100, accuracy and pass rate in %)",
                "",
                "| feedback | comparison | comparison (strict) | correction | meta-feedback | overall |",
                "|---:|---:|---:|---:|---:|---:|",
                f"| {_f(fb and fb['spearman'])} | {_f(cmp_ and cmp_['accuracy'])} | "
                f"{_f(cmp_ and cmp_['accuracy_strict'])} | {_f(cor and cor['pass_rate'])} | "
                f"{_f(meta and meta['spearman'])} | {_f(scores['overall'])} |",
                "",
            ]
            if fb or meta:
                lines.append(
                    f"Unparsed verdicts left out: feedback {fb['unparsed'] if fb else 0}, meta-feedback "
                    f"{meta['unparsed'] if meta else 0}; comparison pairs with both orders parsed: "
                    f"{cmp_['both_parsed'] if cmp_ else 0}/{cmp_['n'] if cmp_ else 0}."
                )
                lines.append("")
            if cor:
                lines += ["| correction task | pass rate | n | outcomes |", "|---|---:|---:|---|"]
                for task, t in cor["by_task"].items():
                    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(t["reasons"].items()))
                    lines.append(f"| {task} | {_f(t['pass_rate'])} | {t['n']} | {outcomes} |")
                lines += ["", f"Programs ran in the sandbox with network isolation: {cor.get('sandbox')}.", ""]
        if report["consistency"]:
            lines += [
                "### Comparison: the same verdict in both orders (no gold needed)",
                "",
                "| split | task | pairs | both parsed | consistent | consistency % | same letter (position) |",
                "|---|---|---:|---:|---:|---:|---:|",
            ]
            for r in report["consistency"]:
                lines.append(
                    f"| {r['split']} | {r['task']} | {r['n']} | {r['both_parsed']} | {r['consistent']} | "
                    f"{_f(r['consistency'])} | {r['same_letter']} |"
                )
            lines.append("")
        kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for r in rates:
            for i, key in enumerate(("n", "parsed", "unparsed", "out_of_range")):
                kinds[r["kind"]][i] += r[key]
        lines += [
            "### Parse rate by verdict format",
            "",
            "| verdict | files | n | parsed | unparsed | out of range | rate % |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for kind, (k_n, k_ok, k_un, k_oor) in kinds.items():
            files = sum(r["kind"] == kind for r in rates)
            lines.append(f"| {kind} | {files} | {k_n} | {k_ok} | {k_un} | {k_oor} | {_f(100 * k_ok / k_n)} |")
        lines.append("")
        lines += [
            "### Parse rate per file",
            "",
            "| file | verdict | n | parsed | unparsed | out of range | rate % |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for r in rates:
            lines.append(
                f"| {r['file']} | {r['kind']} | {r['n']} | {r['parsed']} | {r['unparsed']} | {r['out_of_range']} | "
                f"{_f(r['parse_rate'])} |"
            )
        lines.append("")
    return "\n".join(lines)
