"""Print the verdict of every row of critique files (``make demo``), and whether it matches the known better answer.

python scripts/show_verdicts.py outputs/demo/*.jsonl

Pointwise rows whose ids end in ``-good`` / ``-bad`` are twins (same question): the good one must score higher.
Pairwise rows with a ``label`` column (0 = response 1 better, 1 = response 2 better) must get that label. The last
line counts the verdicts that match, beside "the longer answer wins" on the same rows (more words; equal lengths
count as wrong): a critic that does not beat it has learnt length, not judgement.

A FILE is an ``hf-critic grade`` output (``critique_score``) or an ``hf-critic compare`` output (``critique_label``):
JSONL / JSON / CSV / parquet, a folder of them (one block per file) or a ``save_to_disk`` folder (one block per
split). Labels are read by the project's label vocabulary (0 / 1 / 2, ``"response_1"``, ``"tie"`` ...; see
``hf_critic.core.labels``). Exit status 2 with one line naming file, row and field on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hf_critic.io import RecordError
from hf_critic.loaders._rows import field
from hf_critic.loaders.generic import row_verdicts, rows_by_source

LABELS = {0: "response 1", 1: "response 2", 2: "tie", None: "no verdict"}


def _mark(ok: bool | None) -> str:
    return {True: "right", False: "WRONG", None: ""}[ok]


def _twins(rows: list, scores: list) -> dict[str, bool | None]:
    """``{question id: good scored above bad}`` for rows whose ids end in -good / -bad (None when unscored)."""
    by_stem: dict[str, dict[str, float | None]] = {}
    for (_, row), score in zip(rows, scores, strict=True):
        stem, _, kind = str(row.get("id", "")).rpartition("-")
        if kind in ("good", "bad"):
            by_stem.setdefault(stem, {})[kind] = score
    return {
        stem: None if None in (s.get("good"), s.get("bad")) else s["good"] > s["bad"]
        for stem, s in by_stem.items()
        if len(s) == 2
    }


def _words(row: dict, name: str) -> int:
    return len(str(row.get(name, "")).split())


def longer_wins(rows: list) -> list[bool | None]:
    """Per row, whether "the longer answer wins" gets it right, where :func:`verdicts` checks the row (None
    elsewhere): a -good twin's answer longer than its -bad twin's; a pairwise row's label on the longer response."""
    where, first = rows[0]
    if "critique_score" in first:
        lengths = {str(row.get("id", "")): _words(row, "response") for _, row in rows}
        out = []
        for _, row in rows:
            stem, _, kind = str(row.get("id", "")).rpartition("-")
            bad = lengths.get(f"{stem}-bad")
            out.append(lengths[f"{stem}-good"] > bad if kind == "good" and bad is not None else None)
        return out
    gold = row_verdicts(rows, "pairwise", "label") if any("label" in r for _, r in rows) else [None] * len(rows)
    out = []
    for (_, row), g in zip(rows, gold, strict=True):
        one, two = _words(row, "response_1"), _words(row, "response_2")
        out.append(None if g not in (0, 1) else one != two and g == (0 if one > two else 1))
    return out


def verdicts(rows: list) -> list[tuple[str, bool | None, bool]]:
    """``(verdict, matches the known better answer or None, pointwise)`` per row; the shape is the first row's."""
    where, first = rows[0]
    if "critique_score" in first:
        scores = row_verdicts(rows, "pointwise", "critique_score")
        twins = _twins(rows, scores)
        out = []
        for (_, row), score in zip(rows, scores, strict=True):
            stem, _, kind = str(row.get("id", "")).rpartition("-")
            verdict = "no verdict" if score is None else f"score {score:.2f}"
            out.append((verdict, twins.get(stem) if kind == "good" else None, True))
        return out
    if "critique_label" not in first:
        raise RecordError(
            f"{where}: neither field 'critique_score' (hf-critic grade) nor 'critique_label' (hf-critic compare); "
            f"the row has {sorted(first)}"
        )
    labels = row_verdicts(rows, "pairwise", "critique_label")
    gold = row_verdicts(rows, "pairwise", "label") if any("label" in r for _, r in rows) else [None] * len(rows)
    decided = (0, 1)  # a tie in the gold is shown, not checked
    return [(LABELS[c], c == g if g in decided else None, False) for c, g in zip(labels, gold, strict=True)]


def main(argv: list[str] | None = None) -> int:
    """Print each file's verdicts and the count that match; returns the exit status (2 on bad input)."""
    parser = argparse.ArgumentParser(prog=Path(__file__).name, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="hf-critic grade / compare outputs (JSONL, JSON, CSV, parquet), folders of them or save_to_disk folders",
    )
    args = parser.parse_args(argv)
    right = total = longer = 0
    try:
        for name, rows in rows_by_source(args.files):
            print(name)
            checked = verdicts(rows)  # first: it names what a file that is neither kind lacks
            longer += sum(bool(ok) for ok in longer_wins(rows))
            for (where, row), (verdict, ok, graded) in zip(rows, checked, strict=True):
                question = " ".join(str(row.get("question", "")).split())[:60]
                mass = field(row, "critique_verdict_mass", where, kind="score", default=None)
                extra = f" (verdict mass {mass:.2f})" if mass is not None else ""
                note = f"  good above its bad twin: {_mark(ok)}" if graded and ok is not None else ""
                note = note or (f"  {_mark(ok)}" if ok is not None else "")
                print(f"  {verdict:<12} [{row.get('critique_status')}]{extra}  {question}{note}")
                if ok is not None:
                    right, total = right + ok, total + 1
    except (ValueError, OSError) as err:  # RecordError, unreadable files: one line naming file, row and field
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    print(f"{right} of {total} verdicts match the known better answer (the longer answer wins: {longer} of {total})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
