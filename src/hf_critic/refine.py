"""Critiques as feedback: critique -> rewrite -> re-judge (CritiqueLLM v1 §4.8 Table 3, v2 §4.6 Table 4).

For every record a critic writes a reference-free pointwise critique of the response, a generator rewrites the
response given question, response and critique (:mod:`hf_critic.prompts.rewrite`), and ``rounds`` > 1 repeats
critique -> rewrite on the rewrite. A judge (any computed critic, a :class:`~hf_critic.critic.Critic` or a
:class:`~hf_critic.critic.RewardCritic`, judged through the protocol and referenced for the records that have a
reference) then grades the original responses and every rewrite in one batch per setting. The result is the
paper's Table 4 layout: one row per critic (the original responses first), one column per category plus the overall
mean of the judge's scores, with the win / tie / lose of each rewrite against its original and the judge's own parse
rate. A judge verdict that did not parse (or, read as a probability, carried too little mass) is counted and left out
of every mean and comparison, never replaced by a score.

Every generation (critic, generator, judge) goes through the same SQLite cache (:class:`hf_critic.backends.cached.CachedBackend`),
so a killed run started again repeats no finished generation; :attr:`RefineResult.cache` counts the hits per stage.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import datasets

from .backends.cache import GenerationCache
from .backends.cached import CachedBackend
from .core import schema
from .core.errors import BadInputError
from .critic.decoding import DecodingConfig
from .critic.output import add_columns
from .critics.protocol import CriticKind
from .io import RecordError, check_fields
from .prompts.rewrite import RewritePrompt, load_rewrite_prompt

__all__ = ["ORIGINAL", "RefineResult", "StageCount", "refine"]

#: The name of the table row holding the judge's scores of the unchanged responses ("None" in the papers' tables).
ORIGINAL = "original"


@dataclass
class StageCount:
    """Inputs of one stage and how many came from the generation cache."""

    total: int = 0
    cached: int = 0

    def add(self, total: int, cached: int) -> None:
        """Count ``total`` more inputs, ``cached`` of them answered from the cache."""
        self.total += total
        self.cached += cached


@dataclass
class RefineResult:
    """Everything one :func:`refine` run produced.

    Attributes:
        rows: one row per record for the original (``critic`` = :data:`ORIGINAL`, ``round`` 0) and one per record,
            critic and round for the rewrites: ``record`` (input row number), ``category``, ``critic``, ``round``,
            ``question``, ``response`` (the text judged: the original, or the rewrite of that round), ``critiqued``
            (the text the critic saw; None for the original), ``critique`` (its raw critique), ``critique_score``,
            ``critique_status``, ``judge_score`` (None unless ``judge_status`` is ``ok``), ``judge_status``,
            ``judge_generation``.
        categories: the category columns of the table, in order of first appearance.
        critics: the critic names, in the order given.
        rounds: critique -> rewrite rounds.
        cache: per stage (``critique``, ``rewrite``, ``judge``), inputs and cache hits.
        seconds: wall-clock time of the run.
    """

    rows: datasets.Dataset
    categories: list[str]
    critics: list[str]
    rounds: int
    cache: dict[str, StageCount] = field(default_factory=dict)
    seconds: float = 0.0

    def _labels(self) -> list[tuple[str, int]]:
        return [(ORIGINAL, 0)] + [(c, r) for c in self.critics for r in range(1, self.rounds + 1)]

    def label(self, critic: str, round_: int) -> str:
        """Table row name: the critic, with ``(round k)`` when there are several rounds."""
        return critic if critic == ORIGINAL or self.rounds == 1 else f"{critic} (round {round_})"

    def table(self) -> list[dict[str, Any]]:
        """The v2 Table 4 layout: per row (original, then each critic and round) the mean judge score per category
        and overall (None where no verdict parsed), and ``judged`` / ``total`` rows behind the overall mean."""
        table = []
        for critic, round_ in self._labels():
            mine = [r for r in self.rows if r["critic"] == critic and r["round"] == round_]
            scored = [r for r in mine if r["judge_score"] is not None]
            cells = {}
            for category in self.categories:
                values = [r["judge_score"] for r in scored if r["category"] == category]
                cells[category] = sum(values) / len(values) if values else None
            overall = sum(r["judge_score"] for r in scored) / len(scored) if scored else None
            table.append(
                {
                    "row": self.label(critic, round_),
                    "cells": cells,
                    "overall": overall,
                    "judged": len(scored),
                    "total": len(mine),
                }
            )
        return table

    def outcomes(self) -> list[dict[str, Any]]:
        """Win / tie / lose of each critic's rewrite (per round) against the original response of the same record,
        over the records where the judge's verdicts on both parsed; ``not_compared`` counts the others."""
        original = {r["record"]: r["judge_score"] for r in self.rows if r["critic"] == ORIGINAL}
        result = []
        for critic, round_ in self._labels()[1:]:
            counts = Counter()
            for r in self.rows:
                if r["critic"] != critic or r["round"] != round_:
                    continue
                before, after = original.get(r["record"]), r["judge_score"]
                if before is None or after is None:
                    counts["not_compared"] += 1
                else:
                    counts["win" if after > before else "lose" if after < before else "tie"] += 1
            result.append(
                {"row": self.label(critic, round_), **{k: counts[k] for k in ("win", "tie", "lose", "not_compared")}}
            )
        return result

    def judge_parse(self) -> dict[str, Any]:
        """The judge's own parse rate: ``total`` verdicts, ``parsed``, ``rate`` (x 100) and ``statuses`` (counts)."""
        statuses = Counter(self.rows["judge_status"])
        total, parsed = sum(statuses.values()), statuses.get(schema.ParseStatus.OK.value, 0)
        return {
            "total": total,
            "parsed": parsed,
            "rate": 100.0 * parsed / total if total else math.nan,
            "statuses": dict(statuses),
        }

    def critique_parse(self) -> dict[str, Any]:
        """How many critiques carried a parsed score (the critique text is fed back either way)."""
        statuses = Counter(r["critique_status"] for r in self.rows if r["critic"] != ORIGINAL)
        return {"total": sum(statuses.values()), "statuses": dict(statuses)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: table, outcomes, parse rates, cache hits, seconds."""
        return {
            "table": self.table(),
            "outcomes": self.outcomes(),
            "judge_parse": self.judge_parse(),
            "critique_parse": self.critique_parse(),
            "cache": {k: vars(v) for k, v in self.cache.items()},
            "rounds": self.rounds,
            "seconds": self.seconds,
        }

    def markdown(self, title: str = "Critiques as feedback") -> str:
        """The report: Table 4 layout, win / tie / lose, the judge's parse rate and the cache hits per stage."""

        def f(value: float | None) -> str:
            return "-" if value is None else f"{value:.3f}"

        head = ["Critic", *self.categories, "Overall", "judged"]
        lines = [
            f"# {title}",
            "",
            "Mean judge score of the responses (original first) and of each critic's rewrites.",
            "",
            "| " + " | ".join(head) + " |",
            "|---" + "|---:" * (len(head) - 1) + "|",
        ]
        for row in self.table():
            cells = [f(row["cells"][c]) for c in self.categories]
            lines.append(
                f"| {row['row']} | " + " | ".join(cells) + f" | {f(row['overall'])} | {row['judged']}/{row['total']} |"
            )
        lines += [
            "",
            "| Rewrite vs original | win | tie | lose | not compared (a verdict unparsed) |",
            "|---|---:|---:|---:|---:|",
        ]
        for o in self.outcomes():
            lines.append(f"| {o['row']} | {o['win']} | {o['tie']} | {o['lose']} | {o['not_compared']} |")
        judge = self.judge_parse()
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(judge["statuses"].items()))
        lines += [
            "",
            f"Judge verdicts parsed: {judge['parsed']}/{judge['total']} ({judge['rate']:.1f}%; {statuses}); "
            "unparsed verdicts are left out of every mean and comparison.",
        ]
        critique = self.critique_parse()
        lines.append(
            "Critiques with a parsed score: "
            f"{critique['statuses'].get('ok', 0)}/{critique['total']} (every critique text is fed back)."
        )
        hits = "; ".join(f"{stage} {c.cached}/{c.total} from cache" for stage, c in self.cache.items())
        lines += [f"Generations: {hits}.", f"Wall time: {self.seconds:.1f} s.", ""]
        return "\n".join(lines)


def _critique(critic: CriticKind, questions: list[str], responses: list[str | None], source: str):
    """Reference-free pointwise critiques of the responses that exist (None in, None out)."""
    keep = [i for i, r in enumerate(responses) if r is not None]
    out: list[dict | None] = [None] * len(responses)
    if not keep:
        return out, 0
    data = datasets.Dataset.from_dict(
        {schema.QUESTION: [questions[i] for i in keep], schema.RESPONSE: [responses[i] for i in keep]}
    )
    critiques = critic.judge(data, source=source, referenced=False)
    for i, row in zip(keep, add_columns(data, critiques.columns), strict=True):
        out[i] = row
    return out, critiques.stats.cached


def _judge(judge: CriticKind, rows: list[dict], source: str) -> int:
    """Grade every row's ``response`` in place (referenced where a reference exists); returns cache hits."""
    cached = 0
    for referenced in (True, False):
        mine = [r for r in rows if bool(r.get("reference")) == referenced and r["response"] is not None]
        if not mine:
            continue
        columns = {schema.QUESTION: [r["question"] for r in mine], schema.RESPONSE: [r["response"] for r in mine]}
        if referenced:
            columns[schema.REFERENCE] = [r["reference"] for r in mine]
        data = datasets.Dataset.from_dict(columns)
        critiques = judge.judge(data, source=source, referenced=referenced)
        cached += critiques.stats.cached
        for r, g in zip(mine, add_columns(data, critiques.columns), strict=True):
            ok = g[schema.CRITIQUE_STATUS] == schema.ParseStatus.OK.value
            r.update(
                judge_score=g[schema.CRITIQUE_SCORE] if ok else None,
                judge_status=g[schema.CRITIQUE_STATUS],
                judge_generation=g[schema.CRITIQUE_GENERATION],
            )
    for r in rows:
        if r["response"] is None:  # no critique, so no rewrite to judge
            r.update(judge_score=None, judge_status=schema.ParseStatus.SKIPPED.value, judge_generation=None)
    return cached


def _columns(records, category: str, source: str) -> tuple[list, list, list, list[str]]:
    """``(questions, responses, references, categories)`` of the records, checked (names row and field).

    Raises:
        RecordError: a missing or empty question / response, or a reference that is not text.
    """
    data = records if isinstance(records, datasets.Dataset) else datasets.Dataset.from_list([dict(r) for r in records])
    check_fields(data, (schema.QUESTION, schema.RESPONSE), source, allow_empty=(schema.RESPONSE,))
    references = list(data[schema.REFERENCE]) if schema.REFERENCE in data.column_names else [None] * len(data)
    bad = [i for i, v in enumerate(references) if v is not None and not isinstance(v, str)]
    if bad:
        raise RecordError(f"{source}: row {bad[0]}, field 'reference': not text")
    categories = [str(c) for c in data[category]] if category in data.column_names else ["all"] * len(data)
    return list(data[schema.QUESTION]), list(data[schema.RESPONSE]), references, categories


@dataclass
class _Records:
    """The records' columns, checked (:func:`_columns`), and the table rows built from them."""

    questions: list
    responses: list
    references: list
    categories: list[str]

    def row(self, i: int, critic: str, round_: int, response: str | None, **extra) -> dict[str, Any]:
        """The row of record ``i`` for ``critic``'s ``round_`` (0: the original) with ``response`` to judge."""
        return {
            "record": i,
            "category": self.categories[i],
            "critic": critic,
            "round": round_,
            "question": self.questions[i],
            "reference": self.references[i],
            "response": response,
            "critiqued": None,
            "critique": None,
            "critique_score": None,
            "critique_status": None,
            **extra,
        }


@dataclass
class _Rewriter:
    """The generator that rewrites, its generation cache, rewrite prompt and decoding."""

    generator: Any
    cache: GenerationCache | None
    prompt: RewritePrompt
    decoding: DecodingConfig


def _rewrite_rounds(
    name: str,
    critic: CriticKind,
    data: _Records,
    rounds: int,
    rewriter: _Rewriter,
    counts: dict[str, StageCount],
    source: str,
) -> list[dict[str, Any]]:
    """``critic``'s rounds of critique -> rewrite, each on the previous round's rewrite: one row per record and
    round (a response left without a critique gets no rewrite, None); the stages' inputs counted in ``counts``."""
    rows = []
    questions = data.questions
    current: list[str | None] = list(data.responses)
    for round_ in range(1, rounds + 1):
        graded, cached = _critique(critic, questions, current, f"{source} ({name}, round {round_})")
        counts["critique"].add(sum(g is not None for g in graded), cached)
        feedback = [None if g is None else g[schema.CRITIQUE_GENERATION] for g in graded]
        conversations = [
            None
            if text is None
            else rewriter.prompt.messages({"question": questions[i], "response": current[i], "critique": text})
            for i, text in enumerate(feedback)
        ]
        made = CachedBackend(rewriter.generator, rewriter.cache).generate(conversations, rewriter.decoding)
        counts["rewrite"].add(sum(c is not None for c in conversations), made.cached)
        rewrites = [None if g is None else g[0].strip() for g in made.texts]
        skipped = schema.ParseStatus.SKIPPED.value
        rows += [
            data.row(
                i,
                name,
                round_,
                rewrites[i],
                critiqued=current[i],
                critique=feedback[i],
                critique_score=None if g is None else g[schema.CRITIQUE_SCORE],
                critique_status=skipped if g is None else g[schema.CRITIQUE_STATUS],
            )
            for i, g in enumerate(graded)
        ]
        current = rewrites
    return rows


def refine(
    records: datasets.Dataset | Sequence[Mapping[str, Any]],
    critics: Mapping[str, CriticKind],
    generator,
    judge: CriticKind,
    *,
    rounds: int = 1,
    prompt: RewritePrompt | str = "en",
    decoding: DecodingConfig | None = None,
    cache_path: str | os.PathLike | None = None,
    category: str = "category",
    source: str = "data",
) -> RefineResult:
    """Run the critique -> rewrite -> re-judge loop (see the module docstring).

    Args:
        records: rows with ``question`` and ``response``; optional ``reference`` (the judge's referenced setting for
            that row) and a category column (default ``category``; missing = one column ``all``).
        critics: name -> critic writing the feedback (reference-free pointwise grading; a kind whose
            ``writes_explanation`` is True: its critique text is the feedback); names label the table rows.
        generator: the :class:`~hf_critic.backends.base.Backend` that rewrites (any: the embedded model, a local
            folder, an OpenAI-compatible server).
        judge: the critic grading originals and rewrites, through its ``judge`` (a computed critic: its critiques
            carry their run's stats; its verdict mode, text, probability or reward, is its own).
        rounds: critique -> rewrite iterations (>= 1); each round critiques the previous round's rewrite.
        prompt: the rewrite prompt, or a language / YAML file for :func:`~hf_critic.prompts.rewrite.load_rewrite_prompt`.
        decoding: the generator's decoding (default: greedy, 512 new tokens).
        cache_path: the SQLite generation cache for the generator (the critics and the judge use their own
            ``cache_path``; pass the same file to all for one cache).
        category: the category column.
        source: name of the data in error messages.

    Returns:
        :class:`RefineResult`.

    Raises:
        ValueError: no critic, ``rounds`` < 1, or a critic named like the original row.
        RecordError: missing or empty question / response (names row and field).
    """
    started = time.perf_counter()
    if not critics or rounds < 1:
        raise BadInputError("refine needs at least one critic and rounds >= 1")
    if ORIGINAL in critics:
        raise BadInputError(f"{ORIGINAL!r} names the row of the unchanged responses; call the critic something else")
    data = _Records(*_columns(records, category, source))
    prompt = load_rewrite_prompt(prompt) if isinstance(prompt, str) else prompt
    decoding = decoding or DecodingConfig(max_new_tokens=512)
    cache = GenerationCache(cache_path) if cache_path else None
    counts = {stage: StageCount() for stage in ("critique", "rewrite", "judge")}
    rows = [data.row(i, ORIGINAL, 0, response) for i, response in enumerate(data.responses)]
    rewriter = _Rewriter(generator, cache, prompt, decoding)
    for name, critic in critics.items():
        rows += _rewrite_rounds(name, critic, data, rounds, rewriter, counts, source)
    judged = sum(r["response"] is not None for r in rows)
    counts["judge"].add(judged, _judge(judge, rows, f"{source} (judge)"))
    return RefineResult(
        rows=datasets.Dataset.from_list(rows),
        categories=list(dict.fromkeys(data.categories)),
        critics=list(critics),
        rounds=rounds,
        cache=counts,
        seconds=time.perf_counter() - started,
    )
