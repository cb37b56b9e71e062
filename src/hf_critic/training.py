"""Supervised fine-tuning of a critic: data mixing, rendering, loss masks, validation Pearson, model card.

The library half of ``recipes/sft.py`` (the script keeps to the alignment-handbook / open-r1 layout and calls these).
CritiqueLLM fine-tunes a chat model on teacher critiques with the loss on the critique only:

* v2 §3.3: one model for all four settings (pointwise grading / pairwise comparison x referenced /
  reference-free), trained on the union of the Eval-Instruct configs; :class:`DatasetMixture` mixes configs with
  per-config weights (weight 1 everywhere reproduces the paper's plain union).
* v1 §3.3: one model per setting (referenced and reference-free trained separately); a mixture with one config.
* v1 §3.3 / v2 §3.3: the training prompts are the ones used at inference. Rows carry SFT-ready ``messages`` (the
  critic template's system / user turns, then the assistant's critique); rows with only structured fields are
  rendered here with the same :mod:`hf_critic.prompts` templates the :class:`~hf_critic.critic.Critic` uses.
* v1 §4.3: "the selection criterion of the best checkpoint is Pearson correlation on the validation set";
  :class:`CritiquePearsonCallback` generates critiques for a held-out pointwise set at each evaluation, scores them
  with the ``critique_correlation`` metric and hands the Pearson to the Trainer as the best-model metric.
* v2 §4.3 settings (ChatGLM3-6B, ZeRO-2, AdamW, weight decay 0.1, lr 6e-5, 10% warm-up, batch 64, length 8192,
  5 epochs) live in ``recipes/chatglm3-6b/sft/full.yaml``.

Loss masks: with ``assistant_only_loss`` the masks come from the chat template's ``{% generation %}`` markers (the
TRL path; fast tokenizers only). :func:`compute_loss_mask` reproduces the exact masks TRL's ``SFTTrainer`` builds,
so ``--dry-run`` shows what the model learns; for slow (remote-code) tokenizers such as ChatGLM3's,
:func:`to_prompt_completion` switches to TRL's prompt / completion format with ``completion_only_loss``.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
from transformers import TrainerCallback

from . import schema as S
from .prompts import DEFAULT_FAMILY, PromptTemplate, get_template, list_templates, load_template

logger = logging.getLogger(__name__)

__all__ = [
    "MESSAGES",
    "CritiquePearsonCallback",
    "DatasetMixture",
    "DatasetSource",
    "LossMask",
    "MixtureResult",
    "compute_loss_mask",
    "critique_messages",
    "deepspeed_config_from_accelerate",
    "dry_run_report",
    "ensure_messages",
    "filter_by_length",
    "format_loss_mask",
    "load_dataset_source",
    "load_mixture",
    "model_card",
    "set_chat_template",
    "to_prompt_completion",
    "weighted_subset",
]

#: The SFT column: chat messages whose last turn is the assistant's critique.
MESSAGES = "messages"
_MESSAGE_FEATURE = [{"role": datasets.Value("string"), "content": datasets.Value("string")}]
_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv", ".arrow": "arrow"}


# ----------------------------------------------------------------------------------------------------------------
# Data: sources, weights, mixtures (CritiqueLLM v2 §3.3 multi-task SFT; v1 §3.3 one setting per model)
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class DatasetSource:
    """One entry of a mixture: a dataset config and how much of it to train on.

    Attributes:
        id: a ``save_to_disk`` folder (a ``Dataset``, a ``DatasetDict`` keyed by splits or by configs, or a folder
            with one such sub-folder per config), a data file or glob (``.jsonl`` / ``.json`` / ``.parquet`` /
            ``.csv``), a folder of data files, or a Hub dataset id.
        config: the config, e.g. ``"pointwise_referenced"`` (Eval-Instruct's four settings); None for none.
        split: the split to train on.
        weight: how many times the rows are used, >= 0: 1 = every row once (the paper's union), 0.5 = a random
            half, 2 = every row twice, 2.5 = twice plus a random half. Sampling is reproducible (mixture seed).
        columns: columns to keep; default ``["messages"]`` (all sources must then share the same features).
    """

    id: str
    config: str | None = None
    split: str = "train"
    weight: float = 1.0
    columns: list[str] | None = None

    def __post_init__(self):
        if not isinstance(self.weight, (int, float)) or math.isnan(self.weight) or self.weight < 0:
            raise ValueError(f"dataset {self.id!r} ({self.config}): weight must be a number >= 0, got {self.weight!r}")

    @property
    def name(self) -> str:
        """``id`` plus ``/config`` when set, for logs and the model card."""
        return f"{self.id}/{self.config}" if self.config else self.id


@dataclass
class DatasetMixture:
    """A weighted mixture of critique SFT datasets, as written under ``dataset_mixture:`` in a recipe.

    YAML (open-r1 style)::

        dataset_mixture:
          datasets:
            - {id: outputs/eval_instruct, config: pointwise_referenced, weight: 1.0}
            - {id: outputs/eval_instruct, config: pairwise_reference_free, weight: 0.5}
          seed: 42
          test_split: validation      # the data's own held-out split (e.g. split by question), or
          # test_split_size: 0.02     # or a random share of each source's rows

    Attributes:
        datasets: the sources (at least one).
        seed: seed of the weighted sampling and of the final shuffle.
        test_split: name of a held-out split to read from every source that has it (no weighting). Preferred:
            builders split by question, so no question leaks from train to eval.
        test_split_size: otherwise, a fraction in (0, 1) of each source's rows held out at random (before weighting,
            so a row is never in both splits; rows of one question may land in both, unlike a builder's split).
    """

    datasets: list[DatasetSource]
    seed: int = 42
    test_split: str | None = None
    test_split_size: float | None = None

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> DatasetMixture:
        """Build from the parsed YAML / JSON mapping.

        Raises:
            ValueError: unknown keys, no datasets, a source without ``id``, a bad weight, both ``test_split`` and
                ``test_split_size``, or a ``test_split_size`` outside (0, 1).
        """
        if not isinstance(spec, Mapping):
            raise ValueError(f"dataset_mixture must be a mapping, got {type(spec).__name__}")
        unknown = set(spec) - {"datasets", "seed", "test_split", "test_split_size"}
        if unknown:
            raise ValueError(f"dataset_mixture: unknown key(s) {sorted(unknown)}")
        entries = spec.get("datasets") or []
        if not entries:
            raise ValueError("dataset_mixture.datasets must list at least one dataset")
        sources = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping) or "id" not in entry:
                raise ValueError(f"dataset_mixture.datasets[{i}] must be a mapping with an 'id'")
            bad = set(entry) - {"id", "config", "split", "weight", "columns"}
            if bad:
                raise ValueError(f"dataset_mixture.datasets[{i}]: unknown key(s) {sorted(bad)}")
            sources.append(DatasetSource(**entry))
        mixture = cls(sources, int(spec.get("seed", 42)), spec.get("test_split"), spec.get("test_split_size"))
        if mixture.test_split and mixture.test_split_size:
            raise ValueError("dataset_mixture: give test_split or test_split_size, not both")
        size = mixture.test_split_size
        if size is not None and not (isinstance(size, (int, float)) and 0 < size < 1):
            raise ValueError(f"dataset_mixture.test_split_size must be a fraction in (0, 1), got {size!r}")
        return mixture


@dataclass
class MixtureResult:
    """What :func:`load_mixture` built.

    Attributes:
        dataset: ``DatasetDict`` with ``train`` and, when a test split was asked for, ``test``.
        sources: one dict per source: ``name``, ``split``, ``weight``, ``rows`` (available), ``kept`` (after the
            ``keep`` filter), ``used`` (after weighting) and ``test_rows``.
    """

    dataset: datasets.DatasetDict
    sources: list[dict] = field(default_factory=list)


def _load_disk(path: Path, config: str | None, split: str):
    loaded = datasets.load_from_disk(str(path))
    if isinstance(loaded, datasets.Dataset):
        return loaded
    if config and config in loaded:  # a DatasetDict keyed by configs
        return loaded[config]
    if split in loaded:
        dataset = loaded[split]
        return _filter_config(dataset, config, path) if config else dataset
    raise ValueError(f"{path}: no split {split!r} (nor config {config!r}); it has {list(loaded)}")


def _filter_config(dataset: datasets.Dataset, config: str, where) -> datasets.Dataset:
    """Rows of one config from a file that holds several, told apart by a ``config`` or ``setting`` column."""
    for column in ("config", "setting"):
        if column in dataset.column_names:
            return dataset.filter(lambda value: value == config, input_columns=column)
    raise ValueError(f"{where}: config {config!r} asked for, but the data has no 'config' or 'setting' column")


def load_dataset_source(id: str, config: str | None = None, split: str = "train") -> datasets.Dataset:
    """Load one config and split from a local folder, data files or the Hub.

    Args:
        id, config, split: see :class:`DatasetSource`.

    Returns:
        The rows as a ``Dataset``.

    Raises:
        ValueError: the split or config is not in a local dataset (the message lists what is there).
        FileNotFoundError: a local-looking path (``./``, ``/``, ``~`` or a data-file suffix) that does not exist.
        Exception: from ``datasets.load_dataset`` for Hub ids (offline and not cached, unknown config, ...).
    """
    path = Path(id).expanduser()
    if path.is_dir():
        if config and (path / config).is_dir():
            return load_dataset_source(str(path / config), None, split)
        if any((path / marker).is_file() for marker in ("dataset_dict.json", "state.json", "dataset_info.json")):
            try:
                return _load_disk(path, config, split)
            except FileNotFoundError:
                pass  # dataset_info.json of a folder of data files, not a save_to_disk folder
        dataset = datasets.load_dataset(str(path), split=split)
        return _filter_config(dataset, config, path) if config else dataset
    suffix = "".join(path.suffixes[-1:]).lower()
    if suffix in _FILE_BUILDERS:
        files = sorted(str(p) for p in path.parent.glob(path.name)) if any(c in id for c in "*?[") else [str(path)]
        if not files or not Path(files[0]).exists():
            raise FileNotFoundError(f"no data file matches {id!r}")
        dataset = datasets.load_dataset(_FILE_BUILDERS[suffix], data_files=files, split="train")
        return _filter_config(dataset, config, id) if config else dataset
    if id.startswith((".", "/", "~")):
        raise FileNotFoundError(f"dataset folder {id!r} does not exist")
    return datasets.load_dataset(id, config, split=split)


def weighted_subset(dataset: datasets.Dataset, weight: float, seed: int) -> datasets.Dataset:
    """Rows used for one mixture source: ``floor(weight)`` full copies plus a random ``weight % 1`` share.

    Args:
        dataset: the source rows (``n`` of them).
        weight: >= 0 (see :class:`DatasetSource`).
        seed: shuffling seed of the fractional part.

    Returns:
        ``floor(weight) * n + round((weight % 1) * n)`` rows (0 rows for weight 0).

    Raises:
        ValueError: a negative or NaN weight.
    """
    if math.isnan(weight) or weight < 0:
        raise ValueError(f"weight must be >= 0, got {weight}")
    whole, frac = int(weight), weight - int(weight)
    parts = [dataset] * whole
    take = round(frac * len(dataset))
    if take:
        parts.append(dataset.shuffle(seed=seed).select(range(take)))
    if not parts:
        return dataset.select([])
    return datasets.concatenate_datasets(parts) if len(parts) > 1 else parts[0]


def load_mixture(
    mixture: DatasetMixture,
    *,
    prepare: Callable[[datasets.Dataset, DatasetSource], datasets.Dataset] | None = None,
    keep: Callable[[dict], bool] | None = None,
) -> MixtureResult:
    """Load, prepare, filter, weight and mix the sources of a :class:`DatasetMixture`.

    Args:
        mixture: the mixture.
        prepare: applied to every loaded source before column selection (the recipe passes
            :func:`ensure_messages` so that rows with only structured fields are rendered).
        keep: a row predicate applied before weighting (the recipe drops examples longer than ``max_length``, see
            :func:`filter_by_length`), so weights apply to usable rows.

    Returns:
        A :class:`MixtureResult`; ``train`` is shuffled with ``mixture.seed``.

    Raises:
        ValueError: all sources weighted to zero rows, sources whose kept columns differ in features, or a
            ``test_split`` no source has.
    """
    train_parts, test_parts, report = [], [], []
    for i, source in enumerate(mixture.datasets):
        dataset = load_dataset_source(source.id, source.config, source.split)
        rows = len(dataset)
        dataset = _select(prepare(dataset, source) if prepare else dataset, source)
        if keep is not None:
            dataset = dataset.filter(keep)
        held_out = None
        if mixture.test_split_size:  # per source and before weighting, so no row is in both splits
            split = dataset.train_test_split(test_size=mixture.test_split_size, seed=mixture.seed + i)
            dataset, held_out = split["train"], split["test"]
        used = weighted_subset(dataset, source.weight, mixture.seed + i)
        entry = {"name": source.name, "id": source.id, "split": source.split, "weight": source.weight, "rows": rows}
        entry.update(kept=len(dataset), used=len(used), test_rows=0)
        if len(used):
            train_parts.append(used)
        if held_out is not None:
            test_parts.append(held_out)
            entry["test_rows"] = len(held_out)
        elif mixture.test_split:
            try:
                test = load_dataset_source(source.id, source.config, mixture.test_split)
            except (ValueError, KeyError, FileNotFoundError) as err:
                logger.info("%s has no %r split (%s); no eval rows from it", source.name, mixture.test_split, err)
            else:
                test = _select(prepare(test, source) if prepare else test, source)
                test = test.filter(keep) if keep is not None else test
                test_parts.append(test)
                entry["test_rows"] = len(test)
        report.append(entry)
        logger.info("mixture source %s", entry)
    if not train_parts:
        detail = ", ".join(f"{e['name']}: {e['rows']} rows, {e['kept']} kept, {e['used']} used" for e in report)
        raise ValueError(
            f"the dataset mixture has no training rows ({detail}); weights of 0, empty sources, or every example "
            "longer than max_length (dropped, see drop_overlong)?"
        )
    train = _concatenate(train_parts).shuffle(seed=mixture.seed)
    splits = {"train": train}
    if mixture.test_split and not test_parts:
        raise ValueError(f"test_split {mixture.test_split!r}: no source of the mixture has that split")
    if test_parts:
        splits["test"] = _concatenate(test_parts)
    return MixtureResult(datasets.DatasetDict(splits), report)


def _select(dataset: datasets.Dataset, source: DatasetSource) -> datasets.Dataset:
    columns = source.columns or [MESSAGES]
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise ValueError(f"{source.name}: column(s) {missing} not found; the data has {dataset.column_names}")
    dataset = dataset.select_columns(columns)
    if MESSAGES in columns:  # one canonical feature type, so that configs from different files concatenate
        features = dataset.features.copy()
        features[MESSAGES] = _MESSAGE_FEATURE
        dataset = dataset.cast(features)
    return dataset


def _concatenate(parts: list[datasets.Dataset]) -> datasets.Dataset:
    try:
        return datasets.concatenate_datasets(parts) if len(parts) > 1 else parts[0]
    except ValueError as err:
        raise ValueError(f"mixture sources do not share the same columns / features; set `columns`: {err}") from err


# ----------------------------------------------------------------------------------------------------------------
# Rendering: structured rows -> SFT messages with the critic's own templates (v1 §3.3, v2 §3.3)
# ----------------------------------------------------------------------------------------------------------------


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
        raise ValueError("the critique (the training target) is empty")
    return [*template.render(record), {"role": "assistant", "content": critique}]


def _setting_of(record: Mapping[str, Any]) -> S.Setting:
    name = record.get("setting") or record.get("config")
    if name:
        return S.Setting.from_name(name)
    pairwise = record.get(S.RESPONSE_1) is not None
    referenced = isinstance(record.get(S.REFERENCE), str) and bool(record[S.REFERENCE].strip())
    return S.Setting(S.Task.PAIRWISE if pairwise else S.Task.POINTWISE, referenced)


def _resolve_template(spec: str, setting: S.Setting, language: str) -> PromptTemplate:
    if Path(spec).suffix in (".yaml", ".yml") or spec in list_templates():
        template = load_template(spec)
        if template.setting != setting:
            raise ValueError(f"template {template.name!r} is for {template.setting.name}, the row is {setting.name}")
        return template
    return get_template(spec, setting, language)


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
                raise ValueError(
                    f"{source}: row {row}: 'messages' must end with a non-empty assistant turn (the critique)"
                )
        return dataset
    if critique_column not in dataset.column_names:
        raise ValueError(
            f"{source}: no 'messages' column and no {critique_column!r} column to render one from; "
            f"the data has {dataset.column_names}"
        )

    def render(record, index):
        try:
            setting = _setting_of(record)
            return {
                MESSAGES: critique_messages(
                    record, _resolve_template(template, setting, language), record[critique_column]
                )
            }
        except ValueError as err:
            raise ValueError(f"{source}: row {index}: {err}") from err

    return dataset.map(render, with_indices=True, desc=f"rendering {source} with {template}")


# ----------------------------------------------------------------------------------------------------------------
# Chat templates and loss masks
# ----------------------------------------------------------------------------------------------------------------


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
        raise ValueError(f"loss mode must be one of {LOSS_MODES}, got {mode!r}")
    messages = [dict(m) for m in messages]
    if mode == "assistant":
        chat_template = None
        if not has_generation_markers(tokenizer.chat_template):
            # As SFTTrainer does: swap in TRL's training version of a known template (Qwen2.5, Llama 3, ...).
            from trl.chat_template_utils import get_training_chat_template

            try:
                chat_template = get_training_chat_template(tokenizer)
            except (ValueError, TypeError) as err:
                raise ValueError(
                    "the chat template has no {% generation %} markers and TRL has no training version of it, so "
                    "assistant_only_loss cannot find the critique; supply one (SFTConfig.chat_template_path) or use "
                    f"completion_only_loss ({err})"
                ) from err
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError("assistant_only_loss needs a fast tokenizer (char offsets); use completion_only_loss")
        out = tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True, chat_template=chat_template
        )
        mask = LossMask(list(out["input_ids"]), [int(bool(m)) for m in out["assistant_masks"]])
    elif mode == "completion":
        from trl.data_utils import common_prefix_length

        prompt = tokenizer.apply_chat_template(
            messages[:-1], tokenize=True, add_generation_prompt=True, return_dict=True
        )
        full = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True)
        prompt_ids, full_ids = list(prompt["input_ids"]), list(full["input_ids"])
        cut = common_prefix_length(prompt_ids, full_ids)
        mask = LossMask(full_ids, [0] * cut + [1] * (len(full_ids) - cut))
    else:
        ids = list(tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"])
        mask = LossMask(ids, [1] * len(ids))
    if not mask.n_trained:
        raise ValueError("no token of the conversation carries a label; check the chat template's generation markers")
    return mask


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


# ----------------------------------------------------------------------------------------------------------------
# Best checkpoint by validation Pearson (CritiqueLLM v1 §4.3)
# ----------------------------------------------------------------------------------------------------------------


class CritiquePearsonCallback(TrainerCallback):
    """At each evaluation, grade a held-out pointwise set with the model being trained and report Pearson.

    CritiqueLLM v1 §4.3 selects the best checkpoint by Pearson correlation on the validation set. This callback
    generates critiques with :class:`~hf_critic.critic.Critic` on a
    :class:`~hf_critic.backends.transformers.TransformersBackend` wrapping the in-training model (greedy decoding
    by default; rows are split across processes and gathered), computes the correlation with the teacher / human
    scores using the ``critique_correlation`` ``evaluate`` module, logs ``eval_<metric_name>`` (Pearson) plus
    Spearman, Kendall and the parse rate, and adds the Pearson to the evaluation metrics, so
    ``metric_for_best_model: <metric_name>`` with ``load_best_model_at_end: true`` keeps the best checkpoint.

    All rows form one group (sample-level correlation) unless ``query_column`` is given, in which case the
    correlation is text-level (mean over queries of the per-query correlation, CritiqueLLM v2 §4.4.1).
    Unparsed critiques are excluded and counted (``eval_<metric_name>_parse_rate``), never given a score; a
    correlation that is undefined (fewer than two parsed rows, constant scores) is NaN, which never counts as a
    new best.

    Args:
        records: pointwise rows (``question``, ``response``, [``reference``]) with the score column.
        trainer: the Trainer (for its accelerator, wrapped model and ``log``); set later with ``callback.trainer =``
            if not known at construction.
        template: template family / name / path, as for :class:`~hf_critic.critic.Critic`.
        language: critique language for family resolution.
        score_column: the gold score column (in any scale: Pearson is scale-free).
        query_column: optional query id column for the text-level correlation.
        referenced: force the setting; None = referenced when ``records`` has a ``reference`` column.
        max_new_tokens: generation budget per critique.
        batch_size: conversations per ``generate`` call per process.
        metric_name: the metric key without the ``eval_`` prefix.

    Raises:
        ValueError: ``records`` lacks the score column or has no rows.
    """

    def __init__(
        self,
        records: datasets.Dataset,
        *,
        trainer=None,
        template: str = DEFAULT_FAMILY,
        language: str = "en",
        score_column: str = "score",
        query_column: str | None = None,
        referenced: bool | None = None,
        max_new_tokens: int = 256,
        batch_size: int = 8,
        metric_name: str = "critique_pearson",
    ):
        if score_column not in records.column_names:
            raise ValueError(f"validation records have no {score_column!r} column; they have {records.column_names}")
        if len(records) == 0:
            raise ValueError("validation records are empty")
        from .decoding import DecodingConfig

        self.records, self.trainer = records, trainer
        self.template, self.language, self.referenced = template, language, referenced
        self.score_column, self.query_column = score_column, query_column
        self.decoding = DecodingConfig(strategy="greedy", max_new_tokens=max_new_tokens)
        self.batch_size, self.metric_name = batch_size, metric_name
        self.history: list[dict] = []
        # Import the critic code and load the metric now, not at the first evaluation: a long run must not depend on
        # the source tree staying importable (or the metric module loadable) hours after it started.
        from .backends.transformers import TransformersBackend
        from .critic import Critic

        self._critic_classes = (Critic, TransformersBackend)
        self._metric = None
        self._correlation_metric()

    def _correlation_metric(self):
        if self._metric is None:
            import evaluate
            from accelerate import PartialState

            from .metric_modules import metric_path

            with PartialState().main_process_first():  # the first load copies the module into evaluate's cache
                self._metric = evaluate.load(metric_path("critique_correlation"), keep_in_memory=True)
        return self._metric

    def _grade(self, model, tokenizer, indices: list[int]) -> list[float | None]:
        Critic, TransformersBackend = self._critic_classes
        if not indices:
            return []
        padding_side = tokenizer.padding_side  # the backend switches to left padding for generation
        backend = TransformersBackend(model, tokenizer, name="in-training", batch_size=self.batch_size, progress=False)
        critic = Critic(backend, template=self.template, language=self.language, decoding=self.decoding)
        try:
            graded = critic.grade(self.records.select(indices), referenced=self.referenced, source="validation")
        finally:
            tokenizer.padding_side = padding_side
        return list(graded[S.CRITIQUE_SCORE])

    def evaluate_model(self, model, tokenizer, accelerator=None) -> dict[str, float]:
        """Grade the validation rows with ``model`` and return the metrics (keys without the ``eval_`` prefix).

        Args:
            model: the (unwrapped) causal LM.
            tokenizer: its tokenizer, with a chat template.
            accelerator: shards rows across processes and gathers the scores when given.

        Returns:
            ``{name: pearson, name_spearman, name_kendall, name_parse_rate, name_n}`` (floats; NaN when undefined).
        """
        indices = list(range(len(self.records)))
        was_training = model.training
        model.eval()
        try:
            if accelerator is not None and accelerator.num_processes > 1:
                from accelerate.utils import gather_object

                with accelerator.split_between_processes(indices) as shard:
                    scores = list(zip(shard, self._grade(model, tokenizer, list(shard)), strict=True))
                pairs = sorted(gather_object(scores))
                scores = [s for _, s in pairs]
            else:
                scores = self._grade(model, tokenizer, indices)
        finally:
            model.train(was_training)
        predictions = [float("nan") if s is None else float(s) for s in scores]
        query_ids = self.records[self.query_column] if self.query_column else None
        result = self._correlation_metric().compute(
            predictions=predictions,
            references=[float(x) for x in self.records[self.score_column]],
            query_ids=query_ids,
        )
        n, parsed = result["n_rows"], result["n_rows"] - result["n_unparsed"]
        name = self.metric_name
        return {
            name: float(result["text_pearson"]),
            f"{name}_spearman": float(result["text_spearman"]),
            f"{name}_kendall": float(result["text_kendall"]),
            f"{name}_parse_rate": parsed / n if n else float("nan"),
            f"{name}_n": float(n),
        }

    def on_evaluate(self, args, state, control, metrics=None, model=None, processing_class=None, **kwargs):
        """Grade, log, and add ``eval_<metric_name>`` to ``metrics`` (the dict the Trainer picks the best model from)."""
        trainer = self.trainer
        tokenizer = processing_class if processing_class is not None else getattr(trainer, "processing_class", None)
        if trainer is not None:
            from trl.models.utils import unwrap_model_for_generation

            with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as unwrapped:
                values = self.evaluate_model(unwrapped, tokenizer, trainer.accelerator)
        else:
            values = self.evaluate_model(model, tokenizer)
        name = self.metric_name
        self.history.append(
            {
                "step": state.global_step,
                "epoch": state.epoch,
                "pearson": values[name],
                "spearman": values[f"{name}_spearman"],
                "kendall": values[f"{name}_kendall"],
                "parse_rate": values[f"{name}_parse_rate"],
                "n": int(values[f"{name}_n"]),
            }
        )
        values = {f"eval_{k}": v for k, v in values.items()}
        if metrics is not None:
            metrics.update(values)
        if trainer is not None:
            trainer.log(values)
        else:
            state.log_history.append({**values, "step": state.global_step})
        return control


def logged_eval_metrics(log_history: Sequence[Mapping[str, Any]], step: int) -> dict[str, float]:
    """All ``eval_*`` values the Trainer logged at ``step`` (eval loss and validation Pearson), merged.

    Args:
        log_history: ``trainer.state.log_history``.
        step: the global step (e.g. ``state.best_global_step``).

    Returns:
        ``{key: value}`` for every ``eval_`` key logged at that step, plus ``epoch``; empty when nothing was logged.
    """
    merged: dict[str, float] = {}
    for entry in log_history:
        if entry.get("step") == step and any(k.startswith("eval_") for k in entry):
            merged.update({k: v for k, v in entry.items() if k.startswith("eval_") or k == "epoch"})
    return merged


# ----------------------------------------------------------------------------------------------------------------
# Model card
# ----------------------------------------------------------------------------------------------------------------

_CITATION = """@inproceedings{ke-etal-2024-critiquellm,
    title = "{C}ritique{LLM}: Towards an Informative Critique Generation Model for Evaluation of Large Language Model Generation",
    author = "Ke, Pei and Wen, Bosi and Feng, Andrew and Liu, Xiao and Lei, Xuanyu and Cheng, Jiale and Wang, Shengyuan and Zeng, Aohan and Dong, Yuxiao and Wang, Hongning and Tang, Jie and Huang, Minlie",
    booktitle = "Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)",
    year = "2024",
    pages = "13034--13054",
}"""

_HYPERPARAMETERS = (
    "learning_rate",
    "lr_scheduler_type",
    "warmup_steps",
    "weight_decay",
    "optim",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "num_train_epochs",
    "max_steps",
    "max_length",
    "packing",
    "padding_free",
    "assistant_only_loss",
    "completion_only_loss",
    "bf16",
    "activation_checkpointing",
    "seed",
)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def model_card(
    *,
    model_name: str,
    base_model: str,
    training_args,
    model_args=None,
    mixture: MixtureResult | None = None,
    templates: Sequence[Mapping[str, str]] = (),
    validation: Sequence[Mapping[str, Any]] = (),
    best: Mapping[str, Any] | None = None,
    world_size: int = 1,
    usage_template: str = DEFAULT_FAMILY,
    usage_model: str | None = None,
) -> str:
    """A Hub model card (README.md) for a trained critic.

    Args:
        model_name: the model's name (output folder or Hub repo name).
        base_model: the model fine-tuned from (Hub id or path).
        training_args: the ``SFTConfig`` (hyper-parameters are read from it).
        model_args: the TRL ``ModelConfig`` (LoRA settings when ``use_peft``).
        mixture: the training data (per-source rows and weights).
        templates: prompt templates seen in the data: dicts with ``template`` and ``template_version`` (and
            optionally ``setting``).
        validation: :attr:`CritiquePearsonCallback.history` (one dict per evaluation).
        best: ``{"checkpoint", "metric", "value"}`` of the selected checkpoint, if any.
        world_size: number of training processes (for the effective batch size).
        usage_template: template family shown in the usage example.
        usage_model: the ``--model`` value shown in the usage example (default: ``model_name``).

    Returns:
        Markdown with a YAML header (``base_model``, ``library_name``, ``pipeline_tag``, ``tags``, ``datasets`` = the
        Hub ids among the sources), then Usage, Training data, Prompt templates, Training hyper-parameters,
        Validation results, Framework versions and Citation sections.
    """
    import torch
    import transformers
    import trl

    hub_ids = sorted(
        {
            s["id"]
            for s in (mixture.sources if mixture else [])
            if s["id"].count("/") == 1 and not Path(s["id"]).exists()
        }
    )
    header = {
        "base_model": base_model if not Path(base_model).exists() else None,
        "library_name": "transformers",
        "pipeline_tag": "text-generation",
        "tags": ["hf-critic", "critiquellm", "llm-as-a-judge", "trl", "sft"]
        + (["peft", "lora"] if getattr(model_args, "use_peft", False) else []),
        "datasets": hub_ids or None,
    }
    yaml_lines = ["---"]
    for key, value in header.items():
        if value is None:
            continue
        if isinstance(value, list):
            yaml_lines.append(f"{key}:")
            yaml_lines += [f"- {v}" for v in value]
        else:
            yaml_lines.append(f"{key}: {value}")
    yaml_lines.append("---")

    lines = [
        *yaml_lines,
        "",
        f"# {model_name}",
        "",
        f"A critic model fine-tuned from `{base_model}` with [hf-critic](https://github.com/hf-critic/hf-critic) "
        "(`recipes/sft.py`, TRL `SFTTrainer`): it writes a critique, an explanation followed by a score (pointwise "
        "grading) or a verdict (pairwise comparison), as in CritiqueLLM (Ke et al., 2024, §3.3). The loss is on the "
        "critique tokens only; the prompts are the critic templates used at inference.",
        "",
        "## Usage",
        "",
        "```bash",
        f"hf-critic grade --model {usage_model or model_name} --template {usage_template} --data responses.jsonl "
        "--output graded.jsonl",
        "```",
        "",
    ]
    if mixture is not None:
        lines += [
            "## Training data",
            "",
            "| source | split | rows | kept | weight | rows used | eval rows |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for s in mixture.sources:
            lines.append(
                f"| `{s['name']}` | {s['split']} | {s['rows']} | {s['kept']} | {_fmt(s['weight'])} | {s['used']} | "
                f"{s['test_rows']} |"
            )
        lines += ["", "`kept`: rows within `max_length` (longer ones are dropped, never truncated).", ""]
    if templates:
        lines += ["## Prompt templates", "", "| setting | template | version |", "|---|---|---|"]
        for t in templates:
            lines.append(f"| {t.get('setting', '')} | `{t.get('template', '')}` | {t.get('template_version', '')} |")
        lines.append("")
    args = training_args.to_dict() if hasattr(training_args, "to_dict") else dict(training_args)
    effective = args.get("per_device_train_batch_size", 1) * args.get("gradient_accumulation_steps", 1) * world_size
    lines += ["## Training hyper-parameters", "", "| parameter | value |", "|---|---|"]
    lines += [f"| {k} | {_fmt(args[k])} |" for k in _HYPERPARAMETERS if k in args]
    lines += [f"| effective batch size | {effective} ({world_size} process(es)) |"]
    if getattr(model_args, "use_peft", False):
        lines += [
            f"| LoRA r / alpha / dropout | {model_args.lora_r} / {model_args.lora_alpha} / {model_args.lora_dropout} |",
            f"| LoRA target modules | {model_args.lora_target_modules} |",
        ]
    lines.append("")
    if validation:
        lines += [
            "## Validation results",
            "",
            "Pearson / Spearman / Kendall between the critic's scores on the held-out pointwise set and the gold "
            "scores, at each evaluation (CritiqueLLM v1 §4.3 selects the checkpoint with the best Pearson).",
            "",
            "| step | epoch | Pearson | Spearman | Kendall | parse rate | rows |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for h in validation:
            lines.append(
                f"| {h['step']} | {_fmt(h.get('epoch'))} | {_fmt(h['pearson'])} | {_fmt(h['spearman'])} | "
                f"{_fmt(h['kendall'])} | {_fmt(h['parse_rate'])} | {h['n']} |"
            )
        lines.append("")
    if best and best.get("checkpoint"):
        lines += [f"Selected checkpoint: `{best['checkpoint']}` ({best['metric']} = {_fmt(best['value'])}).", ""]
    lines += [
        "## Framework versions",
        "",
        f"- transformers {transformers.__version__}, TRL {trl.__version__}, torch {torch.__version__}",
        "",
        "## Citation",
        "",
        "```bibtex",
        _CITATION,
        "```",
        "",
    ]
    return "\n".join(lines)


def templates_in(dataset: datasets.Dataset) -> list[dict[str, str]]:
    """Distinct ``(setting, template, template_version)`` found in a dataset's columns, for the model card."""
    columns = [c for c in ("setting", "template", "template_version") if c in dataset.column_names]
    if "template" not in columns:
        return []
    seen = {tuple(row[c] for c in columns) for row in dataset.select_columns(columns)}
    return [dict(zip(columns, values, strict=True)) for values in sorted(seen, key=str)]


# ----------------------------------------------------------------------------------------------------------------
# accelerate / DeepSpeed configs
# ----------------------------------------------------------------------------------------------------------------


def deepspeed_config_from_accelerate(
    path: str | os.PathLike, *, micro_batch_size: int = 1, gradient_accumulation_steps: int = 1
) -> dict | None:
    """Validate an ``accelerate`` config file and, for DeepSpeed ones, build and validate its DeepSpeed config.

    The YAML is read with accelerate's own ``ClusterConfig`` (unknown keys fail). For ``distributed_type:
    DEEPSPEED`` the ``deepspeed_config`` block becomes an accelerate ``DeepSpeedPlugin`` (what ``accelerate
    launch`` does), its ``"auto"`` batch values are filled with the given sizes and ``num_processes``, and the result
    is parsed by DeepSpeed's ``DeepSpeedConfig`` (which validates the ZeRO, offload and precision sections with
    DeepSpeed's pydantic config classes). No process group and no GPU are needed.

    Args:
        path: the accelerate YAML.
        micro_batch_size, gradient_accumulation_steps: values for the ``"auto"`` batch fields.

    Returns:
        The resolved DeepSpeed config dict, or None for a non-DeepSpeed config (e.g. ``MULTI_GPU``).

    Raises:
        ValueError / TypeError / pydantic.ValidationError: an invalid accelerate or DeepSpeed config.
    """
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.utils import DeepSpeedPlugin

    config = ClusterConfig.from_yaml_file(str(path))
    if str(config.distributed_type) not in ("DEEPSPEED", "DistributedType.DEEPSPEED"):
        return None
    ds = dict(config.deepspeed_config or {})
    if "deepspeed_config_file" in ds:
        ds_file = Path(path).parent / ds["deepspeed_config_file"]
        plugin_config = json.loads(Path(ds_file).read_text())
    else:
        known = {
            "zero_stage",
            "offload_optimizer_device",
            "offload_param_device",
            "zero3_init_flag",
            "zero3_save_16bit_model",
            "gradient_accumulation_steps",
            "gradient_clipping",
            "offload_optimizer_nvme_path",
            "offload_param_nvme_path",
        }
        ignored = {"deepspeed_multinode_launcher"}
        unknown = set(ds) - known - ignored
        if unknown:
            raise ValueError(f"{path}: unknown deepspeed_config key(s) {sorted(unknown)}")
        plugin = DeepSpeedPlugin(**{k: v for k, v in ds.items() if k in known})
        plugin_config = plugin.deepspeed_config
    resolved = json.loads(json.dumps(plugin_config))
    world = int(config.num_processes or 1) * int(config.num_machines or 1)
    gas = (
        gradient_accumulation_steps
        if resolved.get("gradient_accumulation_steps") == "auto"
        else resolved.get("gradient_accumulation_steps", 1)
    )
    resolved["train_micro_batch_size_per_gpu"] = micro_batch_size
    resolved["gradient_accumulation_steps"] = gas
    resolved["train_batch_size"] = micro_batch_size * gas * world
    if resolved.get("gradient_clipping") == "auto":
        resolved["gradient_clipping"] = 1.0
    precision = str(config.mixed_precision or "no").lower()
    if precision in ("bf16", "fp16"):
        resolved.setdefault(precision, {})["enabled"] = True
    zero = resolved.get("zero_optimization", {})
    for key, value in list(zero.items()):
        if value == "auto":
            zero[key] = 50_000_000 if "bucket" in key or "threshold" in key else 1_000_000_000
    from deepspeed.runtime.config import DeepSpeedConfig

    # Without a process group DeepSpeed assumes one process, so the batch arithmetic is checked for a world of 1.
    DeepSpeedConfig({**resolved, "train_batch_size": micro_batch_size * gas})
    return resolved
