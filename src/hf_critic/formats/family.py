"""What a critic family declares: :class:`CriticFamily` (its settings, prompt files, verdict formats, chat wrapper,
model names) and :class:`VerdictFormat` (how one verdict is written, read back and forced by a grammar).

A family is one published critic or prompt set (CritiqueLLM v1 / v2 / 6B, MT-Bench, Prometheus 2, Auto-J, JudgeLM,
PandaLM) or a kind of critic (reward models), declared once in a module of :mod:`hf_critic.formats` and registered in
:mod:`hf_critic.formats.registry`; the template lookup (:mod:`hf_critic.prompts`), the parsers, the verdict grammars
(:mod:`hf_critic.critic.grammars`), the help text of ``--template`` and ``--template auto`` all read the registry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hf_critic.parsing import ParsedCritique, parse

from ..core.errors import BadInputError
from ..core.schema import SETTINGS

__all__ = ["GENERATIVE", "REWARD", "CriticFamily", "VerdictFormat", "every_setting", "read_general"]

#: A critic that writes its critique (explanation and verdict) as text.
GENERATIVE = "generative"
#: A sequence-classification reward model: one number per (question, response), no explanation, order-free.
REWARD = "reward"
_SETTING_NAMES = tuple(s.name for s in SETTINGS)


def read_general(text: str, output: Any) -> ParsedCritique:
    """The general grammar (:func:`hf_critic.parsing.parse`), the parser of the CritiqueLLM and MT-Bench formats.

    Args:
        text: the critique as generated.
        output: the template's :class:`~hf_critic.prompts.OutputSpec` (its ``kind`` and ``score_range``).

    Returns:
        The :class:`~hf_critic.parsing.ParsedCritique` (``UNPARSED`` when no verdict is found; never a default).
    """
    return parse(text, output.kind, output.score_range or (1, 10))


@dataclass(frozen=True)
class VerdictFormat:
    """One verdict format: the ``output.format`` of a template file, declared once by the family that introduced it.

    Attributes:
        name: the format's name as templates write it (``"rating_brackets"``, ``"prometheus_result"``).
        kinds: the output kinds it carries: ``("score",)``, ``("label",)`` or both.
        parser: ``(text, output) -> ParsedCritique``: reads a critique by its template's
            :class:`~hf_critic.prompts.OutputSpec`; strict, never a default (:func:`read_general` for the general
            formats).
        closing: what closes the verdict when it ends the critique (``"]]"``, ``"}"``, ``""`` for none); None when the
            verdict opens the critique (JudgeLM's and PandaLM's first lines): no verdict grammar then.
        default_prefix: the verdict's opening for templates that declare no ``verdict_prefix`` (the Eval-Instruct
            teacher prompts), a :meth:`str.format` string that may use ``{key}``, the template's ``overall_key``
            (``"{{{key!r}:"`` gives ``{'Overall Score':``); None: no default.
        opening: the character a verdict starts with, which the free explanation of a one-shot critique grammar may
            not contain (:func:`hf_critic.critic.grammars.critique_grammar`): ``"["`` or ``"{"``.
        example: a verdict as the format writes it, for the documentation (``"Rating: [[8]]"``).
    """

    name: str
    kinds: tuple[str, ...]
    parser: Callable[[str, Any], ParsedCritique] = read_general
    closing: str | None = None
    default_prefix: str | None = None
    opening: str = "{"
    example: str = ""

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name or ""):
            raise BadInputError(f"a verdict format's name is lower-case letters, digits and '_', got {self.name!r}")
        if not self.kinds or not set(self.kinds) <= {"score", "label"}:
            raise BadInputError(
                f"verdict format {self.name!r}: kinds must be 'score' and/or 'label', got {self.kinds}"
            )

    def prefix_for(self, overall_key: str | None) -> str | None:
        """The verdict's default opening for a template with ``overall_key`` (see :attr:`default_prefix`)."""
        return None if self.default_prefix is None else self.default_prefix.format(key=overall_key)


@dataclass(frozen=True)
class CriticFamily:
    """One critic family, declared once: everything hf-critic knows about a published critic or prompt set.

    Attributes:
        name: the family's name, what ``--template`` takes (``"prometheus2"``); its template files are named
            ``<name>_<setting>_<language>.yaml``.
        title: the critic and its paper, for the documentation (``"Prometheus 2 (Kim et al., 2024)"``).
        source: where the prompts, the verdict format and the wrapper come from (paper section, repository @ commit).
        templates: setting name -> the critique languages it has a template in, e.g.
            ``{"pairwise_reference_free": ("en", "zh")}``; empty for a family without prompts (reward models).
        formats: the verdict formats this family introduced (another family may use them by name).
        model_names: fragments of its published models' names as they appear in Hub ids, folders and GGUF files
            (lower case, letters and digits only: ``"prometheus"``, ``"autoj"``), for ``--template auto``.
        chat_template: the published input wrapper as a Hugging Face chat template (Jinja), used instead of the
            tokenizer's for a model recognised by :attr:`model_names`; None: the tokenizer's own.
        chat_template_source: where the wrapper comes from (file @ commit).
        template_dir: the folder of its template files; None: the built-in ``hf_critic/prompts/templates``.
        kind: :data:`GENERATIVE` (a critique as text) or :data:`REWARD` (a reward model's number).
        settings: the settings it judges; default: those of :attr:`templates` (a reward model declares its own).

    Raises:
        ValueError: a name that is not lower-case letters, digits and ``_``, an unknown setting or language, a model
            name that is not lower-case letters and digits, or an unknown kind.
    """

    name: str
    title: str
    source: str
    templates: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    formats: tuple[VerdictFormat, ...] = ()
    model_names: tuple[str, ...] = ()
    chat_template: str | None = None
    chat_template_source: str | None = None
    template_dir: Path | None = None
    kind: str = GENERATIVE
    settings: tuple[str, ...] = ()

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name or ""):
            raise BadInputError(f"a family's name is lower-case letters, digits and '_', got {self.name!r}")
        bad = [s for s in self.templates if s not in _SETTING_NAMES]
        bad += [lang for langs in self.templates.values() for lang in langs if lang not in ("en", "zh")]
        bad += [s for s in self.settings if s not in _SETTING_NAMES]
        if bad:
            raise BadInputError(f"family {self.name!r}: unknown setting(s) or language(s) {bad}")
        if not all(re.fullmatch(r"[a-z0-9]+", m) for m in self.model_names):
            raise BadInputError(f"family {self.name!r}: model names are lower-case letters and digits only")
        if self.kind not in (GENERATIVE, REWARD):
            raise BadInputError(f"family {self.name!r}: kind must be {GENERATIVE!r} or {REWARD!r}, got {self.kind!r}")
        object.__setattr__(self, "templates", MappingProxyType({k: tuple(v) for k, v in self.templates.items()}))
        object.__setattr__(self, "settings", tuple(self.settings) or tuple(self.templates))

    @property
    def languages(self) -> tuple[str, ...]:
        """The critique languages of its templates, sorted (``("en", "zh")``)."""
        return tuple(sorted({lang for langs in self.templates.values() for lang in langs}))

    def template_names(self) -> list[str]:
        """Its template files' names, ``<name>_<setting>_<language>``, sorted."""
        return sorted(f"{self.name}_{s}_{lang}" for s, langs in self.templates.items() for lang in langs)

    def has_template(self, setting: str, language: str) -> bool:
        """Whether it has a template for ``setting`` (a setting name) in ``language``."""
        return language in self.templates.get(setting, ())


def every_setting(*languages: str) -> dict[str, tuple[str, ...]]:
    """``templates`` of a family with a template in all four settings (CritiqueLLM v2 §3.1) in each of ``languages``.

    Returns:
        ``{setting name: languages}`` for pointwise / pairwise x referenced / reference-free.
    """
    return {name: tuple(languages) for name in _SETTING_NAMES}
