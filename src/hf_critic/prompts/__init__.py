"""Critic prompt templates, stored as versioned YAML data files (zh and en) under ``prompts/templates/``.

A template turns one record (``question``, ``reference``, ``response`` or ``response_1`` / ``response_2``,
see :mod:`hf_critic.core.schema`) into the chat messages a critic model sees, and declares in :class:`OutputSpec`
the verdict format it asks for, so that parsing never has to guess.

Built-in files are named ``<family>_<setting>_<language>.yaml``; each family is declared once, in its own module of
:mod:`hf_critic.formats` (its settings and languages, verdict formats and parsers, input wrapper, model names):

- ``critiquellm_v1``: CritiqueLLM v1 (Ke et al., 2023) Appendix C, Table 7 (pointwise only).
- ``critiquellm_v2``: CritiqueLLM v2 (Ke et al., 2024) §3.2 and Appendix B; AlignBench-style multi-dimension
  grading and comparison, all four settings.
- ``critiquellm_6b``: the input format the released CritiqueLLM-6B checkpoint was fine-tuned on.
- ``mtbench``: FastChat's MT-Bench judge prompts (Zheng et al., 2023), English only.
- ``prometheus2``: Prometheus 2 (Kim et al., 2024): absolute grading against a score rubric (1-5, configurable) and
  relative grading (A / B, no tie), with and without a reference answer; ``rubric`` is a required field
  (:mod:`.rubric`).
- ``autoj``: Auto-J (Li et al., 2024): single-response rating (1-10) and pairwise comparison with ties, reference-free,
  English and Chinese (the bilingual model).
- ``judgelm``: JudgeLM (Zhu et al., 2025): two scores on the first line (pairwise, with or without a reference), and
  single-answer grading against a reference.
- ``pandalm``: PandaLM (Wang et al., 2024): pairwise, "1" / "2" / "Tie" on the first line, reference-free.

The published critics' templates name their models (``models``) and licence (``license``); ``--template auto`` picks
the family from a model's id or folder name (:func:`hf_critic.formats.pick_family`).

Each file's ``source`` key says exactly which table or file it copies and what, if anything, was adapted.

Eval-Instruct teacher prompts (``eval_instruct_*``, CritiqueLLM v2 §3.2, v1 §3.2) are not critic templates; they
live in ``prompts/teacher/`` and :mod:`hf_critic.prompts.teacher`. The glass-box ensemble's system prompts are in
``prompts/glassbox/``.

Modules: :mod:`.template` (:class:`PromptTemplate`, :class:`OutputSpec`, file validation), :mod:`.registry` (the
built-in templates; :func:`resolve_template`, used by the critic and by training), :mod:`.teacher` (the teacher
prompts). This package re-exports their public names.

Template file keys: ``version`` (quoted string), ``source``, ``models`` and ``license`` (optional), ``setting`` (a :class:`~hf_critic.core.schema.Setting`
name), ``language`` (``en`` / ``zh``: the language the critique is written in), ``fields`` (every placeholder),
``defaults`` (optional: values for optional placeholders), ``required`` (optional: extra placeholders outside the
setting's fields that every record must fill, e.g. ``critique_1``), ``system`` (optional), ``prompt`` and ``output``
(the keys of :class:`OutputSpec`). ``system`` and ``prompt`` use :meth:`str.format` syntax (``{question}``;
literal braces doubled, ``{{ }}``).
"""

from .registry import (
    get_template,
    list_families,
    list_templates,
    load_template,
    resolve_template,
)
from .rubric import Rubric, load_rubric
from .teacher import (
    EVAL_INSTRUCT_PREFIX,
    INSTRUCTION_OUTPUTS,
    TEACHER_STRATEGIES,
    InstructionPrompt,
    get_instruction_prompt,
    get_teacher_template,
    list_eval_instruct_prompts,
)
from .template import LANGUAGES, RESPONSE_FIELDS, OutputSpec, PromptTemplate, TemplateFieldError

__all__ = [
    "Rubric",
    "load_rubric",
    "EVAL_INSTRUCT_PREFIX",
    "INSTRUCTION_OUTPUTS",
    "LANGUAGES",
    "RESPONSE_FIELDS",
    "TEACHER_STRATEGIES",
    "InstructionPrompt",
    "OutputSpec",
    "PromptTemplate",
    "TemplateFieldError",
    "get_instruction_prompt",
    "get_teacher_template",
    "get_template",
    "list_eval_instruct_prompts",
    "list_families",
    "list_templates",
    "load_template",
    "resolve_template",
]
