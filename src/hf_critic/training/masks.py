"""Chat templates and loss masks: what the critic learns (the critique tokens only), and ``--dry-run``'s report.

With ``assistant_only_loss`` the masks come from the chat template's ``{% generation %}`` markers (the TRL path; fast
tokenizers only). :func:`compute_loss_mask` reproduces the exact masks TRL's ``SFTTrainer`` builds, so ``--dry-run``
shows what the model learns; for slow (remote-code) tokenizers such as ChatGLM3's,
:func:`~hf_critic.training.messages.to_prompt_completion` switches to TRL's prompt / completion format with
``completion_only_loss``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets

from ..core.control_tokens import control_tokens, encode_chat, encode_with_spans, mark
from ..core.errors import BadInputError
from .messages import MESSAGES

__all__ = [
    "LOSS_MODES",
    "LossMask",
    "compute_loss_mask",
    "dry_run_report",
    "filter_by_length",
    "format_loss_mask",
    "has_generation_markers",
    "loss_mode",
    "set_chat_template",
]


def set_chat_template(tokenizer, path: str | os.PathLike) -> str:
    """Replace the tokenizer's chat template with a Jinja file (recipes supply ones with ``{% generation %}`` markers).

    Args:
        tokenizer: any ``transformers`` tokenizer.
        path: a ``.jinja`` / ``.j2`` file.

    Returns:
        The template text (also set as ``tokenizer.chat_template``).

    Raises:
        FileNotFoundError: no such file.
    """
    text = Path(path).read_text(encoding="utf-8")
    tokenizer.chat_template = text
    return text


def has_generation_markers(chat_template: str | None) -> bool:
    """True when the template marks assistant output with ``{% generation %}`` (whitespace-trim variants included)."""
    from trl.chat_template_utils import has_generation_markers as _trl_has_markers

    return bool(chat_template) and _trl_has_markers(chat_template)


@dataclass(frozen=True)
class LossMask:
    """Token ids of one training example and which of them carry a label.

    Attributes:
        input_ids: shape ``(n_tokens,)``.
        mask: shape ``(n_tokens,)``, 1 where the token is a training target (its label is the token id), 0 where the
            label is -100 (no loss).
    """

    input_ids: list[int]
    mask: list[int]

    @property
    def n_tokens(self) -> int:
        """Sequence length."""
        return len(self.input_ids)

    @property
    def n_trained(self) -> int:
        """Tokens that carry a label."""
        return sum(self.mask)

    @property
    def labels(self) -> list[int]:
        """Labels as the Trainer sees them: the token id where trained, -100 elsewhere."""
        return [t if m else -100 for t, m in zip(self.input_ids, self.mask, strict=True)]

    def spans(self) -> list[tuple[int, int, bool]]:
        """Maximal runs of equal mask value: ``[(start, end, trained), ...]`` with ``end`` exclusive."""
        out, start = [], 0
        for i in range(1, len(self.mask) + 1):
            if i == len(self.mask) or self.mask[i] != self.mask[start]:
                out.append((start, i, bool(self.mask[start])))
                start = i
        return out

    def trained_text(self, tokenizer) -> str:
        """The trained tokens decoded (special tokens kept), spans joined as they appear."""
        return "".join(tokenizer.decode(self.input_ids[a:b]) for a, b, on in self.spans() if on)


#: Loss modes: ``assistant`` = TRL ``assistant_only_loss`` (generation markers), ``completion`` = TRL
#: ``completion_only_loss`` on prompt / completion data (the last turn), ``all`` = every token.
LOSS_MODES = ("assistant", "completion", "all")


def loss_mode(training_args) -> str:
    """The :data:`LOSS_MODES` entry a TRL ``SFTConfig`` trains with (on conversational ``messages`` data)."""
    if getattr(training_args, "assistant_only_loss", False):
        return "assistant"
    if getattr(training_args, "completion_only_loss", None):
        return "completion"
    return "all"


def compute_loss_mask(tokenizer, messages: Sequence[Mapping[str, str]], mode: str = "assistant") -> LossMask:
    """The token ids and loss mask of one conversation, as TRL's ``SFTTrainer`` builds them.

    Args:
        tokenizer: with the chat template the model is trained with.
        messages: the conversation; the last turn is the assistant's critique.
        mode: ``"assistant"``: ``apply_chat_template(..., return_assistant_tokens_mask=True)``, the call
            ``SFTTrainer`` makes with ``assistant_only_loss=True``: exactly the text inside the template's
            ``{% generation %}`` blocks is trained (a template without markers is replaced, as TRL does, by TRL's
            training version of it when TRL knows it). ``"completion"``: the conversation split into prompt (all but the
            last turn, rendered with the generation prompt) and completion; tokens after their common prefix are
            trained, as with ``completion_only_loss=True`` (works with slow tokenizers). ``"all"``: every token.

    Returns:
        A :class:`LossMask`.

    Raises:
        ValueError: an unknown mode; ``"assistant"`` with a template lacking generation markers or with a slow
            tokenizer (use ``"completion"``); a conversation whose masks select no token.
    """
    if mode not in LOSS_MODES:
        raise BadInputError(f"loss mode must be one of {LOSS_MODES}, got {mode!r}")
    messages = [dict(m) for m in messages]
    if mode == "assistant":
        chat_template = None
        if not has_generation_markers(tokenizer.chat_template):
            # As SFTTrainer does: swap in TRL's training version of a known template (Qwen2.5, Llama 3, ...).
            from trl.chat_template_utils import get_training_chat_template

            try:
                chat_template = get_training_chat_template(tokenizer)
            except (ValueError, TypeError) as err:
                raise BadInputError(
                    "the chat template has no {% generation %} markers and TRL has no training version of it, so "
                    "assistant_only_loss cannot find the critique; supply one (SFTConfig.chat_template_path) or use "
                    f"completion_only_loss ({err})"
                ) from err
        if not getattr(tokenizer, "is_fast", False):
            raise BadInputError("assistant_only_loss needs a fast tokenizer (char offsets); use completion_only_loss")
        from transformers.utils.chat_template_utils import render_jinja_template

        # apply_chat_template's assistant mask, with the data's control-token strings kept as text (transformers
        # refuses sanitize_control_tokens with return_assistant_tokens_mask): the generation blocks' character spans
        # in the rendered text, mapped onto the tokens
        rendered, blocks = render_jinja_template(
            conversations=[mark(messages, control_tokens(tokenizer))],
            chat_template=chat_template or tokenizer.chat_template,
            return_assistant_tokens_mask=True,
            **tokenizer.special_tokens_map,
        )
        mask = LossMask(*encode_with_spans(tokenizer, rendered[0], blocks[0]))
    elif mode == "completion":
        from trl.data_utils import common_prefix_length

        prompt_ids = encode_chat(tokenizer, messages[:-1], add_generation_prompt=True)
        full_ids = encode_chat(tokenizer, messages)
        cut = common_prefix_length(prompt_ids, full_ids)
        mask = LossMask(full_ids, [0] * cut + [1] * (len(full_ids) - cut))
    else:
        ids = encode_chat(tokenizer, messages)
        mask = LossMask(ids, [1] * len(ids))
    if not mask.n_trained:
        raise BadInputError(
            "no token of the conversation carries a label; check the chat template's generation markers"
        )
    return mask


def tokenize_for_trl(dataset, tokenizer, mode: str, training_args=None):
    """``messages`` rows as the token ids TRL's ``SFTTrainer`` trains on, built here so that the judged text's
    control-token strings stay text (TRL's own tokenisation renders the template with the tokenizer's defaults).

    A dataset with ``input_ids`` is taken by TRL as processed, and its ``labels`` (``-100`` off the loss mask of
    ``mode``) are used as they are. TRL refuses ``assistant_only_loss=True`` on processed data, so it is turned off in
    ``training_args`` (the labels carry the mask).

    Args:
        dataset: a ``datasets.Dataset`` or ``DatasetDict`` of rows with ``messages``.
        tokenizer: with the training chat template.
        mode: a :data:`LOSS_MODES` entry (:func:`loss_mode` of the ``SFTConfig``).
        training_args: the ``SFTConfig`` to set ``assistant_only_loss=False`` on, or None.

    Returns:
        The same kind of dataset with ``input_ids`` and ``labels`` only.
    """
    if isinstance(dataset, datasets.DatasetDict):
        return datasets.DatasetDict(
            {k: tokenize_for_trl(v, tokenizer, mode, training_args) for k, v in dataset.items()}
        )
    if training_args is not None:
        training_args.assistant_only_loss = False

    def encode(messages):
        mask = compute_loss_mask(tokenizer, messages, mode)
        labels = [i if m else -100 for i, m in zip(mask.input_ids, mask.mask, strict=True)]
        return {"input_ids": mask.input_ids, "labels": labels}

    return dataset.map(encode, input_columns=MESSAGES, remove_columns=dataset.column_names)


def filter_by_length(tokenizer, max_length: int | None) -> Callable[[dict], bool] | None:
    """A row predicate for :func:`load_mixture`: keep conversations of at most ``max_length`` tokens.

    Critiques put the verdict last, so truncating an over-long example (TRL's ``keep_start``) would train the critic
    on critiques without a verdict, and ``keep_end`` would cut the instructions; the recipe drops such examples.

    Args:
        tokenizer: with the training chat template.
        max_length: the limit in tokens (the whole chat-templated conversation), or None for no limit.

    Returns:
        None when ``max_length`` is None, else ``keep(row) -> bool`` reading ``row["messages"]``.
    """
    if max_length is None:
        return None

    def keep(row: dict) -> bool:
        return compute_loss_mask(tokenizer, row[MESSAGES], "all").n_tokens <= max_length

    return keep


def format_loss_mask(tokenizer, mask: LossMask, *, color: bool = False) -> str:
    """Render a :class:`LossMask` for humans: the decoded text, trained spans marked.

    Trained spans are wrapped in ``[[LOSS>>`` ... ``<<LOSS]]`` (or shown in green with ``color=True``); the rest has
    no label.

    Returns:
        The whole sequence as text (special tokens kept).
    """
    out = []
    for start, end, trained in mask.spans():
        text = tokenizer.decode(mask.input_ids[start:end])
        if trained:
            text = f"\x1b[32m{text}\x1b[0m" if color else f"[[LOSS>>{text}<<LOSS]]"
        out.append(text)
    return "".join(out)


def dry_run_report(
    dataset: datasets.Dataset,
    tokenizer,
    *,
    mode: str = "assistant",
    num_examples: int = 3,
    max_length: int | None = None,
    color: bool = False,
) -> str:
    """What ``recipes/sft.py --dry-run`` prints: a few rendered training examples with their loss masks.

    Args:
        dataset: rows with ``messages``.
        tokenizer: with the training chat template.
        mode: see :func:`compute_loss_mask`.
        num_examples: how many rows (the first ones).
        max_length: flags examples longer than this.
        color: ANSI colours instead of ``[[LOSS>> <<LOSS]]`` markers.

    Returns:
        The report text: per example the token counts, then the marked text.

    Raises:
        ValueError: see :func:`compute_loss_mask`.
    """
    lines = [f"loss mode: {mode}; trained tokens shown as " + ("green text" if color else "[[LOSS>> ... <<LOSS]]")]
    for i in range(min(num_examples, len(dataset))):
        mask = compute_loss_mask(tokenizer, dataset[i][MESSAGES], mode)
        too_long = f" (longer than max_length {max_length})" if max_length and mask.n_tokens > max_length else ""
        lines.append(f"\n===== example {i}: {mask.n_tokens} tokens, {mask.n_trained} with labels{too_long} =====")
        lines.append(format_loss_mask(tokenizer, mask, color=color))
    return "\n".join(lines)
