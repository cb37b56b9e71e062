"""The files of the dev / test protocol of the held-out benchmarks: the committed split as id files
(:func:`save_split`) and a half of every benchmark in its own format (:func:`write_half`), so ``hf-critic
compare|grade --format`` read it as they read the whole file. The split itself, the figures and the dev score are
:mod:`hf_critic.meta_eval.halves`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core.errors import BadInputError
from ..io import RecordError, json_line, read_json, read_json_rows
from ..meta_eval.halves import BENCHMARKS, HALVES, benchmark_keys

__all__ = ["save_split", "write_half"]


def save_split(split: dict[str, dict[str, list[str]]], folder: str | os.PathLike) -> list[Path]:
    """Write one ``<benchmark>.json`` (``{"dev": [...], "test": [...]}``) per benchmark into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, halves in split.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(halves, indent=0) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _filter_jsonl(source: Path, target: Path, question_ids: set[str]) -> int:
    """Copy the lines of a FastChat JSONL file whose ``question_id`` is in ``question_ids``; returns their count."""
    lines = [
        line
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1)
        if line.strip() and str(json_line(line, f"{source}:{number}")["question_id"]) in question_ids
    ]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return len(lines)


def write_half(
    data_dir: str | os.PathLike, split: dict[str, dict[str, list[str]]], half: str, out_dir: str | os.PathLike
) -> dict[str, int]:
    """Write the ``half`` of every benchmark in its own format under ``out_dir`` (same relative paths as in
    ``data_dir``): the rows (HHH, Eval-P) or the FastChat files' lines (questions, answers, judgments, references)
    whose question is in that half.

    Returns:
        ``{benchmark: rows written}`` (FastChat: questions).

    Raises:
        ValueError: ``half`` not dev / test.
        RecordError: a benchmark whose loaded rows do not follow its file's rows one to one.
    """
    if half not in HALVES:
        raise BadInputError(f"half must be one of {HALVES}, got {half!r}")
    counts = {}
    for name, (fmt, rel) in BENCHMARKS.items():
        source, target, wanted = Path(data_dir) / rel, Path(out_dir) / rel, set(split[name][half])
        if fmt == "fastchat":
            for path in sorted(source.rglob("*.jsonl")):
                n = _filter_jsonl(path, target / path.relative_to(source), wanted)
                counts[name] = n if path.name == "question.jsonl" else counts.get(name, 0)
            continue
        keys = benchmark_keys(name, source)
        if fmt == "prometheus":
            raw = read_json(source)
        else:
            raw = [row for _, row in read_json_rows(source)]
        if len(raw) != len(keys):
            raise RecordError(f"{source}: {len(raw)} rows in the file but {len(keys)} loaded: cannot split by row")
        kept = [row for row, key in zip(raw, keys, strict=True) if key in wanted]
        target.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "prometheus":
            target.write_text(json.dumps(kept, ensure_ascii=False, indent=1), encoding="utf-8")
        else:
            target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
        counts[name] = len(kept)
    return counts
