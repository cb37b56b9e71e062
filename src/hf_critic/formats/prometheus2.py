"""Prometheus 2 (Kim et al., 2024, arXiv:2405.01535): absolute grading against a score rubric (1-5, configurable) and
relative grading (A / B, no tie), with and without a reference answer; English. Its verdict ``(feedback) [RESULT] 4`` is
read by :func:`parse_prometheus`; its input wrapper is FastChat's Mistral format with the system line.

The parser: each whitespace run stands between two tokens that cannot start with whitespace (no quadratic
backtracking); it reads the last tag, or the critique's last characters for an untagged verdict: linear time.
"""

from __future__ import annotations

import re

from hf_critic.parsing import ParsedCritique
from hf_critic.parsing.grammar import _LEAD_WINDOW, _explanation
from hf_critic.parsing.quotes import Quotations

from ..core.schema import ParseStatus
from ._common import score_result
from .family import CriticFamily, VerdictFormat, every_setting

__all__ = ["FAMILY", "PROMETHEUS_RESULT", "parse_prometheus"]

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
    (``tests/formats/test_families.py::PROMETHEUS_EVAL_CASES``):

    * the last tag of the text outside quotations (``'[RESULT] 5'`` quoted from the rubric is not the critic's), in any
      case, with spaces or parentheses (``[RESULT]``, ``[Result]``, ``[ RESULT ]``,
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
    tags = list(_P2_TAG.finditer(text))
    quotes = Quotations.of(text) if tags else None
    tag = next((t for t in reversed(tags) if t.start() not in quotes), None)  # the last tag outside quotations
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
    return score_result(value, output, explanation)


#: ``(feedback) [RESULT] 4`` (absolute grading) / ``[RESULT] A`` (relative grading).
PROMETHEUS_RESULT = VerdictFormat(
    "prometheus_result",
    ("score", "label"),
    parse_prometheus,
    closing="",
    default_prefix="[RESULT]",
    opening="[",
    example="Feedback: ... [RESULT] 4",
)
FAMILY = CriticFamily(
    name="prometheus2",
    title="Prometheus 2 (Kim et al., 2024)",
    source="arXiv:2405.01535; prometheus-eval/prometheus-eval @ 1263584 (prompts, output formats, judge.py)",
    templates=every_setting("en"),
    formats=(PROMETHEUS_RESULT,),
    model_names=("prometheus",),
    chat_template=(
        "{{ bos_token or '' }}[INST] {% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}\n"
        "{% endif %}{% endfor %}{% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] }}{% endif %}"
        "{% endfor %} [/INST]"
    ),
    chat_template_source=(
        "prometheus-eval/prometheus-eval @ 1263584 libs/prometheus-eval/prometheus_eval/judge.py "
        '(_get_conversation_prompt): FastChat\'s "mistral" conversation template (system_template "[INST] '
        '{system_message}\\n", roles [INST] / [/INST], LLAMA2 separators), i.e. "[INST] {system}\\n{user} [/INST]".'
    ),
)
