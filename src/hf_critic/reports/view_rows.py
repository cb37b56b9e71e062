"""Each critique row as the run viewer shows it: the judged text, the verdict, its confidence and status, the human
label, and whether the critic was right, wrong, abstained or gave no verdict.

The outcome of a row (:data:`OUTCOMES`):

* ``abstained``: a cascade kept no verdict (``critique_status`` is ``abstained``, Trust or Escalate §3);
* ``no verdict``: the critique has no score or label (unparsed, out of range, skipped, low mass): reported as such,
  never as a default verdict;
* ``unlabelled``: a verdict, but no human label to compare it with;
* ``right`` / ``wrong``: pairwise, the verdict equals the human label or not; pointwise, the score lies within
  ``tolerance`` of the human score or not.

The confidence is ``critique_confidence`` where the file has it (probability read-outs, cascades, calibrate's
critiques), else the one :func:`hf_critic.selective.confidence_of` derives from the run's own columns (votes of the
two orders, a reward margin, a verdict distribution).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, normalize_labels

__all__ = ["OUTCOMES", "PageRows", "disagreements", "row_outcomes", "rows_for_page"]

OUTCOMES = ("right", "wrong", "abstained", "no verdict", "unlabelled")
#: The human columns read, pairwise then pointwise (as meta-eval's defaults).
HUMAN_LABEL, HUMAN_SCORE = "label", "human_score"
CATEGORY = "category"


@dataclass
class PageRows:
    """The rows of every row set, their judged text interned once (a question shared by many rows is stored once).

    Attributes:
        texts: the distinct strings; a row names them by index.
        sets: per row set, ``{"name", "critic", "dataset", "path", "task", "counts", "rows"}``; each row is a dict of
            short keys: ``q`` (question), ``ref``, ``r`` (responses), ``c`` (critiques: the text, and the swapped
            order's), ``v`` / ``vs`` (verdict, swapped verdict), ``conf``, ``st`` (status), ``h`` (human), ``o``
            (outcome), ``cat``, ``by`` (the cascade critic that decided).
    """

    texts: list[str] = field(default_factory=list)
    sets: list[dict] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def text(self, value) -> int | None:
        """The index of ``value`` (as text) in :attr:`texts`, added once; None for a missing value."""
        if _missing(value):
            return None
        value = value if isinstance(value, str) else str(value)
        if value not in self._index:
            self._index[value] = len(self.texts)
            self.texts.append(value)
        return self._index[value]


def _missing(value) -> bool:
    """None or NaN (pandas' missing value): no value to show."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _verdict(value, pairwise: bool) -> str | None:
    """A label code as words (``response 1``, ``tie``), a score as a number; None stays None."""
    if _missing(value):
        return None
    if pairwise:
        return LABEL_NAMES.get(int(value), str(value)).replace("_", " ")
    return f"{float(value):g}"


def _column(rows, name: str, n: int) -> list:
    """Column ``name`` of ``rows`` as a list (read once: indexing a dataset's column row by row is slow), or ``n``
    Nones when the file has no such column."""
    return list(rows[name]) if name in rows.column_names else [None] * n


def _confidences(rows) -> list:
    """``critique_confidence``, else the confidence the run's own columns give (None per row without a verdict)."""
    if schema.CRITIQUE_CONFIDENCE in rows.column_names:
        return list(rows[schema.CRITIQUE_CONFIDENCE])
    from ..selective import confidence_of

    columns = {c: list(rows[c]) for c in rows.column_names if c.startswith("critique_")}
    return confidence_of(columns)[0]


def _humans(rows, pairwise: bool, path: str) -> list:
    """The human label codes (pairwise) or scores (pointwise), None where absent.

    Raises:
        ValueError: a label the label reader refuses, or a score that is no number (naming the file and row).
    """
    n = len(rows)
    if pairwise:
        if HUMAN_LABEL not in rows.column_names:
            return [None] * n
        codes = normalize_labels(list(rows[HUMAN_LABEL]), name=f"{path}: {HUMAN_LABEL}")
        return [None if c < 0 else int(c) for c in codes]
    scores = []
    for i, value in enumerate(_column(rows, HUMAN_SCORE, n)):
        try:
            scores.append(None if _missing(value) else float(value))
        except (TypeError, ValueError):
            raise BadInputError(f"{path}: row {i}: {HUMAN_SCORE} {value!r} is no number") from None
    return scores


def row_outcomes(verdicts: list, statuses: list, humans: list, pairwise: bool, tolerance: float) -> list[str]:
    """The outcome (one of :data:`OUTCOMES`) of every row.

    Args:
        verdicts: label codes (pairwise) or scores, None where the critique has none.
        statuses: ``critique_status`` values (None where the file has no status column).
        humans: human label codes or scores, None where absent.
        pairwise: labels (equal or not) rather than scores (within ``tolerance`` or not).
        tolerance: pointwise: the largest ``|score - human score|`` still counted right.

    Returns:
        One outcome per row.
    """
    out = []
    for verdict, status, human in zip(verdicts, statuses, humans, strict=True):
        if status == schema.ParseStatus.ABSTAINED.value:
            out.append("abstained")
        elif verdict is None:
            out.append("no verdict")
        elif human is None:
            out.append("unlabelled")
        elif pairwise:
            out.append("right" if int(verdict) == human else "wrong")
        else:
            out.append("right" if abs(float(verdict) - human) <= tolerance else "wrong")
    return out


def _status(status, verdict) -> str:
    """The row's status: ``critique_status`` where written, else ``ok`` with a verdict and ``no verdict`` without."""
    if status is not None:
        return str(status)
    return schema.ParseStatus.OK.value if verdict is not None else "no verdict"


def _critiques(page: PageRows, rows, n: int) -> list[list]:
    """Per row, the critique text of the first order (explanation, else the raw generation) and the swapped one's."""
    first = [
        e if e is not None else g
        for e, g in zip(
            _column(rows, schema.CRITIQUE_EXPLANATION, n), _column(rows, schema.CRITIQUE_GENERATION, n), strict=True
        )
    ]
    swapped = _column(rows, schema.CRITIQUE_GENERATION_SWAPPED, n)
    return [
        [page.text(a), page.text(b)] if b is not None else [page.text(a)] for a, b in zip(first, swapped, strict=True)
    ]


def _row_set(page: PageRows, row_set, tolerance: float) -> dict:
    """One row set's page entry (see :class:`PageRows`)."""
    rows, n = row_set.rows, len(row_set.rows)
    pairwise = schema.CRITIQUE_LABEL in rows.column_names
    verdicts = _column(rows, schema.CRITIQUE_LABEL if pairwise else schema.CRITIQUE_SCORE, n)
    statuses = _column(rows, schema.CRITIQUE_STATUS, n)
    humans = _humans(rows, pairwise, row_set.path)
    outcomes = row_outcomes(verdicts, statuses, humans, pairwise, tolerance)
    responses = [schema.RESPONSE_1, schema.RESPONSE_2] if pairwise else [schema.RESPONSE]
    columns = {
        name: _column(rows, name, n)
        for name in (
            schema.QUESTION,
            schema.REFERENCE,
            *responses,
            CATEGORY,
            schema.CRITIQUE_LABEL_SWAPPED,
            schema.CRITIQUE_CRITIC,
        )
    }
    confidences, critiques = _confidences(rows), _critiques(page, rows, n)
    entries = []
    for i in range(n):
        confidence = confidences[i]
        entries.append(
            {
                "q": page.text(columns[schema.QUESTION][i]),
                "ref": page.text(columns[schema.REFERENCE][i]),
                "r": [page.text(columns[name][i]) for name in responses],
                "c": critiques[i],
                "v": _verdict(verdicts[i], pairwise),
                "vs": _verdict(columns[schema.CRITIQUE_LABEL_SWAPPED][i], True),
                "conf": None if _missing(confidence) else round(float(confidence), 4),
                "st": _status(statuses[i], verdicts[i]),
                "h": _verdict(humans[i], pairwise),
                "o": outcomes[i],
                "cat": None if _missing(columns[CATEGORY][i]) else str(columns[CATEGORY][i]),
                "by": columns[schema.CRITIQUE_CRITIC][i],
            }
        )
    counts = {o: outcomes.count(o) for o in OUTCOMES}
    return {
        "name": row_set.name,
        "critic": row_set.critic,
        "dataset": row_set.dataset,
        "path": row_set.path,
        "task": "pairwise" if pairwise else "pointwise",
        "counts": counts,
        "rows": entries,
    }


def rows_for_page(row_sets, tolerance: float = 1.0) -> PageRows:
    """The page's rows of every :class:`~hf_critic.reports.runs.RowSet`.

    Args:
        row_sets: the row sets, in the order the page lists them.
        tolerance: pointwise: ``|score - human score|`` at most this is right (default 1.0 point).

    Returns:
        A :class:`PageRows`.

    Raises:
        ValueError: a human label the label reader refuses (naming the file and column).
    """
    page = PageRows()
    for row_set in row_sets:
        page.sets.append(_row_set(page, row_set, tolerance))
    return page


def _aligned(a: dict, b: dict) -> bool:
    """Two row sets judge the same rows: as many rows, each with the same question and responses."""
    return len(a["rows"]) == len(b["rows"]) and all(
        x["q"] == y["q"] and x["r"] == y["r"] for x, y in zip(a["rows"], b["rows"], strict=True)
    )


def disagreements(page: PageRows) -> list[dict]:
    """Every two row sets of ``page`` that judge the same rows, side by side where their verdicts differ (a verdict
    against none counts: one critic decided, the other did not).

    Returns:
        ``[{"a": set index, "b": set index, "rows": [row index, ...], "compared": rows}]``, one per aligned pair.
    """
    pairs = []
    for i, a in enumerate(page.sets):
        for j in range(i + 1, len(page.sets)):
            b = page.sets[j]
            if _aligned(a, b):
                rows = [k for k, (x, y) in enumerate(zip(a["rows"], b["rows"], strict=True)) if x["v"] != y["v"]]
                pairs.append({"a": i, "b": j, "rows": rows, "compared": len(a["rows"])})
    return pairs
