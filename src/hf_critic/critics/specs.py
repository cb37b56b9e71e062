"""Critics from specs, without the command line: a critic spec (the mapping a cascade file holds for one critic) read
into a :class:`CriticSpec` and built by :func:`build_critic`; a whole cascade file by :func:`load_cascade`.

A cascade file lists the critics, cheapest first (Trust or Escalate, Jung, Brahman, Choi, ICLR 2025, §3); each is
computed, with the options ``hf-critic compare`` would take for it, or recorded (verdicts read from files)::

    critics:
      - name: smollm2-135m-critic
        options: {model: smollm2-135m-critic}
      - name: default-critic
        options: {template: mtbench, verdict: probability, explanation: none, swap: true}
      - name: auto-j-13b
        recorded:
          benchmark: autoj:../shared/data/autoj/test/testdata_pairwise.jsonl   # the rows the files follow
          verdicts: ../shared/data/autoj/outputs/pairwise_example_output.jsonl
          swapped: ../shared/data/autoj/outputs/pairwise_exchange_example_output.jsonl
        price_per_call: 0.002   # optional: the summary's money
        delta_share: 0.8        # optional: this critic's share of delta (the others split the rest equally)

Recorded critics may instead name ``critiques: FILE``, the output of an earlier ``hf-critic compare`` run. A
``generic:`` benchmark is read as ``meta-eval`` reads it with flags: ``columns:`` (a mapping or ``"a=b,c=d"``),
``gold_label_map:``, ``label_columns:``, ``aggregate:``, ``coerce_text:`` (``label_map:`` is the verdict files'
convention). Paths are read from the working directory.

A critic may also be a baseline that needs no model (:mod:`hf_critic.critics.baselines`): ``baseline: longer-wins``
(the longer response wins, with a confidence) or ``baseline: label-prior`` (the calibration rows' most frequent human
label, at its share; fitted by ``hf-critic calibrate``), the bare string ``longer-wins`` short for ``{name:
longer-wins, baseline: longer-wins}`` (and ``label-prior`` likewise); or a jury of critics judged as one
(:mod:`hf_critic.critics.jury`)::

      - name: local-jury
        jury:
          aggregate: fitted      # vote | mean | fitted (fitted by `hf-critic calibrate` on its calibration rows)
          fit_share: 0.5         # fitted: the share of calibration questions that fit it (the rest set thresholds)
          members:               # any critics above (not a jury), each with its own name
            - name: smollm2-135m-critic
              options: {model: smollm2-135m-critic}
            - longer-wins

A critic may also be of a kind registered in the running process (:func:`hf_critic.critics.registry.register`):
``kind: NAME`` with its ``options:``, built by the kind's ``from_spec(options, where)``.

A computed critic's ``options:`` are read into the dataclasses the command line is generated from
(:func:`hf_critic.critics.options.critic_options`), and :func:`~hf_critic.critics.computed.build_computed` builds the
critic from them, as ``hf-critic compare`` does from its flags: a spec and a command line with the same options build
the same critic.
Every spec of a file is read and checked before any critic is built (no model loads before a typo is found).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError
from ..core.keys import check_keys
from .computed import build_computed
from .options import CriticOptions, critic_options
from .registry import critic_class

__all__ = [
    "BUILDERS",
    "COMMAND_OPTIONS",
    "CriticSpec",
    "JurySpec",
    "build_critic",
    "build_stage",
    "load_cascade",
    "read_spec",
    "read_specs",
]

#: A recorded critic's options for reading a ``generic:`` benchmark, as ``meta-eval`` takes them by flags
#: (``--columns``, ``--label-map``, ``--label-columns``, ``--aggregate``, ``--coerce-text``): {key: loader argument}.
BENCHMARK_OPTIONS = {
    "columns": "columns",
    "gold_label_map": "label_map",
    "label_columns": "label_columns",
    "aggregate": "aggregate",
    "coerce_text": "coerce_text",
}

#: The keys of a cascade file, of one of its critics, and of a recorded critic's ``recorded:`` mapping.
FILE_KEYS = ("critics",)
CRITIC_KEYS = ("name", "kind", "options", "recorded", "jury", "baseline", "price_per_call", "delta_share")
JURY_KEYS = ("members", "aggregate", "fit_share")
RECORDED_KEYS = ("benchmark", "verdicts", "swapped", "field", "label_map", "critiques", *BENCHMARK_OPTIONS)
#: The options of ``hf-critic compare`` that belong to the command (its data, gold labels and output), not to one
#: critic of a cascade: refused in a critic's ``options:``.
COMMAND_OPTIONS = frozenset(
    {
        "data",
        "output",
        "overwrite",
        "columns",
        "format",
        "split",
        "limit",
        "sample",
        "sample_seed",
        "referenced",
        "label_map",
        "label_columns",
        "aggregate",
        "coerce_text",
        "human_label",
        "two_way",
        "cascade",
        "calibration",
    }
)
_REFUSED = dict.fromkeys(COMMAND_OPTIONS, "belongs to the command line, not to one critic")

#: The keys that say what kind of critic an entry is; an entry has at most one (none: computed with no options),
#: except ``kind:`` (a kind of :mod:`hf_critic.critics.registry`), which takes its ``options:``.
_KIND_KEYS = {"options": "computed", "recorded": "recorded", "jury": "jury", "baseline": "baseline"}


@dataclass(frozen=True)
class JurySpec:
    """A jury's members and how their verdicts are aggregated (:class:`~hf_critic.critics.jury.Jury`).

    Attributes:
        members: the members' specs (none of them a jury).
        aggregate: ``vote``, ``mean`` or ``fitted`` (checked by the jury).
        fit_share: with ``fitted``, the share of calibration questions that fit it, in (0, 1).
    """

    members: tuple[CriticSpec, ...]
    aggregate: str
    fit_share: float


@dataclass(frozen=True)
class CriticSpec:
    """One critic as a cascade file states it, read and checked, not yet built.

    Attributes:
        name: its name (the calibration file, the ``critique_critic`` column and the summary name it).
        kind: ``computed``, ``recorded``, ``baseline``, ``jury`` or ``registered`` (a ``kind:`` of the registry):
            the key of :data:`BUILDERS` that builds it.
        settings: what the kind needs: :class:`~hf_critic.critics.options.CriticOptions` (computed), the
            ``recorded:`` mapping, the baseline's name, or a :class:`JurySpec`.
        where: the file and the critic (``"cascade.yaml: critics[0]"``), for messages.
        price_per_call: money per request, >= 0, or None (not priced).
        delta_share: its share of the cascade's delta, in (0, 1], or None.
    """

    name: str
    kind: str
    settings: Any
    where: str
    price_per_call: float | None = None
    delta_share: float | None = None

    @property
    def swap(self) -> bool:
        """Whether pairs are judged in both orders (a computed critic's ``swap`` option; False for the others)."""
        return self.kind == "computed" and self.settings.pair.swap


# ------------------------------------------------------------------------------------------------ reading specs
def read_spec(entry: Any, where: str, in_jury: bool = False) -> CriticSpec:
    """One critic entry of a cascade file (or of a jury's members) as a :class:`CriticSpec`, every key and value
    checked; nothing is loaded.

    Args:
        entry: the mapping (or a baseline's bare name, ``longer-wins`` / ``label-prior``).
        where: the file and the entry's index, e.g. ``"cascade.yaml: critics[0]"``.
        in_jury: the entry is a jury's member (no jury, no ``delta_share``).

    Raises:
        ValueError: one line naming ``where``, the critic and the key or value: no name, an unknown key, two kinds,
            an option ``compare`` lacks or refuses, a malformed ``recorded:`` / ``jury:``.
    """
    from .baselines import BASELINES

    if isinstance(entry, str) and entry in BASELINES:
        entry = {"name": entry, "baseline": entry}
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
        raise BadInputError(f"{where}: each critic needs a name")
    if in_jury and "delta_share" in entry:
        raise BadInputError(f"{where}: delta_share belongs to a critic of the cascade, not to a jury member")
    name = entry["name"].strip()
    # `threshold:`, `weight:` or a typo (`option:`, `recroded:`) would otherwise leave the embedded default critic
    check_keys(entry, CRITIC_KEYS, f"{where} ({name})", "a critic")
    kinds = [k for k in _KIND_KEYS if k in entry]
    if "kind" in entry:
        kind, settings = "registered", _read_registered(entry, where, name)
    elif len(kinds) > 1:
        raise BadInputError(
            f"{where}: a critic is one of computed (options), recorded, jury or baseline, not {' and '.join(kinds)}"
        )
    else:
        kind = _KIND_KEYS[kinds[0]] if kinds else "computed"
        settings = _READERS[kind](entry.get(kinds[0]) if kinds else None, where, name, in_jury)
    share = _delta_share(entry.get("delta_share"), f"{where} ({name})")
    return CriticSpec(name, kind, settings, where, _price(entry.get("price_per_call"), where), share)


def read_specs(entries: list, where: str, in_jury: bool = False) -> list[CriticSpec]:
    """The specs of a list of critic entries (a cascade's critics, or a jury's members: ``in_jury``), names unique.

    Raises:
        ValueError: see :func:`read_spec`, or a name used twice (naming ``where`` and the index).
    """
    specs, names = [], set()
    for i, entry in enumerate(entries):
        spec = read_spec(entry, f"{where}[{i}]", in_jury)
        if spec.name in names:
            raise BadInputError(f"{where}[{i}]: the name {spec.name!r} is used twice")
        names.add(spec.name)
        specs.append(spec)
    return specs


def _read_registered(entry: dict, where: str, name: str) -> tuple[str, dict]:
    """A ``kind: NAME`` entry's settings, ``(NAME, options)``: a kind of :mod:`hf_critic.critics.registry` (looked up
    now, so an unknown kind is named before anything is built) with its ``options:`` mapping, which the kind's
    ``from_spec`` checks when it is built."""
    others = [k for k in _KIND_KEYS if k in entry and k != "options"]
    if others:
        raise BadInputError(f"{where}: a critic of kind: {entry['kind']!r} takes options:, not {' and '.join(others)}")
    critic_class(str(entry["kind"]), f"{where} ({name})")
    options = entry.get("options") or {}
    if not isinstance(options, dict):
        raise BadInputError(f"{where} ({name}): options must be a mapping, got {type(options).__name__}")
    return str(entry["kind"]), dict(options)


def _read_computed(options, where: str, name: str, in_jury: bool) -> CriticOptions:
    return critic_options(options or {}, f"{where} ({name})", _REFUSED)


def _read_baseline(baseline, where: str, name: str, in_jury: bool) -> str:
    from .baselines import BASELINES

    if baseline not in BASELINES:
        raise BadInputError(f"{where}: baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
    return baseline


def _read_recorded(spec, where: str, name: str, in_jury: bool) -> dict:
    if not isinstance(spec, dict):
        raise BadInputError(f"{where}: recorded must be a mapping (benchmark + verdicts [+ swapped], or critiques)")
    check_keys(spec, RECORDED_KEYS, f"{where}: recorded", "recorded verdicts")
    if "critiques" in spec and ({"benchmark", "verdicts", "swapped", "field", "label_map"} & set(spec)):
        raise BadInputError(
            f"{where}: recorded: critiques: FILE stands alone (an earlier run's output); benchmark, "
            "verdicts, swapped, field and label_map describe a published judge's files instead"
        )
    if "critiques" not in spec and ("benchmark" not in spec or "verdicts" not in spec):
        raise BadInputError(
            f"{where}: recorded verdicts need benchmark: FORMAT:PATH (the rows the files follow) and "
            "verdicts: FILE (and swapped: FILE for the other order), or critiques: FILE"
        )
    return spec


def _read_jury(spec, where: str, name: str, in_jury: bool) -> JurySpec:
    from ..selective.jury import FIT_SHARE

    if in_jury:
        raise BadInputError(f"{where}: a jury member cannot be a jury itself")
    if (
        not isinstance(spec, dict)
        or not isinstance(spec.get("members"), list)
        or not spec["members"]
        or ("aggregate" not in spec)
    ):
        raise BadInputError(f"{where}: jury needs a non-empty list members: and aggregate: vote | mean | fitted")
    check_keys(spec, JURY_KEYS, f"{where} ({name}): jury", "a jury")
    members = read_specs(spec["members"], f"{where}: jury members", in_jury=True)
    share = _fit_share(spec.get("fit_share", FIT_SHARE), f"{where} ({name})")
    return JurySpec(tuple(members), spec["aggregate"], share)


_READERS: dict[str, Callable[[Any, str, str, bool], Any]] = {
    "computed": _read_computed,
    "recorded": _read_recorded,
    "baseline": _read_baseline,
    "jury": _read_jury,
}


def _price(price, where: str) -> float | None:
    if price is None:
        return None
    if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price) or price < 0:
        raise BadInputError(f"{where}: price_per_call must be a finite number >= 0, got {price!r}")
    return float(price)


def _delta_share(share, where: str) -> float | None:
    if share is None:
        return None
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise BadInputError(
            f"{where}: delta_share must be a number in (0, 1] (this critic's share of the cascade's "
            f"delta), got {share!r}"
        )
    return float(share)


def _fit_share(share, where: str) -> float:
    """A jury's ``fit_share:``, a number in (0, 1).

    Raises:
        ValueError: anything else, naming ``where`` and the value.
    """
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise BadInputError(
            f"{where}: jury fit_share must be a number in (0, 1) (the share of calibration questions that fit the "
            f"jury; the rest set the thresholds), got {share!r}"
        )
    return float(share)


# ------------------------------------------------------------------------------------------------ building critics
def build_critic(spec: CriticSpec, rows: int | None = None):
    """The critic of ``spec``, built by its kind's builder in :data:`BUILDERS`.

    Args:
        spec: from :func:`read_spec`.
        rows: the rows it will judge (caps a local critic's batch size), or None.

    Returns:
        A :class:`~hf_critic.critic.Critic` (computed), :class:`~hf_critic.selective.cascade.RecordedVerdicts`,
        a baseline (:class:`~hf_critic.critics.baselines.LongerWins`, :class:`~hf_critic.critics.baselines.LabelPrior`),
        a :class:`~hf_critic.critics.jury.Jury` or a registered kind.

    Raises:
        ValueError, ModelNotFoundError, RecordError: what the kind's builder raises (a model that does not load,
            verdict files that cannot be read).
    """
    return BUILDERS[spec.kind](spec, rows)


def build_stage(spec: CriticSpec, rows: int | None = None):
    """``spec`` built as a :class:`~hf_critic.selective.cascade.CascadeStage` (its critic, swap, price and delta share)."""
    from ..selective.cascade import CascadeStage

    critic = build_critic(spec, rows)
    return CascadeStage(spec.name, critic, spec.swap, spec.price_per_call, delta_share=spec.delta_share)


def _build_computed(spec: CriticSpec, rows: int | None):
    return build_computed(spec.settings, inputs=rows)


def _build_baseline(spec: CriticSpec, rows: int | None):
    return critic_class(spec.settings).from_spec({}, f"{spec.where} ({spec.name})")


def _build_registered(spec: CriticSpec, rows: int | None):
    kind, options = spec.settings
    return critic_class(kind).from_spec(options, spec.where)


def _build_recorded(spec: CriticSpec, rows: int | None):
    from ..loaders import load_benchmark, parse_benchmark

    RecordedVerdicts = critic_class("recorded")
    recorded, where = spec.settings, spec.where
    if "critiques" in recorded:
        return RecordedVerdicts.from_critiques(spec.name, str(recorded["critiques"]))
    _, fmt, path = parse_benchmark(str(recorded["benchmark"]), f"{where}: recorded: benchmark")
    benchmark = load_benchmark(fmt, path, **_benchmark_options(recorded, fmt, where))
    return RecordedVerdicts.from_verdict_files(
        spec.name,
        benchmark,
        str(recorded["verdicts"]),
        recorded.get("swapped"),
        recorded.get("field"),
        recorded.get("label_map"),
    )


def _benchmark_options(spec: Mapping, fmt: str, where: str) -> dict:
    """The loader arguments of a recorded critic's ``benchmark:``: for ``generic``, the pairwise task and the
    column map and gold options of :data:`BENCHMARK_OPTIONS` (``columns`` as a mapping or ``"a=b,c=d"``).

    Raises:
        ValueError: such an option for another format (its loader knows its own columns), or a malformed column map.
    """
    from ..io import parse_columns

    given = {key: spec[key] for key in BENCHMARK_OPTIONS if spec.get(key) is not None}
    if fmt != "generic":
        if given:
            raise BadInputError(f"{where}: {', '.join(given)} read a generic: benchmark's own columns, not {fmt}:")
        return {}
    options = {"task": "pairwise"}
    for key, value in given.items():
        if key == "columns" and isinstance(value, dict):
            value = {str(k): str(v) for k, v in value.items()}
        elif key == "columns":
            value = parse_columns(str(value))
        options[BENCHMARK_OPTIONS[key]] = value
    return options


def _build_jury(spec: CriticSpec, rows: int | None):
    jury: JurySpec = spec.settings
    members = [build_stage(member, rows) for member in jury.members]
    return critic_class("jury")(members, jury.aggregate, where=f"jury {spec.name!r}", fit_share=jury.fit_share)


#: Each kind of critic spec and the function that builds it: ``(spec, rows) -> critic``.
BUILDERS: dict[str, Callable[[CriticSpec, int | None], Any]] = {
    "computed": _build_computed,
    "recorded": _build_recorded,
    "baseline": _build_baseline,
    "jury": _build_jury,
    "registered": _build_registered,
}


# ------------------------------------------------------------------------------------------------ cascade files
def load_cascade(path: str | Path, rows: int | None = None) -> list:
    """The critics of a cascade file (module docstring), cheapest first, as
    :class:`~hf_critic.selective.cascade.CascadeStage`: every critic's spec read and checked first, then each built.

    Args:
        path: the YAML file.
        rows: the rows the cascade will judge (caps the batch sizes of local critics), or None.

    Returns:
        One stage per critic of ``critics:``, in the file's order, each with its delta share.

    Raises:
        ValueError: one line naming the file (and the critic, by index and name, and the key or value): a missing or
            malformed file, a critic without a name (or a repeated one), an unknown key, an option ``compare`` lacks
            or refuses, delta shares that leave a critic none, or recorded verdicts that cannot be read.

    Example:
        >>> import hf_critic
        >>> stages = hf_critic.load_cascade("cascade.yaml")  # doctest: +SKIP
        >>> [stage.name for stage in stages]  # doctest: +SKIP
        ['smollm2-135m-critic', 'longer-wins']
    """
    from ..selective.cascade import delta_shares

    specs = read_cascade(path)
    stages = [build_stage(spec, rows) for spec in specs]
    delta_shares(stages, f"cascade file {path}")  # the shares must leave every critic some of delta
    return stages


def read_cascade(path: str | Path) -> list[CriticSpec]:
    """The critic specs of a cascade file, read and checked, nothing built.

    Raises:
        ValueError: see :func:`load_cascade` (all but what building a critic finds).
    """
    import yaml

    try:
        spec = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError(f"cascade file {path}: no such file") from None
    except yaml.YAMLError as err:
        raise BadInputError(f"cascade file {path}: not YAML ({err})") from None
    critics = spec.get("critics") if isinstance(spec, dict) else None
    if isinstance(spec, dict):  # `thresholds:` or `target:` would be ignored: thresholds come from the calibration
        check_keys(spec, FILE_KEYS, f"cascade file {path}", "a cascade file (thresholds come from --calibration)")
    if not isinstance(critics, list) or not critics:
        raise BadInputError(f"cascade file {path}: expected a mapping with a non-empty list `critics:`")
    return read_specs(critics, f"{path}: critics")
