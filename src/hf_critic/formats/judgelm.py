"""JudgeLM (Zhu et al., ICLR 2025, arXiv:2310.17631): two scores on the first line (pairwise, with or without a
reference) and single-answer grading against a reference; English. Its verdict is read by :func:`parse_judgelm`; its
input is the raw prompt after BOS.
"""

from __future__ import annotations

import re

from hf_critic.parsing import ParsedCritique
from hf_critic.parsing.grammar import _number

from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
from ..core.schema import ParseStatus
from ._common import FLOAT, RAW_PROMPT_WRAPPER, SP, first_line, score_result
from .family import CriticFamily, VerdictFormat

__all__ = ["FAMILY", "JUDGELM_SCORES", "parse_judgelm"]

_JUDGELM_PAIR = re.compile(rf"{SP}{FLOAT}(?:{SP},{SP}|[ \t]+){FLOAT}{SP}")
_JUDGELM_ONE = re.compile(rf"{SP}{FLOAT}{SP}")


def parse_judgelm(text: str, output) -> ParsedCritique:
    """JudgeLM's verdict: the scores on the first line, then the explanation.

    Implements JudgeLM's output format (baaivision/JudgeLM ``judgelm/llm_judge/common.py``, ``parse_score``: the first
    line holds "two values indicating the scores for Assistant 1 and 2, respectively", separated by a space or a
    comma): pairwise comparison takes the label from the two scores (0 when Assistant 1's is higher, 1 when Assistant
    2's, 2 when equal: ``translate_score_to_win_list`` with T = 0). In single-answer grading the prompt ends in
    ``### Response:10`` (Assistant 1, the reference, scored 10), so the first line of the generation is the one score
    of the graded answer. Unparsed: a first line with more or fewer numbers, words (``Assistant 1: 8``), ``8/10``,
    and a score outside the template's range (``OUT_OF_RANGE``).

    Args:
        text: the critique as generated.
        output: the template's output spec (kind, ``score_range``, ``labels``).

    Returns:
        :class:`ParsedCritique`; the explanation is the text after the first line.
    """
    first, rest = first_line(text)
    pattern = _JUDGELM_PAIR if output.kind == "label" else _JUDGELM_ONE
    m = pattern.fullmatch(first)
    if m is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    scores = [_number(g) for g in m.groups()]
    if output.kind == "score":
        return score_result(scores[0], output, rest)
    if not all(1 <= s <= 10 for s in scores):  # JudgeLM's scale, written in its prompt
        return ParsedCritique(ParseStatus.OUT_OF_RANGE, explanation=rest)
    label = RESPONSE_1_WINS if scores[0] > scores[1] else RESPONSE_2_WINS if scores[1] > scores[0] else TIE
    return ParsedCritique(ParseStatus.OK, label=label, explanation=rest)


#: JudgeLM's first line: ``8 7`` (pairwise) or `` 7`` after ``### Response:10`` (single-answer grading).
JUDGELM_SCORES = VerdictFormat("judgelm_scores", ("score", "label"), parse_judgelm, example="8 7")

_EN = ("en",)
FAMILY = CriticFamily(
    name="judgelm",
    title="JudgeLM (Zhu et al., ICLR 2025)",
    source="arXiv:2310.17631; baaivision/JudgeLM @ dadd122 judgelm/llm_judge/common.py, gen_model_judgement*.py",
    templates={"pointwise_referenced": _EN, "pairwise_referenced": _EN, "pairwise_reference_free": _EN},
    formats=(JUDGELM_SCORES,),
    model_names=("judgelm",),
    chat_template=RAW_PROMPT_WRAPPER,
    chat_template_source=(
        "baaivision/JudgeLM @ dadd122 judgelm/llm_judge/gen_model_judgement.py: the raw text (system line, question, "
        'answers, judge prompt, "### Response:", all in hf-critic\'s user message) after BOS, no chat roles.'
    ),
)
