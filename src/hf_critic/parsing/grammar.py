"""Score and label extraction from critique texts.

A critique is an explanation plus a verdict (CritiqueLLM v1 §3 and Table 9; CritiqueLLM v2 §3.1,
Appendix B and Tables 11-14; the MT-Bench judge prompts of FastChat). The parser tries every verdict
form whatever the prompt asked for, because a model may answer in another format than requested:

* pointwise grading (:func:`parse_score`):
  ``[[8]]``, ``Rating: [[8.5]]``, ``评分：[[6]]`` (MT-Bench ``single-v1``, CritiqueLLM v1);
  ``{'Overall Score': 7}``, ``{'综合得分': '7'}`` and per-dimension dicts such as
  ``{'事实正确性': 9, '满足用户需求': 8, '综合得分': 8}`` (CritiqueLLM v2, Tables 11-12); as a fallback when
  there is neither a ``[[x]]`` marker nor such a dict, a result line ``综合得分: 8`` / ``Overall Score: 8``
  (anywhere) or ``Rating: 8`` / ``Score: 8`` (at a line start).
* pairwise comparison (:func:`parse_label`):
  ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (MT-Bench ``pair-v2``, C = tie), ``[[1]]`` / ``[[2]]`` / ``[[Tie]]``
  (CritiqueLLM v1); ``{'Overall Comparison Result': 'Assistant 1'}``, ``{'综合比较结果': '助手2'}``,
  ``{'综合比较结果': '质量相当'}`` (CritiqueLLM v2, Tables 13-14, Appendix B); as a fallback, a result line
  ``综合比较结果：助手1`` / ``Overall Comparison Result: Tie``, else a last line that is nothing but a
  verdict (``质量相当``, ``Assistant 2``), else a sentence that states it (``Assistant A is better.``,
  :mod:`.statements`).

Full-width forms (``：``, ``［［８］］``, ``｛｝``, ``＇``) and curly quotes (``‘ ’ “ ”``) are accepted
everywhere, and Python-dict or JSON quoting alike. The patterns run on the original text with the
full-width twins of the few ASCII characters a verdict is made of; what they capture (numbers, dict
bodies, label words) is then put through :func:`normalize`. Keeping the original positions makes the
explanation an exact cut of the generated text, and is several times faster than normalising whole
critiques.

**The last verdict wins.** Critiques end with their verdict and earlier markers are mostly quotes of the
answer or of the prompt, so of several candidates the one that starts last is taken. The parser cannot
tell a ``[[8]]`` echoed from the question from a real verdict: if the echo is the last marker in the
text, it is what gets parsed. Explicit markers (``[[x]]`` and verdict dicts) always beat the result-line
fallbacks, wherever they sit.

**Where a verdict stands.** A candidate counts only where a template puts a verdict: a ``[[x]]`` right after an
identifier (``lst[[1]]``, ``x[[2]]``: code indexing) or inside a code block or inline code (unless that block ends
the text: a fenced final dict), and a quoted ``"[[C]]"`` followed by more words on its line (an echoed format
example), are no markers; a dict counts on a line of its own (optionally after a lead ending in a colon, "Final
Score:") or at the very end, so a dict quoted inside a sentence is none; a result line must end after its value
("Rating is 5 stars", "Final verdict: Assistant 1 is worse than Assistant 2", "tie-breaker needed" are unparsed:
comparisons and negations are left unparsed rather than guessed). A score has at most three digits before and after
the point (``[[10.0000000000000000001]]`` is no verdict).

**Outside quotations.** A candidate inside a quotation is the judged text's, not the critic's: every quoting style of
:mod:`.quotes` (straight and curly, single and double quotes, guillemets, corner brackets, JSON's escaped quotes,
``<q>``, ``>`` blockquote lines; apostrophes are told from quotes), and inline code. A critique that writes ``Rating:
[[3]]`` and then 'the answer writes "Rating: [[10]]", which I ignore' is read as 3; one whose only verdict is quoted is
unparsed. The one exception is a quotation that ends the text right after a verdict lead (``My rating: "[[2]]"``, ``My
final verdict is '[[A]]'``): the critic's own verdict, quoted.

**Linear time.** No pattern nests quantifiers over the same characters (a whitespace run cannot be split in many
ways), dict bodies are read by a one-pass tokenizer (:mod:`.dicts`), and generic keywords are found at line starts in one pass:
100k-character runaway outputs parse in milliseconds (``tests/parsing/test_parser_fuzz.py``, ``benchmarks/bench_parsing.py``).

**Never a default.** When nothing is found the status is ``UNPARSED`` and score / label are None; a score
outside the template's range gives ``OUT_OF_RANGE`` with score None. Nothing is ever turned into a middle
score or a tie.

Regexes are compiled once at import; there is no ``eval``. 100k critiques parse in a few seconds on
one CPU core (see ``tests/parsing/test_parsing.py::test_speed``).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from dataclasses import dataclass

from ..core.errors import BadInputError
from ..core.labels import VERDICT_WORDS
from ..core.schema import ParseStatus
from .dicts import DICT_LABEL, DICT_NUMBER, LABEL_KEYS, OVERALL_SCORE_KEYS, dict_key, dict_pairs
from .quotes import Quotations, quotation_spans
from .statements import stated_verdict

__all__ = ["ParsedCritique", "normalize", "parse", "parse_label", "parse_score"]


@dataclass(frozen=True)
class ParsedCritique:
    """The result of parsing one critique.

    Attributes:
        status: :class:`~hf_critic.core.schema.ParseStatus`; only ``OK`` carries a score or a label.
        score: pointwise grading only; a float in ``score_range`` (inclusive) when status is ``OK``,
            otherwise None.
        label: pairwise comparison only; 0 (response 1 better), 1 (response 2 better) or 2 (tie) when
            status is ``OK``, otherwise None (see :mod:`hf_critic.core.schema`).
        dimensions: per-dimension scores of a CritiqueLLM v2 dict verdict, e.g.
            ``{'Correctness': 9.0, 'Richness': 8.0}``: every numeric key but the overall one, keys as
            written (after :func:`normalize`), values outside ``score_range`` left out. None when the
            verdict has no dimensions or the status is not ``OK``.
        explanation: the critique with the verdict cut out (the ``[[x]]`` marker with its "Rating:" lead,
            or the dict), in the original characters, stripped; text before and after the verdict is
            joined by a newline. A result line inside the prose is left in. For ``UNPARSED``: the whole
            text, stripped.
    """

    status: ParseStatus
    score: float | None = None
    label: int | None = None
    dimensions: dict[str, float] | None = None
    explanation: str = ""


# --------------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------------
_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"'})


def normalize(text: str) -> str:
    """NFKC-normalise a string and straighten curly quotes.

    Full-width ASCII forms become ASCII (``：`` -> ``:``, ``［［８］］`` -> ``[[8]]``, ``｛`` -> ``{``), ``…`` becomes
    ``...``, and ``‘ ’ ‚ ‛`` / ``“ ” „ ‟`` become ``'`` / ``"``. Both parsers apply it to what their patterns
    capture (numbers, dict bodies, label words) before reading it.

    Args:
        text: any string.

    Returns:
        The normalised string (ASCII input comes back unchanged).
    """
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_QUOTES)


def _number(text: str) -> float:
    """A captured number (ASCII or full-width digits, optional sign) as a float."""
    return float(normalize(text))


# --------------------------------------------------------------------------------------------------
# Patterns. They run on the original text, so each ASCII character of a verdict also matches its
# full-width twin (NFKC maps one to the other); \d and \s are Unicode-aware already.
# --------------------------------------------------------------------------------------------------
_LB, _RB, _LC, _RC = r"[\[［]", r"[\]］]", r"[{｛]", r"[}｝]"
_QUOTE_CHARS = "'\"‘’‚‛“”„‟＇＂"
_COLON, _STAR, _Q = r"[:：]", r"[*＊]", f"[{_QUOTE_CHARS}]"
# A score has at most three digits before and after the point: a longer number ("[[10.0000000000000000001]]", a
# 5,000-digit run) is no verdict, and no float() or int() ever sees an unbounded digit run.
_DIGITS = r"\d{1,3}(?:[.．]\d{1,3})?(?![\d.．]\d)(?!\d)"
_NUM = rf"[+\-＋－]?{_DIGITS}"
# "x/high" and "x out of high" read as x (8/10 on a 1-10 scale); any other denominator makes the candidate no verdict.
_OUT_OF = rf"(?:[ \t]*(?:[/／]|(?i:out[ \t]+of))[ \t]*({_DIGITS}))?"
_TAIL = rf"{_Q}?{_STAR}*[ \t]*[.。．!！]?"
# Where a result line's verdict must end: at a punctuation mark that closes the clause, or at the end of the line.
# "Rating is 5 stars", "Final verdict: Assistant 1 is worse than Assistant 2" or "... tie-breaker needed" go on
# after the value, so they are no verdicts (a comparison is left unparsed rather than misread).
_END = r"(?:[。．！，；]|[.!,;](?!\w)|(?=[\r\n]|\Z))"

_SCORE_BRACKET = rf"{_LB}\s*({_NUM}){_OUT_OF}\s*{_RB}{_RB}{_TAIL}"
_LABEL_BRACKET = (
    rf"{_LB}\s*(?:assistant\s*|response\s*|助手|回答)?([abc12ａｂｃ１２]|tie|质量相当|平局)\s*{_RB}{_RB}{_TAIL}"
)
# Words that introduce a marker ("Rating: [[8]]", "评分：[[6]]", "My verdict: [[A]]"); they are cut with
# the marker so that the explanation does not end in a dangling "Rating:".
# "[[rating]]: [[2]]" occurs in real GPT-4 judgments (the prompt's placeholder echoed as a label).
_LEAD_WORDS = ("[[rating]]", "rating", "score", "verdict", "judgement", "judgment")
_LEAD_WORDS_ZH = ("综合得分", "最终得分", "评分", "得分", "打分", "最终结果", "结果", "裁决")
_LEAD_ALL = _LEAD_WORDS_ZH + _LEAD_WORDS  # 综合得分 before 得分: the longest word ending the text is taken
_LEAD_QUALIFIERS = ("overall", "final", "my")
_LEAD_COPULAS = (" is", "是", "为")  # "My final verdict is: [[A]]"
_LEAD_PUNCTUATION = " \t\r\n:：*＊"
_LEAD_WINDOW = 40
# A one-level dict; doubled braces as in the templates' "{{...}}" escapes are taken whole.
_DICT = rf"{_LC}?([^{{}}｛｝]*){_RC}{_RC}?{_TAIL}"

_FULL_WIDTH = {"[": "［", "{": "｛"}


def _twins(first: str, rest: str, flags: int = 0) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``(pattern opening with the ASCII character, pattern opening with it or its full-width twin)``.

    ``re`` finds a literal first character ~10x faster than a character class, so the first pattern serves
    texts that do not hold the full-width twin at all.
    """
    return re.compile(re.escape(first) + rest, flags), re.compile(
        f"[{re.escape(first)}{_FULL_WIDTH[first]}]" + rest, flags
    )


_SCORE_BRACKET_RE = _twins("[", _SCORE_BRACKET)
_LABEL_BRACKET_RE = _twins("[", _LABEL_BRACKET, re.IGNORECASE)
_DICT_RE = _twins("{", _DICT)


def _opening(text: str, twins: tuple[re.Pattern[str], re.Pattern[str]], first: str) -> re.Pattern[str] | None:
    """The pattern of ``twins`` to search ``text`` with; None when ``text`` has no opening character."""
    if _FULL_WIDTH[first] in text:
        return twins[1]
    return twins[0] if first in text else None


# Result-line fallbacks, used only when there is no [[x]] marker and no verdict dict. Their keywords are
# found with str.find on text.lower() and the patterns (lower case) matched there: a scan with re would
# try every position of the text. "Generic" keywords count only at a line start.
# One character class on each side of the separator: "\s*\**\s*" can split a whitespace run in quadratically
# many ways before failing.
_IS = r"[\s*＊]*(?:[:：]|[=＝]|为|是|is(?![a-z]))[\s*＊]*"
_SCORE_LINE = re.compile(
    r"(?<![a-z])(?:(?:overall|final)\s+(?:score|rating)|综合得分|综合评分|总体评分|最终得分|rating|score|评分|得分)"
    rf"{_IS}({_DIGITS}){_OUT_OF}[ \t]*分?{_STAR}*[ \t]*{_END}"
)
_SCORE_KEYWORDS = ("overall", "final", "综合得分", "综合评分", "总体评分", "最终得分")
_SCORE_KEYWORDS_GENERIC = ("rating", "score", "评分", "得分")
# A generic keyword counts at a line start, after list and quote marks. Found with one pass of a MULTILINE pattern
# (looking back from each occurrence for its line start was quadratic on "score " repeated 50k times).
_SCORE_KEYWORDS_AT_LINE_START = re.compile(
    r"^[ \t>#\-*＊]*(?=" + "|".join(map(re.escape, _SCORE_KEYWORDS_GENERIC)) + ")", re.MULTILINE
)
_LABEL_VALUE = (
    r"(?:(?:assistant|response|answer)\s*([12ab１２ａｂ])(?![a-z0-9])|(?:助手|回答|答案)\s*([12１２])(?!\d)"
    r"|(tie|质量相当|平局)(?![a-z]))"
)
_LABEL_LINE = re.compile(
    r"(?<![a-z])(?:(?:overall\s+)?comparison\s+result|final\s+verdict|综合比较结果|综合质量比较结果|比较结果)"
    rf"{_IS}{_Q}?{_LABEL_VALUE}{_Q}?{_STAR}*[ \t]*{_END}"
)
_LABEL_KEYWORDS = ("overall", "comparison", "final", "综合比较结果", "综合质量比较结果", "比较结果")
# The last non-empty line, when it is nothing but a verdict ("质量相当", "**Assistant 2**").
_LAST_LINE_LABEL = re.compile(rf"[ \t>#\-]*(?:{_STAR}|{_Q})*{_LABEL_VALUE}(?:{_STAR}|{_Q}|[ \t.。．!！])*")


def _lower(text: str) -> str:
    """``text.lower()`` with every position kept (a letter whose lower case is longer, e.g. "İ", stays)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


# Result lines are looked for among the last occurrences of their keywords only: the verdict line is the last one,
# and a runaway output repeating a keyword 25k times costs one pass of str.rfind instead of 25k pattern matches.
_MAX_LINE_CANDIDATES = 64


def _line_matches(
    low: str, pattern: re.Pattern[str], keywords: tuple[str, ...], at_line_start: re.Pattern[str] | None = None
) -> list[re.Match[str]]:
    """Matches of ``pattern`` at the last occurrences of ``keywords`` and at the last ends of ``at_line_start``
    matches (at most :data:`_MAX_LINE_CANDIDATES` of each).

    Returns:
        The matches ordered by end, the longer first among those ending together (the last is the
        verdict; "综合比较结果" is preferred to the "比较结果" inside it).
    """
    starts = []
    for word in keywords:
        pos, found = low.rfind(word), 0
        while pos != -1 and found < _MAX_LINE_CANDIDATES:
            starts.append(pos)
            pos, found = low.rfind(word, 0, pos), found + 1
    if at_line_start is not None:
        ends = [line.end() for line in at_line_start.finditer(low)]
        starts += ends[-_MAX_LINE_CANDIDATES:]
    matches = [m for m in (pattern.match(low, pos) for pos in starts) if m is not None]
    matches.sort(key=lambda m: (m.end(), -m.start()))
    return matches


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------
def _check_range(score_range: tuple[float, float]) -> tuple[float, float]:
    """``score_range`` as floats; ValueError unless ``low < high``."""
    low, high = float(score_range[0]), float(score_range[1])
    if not low < high:
        raise BadInputError(f"score_range must be (low, high) with low < high, got {score_range!r}")
    return low, high


def _value(number: str, out_of: str | None, high: float) -> float | None:
    """The score ``number``; None when an ``/out_of`` denominator is given and differs from ``high``."""
    if out_of is not None and _number(out_of) != high:
        return None
    return _number(number)


def _lead_start(text: str, start: int) -> int:
    """Start of the words introducing a marker at ``start`` ("Rating:", "**My verdict**:", "评分："), else ``start``."""
    if start > 0 and text[start - 1] in _QUOTE_CHARS:  # '"[[A]]"'
        start -= 1
    offset = max(0, start - _LEAD_WINDOW)
    before = text[offset:start].rstrip(" \t*＊")
    if before.endswith(("\n", "\r")):  # a lead on the line above must end in a colon ("**Rating:**\n[[8]]")
        before = before.rstrip(" \t\r\n*＊")
        if not before.endswith((":", "：")):
            return start
    low = _lower(before.rstrip(_LEAD_PUNCTUATION))
    if low.endswith(_LEAD_COPULAS):
        low = low[: -len(next(c for c in _LEAD_COPULAS if low.endswith(c)))].rstrip(_LEAD_PUNCTUATION)
    if not low.endswith(_LEAD_ALL):
        return start
    word = next(w for w in _LEAD_ALL if low.endswith(w))
    i = len(low) - len(word)
    if word.isascii():
        if i > 0 and "a" <= low[i - 1] <= "z":  # "underscore: [[8]]"
            return start
        while True:  # qualifiers before the word, on its line: "my final rating", "overall score"
            head = low[:i].rstrip(" \t")
            qualifier = next((q for q in _LEAD_QUALIFIERS if head.endswith(q)), None)
            if qualifier is None or len(head) == i or "a" <= head[-len(qualifier) - 1 : -len(qualifier)] <= "z":
                break
            i = len(head) - len(qualifier)
    return offset + len(low[:i].rstrip("*＊"))


def _label(*groups: str | None) -> int:
    """Label of the one group of a label pattern that matched."""
    return VERDICT_WORDS[normalize(next(g for g in groups if g is not None)).lower()]


def _explanation(text: str, start: int, end: int, fallback: bool) -> str:
    """``text`` without the verdict at ``[start, end)``, stripped.

    A fallback result line followed by more prose ("Overall Score: 9. The response excels ...") is part of
    the explanation and stays; markers and dicts are cut wherever they sit.
    """
    before, after = text[:start].strip(), text[end:].strip()
    if fallback and after:
        return text.strip()
    return f"{before}\n{after}" if before and after else before or after


# Where a candidate may stand. The verdict is where the template puts it: a marker that is an index into code
# (``lst[[1]]``), sits in a code block, or is a quoted example followed by more words ('"[[C]]" for a tie') is none,
# and a dict counts only on a line of its own (after an optional "Final Score:" lead) or at the very end, so that a
# dict quoted inside a sentence ('should print {"score": 3} as in the example') is no verdict.
_INDEX_BEFORE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_)]")
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_CLOSING = " \t\r\n.。．!！*＊" + _QUOTE_CHARS
# Quotations (:mod:`.quotes`, every quoting style): a verdict the critique quotes ('it writes "Rating: [[10]]", which I
# ignore', "B's answer ends with '[[B]]'") is the judged text's, not the critic's. A quotation or inline code that ends
# the text right after a verdict lead ('My rating: "[[2]]"', "My final verdict is '[[A]]'", "Rating: `[[8]]`") is the
# critic's own verdict, quoted.


class _Places:
    """Code spans and the end of the content of one text, to judge candidates' positions in O(log n) each."""

    def __init__(self, text: str):
        self.text = text
        self.last = len(text.rstrip(_CLOSING))  # a candidate ending here or later ends the text

    @functools.cached_property
    def _code(self) -> tuple[list[int], list[int]]:
        """Starts and ends of the code spans; a fenced block that ends the text is kept (models fence their final dict),
        and so is inline code that ends it after a verdict lead ("Rating: `[[8]]`")."""
        spans = [m.span() for m in _CODE.finditer(self.text) if not self._own_at_end(*m.span(), fenced=True)]
        return [start for start, _ in spans], [end for _, end in spans]

    def _own_at_end(self, start: int, end: int, fenced: bool = False) -> bool:
        """True when the quotation or code span ``[start, end)`` ends the text and is the critic's own verdict: a fenced
        block, or a span right after a verdict lead ("Verdict:", "My rating:", "My final verdict is")."""
        if end < self.last:
            return False
        if fenced and self.text.startswith("```", start):
            return True
        return _lead_start(self.text, start) < start

    def in_code(self, pos: int) -> bool:
        """True when ``pos`` lies inside a code span (:data:`_CODE`)."""
        starts, ends = self._code
        i = bisect.bisect_right(starts, pos) - 1
        return i >= 0 and pos < ends[i]

    @functools.cached_property
    def _quoted(self) -> Quotations:
        """The quotations (:func:`.quotes.quotation_spans`), less the critic's own quoted verdict ending the text
        (:meth:`_own_at_end`)."""
        return Quotations(span for span in quotation_spans(self.text) if not self._own_at_end(*span))

    def in_quote(self, pos: int) -> bool:
        """True when ``pos`` lies inside a quotation (:meth:`_quoted`)."""
        return pos in self._quoted

    def marker(self, start: int, end: int) -> bool:
        """True when the ``[[x]]`` marker at ``[start, end)`` may be a verdict."""
        before = self.text[start - 1] if start > 0 else ""
        if before in _INDEX_BEFORE or self.in_code(start) or self.in_quote(start):
            return False
        if before and before in _QUOTE_CHARS and end < self.last:  # '"[[C]]" for a tie': a quoted example
            rest = self.text[end : end + _LEAD_WINDOW].split("\n", 1)[0]
            return not any(c.isalnum() for c in rest)
        return True

    def dict(self, start: int, end: int) -> bool:
        """True when the dict at ``[start, end)`` stands where a verdict dict stands."""
        if self.in_code(start) or self.in_quote(start):
            return False
        if end >= self.last:
            return True
        lead = self.text[max(0, start - _LEAD_WINDOW) : start].rstrip(" \t*＊>#-" + _QUOTE_CHARS)
        if lead and not lead.endswith(("\n", "\r", ":", "：")):
            return False
        # _TAIL took a closing period: what follows a sentence's end may be prose ("{...}. That is all.")
        if self.text[end - 1] in ".。．!！":
            return True
        rest = self.text[end : end + _LEAD_WINDOW].split("\n", 1)[0]
        return not rest.strip(_CLOSING + ",，;；")


# --------------------------------------------------------------------------------------------------
# Pointwise grading
# --------------------------------------------------------------------------------------------------
def parse_score(text: str, score_range: tuple[float, float] = (1, 10)) -> ParsedCritique:
    """Extract the overall score of a pointwise-grading critique.

    Implements the verdict formats of CritiqueLLM v1 (Table 9: ``Rating: [[x]]`` / ``评分：[[x]]``, the
    MT-Bench ``single-v1`` format) and CritiqueLLM v2 (§3.1, Appendix B, Tables 11-12:
    ``{'Overall Score': x}`` / ``{'综合得分': x}``, with or without per-dimension keys, values quoted or not),
    with result lines as a fallback; see the module docstring. Full-width forms and curly quotes are
    accepted.

    Candidates are ``[[x]]`` markers (x an optionally signed decimal number) and one-level dicts (a nested
    JSON object is not read) with an overall key (``Overall Score``, ``综合得分``, ``score``, ...); the
    candidate that starts last in the text wins. Only when there is none are result lines searched
    (``Overall Score: 8``, ``综合得分为8分``; the last one wins). ``x/high`` reads as x (``[[8/10]]`` on
    1-10); another denominator (``[[4/5]]`` on 1-10) makes the candidate no verdict. A dict without an
    overall key is no verdict (dimension scores are never averaged); ``[[eight]]``, ``[[]]`` and single
    brackets ``[8]`` (list and citation markers) are no markers.

    Args:
        text: the critique as generated.
        score_range: inclusive ``(low, high)`` bounds of the template's scale; default (1, 10).

    Returns:
        :class:`ParsedCritique`: ``OK`` with ``score`` a float in ``[low, high]`` (and ``dimensions`` from a
        dict verdict); ``OUT_OF_RANGE`` with score None when the winning verdict lies outside the range
        (``[[0]]``, ``[[11]]``, ``[[-3]]`` on 1-10); ``UNPARSED`` with score None when there is no verdict.

    Raises:
        ValueError: if ``score_range`` is not ``(low, high)`` with ``low < high``.
    """
    low, high = _check_range(score_range)
    places = _Places(text)
    best: tuple[int, int, float, dict[str, float] | None] | None = None  # start, end, score, dimensions
    pattern = _opening(text, _SCORE_BRACKET_RE, "[")
    if pattern is not None:
        for m in pattern.finditer(text):
            score = _value(m.group(1), m.group(2), high)
            if score is not None and places.marker(m.start(), m.end()):
                best = (m.start(), m.end(), score, None)
        if best is not None:
            best = (_lead_start(text, best[0]), *best[1:])
    pattern = _opening(text, _DICT_RE, "{")
    if pattern is not None:
        for m in pattern.finditer(text, best[1] if best is not None else 0):
            overall, dims = None, {}
            for key, raw in dict_pairs(normalize(m.group(1))):
                number = DICT_NUMBER.fullmatch(raw)
                value = _value(number.group(1), number.group(2), high) if number is not None else None
                if value is None:
                    continue
                if dict_key(key) in OVERALL_SCORE_KEYS:
                    overall = value
                else:
                    dims[key] = value
            if overall is not None and places.dict(m.start(), m.end()):
                best = (m.start(), m.end(), overall, dims)
    fallback = best is None
    if fallback:
        for m in reversed(_line_matches(_lower(text), _SCORE_LINE, _SCORE_KEYWORDS, _SCORE_KEYWORDS_AT_LINE_START)):
            score = _value(m.group(1), m.group(2), high)
            if score is not None and not places.in_quote(m.start()):
                best = (m.start(), m.end(), score, None)
                break
    if best is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())

    start, end, score, dims = best
    explanation = _explanation(text, start, end, fallback)
    if not low <= score <= high:
        return ParsedCritique(ParseStatus.OUT_OF_RANGE, explanation=explanation)
    dims = {k: v for k, v in dims.items() if low <= v <= high} if dims else None
    return ParsedCritique(ParseStatus.OK, score=score, dimensions=dims or None, explanation=explanation)


# --------------------------------------------------------------------------------------------------
# Pairwise comparison
# --------------------------------------------------------------------------------------------------
def parse_label(text: str) -> ParsedCritique:
    """Extract the verdict of a pairwise-comparison critique as 0 / 1 / 2.

    Implements the verdict formats of MT-Bench ``pair-v2`` (``[[A]]`` / ``[[B]]`` / ``[[C]]``, C = tie),
    CritiqueLLM v1 (Table 9: ``[[1]]`` / ``[[2]]`` / ``[[Tie]]``) and CritiqueLLM v2 (Appendix B,
    Tables 13-14: ``{'Overall Comparison Result': 'Assistant 1' | 'Assistant 2' | 'Tie'}``,
    ``{'综合比较结果': '助手1' | '助手2' | '质量相当'}``), full-width forms and curly quotes included.

    Candidates are ``[[x]]`` markers and dicts whose comparison key holds a recognised value; the one that
    starts last in the text wins (CritiqueLLM v2 writes its dict first, which wins when nothing follows).
    A dict whose value is not recognised (e.g. the prompt's placeholder echoed back) is no verdict. Only
    when there is no candidate: the last result line (``综合比较结果：助手1``, ``Overall Comparison Result:
    Tie``), else a last line that is nothing but a verdict (``质量相当``, ``**Assistant 2**``), else a sentence
    stating it (``Assistant A is better.``, :func:`.statements.stated_verdict`). A ``质量相当`` inside a sentence is no
    verdict. Candidates inside quotations (:mod:`.quotes`) are the judged text's, never the verdict.

    Args:
        text: the critique as generated.

    Returns:
        :class:`ParsedCritique`: ``OK`` with ``label`` 0 (response 1 / A better), 1 (response 2 / B better)
        or 2 (tie); ``UNPARSED`` with label None when there is no verdict (never a tie).
    """
    places = _Places(text)
    best: tuple[int, int, int] | None = None  # start, end, label
    pattern = _opening(text, _LABEL_BRACKET_RE, "[")
    if pattern is not None:
        for m in pattern.finditer(text):
            if places.marker(m.start(), m.end()):
                best = (m.start(), m.end(), _label(m.group(1)))
        if best is not None:
            best = (_lead_start(text, best[0]), *best[1:])
    pattern = _opening(text, _DICT_RE, "{")
    if pattern is not None:
        for m in pattern.finditer(text, best[1] if best is not None else 0):
            for key, raw in dict_pairs(normalize(m.group(1))):
                value = DICT_LABEL.fullmatch(raw.lower()) if dict_key(key) in LABEL_KEYS else None
                if value is not None and places.dict(m.start(), m.end()):
                    best = (m.start(), m.end(), _label(*value.groups()))
    fallback = best is None
    if fallback:
        low = _lower(text)
        matches = [m for m in _line_matches(low, _LABEL_LINE, _LABEL_KEYWORDS) if not places.in_quote(m.start())]
        if matches:
            best = (matches[-1].start(), matches[-1].end(), _label(*matches[-1].groups()))
    if best is None:
        tail = low.rstrip()
        m = _LAST_LINE_LABEL.fullmatch(tail, tail.rfind("\n") + 1)
        if m is not None and not places.in_quote(m.end() - 1):
            best = (m.start(), m.end(), _label(*m.groups()))
    if best is None:
        best = stated_verdict(low, places.in_quote)
    if best is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())

    start, end, label = best
    return ParsedCritique(ParseStatus.OK, label=label, explanation=_explanation(text, start, end, fallback))


def parse(text: str, kind: str, score_range: tuple[float, float] = (1, 10)) -> ParsedCritique:
    """Parse a critique according to a template's output kind.

    Args:
        text: the critique as generated.
        kind: ``"score"`` (pointwise grading, :func:`parse_score`) or ``"label"`` (pairwise comparison,
            :func:`parse_label`), as in a prompt template's output spec.
        score_range: inclusive bounds for ``"score"``; ignored for ``"label"``.

    Returns:
        The :class:`ParsedCritique` of the matching parser.

    Raises:
        ValueError: for any other ``kind``, or a bad ``score_range`` with ``kind="score"``.
    """
    if kind == "score":
        return parse_score(text, score_range)
    if kind == "label":
        return parse_label(text)
    raise BadInputError(f"kind must be 'score' or 'label', got {kind!r}")
