"""Published critics' own output formats (Prometheus 2, Auto-J, JudgeLM, PandaLM) and the dispatch by format.

Each critic was trained on one output format and is read by a strict parser of that format only: the verdict is taken
where its format puts it, anything else is unparsed (never a default, unlike the published extraction code: Auto-J's
gives a rating of 0.0 and PandaLM's a tie when nothing is found). Prometheus 2 also reads the other spellings whose
verdict is unambiguous (its own repository's parser tests list them). Each reads one position found by str.rfind /
the first line / the last tag and matches an anchored pattern (or searches the critique's last characters): linear
time. :func:`parse_output` picks the parser of a template's output format, the general grammar
(:mod:`hf_critic.parsing.grammar`) for the CritiqueLLM and MT-Bench formats.
"""

from __future__ import annotations

import re

from hf_critic.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
from hf_critic.schema import ParseStatus

from .grammar import (
    _LEAD_WINDOW,
    ParsedCritique,
    _explanation,
    _lower,
    _number,
    parse,
)

__all__ = [
    "FAMILY_PARSERS",
    "parse_autoj_decision",
    "parse_autoj_rating",
    "parse_judgelm",
    "parse_output",
    "parse_pandalm",
    "parse_prometheus",
]

_SP = r"[ \t]*"
_INT = r"(\d{1,3})(?![.．]?\d)"
_FLOAT = r"(\d{1,3}(?:[.．]\d{1,3})?)(?![.．]?\d)"
# Prometheus 2. Each whitespace run stands between two tokens that cannot start with whitespace, so no run can be split
# in two (no quadratic backtracking on a long run); ``*`` is markdown bold ("**Score:** 4").
_P2_WS = r"[ \t*]*"
# After a verdict: an optional full stop, then the end of the line (tagged) or of the critique (untagged).
_P2_LINE_END = rf"{_P2_WS}(?:[.。!！]{_P2_WS})?(?:\r?\n|\Z)"
_P2_TEXT_END = rf"{_P2_WS}(?:[.。!！]{_P2_WS})?\Z"
# A lead word between the tag and the value, or before an untagged value: "Score: 2", "score of 1", "Result: 4".
_P2_SEPARATOR = rf"{_P2_WS}(?:(?:[:：=]|(?i:of|is)(?![a-z])){_P2_WS})?"
_P2_SCORE_WORDS = r"(?i:score|rating|result)(?![a-z])"
_P2_LABEL_WORDS = r"(?i:result|verdict|winner)(?![a-z])"
# A score: an integer, "x/high" or "x out of high", bare or in parentheses ("(5)").
_P2_SCORE = (
    r"(?P<open>\([ \t]*)?(?P<value>\d{1,3})(?![.．]?\d)"
    r"(?:[ \t]*(?:[/／]|(?i:out[ \t]+of))[ \t]*(?P<high>\d{1,3})(?![.．]?\d))?(?(open)[ \t]*\))"
)
# A label: an upper-case letter ("B"), "Response B" or "(B)"; lower case is left out ("[RESULT] a tie" cut short).
_P2_LABEL = r"(?P<open>\([ \t]*)?(?P<response>(?i:response)[ \t]*)?(?P<value>[A-Z])(?![\w/])(?(open)[ \t]*\))"
# The tag: "[RESULT]", "[Result]", "[ RESULT ]", "(RESULT)", or the value inside its brackets ("[RESULT: B]").
_P2_TAG = re.compile(r"[\[(][ \t]*result(?![a-z])", re.IGNORECASE)


def _p2_tagged(words: str, value: str) -> re.Pattern[str]:
    """The verdict at a tag: the tag, an optional lead word (``words``), the ``value``, the end of the line."""
    lead = rf"(?:{words}{_P2_SEPARATOR})?"
    return re.compile(
        rf"[\[(][ \t]*(?i:result)[ \t]*(?P<closed>[\])]{_P2_WS})?(?(closed)|(?:[:：][ \t]*)?)"
        rf"{lead}{value}(?(closed)|[ \t]*[\])]){_P2_LINE_END}"
    )


def _p2_untagged(words: str, value: str) -> re.Pattern[str]:
    """A verdict without the tag that ends the critique: "Score: 3", "(Score 5)", "[Response B]", "Result: A"."""
    return re.compile(
        rf"(?P<bracket>[\[(][ \t]*)?(?:(?i:the|my|final|overall)[ \t]+)*(?:(?P<word>{words}){_P2_SEPARATOR})?"
        rf"{value}(?(bracket)[ \t]*[\])]){_P2_TEXT_END}"
    )


_P2_TAGGED = {"score": _p2_tagged(_P2_SCORE_WORDS, _P2_SCORE), "label": _p2_tagged(_P2_LABEL_WORDS, _P2_LABEL)}
_P2_UNTAGGED = {"score": _p2_untagged(_P2_SCORE_WORDS, _P2_SCORE), "label": _p2_untagged(_P2_LABEL_WORDS, _P2_LABEL)}
# An untagged verdict is looked for in the critique's last characters only (it ends the critique): constant time.
_P2_UNTAGGED_WINDOW = 160
# What may stand between a sentence's end and an untagged verdict at its start ("Good job. **Score:** 4").
_P2_SENTENCE_ENDS = ".!?。！？…:："
_FEEDBACK_LEAD = re.compile(r"\s*(?:###)?\s*feedback\s*:\s*", re.IGNORECASE)
_AUTOJ_RATING = re.compile(rf"{_SP}{_FLOAT}{_SP}\]\]")
_AUTOJ_DECISION_KEYS = ("final decision is", "最终决定是")
_JUDGELM_PAIR = re.compile(rf"{_SP}{_FLOAT}(?:{_SP},{_SP}|[ \t]+){_FLOAT}{_SP}")
_JUDGELM_ONE = re.compile(rf"{_SP}{_FLOAT}{_SP}")


def _in_range(score: float, output) -> bool:
    low, high = output.score_range
    return low <= score <= high


def _first_line(text: str) -> tuple[str, str]:
    """The first non-blank line of ``text`` and the rest after it, stripped."""
    body = text.lstrip()
    cut = body.find("\n")
    return (body, "") if cut == -1 else (body[:cut].rstrip("\r"), body[cut + 1 :].strip())


def _score_result(score: float, output, explanation: str) -> ParsedCritique:
    if not _in_range(score, output):
        return ParsedCritique(ParseStatus.OUT_OF_RANGE, explanation=explanation)
    return ParsedCritique(ParseStatus.OK, score=score, explanation=explanation)


def _p2_untagged_match(text: str, start: int, output) -> re.Match[str] | None:
    """The untagged verdict ending ``text`` that starts at or after ``start``; None when there is none.

    Without brackets it needs a lead word ("Score: 3", "Result: A") and must open a sentence (after the text's start,
    a line break or a sentence's end), so that "I would not give it a score of 4" is no verdict; a label needs a lead
    word or brackets around "Response X" ("[Response B]"), so that a last sentence naming a response is none.
    """
    stripped = len(text.rstrip())
    window = max(start, stripped - _P2_UNTAGGED_WINDOW)
    m = _P2_UNTAGGED[output.kind].search(text, window, stripped)
    if m is None:
        return None
    if output.kind == "label" and m.group("word") is None and not (m.group("bracket") and m.group("response")):
        return None
    if output.kind == "score" and m.group("word") is None:
        return None
    if m.group("bracket") is None:
        before = text[max(0, m.start() - _LEAD_WINDOW) : m.start()].rstrip(" \t*＊#>_-")
        if before and before[-1] not in "\r\n" and before[-1] not in _P2_SENTENCE_ENDS:
            return None
    return m


def _p2_value(m: re.Match[str], output) -> float | int | None:
    """The score or label index a verdict match gives; None when it names another scale or no label of the template."""
    if output.kind == "label":
        return output.labels.index(m.group("value")) if m.group("value") in output.labels else None
    high = m.group("high")
    if high is not None and float(high) != output.score_range[1]:
        return None
    return float(m.group("value"))


def parse_prometheus(text: str, output) -> ParsedCritique:
    """Prometheus 2's verdict: ``(feedback) [RESULT] 4`` (absolute grading) or ``[RESULT] A`` / ``B`` (relative).

    Implements the output format of the Prometheus 2 prompts (Kim et al., 2024; prometheus-eval README, "Direct
    Assessment Output Format" / "Pairwise Ranking Output Format": ``{orig_feedback} [RESULT] {orig_score}``), and the
    other spellings whose verdict is unambiguous, as prometheus-eval's own parser tests list them
    (``tests/test_families.py::PROMETHEUS_EVAL_CASES``):

    * the last tag of the text, in any case, with spaces or parentheses (``[RESULT]``, ``[Result]``, ``[ RESULT ]``,
      ``(RESULT)``), then an optional lead word (``Score:``, ``score of``, ``Result:``), then the value (an integer,
      ``(5)``, ``4/5`` and ``5 out of 5`` on the template's scale; one of the template's upper-case labels, ``Response
      B``, ``(B)``), then at most a full stop before the end of the line; or the value inside the tag's brackets
      (``[RESULT: B]``, ``[RESULT 4]``). An earlier tag never stands in for a malformed last one.
    * without any tag, a verdict ending the critique: a lead word and the value opening a sentence (``Good job. Score:
      3``, ``score of 1``, ``RESULT: A``), or in brackets (``(Score 5)``, ``[Score 4]``, ``[Response B]``).

    Unparsed: a non-integer (``[RESULT] 4.5``, ``Score: 2.5``) or a value on another scale (``[RESULT] 4/10`` on 1-5),
    no value (``[RESULT]``, the format echoed: ``[RESULT] (an integer number between 1 and 5)``, ``[RESULT] (A or
    B)``), two values (``[RESULT] A/B``), a tagged verdict followed by an untagged one that differs (``[RESULT] 3`` then
    ``Score: 4``), words after the value (``[RESULT] B is better``), a lower-case label (``[RESULT] a``: the article),
    a label the template lacks (``[RESULT] C``, ``Tie``), and prose that merely names a response or a number (``I
    select Response B.``, ``The score is definitely not 3.``). Never a default.

    Args:
        text: the critique as generated.
        output: the template's :class:`~hf_critic.prompts.OutputSpec` (kind, score range, labels).

    Returns:
        :class:`ParsedCritique`; the explanation is the feedback without the verdict and without a leading
        "Feedback:". A score outside ``output.score_range`` is ``OUT_OF_RANGE``.
    """
    unparsed = ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    tag = None
    for tag in _P2_TAG.finditer(text):  # noqa: B007 - the last tag is read
        pass
    m = _P2_TAGGED[output.kind].match(text, tag.start()) if tag is not None else _p2_untagged_match(text, 0, output)
    value = _p2_value(m, output) if m is not None else None
    if value is None:
        return unparsed
    end = m.end()
    if tag is not None:
        later = _p2_untagged_match(text, end, output)
        if later is not None and _p2_value(later, output) != value:
            return unparsed  # "[RESULT] 3" then "Score: 4": two verdicts
        end = later.end() if later is not None else end
    explanation = _explanation(text, m.start(), end, fallback=False)
    lead = _FEEDBACK_LEAD.match(explanation)
    explanation = explanation[lead.end() :] if lead else explanation
    if output.kind == "label":
        return ParsedCritique(ParseStatus.OK, label=int(value), explanation=explanation)
    return _score_result(value, output, explanation)


def parse_autoj_rating(text: str, output) -> ParsedCritique:
    """Auto-J's single-response rating: ``Rating: [[5]]`` (zh: ``评分: [[5]]``), the template's verdict prefix.

    Implements the format of Auto-J's ``single`` prompt (GAIR-NLP/auto-j ``constants_prompt.py``; README, "Extract
    results": the last ``"Rating: [["`` up to ``"]]"``). The last occurrence of the prefix is read: a number (``5``,
    ``5.0``) then ``]]``. ``Rating: [5]``, ``Rating [[5]]``, ``rating: [[5]]``, ``Rating: [[five]]``, ``Rating:
    [[5/10]]`` and a prefix without a number are unparsed (Auto-J's own code returns 0.0 there).

    Args:
        text: the critique as generated.
        output: the template's output spec (``verdict_prefix``, ``score_range``).

    Returns:
        :class:`ParsedCritique`; the explanation is the critique without the rating.
    """
    pos = text.rfind(output.verdict_prefix)
    m = _AUTOJ_RATING.match(text, pos + len(output.verdict_prefix)) if pos != -1 else None
    if m is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    return _score_result(_number(m.group(1)), output, _explanation(text, pos, m.end(), fallback=False))


def parse_autoj_decision(text: str, output) -> ParsedCritique:
    """Auto-J's pairwise decision: ``So, the final decision is Response 1`` / ``Response 2`` / ``Tie`` (zh:
    ``所以，最终决定是回应1`` / ``回应2`` / ``平局``).

    Implements the extraction of Auto-J's README ("Extract results"): the text after the last ``final decision is``
    (``最终决定是``), case-insensitive, must start with one of the template's labels, as a whole word. Also unparsed:
    the format echoed (``Response 1 / Response 2 / Tie``), ``Response 10``, ``Tied``, ``not Response 1``, ``that
    Response 1``, and a text without the phrase (Auto-J's own code returns -1 there).

    Args:
        text: the critique as generated.
        output: the template's output spec (``labels`` in the order response 1, response 2, tie).

    Returns:
        :class:`ParsedCritique` with label 0 / 1 / 2; the decision statement is cut from the explanation when it ends
        the critique.
    """
    low = _lower(text)
    key, pos = max(((k, low.rfind(k)) for k in _AUTOJ_DECISION_KEYS), key=lambda kp: kp[1])
    if pos == -1:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    start = pos + len(key)
    while start < len(low) and low[start] in " \t\r\n":
        start += 1
    for label, verdict in enumerate(output.labels):
        end = start + len(verdict)
        if low.startswith(verdict.lower(), start) and (end == len(low) or not low[end].isalnum()):
            if low[end : end + 3].lstrip(" \t").startswith("/"):  # "Response 1 / Response 2 / Tie": the format echoed
                break
            line = low.rfind("\n", 0, pos) + 1
            end += low[end : end + 1] in (".", "。", "!", "！")  # the statement's full stop goes with it
            return ParsedCritique(
                ParseStatus.OK, label=label, explanation=_explanation(text, line, end, fallback=True)
            )
    return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())


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
    first, rest = _first_line(text)
    pattern = _JUDGELM_PAIR if output.kind == "label" else _JUDGELM_ONE
    m = pattern.fullmatch(first)
    if m is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    scores = [_number(g) for g in m.groups()]
    if output.kind == "score":
        return _score_result(scores[0], output, rest)
    if not all(1 <= s <= 10 for s in scores):  # JudgeLM's scale, written in its prompt
        return ParsedCritique(ParseStatus.OUT_OF_RANGE, explanation=rest)
    label = RESPONSE_1_WINS if scores[0] > scores[1] else RESPONSE_2_WINS if scores[1] > scores[0] else TIE
    return ParsedCritique(ParseStatus.OK, label=label, explanation=rest)


def parse_pandalm(text: str, output) -> ParsedCritique:
    """PandaLM's verdict: a first line that is exactly ``1``, ``2`` or ``Tie``, then ``### Reason: ...``.

    Implements PandaLM's output format (WeOpenML/PandaLM ``pandalm_inference.py``: ``"{result}\\n\\n### Reason:
    {explain}\\n\\n### Reference: {ref}"``; ``parse_pandalm_response`` reads the first line, ``tie`` in any case). A
    first line with anything else (``Response 1``, ``1.``, ``1 2``, ``Tied``) is unparsed; PandaLM's own code makes it
    a tie.

    Args:
        text: the critique as generated.
        output: the template's output spec (``labels``: ``("1", "2", "Tie")``).

    Returns:
        :class:`ParsedCritique`; the explanation is the text after the first line.
    """
    first, rest = _first_line(text)
    words = [label.lower() for label in output.labels]
    verdict = first.strip(" \t").lower()
    if verdict not in words:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    return ParsedCritique(ParseStatus.OK, label=words.index(verdict), explanation=rest)


#: Output format -> its strict parser; the general formats are read by :func:`parse`.
FAMILY_PARSERS = {
    "prometheus_result": parse_prometheus,
    "autoj_rating": parse_autoj_rating,
    "autoj_decision": parse_autoj_decision,
    "judgelm_scores": parse_judgelm,
    "pandalm_first_line": parse_pandalm,
}


def parse_output(text: str, output) -> ParsedCritique:
    """Parse a critique by its template's output spec: a published critic's format with its own strict parser
    (:data:`FAMILY_PARSERS`), the general formats with :func:`parse`.

    Args:
        text: the critique as generated.
        output: a :class:`~hf_critic.prompts.OutputSpec`.

    Returns:
        The :class:`ParsedCritique`.
    """
    parser = FAMILY_PARSERS.get(output.format)
    if parser is not None:
        return parser(text, output)
    return parse(text, output.kind, output.score_range or (1, 10))
