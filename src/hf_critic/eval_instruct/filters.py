"""Rule-based filtering of teacher critiques, applied after every Eval-Instruct prompting step.

CritiqueLLM v2 §3.2.2, footnote 8: "We conduct strictly rule-based filtering after each prompting step to remove
low-quality data with errors in format and other aspects". The rules here, each a rejection reason counted by the
pipeline (:data:`REASONS`):

- the verdict cannot be parsed, or a score lies outside the scale (:func:`hf_critic.parsing.parse`; never a
  default score or tie);
- the explanation is (nearly) empty: a critique is a verdict *plus* an explanation (v2 §3.1);
- the final dict disagrees with the text: a result line (``Overall Score: 6``, ``综合比较结果：助手1``) or a
  per-dimension score (``Correctness: 9``) in the prose differs from the dict the critique ends with;
- a reference-free critique lets the reference show: it names it (``reference answer``, ``参考答案``) or copies an
  n-gram of it that is in neither the question nor the response(s) (v2 Table 9, v1 Table 6 second turn);
- the critique is not in the dataset's language;
- inconsistent verdicts across steps: f_R2RF / the v1 revision turn moved the score by more than allowed (v1
  §3.2.3: at most 1), f_P2P chose against a large pointwise score gap (v2 Table 7: "for pairs with a large
  difference in overall scores, the comparison result should be determined largely according to the scores"),
  optionally f_R2RF flipped a pairwise label.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import BadInputError
from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS
from ..core.schema import ParseStatus
from ..parsing import ParsedCritique, normalize, parse, parse_label, parse_score
from .text import copied_ngrams, detect_language

__all__ = [
    "REASONS",
    "FilterConfig",
    "check_critique",
    "dict_text_mismatch",
    "label_contradicts_scores",
    "mentions_reference",
]

# Rejection reasons counted by the pipeline, with what they mean (the card and the summary table list them).
REASONS = {
    "unparseable": "no verdict in the format asked for",
    "out_of_range": "score outside the scale",
    "empty_explanation": "explanation shorter than the minimum",
    "dict_text_mismatch": "the final dict disagrees with a score or result stated in the text",
    "reference_leak": "a reference-free critique names or copies the reference",
    "wrong_language": "critique not in the dataset's language",
    "score_shift": "reference-free score moved more than allowed from the referenced one",
    "label_contradicts_scores": "pairwise label against a large pointwise score gap",
    "label_flip": "reference-free label differs from the referenced one",
    "missing_input": "an input critique of the step was rejected or failed earlier",
    "swap_unparseable": "the swapped critique does not parse to the swapped label",
    "label_mismatch": "cross validation: Path#1 and Path#2 labels differ",
    "missing_path": "cross validation: one path has no critique for the pair",
    "unknown_category": "query category not among the 10 task categories",
    "duplicate": "query already present",
    "rouge_l_seed": "query too close to a seed query (ROUGE-L)",
    "self_bleu": "query too close to the kept queries (Self-BLEU)",
    "balance": "not drawn when balancing categories and difficulty",
    "empty_response": "generator returned an empty response",
    "no_reference": "no pseudo reference for the query",
    "reference_generator": "response of the reference generator itself (not graded)",
}


@dataclass(frozen=True)
class FilterConfig:
    """Thresholds of the rule-based filters.

    Attributes:
        min_explanation_chars: an explanation (verdict cut out) shorter than this, stripped, is rejected (>= 0).
        check_language: reject critiques not in the dataset language (see :func:`~hf_critic.eval_instruct.text.detect_language`).
        zh_threshold: share of CJK characters among letters from which a text counts as Chinese, in (0, 1).
        leak_ngram: length in tokens of a reference n-gram that, copied into a reference-free critique and found in
            neither the question nor the response(s), counts as a leak (>= 1; CJK characters are tokens).
        max_score_shift: largest allowed change of the overall score from the referenced to the reference-free
            critique (v1 §3.2.3 uses 1).
        max_gap_against_label: a pairwise label is rejected when it goes against a pointwise score gap of at least
            this (default 3 on the 1-10 scale); None disables the rule.
        reject_label_flip: reject reference-free pairwise critiques whose label differs from the referenced one
            (off by default: Table 9 allows a careful change; cross validation catches contradictions).
    """

    min_explanation_chars: int = 10
    check_language: bool = True
    zh_threshold: float = 0.3
    leak_ngram: int = 10
    max_score_shift: float = 1.0
    max_gap_against_label: float | None = 3.0
    reject_label_flip: bool = False

    def __post_init__(self):
        if self.min_explanation_chars < 0 or self.leak_ngram < 1 or self.max_score_shift < 0:
            raise BadInputError("min_explanation_chars >= 0, leak_ngram >= 1 and max_score_shift >= 0 are required")
        if not 0 < self.zh_threshold < 1:
            raise BadInputError("zh_threshold must be in (0, 1)")


_REFERENCE_WORDS = re.compile(
    r"reference\s+(?:answer|response|text|solution)s?|the\s+reference(?![\s-]*free)|参考答案|参考回答|标准答案|参考文本",
    re.IGNORECASE,
)


def mentions_reference(text: str) -> bool:
    """True when ``text`` names a reference answer (``reference answer``, ``the reference``, ``参考答案``, ``标准答案``)."""
    return _REFERENCE_WORDS.search(text) is not None


def _number(text: str) -> float:
    return float(normalize(text))


def dict_text_mismatch(parsed: ParsedCritique, kind: str, score_range: tuple[float, float] = (1, 10)) -> bool:
    """True when the prose of a parsed critique states a verdict other than its final one.

    Looks in ``parsed.explanation`` (the critique with the final verdict cut out) for another verdict the same
    parser recognises (a result line such as ``Overall Score: 6`` / ``综合比较结果：助手1``, or a ``[[x]]`` marker)
    and, for scores, for each per-dimension key of the final dict written as ``name: n`` / ``name：n分``.

    Args:
        parsed: an ``OK`` :class:`~hf_critic.parsing.ParsedCritique` (any other status returns False).
        kind: ``"score"`` or ``"label"``.
        score_range: the scale, for re-parsing scores.
    """
    if parsed.status is not ParseStatus.OK:
        return False
    if kind == "label":
        other = parse_label(parsed.explanation)
        return other.status is ParseStatus.OK and other.label != parsed.label
    other = parse_score(parsed.explanation, score_range)
    if other.status is ParseStatus.OK and other.score != parsed.score:
        return True
    for name, value in (parsed.dimensions or {}).items():
        m = re.search(
            rf"{re.escape(name)}\s*[*＊]*\s*[:：]\s*[*＊]*\s*([0-9０-９]+(?:[.．][0-9０-９]+)?)", parsed.explanation
        )
        if m is not None and _number(m.group(1)) != value:
            return True
    return False


def label_contradicts_scores(label: int | None, score_1: float | None, score_2: float | None, gap: float) -> bool:
    """True when a pairwise label goes against a pointwise score gap of at least ``gap``.

    With ``d = score_1 - score_2``: ``d >= gap`` needs label 0 (response 1 better), ``d <= -gap`` needs label 1; a
    tie or the other label is a contradiction. Missing values never contradict.
    """
    if label is None or score_1 is None or score_2 is None:
        return False
    d = score_1 - score_2
    return (d >= gap and label != RESPONSE_1_WINS) or (-d >= gap and label != RESPONSE_2_WINS)


def check_critique(
    text: str,
    *,
    kind: str,
    language: str,
    score_range: tuple[float, float] = (1, 10),
    reference: str | None = None,
    quotable: Iterable[str] = (),
    config: FilterConfig | None = None,
) -> tuple[ParsedCritique, str | None]:
    """Parse one teacher critique and apply the format, language and leak rules.

    Args:
        text: the critique as generated.
        kind: ``"score"`` (pointwise grading) or ``"label"`` (pairwise comparison).
        language: ``"en"`` / ``"zh"``: the language the critique must be in.
        score_range: the scale for scores.
        reference: for a *reference-free* critique, the reference it must not show (None for referenced ones).
        quotable: texts the critique may quote (question, response(s)); their n-grams never count as a leak.
        config: thresholds (defaults of :class:`FilterConfig`).

    Returns:
        ``(parsed, reason)``: reason None when the critique passes, else a key of :data:`REASONS`
        (``unparseable``, ``out_of_range``, ``empty_explanation``, ``dict_text_mismatch``, ``wrong_language``,
        ``reference_leak``), the first rule that failed in that order.
    """
    config = config or FilterConfig()
    parsed = parse(text, kind, score_range)
    if parsed.status is ParseStatus.UNPARSED:
        return parsed, "unparseable"
    if parsed.status is ParseStatus.OUT_OF_RANGE:
        return parsed, "out_of_range"
    if len(parsed.explanation.strip()) < config.min_explanation_chars:
        return parsed, "empty_explanation"
    if dict_text_mismatch(parsed, kind, score_range):
        return parsed, "dict_text_mismatch"
    if config.check_language:
        detected = detect_language(parsed.explanation, config.zh_threshold)
        if detected is not None and detected != language:
            return parsed, "wrong_language"
    if reference is not None and reference.strip():
        if mentions_reference(text) or copied_ngrams(text, reference, config.leak_ngram, quotable):
            return parsed, "reference_leak"
    return parsed, None
