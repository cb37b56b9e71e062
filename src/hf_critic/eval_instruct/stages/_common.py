"""What every Eval-Instruct stage shares: its report, the teacher's answers, the one critique loop."""

from __future__ import annotations

import contextlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import datasets

from ...backends.chat import ChatRequest
from ...core.schema import (
    ParseStatus,
    Setting,
    Task,
)
from ...parsing import ParsedCritique, parse
from ...prompts import OutputSpec
from ..filters import FilterConfig, check_critique
from ..stage_report import StageReport

POINTWISE_REFERENCED = Setting(Task.POINTWISE, True)

#: The columns of a pair row (:func:`~hf_critic.eval_instruct.stages.make_pairs`).
PAIR_COLUMNS = (
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


def _prompt_id(template) -> str:
    return f"{template.name}@{template.version}"


def _quotable(row: Mapping[str, Any]) -> list[str]:
    return [row[k] for k in ("question", "response", "response_1", "response_2") if isinstance(row.get(k), str)]


def critique_rows(
    teacher,
    rows: list[dict],
    requests: list[ChatRequest],
    build: Callable[[dict, ParsedCritique, str], dict],
    *,
    output: OutputSpec,
    language: str,
    filters: FilterConfig | None,
    stage: str,
    report: StageReport,
    progress: bool,
    reference: Callable[[dict], str | None] | None = None,
    quote: bool = False,
    rule: Callable[[dict, ParsedCritique], str | None] | None = None,
) -> list[dict]:
    """The loop of every teacher critique stage: ask, parse and filter each answer, keep or reject it.

    One request per row goes to the teacher, which asks again for answers whose verdict does not parse
    (:func:`_verdict_check`); each answer then passes the rule-based filters
    (:func:`~hf_critic.eval_instruct.filters.check_critique`: format, language, reference leak when ``reference``
    gives the row's reference, quoting when ``quote``) and the stage's own ``rule`` (e.g. ``score_shift``). A
    failed request, a rejected answer (by reason) and an answer that cannot be read are booked in ``report`` under
    the request's id, never dropped silently.

    Args:
        teacher: the chat source.
        rows / requests: the stage's input rows and one request per row, in the same order.
        build: ``(row, parsed critique, answer text) -> output row`` for each kept answer.
        output: the verdict format of the prompt (its kind, ``"score"`` or ``"label"``, and score range).
        language / filters: as :func:`~hf_critic.eval_instruct.filters.check_critique` takes them.
        stage / report / progress: the stage's name, its report (``items_in`` / ``items_out`` are set), progress bar.
        reference / quote / rule: see above.

    Returns:
        The output rows of the kept answers, in row order.
    """
    score_range = output.score_range or (1, 10)
    out = []
    for row, result in _answered(
        teacher, rows, requests, _verdict_check(output.kind, score_range), stage, progress, report
    ):
        with _per_item(report, result.id):
            parsed, reason = check_critique(
                result.text or "",
                kind=output.kind,
                language=language,
                score_range=score_range,
                reference=reference(row) if reference else None,
                quotable=_quotable(row) if quote else (),
                config=filters,
            )
            if reason is None and rule is not None:
                reason = rule(row, parsed)
            if reason:
                report.reject(reason, result.id)
                continue
            out.append(build(row, parsed, result.text))
    report.items_out = len(out)
    return out
