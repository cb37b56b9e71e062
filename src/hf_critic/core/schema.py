"""The four CritiqueLLM settings, record columns and critique output columns.

CritiqueLLM v2 (Ke et al., 2024) §3.1 defines critique generation in four settings: pointwise grading
and pairwise comparison, each referenced (a reference answer is shown to the critic) or reference-free.
Everything downstream (prompts, parsing, decoding, metrics) keys off :class:`Setting`.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import BadInputError


class Task(str, enum.Enum):
    """What the critic is asked to do: grade one response, or compare two."""

    POINTWISE = "pointwise"
    PAIRWISE = "pairwise"


@dataclass(frozen=True)
class Setting:
    """One of the four settings of CritiqueLLM v2 §3.1.

    Attributes:
        task: pointwise grading or pairwise comparison.
        referenced: True when a (pseudo) reference answer is part of the critic's input.
    """

    task: Task
    referenced: bool

    @property
    def name(self) -> str:
        """Config-style name, e.g. ``"pointwise_referenced"`` or ``"pairwise_reference_free"``."""
        return f"{self.task.value}_{'referenced' if self.referenced else 'reference_free'}"

    @property
    def fields(self) -> tuple[str, ...]:
        """Record fields the setting needs, in prompt order."""
        responses = (RESPONSE,) if self.task is Task.POINTWISE else (RESPONSE_1, RESPONSE_2)
        return (QUESTION, REFERENCE, *responses) if self.referenced else (QUESTION, *responses)

    @classmethod
    def from_name(cls, name: str) -> Setting:
        """Inverse of :attr:`name`.

        Raises:
            ValueError: if ``name`` is not one of :data:`SETTINGS`' names.
        """
        for setting in SETTINGS:
            if setting.name == name:
                return setting
        raise BadInputError(f"unknown setting {name!r}; expected one of {[s.name for s in SETTINGS]}")


SETTINGS = tuple(Setting(task, ref) for task in Task for ref in (True, False))

# Record (input) columns: the canonical names every loader maps published formats onto.
QUESTION = "question"
REFERENCE = "reference"
RESPONSE = "response"
RESPONSE_1 = "response_1"
RESPONSE_2 = "response_2"
#: The record columns that carry judged (untrusted) text.
JUDGED_FIELDS = (QUESTION, REFERENCE, RESPONSE, RESPONSE_1, RESPONSE_2)


class ParseStatus(str, enum.Enum):
    """Outcome of parsing one critique. Only ``OK`` carries a score or label."""

    OK = "ok"
    UNPARSED = "unparsed"  # no score / label in the format the template asks for
    OUT_OF_RANGE = "out_of_range"  # a score was found but lies outside the template's range
    SKIPPED = "skipped"  # the input was not sent to the model (e.g. too long with --truncate skip)
    LOW_MASS = "low_mass"  # probability read-out: too little mass on the allowed verdicts (--min-verdict-mass)
    ABSTAINED = "abstained"  # a cascade: no critic was confident enough (hf_critic.selective); never a verdict


# Critique (output) columns, prefixed so they never clash with input columns such as a human `score`.
CRITIQUE_SCORE = "critique_score"  # float in the template's range, None when not parsed
CRITIQUE_LABEL = "critique_label"  # 0 / 1 / 2, None when not parsed
CRITIQUE_EXPLANATION = "critique_explanation"
CRITIQUE_GENERATION = "critique_generation"  # raw model output (the chosen sample under self-consistency)
CRITIQUE_STATUS = "critique_status"  # a ParseStatus value
CRITIQUE_DIMENSIONS = "critique_dimensions"  # JSON object {dimension: score} when the template has dimensions
CRITIQUE_SAMPLES = "critique_samples"  # all raw generations under self-consistency
CRITIQUE_TRUNCATED = "critique_truncated"  # True when the input was truncated to fit the context
# Position bias (--swap): the verdict on the swapped pair mapped back, its raw text and agreement.
CRITIQUE_LABEL_SWAPPED = "critique_label_swapped"
CRITIQUE_GENERATION_SWAPPED = "critique_generation_swapped"
CRITIQUE_STATUS_SWAPPED = "critique_status_swapped"
CRITIQUE_CONSISTENT = "critique_consistent"  # None when either order is unparsed


# ---------------------------------------------------------------------------------------------------- queries

#: The ten task categories of CritiqueLLM v2 §3.2.1 (footnote 2), (English, Chinese name of the Appendix A prompt):
#: the one category table (AlignBench's eight categories, Liu et al. 2023 Table 1, are among them).
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("Fundamental Language Ability", "基本任务"),
    ("Advanced Chinese Understanding", "中文理解"),
    ("Open-ended Question Answering", "综合问答"),
    ("Writing Ability", "文本写作"),
    ("Mathematics", "数学计算"),
    ("Logical Reasoning", "逻辑推理"),
    ("Task-oriented Role Play", "角色扮演"),
    ("Professional Knowledge", "专业能力"),
    ("Code Generation", "代码生成"),
    ("Multi-lingual Ability", "多语言能力"),
)
# Other spellings met in the papers' files (AlignBench's 基本能力 and "Open-ended Questions", the authors' 代码, the
# difficulty prompt's example).
_CATEGORY_ALIASES = {
    "基本能力": "Fundamental Language Ability",
    "代码": "Code Generation",
    "open-ended questions": "Open-ended Question Answering",  # AlignBench's English name of 综合问答
    "open-ended qa": "Open-ended Question Answering",
    "role play": "Task-oriented Role Play",
    "multilingual ability": "Multi-lingual Ability",
}
_CATEGORY_LOOKUP = {
    **{en.lower(): en for en, _ in CATEGORIES},
    **{zh: en for en, zh in CATEGORIES},
    **{k.lower(): v for k, v in _CATEGORY_ALIASES.items()},
}


def normalize_category(name: str | None) -> str | None:
    """The canonical (English) name of one of the 10 task categories, or None when ``name`` is none of them.

    Accepts the English names (any case), the Chinese names of the Appendix A prompt, a leading list number
    (``"3. 综合问答"``) and a trailing ``类别`` / ``类``.

    Example:
        >>> normalize_category(" 3. 综合问答类别 ")
        'Open-ended Question Answering'
    """
    if not isinstance(name, str):
        return None
    text = unicodedata.normalize("NFKC", name).strip().strip("&*\"'` ")
    text = re.sub(r"^\d+\s*[.、)]\s*", "", text)
    text = re.sub(r"(类别|类)$", "", text).strip()
    return _CATEGORY_LOOKUP.get(text.lower())


def category_name(canonical: str, language: str) -> str:
    """The category name as the ``language`` prompts write it (Chinese names for ``zh``)."""
    if language == "zh":
        return dict(CATEGORIES)[canonical]
    return canonical


def query_id(question: str) -> str:
    """Stable id of a query: ``"q-"`` + 12 hex digits of SHA-256 of its NFKC-normalised, stripped text."""
    text = unicodedata.normalize("NFKC", question).strip()
    return "q-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# Probability read-out (--verdict probability / both, hf_critic.critic.verdicts).
CRITIQUE_DISTRIBUTION = (
    "critique_distribution"  # JSON {verdict: probability}, renormalised; pairwise keys: labels.LABEL_NAMES
)
CRITIQUE_VERDICT_MASS = "critique_verdict_mass"  # probability on the allowed verdicts before renormalising, [0, 1]
CRITIQUE_ENTROPY = "critique_entropy"  # entropy of the (combined) distribution, nats
CRITIQUE_LABEL_FIRST = "critique_label_first"  # pairwise --swap: the first order's own decision
CRITIQUE_DISTRIBUTION_SWAPPED = "critique_distribution_swapped"  # the swapped order's, mapped back
CRITIQUE_VERDICT_MASS_SWAPPED = "critique_verdict_mass_swapped"
CRITIQUE_DISTRIBUTION_COMBINED = "critique_distribution_combined"  # mean of both orders: critique_label's source
# Reward critics (hf_critic.critic.rewards): the raw reward of the response (pairwise: of each response).
CRITIQUE_REWARD = "critique_reward"
CRITIQUE_REWARD_2 = "critique_reward_2"
# Selective judging (hf_critic.selective): the verdict's confidence in [0, 1] (None without a verdict), and, in a
# cascade of critics, which critic decided the row (None when the row was abstained).
CRITIQUE_CONFIDENCE = "critique_confidence"
CRITIQUE_CRITIC = "critique_critic"
# --verdict both: the text verdict keeps its own columns.
CRITIQUE_TEXT_SCORE = "critique_text_score"
CRITIQUE_TEXT_STATUS = "critique_text_status"


def text_column(name: str) -> str:
    """The ``--verdict both`` column holding the text verdict's value of critique column ``name``
    (``critique_label`` -> ``critique_text_label``)."""
    return name.replace("critique_", "critique_text_", 1)


def read_distribution(value, column: str = CRITIQUE_DISTRIBUTION):
    """A verdict distribution as a critique file holds it (JSON text in ``critique_distribution``, or the mapping
    once read): ``{label or score: probability}``; None for None, NaN or blank text.

    Args:
        value: the cell's value; column: its column, for the message.

    Raises:
        BadInputError: text that is not JSON, or a value that is no object (one line naming the column, the value and
            the JSON error).
    """
    if (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or (isinstance(value, str) and not value.strip())
    ):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise BadInputError(f"{column} {value[:60]!r}: not JSON ({err.msg})") from None
    if not isinstance(value, Mapping):
        raise BadInputError(f"{column}: a verdict distribution must be a JSON object or a mapping, got {value!r:.60}")
    return value
