"""Weighted mixtures of critique SFT datasets (CritiqueLLM v2 §3.3 multi-task SFT; v1 §3.3 one setting per model).

v2 §3.3 trains one model for all four settings on the union of the Eval-Instruct configs; :class:`DatasetMixture`
mixes configs with per-config weights (weight 1 everywhere reproduces the paper's plain union). v1 §3.3 trains one
model per setting: a mixture with one config. Sources are read with :func:`hf_critic.io.load_records`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import datasets

from ..core.errors import BadInputError
from ..io import RecordError, load_records
from .messages import _MESSAGE_FEATURE, MESSAGES

logger = logging.getLogger(__name__)

__all__ = ["DatasetMixture", "DatasetSource", "MixtureResult", "load_mixture", "templates_in", "weighted_subset"]


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
            raise BadInputError(
                f"dataset {self.id!r} ({self.config}): weight must be a number >= 0, got {self.weight!r}"
            )

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
        test_split: name of a held-out split to read from every source that has it (no weighting; a data file or
            Eval-Instruct's output has none). Preferred:
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
            raise BadInputError(f"dataset_mixture must be a mapping, got {type(spec).__name__}")
        unknown = set(spec) - {"datasets", "seed", "test_split", "test_split_size"}
        if unknown:
            raise BadInputError(f"dataset_mixture: unknown key(s) {sorted(unknown)}")
        entries = spec.get("datasets") or []
        if not entries:
            raise BadInputError("dataset_mixture.datasets must list at least one dataset")
        sources = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping) or "id" not in entry:
                raise BadInputError(f"dataset_mixture.datasets[{i}] must be a mapping with an 'id'")
            bad = set(entry) - {"id", "config", "split", "weight", "columns"}
            if bad:
                raise BadInputError(f"dataset_mixture.datasets[{i}]: unknown key(s) {sorted(bad)}")
            sources.append(DatasetSource(**entry))
        mixture = cls(sources, int(spec.get("seed", 42)), spec.get("test_split"), spec.get("test_split_size"))
        if mixture.test_split and mixture.test_split_size:
            raise BadInputError("dataset_mixture: give test_split or test_split_size, not both")
        size = mixture.test_split_size
        if size is not None and not (isinstance(size, (int, float)) and 0 < size < 1):
            raise BadInputError(f"dataset_mixture.test_split_size must be a fraction in (0, 1), got {size!r}")
        return mixture


@dataclass
class MixtureResult:
    """What :func:`load_mixture` built.

    Attributes:
        dataset: ``DatasetDict`` with ``train`` and, when a test split was asked for, ``test``.
        sources: one dict per source: ``name``, ``split``, ``weight``, ``rows`` (available), ``kept`` (after the
            ``keep`` filter), ``used`` (after weighting) and ``test_rows``.
        templates: the distinct prompt templates recorded in the training sources (:func:`templates_in`), for the
            model card.
    """

    dataset: datasets.DatasetDict
    sources: list[dict] = field(default_factory=list)
    templates: list[dict] = field(default_factory=list)


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
        raise BadInputError(f"weight must be >= 0, got {weight}")
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
        ValueError: all sources weighted to zero rows, or sources whose kept columns differ in features.
        RecordError: a source that cannot be read, or a ``test_split`` no source has (a one-split source, a data file
            or Eval-Instruct's output, has none: its training rows are never used as held-out rows).
    """
    train_parts, test_parts, report, templates = [], [], [], []
    for i, source in enumerate(mixture.datasets):
        dataset = load_records(source.id, split=source.split, config=source.config)
        rows = len(dataset)
        templates += [t for t in templates_in(dataset) if t not in templates]
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
                test = load_records(source.id, split=mixture.test_split, config=source.config, split_must_exist=True)
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
        raise BadInputError(
            f"the dataset mixture has no training rows ({detail}); weights of 0, empty sources, or every example "
            "longer than max_length (dropped, see drop_overlong)?"
        )
    train = _concatenate(train_parts).shuffle(seed=mixture.seed)
    splits = {"train": train}
    if mixture.test_split and not test_parts:
        raise RecordError(
            f"test_split {mixture.test_split!r}: no source of the mixture has that split (Eval-Instruct's output "
            "holds one split per config: hold queries out with scripts/eval_instruct/split_by_query.py)"
        )
    if test_parts:
        splits["test"] = _concatenate(test_parts)
    return MixtureResult(datasets.DatasetDict(splits), report, templates)


def _select(dataset: datasets.Dataset, source: DatasetSource) -> datasets.Dataset:
    columns = source.columns or [MESSAGES]
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise BadInputError(f"{source.name}: column(s) {missing} not found; the data has {dataset.column_names}")
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
        raise BadInputError(f"mixture sources do not share the same columns / features; set `columns`: {err}") from err


def templates_in(dataset: datasets.Dataset) -> list[dict[str, str]]:
    """Distinct ``(setting, template, template_version)`` found in a dataset's columns, for the model card."""
    columns = [c for c in ("setting", "template", "template_version") if c in dataset.column_names]
    if "template" not in columns:
        return []
    seen = {tuple(row[c] for c in columns) for row in dataset.select_columns(columns)}
    return [dict(zip(columns, values, strict=True)) for values in sorted(seen, key=str)]
