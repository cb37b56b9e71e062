"""An Eval-Instruct stage declared once: what it reads and writes, how it runs, the prompts and grammar it sends.

A pipeline is a list of :class:`Stage` (:data:`hf_critic.eval_instruct.pipeline.V2_PIPELINE` and ``V1_PIPELINE``:
CritiqueLLM v2 §3.2 and v1 §3.2); the run order, the progress count, the teacher's per-stage grammars and the
report's rows all come from that list. A stage reads named datasets (``"seeds"`` to begin with) and writes one,
which later stages read and which, when it is named after a CritiqueLLM setting (``"pointwise_referenced"``, ...),
becomes that config of the output. A new stage is one declaration (and its prompt YAML); see
``tests/eval_instruct/test_eval_instruct_stages.py::test_a_new_stage_is_one_declaration``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import datasets

from ..core.errors import BadInputError
from ..critic.grammars import critique_grammar

__all__ = ["GrammarSpec", "RunContext", "Stage", "check_pipeline", "critique_stage_grammar", "stage_grammars"]


@dataclass(frozen=True)
class GrammarSpec:
    """What a stage's teacher grammar depends on: the recipe's language and template family, and the teacher's
    ``max_tokens`` (of the critique requests, and of the query-generation requests)."""

    language: str
    family: str
    max_tokens: int
    augmentation_max_tokens: int

    @property
    def explanation_chars(self) -> int:
        """Room for a critique's free explanation: at most 2 characters per token of ``max_tokens``."""
        return max(10, 2 * self.max_tokens - 40)


@dataclass
class RunContext:
    """What the stages of one run share.

    Attributes:
        config: the recipe (:class:`~hf_critic.eval_instruct.config.EvalInstructConfig`).
        teacher: the teacher's chat source.
        generators: ``name -> chat source`` of the response generators.
        family: the critic template family (``critiquellm_v2`` or ``critiquellm_v1``).
    """

    config: Any
    teacher: Any
    generators: Mapping[str, Any]
    family: str

    @property
    def language(self) -> str:
        """The recipe's language (``"en"`` / ``"zh"``)."""
        return self.config.language

    @property
    def progress(self) -> bool:
        """Whether stages show progress bars."""
        return self.config.progress

    @property
    def critique(self) -> dict[str, Any]:
        """The keyword arguments every teacher critique stage takes: teacher, language, filters, progress."""
        return {
            "teacher": self.teacher,
            "language": self.language,
            "filters": self.config.filters,
            "progress": self.progress,
        }


def _always(config: Any) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    """One Eval-Instruct stage.

    Attributes:
        name: its name in the report, the usage ledger, the request cache and ``failures.jsonl``.
        inputs: the named datasets it reads, in the order ``run`` takes them.
        output: the name of the dataset it writes (a setting's name makes it that output config).
        run: ``(context, *inputs, stage=name, report=StageReport) -> datasets.Dataset``; it fills the report.
        grammar: ``GrammarSpec -> GBNF`` of the teacher's answer (``teacher.grammar: true``), or None (free text, or
            no teacher).
        when: ``config -> bool``: whether the recipe runs it (e.g. difficulty scoring only when asked for).
    """

    name: str
    inputs: tuple[str, ...]
    output: str
    run: Callable[..., datasets.Dataset]
    grammar: Callable[[GrammarSpec], str] | None = None
    when: Callable[[Any], bool] = field(default=_always)


def critique_stage_grammar(prompt: Callable[[str, str], Any]) -> Callable[[GrammarSpec], str]:
    """The grammar of a critique stage whose prompt is ``prompt(language, family)``: a free explanation ending in
    that prompt's verdict line (:func:`hf_critic.critic.grammars.critique_grammar`)."""
    return lambda spec: critique_grammar(prompt(spec.language, spec.family).output, spec.explanation_chars)


def stage_grammars(pipeline: Sequence[Stage], spec: GrammarSpec) -> dict[str, dict[str, str]]:
    """``{stage name: {"grammar": GBNF}}`` for the stages of ``pipeline`` that have one (the request parameter
    llama.cpp's server reads)."""
    return {s.name: {"grammar": s.grammar(spec)} for s in pipeline if s.grammar is not None}


def check_pipeline(pipeline: Sequence[Stage], config: Any) -> list[Stage]:
    """The stages of ``pipeline`` the recipe runs, after checking that each reads only what an earlier one wrote
    (the run starts with ``"seeds"``, the recipe's seed queries).

    Raises:
        ValueError: two stages with one name, or a stage reading a dataset no earlier stage writes (named).
    """
    names = [s.name for s in pipeline]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BadInputError(f"Eval-Instruct pipeline: stage name(s) used twice: {twice}")
    written, running = {"seeds"}, []
    for stage in pipeline:
        if not stage.when(config):
            continue
        missing = [i for i in stage.inputs if i not in written]
        if missing:
            raise BadInputError(
                f"Eval-Instruct pipeline: stage {stage.name!r} reads {missing}, which no earlier stage writes "
                f"(written so far: {sorted(written)})"
            )
        written.add(stage.output)
        running.append(stage)
    return running
