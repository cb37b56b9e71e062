"""The registry of critic families: the built-in ones, declared each in its own module, plus any a user registers.

Everything that used to join four tables by a hidden format name reads this registry: the template lookup
(:func:`hf_critic.prompts.get_template`, :func:`~hf_critic.prompts.list_families`), the output-format check of template
files (:func:`output_formats`), the parsers (:func:`parse_output`), the verdict grammars (:func:`verdict_format`'s
closing and default prefix), the published input wrappers (:func:`published_chat_format`), ``--template auto``
(:func:`pick_family`) and the help text of ``--template`` (:func:`builtin_template_families`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from hf_critic.parsing import ParsedCritique
from hf_critic.parsing.echo import own_text

from ..core.errors import BadInputError
from ..core.schema import ParseStatus
from . import (
    autoj,
    critiquellm_6b,
    critiquellm_v1,
    critiquellm_v2,
    judgelm,
    mtbench,
    pandalm,
    prometheus2,
    reward_model,
)
from .family import CriticFamily, VerdictFormat, read_general

__all__ = [
    "AUTO",
    "BUILTIN_FAMILIES",
    "DEFAULT_FAMILY",
    "FamilyPick",
    "builtin_template_families",
    "families",
    "family_for_model",
    "get_family",
    "known_critics",
    "output_formats",
    "parse_output",
    "pick_family",
    "published_chat_format",
    "register_family",
    "unregister_family",
    "verdict_format",
]

#: The family of ``--template`` when none is named: CritiqueLLM v2's prompts.
DEFAULT_FAMILY = "critiquellm_v2"
#: ``--template auto``: the family is picked from the model's id or folder name (:func:`pick_family`).
AUTO = "auto"
#: The built-in families, in the order ``--template``'s help lists them.
BUILTIN_FAMILIES: tuple[CriticFamily, ...] = tuple(
    module.FAMILY
    for module in (
        critiquellm_v2,
        critiquellm_v1,
        critiquellm_6b,
        mtbench,
        prometheus2,
        autoj,
        judgelm,
        pandalm,
        reward_model,
    )
)
_FAMILIES: dict[str, CriticFamily] = {family.name: family for family in BUILTIN_FAMILIES}


def register_family(family: CriticFamily) -> CriticFamily:
    """Add a family to the registry: its templates, formats, parser, wrapper and model names are known from now on.

    Args:
        family: the declaration (see :class:`~hf_critic.formats.CriticFamily`); a family of one's own keeps its template
            files in ``family.template_dir``.

    Returns:
        ``family``, so a module can write ``FAMILY = register_family(CriticFamily(...))``.

    Raises:
        ValueError: a family of that name is registered already, the name is ``auto``, or one of its verdict formats
            has the name of a registered one.
    """
    if family.name in _FAMILIES or family.name == AUTO:
        raise BadInputError(f"a critic family named {family.name!r} is registered already")
    taken = [f.name for f in family.formats if f.name in output_formats()]
    if taken:
        raise BadInputError(f"family {family.name!r}: verdict format(s) {taken} are declared by another family")
    _FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a family registered with :func:`register_family` (a built-in one stays).

    Raises:
        ValueError: ``name`` is a built-in family or not registered.
    """
    if name in {f.name for f in BUILTIN_FAMILIES} or name not in _FAMILIES:
        raise BadInputError(f"{name!r} is not a family registered with register_family()")
    del _FAMILIES[name]


def families() -> tuple[CriticFamily, ...]:
    """Every registered family, the built-ins first (in :data:`BUILTIN_FAMILIES` order), then the user's."""
    return tuple(_FAMILIES.values())


def get_family(name: str) -> CriticFamily:
    """The registered family ``name``.

    Raises:
        ValueError: no family of that name (the message lists those with templates).
    """
    if name not in _FAMILIES:
        have = sorted(f.name for f in families() if f.templates)
        raise BadInputError(f"unknown template family {name!r}; available families: {have}")
    return _FAMILIES[name]


def builtin_template_families() -> list[str]:
    """The built-in families with prompt templates, in :data:`BUILTIN_FAMILIES` order (``--template``'s help)."""
    return [f.name for f in BUILTIN_FAMILIES if f.templates]


def verdict_format(name: str) -> VerdictFormat | None:
    """The registered verdict format ``name`` (a template's ``output.format``), or None."""
    return next((f for family in families() for f in family.formats if f.name == name), None)


def output_formats() -> dict[str, tuple[str, ...]]:
    """Every registered verdict format -> the output kinds it carries (``{"rating_brackets": ("score",), ...}``)."""
    return {f.name: f.kinds for family in families() for f in family.formats}


def parse_output(
    text: str, output: Any, prompt: Sequence[str] = (), judged: Sequence[str | None] = ()
) -> ParsedCritique:
    """Parse a critique by its template's output spec, with the parser its verdict format declares (a published
    critic's strict parser, or the general grammar :func:`hf_critic.parsing.parse` for the CritiqueLLM and MT-Bench
    formats and any unregistered one).

    Given the prompt, only what the critic wrote itself is read (:func:`hf_critic.parsing.echo.own_text`: not the
    prompt it echoed, its format examples and rubric, nor a marker quoted from the judged text), and a verdict equal
    to one read from what it echoed is ``UNPARSED``: an echo, not a judgement.

    Args:
        text: the critique as generated.
        output: a :class:`~hf_critic.prompts.OutputSpec`.
        prompt: the texts of the prompt's messages the critique answers (none: the text is read whole).
        judged: the judged texts shown in the prompt (question, responses, reference).

    Returns:
        The :class:`~hf_critic.parsing.ParsedCritique` (``UNPARSED`` / ``OUT_OF_RANGE`` rather than a default).
    """
    fmt = verdict_format(output.format)
    read = fmt.parser if fmt is not None else read_general
    own = own_text(text, prompt, judged) if prompt or judged else None
    if own is None or not own.echoed:
        return read(text, output)
    parsed = read(own.text, output)
    if parsed.status is ParseStatus.OK:
        echo = read(own.echoed, output)
        if echo.status is ParseStatus.OK and (echo.score, echo.label) == (parsed.score, parsed.label):
            return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    return parsed


def known_critics() -> dict[str, str]:
    """A published critic's name as it appears in its Hub ids, folder and GGUF file names (lower case, letters and
    digits only) -> the family of the prompts it was trained on, over the registered families."""
    return {name: family.name for family in families() for name in family.model_names}


def family_for_model(model: str | Path | None) -> str | None:
    """The template family of a known published critic, from its Hub id, folder or file name; None when unknown.

    The last path component is compared in lower case with everything but letters and digits removed, so
    ``prometheus-eval/prometheus-7b-v2.0``, ``/models/Prometheus_7B``, ``GAIR/autoj-13b``, ``auto-j-13b.Q4_K_M.gguf``
    and ``BAAI/JudgeLM-7B-v1.0`` are recognised (see :func:`known_critics`).

    Args:
        model: a Hub id, a local folder or file, or None (the embedded default critic: None).

    Returns:
        A registered family's name, or None.
    """
    if model is None:
        return None
    name = re.sub(r"[^a-z0-9]", "", Path(str(model).rstrip("/\\")).name.lower())
    return next((family for key, family in known_critics().items() if key in name), None)


def published_chat_format(model: str | Path | None) -> tuple[str, str] | None:
    """The published input wrapper of a known critic: ``(family, Jinja chat template)``, or None.

    The wrappers (each family's ``chat_template``, with its source) are the formats the critics were trained and
    evaluated with: Llama 2's ``[INST] ... [/INST]`` for Auto-J, FastChat's Mistral format with the system line for
    Prometheus 2, the raw prompt after BOS for JudgeLM and PandaLM. BOS is written in the wrapper because hf-critic
    tokenizes the rendered prompt without adding special tokens.

    Args:
        model: a Hub id, folder or file name (see :func:`family_for_model`).
    """
    family = family_for_model(model)
    template = _FAMILIES[family].chat_template if family is not None else None
    return (family, template) if template is not None else None


class FamilyPick(NamedTuple):
    """What ``--template auto`` picked: the family, the critique language, and why (for the message)."""

    family: str
    language: str
    reason: str

    @property
    def message(self) -> str:
        """``--template auto: using template family 'judgelm' (a known critic's name in 'BAAI/JudgeLM-7B-v1.0')``."""
        return f"--template auto: using template family {self.family!r} ({self.reason})"


def pick_family(model: str | Path | None, language: str = "en") -> FamilyPick:
    """``--template auto``: the family of a known published critic from ``model``'s name, else :data:`DEFAULT_FAMILY`.

    A family written in one language only (critiquellm_6b: zh) switches the language to it, saying so in the reason.

    Args:
        model: a Hub id, folder or file name; None for the embedded default critic.
        language: the critique language asked for (``"en"`` / ``"zh"``).

    Returns:
        The :class:`FamilyPick`.
    """
    family = family_for_model(model)
    if family:
        reason = f"a known critic's name in {model!r}"
    else:
        reason = f"no known critic's name in {model or 'the default critic'!r}"
    family = family or DEFAULT_FAMILY
    have = get_family(family).languages
    if language not in have and len(have) == 1:
        language, reason = have[0], f"{reason}; its prompts are in {have[0]!r} only"
    return FamilyPick(family, language, reason)
