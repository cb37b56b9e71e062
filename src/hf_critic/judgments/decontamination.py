"""Decontamination of training judgments against benchmarks the user names: questions compared exactly
and after normalisation, counted per benchmark."""

from __future__ import annotations

import glob
import logging
import os
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError

logger = logging.getLogger(__name__)


#: Pseudo-format of :func:`benchmark_questions`: the ``question`` column of any JSON / JSONL / CSV / parquet file(s).
QUESTIONS_FORMAT = "questions"


def normalize_question(text: str) -> str:
    """The decontamination key of a question: NFKC, case-folded, punctuation removed, whitespace collapsed.

    Punctuation (Unicode categories ``P*``) becomes a space before whitespace is collapsed, so ``"Hello,world"`` and
    ``"hello, world!"`` share a key (``"hello world"``).

    Args:
        text: a question.

    Returns:
        The key (possibly empty, for a question of punctuation only).
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


def parse_exclude(spec: str) -> tuple[str, str, str]:
    """``[NAME=]FORMAT:PATH`` (the syntax of ``hf-critic meta-eval --benchmark``) -> ``(name, format, path)``.

    The name defaults to ``FORMAT:PATH`` itself. FORMAT is a :data:`hf_critic.loaders.FORMATS` key or
    ``questions`` (see :func:`benchmark_questions`).

    Raises:
        ValueError: no ``FORMAT:`` prefix, an empty path, or an unknown format.
    """
    from ..loaders import FORMATS

    name, sep, rest = spec.partition("=")
    if not sep or ":" in name or "/" in name:
        name, rest = "", spec
    fmt, colon, path = rest.partition(":")
    formats = sorted([*FORMATS, QUESTIONS_FORMAT])
    if not colon or not path or fmt not in formats:
        raise BadInputError(f"exclude={spec!r}: expected [NAME=]FORMAT:PATH with FORMAT one of {formats}")
    return (name.strip() or rest), fmt, path


def heldout_excludes(data_dir: str | os.PathLike, examples: str | os.PathLike) -> list[str]:
    """The held-out benchmarks every training set is decontaminated against, as :func:`parse_exclude` specs.

    Auto-J Eval-P (``autoj/test/testdata_pairwise.jsonl``), HHH alignment (``prometheus/hhh_alignment_eval.json``),
    MT-Bench and Vicuna-Bench (``selfeval/mt_bench``, ``selfeval/vicuna_bench``: every turn's question) and the demo
    examples, so no question a critic is judged on is trained on.

    Args:
        data_dir: the shared real-data folder (``../shared/data``).
        examples: a glob of the demo example files (``examples/*.jsonl``), read as ``questions``.

    Returns:
        Five ``NAME=FORMAT:PATH`` strings (``autoj_eval_p``, ``hhh``, ``mt_bench``, ``vicuna_bench``, ``examples``).
    """
    data_dir = Path(data_dir)
    return [
        f"autoj_eval_p=autoj:{data_dir / 'autoj' / 'test' / 'testdata_pairwise.jsonl'}",
        f"hhh=prometheus:{data_dir / 'prometheus' / 'hhh_alignment_eval.json'}",
        f"mt_bench=fastchat:{data_dir / 'selfeval' / 'mt_bench'}",
        f"vicuna_bench=fastchat:{data_dir / 'selfeval' / 'vicuna_bench'}",
        f"examples=questions:{examples}",
    ]


def benchmark_questions(fmt: str, path: str) -> list[str]:
    """Every question of a benchmark, read with the project's loaders.

    Args:
        fmt: a :func:`hf_critic.loaders.load_benchmark` format (``autoj``, ``prometheus``, ``fastchat``,
            ``alignbench``, ``autoj_single``, ``alpacaeval``; ``generic`` is not supported: it needs a task and gold
            columns, use ``questions``), or ``questions``: the ``question`` field of every row of a JSON / JSONL /
            CSV / parquet file, or of every file a glob pattern matches (``examples/*.jsonl``).
        path: the benchmark's file or folder (for ``fastchat``, ``selfeval/mt_bench``: the questions of every turn
            are read from its ``question.jsonl``, not only the judged first turns).

    Returns:
        The questions, in file order (duplicates kept).

    Raises:
        ValueError: ``generic``, or a glob that matches nothing.
        RecordError: see the loaders (a ``questions`` row without a non-empty ``question`` names file and row).
    """
    from ..io import iter_rows
    from ..loaders import load_benchmark
    from ..loaders._rows import field as row_field
    from ..loaders.fastchat import read_questions

    if fmt == "generic":
        raise BadInputError(f"exclude=generic:{path}: use questions:{path} (decontamination only needs questions)")
    if fmt == QUESTIONS_FORMAT:
        files = sorted(glob.glob(path)) if any(c in path for c in "*?[") else [path]
        if not files:
            raise BadInputError(f"exclude=questions:{path}: no file matches")
        return [row_field(row, "question", where) for file in files for where, row in iter_rows(file)]
    questions = list(load_benchmark(fmt, path)["question"])
    if fmt == "fastchat":
        questions += [turn for _, turns in read_questions(path).values() for turn in turns]
    return questions


def decontaminate(
    records: Sequence[Mapping[str, Any]], benchmarks: Mapping[str, Iterable[str]]
) -> tuple[list[Mapping[str, Any]], dict[str, dict[str, Any]]]:
    """Drop every record whose question matches a benchmark question, exactly or after :func:`normalize_question`.

    Args:
        records: dicts with ``question`` and ``source``.
        benchmarks: ``{name: questions}``.

    Returns:
        ``(kept, stats)``: the records that match no benchmark, in order, and per benchmark ``{"questions": distinct
        benchmark questions, "dropped": records dropped, "exact": of which matched exactly (after stripping outer
        whitespace), "normalised": of which matched only after normalisation, "dropped_questions": distinct
        normalised training questions dropped, "by_source": {source: records dropped}, "questions_by_source":
        {source: distinct normalised questions dropped}}``. A record matching several benchmarks is dropped once and
        counted under each.
    """
    tables = {}
    for name, questions in benchmarks.items():
        questions = [q for q in questions if isinstance(q, str)]
        tables[name] = ({q.strip() for q in questions}, {normalize_question(q) for q in questions} - {""})
    stats = {
        name: {
            "questions": len(exact),
            "dropped": 0,
            "exact": 0,
            "normalised": 0,
            "dropped_questions": 0,
            "by_source": Counter(),
        }
        for name, (exact, _) in tables.items()
    }
    seen: dict[str, set] = {name: set() for name in tables}
    seen_by_source: dict[str, dict[str, set]] = {name: {} for name in tables}
    kept = []
    for record in records:
        question = record["question"]
        key = normalize_question(question)
        hit = False
        for name, (exact, normalised) in tables.items():
            if key not in normalised:
                continue
            hit = True
            entry = stats[name]
            entry["dropped"] += 1
            entry["exact" if question.strip() in exact else "normalised"] += 1
            entry["by_source"][record["source"]] += 1
            seen[name].add(key)
            seen_by_source[name].setdefault(record["source"], set()).add(key)
        if not hit:
            kept.append(record)
    for name, entry in stats.items():
        entry["dropped_questions"] = len(seen[name])
        entry["by_source"] = dict(sorted(entry["by_source"].items()))
        entry["questions_by_source"] = {src: len(keys) for src, keys in sorted(seen_by_source[name].items())}
    return kept, stats
