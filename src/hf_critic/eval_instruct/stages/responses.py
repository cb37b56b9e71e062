"""Stages 4-5 of Eval-Instruct (CritiqueLLM v2 §3.2.1): responses from several generators, pseudo references."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import datasets

from ...backends.chat import ChatRequest, ChatSource
from ..stage_report import StageReport
from ._common import _dataset, _report


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
