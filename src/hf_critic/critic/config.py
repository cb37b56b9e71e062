"""How a critic is prompted and how its verdicts are read, as one dataclass the command line is generated from, and
the types every option's value is read with (:func:`positive_int`, :func:`fraction` ...; :func:`field_converter`).

:class:`CriticConfig` holds the critic's options (the CritiqueLLM v2 §3.1 template and language, a rubric and its
scale, the truncation policy, and the verdict read-out of :mod:`hf_critic.critic.verdicts`); each field's metadata is the
help text of its option, so ``hf-critic grade / compare / refine / meta-eval`` build their ``--template`` ...
``--min-verdict-mass`` options from the fields (:func:`~hf_critic.commands.arguments.add_dataclass_args`, as TRL
builds its parsers from dataclasses), and :meth:`CriticConfig.critic_kwargs` turns the parsed values into
:class:`~hf_critic.critic.Critic`'s keyword arguments. A new critic option is a new field.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError
from ..formats import DEFAULT_FAMILY, builtin_template_families
from .decoding import DecodingConfig
from .verdicts import DEFAULT_MIN_VERDICT_MASS, VerdictMode, VerdictPlan

__all__ = [
    "CriticConfig",
    "OptionValueError",
    "check_plan_options",
    "field_converter",
    "finite_float",
    "fraction",
    "non_negative_int",
    "option_field",
    "option_help",
    "parse_score_range",
    "positive_float",
    "positive_int",
    "probability",
]

logger = logging.getLogger(__name__)


def _help(text: str, **more: Any) -> dict[str, Any]:
    return {"help": text, **more}


def probability(text: str) -> float:
    """An option's probability: a finite number in [0, 1] (``--min-verdict-mass``).

    Raises:
        OptionValueError: not a number, not finite, or outside [0, 1].
    """
    value = finite_float(text)
    if not 0 <= value <= 1:
        raise OptionValueError(f"must lie in [0, 1], got {text}")
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


#: The argparse actions of an option that takes no value.
_SWITCHES = ("store_true", "store_false", "store_const")


def field_converter(f: dataclasses.Field, hint) -> Callable[[str], Any] | None:
    """How an option's text becomes the value of the dataclass field ``f`` (annotation ``hint``): the field's
    ``metadata["type"]``, else :func:`finite_float` for a float, else the annotation itself (``int``, ``str``); None
    for a switch (a bool field, or a ``store_true`` / ``store_false`` / ``store_const`` action), which takes no text;
    for a repeated option (a ``list[X]`` field), how one value is read.

    The command line (:func:`hf_critic.commands.arguments.add_dataclass_args`) and a critic spec
    (:func:`hf_critic.critics.options.critic_options`) convert through this one function, so a value means the same
    in both.
    """
    kind = _plain(hint)
    if kind is bool or f.metadata.get("action") in _SWITCHES:
        return None
    if typing.get_origin(kind) is list:  # a repeated option (``action="append"``): the type of one value
        kind = typing.get_args(kind)[0]
    return f.metadata.get("type") or (finite_float if kind is float else kind)


class OptionValueError(BadInputError):
    """An option's value outside its range (the message says the range and the value, e.g. "must be at least 1, got
    0"); the command line reports it after the flag, a critic spec after the file, the critic and the key."""


def finite_float(text: str) -> float:
    """An option's number: any finite float (``nan``, ``inf`` refused where they enter).

    Raises:
        OptionValueError: not a number, or not finite.
    """
    try:
        value = float(text)
    except ValueError:
        raise OptionValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise OptionValueError(f"not a finite number: {text!r}")
    return value


def _count(text: str, low: int) -> int:
    value = int(text)
    if value < low:
        raise OptionValueError(f"must be {'at least 1' if low == 1 else f'{low} or more'}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An option's count that must be at least 1 (``--limit 0`` would judge nothing after loading a model).

    Raises:
        OptionValueError: a number below 1 (ValueError: not an integer).
    """
    return _count(text, 1)


def non_negative_int(text: str) -> int:
    """An option's count that may be 0 (``--max-retries 0``: no retry).

    Raises:
        OptionValueError: a negative number (ValueError: not an integer).
    """
    return _count(text, 0)


def positive_float(text: str) -> float:
    """An option's finite number above 0 (seconds).

    Raises:
        OptionValueError: 0, a negative number, NaN or infinity.
    """
    value = finite_float(text)
    if value <= 0:
        raise OptionValueError(f"must be above 0, got {text}")
    return value


def fraction(text: str) -> float:
    """An option's share strictly between 0 and 1 (``--human-subset 0.1``).

    Raises:
        OptionValueError: a number outside (0, 1) (ValueError: not a number).
    """
    value = float(text)
    if not 0 < value < 1:
        raise OptionValueError(f"must be a fraction in (0, 1), got {value}")
    return value


def option_field(text: str, default: Any = dataclasses.MISSING, **more: Any) -> Any:
    """A dataclass field declaring one option: help ``text``, ``default`` (none: a required option; a list default
    becomes a factory) and the settings ``more`` (``choices``, ``metavar``, ``type``, ``action``, ``flag``)."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": text, **more})
    return field(default=default, metadata={"help": text, **more})


def option_help(cls: type, name: str) -> str:
    """The help text of the option of field ``name`` of ``cls`` (for a command that adds to it).

    Raises:
        KeyError: ``name`` is not a field of ``cls``.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    return fields[name].metadata["help"]


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
