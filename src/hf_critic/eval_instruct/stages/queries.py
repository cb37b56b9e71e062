"""Stages 1-3 of Eval-Instruct (CritiqueLLM v2 §3.2.1, Appendix A): query augmentation, difficulty, balance."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import datasets

from ...backends.chat import ChatRequest, ChatSource
from ...core.errors import BadInputError
from ...core.schema import (
    CATEGORIES,
    category_name,
    normalize_category,
    query_id,
)
from ...io import RecordError
from ...prompts import get_instruction_prompt
from ..stage_report import StageReport
from ..text import SeedRougeFilter, SelfBleuFilter
from ._common import _dataset, _norm_question, _report

# ------------------------------------------------------------------------------------------------ 1. augmentation
# Linear scans: a field cannot run past its closing marker (".+?" let every "@@" scan to the end of the answer:
# quadratic), and serial numbers and scores are bounded before int() sees them (a 5,001-digit "difficulty" raised in
# int() and stopped the whole run). A field is "[^@]*(?:@(?!@)[^@]*)*" for "@@": runs of a negated class are fast.
_FIELD = r"([^{1}]*(?:{1}(?!{1})[^{1}]*)*){0}"
_QUERY_ITEM = re.compile(r"@@" + _FIELD.format("@@", "@") + r"\s*&&" + _FIELD.format("&&", "&"), re.DOTALL)
# Found from its literal "@@" (a scan from every digit was slow on runaway digit runs); the serial number is read
# from the few characters before it.
_DIFFICULTY_ITEM = re.compile(
    r"@@" + _FIELD.format("@@", "@") + r"\s*&&" + _FIELD.format("&&", "&") + r"\s*##\s*(\d)\s*##", re.DOTALL
)
_SERIAL_BEFORE = re.compile(r"(?<!\d)(\d{1,4})\s*(?:[.．、)]\s*)?\Z")


def parse_generated_queries(text: str) -> list[tuple[str, str]]:
    """The ``@@query@@ &&category&&`` items of a query-generation answer (v2 Appendix A), in order.

    Returns:
        ``[(query, category_as_written), ...]``, both stripped; empty when the answer has no such item.

    Example:
        >>> parse_generated_queries("1.@@What is 2+2?@@ &&数学计算&&\\n2.@@Hi@@&&x&&")
        [('What is 2+2?', '数学计算'), ('Hi', 'x')]
    """
    return [(q.strip(), c.strip()) for q, c in _QUERY_ITEM.findall(text) if q.strip()]


def parse_difficulties(text: str, n: int) -> dict[int, int]:
    """Difficulty scores from an answer to the Appendix A evaluation prompt (``k.@@query@@&&category&&##d##``).

    Args:
        text: the teacher's answer.
        n: number of queries that were shown (serial numbers 1..n).

    Returns:
        ``{index (0-based): difficulty}`` for serial numbers in 1..n with a difficulty in 1..3 (the first item of a
        serial number wins); queries without such an item are absent.

    Example:
        >>> parse_difficulties("1.@@a@@&&b&&##2## 3.@@c@@&&d&&##3## 4.@@e@@&&f&&##1##", 3)
        {0: 2, 2: 3}
    """
    out: dict[int, int] = {}
    for item in _DIFFICULTY_ITEM.finditer(text):
        serial = _SERIAL_BEFORE.search(text, max(0, item.start() - 40), item.start())
        if serial is None:
            continue
        k, d = int(serial.group(1)), int(item.group(3))
        if 1 <= k <= n and 1 <= d <= 3 and k - 1 not in out:
            out[k - 1] = d
    return out


def _seed_rows(seeds: datasets.Dataset, source: str) -> list[dict]:
    missing = [c for c in ("question", "category") if c not in seeds.column_names]
    if missing:
        raise RecordError(f"{source}: seed queries need column(s) {missing}; they have {seeds.column_names}")
    rows, bad = [], []
    for i, row in enumerate(seeds):
        category = normalize_category(row["category"])
        question = row["question"]
        if category is None or not isinstance(question, str) or not question.strip():
            bad.append(f"row {i}: question {question!r:.40}, category {row['category']!r}")
            continue
        rows.append({"query_id": query_id(question), "question": question.strip(), "category": category})
    if bad:
        names = [en for en, _ in CATEGORIES]
        raise RecordError(f"{source}: {len(bad)} bad seed row(s) ({'; '.join(bad[:5])}); categories: {names}")
    return rows


def augment_queries(
    seeds: datasets.Dataset,
    teacher: ChatSource,
    *,
    language: str = "en",
    rounds: int = 1,
    examples: int = 3,
    format_examples: int = 10,
    rouge_l_max: float = 0.7,
    self_bleu_max: float = 0.7,
    keep_seeds: bool = True,
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
    source: str = "seeds",
    stage: str = "augment_queries",
    report: StageReport | None = None,
    progress: bool = True,
) -> datasets.Dataset:
    """Self-instruct query augmentation (CritiqueLLM v2 §3.2.1 and Appendix A 'Generation'; v1 §3.2.1).

    Each round sends the generation prompt with ``examples`` seed questions and ``format_examples`` seed
    ``@@question@@ &&category&&`` lines drawn at random (seeded per round), and a per-round ``seed`` request
    parameter. The answer's items are then filtered in order: unknown category, duplicate (of a seed or of an
    earlier item), ROUGE-L F1 with a seed above ``rouge_l_max`` (``rouge_l_seed``), Self-BLEU against the items kept
    so far above ``self_bleu_max`` (``self_bleu``), "ROUGE-L ... and Self-BLEU sequentially" as in v1.

    Args:
        seeds: rows with ``question`` and ``category`` (one of :data:`CATEGORIES`, English or Chinese name).
        teacher: the chat source asked (ChatGPT in the papers).
        language: ``"en"`` / ``"zh"``: the prompt variant (the language of the generated queries).
        rounds: number of generation prompts (>= 0; each asks for 10 queries).
        examples / format_examples: seed items shown per prompt (the paper: 3 and 10).
        rouge_l_max / self_bleu_max: filter thresholds in (0, 1].
        keep_seeds: the output starts with the seed queries themselves.
        params: request parameters (e.g. ``{"temperature": 1.0}``), the round's ``seed`` added.
        seed: base of the random draws.
        source: the seeds' name for error messages.
        stage / report / progress: stage name (usage ledger key), report to fill, progress bar.

    Returns:
        ``query_id``, ``question``, ``category`` (canonical English name), ``source`` (``"seed"`` /
        ``"augmented"``). The report counts rounds in, augmented queries out, rejected items by reason (a round whose
        answer has no item counts as ``unparseable``) and failed rounds (``conserved`` is False: rounds become
        queries).

    Raises:
        RecordError: seed rows without a question or with an unknown category (the rows are named).
    """
    report = _report(report, stage, "rounds", conserved=False)
    seed_rows = _seed_rows(seeds, source)
    requests = _generation_requests(seed_rows, language, rounds, examples, format_examples, params, seed)
    check = lambda text: None if parse_generated_queries(text) else "unparseable"  # noqa: E731
    results = teacher.complete_many(requests, stage=stage, progress=progress, check=check) if requests else []
    report.items_in = len(requests)
    seen = {_norm_question(row["question"]) for row in seed_rows}
    rouge = SeedRougeFilter([row["question"] for row in seed_rows], rouge_l_max)
    bleu = SelfBleuFilter(self_bleu_max)
    kept: list[dict] = []
    candidates = 0
    for result in results:
        if not result.ok:
            report.fail(result.id, result.error or "failed")
            continue
        items = parse_generated_queries(result.text or "")
        if not items:  # only when the check is not run (a chat source without one)
            report.reject("unparseable", result.id)
            continue
        for question, written in items:
            candidates += 1
            row = _filtered(question, written, seen, rouge, bleu, report)
            if row is not None:
                kept.append(row)
    report.items_out = len(kept)
    report.notes["candidates"] = candidates
    rows = ([{**row, "source": "seed"} for row in seed_rows] if keep_seeds else []) + kept
    return _dataset(rows, ("query_id", "question", "category", "source"))


def _generation_requests(
    seed_rows: list[dict], language: str, rounds: int, examples: int, format_examples: int, params, seed: int
) -> list[ChatRequest]:
    """One generation prompt per round (none without seed rows): ``examples`` seed questions and ``format_examples``
    seed ``@@question@@ &&category&&`` lines drawn at random (seeded per round), the round's ``seed`` a request
    parameter."""
    prompt = get_instruction_prompt("query_generation", language)
    requests = []
    for r in range(rounds if seed_rows else 0):
        rng = random.Random(seed * 1_000_003 + r)
        shown = [rng.choice(seed_rows) for _ in range(examples)]
        formatted = [rng.choice(seed_rows) for _ in range(format_examples)]
        values = {
            "examples": "\n".join(f"{i}.{row['question']}" for i, row in enumerate(shown, start=1)),
            "format_examples": "\n".join(
                f"@@{row['question']}@@ &&{category_name(row['category'], language)}&&" for row in formatted
            ),
        }
        requests.append(ChatRequest(f"round-{r}", prompt.render(values), {**dict(params or {}), "seed": seed + r}))
    return requests


def _filtered(question: str, written: str, seen: set, rouge, bleu, report: StageReport) -> dict | None:
    """The augmented row of one generated item, or None when a filter rejects it (booked in ``report`` under the
    candidate's would-be id): unknown category, duplicate, ROUGE-L with a seed, Self-BLEU, in that order; a kept
    question joins ``seen`` (and the Self-BLEU pool)."""
    category = normalize_category(written)
    name = query_id(question)  # a candidate is named by the id it would have had
    if category is None:
        report.reject("unknown_category", name)
    elif _norm_question(question) in seen:
        report.reject("duplicate", name)
    elif rouge.rejects(question):
        report.reject("rouge_l_seed", name)
    elif not bleu.offer(question):
        report.reject("self_bleu", name)
    else:
        seen.add(_norm_question(question))
        return {"query_id": query_id(question), "question": question, "category": category, "source": "augmented"}
    return None


# ------------------------------------------------------------------------------------------------ 2. difficulty
def score_difficulty(
    queries: datasets.Dataset,
    teacher: ChatSource,
    *,
    language: str = "en",
    params: Mapping[str, Any] | None = None,
    stage: str = "score_difficulty",
    report: StageReport | None = None,
    progress: bool = True,
) -> datasets.Dataset:
    """Difficulty 1 (easy) to 3 (hard) per query by the teacher (CritiqueLLM v2 Appendix A 'Evaluation').

    Queries go three per prompt, as the prompt says ("the above three questions"; the last prompt may hold fewer),
    listed as ``k.@@question@@&&category&&``; the answer's ``##d##`` scores are read by serial number
    (:func:`parse_difficulties`).

    Args:
        queries: rows with ``query_id``, ``question``, ``category``.
        teacher: the chat source.
        language: prompt variant.
        params: request parameters.
        stage / report / progress: as in :func:`augment_queries`.

    Returns:
        The rows with an integer ``difficulty`` column. An answer counts only when it scores every query of its
        prompt: one that scores some of them is asked again like one that scores none (bounded by the teacher's
        retries), and never cached, so a rerun asks for it again; the queries of a prompt that still fails are
        reported failed, each by its ``query_id``. With a chat source that runs no check, queries without a readable
        score are rejected (``unparseable``), each by its ``query_id``.
    """
    report = _report(report, stage, "queries")
    prompt = get_instruction_prompt("query_difficulty", language)
    rows = list(queries)
    batches = [rows[i : i + 3] for i in range(0, len(rows), 3)]
    requests = []
    for batch in batches:
        listed = "\n".join(
            f"{k}.@@{row['question']}@@&&{category_name(row['category'], language)}&&"
            for k, row in enumerate(batch, start=1)
        )
        requests.append(
            ChatRequest(",".join(r["query_id"] for r in batch), prompt.render({"queries": listed}), params or {})
        )
    # The acceptance rule of an answer, fresh or cached: it scores every query it was shown. One that scores only
    # some (a garbled or cut list) is asked again and never cached, so a rerun asks again instead of losing the rest.
    results: list = [None] * len(requests)
    for size in sorted({len(batch) for batch in batches}):  # every prompt holds 3 queries but perhaps the last
        part = [i for i, batch in enumerate(batches) if len(batch) == size]
        answered = teacher.complete_many(
            [requests[i] for i in part], stage=stage, progress=progress, check=_difficulty_check(size)
        )
        for i, result in zip(part, answered, strict=True):
            results[i] = result
    report.items_in = len(rows)
    out = []
    for batch, result in zip(batches, results, strict=True):
        if not result.ok:
            for row in batch:
                report.fail(row["query_id"], result.error or "failed")
            continue
        scores = parse_difficulties(result.text or "", len(batch))
        for i, row in enumerate(batch):
            if i in scores:
                out.append({**row, "difficulty": scores[i]})
            else:  # only from a chat source that runs no check
                report.reject("unparseable", row["query_id"])
    report.items_out = len(out)
    return _dataset(out, (*queries.column_names, "difficulty"))


def _difficulty_check(n: int):
    """The check of a difficulty answer to a prompt of ``n`` queries: ``text -> None`` when it scores all ``n``, else
    ``"unparseable"`` (no score at all) or ``"incomplete"`` (some missing)."""

    def check(text: str) -> str | None:
        scored = len(parse_difficulties(text, n))
        return None if scored == n else "incomplete" if scored else "unparseable"

    return check


# ------------------------------------------------------------------------------------------------ 3. balance
def _allocate(total: int, capacity: Mapping[Any, int]) -> dict[Any, int]:
    """Split ``total`` over keys as evenly as their capacities allow (water filling, keys in sorted order)."""
    alloc = dict.fromkeys(capacity, 0)
    remaining = min(total, sum(capacity.values()))
    while remaining > 0:
        open_keys = sorted((k for k in capacity if alloc[k] < capacity[k]), key=str)
        share = max(remaining // len(open_keys), 1)
        for k in open_keys:
            give = min(share, capacity[k] - alloc[k], remaining)
            alloc[k] += give
            remaining -= give
            if remaining == 0:
                break
    return alloc


def balance_queries(
    queries: datasets.Dataset,
    *,
    total: int,
    seed: int = 0,
    stage: str = "balance_queries",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Draw ``total`` queries balanced over the task categories, then over difficulty within each category
    (CritiqueLLM v1 §3.2.1: "sample ... queries with balanced difficulty ... balance the amount of data in each task
    type"; v2 Appendix A: "for difficulty balance in the whole augmentation dataset").

    Categories get equal shares (a category with too few queries gives its remainder to the others); within a
    category the share is split over the difficulty levels present (a missing ``difficulty`` column counts as one
    level) the same way; queries are drawn at random with ``seed``. Output order is the input order.

    Args:
        queries: rows with ``category`` and optionally ``difficulty``.
        total: number of queries to keep (>= 1); all are kept when there are fewer.
        seed: seed of the draws.
        stage / report: as in :func:`augment_queries`.

    Returns:
        The selected rows; the others are rejected with reason ``balance``.
    """
    if total < 1:
        raise BadInputError("total must be >= 1")
    report = _report(report, stage, "queries")
    rows = list(queries)
    report.items_in = len(rows)
    by_category: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_category[row["category"]].append(i)
    rng = random.Random(seed)
    chosen: set[int] = set()
    quota = _allocate(total, {c: len(ix) for c, ix in by_category.items()})
    for category in sorted(by_category):
        levels: dict[Any, list[int]] = defaultdict(list)
        for i in by_category[category]:
            levels[rows[i].get("difficulty")].append(i)
        for level, n in _allocate(quota[category], {lv: len(ix) for lv, ix in levels.items()}).items():
            chosen.update(rng.sample(sorted(levels[level]), n))
    out = [row for i, row in enumerate(rows) if i in chosen]
    report.items_out = len(out)
    left = [row.get("query_id", f"row {i}") for i, row in enumerate(rows) if i not in chosen]
    report.reject("balance", *left, count=len(left))
    return _dataset(out, queries.column_names)
