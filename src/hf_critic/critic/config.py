"""How a critic is prompted and how its verdicts are read, as one dataclass the command line is generated from.

:class:`CriticConfig` holds the critic's options (the CritiqueLLM v2 §3.1 template and language, a rubric and its
scale, the truncation policy, and the verdict read-out of :mod:`hf_critic.critic.verdicts`); each field's metadata is the
help text of its option, so ``hf-critic grade / compare / refine / meta-eval`` build their ``--template`` ...
``--min-verdict-mass`` options from the fields (:func:`add_dataclass_args`, as TRL builds its parsers from
dataclasses), and :meth:`CriticConfig.critic_kwargs` turns the parsed values into
:class:`~hf_critic.critic.Critic`'s keyword arguments. A new critic option is a new field.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError
from ..formats import DEFAULT_FAMILY, builtin_template_families
from .decoding import DecodingConfig
from .verdicts import DEFAULT_MIN_VERDICT_MASS, VerdictMode, VerdictPlan

__all__ = [
    "CriticConfig",
    "add_dataclass_args",
    "check_plan_options",
    "dataclass_from_args",
    "parse_score_range",
]

logger = logging.getLogger(__name__)


def _help(text: str, **more: Any) -> dict[str, Any]:
    return {"help": text, **more}


def probability(text: str) -> float:
    """An option's probability: a finite number in [0, 1] (``--min-verdict-mass``).

    Raises:
        argparse.ArgumentTypeError: not a number, not finite, or outside [0, 1].
    """
    value = finite_float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {text}")
    return value


@dataclass(frozen=True)
class CriticConfig:
    """A critic's prompting and read-out options (defaults: the command line's).

    Attributes:
        template: template family, ``auto``, a built-in template name or a YAML file (None: ``critiquellm_v2``).
        rubric: a score rubric YAML file (Prometheus style), or None.
        score_range: ``"LOW,HIGH"``, the integer scale of pointwise grading for templates with a configurable scale.
        language: ``"en"`` or ``"zh"``.
        truncate: inputs longer than the context: ``middle``, ``skip`` or ``error``.
        constrain_verdict: force a verdict in the template's syntax under a GBNF grammar (llama.cpp).
        verdict: ``auto``, ``text``, ``probability`` or ``both`` (:func:`hf_critic.critic.verdicts.resolve_verdict`).
        explanation: ``none`` or ``first`` for probability read-outs (None: what ``auto`` picks, else ``first``).
        min_verdict_mass: read-outs with less verdict mass are ``low_mass`` (None: the library default), in [0, 1].
    """

    template: str | None = field(
        default=None,
        metadata=_help(
            f"template family ({', '.join(builtin_template_families())}), 'auto' (the family of a known published "
            f"critic, from the --model id or folder name; else {DEFAULT_FAMILY}), a built-in template name, or your "
            f"own YAML file (default: {DEFAULT_FAMILY})"
        ),
    )
    rubric: str | None = field(
        default=None,
        metadata=_help(
            "score rubric YAML (criteria + score_descriptions, Prometheus style; see examples/rubric_helpfulness.yaml) "
            "for templates that grade against one (prometheus2); replaces a rubric column; its scores set the scale",
            metavar="FILE",
        ),
    )
    score_range: str | None = field(
        default=None,
        metadata=_help(
            "integer scale of pointwise grading for templates with a configurable scale (prometheus2: default 1,5)",
            metavar="LOW,HIGH",
        ),
    )
    language: str = field(
        default="en", metadata=_help("language of the critiques (default: en)", choices=["en", "zh"])
    )
    truncate: str = field(
        default="middle",
        metadata=_help(
            "inputs longer than the context: cut the response(s) from the middle, skip the row, or stop "
            "(default: middle)",
            choices=["middle", "skip", "error"],
        ),
    )
    constrain_verdict: bool = field(
        default=False,
        metadata=_help(
            "force a verdict in the template's syntax onto critiques that lack one (a GBNF grammar; the "
            "explanation stays free); needs --engine llamacpp or a llama.cpp server",
            action="store_true",
        ),
    )
    verdict: str = field(
        default="auto",
        metadata=_help(
            "where the verdict comes from: text = parse the generated verdict (never a default); probability = "
            "read it from the critic's next-token distribution after the template's verdict prefix (expected score, "
            "or the label of highest probability, both orders averaged under --swap); both = probability, with the "
            "text verdict in critique_text_* columns; auto (default) = probability for the embedded critic, text for "
            "any other model",
            choices=["auto", "text", "probability", "both"],
        ),
    )
    explanation: str | None = field(
        default=None,
        metadata=_help(
            "for probability read-outs: none = verdict prefix right after the prompt (one prefill, no decoding, "
            "no explanation); first = generate the critique, cut its own verdict, then read the verdict after it "
            "(default: first; --verdict auto picks none for the embedded critic, measured better)",
            choices=["none", "first"],
        ),
    )
    min_verdict_mass: float | None = field(
        default=None,
        metadata=_help(
            "read-outs with less probability than this on the allowed verdicts get status low_mass, counted and "
            "never scored, in [0, 1] (default: hf_critic.critic.verdicts.DEFAULT_MIN_VERDICT_MASS, see the README)",
            type=probability,
        ),
    )
    tie_margin: float | None = field(
        default=None,
        metadata=_help(
            "reward critics (reward models): a pair whose rewards differ by at most this is a tie "
            "(default: the model's fitted tie band, else 0: a tie only on equal rewards)"
        ),
    )

    @classmethod
    def from_args(cls, args: argparse.Namespace, **replace: Any) -> CriticConfig:
        """The config of the parsed options (an option a command does not offer keeps its default)."""
        return dataclass_from_args(cls, args, **replace)

    def critic_kwargs(self) -> dict[str, Any]:
        """:class:`~hf_critic.critic.Critic`'s keyword arguments: the rubric loaded, the scale parsed, the default
        verdict mass filled in (``template`` is left to the caller, which may resolve ``auto``).

        Raises:
            ValueError: an unreadable rubric file (naming ``--rubric`` and the path) or an invalid rubric, or a bad
                ``score_range`` (see :func:`parse_score_range`).
        """
        from .verdicts import DEFAULT_MIN_VERDICT_MASS

        mass = DEFAULT_MIN_VERDICT_MASS if self.min_verdict_mass is None else self.min_verdict_mass
        return {
            "language": self.language,
            "rubric": self.load_rubric(),
            "score_range": parse_score_range(self.score_range),
            "truncate": self.truncate,
            "constrain_verdict": self.constrain_verdict,
            "verdict": self.verdict,
            "explanation": self.explanation,
            "min_verdict_mass": mass,
            "tie_margin": self.tie_margin,
        }

    def load_rubric(self):
        """The :class:`~hf_critic.prompts.Rubric` of :attr:`rubric`, or None.

        Raises:
            ValueError: the file is missing, a folder or unreadable (the message names ``--rubric`` and the path: the
                command line prints it as one line and exits 2), or an invalid rubric (see
                :func:`~hf_critic.prompts.load_rubric`).
        """
        from ..prompts import load_rubric

        if not self.rubric:
            return None
        try:
            return load_rubric(self.rubric)
        except OSError as err:  # FileNotFoundError from load_rubric; PermissionError, IsADirectoryError from the read
            reason = "it is a folder" if Path(self.rubric).is_dir() else (err.strerror or "no such file").lower()
            raise BadInputError(f"rubric=: cannot read the rubric file {str(self.rubric)!r}: {reason}") from None


def parse_score_range(text: str | None) -> tuple[int, int] | None:
    """``"LOW,HIGH"`` as two integers, or None for None / empty.

    Raises:
        ValueError: anything but two comma-separated integers with LOW < HIGH.
    """
    if not text:
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        low, high = (int(p) for p in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        low = high = None
    if low is None or low >= high:
        raise BadInputError(f"score_range= must be LOW,HIGH with integers LOW < HIGH, e.g. 1,10; got {text!r}")
    return low, high


def _plain(kind):
    """``X`` of an annotation ``X | None`` (``Optional[X]``); any other annotation as it is."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return kind


def add_dataclass_args(
    parser,
    cls: type,
    *,
    only: Iterable[str] | None = None,
    defaults: Mapping[str, object] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    show_default: bool = False,
) -> None:
    """One option per field of the dataclass ``cls``, generated from the fields (as TRL's parser does).

    The flag is ``--<field-name>`` (or ``metadata["flag"]``); the help, ``choices``, ``metavar``, ``type`` and
    ``action`` come from the field's metadata; a bool field without an ``action`` becomes a
    ``BooleanOptionalAction``; otherwise the type is the field's annotation (``X | None`` reads as ``X``). A field
    without a default is a required option; a ``default_factory`` gives each parse its own default.
    ``args.<field_name>`` holds the value. Options are added in the order of the fields.

    Args:
        parser: a parser or argument group.
        cls: the dataclass.
        only: field names to offer (default: all).
        defaults: per field name, a default replacing the dataclass's.
        overrides: per field name, ``add_argument`` keyword arguments replacing the generated ones (a command's own
            help text, ``action="append"``).
        show_default: append ``(default: %(default)s)`` to each help text.

    Raises:
        KeyError: a name in ``only``, ``defaults`` or ``overrides`` that is not a field, or an override for a field
            not offered.
        ValueError: a field without help text, or with ``type=bool`` (it would read "False" as True).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = (set(only or ()) | set(defaults or {}) | set(overrides or {})) - set(fields)
    if unknown:
        raise KeyError(f"not {cls.__name__} fields: {sorted(unknown)}")
    if only is not None and set(overrides or {}) - set(only):
        raise KeyError(f"overrides for options not added: {sorted(set(overrides) - set(only))}")
    hints = typing.get_type_hints(cls)
    for name, f in fields.items():
        if only is None or name in only:
            kwargs = _field_kwargs(f, hints[name], defaults or {}, show_default)
            kwargs.update((overrides or {}).get(name, {}))
            flag = f.metadata.get("flag", "--" + name.replace("_", "-"))
            parser.add_argument(flag, **kwargs)


def _field_kwargs(f: dataclasses.Field, hint, defaults: Mapping[str, object], show_default: bool) -> dict[str, Any]:
    """``add_argument`` keyword arguments of one dataclass field (see :func:`add_dataclass_args`).

    Raises:
        ValueError: no help text in the metadata, or ``type=bool``.
    """
    meta = {k: v for k, v in f.metadata.items() if k != "flag"}
    if not meta.get("help"):
        raise BadInputError(f"field {f.name!r} needs help text in its metadata")
    if meta.get("type") is bool:
        raise BadInputError(f"field {f.name!r}: type=bool reads 'False' as True; use a bool annotation")
    kwargs: dict[str, Any] = {"dest": f.name}
    kwargs["help"] = meta.pop("help") + (" (default: %(default)s)" if show_default else "")
    if f.name in defaults:
        kwargs["default"] = defaults[f.name]
    elif f.default is not dataclasses.MISSING:
        kwargs["default"] = f.default
    elif f.default_factory is not dataclasses.MISSING:
        kwargs["default"] = f.default_factory()
    else:
        kwargs["required"] = True
    kind = _plain(hint)
    if "action" in meta:
        kwargs["action"] = meta.pop("action")
    elif kind is bool:
        kwargs["action"] = argparse.BooleanOptionalAction
    else:
        kwargs["type"] = finite_float if kind is float else kind
    kwargs.update((k, v) for k, v in meta.items() if v is not None)
    return kwargs


def finite_float(text: str) -> float:
    """An option's number: any finite float (``nan``, ``inf`` refused where they enter).

    Raises:
        argparse.ArgumentTypeError: not a number, or not finite.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def dataclass_from_args(cls: type, args: argparse.Namespace, **replace: Any):
    """An instance of the dataclass ``cls`` from the parsed options of :func:`add_dataclass_args` (a field the command
    does not offer keeps its default; ``replace`` sets fields outright).

    Raises:
        TypeError: a field without a default that neither ``args`` nor ``replace`` gives.
    """
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **replace})


def check_plan_options(plan: VerdictPlan, explanation, min_verdict_mass: float, decoding) -> None:
    """Refuse what a generative critic's verdict plan would silently ignore, warn where it runs on.

    Args:
        plan: the resolved :class:`~hf_critic.critic.verdicts.VerdictPlan`.
        explanation: the ``--explanation`` asked for (None: not asked).
        min_verdict_mass: in [0, 1].
        decoding: the :class:`~hf_critic.critic.decoding.DecodingConfig` asked for, or None.

    Raises:
        ValueError: ``explanation`` or a non-default ``min_verdict_mass`` with text verdicts (both apply to
            probability read-outs only).
    """
    if plan.mode is VerdictMode.TEXT and explanation is not None:
        raise BadInputError(
            f"explanation={explanation}: applies to probability read-outs; text verdicts are parsed "
            "from the whole critique (use verdict=probability or both)"
        )
    if plan.mode is VerdictMode.TEXT and min_verdict_mass != DEFAULT_MIN_VERDICT_MASS:
        raise BadInputError(
            f"min_verdict_mass={min_verdict_mass}: applies to probability read-outs; a text verdict has no probability mass"
        )
    if not plan.generates and decoding is not None and decoding != DecodingConfig():
        logger.warning(
            "decoding options ignored: --explanation none reads the verdict right after the prompt, "
            "nothing is generated (use --explanation first to write a critique)"
        )
