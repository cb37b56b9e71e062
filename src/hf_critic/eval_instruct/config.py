"""The Eval-Instruct recipe: one YAML file describes a whole data-construction run.

See ``recipes/eval_instruct/*.yaml`` for complete examples. Top-level keys (unknown keys are errors, so a typo never
silently falls back to a default):

``variant``
    ``v2`` (CritiqueLLM v2 §3.2: referenced pointwise grading, multi-path prompting, cross validation: four
    settings) or ``v1`` (CritiqueLLM v1 §3.2.3: two-turn dialogue prompting: pointwise referenced and
    reference-free).
``language``
    ``en`` or ``zh``: the language of queries, critiques and prompts.
``output_dir``, ``cache``, ``seed``, ``progress``
    where outputs go; the SQLite request cache (default ``<output_dir>/cache.sqlite``); the seed of every random
    draw; progress bars.
``max_rejected_share``
    optional, in [0, 1]: the run fails when a stage loses more than this share of its items (a run with no rows
    always fails).
``teacher``
    an :class:`EndpointConfig` (the OpenAI-compatible teacher, GPT-4 in the papers).
``queries``
    :class:`QueriesConfig`: seed queries, augmentation, difficulty scoring, balancing.
``generators``
    a list of :class:`GeneratorConfig`: the models whose responses are critiqued.
``references``, ``pairs``, ``filters``, ``swap_augmentation``, ``hub``
    see :class:`ReferencesConfig`, :class:`PairsConfig`, :class:`~hf_critic.eval_instruct.filters.FilterConfig`,
    :class:`HubConfig`.

Strings may use ``$VAR`` / ``${VAR}`` (expanded from the environment) and ``~``. Relative paths are relative to the
working directory. API keys are never part of a config: an endpoint names the environment variable to read.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from ..backends.cache import cache_key
from ..backends.retry import RetryPolicy
from ..core.errors import BadInputError
from ..core.keys import unknown_keys_message
from .filters import FilterConfig

__all__ = [
    "EndpointConfig",
    "EvalInstructConfig",
    "GeneratorConfig",
    "HubConfig",
    "PairsConfig",
    "QueriesConfig",
    "ReferencesConfig",
    "load_config",
]


class ConfigError(BadInputError):
    """An invalid recipe: the message names the file and the key path (e.g. ``teacher.retry: unknown key(s)``)."""


@dataclass(frozen=True)
class EndpointConfig:
    """An OpenAI-compatible endpoint (the teacher, or a generator behind a server).

    Attributes:
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``.
        model: model name sent with every request (``transformers serve <path>`` pins ``<path>``).
        api_key_env: environment variable holding the key (default ``OPENAI_API_KEY``); the key itself never
            appears in a config, cache, log or card.
        concurrency: requests in flight (>= 1).
        timeout: seconds per attempt.
        retry: when and how often a failed attempt is retried: a :class:`~hf_critic.backends.retry.RetryPolicy`
            (YAML: a mapping of any of its fields, e.g. ``retry: {max_retries: 8, max_backoff: 120}``).
        sampling: request parameters (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ...); CritiqueLLM's
            scripts use temperature 0 for the teacher.
        price_input_per_million / price_output_per_million: token prices for the cost column.
        grammar: send each teacher stage a GBNF grammar built from that stage's expected output format (query lines,
            difficulty lines, a critique ending in the template's verdict): llama.cpp's server only (its ``grammar``
            field); lets a small local teacher produce parseable answers (format, not quality).
    """

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    timeout: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sampling: dict = field(default_factory=dict)
    price_input_per_million: float = 0.0
    price_output_per_million: float = 0.0
    grammar: bool = False


@dataclass(frozen=True)
class GeneratorConfig:
    """A model whose responses get critiqued (v2 §3.2.1: 10 models of different quality).

    Exactly one of ``endpoint`` (an :class:`EndpointConfig` mapping: ``base_url``, ``model``, ...) or
    ``transformers`` (a local folder or Hub id, run in-process with
    :class:`~hf_critic.backends.transformers.TransformersBackend`) is given.

    Attributes:
        name: unique short name, stored in the ``generator`` column (e.g. ``gpt-4``).
        endpoint: the server to ask.
        transformers: the local model.
        max_new_tokens / batch_size: decoding budget and batch size of a local model.
        system: optional system message sent before each query.
    """

    name: str
    endpoint: EndpointConfig | None = None
    transformers: str | None = None
    max_new_tokens: int = 512
    batch_size: int = 8
    system: str | None = None


@dataclass(frozen=True)
class AugmentationConfig:
    """Self-instruct query augmentation (v2 Appendix A 'Generation', v1 §3.2.1).

    Attributes:
        rounds: generation prompts sent (each asks for 10 queries); 0 disables augmentation.
        examples: in-context seed questions per prompt (the paper shows 3).
        format_examples: seed ``@@question@@ &&category&&`` lines per prompt (the paper shows 10).
        rouge_l_max: reject a query whose ROUGE-L F1 with a seed query exceeds this.
        self_bleu_max: reject a query whose Self-BLEU against the queries kept so far exceeds this.
        sampling: request parameters for these prompts (a per-round ``seed`` is added).
    """

    rounds: int = 0
    examples: int = 3
    format_examples: int = 10
    rouge_l_max: float = 0.7
    self_bleu_max: float = 0.7
    sampling: dict = field(default_factory=lambda: {"temperature": 1.0})


@dataclass(frozen=True)
class QueriesConfig:
    """Where queries come from and how they are filtered (v2 §3.2.1 and Appendix A; v1 §3.2.1).

    Attributes:
        seeds: JSONL / JSON / CSV / parquet file (or Hub id) with ``question`` and ``category`` columns.
        columns: ``{canonical: source_column}`` renames for the seed file.
        keep_seeds: seed queries are part of the pool (besides augmented ones).
        augmentation: an :class:`AugmentationConfig` (None: no augmentation).
        difficulty: score difficulty 1-3 with the teacher (Appendix A 'Evaluation'), three queries per prompt.
        balance_total: number of queries kept, balanced over the categories and then over difficulty
            (v1: 1,000); None keeps all.
        limit: keep only the first N seed queries (quick trials).
    """

    seeds: str
    columns: dict = field(default_factory=dict)
    keep_seeds: bool = True
    augmentation: AugmentationConfig | None = None
    difficulty: bool = False
    balance_total: int | None = None
    limit: int | None = None


@dataclass(frozen=True)
class ReferencesConfig:
    """Pseudo references (v2 §3.2.1): the best generator's answers, optionally manually revised.

    Attributes:
        generator: name of the generator whose responses are the references (GPT-4 in the paper).
        revisions: optional JSONL of manual revisions with ``reference`` and ``query_id`` or ``question``.
        grade_reference_generator: also critique the reference generator's own responses (the paper grades
            all 10 models, GPT-4 included).
    """

    generator: str
    revisions: str | None = None
    grade_reference_generator: bool = True


@dataclass(frozen=True)
class PairsConfig:
    """How pairwise items are formed from the pointwise ones (v2 §3.2.2).

    Attributes:
        per_query: at most this many response pairs per query, drawn at random (None: all pairs of generators).
    """

    per_query: int | None = None


@dataclass(frozen=True)
class HubConfig:
    """Publishing the result as a Hub dataset with a card rendered from ``dataset_cards/``.

    Attributes:
        repo_id: ``org/name`` to push to (None: no push; ``--push-to-hub`` sets it).
        private: create the repository private.
        token_env: environment variable holding the Hub token (default ``HF_TOKEN``).
        license: the card's licence id (teacher outputs may carry the API provider's terms: set it knowingly).
        pretty_name: the card's title.
        card_template: the card template path (default: ``dataset_cards/eval_instruct.md``, shipped in the package).
    """

    repo_id: str | None = None
    private: bool = True
    token_env: str = "HF_TOKEN"
    license: str = "other"
    pretty_name: str = "Eval-Instruct critiques"
    card_template: str | None = None


@dataclass(frozen=True)
class EvalInstructConfig:
    """A whole Eval-Instruct run; see the module docstring for the YAML layout.

    Attributes:
        teacher: the teacher endpoint.
        queries: query sources and filters.
        generators: at least one; two or more for pairwise data.
        references: the pseudo-reference policy.
        variant: ``"v2"`` or ``"v1"``.
        language: ``"en"`` or ``"zh"``.
        output_dir: outputs (``dataset/``, ``hub/``, ``report.json``, ``failures.jsonl``).
        cache: SQLite request cache (default ``<output_dir>/cache.sqlite``).
        seed: seed of the random draws.
        pairs / filters / hub: see their classes.
        swap_augmentation: add order-swapped copies of pairwise items (v2 §3.3, following Auto-J).
        progress: progress bars.
        max_rejected_share: a run fails (one line naming the stage and its main reason, nothing saved or pushed) when
            a stage loses more than this share in [0, 1] of its items to rejections and failures; None (default):
            only a run with no rows at all fails.
    """

    teacher: EndpointConfig
    queries: QueriesConfig
    generators: tuple[GeneratorConfig, ...]
    references: ReferencesConfig
    variant: str = "v2"
    language: str = "en"
    output_dir: str = "outputs/eval_instruct"
    cache: str | None = None
    seed: int = 0
    pairs: PairsConfig = field(default_factory=PairsConfig)
    filters: FilterConfig = field(default_factory=FilterConfig)
    swap_augmentation: bool = True
    hub: HubConfig = field(default_factory=HubConfig)
    progress: bool = True
    max_rejected_share: float | None = None

    @property
    def cache_path(self) -> Path:
        """The request cache file."""
        return Path(self.cache) if self.cache else Path(self.output_dir) / "cache.sqlite"

    def fingerprint(self) -> str:
        """A short hash of the configuration (no credentials are part of it), recorded in the report and card."""
        return cache_key(config=dataclasses.asdict(self))[:16]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the configuration (no credentials are part of it)."""
        return dataclasses.asdict(self)


# ------------------------------------------------------------------------------------------------------------ loading
_NESTED = {
    "teacher": EndpointConfig,
    "queries": QueriesConfig,
    "references": ReferencesConfig,
    "pairs": PairsConfig,
    "filters": FilterConfig,
    "hub": HubConfig,
    "augmentation": AugmentationConfig,
    "endpoint": EndpointConfig,
    "retry": RetryPolicy,
}


def _expand(value: Any) -> Any:
    if isinstance(value, str):
        expanded = os.path.expandvars(value)
        return os.path.expanduser(expanded) if expanded.startswith("~") else expanded
    if isinstance(value, Mapping):
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value


def _build(cls, data: Any, where: str):
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: must be a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = unknown_keys_message(data, known, where)
    if unknown:
        raise ConfigError(unknown)
    kwargs = {}
    for name, value in data.items():
        path = f"{where}.{name}" if where else name
        if name == "generators":
            if not isinstance(value, list) or not value:
                raise ConfigError(f"{path}: must be a non-empty list")
            value = tuple(_build(GeneratorConfig, v, f"{path}[{i}]") for i, v in enumerate(value))
        elif name in _NESTED and value is not None:
            value = _build(_NESTED[name], value, path)
        kwargs[name] = value
    missing = [
        n
        for n, f in known.items()
        if n not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where or 'config'}: missing key(s) {missing}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where or 'config'}: {err}") from None


def _validate(config: EvalInstructConfig, where: str) -> None:
    if config.variant not in ("v1", "v2"):
        raise ConfigError(f"{where}: variant must be 'v1' or 'v2', got {config.variant!r}")
    if config.language not in ("en", "zh"):
        raise ConfigError(f"{where}: language must be 'en' or 'zh', got {config.language!r}")
    share = config.max_rejected_share
    if share is not None and not (isinstance(share, (int, float)) and 0 <= share <= 1):
        raise ConfigError(f"{where}: max_rejected_share must be a number in [0, 1], got {share!r}")
    names = [g.name for g in config.generators]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: generator names must be unique, got {names}")
    for i, g in enumerate(config.generators):
        if (g.endpoint is None) == (g.transformers is None):
            raise ConfigError(
                f"{where}: generators[{i}] ({g.name!r}) needs exactly one of 'endpoint' / 'transformers'"
            )
    if config.references.generator not in names:
        raise ConfigError(f"{where}: references.generator {config.references.generator!r} is not one of {names}")
    for endpoint, path in [(config.teacher, "teacher")] + [
        (g.endpoint, f"generators.{g.name}.endpoint") for g in config.generators if g.endpoint
    ]:
        lowered = {k.lower() for k in endpoint.sampling}
        if {"api_key", "authorization"} & lowered:
            raise ConfigError(f"{where}: {path}.sampling holds a credential; name the variable in api_key_env")
        if endpoint.concurrency < 1 or endpoint.timeout <= 0:
            raise ConfigError(f"{where}: {path}: concurrency >= 1 and timeout > 0 are required")
    q = config.queries
    if q.balance_total is not None and q.balance_total < 1:
        raise ConfigError(f"{where}: queries.balance_total must be >= 1")
    if config.pairs.per_query is not None and config.pairs.per_query < 1:
        raise ConfigError(f"{where}: pairs.per_query must be >= 1")


def config_from_dict(data: Mapping[str, Any], where: str = "config") -> EvalInstructConfig:
    """Build and validate an :class:`EvalInstructConfig` from a parsed YAML mapping.

    Raises:
        ConfigError: unknown or missing keys, wrong types, an unknown variant / language, duplicate generator names,
            a generator with both or neither of ``endpoint`` / ``transformers``, a reference generator that is not a
            generator, or a credential inside ``sampling`` (the message names ``where`` and the key).
    """
    config = _build(EvalInstructConfig, _expand(dict(data)), "")
    _validate(config, where)
    return config


def load_config(path: str | os.PathLike, overrides: Mapping[str, Any] | None = None) -> EvalInstructConfig:
    """Read a recipe YAML file (``recipes/eval_instruct/*.yaml``).

    Args:
        path: the YAML file.
        overrides: top-level keys replacing the file's (e.g. ``{"output_dir": ...}`` from the command line).

    Raises:
        ConfigError: no such file, invalid YAML or content (see :func:`config_from_dict`).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such recipe file (see recipes/eval_instruct/*.yaml)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: a recipe must be a YAML mapping")
    data = {**data, **(overrides or {})}
    try:
        return config_from_dict(data, str(path))
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
