"""The teacher's critique stages of Eval-Instruct (CritiqueLLM v2 §3.2.2; v1 §3.2.3): referenced pointwise grading,
multi-path prompting (f_P2P, f_R2RF) and v1's dialogue revision, all through one critique loop."""

from __future__ import annotations

import json

import datasets

from ...backends.chat import ChatRequest, ChatSource
from ...core.errors import BadInputError
from ...core.schema import (
    Setting,
    Task,
)
from ...prompts import get_instruction_prompt, get_teacher_template, get_template
from ..filters import FilterConfig, label_contradicts_scores
from ..stage_report import StageReport
from ._common import (
    PAIR_COLUMNS,
    POINTWISE_REFERENCED,
    _dataset,
    _prompt_id,
    _report,
    critique_rows,
)


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

    def build(row: dict, parsed, text: str) -> dict:
        return {
            **row,
            "id": row["response_id"],
            "critique": text,
            "explanation": parsed.explanation,
            "score": parsed.score,
            "dimension_scores": _dimensions(parsed),
            "teacher_prompt": _prompt_id(template),
        }

    out = critique_rows(
        teacher,
        rows,
        requests,
        build,
        output=template.output,
        language=language,
        filters=filters,
        stage=stage,
        report=report,
        progress=progress,
    )
    return _dataset(
        out,
        (*responses.column_names, "id", "critique", "explanation", "score", "dimension_scores", "teacher_prompt"),
    )


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
    gap = filters.max_gap_against_label

    def rule(row: dict, parsed) -> str | None:
        against = gap is not None and label_contradicts_scores(parsed.label, row["score_1"], row["score_2"], gap)
        return "label_contradicts_scores" if against else None

    def build(row: dict, parsed, text: str) -> dict:
        return {
            **row,
            "id": row["pair_id"],
            "critique": text,
            "explanation": parsed.explanation,
            "label": parsed.label,
            "path": path,
            "teacher_prompt": _prompt_id(template),
        }

    out = critique_rows(
        teacher,
        rows,
        requests,
        build,
        output=template.output,
        language=language,
        filters=filters,
        stage=stage,
        report=report,
        progress=progress,
        reference=None if referenced else (lambda row: row.get("reference")),
        quote=True,
        rule=rule,
    )
    return _dataset(out, (*PAIR_COLUMNS, "id", "critique", "explanation", "label", "path", "teacher_prompt"))


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
        raise BadInputError(f"task must be 'pointwise' or 'pairwise', got {task!r}")
    report = _report(report, stage, "responses" if task == "pointwise" else "pairs")
    filters = filters or FilterConfig()
    template = get_teacher_template("r2rf", Setting(Task(task), False), language)
    kind = template.output.kind
    rows = list(dataset)
    requests = [ChatRequest(row["id"], template.render(row)) for row in rows]

    def rule(row: dict, parsed) -> str | None:
        if kind == "score" and abs(parsed.score - row["score"]) > filters.max_score_shift:
            return "score_shift"
        if kind == "label" and filters.reject_label_flip and parsed.label != row["label"]:
            return "label_flip"
        return None

    def build(row: dict, parsed, text: str) -> dict:
        new = {
            **row,
            "critique": text,
            "explanation": parsed.explanation,
            "critique_referenced": row["critique"],
            "teacher_prompt": _prompt_id(template),
        }
        if path is not None:
            new["path"] = path
        if kind == "score":
            new.update(score=parsed.score, score_referenced=row["score"], dimension_scores=_dimensions(parsed))
        else:
            new.update(label=parsed.label, label_referenced=row["label"])
        return new

    out = critique_rows(
        teacher,
        rows,
        requests,
        build,
        output=template.output,
        language=language,
        filters=filters,
        stage=stage,
        report=report,
        progress=progress,
        reference=lambda row: row.get("reference"),
        quote=True,
        rule=rule,
    )
    extra = ("score", "score_referenced", "dimension_scores") if kind == "score" else ("label", "label_referenced")
    return _dataset(out, (*dataset.column_names, "critique_referenced", "teacher_prompt", "path", *extra))


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

    def rule(row: dict, parsed) -> str | None:
        return "score_shift" if abs(parsed.score - row["score"]) > filters.max_score_shift else None

    def build(row: dict, parsed, text: str) -> dict:
        return {
            **row,
            "critique": text,
            "explanation": parsed.explanation,
            "critique_referenced": row["critique"],
            "score": parsed.score,
            "score_referenced": row["score"],
            "dimension_scores": None,
            "path": "dialogue",
            "teacher_prompt": f"{_prompt_id(first)}+{revision.name}@{revision.version}",
        }

    out = critique_rows(
        teacher,
        rows,
        requests,
        build,
        output=first.output,
        language=language,
        filters=filters,
        stage=stage,
        report=report,
        progress=progress,
        reference=lambda row: row.get("reference"),
        quote=True,
        rule=rule,
    )
    return _dataset(out, (*graded.column_names, "critique_referenced", "score_referenced", "path"))


def _dimensions(parsed) -> str | None:
    """A critique's per-dimension scores as a JSON object (None when it has none)."""
    return json.dumps(parsed.dimensions, ensure_ascii=False) if parsed.dimensions else None
