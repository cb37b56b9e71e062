"""CriticBench's verdict parsers and objective metrics (Lan et al., 2024, §3-4; open-compass/CriticEval evaluators).

Parsers (one per verdict format the prompts ask for, :mod:`hf_critic.criticbench.prompts`):

* ``decision_score``: feedback, ``Decision: x`` with x a 1-7 Likert score;
* ``decision_option``: comparison, ``Decision: A``, ``B`` or ``C`` (0 = A better, 1 = B, 2 = neither);
* ``score``: meta-feedback, ``Score: x`` with x in 1-7;
* ``math_answer``: chain-of-thought correction, the last number of the text;
* ``code``: code correction, the first fenced code block (or the whole text when it has no fence);
* ``text``: subjective outputs (free-text critiques and corrections, judged by GPT-4 in the paper): any non-empty
  text counts as an answer; there is nothing to parse.

A verdict is read from the first ``Decision:`` / ``Score:`` line only, as CriticEval does (the keyword may also be
its Chinese translation, ``决策：B``, which models answering the Chinese translation task write); unlike CriticEval, a
line that does not hold a verdict (``Decision: A/B/C.``, the instruction echoed) is *unparsed*, and no fallback
guesses one from the first word or the last number of the text. Unparsed verdicts are counted and left out of
correlations; in comparison accuracy a pair with an unparsed order counts as wrong, as in CriticEval.

Metrics (CriticEval ``critic_bench/run_*.py`` and ``compute_overall.py``):

* feedback: Spearman x 100 between the critic's scores and the human ``feedback_score``, pooled over all tasks;
* comparison: accuracy x 100 over forward and reversed order (see :func:`comparison_accuracy`);
* correction: pass rate x 100 per task (math answer matched, or code run against the unit tests in
  :func:`hf_critic.criticbench.sandbox.run_python`), averaged over tasks;
* meta-feedback: Spearman x 100 with the human ``meta_feedback_score``, pooled;
* overall (objective): mean of the four, feedback and meta-feedback first mapped from [-100, 100] to [0, 100].
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scipy import stats

from ..core.errors import BadInputError
from ..core.schema import ParseStatus
from ..io import RecordError
from ..parsing import ParsedCritique, normalize

__all__ = [
    "VERDICT_KINDS",
    "comparison_accuracy",
    "comparison_consistency",
    "correction_passed",
    "extract_code",
    "overall_objective",
    "parse_math_answer",
    "parse_verdict",
    "spearman_x100",
    "verdict_kind",
]

VERDICT_KINDS = ("decision_score", "decision_option", "score", "math_answer", "code", "text")
SCORE_RANGE = (1.0, 7.0)
_KEY = r"(?:\*\*|__)?\s*{word}\s*(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?[ \t]*(?P<value>[^\n]*)"
# The keyword as the prompts ask for it, and as models answering in Chinese translate it (决策：B, 決定：B).
_DECISION = re.compile(_KEY.format(word="(?:decision|决策|決策|决定|決定)"), re.IGNORECASE)
_SCORE = re.compile(_KEY.format(word="(?:score|分数|分數|得分|评分|評分)"), re.IGNORECASE)
_NUMBER = re.compile(r"[`'\"(\[]*(?P<n>[+-]?\d+(?:\.\d+)?)(?:\s*/\s*7(?!\d))?(?![\d/])")  # "6", "6.5", "6/7"
_OPTION = re.compile(r"[`'\"(\[]*(?P<letter>[ABC])(?![A-Za-z0-9/])")
# A whole answer that is nothing but the verdict ("7", "B.") is one too (CriticEval reads the first word; we read
# only an answer with no other word).
_BARE = re.compile(r"\s*[`'\"(\[]*(?P<value>[ABC]|\d+(?:\.\d+)?)[`'\")\]]*\.?\s*")
_FENCE = re.compile(r"```(?P<lang>[A-Za-z0-9_+-]*)[^\n]*\n(?P<code>.*?)```", re.DOTALL)
_TOKEN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?")


def verdict_kind(dimension: str, evaluation: str, task: str) -> str:
    """The verdict format of a prediction file (one of :data:`VERDICT_KINDS`).

    Args:
        dimension: ``feedback``, ``comp_feedback``, ``correction`` or ``meta_feedback``.
        evaluation: ``obj`` or ``sub``.
        task: a CriticBench task (decides math answer vs code for objective correction).
    """
    if evaluation == "sub":
        return "text"
    if dimension == "correction":
        return "math_answer" if task == "math_cot" else "code"
    return {"feedback": "decision_score", "comp_feedback": "decision_option", "meta_feedback": "score"}[dimension]


def _verdict_line(pattern: re.Pattern, text: str) -> re.Match | None:
    return pattern.search(text) or _BARE.fullmatch(normalize(text))


def _scored(match: re.Match | None, text: str) -> ParsedCritique:
    if match is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    number = _NUMBER.match(normalize(match["value"]))
    if number is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    score = float(number["n"])
    low, high = SCORE_RANGE
    if not low <= score <= high:
        return ParsedCritique(ParseStatus.OUT_OF_RANGE, explanation=text.strip())
    return ParsedCritique(ParseStatus.OK, score=score, explanation=text.strip())


def parse_verdict(text: str, kind: str) -> ParsedCritique:
    """Parse one prediction in the format ``kind`` (see the module docstring).

    Args:
        text: the model's output.
        kind: one of :data:`VERDICT_KINDS`.

    Returns:
        :class:`~hf_critic.parsing.ParsedCritique`: ``score`` (1-7) for ``decision_score`` / ``score``, ``label``
        (0 = A, 1 = B, 2 = C) for ``decision_option``, ``score`` = the number for ``math_answer``, ``explanation`` =
        the code for ``code`` and the text for ``text``. Status ``unparsed`` when nothing is found, ``out_of_range``
        for a score outside 1-7; only ``ok`` carries a value.

    Raises:
        ValueError: an unknown kind.
    """
    if kind == "decision_score":
        return _scored(_verdict_line(_DECISION, text), text)
    if kind == "score":
        return _scored(_verdict_line(_SCORE, text), text)
    if kind == "decision_option":
        match = _verdict_line(_DECISION, text)
        option = match and _OPTION.match(normalize(match["value"]).strip())
        if not option:
            return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
        return ParsedCritique(ParseStatus.OK, label="ABC".index(option["letter"]), explanation=text.strip())
    if kind == "math_answer":
        value = parse_math_answer(text)
        if value is None:
            return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
        return ParsedCritique(ParseStatus.OK, score=value, explanation=text.strip())
    if kind == "code":
        code = extract_code(text)
        status = ParseStatus.OK if code else ParseStatus.UNPARSED
        return ParsedCritique(status, explanation=code or text.strip())
    if kind == "text":
        status = ParseStatus.OK if text.strip() else ParseStatus.UNPARSED
        return ParsedCritique(status, explanation=text.strip())
    raise BadInputError(f"unknown CriticBench verdict kind {kind!r}; expected one of {VERDICT_KINDS}")


def parse_math_answer(text: Any) -> float | None:
    """The final answer of a math rationale: the last whitespace-separated token that is a number.

    As CriticEval's ``parse_math_result``: newlines count as spaces, ``=`` is followed by a space, and the text is
    read from the end. A token may carry surrounding punctuation (``$``, ``.``, ``,``, ``**``, brackets) and be an
    integer, a decimal or a fraction ``a/b``; thousands separators are dropped (``1,000`` -> 1000). Unlike
    CriticEval, 0 is an answer (its truth test skipped it). A mapping (gold answers are sometimes stored as
    ``{"Rationale": ...}`` / ``{"Answer": ...}``) is read from that key.

    Returns:
        The number as a float, or None when the text has none.
    """
    if isinstance(text, Mapping):
        text = next((text[k] for k in ("Rationale", "rationale", "Answer", "answer") if k in text), None)
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        return None
    for token in reversed(normalize(text).replace("\n", " ").replace("=", "= ").split()):
        token = re.sub(r"(?<=\d),(?=\d{3}\b)", "", token).strip("$*`'\"()[]{}<>,.;:!?%")
        if _TOKEN_NUMBER.fullmatch(token):
            numerator, _, denominator = token.partition("/")
            if denominator:
                return float(numerator) / float(denominator) if float(denominator) else None
            return float(numerator)
    return None


def extract_code(text: str) -> str | None:
    """The program in a model's answer: the first ```python (or ```py / untagged) fenced block; the whole text when
    it has no fence at all (CriticEval ``parse_code``); None when fences are present but none holds code."""
    blocks = [m for m in _FENCE.finditer(text) if m["lang"].lower() in ("python", "py", "python3", "")]
    python = [m for m in blocks if m["lang"]]
    chosen = (python or blocks)[:1]
    if chosen:
        code = chosen[0]["code"]
        return code if code.strip() else None
    if "```" in text:
        return None
    return text if text.strip() else None


def _first_function(code: str) -> str | None:
    match = re.search(r"^\s*def\s+([A-Za-z_]\w*)\s*\(", code, re.MULTILINE) or re.search(
        r"assert\s+([A-Za-z_]\w*)\s*\(", code
    )
    return match.group(1) if match else None


_PREAMBLE = (
    "import collections, datetime, functools, heapq, itertools, math, random, re, string, sys, time\n"
    "from collections import Counter, OrderedDict, defaultdict, deque\n"
    "from typing import Any, Dict, List, Optional, Tuple\n"
)


def _numbers_match(printed: str, gold: float) -> bool:
    """CriticEval's math-PoT test: a printed line equal to the answer, as a number or truncated to an integer."""
    for line in printed.splitlines():
        value = parse_math_answer(line.strip()) if line.strip() else None
        if value is None:
            continue
        if math.isclose(value, gold, rel_tol=1e-9, abs_tol=1e-9):
            return True
        if float(gold).is_integer() and math.isfinite(value) and int(value) == int(gold):
            return True
    return False


def correction_passed(
    prediction: str, task: str, record: Mapping[str, Any], *, timeout: float = 10.0, memory_mb: int = 2048
) -> tuple[bool, str]:
    """Whether one objective correction is right (CriticBench §3.3; CriticEval ``correction_evaluator.py``).

    * ``math_cot``: the last number of the prediction equals that of ``record["reference"]`` (the gold answer);
    * ``math_pot``: the fenced code defines ``Solution().solution()``; run in the sandbox, a printed line must equal
      the gold answer (see :func:`parse_math_answer`);
    * ``code_exec`` / ``code_not_exec``: the fenced code followed by ``record["unit_test"]`` (plus
      ``check(<first function>)`` for HumanEval items, ``data_source == "humaneval"``) must exit 0 in the sandbox.

    Args:
        prediction: the model's corrected response.
        task: one of ``math_cot``, ``math_pot``, ``code_exec``, ``code_not_exec``.
        record: a :func:`hf_critic.criticbench.loaders.load_criticbench` correction row (``reference``,
            ``unit_test``, ``data_source``).
        timeout, memory_mb: sandbox limits per program.

    Returns:
        ``(passed, reason)``; reason is ``"passed"``, ``"unparsed"`` (no answer / no code), ``"wrong answer"``,
        ``"no gold answer"``, ``"timeout"`` or ``"failed: <last stderr line>"``.

    Raises:
        ValueError: a task without objective correction.
    """
    from .sandbox import run_python

    if task == "math_cot":
        gold = parse_math_answer(record.get("reference"))
        answer = parse_math_answer(prediction)
        if gold is None:
            return False, "no gold answer"
        if answer is None:
            return False, "unparsed"
        right = math.isclose(answer, gold, rel_tol=1e-9, abs_tol=1e-9)
        return right, "passed" if right else "wrong answer"
    if task not in ("math_pot", "code_exec", "code_not_exec"):
        raise BadInputError(f"CriticBench task {task!r} has no objective correction")
    code = extract_code(prediction)
    if not code:
        return False, "unparsed"
    if task == "math_pot":
        gold = parse_math_answer(record.get("reference"))
        if gold is None:
            return False, "no gold answer"
        result = run_python(
            _PREAMBLE + code + "\nprint(Solution().solution())\n", timeout=timeout, memory_mb=memory_mb
        )
        if result.status == "passed" and not _numbers_match(result.stdout, gold):
            return False, "wrong answer"
    else:
        program = code + "\n" + (record.get("unit_test") or "")
        if record.get("data_source") == "humaneval":
            name = _first_function(program)
            program += f"\ncheck({name})\n" if name else ""
        result = run_python(_PREAMBLE + program, timeout=timeout, memory_mb=memory_mb)
    if result.status == "timeout":
        return False, "timeout"
    if result.status != "passed":
        last = (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
        return False, f"failed: {last[:200]}"
    return True, "passed"


def spearman_x100(predicted: Sequence[float | None], gold: Sequence[float], groups: Sequence[Any] | None = None):
    """Spearman correlation x 100 of the parsed predictions with the gold scores (CriticEval feedback and
    meta-feedback), overall and per group (e.g. response quality).

    Args:
        predicted: one score per item, None where the verdict did not parse (left out, counted).
        gold: the human scores, same length.
        groups: optional group of each item for the breakdown.

    Returns:
        ``{"spearman": float (nan with fewer than 2 parsed items or constant scores), "n": items,
        "parsed": parsed items, "unparsed": n - parsed, "by_group": {group: {"spearman", "parsed", "n"}}}``.

    Raises:
        ValueError: lengths differ.
    """
    if len(predicted) != len(gold) or (groups is not None and len(groups) != len(gold)):
        raise BadInputError(
            f"{len(predicted)} predictions, {len(gold)} gold scores and groups must have equal lengths"
        )

    def rho(pairs: list[tuple[float, float]]) -> float:
        xs, ys = zip(*pairs, strict=True) if pairs else ((), ())
        if len(pairs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
            return float("nan")
        return 100.0 * float(stats.spearmanr(xs, ys).statistic)

    pairs = [(p, float(g)) for p, g in zip(predicted, gold, strict=True) if p is not None]
    result = {"spearman": rho(pairs), "n": len(gold), "parsed": len(pairs), "unparsed": len(gold) - len(pairs)}
    if groups is not None:
        by: dict[Any, list] = defaultdict(list)
        sizes = Counter(groups)
        for p, g, group in zip(predicted, gold, groups, strict=True):
            if p is not None:
                by[group].append((p, float(g)))
        result["by_group"] = {
            group: {"spearman": rho(by[group]), "parsed": len(by[group]), "n": sizes[group]} for group in sizes
        }
    return result


def comparison_accuracy(
    forward: Sequence[int | None], reverse: Sequence[int | None], gold: Sequence[int]
) -> dict[str, float | int]:
    """Comparison accuracy x 100 over both orders (CriticBench §3.2; CriticEval ``comp_feedback_evaluator.py``).

    Args:
        forward: the verdict on (A, B) per pair: 0 = A better, 1 = B better, 2 = neither; None = unparsed.
        reverse: the verdict on the swapped pair (B shown as A), in the swapped terms (not mapped back).
        gold: the preference per pair (0 / 1 / 2).

    Returns:
        ``accuracy``: CriticEval's rule: a pair counts when both orders parse, the two verdicts differ (the same
        letter twice is position bias) and the forward verdict equals the preference; every other pair counts 0.
        ``accuracy_strict``: the same with consistency read as the reverse verdict mapped back equal to the forward
        one (A<->B, C<->C), so a forward A with a reverse C no longer counts. Also ``n``, ``both_parsed``.

    Raises:
        ValueError: lengths differ.
    """
    if not len(forward) == len(reverse) == len(gold):
        raise BadInputError(f"forward {len(forward)}, reverse {len(reverse)} and gold {len(gold)} lengths differ")
    swap = {0: 1, 1: 0, 2: 2}
    loose = strict = both = 0
    for f, r, g in zip(forward, reverse, gold, strict=True):
        if f is None or r is None:
            continue
        both += 1
        loose += f != r and f == g
        strict += swap[r] == f and f == g
    n = len(gold)
    return {
        "accuracy": 100.0 * loose / n if n else float("nan"),
        "accuracy_strict": 100.0 * strict / n if n else float("nan"),
        "n": n,
        "both_parsed": both,
    }


def comparison_consistency(forward: Sequence[int | None], reverse: Sequence[int | None]) -> dict[str, float | int]:
    """Order consistency of comparison verdicts (no gold needed).

    Args:
        forward, reverse: as in :func:`comparison_accuracy` (reverse in swapped terms).

    Returns:
        ``n`` pairs, ``both_parsed``, ``consistent`` (reverse mapped back equals forward: A<->B, C<->C),
        ``consistency`` = consistent / both_parsed x 100, ``same_letter`` (the same letter A or B in both orders:
        the position, not the answer, decided) and ``differ_rate`` (CriticEval's test: the two letters differ) x 100
        of both_parsed.
    """
    if len(forward) != len(reverse):
        raise BadInputError(f"forward {len(forward)} and reverse {len(reverse)} lengths differ")
    swap = {0: 1, 1: 0, 2: 2}
    pairs = [(f, r) for f, r in zip(forward, reverse, strict=True) if f is not None and r is not None]
    consistent = sum(swap[r] == f for f, r in pairs)
    same = sum(f == r and f != 2 for f, r in pairs)
    differ = sum(f != r for f, r in pairs)
    both = len(pairs)
    return {
        "n": len(forward),
        "both_parsed": both,
        "consistent": consistent,
        "consistency": 100.0 * consistent / both if both else float("nan"),
        "same_letter": same,
        "differ_rate": 100.0 * differ / both if both else float("nan"),
    }


def overall_objective(
    feedback: float | None = None,
    comparison: float | None = None,
    correction: float | None = None,
    meta_feedback: float | None = None,
) -> float:
    """CriticBench's objective overall score (CriticEval ``compute_overall.py``): the mean of the given dimension
    scores, feedback and meta-feedback (Spearman x 100, in [-100, 100]) first mapped to [0, 100] by (s + 100) / 2.

    Raises:
        ValueError: no score given, or a given score is NaN.
    """
    scores = []
    for name, value in (
        ("feedback", feedback),
        ("comparison", comparison),
        ("correction", correction),
        ("meta_feedback", meta_feedback),
    ):
        if value is None:
            continue
        if math.isnan(value):
            raise BadInputError(f"overall_objective: {name} is NaN")
        scores.append((value + 100.0) / 2.0 if name in ("feedback", "meta_feedback") else value)
    if not scores:
        raise BadInputError("overall_objective: no dimension score given")
    return sum(scores) / len(scores)


def parse_counts(statuses: Iterable[ParseStatus]) -> dict[str, int]:
    """``{"n", "parsed", "unparsed", "out_of_range"}`` of a run of parse outcomes."""
    counts = Counter(statuses)
    return {
        "n": sum(counts.values()),
        "parsed": counts[ParseStatus.OK],
        "unparsed": counts[ParseStatus.UNPARSED],
        "out_of_range": counts[ParseStatus.OUT_OF_RANGE],
    }


# --------------------------------------------------------------------------------------------------
# Reports over prediction folders
# --------------------------------------------------------------------------------------------------
def parse_rates(predictions) -> list[dict[str, Any]]:
    """Parse outcome of every prediction file (a :func:`~hf_critic.criticbench.loaders.load_criticbench_predictions`
    dataset): one row per file with ``file``, ``kind`` (the verdict format), ``n``, ``parsed``, ``unparsed``,
    ``out_of_range`` and ``parse_rate`` (x 100), in file order."""
    statuses: dict[str, list] = defaultdict(list)
    kinds: dict[str, str] = {}
    for row in predictions:
        kind = kinds.setdefault(row["file"], verdict_kind(row["dimension"], row["evaluation"], row["task"]))
        statuses[row["file"]].append(parse_verdict(row["prediction"], kind).status)
    rows = []
    for name, outcomes in statuses.items():
        counts = parse_counts(outcomes)
        rows.append(
            {"file": name, "kind": kinds[name], **counts, "parse_rate": 100.0 * counts["parsed"] / counts["n"]}
        )
    return rows


def _labels_by_key(predictions, part: str) -> dict[tuple[str, str], dict[int, int | None]]:
    """{(split, task): {index: label or None}} of the objective comparison files of one part (main / reverse)."""
    out: dict[tuple[str, str], dict[int, int | None]] = defaultdict(dict)
    for row in predictions:
        if row["dimension"] == "comp_feedback" and row["evaluation"] == "obj" and row["part"] == part:
            out[(row["split"], row["task"])][row["index"]] = parse_verdict(row["prediction"], "decision_option").label
    return out


def consistency_by_task(predictions) -> list[dict[str, Any]]:
    """:func:`comparison_consistency` of the objective comparison verdicts, per split and task, pairing each item of
    ``*_comp_feedback_obj.json`` with the same item of ``*_comp_feedback_obj_reverse.json``; plus an ``all`` row per
    split. Items present in only one of the two files are left out (``n`` counts the pairs)."""
    forward, reverse = _labels_by_key(predictions, "main"), _labels_by_key(predictions, "reverse")
    rows, pooled = [], defaultdict(lambda: ([], []))
    for key in sorted(forward, key=lambda k: (k[0], _task_order(k[1]))):
        shared = sorted(set(forward[key]) & set(reverse.get(key, {})))
        f = [forward[key][i] for i in shared]
        r = [reverse[key][i] for i in shared]
        pooled[key[0]][0].extend(f)
        pooled[key[0]][1].extend(r)
        rows.append({"split": key[0], "task": key[1], **comparison_consistency(f, r)})
    for split, (f, r) in sorted(pooled.items()):
        rows.append({"split": split, "task": "all", **comparison_consistency(f, r)})
    return rows


def _task_order(task: str) -> int:
    from .prompts import CRITICBENCH_TASKS

    return CRITICBENCH_TASKS.index(task) if task in CRITICBENCH_TASKS else len(CRITICBENCH_TASKS)


def objective_scores(predictions, root, split: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """CriticBench's objective scores of one split's predictions against the gold of a Hub-layout folder.

    Predictions are matched to gold items by file name and item key (CriticEval's file order), so a folder holding
    only the first N items of each file (a ``--limit`` run) is scored on those items.

    Args:
        predictions: a :func:`~hf_critic.criticbench.loaders.load_criticbench_predictions` dataset.
        root: the benchmark folder (``obj_test_data/`` ...).
        split: ``dev`` or ``test``.
        timeout: sandbox seconds per program (correction).

    Returns:
        ``{"feedback": spearman dict (by quality), "comparison": accuracy dict, "correction": {"pass_rate": mean over
        tasks, "by_task": {task: {"pass_rate", "n", "reasons"}}}, "meta_feedback": spearman dict, "overall": float or
        None}``; a dimension without predictions is None.
    """
    from .loaders import load_criticbench

    mine = predictions.filter(lambda r: r["split"] == split and r["evaluation"] == "obj")
    answers = {(r["file"], r["index"]): r["prediction"] for r in mine}

    def gold(dimension: str):
        try:
            return load_criticbench(root, dimension, split=split, evaluation="obj")
        except RecordError:
            return None

    def matched(records, suffix: str = ""):
        return [
            (r, answers[(r["prediction_file"].replace(".json", suffix + ".json"), r["index"])])
            for r in records
            if (r["prediction_file"].replace(".json", suffix + ".json"), r["index"]) in answers
        ]

    result: dict[str, Any] = {"feedback": None, "comparison": None, "correction": None, "meta_feedback": None}
    for dimension in ("feedback", "meta_feedback"):
        records = gold(dimension)
        pairs = matched(records) if records is not None else []
        if pairs:
            kind = "decision_score" if dimension == "feedback" else "score"
            result[dimension] = spearman_x100(
                [parse_verdict(text, kind).score for _, text in pairs],
                [r["human_score"] for r, _ in pairs],
                [r["quality"] for r, _ in pairs],
            )
    records = gold("comp_feedback")
    if records is not None:
        forward = {(r["prediction_file"], r["index"]): (r, text) for r, text in matched(records)}
        both = [
            (r, text, answers[(f.replace(".json", "_reverse.json"), i)])
            for (f, i), (r, text) in forward.items()
            if (f.replace(".json", "_reverse.json"), i) in answers
        ]
        if both:
            result["comparison"] = comparison_accuracy(
                [parse_verdict(f, "decision_option").label for _, f, _ in both],
                [parse_verdict(b, "decision_option").label for _, _, b in both],
                [r["label"] for r, _, _ in both],
            )
    records = gold("correction")
    if records is not None:
        result["correction"] = _correction_scores(matched(records), timeout)
    scores = {
        "feedback": result["feedback"] and result["feedback"]["spearman"],
        "comparison": result["comparison"] and result["comparison"]["accuracy"],
        "correction": result["correction"] and result["correction"]["pass_rate"],
        "meta_feedback": result["meta_feedback"] and result["meta_feedback"]["spearman"],
    }
    given = {k: v for k, v in scores.items() if v is not None and not math.isnan(v)}
    result["overall"] = overall_objective(**given) if given else None
    return result


def _correction_scores(pairs, timeout: float) -> dict[str, Any] | None:
    """``{"pass_rate": mean over tasks, "by_task": {task: {"pass_rate", "n", "reasons"}}, "sandbox": the network
    isolation the programs ran under}`` of the objective corrections ``pairs`` (``(gold record, prediction)``), each
    program run in the sandbox; None without any."""
    from .loaders import OBJECTIVE_CORRECTION_TASKS
    from .sandbox import isolation

    by_task: dict[str, dict[str, Any]] = {}
    for task in OBJECTIVE_CORRECTION_TASKS:
        outcomes = [correction_passed(text, task, r, timeout=timeout) for r, text in pairs if r["task"] == task]
        if outcomes:
            by_task[task] = {
                "pass_rate": 100.0 * sum(ok for ok, _ in outcomes) / len(outcomes),
                "n": len(outcomes),
                "reasons": dict(Counter(reason.split(":")[0] for _, reason in outcomes)),
            }
    if not by_task:
        return None
    mean = sum(t["pass_rate"] for t in by_task.values()) / len(by_task)
    return {"pass_rate": mean, "by_task": by_task, "sandbox": isolation()}
