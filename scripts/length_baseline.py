"""The "longer response wins" baseline on critique files, beside the critic's own figures.

python scripts/length_baseline.py outputs/heldout/*.jsonl

Human and GPT-4 judges both favour longer answers, so a critic must beat length to show judgement. For files of
``hf-critic compare`` (``response_1``, ``response_2``, ``label``): the longer response (in words) as the verdict
(``hf_critic.meta_eval.length.longer_wins``, equal lengths to response 1: never a tie): three-way first-order
agreement with ``label`` and two-way accuracy on the pairs whose label is not a tie. For files of ``hf-critic grade`` (``response``, ``human_score``, ``query_id``): the length as the score:
within-question accuracy and row-level Pearson with ``human_score``. Uses the toolkit's own meta-evaluation functions.

A FILE is a JSONL / JSON / CSV / parquet file, a folder of them (one line per file) or a ``save_to_disk`` folder (one
line per split). Labels are read by the project's label vocabulary (0 / 1 / 2, ``"response_1"``, ``"tie"`` ...; see
``hf_critic.core.labels``); rows without a label or a human score are left out and counted. ``--format`` reads a benchmark
itself with its ``hf-critic meta-eval`` loader: ``--format alpacaeval`` maps AlpacaEval's ``preference`` (1.0 =
output_1, 2.0 = output_2, 1.5 = tie). Exit status 2 with one line naming file, row and field on bad input.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

from hf_critic.core.labels import TIE
from hf_critic.io import RecordError
from hf_critic.loaders import FORMATS, load_benchmark
from hf_critic.loaders._rows import field
from hf_critic.loaders.generic import row_verdicts, rows_by_source
from hf_critic.meta_eval.length import longer_wins
from hf_critic.meta_eval.within_question import within_question_accuracy

PAIRWISE = ("response_1", "response_2", "label")
POINTWISE = ("response", "human_score", "query_id")


def _words(row: dict, name: str, where: str) -> int:
    return len(field(row, name, where, kind="str").split())


def _kept(rows: list, name: str, task: str) -> tuple[list, list, str]:
    """The rows whose ``name`` holds a verdict, their verdicts, and the note on those left out ('' for none)."""
    values = row_verdicts(rows, task, name)
    kept = [(row, value) for row, value in zip(rows, values, strict=True) if value is not None]
    if not kept:
        raise RecordError(f"{rows[0][0]}: no row has a {name!r} (all {len(rows)} are null)")
    note = f" ({len(rows) - len(kept)} rows without a {name} left out)" if len(kept) < len(rows) else ""
    return [row for row, _ in kept], [value for _, value in kept], note


def pairwise(rows: list) -> str:
    """``longer wins``: three-way agreement (ties count as wrong: it never says tie) and two-way accuracy, in %."""
    rows, labels, note = _kept(rows, "label", "pairwise")
    gold = np.array(labels)
    one, two = ([_words(r, name, w) for w, r in rows] for name in ("response_1", "response_2"))
    longer = longer_wins(np.array(one), np.array(two), ties="response_1")[0]
    decided = gold != TIE
    two_way = f"{100 * np.mean(longer[decided] == gold[decided]):.2f}" if decided.any() else "n/a"
    return (
        f"longer response wins: first order agreement {100 * np.mean(longer == gold):.2f} over {len(rows)} pairs, "
        f"two-way accuracy {two_way} over {int(decided.sum())} pairs{note}"
    )


def pointwise(rows: list) -> str:
    """``length as the score``: within-question accuracy (ties half) and row-level Pearson with the human score."""
    rows, human, note = _kept(rows, "human_score", "pointwise")
    if len(rows) < 2:
        raise RecordError(f"{rows[0][0]}: one row with a 'human_score': a correlation needs two")
    lengths = [_words(r, "response", w) for w, r in rows]
    wq = within_question_accuracy(lengths, human, [field(r, "query_id", w, kind="any") for w, r in rows])
    with warnings.catch_warnings():  # equal lengths or scores: Pearson is nan, printed as such
        warnings.simplefilter("ignore")
        pearson = pearsonr(lengths, human)[0]
    return (
        f"length as the score: within-question accuracy {100 * wq['within_question_accuracy']:.1f}% over "
        f"{wq['within_question_pairs']} pairs, row-level Pearson {pearson:.3f} over {len(rows)} rows{note}"
    )


def baseline(rows: list) -> str:
    """The baseline line of one source's ``(location, row)`` pairs; its shape is its first row's."""
    where, first = rows[0]
    if set(PAIRWISE) <= first.keys():
        return pairwise(rows)
    if set(POINTWISE) <= first.keys():
        return pointwise(rows)
    hint = "; AlpacaEval annotations? pass --format alpacaeval" if {"output_1", "preference"} <= first.keys() else ""
    raise RecordError(
        f"{where}: neither compare rows ({', '.join(PAIRWISE)}) nor graded rows ({', '.join(POINTWISE)}); "
        f"the row has {sorted(first)}{hint}"
    )


def _benchmarks(paths: list[str], fmt: str):
    """``(name, rows)`` of each path read by the ``fmt`` loader (the benchmark's own label convention)."""
    for path in paths:
        dataset = load_benchmark(fmt, path)
        if not len(dataset):
            raise RecordError(f"{path}: no rows for --format {fmt}")
        rows = [(row.get("location") or f"{path}[row {i}]", row) for i, row in enumerate(dataset)]
        yield Path(path).name, rows


def main(argv: list[str] | None = None) -> int:
    """Print one baseline line per file (or split); returns the exit status (2 on bad input, with one line)."""
    parser = argparse.ArgumentParser(
        prog=Path(__file__).name, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="hf-critic compare / grade outputs, or folders")
    parser.add_argument(
        "--format",
        choices=sorted(set(FORMATS) - {"generic"}),
        help="read each FILE as this benchmark format (hf-critic meta-eval's --format), not as critique rows",
    )
    args = parser.parse_args(argv)
    sources = _benchmarks(args.files, args.format) if args.format else rows_by_source(args.files)
    try:
        for name, rows in sources:
            print(f"{name}: {baseline(rows)}")
    except (ValueError, OSError) as err:  # RecordError, the loaders' errors, unreadable files: one line each
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
