"""Eval-Instruct teacher prompts (CritiqueLLM v2 §3.2, Appendix A-B; CritiqueLLM v1 §3.2.3, Tables 5-6).

Stored under ``prompts/teacher/`` as ``eval_instruct_*.yaml``; they are not critic templates, so the critic's
:func:`~hf_critic.prompts.list_templates` never lists them:

- ``eval_instruct_p2p_<setting>_<language>``: pointwise-to-pairwise prompting f_P2P (Appendix B, Tables 7-8), a
  :class:`~hf_critic.prompts.PromptTemplate` for the pairwise setting it produces, with the two pointwise critiques
  as required extra fields ``critique_1`` / ``critique_2`` (see :func:`get_teacher_template`).
- ``eval_instruct_r2rf_<setting>_<language>``: referenced-to-reference-free prompting f_R2RF (Tables 9-10), for the
  reference-free setting it produces, with ``reference`` and the referenced ``critique`` as required extra fields.
- ``eval_instruct_query_generation_<language>``, ``eval_instruct_query_difficulty_<language>`` (Appendix A) and
  ``eval_instruct_v1_revision_<language>`` (v1 Table 6, second turn): :class:`InstructionPrompt` files, prompts with
  no critic setting (see :func:`get_instruction_prompt`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..core.errors import BadInputError
from ..core.schema import Setting
from .registry import read_data, yaml_names
from .template import LANGUAGES, PromptTemplate, TemplateFieldError, placeholders, read_yaml, template_from_mapping

__all__ = [
    "EVAL_INSTRUCT_PREFIX",
    "INSTRUCTION_OUTPUTS",
    "TEACHER_STRATEGIES",
    "InstructionPrompt",
    "get_instruction_prompt",
    "get_teacher_template",
    "list_eval_instruct_prompts",
]

_TEACHER_DIR = "teacher"
# File-name prefix of the Eval-Instruct teacher prompts.
EVAL_INSTRUCT_PREFIX = "eval_instruct_"
# Output formats of InstructionPrompt files -> what they carry.
INSTRUCTION_OUTPUTS = {
    "queries": "@@query@@ &&category&& items (Appendix A, generation)",
    "difficulties": "n.@@query@@&&category&&##d## items (Appendix A, evaluation)",
    "rating": "a critique ending in Rating: [[x]] (CritiqueLLM v1 Table 6, second turn)",
}


def list_eval_instruct_prompts() -> list[str]:
    """Names of the built-in Eval-Instruct teacher prompts (``eval_instruct_*``), sorted."""
    return yaml_names(_TEACHER_DIR)


TEACHER_STRATEGIES = {"p2p": "f_P2P (pointwise-to-pairwise)", "r2rf": "f_R2RF (referenced-to-reference-free)"}
_INSTRUCTION_KEYS = ("version", "source", "stage", "language", "fields", "prompt", "output")


@dataclass(frozen=True)
class InstructionPrompt:
    """A teacher prompt without a critic setting: query generation and difficulty scoring (CritiqueLLM v2
    Appendix A, v1 Table 5) and the v1 dialogue's revision turn (v1 §3.2.3, Table 6, second turn).

    Loaded from ``eval_instruct_<stage>_<language>.yaml`` with keys ``version``, ``source``, ``stage``,
    ``language``, ``fields`` (every placeholder; all required), ``prompt`` (:meth:`str.format` syntax) and
    ``output`` (one of :data:`INSTRUCTION_OUTPUTS`).

    Attributes:
        name: the file stem, e.g. ``"eval_instruct_query_generation_en"``.
        version: bump it whenever the text changes.
        source: paper and table the text comes from, and what was adapted.
        stage: ``"query_generation"``, ``"query_difficulty"`` or ``"v1_revision"``.
        language: ``"en"`` / ``"zh"``: the language of the text the teacher is asked to write.
        fields: the placeholders, all required (may be empty: the v1 revision turn has none).
        prompt: the user message.
        output: what the answer carries, a key of :data:`INSTRUCTION_OUTPUTS`.
    """

    name: str
    version: str
    source: str
    stage: str
    language: str
    fields: tuple[str, ...]
    prompt: str
    output: str

    def render_text(self, values: Mapping[str, Any] | None = None) -> str:
        """The user message with ``values`` filled in (extra keys ignored).

        Raises:
            TemplateFieldError: a field is missing, None or blank.
        """
        values = values or {}
        missing = tuple(
            f for f in self.fields if values.get(f) is None or (isinstance(values[f], str) and not values[f].strip())
        )
        if missing:
            raise TemplateFieldError(self.name, missing)
        return self.prompt.format(**{f: str(values[f]) for f in self.fields})

    def render(self, values: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
        """``[{"role": "user", "content": render_text(values)}]``.

        Raises:
            TemplateFieldError: a field is missing, None or blank.
        """
        return [{"role": "user", "content": self.render_text(values)}]


def _instruction_from_mapping(data: Any, name: str, where: str) -> InstructionPrompt:
    if not isinstance(data, Mapping):
        raise BadInputError(f"{where}: a prompt file must be a YAML mapping")
    unknown, missing = set(data) - set(_INSTRUCTION_KEYS), [k for k in _INSTRUCTION_KEYS if k not in data]
    if unknown or missing:
        raise BadInputError(f"{where}: unknown key(s) {sorted(unknown)}, missing key(s) {missing}")
    for key in ("version", "source", "stage", "prompt"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise BadInputError(f"{where}: {key!r} must be a non-empty string")
    if data["language"] not in LANGUAGES:
        raise BadInputError(f"{where}: 'language' must be one of {list(LANGUAGES)}")
    if data["output"] not in INSTRUCTION_OUTPUTS:
        raise BadInputError(f"{where}: 'output' must be one of {sorted(INSTRUCTION_OUTPUTS)}, got {data['output']!r}")
    fields = data["fields"] or []
    if not isinstance(fields, list) or len(set(fields)) != len(fields):
        raise BadInputError(f"{where}: 'fields' must be a list of distinct names")
    used = placeholders(data["prompt"], where, "prompt")
    if used != set(fields):
        raise BadInputError(f"{where}: placeholders {sorted(used)} differ from 'fields' {sorted(fields)}")
    return InstructionPrompt(
        name,
        data["version"],
        data["source"].strip(),
        data["stage"],
        data["language"],
        tuple(fields),
        data["prompt"],
        data["output"],
    )


@cache
def _builtin_any(name: str) -> PromptTemplate | InstructionPrompt:
    where = f"built-in prompt {name}.yaml"
    data = read_yaml(read_data(_TEACHER_DIR, name), where)
    if isinstance(data, Mapping) and "stage" in data:
        return _instruction_from_mapping(data, name, where)
    return template_from_mapping(data, name, where)


def get_teacher_template(strategy: str, setting: Setting | str, language: str = "en") -> PromptTemplate:
    """The Eval-Instruct multi-path prompt that produces critiques in ``setting`` (CritiqueLLM v2 §3.2.2, Appendix B).

    Args:
        strategy: ``"p2p"``: pointwise-to-pairwise prompting f_P2P (Tables 7-8), for ``pairwise_referenced``
            (Path#1, step 1; input: two referenced pointwise critiques) and ``pairwise_reference_free`` (Path#2,
            step 2; input: two reference-free pointwise critiques); ``"r2rf"``: referenced-to-reference-free
            prompting f_R2RF (Tables 9-10), for ``pointwise_reference_free`` (Path#2, step 1) and
            ``pairwise_reference_free`` (Path#1, step 2; input: the referenced critique and the reference).
        setting: the setting of the critiques the prompt produces (a :class:`~hf_critic.core.schema.Setting` or name).
        language: ``"en"`` or ``"zh"`` (the published prompts are zh; en is the paper's translation).

    Returns:
        A :class:`PromptTemplate` whose :attr:`~PromptTemplate.required` fields carry the input critique(s).

    Raises:
        ValueError: unknown strategy, or no such prompt (f_P2P only produces pairwise critiques, f_R2RF only
            reference-free ones).
    """
    setting = Setting.from_name(setting) if isinstance(setting, str) else setting
    if strategy not in TEACHER_STRATEGIES:
        raise BadInputError(f"strategy must be one of {sorted(TEACHER_STRATEGIES)}, got {strategy!r}")
    name = f"{EVAL_INSTRUCT_PREFIX}{strategy}_{setting.name}_{language}"
    if name not in list_eval_instruct_prompts():
        have = [n for n in list_eval_instruct_prompts() if n.startswith(f"{EVAL_INSTRUCT_PREFIX}{strategy}_")]
        raise BadInputError(
            f"no {TEACHER_STRATEGIES[strategy]} prompt for {setting.name!r} in {language!r}; have {have}"
        )
    template = _builtin_any(name)
    assert isinstance(template, PromptTemplate)
    return template


def get_instruction_prompt(stage: str, language: str = "en") -> InstructionPrompt:
    """The built-in :class:`InstructionPrompt` ``eval_instruct_<stage>_<language>``.

    Args:
        stage: ``"query_generation"`` / ``"query_difficulty"`` (CritiqueLLM v2 Appendix A) or ``"v1_revision"``
            (CritiqueLLM v1 Table 6, second turn).
        language: ``"en"`` or ``"zh"``.

    Raises:
        ValueError: no such prompt (the message lists the ones there are).
    """
    name = f"{EVAL_INSTRUCT_PREFIX}{stage}_{language}"
    prompt = _builtin_any(name) if name in list_eval_instruct_prompts() else None
    if not isinstance(prompt, InstructionPrompt):
        raise BadInputError(
            f"no instruction prompt {name!r}; built-in Eval-Instruct prompts: {list_eval_instruct_prompts()}"
        )
    return prompt
