"""The Eval-Instruct stages, each a function from ``datasets.Dataset`` to ``datasets.Dataset``.

CritiqueLLM v2 §3.2 (Eval-Instruct), in run order:

1. :func:`augment_queries` - self-instruct query augmentation with the Appendix A prompt, ROUGE-L (against the
   seeds) and Self-BLEU filters (§3.2.1; v1 §3.2.1);
2. :func:`score_difficulty` - difficulty 1-3 by the teacher (Appendix A 'Evaluation');
3. :func:`balance_queries` - balance by the 10 task categories, then by difficulty;
4. :func:`collect_responses` - responses from several generators (§3.2.1);
5. :func:`add_pseudo_references` - the best generator's answers as pseudo references, optionally manually
   revised (§3.2.1);
6. :func:`grade_pointwise_referenced` - the teacher's referenced pointwise critiques with the multi-dimension prompt
   (§3.2.2; the same stage with the ``critiquellm_v1`` family is v1's first dialogue turn);
7. :func:`make_pairs` - pairs of responses to the same query;
8. multi-path prompting (§3.2.2): Path#1 = :func:`pointwise_to_pairwise` (f_P2P, referenced) then
   :func:`referenced_to_reference_free` (f_R2RF, pairwise); Path#2 = :func:`referenced_to_reference_free` (f_R2RF,
   pointwise), :func:`attach_pointwise_critiques`, then :func:`pointwise_to_pairwise` (f_P2P, reference-free);
9. :func:`cross_validate` - keep a reference-free pair when both paths agree, with both critiques (§3.2.3);
10. :func:`swap_augment` - order-swapped copies of pairwise items (§3.3, as in Auto-J);
11. :func:`to_sft_dataset` - the output rows with SFT-ready ``messages`` rendered with the critic's own templates.

v1 (CritiqueLLM v1 §3.2.3, Table 6): :func:`grade_pointwise_referenced` with ``family="critiquellm_v1"`` (first
turn), then :func:`dialogue_revision` (second turn, score moves by at most 1).

Rule-based filters (:mod:`hf_critic.eval_instruct.filters`) run inside every prompting stage; every stage counts what it
rejected by reason and which items failed in a :class:`~hf_critic.eval_instruct.stage_report.StageReport`. Teacher and generator
calls go through a :class:`~hf_critic.backends.chat.ChatSource` (cached, so a rerun makes no call twice).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import datasets

from ..backends.chat import ChatRequest, ChatSource
from ..io import RecordError
from ..labels import LABEL_NAMES, swap_critique, swap_label
from ..parsing import parse, parse_label
from ..prompts import get_instruction_prompt, get_teacher_template, get_template
from ..schema import (
    CATEGORIES,
    SETTINGS,
    ParseStatus,
    Setting,
    Task,
    category_name,
    normalize_category,
    query_id,
)
from .filters import FilterConfig, check_critique, label_contradicts_scores
from .stage_report import StageReport
from .text import SeedRougeFilter, SelfBleuFilter

__all__ = [
    "CATEGORIES",
    "OUTPUT_FEATURES",
    "add_pseudo_references",
    "attach_pointwise_critiques",
    "augment_queries",
    "balance_queries",
    "collect_responses",
    "cross_validate",
    "dialogue_revision",
    "grade_pointwise_referenced",
    "make_pairs",
    "normalize_category",
    "parse_difficulties",
    "parse_generated_queries",
    "pointwise_to_pairwise",
    "query_id",
    "referenced_to_reference_free",
    "score_difficulty",
    "swap_augment",
    "to_sft_dataset",
]

POINTWISE_REFERENCED = Setting(Task.POINTWISE, True)
POINTWISE_REFERENCE_FREE = Setting(Task.POINTWISE, False)
PAIRWISE_REFERENCED = Setting(Task.PAIRWISE, True)
PAIRWISE_REFERENCE_FREE = Setting(Task.PAIRWISE, False)


def _norm_question(question: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", question)).strip().lower()


def _dataset(rows: list[dict], columns: Iterable[str]) -> datasets.Dataset:
    """Rows as a Dataset; with no rows, an empty Dataset that still has ``columns``."""
    if rows:
        return datasets.Dataset.from_list(rows)
    return datasets.Dataset.from_dict({c: [] for c in columns})


def _answered(teacher, rows: list[dict], requests: list[ChatRequest], check, stage: str, progress: bool, report):
    """Ask the teacher one request per row; ``[(row, result), ...]`` for the answered ones, in row order.

    ``check`` (``text -> reason | None``, see :func:`_verdict_check`) makes the teacher ask again for answers the
    stage's parser rejects, so that only answers that parse are kept and cached. Sets ``report.items_in`` to
    ``len(rows)`` and books every failed request in ``report`` (reported, never dropped silently: Eval-Instruct's
    resumable-run contract).
    """
    results = teacher.complete_many(requests, stage=stage, progress=progress, check=check) if requests else []
    report.items_in = len(rows)
    answered = []
    for row, result in zip(rows, results, strict=True):
        if result.ok:
            answered.append((row, result))
        else:
            report.fail(result.id, result.error or "failed")
    return answered


def _verdict_check(kind: str, score_range: tuple[float, float] | None):
    """The teacher-side check of a critique stage: ``text -> None`` when the verdict parses, else the filter reason
    (``unparseable`` / ``out_of_range``); such answers are asked again (:meth:`OpenAIClient.complete_many`)."""
    reasons = {ParseStatus.UNPARSED: "unparseable", ParseStatus.OUT_OF_RANGE: "out_of_range"}

    def check(text: str) -> str | None:
        return reasons.get(parse(text, kind, score_range or (1, 10)).status)

    return check


@contextlib.contextmanager
def _per_item(report: StageReport, item_id: str):
    """Run one item's parsing and filtering; an exception becomes that item's failure (stage, id, reason), never the
    run's (a 5,001-digit number in one answer used to stop every rerun)."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - one bad answer is one failed item
        report.fail(item_id, f"cannot read the answer: {type(err).__name__}: {str(err)[:160]}")


def _report(report: StageReport | None, name: str, unit: str, conserved: bool = True) -> StageReport:
    report = report if report is not None else StageReport(name)
    report.unit, report.conserved = unit, conserved
    return report


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
                kept.append(
                    {"query_id": query_id(question), "question": question, "category": category, "source": "augmented"}
                )
    report.items_out = len(kept)
    report.notes["candidates"] = candidates
    rows = ([{**row, "source": "seed"} for row in seed_rows] if keep_seeds else []) + kept
    return _dataset(rows, ("query_id", "question", "category", "source"))


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
        raise ValueError("total must be >= 1")
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


# ------------------------------------------------------------------------------------------------ 4. responses
def collect_responses(
    queries: datasets.Dataset,
    generators: Sequence[tuple[str, ChatSource]] | Mapping[str, ChatSource],
    *,
    system: Mapping[str, str | None] | None = None,
    stage: str = "collect_responses",
    report: StageReport | None = None,
    progress: bool = True,
) -> datasets.Dataset:
    """One response per query and generator (CritiqueLLM v2 §3.2.1: 10 models of different quality; "we further
    filter out the generated results by removing a small number of failure cases, such as empty responses").

    Args:
        queries: rows with ``query_id`` and ``question`` (other columns are carried along).
        generators: ``name -> chat source`` (HTTP endpoints or local backends), in order.
        system: optional system message per generator name.
        stage / report / progress: as in :func:`augment_queries`.

    Returns:
        One row per (query, generator): the query's columns plus ``generator``, ``response`` and ``response_id``
        (``"<query_id>/<generator>"``). Empty responses are rejected (``empty_response``); failed requests are
        reported per response id.
    """
    report = _report(report, stage, "responses")
    items = list(generators.items()) if isinstance(generators, Mapping) else list(generators)
    rows = list(queries)
    out = []
    report.items_in = len(rows) * len(items)
    for name, source in items:
        prefix = [{"role": "system", "content": system[name]}] if system and system.get(name) else []
        requests = [
            ChatRequest(f"{row['query_id']}/{name}", [*prefix, {"role": "user", "content": row["question"]}])
            for row in rows
        ]
        results = source.complete_many(requests, stage=stage, progress=progress) if requests else []
        for row, result in zip(rows, results, strict=True):
            if not result.ok:
                report.fail(result.id, result.error or "failed")
            elif not (result.text or "").strip():
                report.reject("empty_response", result.id)
            else:
                out.append({**row, "generator": name, "response": result.text.strip(), "response_id": result.id})
    report.items_out = len(out)
    return _dataset(out, (*queries.column_names, "generator", "response", "response_id"))


# ------------------------------------------------------------------------------------------------ 5. references
def add_pseudo_references(
    responses: datasets.Dataset,
    *,
    reference_generator: str,
    revisions: Mapping[str, str] | None = None,
    grade_reference_generator: bool = True,
    stage: str = "pseudo_references",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Pseudo references (CritiqueLLM v2 §3.2.1): "we select the best-performing LLM (i.e., GPT-4) and manually
    check its generated texts for each user query, while revising them if necessary".

    Args:
        responses: rows from :func:`collect_responses`.
        reference_generator: the best generator's name; its response to a query is the query's reference.
        revisions: manual revisions, keyed by ``query_id`` or by question text; they replace the generator's text.
        grade_reference_generator: keep the reference generator's own responses as items to critique.
        stage / report: as in :func:`augment_queries`.

    Returns:
        The rows with ``reference`` and ``reference_source`` (``"generator:<name>"`` or ``"manual_revision"``). Rows
        of a query without a reference are rejected (``no_reference``); the reference generator's rows are rejected
        (``reference_generator``) when ``grade_reference_generator`` is False.
    """
    report = _report(report, stage, "responses")
    revisions = dict(revisions or {})
    rows = list(responses)
    report.items_in = len(rows)
    references: dict[str, tuple[str, str]] = {}
    for row in rows:
        if row["generator"] == reference_generator:
            references[row["query_id"]] = (row["response"], f"generator:{reference_generator}")
    for row in rows:
        manual = revisions.get(row["query_id"]) or revisions.get(row["question"])
        if manual:
            references[row["query_id"]] = (manual, "manual_revision")
    out = []
    for row in rows:
        name = row.get("response_id") or f"{row['query_id']}/{row['generator']}"
        if row["query_id"] not in references:
            report.reject("no_reference", name)
        elif row["generator"] == reference_generator and not grade_reference_generator:
            report.reject("reference_generator", name)
        else:
            reference, origin = references[row["query_id"]]
            out.append({**row, "reference": reference, "reference_source": origin})
    report.items_out = len(out)
    return _dataset(out, (*responses.column_names, "reference", "reference_source"))


# ------------------------------------------------------------------------------------------------ 6. pointwise grading
def _prompt_id(template) -> str:
    return f"{template.name}@{template.version}"


def _quotable(row: Mapping[str, Any]) -> list[str]:
    return [row[k] for k in ("question", "response", "response_1", "response_2") if isinstance(row.get(k), str)]


def grade_pointwise_referenced(
    responses: datasets.Dataset,
    teacher: ChatSource,
    *,
    language: str = "en",
    family: str = "critiquellm_v2",
    filters: FilterConfig | None = None,
    stage: str = "grade_pointwise_referenced",
    report: StageReport | None = None,
    progress: bool = True,
) -> datasets.Dataset:
    """Referenced pointwise grading critiques by the teacher: the starting dataset D_point,ref of multi-path
    prompting (CritiqueLLM v2 §3.2.2: "we first construct referenced pointwise grading critiques by prompting GPT-4
    with the assistance of pseudo references and well-designed prompts like Liu et al. (2023a)").

    The prompt is the critic template ``<family>_pointwise_referenced_<language>``: ``critiquellm_v2`` is the
    AlignBench-style multi-dimension prompt (per-dimension and overall scores); ``critiquellm_v1`` is v1's first
    dialogue turn (Table 6). The same template renders the SFT ``messages`` later, so teacher prompt and training
    prompt coincide, as v1 §3.3 prescribes for the referenced setting.

    Args:
        responses: rows with ``question``, ``reference``, ``response`` and ``response_id``.
        teacher: the chat source.
        language: ``"en"`` / ``"zh"``.
        family: template family.
        filters: rule-based filter thresholds.
        stage / report / progress: as in :func:`augment_queries`.

    Returns:
        The rows with ``id`` (= ``response_id``), ``critique`` (the full teacher text, the SFT target),
        ``explanation``, ``score`` (float), ``dimension_scores`` (JSON object or None) and ``teacher_prompt``
        (``name@version``); rejections by filter reason, failures per response id.
    """
    report = _report(report, stage, "responses")
    template = get_template(family, POINTWISE_REFERENCED, language)
    rows = list(responses)
    requests = [ChatRequest(row["response_id"], template.render(row)) for row in rows]
    out = []
    check = _verdict_check("score", template.output.score_range)
    for row, result in _answered(teacher, rows, requests, check, stage, progress, report):
        with _per_item(report, result.id):
            parsed, reason = check_critique(
                result.text or "",
                kind="score",
                language=language,
                score_range=template.output.score_range,
                config=filters,
            )
            if reason:
                report.reject(reason, result.id)
                continue
            out.append(
                {
                    **row,
                    "id": row["response_id"],
                    "critique": result.text,
                    "explanation": parsed.explanation,
                    "score": parsed.score,
                    "dimension_scores": json.dumps(parsed.dimensions, ensure_ascii=False)
                    if parsed.dimensions
                    else None,
                    "teacher_prompt": _prompt_id(template),
                }
            )
    report.items_out = len(out)
    return _dataset(
        out,
        (*responses.column_names, "id", "critique", "explanation", "score", "dimension_scores", "teacher_prompt"),
    )


# ------------------------------------------------------------------------------------------------ 7. pairs
_PAIR_COLUMNS = (
    "pair_id",
    "query_id",
    "question",
    "category",
    "difficulty",
    "reference",
    "generator_1",
    "generator_2",
    "response_id_1",
    "response_id_2",
    "response_1",
    "response_2",
    "critique_1",
    "critique_2",
    "score_1",
    "score_2",
)


def make_pairs(
    graded: datasets.Dataset,
    *,
    per_query: int | None = None,
    seed: int = 0,
    stage: str = "make_pairs",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Pairs of graded responses to the same query: the inputs of pointwise-to-pairwise prompting (CritiqueLLM v2
    §3.2.2, Eq. 1: "q_i, r_i, g_i^(1), g_i^(2)").

    Every pair of distinct generators of a query is formed (or ``per_query`` of them drawn at random); which
    response is shown first is drawn at random per pair, seeded by the pair itself, so position carries no signal
    and reruns give the same order.

    Args:
        graded: rows from :func:`grade_pointwise_referenced` (``id``, ``query_id``, ``generator``, ``response``,
            ``critique``, ``score``, ``reference`` ...).
        per_query: at most this many pairs per query (None: all).
        seed: seed of the draws.
        stage / report: as in :func:`augment_queries`.

    Returns:
        One row per pair: ``pair_id`` (``"<query_id>/<generator_1>~<generator_2>"``), the query's columns,
        ``generator_1/2``, ``response_id_1/2``, ``response_1/2`` and the two pointwise critiques ``critique_1/2``
        with their scores ``score_1/2``. ``conserved`` is False (responses become pairs).
    """
    report = _report(report, stage, "responses", conserved=False)
    rows = list(graded)
    report.items_in = len(rows)
    by_query: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_query[row["query_id"]].append(row)
    out = []
    for qid in sorted(by_query):
        group = sorted(by_query[qid], key=lambda r: r["generator"])
        combos = list(itertools.combinations(group, 2))
        if per_query is not None and len(combos) > per_query:
            rng = random.Random(f"{seed}:{qid}")
            combos = sorted(rng.sample(combos, per_query), key=lambda c: (c[0]["generator"], c[1]["generator"]))
        for a, b in combos:
            if random.Random(f"{seed}:{a['id']}:{b['id']}").random() < 0.5:
                a, b = b, a
            out.append(
                {
                    "pair_id": f"{qid}/{a['generator']}~{b['generator']}",
                    "query_id": qid,
                    "question": a["question"],
                    "category": a.get("category"),
                    "difficulty": a.get("difficulty"),
                    "reference": a.get("reference"),
                    "generator_1": a["generator"],
                    "generator_2": b["generator"],
                    "response_id_1": a["id"],
                    "response_id_2": b["id"],
                    "response_1": a["response"],
                    "response_2": b["response"],
                    "critique_1": a["critique"],
                    "critique_2": b["critique"],
                    "score_1": a["score"],
                    "score_2": b["score"],
                }
            )
    report.items_out = len(out)
    return _dataset(out, _PAIR_COLUMNS)


# ------------------------------------------------------------------------------------------------ 8. multi-path
def pointwise_to_pairwise(
    pairs: datasets.Dataset,
    teacher: ChatSource,
    *,
    referenced: bool,
    language: str = "en",
    filters: FilterConfig | None = None,
    path: str = "path1",
    stage: str = "p2p",
    report: StageReport | None = None,
    progress: bool = True,
) -> datasets.Dataset:
    """Pointwise-to-pairwise prompting f_P2P (CritiqueLLM v2 §3.2.2, Appendix B Tables 7-8): the teacher writes a
    pairwise comparison critique from the two responses and their pointwise critiques, self-reflecting on them.

    ``referenced=True`` is Path#1 step 1 (Eq. 1: D_pair,ref from D_point,ref); ``referenced=False`` is Path#2 step 2
    (Eq. 4: D_pair,ref-free from the reference-free pointwise critiques, see :func:`attach_pointwise_critiques`).

    Filters: the format rules, a label against a pointwise score gap of at least ``max_gap_against_label``
    (``label_contradicts_scores``), and for the reference-free output the reference-leak rule.

    Args:
        pairs: rows from :func:`make_pairs` (or :func:`attach_pointwise_critiques`) with ``critique_1/2`` and
            ``score_1/2`` of the right setting.
        teacher: the chat source.
        referenced: the setting produced (and whether the prompt shows the reference).
        language: ``"en"`` / ``"zh"``.
        filters: thresholds.
        path: ``"path1"`` / ``"path2"``, stored in the ``path`` column.
        stage / report / progress: as in :func:`augment_queries`.

    Returns:
        The pair rows plus ``id`` (= ``pair_id``), ``critique``, ``explanation``, ``label`` (0 / 1 / 2),
        ``path`` and ``teacher_prompt``.
    """
    report = _report(report, stage, "pairs")
    filters = filters or FilterConfig()
    template = get_teacher_template("p2p", Setting(Task.PAIRWISE, referenced), language)
    rows = list(pairs)
    requests = [ChatRequest(row["pair_id"], template.render(row)) for row in rows]
    out = []
    check = _verdict_check("label", None)
    for row, result in _answered(teacher, rows, requests, check, stage, progress, report):
        with _per_item(report, result.id):
            parsed, reason = check_critique(
                result.text or "",
                kind="label",
                language=language,
                reference=None if referenced else row.get("reference"),
                quotable=_quotable(row),
                config=filters,
            )
            gap = filters.max_gap_against_label
            if (
                reason is None
                and gap is not None
                and label_contradicts_scores(parsed.label, row["score_1"], row["score_2"], gap)
            ):
                reason = "label_contradicts_scores"
            if reason:
                report.reject(reason, result.id)
                continue
            out.append(
                {
                    **row,
                    "id": row["pair_id"],
                    "critique": result.text,
                    "explanation": parsed.explanation,
                    "label": parsed.label,
                    "path": path,
                    "teacher_prompt": _prompt_id(template),
                }
            )
    report.items_out = len(out)
    return _dataset(out, (*_PAIR_COLUMNS, "id", "critique", "explanation", "label", "path", "teacher_prompt"))


def referenced_to_reference_free(
    dataset: datasets.Dataset,
    teacher: ChatSource,
    *,
    task: str,
    language: str = "en",
    filters: FilterConfig | None = None,
    path: str | None = None,
    stage: str = "r2rf",
    report: StageReport | None = None,
    progress: bool = True,
) -> datasets.Dataset:
    """Referenced-to-reference-free prompting f_R2RF (CritiqueLLM v2 §3.2.2, Appendix B Tables 9-10): the teacher
    revises a referenced critique so that the reference no longer shows, keeping its content, and self-reflects on
    whether the verdict still holds.

    ``task="pointwise"`` is Path#2 step 1 (Eq. 3: D_point,ref-free from D_point,ref); ``task="pairwise"`` is Path#1
    step 2 (Eq. 2: D_pair,ref-free from D_pair,ref).

    Filters: the format rules, the reference-leak rule (the reference is known here), ``score_shift`` (pointwise:
    the overall score moved by more than ``max_score_shift``) and, when enabled, ``label_flip`` (pairwise).

    Args:
        dataset: referenced critiques with ``id``, ``question``, ``reference``, ``response`` (or ``response_1/2``),
            ``critique`` and ``score`` (or ``label``).
        teacher: the chat source.
        task: ``"pointwise"`` or ``"pairwise"``.
        language: ``"en"`` / ``"zh"``.
        filters: thresholds.
        path: value of the ``path`` column (None keeps the input's).
        stage / report / progress: as in :func:`augment_queries`.

    Returns:
        The rows with the reference-free ``critique``, ``explanation``, ``score`` / ``label`` (and, pointwise,
        ``dimension_scores``), ``teacher_prompt``, and the referenced ones kept as ``critique_referenced`` and
        ``score_referenced`` / ``label_referenced``.
    """
    if task not in ("pointwise", "pairwise"):
        raise ValueError(f"task must be 'pointwise' or 'pairwise', got {task!r}")
    report = _report(report, stage, "responses" if task == "pointwise" else "pairs")
    filters = filters or FilterConfig()
    template = get_teacher_template("r2rf", Setting(Task(task), False), language)
    kind = template.output.kind
    rows = list(dataset)
    requests = [ChatRequest(row["id"], template.render(row)) for row in rows]
    out = []
    check = _verdict_check(kind, template.output.score_range)
    for row, result in _answered(teacher, rows, requests, check, stage, progress, report):
        with _per_item(report, result.id):
            parsed, reason = check_critique(
                result.text or "",
                kind=kind,
                language=language,
                score_range=template.output.score_range or (1, 10),
                reference=row.get("reference"),
                quotable=_quotable(row),
                config=filters,
            )
            if reason is None and kind == "score" and abs(parsed.score - row["score"]) > filters.max_score_shift:
                reason = "score_shift"
            if reason is None and kind == "label" and filters.reject_label_flip and parsed.label != row["label"]:
                reason = "label_flip"
            if reason:
                report.reject(reason, result.id)
                continue
            new = {
                **row,
                "critique": result.text,
                "explanation": parsed.explanation,
                "critique_referenced": row["critique"],
                "teacher_prompt": _prompt_id(template),
            }
            if path is not None:
                new["path"] = path
            if kind == "score":
                new.update(
                    score=parsed.score,
                    score_referenced=row["score"],
                    dimension_scores=json.dumps(parsed.dimensions, ensure_ascii=False) if parsed.dimensions else None,
                )
            else:
                new.update(label=parsed.label, label_referenced=row["label"])
            out.append(new)
    report.items_out = len(out)
    extra = ("score", "score_referenced", "dimension_scores") if kind == "score" else ("label", "label_referenced")
    return _dataset(out, (*dataset.column_names, "critique_referenced", "teacher_prompt", "path", *extra))


def attach_pointwise_critiques(
    pairs: datasets.Dataset,
    pointwise: datasets.Dataset,
    *,
    stage: str = "path2_pairs",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Give each pair the reference-free pointwise critiques of its two responses (the input of Path#2 step 2,
    CritiqueLLM v2 Eq. 4).

    Args:
        pairs: rows from :func:`make_pairs`.
        pointwise: reference-free pointwise critiques (Path#2 step 1) with ``id``, ``critique`` and ``score``.
        stage / report: as in :func:`augment_queries`.

    Returns:
        The pairs whose two responses both have one, with ``critique_1/2`` and ``score_1/2`` replaced; the others
        are rejected (``missing_input``: a critique was rejected or failed in step 1).
    """
    report = _report(report, stage, "pairs")
    index = {row["id"]: row for row in pointwise}
    rows = list(pairs)
    report.items_in = len(rows)
    out = []
    for row in rows:
        a, b = index.get(row["response_id_1"]), index.get(row["response_id_2"])
        if a is None or b is None:
            report.reject("missing_input", row["pair_id"])
            continue
        out.append(
            {
                **row,
                "critique_1": a["critique"],
                "critique_2": b["critique"],
                "score_1": a["score"],
                "score_2": b["score"],
            }
        )
    report.items_out = len(out)
    return _dataset(out, pairs.column_names)


# ------------------------------------------------------------------------------------------------ 9. cross validation
def cross_validate(
    path1: datasets.Dataset,
    path2: datasets.Dataset,
    *,
    stage: str = "cross_validation",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Cross validation of the two paths' reference-free pairwise critiques (CritiqueLLM v2 §3.2.3): "only contains
    the data whose comparison labels from two paths are consistent. In this case, the critiques from both of the two
    paths are added ... The other data with contradictory comparison labels are strictly filtered" (the paper: 7.7%
    filtered).

    Args:
        path1: Path#1 reference-free pairwise critiques (``pair_id``, ``label``, ...).
        path2: Path#2 reference-free pairwise critiques.
        stage / report: as in :func:`augment_queries`.

    Returns:
        Two rows per agreeing pair (Path#1's then Path#2's, ``id`` = ``"<pair_id>/path1"`` / ``"/path2"``), pairs in
        Path#1 order then Path#2-only ones. The report counts pairs: in = pairs seen in either path, out = pairs
        kept, rejected ``label_mismatch`` (contradictory) and ``missing_path`` (only one path reached this step);
        ``notes["filtered_share"]`` = mismatches / pairs present in both paths.

    Raises:
        ValueError: a pair id twice in one path.
    """
    report = _report(report, stage, "pairs")
    first, second = {}, {}
    for rows, index, name in ((path1, first, "path1"), (path2, second, "path2")):
        for row in rows:
            if row["pair_id"] in index:
                raise ValueError(f"cross_validate: pair {row['pair_id']!r} twice in {name}")
            index[row["pair_id"]] = row
    order = list(first) + [p for p in second if p not in first]
    report.items_in = len(order)
    out, both, mismatched = [], 0, 0
    for pair_id in order:
        a, b = first.get(pair_id), second.get(pair_id)
        if a is None or b is None:
            report.reject("missing_path", pair_id)
            continue
        both += 1
        if a["label"] != b["label"]:
            mismatched += 1
            report.reject("label_mismatch", pair_id)
            continue
        out.append({**a, "id": f"{pair_id}/path1", "path": "path1"})
        out.append({**b, "id": f"{pair_id}/path2", "path": "path2"})
    report.items_out = len(out) // 2
    report.notes.update(pairs_in_both_paths=both, filtered_share=(mismatched / both) if both else None)
    columns = dict.fromkeys([*path1.column_names, *path2.column_names, "id", "path"])
    return _dataset(out, columns)


# ------------------------------------------------------------------------------------------------ 10. swap augmentation
_SWAP_FIELDS = (("response_1", "response_2"), ("generator_1", "generator_2"), ("response_id_1", "response_id_2"),
                ("critique_1", "critique_2"), ("score_1", "score_2"))  # fmt: skip


def swap_augment(
    pairwise: datasets.Dataset,
    *,
    stage: str = "swap_augmentation",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Add an order-swapped copy of every pairwise critique (CritiqueLLM v2 §3.3, following Auto-J, Li et al. 2024).

    The copy swaps ``response_1`` / ``response_2`` (and generators, ids, input critiques and scores), maps the label
    with :func:`~hf_critic.labels.swap_label` and exchanges the names in the critique with :func:`swap_critique`;
    it gets ``id + "/swap"`` and ``swapped=True``. A copy whose critique does not parse back to the swapped label is
    dropped (``swap_unparseable``; the original stays).

    Args:
        pairwise: rows with ``id``, ``response_1/2``, ``critique``, ``label``.
        stage / report: as in :func:`augment_queries`.

    Returns:
        Originals (``swapped=False``) each followed by its copy. The report counts items in, rows out (originals and
        copies; ``conserved`` is False) and rejected copies.
    """
    report = _report(report, stage, "rows", conserved=False)
    rows = list(pairwise)
    report.items_in = len(rows)
    out = []
    for row in rows:
        out.append({**row, "swapped": False})
        critique = swap_critique(row["critique"])
        expected = swap_label(row["label"])
        parsed = parse_label(critique)
        if parsed.status is not ParseStatus.OK or parsed.label != expected:
            report.reject("swap_unparseable", f"{row['id']}/swap")
            continue
        copy = {**row, "id": f"{row['id']}/swap", "swapped": True, "critique": critique, "label": expected}
        copy["explanation"] = parsed.explanation
        if "label_referenced" in row and row.get("label_referenced") is not None:
            copy["label_referenced"] = swap_label(row["label_referenced"])
        if row.get("critique_referenced"):
            copy["critique_referenced"] = swap_critique(row["critique_referenced"])
        for a, b in _SWAP_FIELDS:
            if a in row:
                copy[a], copy[b] = row[b], row[a]
        out.append(copy)
    report.items_out = len(out)
    return _dataset(out, (*pairwise.column_names, "swapped"))


# ------------------------------------------------------------------------------------------------ v1 dialogue
def dialogue_revision(
    graded: datasets.Dataset,
    teacher: ChatSource,
    *,
    language: str = "en",
    filters: FilterConfig | None = None,
    stage: str = "v1_turn2_reference_free",
    report: StageReport | None = None,
    progress: bool = True,
) -> datasets.Dataset:
    """The second turn of CritiqueLLM v1's dialogue-based prompting (§3.2.3, Table 6): the teacher revises its own
    referenced critique (first turn: :func:`grade_pointwise_referenced` with ``family="critiquellm_v1"``) into a
    reference-free one, "the difference between referenced and reference-free evaluation scores is bounded by a
    threshold, which is set to be 1".

    The conversation sent is ``[first-turn prompt, the teacher's critique, revision prompt]``.

    Args:
        graded: first-turn rows (``id``, ``question``, ``reference``, ``response``, ``critique``, ``score``).
        teacher: the chat source.
        language: ``"en"`` / ``"zh"``.
        filters: thresholds (``max_score_shift`` is the bound, default 1).
        stage / report / progress: as in :func:`augment_queries`.

    Returns:
        Reference-free rows (as :func:`referenced_to_reference_free` returns for ``task="pointwise"``) with
        ``path="dialogue"``; rejections include ``score_shift`` and ``reference_leak``.
    """
    report = _report(report, stage, "responses")
    filters = filters or FilterConfig()
    first = get_template("critiquellm_v1", POINTWISE_REFERENCED, language)
    revision = get_instruction_prompt("v1_revision", language)
    rows = list(graded)
    requests = [
        ChatRequest(
            row["id"], [*first.render(row), {"role": "assistant", "content": row["critique"]}, *revision.render()]
        )
        for row in rows
    ]
    out = []
    check = _verdict_check("score", first.output.score_range)
    for row, result in _answered(teacher, rows, requests, check, stage, progress, report):
        with _per_item(report, result.id):
            parsed, reason = check_critique(
                result.text or "",
                kind="score",
                language=language,
                score_range=first.output.score_range,
                reference=row.get("reference"),
                quotable=_quotable(row),
                config=filters,
            )
            if reason is None and abs(parsed.score - row["score"]) > filters.max_score_shift:
                reason = "score_shift"
            if reason:
                report.reject(reason, result.id)
                continue
            out.append(
                {
                    **row,
                    "critique": result.text,
                    "explanation": parsed.explanation,
                    "critique_referenced": row["critique"],
                    "score": parsed.score,
                    "score_referenced": row["score"],
                    "dimension_scores": None,
                    "path": "dialogue",
                    "teacher_prompt": f"{_prompt_id(first)}+{revision.name}@{revision.version}",
                }
            )
    report.items_out = len(out)
    return _dataset(out, (*graded.column_names, "critique_referenced", "score_referenced", "path"))


# ------------------------------------------------------------------------------------------------ 11. output
def _features() -> dict[str, datasets.Features]:
    string, int32, float32 = datasets.Value("string"), datasets.Value("int32"), datasets.Value("float32")
    message = {"role": string, "content": string}
    messages = datasets.List(message) if hasattr(datasets, "List") else [message]
    common = {
        "id": string,
        "query_id": string,
        "category": string,
        "difficulty": int32,
        "language": string,
        "question": string,
    }
    tail = {
        "critique": string,
        "explanation": string,
        "path": string,
        "swapped": datasets.Value("bool"),
        "teacher": string,
        "teacher_prompt": string,
        "messages": messages,
    }
    out = {}
    for setting in SETTINGS:
        cols = dict(common)
        if setting.referenced:
            cols["reference"] = string
        if setting.task is Task.POINTWISE:
            cols.update(generator=string, response=string, score=float32, dimension_scores=string)
        else:
            cols.update(
                generator_1=string,
                generator_2=string,
                response_1=string,
                response_2=string,
                label=int32,
                score_1=float32,
                score_2=float32,
            )
        out[setting.name] = datasets.Features({**cols, **tail})
    return out


# Columns and types of the four output configs (pointwise / pairwise x referenced / reference-free).
OUTPUT_FEATURES: dict[str, datasets.Features] = _features()


def to_sft_dataset(
    rows: datasets.Dataset,
    setting: Setting | str,
    *,
    family: str = "critiquellm_v2",
    language: str = "en",
    teacher: str = "",
) -> datasets.Dataset:
    """The output rows of one setting, with an SFT-ready ``messages`` column (CritiqueLLM v2 §3.3).

    ``messages`` is the critic's inference prompt for that setting, ``get_template(family, setting,
    language).render(row)`` (exactly what :class:`hf_critic.critic.Critic` sends), followed by
    ``{"role": "assistant", "content": critique}``. Columns are those of :data:`OUTPUT_FEATURES`; absent ones are
    None.

    Args:
        rows: critiques of ``setting`` from the stages above.
        setting: the setting (or its name).
        family: the critic template family (``critiquellm_v2``, or ``critiquellm_v1`` for v1 data).
        language: ``"en"`` / ``"zh"``.
        teacher: the teacher model's name, stored per row.

    Returns:
        A Dataset with exactly :data:`OUTPUT_FEATURES` ``[setting.name]``.
    """
    setting = Setting.from_name(setting) if isinstance(setting, str) else setting
    features = OUTPUT_FEATURES[setting.name]
    template = get_template(family, setting, language) if len(rows) else None  # v1 has no pairwise templates
    out = []
    for row in rows:
        record = {name: row.get(name) for name in features}
        record.update(language=language, teacher=teacher, swapped=bool(row.get("swapped", False)))
        record["path"] = row.get("path") or "direct"
        record["messages"] = [*template.render(row), {"role": "assistant", "content": row["critique"]}]
        out.append(record)
    if not out:
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    return datasets.Dataset.from_list(out, features=features)


def label_name(label: int | None) -> str | None:
    """``"response_1"`` / ``"response_2"`` / ``"tie"`` for 0 / 1 / 2 (None for None)."""
    return None if label is None else LABEL_NAMES[label]
