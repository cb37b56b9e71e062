"""CriticBench's prompts (Lan et al., 2024, §2-3; open-compass/CriticEval) as hf-critic templates.

The texts live in ``prompts/criticbench/criticbench_v1.3.yaml``: for every evaluation variant and task a ``prefix``
and a ``post``, and for every dimension and task a ``body`` (the record's fields laid out with :meth:`str.format`).
The user message is ``prefix + body.format(**fields) + post``, byte for byte the ``origin_prompt`` the benchmark's
own inference wrote (checked against all 6,289 shared DeepSeek-67B prompts by ``tests/criticbench/test_criticbench.py``).

Variants (CriticBench §3: objective "obj" and subjective "sub" evaluation):

=====================  ====================  ======================================================
variant                dimension             what the critic writes
=====================  ====================  ======================================================
``feedback_obj``       feedback              ``Decision: x``, a 1-7 Likert score of the response
``feedback_sub``       feedback              a free-text critique (judged by GPT-4 in the paper)
``comp_feedback_obj``  comparison            ``Decision: A/B/C`` (A better, B better, neither)
``comp_feedback_sub``  comparison            free-text comparison and preference
``correction``         correction            the corrected response (code in a python fence)
``meta_feedback``      meta-feedback         ``Score: x``, 1-7, of a critique against a reference one
=====================  ====================  ======================================================
"""

from __future__ import annotations

import importlib.resources
import string
from dataclasses import dataclass
from functools import cache

import yaml

from ..core.errors import BadInputError

__all__ = [
    "CRITICBENCH_DIMENSIONS",
    "CRITICBENCH_TASKS",
    "CriticBenchTemplate",
    "criticbench_variant",
    "get_criticbench_template",
]

#: The nine tasks, in the benchmark's order (CriticBench §2.2).
CRITICBENCH_TASKS = (
    "translate",
    "chat",
    "qa",
    "harmlessness",
    "summary",
    "math_cot",
    "math_pot",
    "code_exec",
    "code_not_exec",
)
#: The four critique dimensions (file-name spelling: ``comp_feedback`` = comparison, ``correction`` = refinement).
CRITICBENCH_DIMENSIONS = ("feedback", "comp_feedback", "correction", "meta_feedback")
_FILE = "criticbench_v1.3.yaml"


@dataclass(frozen=True)
class CriticBenchTemplate:
    """One CriticBench prompt: ``prefix + body.format(**record) + post``.

    Attributes:
        variant: ``feedback_obj``, ``feedback_sub``, ``comp_feedback_obj``, ``comp_feedback_sub``, ``correction``
            or ``meta_feedback`` (see the module docstring).
        task: one of :data:`CRITICBENCH_TASKS`.
        prefix, body, post: the three texts; ``body`` holds the ``{field}`` placeholders.
        version: the benchmark version the texts come from (``"1.3"``).
    """

    variant: str
    task: str
    prefix: str
    body: str
    post: str
    version: str

    @property
    def fields(self) -> tuple[str, ...]:
        """Placeholders of the body in order of appearance, e.g. ``("question", "generation")``."""
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.body) if name)

    def render(self, record: dict) -> str:
        """The user message for one record.

        Args:
            record: a mapping with every name of :attr:`fields` (strings; other keys are ignored).

        Returns:
            The message text (no chat wrapper).

        Raises:
            KeyError: a field is missing (the message names the template and the field).
        """
        missing = [name for name in self.fields if record.get(name) is None]
        if missing:
            raise KeyError(f"CriticBench template {self.variant}/{self.task}: missing field(s) {missing}")
        return self.prefix + self.body.format(**{name: str(record[name]) for name in self.fields}) + self.post

    def messages(self, record: dict) -> list[dict[str, str]]:
        """The chat conversation a backend generates from: one user turn holding :meth:`render`."""
        return [{"role": "user", "content": self.render(record)}]


def criticbench_variant(dimension: str, evaluation: str = "obj") -> str:
    """The prompt variant of a dimension under an evaluation format.

    Args:
        dimension: one of :data:`CRITICBENCH_DIMENSIONS`.
        evaluation: ``"obj"`` or ``"sub"``; correction and meta-feedback use one prompt for both.

    Raises:
        ValueError: an unknown dimension or evaluation format.
    """
    if dimension not in CRITICBENCH_DIMENSIONS or evaluation not in ("obj", "sub"):
        raise BadInputError(
            f"unknown CriticBench dimension/format {dimension!r}/{evaluation!r}; "
            f"dimensions: {CRITICBENCH_DIMENSIONS}, formats: obj, sub"
        )
    return dimension if dimension in ("correction", "meta_feedback") else f"{dimension}_{evaluation}"


@cache
def _texts() -> dict:
    path = importlib.resources.files("hf_critic.prompts") / "criticbench" / _FILE
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def get_criticbench_template(dimension: str, task: str, evaluation: str = "obj") -> CriticBenchTemplate:
    """The template of one task and dimension.

    Args:
        dimension: one of :data:`CRITICBENCH_DIMENSIONS`.
        task: one of :data:`CRITICBENCH_TASKS`.
        evaluation: ``"obj"`` (verdicts scored by objective metrics) or ``"sub"`` (free text).

    Raises:
        ValueError: unknown dimension, task or format, or a combination the benchmark does not have
            (objective correction exists for math and code only, subjective correction for the other tasks; the
            template is the same, so both are served).
    """
    if task not in CRITICBENCH_TASKS:
        raise BadInputError(f"unknown CriticBench task {task!r}; expected one of {CRITICBENCH_TASKS}")
    variant = criticbench_variant(dimension, evaluation)
    texts = _texts()
    affixes = texts["prompts"][variant][task]
    return CriticBenchTemplate(
        variant=variant,
        task=task,
        prefix=affixes["prefix"],
        body=texts["bodies"][dimension][task],
        post=affixes["post"],
        version=str(texts["version"]),
    )
