"""Structured rows -> SFT conversations with the critic's own templates (CritiqueLLM v1 §3.3, v2 §3.3).

v1 §3.3 / v2 §3.3: the training prompts are the ones used at inference. Rows carry SFT-ready ``messages`` (the critic
template's system / user turns, then the assistant's critique); rows with only structured fields are rendered here with
the same :mod:`hf_critic.prompts` templates the :class:`~hf_critic.critic.Critic` uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import datasets

from ..core import schema
from ..core.errors import BadInputError
from ..formats import DEFAULT_FAMILY
from ..prompts import PromptTemplate, resolve_template

__all__ = ["MESSAGES", "critique_messages", "ensure_messages", "to_prompt_completion"]

#: The SFT column: chat messages whose last turn is the assistant's critique.
MESSAGES = "messages"
_MESSAGE_FEATURE = [{"role": datasets.Value("string"), "content": datasets.Value("string")}]


def critique_messages(record: Mapping[str, Any], template: PromptTemplate, critique: str) -> list[dict[str, str]]:
    """The SFT conversation for one record: the critic prompt exactly as at inference, then the critique.

    Args:
        record: the setting's fields (``question``, [``reference``], ``response`` or ``response_1`` /
            ``response_2``; optional template fields such as ``dimensions``).
        template: the critic template (:func:`hf_critic.prompts.get_template`).
        critique: the teacher's critique (explanation and verdict in the template's output format).

    Returns:
        ``template.render(record)`` followed by ``{"role": "assistant", "content": critique}``.

    Raises:
        hf_critic.prompts.TemplateFieldError: a field the template needs is missing or blank.
        ValueError: an empty critique.
    """
    if not isinstance(critique, str) or not critique.strip():
        raise BadInputError("the critique (the training target) is empty")
    return [*template.render(record), {"role": "assistant", "content": critique}]


def _setting_of(record: Mapping[str, Any]) -> schema.Setting:
    name = record.get("setting") or record.get("config")
    if name:
        return schema.Setting.from_name(name)
    pairwise = record.get(schema.RESPONSE_1) is not None
    referenced = isinstance(record.get(schema.REFERENCE), str) and bool(record[schema.REFERENCE].strip())
    return schema.Setting(schema.Task.PAIRWISE if pairwise else schema.Task.POINTWISE, referenced)


def ensure_messages(
    dataset: datasets.Dataset,
    *,
    template: str = DEFAULT_FAMILY,
    language: str = "en",
    critique_column: str = "critique",
    source: str = "data",
) -> datasets.Dataset:
    """Make sure every row has an SFT ``messages`` column ending in the assistant's critique.

    Rows that already carry ``messages`` (Eval-Instruct output, :mod:`hf_critic.judgments`) are checked and kept.
    Otherwise each row is rendered with :func:`critique_messages`; its setting comes from a ``setting`` (or
    ``config``) column, else from its fields (``response_1`` present = pairwise; a non-empty ``reference`` =
    referenced).

    Args:
        dataset: the rows.
        template: template family (``critiquellm_v2``, ``critiquellm_v1``, ``mtbench``), built-in name or YAML path,
            resolved per setting as :class:`~hf_critic.critic.Critic` does.
        language: critique language for family resolution.
        critique_column: the column with the teacher's critique, for rows without ``messages``.
        source: data name used in error messages.

    Returns:
        The dataset with a ``messages`` column.

    Raises:
        ValueError: naming the row: a conversation that is empty or does not end in a non-empty assistant turn,
            no ``messages`` and no critique column, or a row the template cannot render.
    """
    if MESSAGES in dataset.column_names:
        for row, messages in enumerate(dataset[MESSAGES]):
            if (
                not messages
                or messages[-1].get("role") != "assistant"
                or not str(messages[-1].get("content") or "").strip()
            ):
                raise BadInputError(
                    f"{source}: row {row}: 'messages' must end with a non-empty assistant turn (the critique)"
                )
        return dataset
    if critique_column not in dataset.column_names:
        raise BadInputError(
            f"{source}: no 'messages' column and no {critique_column!r} column to render one from; "
            f"the data has {dataset.column_names}"
        )

    def render(record, index):
        try:
            setting = _setting_of(record)
            return {
                MESSAGES: critique_messages(
                    record, resolve_template(template, setting, language), record[critique_column]
                )
            }
        except ValueError as err:
            raise BadInputError(f"{source}: row {index}: {err}") from err

    return dataset.map(render, with_indices=True, desc=f"rendering {source} with {template}")


def to_prompt_completion(dataset: datasets.Dataset) -> datasets.Dataset:
    """Split ``messages`` into conversational ``prompt`` (all but the last turn) and ``completion`` (the critique).

    TRL then trains on the completion only with ``completion_only_loss=True``, which needs neither generation markers
    nor a fast tokenizer (the route for ChatGLM3-6B's remote-code tokenizer).

    Returns:
        The dataset with ``prompt`` and ``completion`` columns instead of ``messages``.
    """
    return dataset.map(
        lambda m: {"prompt": m[:-1], "completion": m[-1:]}, input_columns=MESSAGES, remove_columns=[MESSAGES]
    )
