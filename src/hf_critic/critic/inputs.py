"""The critic's inputs: records rendered into chat messages with a template (the responses swapped for the second
order of a pairwise comparison, a rubric given to every row), each fitted to the model's context window under the
truncation policy (:data:`TRUNCATE_POLICIES`: cut the responses from the middle, skip the row, or raise
:class:`ContextLengthError`)."""

from __future__ import annotations

import logging

import datasets

from ..backends.base import Backend
from ..core import schema
from ..core.errors import BadInputError
from ..io import RecordError
from ..prompts import PromptTemplate, TemplateFieldError

__all__ = ["TRUNCATE_POLICIES", "ContextLengthError", "fit_prompt", "render_conversations"]

logger = logging.getLogger(__name__)

#: What to do with an input longer than the context: cut the response(s) from the middle, leave the row unjudged
#: (status skipped), or raise :class:`ContextLengthError`.
TRUNCATE_POLICIES = ("middle", "skip", "error")


class ContextLengthError(BadInputError):
    """An input does not fit the model's context window and the truncation policy is ``error``."""


def render_conversations(
    backend: Backend,
    template: PromptTemplate,
    dataset: datasets.Dataset,
    source: str,
    *,
    swap: bool,
    rubric: str | None,
    truncate: str,
    max_new_tokens: int,
) -> tuple[list, list[bool]]:
    """Chat messages per row (None for rows skipped as too long) and per-row truncation flags.

    Args:
        backend: the engine whose context window and tokenizer the prompts must fit.
        template: the setting's template.
        dataset: the records.
        source: name of the data in error messages.
        swap: render every pair with its responses in swapped order.
        rubric: the rubric shown to every row (it replaces a ``rubric`` column), or None.
        truncate: one of :data:`TRUNCATE_POLICIES`.
        max_new_tokens: the generation budget kept free in the context.

    Raises:
        RecordError: a row the template cannot render (names the row).
        ContextLengthError: a prompt too long, with ``truncate="error"`` or even with empty responses.
    """
    conversations, truncated = [], []
    budget = backend.context_length and backend.context_length - max_new_tokens
    if rubric is not None and "rubric" in dataset.column_names and not swap:
        logger.warning("%s: the given rubric replaces the data's 'rubric' column", source)
    for row, record in enumerate(dataset):
        if rubric is not None:
            record = {**record, "rubric": rubric}
        if swap:
            record = {
                **record,
                schema.RESPONSE_1: record[schema.RESPONSE_2],
                schema.RESPONSE_2: record[schema.RESPONSE_1],
            }
        try:
            messages = template.render(record)
        except TemplateFieldError as err:
            raise RecordError(f"{source}: row {row}: {err}") from err
        cut = False
        if budget:
            messages, cut = fit_prompt(backend, template, record, messages, budget, truncate, f"{source}: row {row}")
        conversations.append(messages)
        truncated.append(cut)
    return conversations, truncated


def fit_prompt(
    backend: Backend, template: PromptTemplate, record: dict, messages: list, budget: int, truncate: str, where: str
) -> tuple[list | None, bool]:
    """One prompt made to fit ``budget`` tokens according to the truncation policy: ``(messages or None when
    skipped, whether it was cut)``.

    Raises:
        ContextLengthError: over the budget with ``truncate="error"``, or too long even with empty responses.
    """
    excess = backend.prompt_tokens(messages) - budget
    if excess <= 0:
        return messages, False
    if truncate == "error":
        raise ContextLengthError(f"{where}: prompt is {excess} tokens over the context budget of {budget}")
    if truncate == "skip":
        return None, True
    # Cut the response(s) from the middle; pairwise shares the cut in proportion to each response's length.
    names = [f for f in (schema.RESPONSE, schema.RESPONSE_1, schema.RESPONSE_2) if f in template.setting.fields]
    lengths = {f: backend.count_tokens(record[f]) for f in names}
    total = sum(lengths.values())
    if total <= excess:
        raise ContextLengthError(f"{where}: the prompt is too long even with empty response(s)")
    record = dict(record)
    for f in names:
        record[f] = backend.truncate_middle(record[f], -(-excess * lengths[f] // total) + 8)
    return template.render(record), True
