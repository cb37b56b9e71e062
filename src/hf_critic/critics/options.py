"""The options of one computed critic, declared once: the model and how it runs, the server it may sit behind, the
generation cache, and whether pairs are judged in both orders, beside the prompting / read-out options of
:class:`~hf_critic.critic.config.CriticConfig` and the decoding options of
:class:`~hf_critic.critic.decoding.DecodingConfig`.

The command line generates its ``--model`` ... ``--no-cache`` options from these dataclasses
(:mod:`hf_critic.commands.options`); a critic spec (one critic of a cascade file) is read into the same dataclasses
by :func:`critic_options`, with no argparse: both convert a value through
:func:`~hf_critic.critic.config.field_converter`, and both end in one :class:`CriticOptions`, which
:func:`hf_critic.critics.computed.build_computed` turns into a critic.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.gguf_files import RECODE_CHOICES
from ..core.errors import BadInputError
from ..critic.config import (
    CriticConfig,
    OptionValueError,
    field_converter,
    non_negative_int,
    option_field,
    positive_float,
    positive_int,
)
from ..critic.decoding import DecodingConfig

__all__ = [
    "DEFAULT_CACHE",
    "CacheOptions",
    "CriticOptions",
    "EndpointOptions",
    "ModelOptions",
    "PairOptions",
    "critic_options",
]

DEFAULT_CACHE = "$HF_CRITIC_CACHE/generations.sqlite; ~/.cache/hf_critic/ when HF_CRITIC_CACHE is unset"
_opt = option_field


@dataclass
class ModelOptions:
    """The local model and how it runs: ``--model``, ``--engine``, ``--tensor-parallel-size``,
    ``--data-parallel-size``, ``--trust-remote-code``, ``--batch-size``, ``--threads``, ``--dtype``, ``--gguf-recode``,
    ``--progress``."""

    model: str | None = _opt(
        "local folder, Hub id, .gguf file or PEFT adapter folder (default: the embedded SmolLM2-135M-Instruct); "
        "a one-label sequence classifier is judged as a reward model; with --base-url, the model name the server serves",
        None,
    )
    engine: str = _opt(
        "what runs the model here: transformers, llama.cpp for GGUF files, or vllm (vLLM's offline engine from its "
        "own virtualenv, `make vllm`) (default: auto = llama.cpp for .gguf, transformers for folders and Hub ids; "
        "for the embedded and shipped critics the installed engine measured fastest on this CPU class for the job)",
        "auto",
        choices=["auto", "transformers", "llamacpp", "vllm"],
    )
    tensor_parallel_size: int = _opt(
        "--engine vllm: vLLM's tensor parallelism, the devices one model is split across (default: 1)",
        1,
        type=positive_int,
    )
    data_parallel_size: int = _opt(
        "--engine vllm: vLLM's data parallelism, the model's replicas (default: 1)", 1, type=positive_int
    )
    trust_remote_code: bool = _opt("run the model repository's own code (e.g. ChatGLM3)", False, action="store_true")
    batch_size: int = _opt("inputs per model call, at least 1 (default: 8)", 8, type=positive_int)
    threads: int | None = _opt(
        "CPU threads for torch and llama.cpp, at least 1 (default: OMP_NUM_THREADS when set, else one per physical core)",
        None,
        type=positive_int,
    )
    dtype: str = _opt(
        "model dtype (default: auto = bfloat16 on CPUs with native bfloat16 such as AMX / AVX512-BF16, else "
        "float32; the checkpoint's dtype on GPU)",
        "auto",
        choices=["auto", "float32", "bfloat16", "float16"],
    )
    gguf_recode: str = _opt(
        "llama.cpp: run a re-encoding of the GGUF that its CPU kernels multiply faster, written once to the cache "
        "folder (default: auto = Q4_1 as Q8_0 for models up to 1B parameters; off = the file as it is)",
        "auto",
        choices=list(RECODE_CHOICES),
    )
    progress: bool = _opt("progress bars (default: on)", True)


@dataclass
class EndpointOptions:
    """The critic behind an OpenAI-compatible (or vLLM pooling) server: ``--base-url``, ``--pooling``,
    ``--api-key-env``, ``--concurrency``, ``--request-timeout``, ``--max-retries``."""

    base_url: str | None = _opt(
        "run the critic on an OpenAI-compatible server instead (vLLM, TGI, llama.cpp's server, OpenAI), e.g. "
        "http://127.0.0.1:8000/v1; --model names the served model",
        None,
    )
    pooling: bool = _opt(
        "the server at --base-url serves a reward model as a pooling model (vLLM: vllm serve MODEL --runner "
        "pooling): an order-free reward critic, scored through POST /pooling",
        False,
        action="store_true",
    )
    api_key_env: str = _opt(
        "environment variable holding the server's API key (default: OPENAI_API_KEY; unset is fine locally); a "
        "key in --base-url (http://user:KEY@host/v1) is used instead, sent the same way and never printed",
        "OPENAI_API_KEY",
    )
    concurrency: int = _opt("requests in flight at once with --base-url (default: 8)", 8, type=positive_int)
    request_timeout: float = _opt("seconds per request with --base-url (default: 300)", 300.0, type=positive_float)
    max_retries: int = _opt(
        "retries of a failed request (429, 5xx, timeout, connection) with --base-url (default: 6)",
        6,
        type=non_negative_int,
    )


@dataclass
class CacheOptions:
    """The generation cache: ``--cache FILE``, ``--no-cache``."""

    cache: str | None = _opt(f"SQLite file of finished generations (default: {DEFAULT_CACHE})", None)
    no_cache: bool = _opt("do not read or write the generation cache", False, action="store_true")

    def path(self) -> Path | None:
        """The cache file: :attr:`cache`, else ``generations.sqlite`` under hf-critic's cache folder
        (:func:`hf_critic.backends.models.cache_dir`); None with :attr:`no_cache`."""
        from ..backends.models import cache_dir

        if self.no_cache:
            return None
        return Path(self.cache) if self.cache else cache_dir() / "generations.sqlite"


@dataclass
class PairOptions:
    """How a critic judges a pair: ``--swap`` (both orders; CritiqueLLM v2 §4.4's consistency under order swap)."""

    swap: bool = _opt("judge both orders and record whether the verdicts agree", False, action="store_true")


#: The option groups of one computed critic, in the order a spec's keys are looked up: {attribute of
#: :class:`CriticOptions`: dataclass}.
GROUPS: dict[str, type] = {
    "model": ModelOptions,
    "endpoint": EndpointOptions,
    "critic": CriticConfig,
    "cache": CacheOptions,
    "decoding": DecodingConfig,
    "pair": PairOptions,
}


@dataclass(frozen=True)
class CriticOptions:
    """Every option of one computed critic, one dataclass per group (the command line's groups).

    Attributes:
        model: the model and how it runs locally (:class:`ModelOptions`).
        endpoint: the server it may sit behind (:class:`EndpointOptions`).
        critic: prompting and verdict read-out (:class:`~hf_critic.critic.config.CriticConfig`).
        cache: the generation cache (:class:`CacheOptions`).
        decoding: how critiques are decoded (:class:`~hf_critic.critic.decoding.DecodingConfig`).
        pair: whether pairs are judged in both orders (:class:`PairOptions`).
    """

    model: ModelOptions = dataclasses.field(default_factory=ModelOptions)
    endpoint: EndpointOptions = dataclasses.field(default_factory=EndpointOptions)
    critic: CriticConfig = dataclasses.field(default_factory=CriticConfig)
    cache: CacheOptions = dataclasses.field(default_factory=CacheOptions)
    decoding: DecodingConfig = dataclasses.field(default_factory=DecodingConfig)
    pair: PairOptions = dataclasses.field(default_factory=PairOptions)


def _keys() -> dict[str, tuple[str, dataclasses.Field, Any]]:
    """{spec key: (group, field, annotation)}: a field's name, and its flag's name where it differs
    (``decoding`` for ``strategy``), with ``-`` or ``_``."""
    keys = {}
    for group, cls in GROUPS.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            flag = f.metadata.get("flag", f.name).lstrip("-").replace("-", "_")
            for key in {f.name, flag}:
                keys[key] = (group, f, hints[f.name])
    return keys


def critic_options(spec: Mapping[str, Any], where: str, refused: Mapping[str, str] | None = None) -> CriticOptions:
    """The :class:`CriticOptions` of a critic spec's ``options:`` mapping (``{option: value}``, keys as the long flags
    without ``--``, ``-`` or ``_``), converted as the command line converts its flags, without argparse.

    A switch takes ``true`` / ``false``; any other option a value whose text the option's type reads (``batch_size:
    4`` and ``batch_size: "4"`` alike); ``null`` keeps the default.

    Args:
        spec: the options.
        where: names the file and the critic in messages (``"cascade.yaml: critics[0] (judge)"``).
        refused: keys that are no critic's own, with why (a command's data and output options).

    Returns:
        The options, every group built (its own checks run: e.g. a temperature of 0 is refused).

    Raises:
        ValueError: one line naming ``where``, the key and the value: an unknown key (with the closest known one), a
            refused key, a switch given a non-bool, a value the option's type or choices refuse.
    """
    if not isinstance(spec, Mapping):
        raise BadInputError(f"{where}: options must be a mapping of option: value, got {spec!r}")
    keys, values = _keys(), {group: {} for group in GROUPS}
    for key, value in spec.items():
        name = str(key).replace("-", "_")
        if name in (refused or {}):
            raise BadInputError(f"{where}: option {key!r} {refused[name]}")
        if name not in keys:
            close = difflib.get_close_matches(name, list(keys), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise BadInputError(f"{where}: option {key!r} is no option of compare{hint}")
        group, f, hint_type = keys[name]
        if f.name in values[group]:
            raise BadInputError(f"{where}: option {key!r} given twice (as {f.name!r} and its flag's name)")
        if value is not None:
            values[group][f.name] = _value(f, hint_type, value, f"{where}: option {key!r}")
    return CriticOptions(**{group: _group(cls, values[group], where) for group, cls in GROUPS.items()})


def _value(f: dataclasses.Field, hint, value: Any, where: str) -> Any:
    """One spec value as the field's type reads it.

    Raises:
        ValueError: a switch given a non-bool, a bool given to a valued option, or a value the type or the choices
            refuse (naming ``where`` and the value).
    """
    convert = field_converter(f, hint)
    if convert is None:
        if not isinstance(value, bool):
            raise BadInputError(f"{where} is a switch: true or false, got {value!r}")
        return value
    if isinstance(value, bool | list | dict):
        raise BadInputError(f"{where} takes one value, got {value!r}")
    try:
        converted = convert(str(value))
    except OptionValueError as err:
        raise BadInputError(f"{where}: {err}") from None
    except ValueError:
        raise BadInputError(f"{where}: invalid {convert.__name__} value {value!r}") from None
    choices = f.metadata.get("choices")
    if choices is not None and converted not in choices:
        listed = ", ".join(map(repr, choices))
        raise BadInputError(f"{where}: invalid choice {value!r} (choose from {listed})")
    return converted


def _group(cls: type, values: dict[str, Any], where: str):
    """``cls(**values)``, its own checks naming ``where``.

    Raises:
        ValueError: what the dataclass refuses (e.g. ``DecodingConfig(temperature=0)``).
    """
    try:
        return cls(**values)
    except ValueError as err:
        raise BadInputError(f"{where}: {err}") from None
