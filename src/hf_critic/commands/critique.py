"""``hf-critic grade`` and ``hf-critic compare``: critiques for a file of LLM responses."""

from __future__ import annotations

import argparse
import time

from ..core.errors import BadInputError
from .arguments import add_dataclass_args, add_option
from .cascades import add_cascade_args, run_cascade_command
from .exit_status import DONE
from .option_groups import HumanOptions, PairOptions
from .options import (
    add_cache_args,
    add_critic_args,
    add_data_args,
    add_decoding_args,
    add_endpoint_args,
    add_gold_args,
    add_model_args,
    critic_from_args,
    decoding_from_args,
    gold_from_args,
    select_rows,
)

EPILOG = """\
The setting is chosen from the data: referenced when a `reference` column is present, reference-free
otherwise (force it with --referenced / --reference-free). Finished generations are cached (--cache), so a
killed run started again redoes no finished work, and a rerun of the same configuration makes no model call.
"""


def _common(parser: argparse.ArgumentParser):
    """The options of grade and compare; returns the data group for their human-label column."""
    data = add_data_args(parser, output="critique columns", formats=True, setting=True)
    add_gold_args(data)
    critic = add_model_args(parser, title="critic")
    add_endpoint_args(parser)
    add_critic_args(critic)
    add_cache_args(critic)
    add_decoding_args(parser)
    return data


def register(subparsers) -> None:
    """Add the ``grade`` and ``compare`` sub-commands."""
    grade = subparsers.add_parser(
        "grade",
        help="pointwise grading: a score and an explanation per response",
        description="Pointwise grading (CritiqueLLM v2 §3.1): needs question and response columns "
        "(and reference for the referenced setting).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_option(_common(grade), HumanOptions, "human_score")
    grade.set_defaults(func=run, task="grade")

    compare = subparsers.add_parser(
        "compare",
        help="pairwise comparison: which of two responses is better, and why",
        description="Pairwise comparison (CritiqueLLM v2 §3.1): needs question, response_1 and response_2 "
        "(and reference for the referenced setting). Labels: 0 = response 1 better, 1 = response 2, 2 = tie.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = _common(compare)
    add_dataclass_args(compare, PairOptions)
    add_option(compare, HumanOptions, "two_way")
    add_option(data, HumanOptions, "human_label")
    add_cascade_args(compare)
    compare.set_defaults(func=run, task="compare")


def load_rows(args: argparse.Namespace, task: str):
    """The rows to judge as the data options say (``--data`` read directly or with a ``--format`` loader, ``--columns``,
    ``--limit`` / ``--sample``), with the gold column read as the gold options say; ``task`` is ``"grade"`` or
    ``"compare"``. ``--format generic`` is ``--data`` read as it is: ``--columns`` and the gold options (``--label-map``,
    ``--label-columns``, ``--aggregate``) map any layout, as ``meta-eval --benchmark generic:`` does.

    Raises:
        RecordError, ValueError: unreadable data, a bad column map or gold option, a ``--human-score`` /
            ``--human-label`` column the data lacks, or no rows.
    """
    from ..io import load_records, parse_columns

    if args.format and args.format != "generic":  # generic: any layout, read as --data with --columns and gold flags
        from ..io import rename_columns
        from ..loaders import load_benchmark

        records = rename_columns(
            load_benchmark(args.format, args.data), parse_columns(args.columns), args.data, args.coerce_text
        )
    else:
        records = load_records(args.data, parse_columns(args.columns), split=args.split, coerce_text=args.coerce_text)
    records = select_rows(records, args)
    option, column = ("--human-score", args.human_score) if task == "grade" else ("--human-label", args.human_label)
    records = gold_from_args(records, args, "pointwise" if task == "grade" else "pairwise", args.data, column)
    if column and column not in records.column_names:  # else found missing only after the critiques were written
        raise BadInputError(f"{args.data}: {option} {column!r}: no such column (the data has {records.column_names})")
    if not len(records):
        raise BadInputError(f"{args.data}: no rows to judge")
    return records


def run(args: argparse.Namespace) -> int:
    """Load the data and the critic, write critiques, print the parse rate and agreement figures."""
    from ..io import check_output, save_records

    check_output(args.output, inputs=[args.data], overwrite=args.overwrite)  # before any model loads
    if getattr(args, "cascade", None):
        return run_cascade_command(args, load_rows(args, args.task))
    if getattr(args, "calibration", None):
        raise BadInputError("--calibration holds a cascade's thresholds: give the cascade too (--cascade FILE)")
    records = load_rows(args, args.task)
    prompts = len(records) * (2 if args.task == "compare" and args.swap else 1)
    critic = critic_from_args(args, args.model, inputs=prompts * decoding_from_args(args).num_return_sequences)
    started = time.perf_counter()
    result, critiques = judge_rows(
        critic,
        records,
        args.task,
        swap=args.task == "compare" and args.swap,
        source=args.data,
        referenced=args.referenced,
    )
    elapsed = time.perf_counter() - started
    save_records(result, args.output)
    print(f"wrote {len(result)} rows to {args.output} in {elapsed:.1f} s")
    print(f"critiques: {critiques.stats.summary()}")
    for line in _figures(result, args):
        print(line)
    return DONE


def judge_rows(critic, records, task: str, *, swap: bool = False, source: str = "data", referenced=None):
    """``records`` judged by ``critic`` through the protocol (:meth:`~hf_critic.critics.protocol.CriticKind.judge`)
    as ``task`` says (``"grade"``: pointwise grading of ``response``, any pair's columns left unread; ``"compare"``:
    pairwise comparison), and the rows with its critique columns (those of the data replaced).

    Returns:
        ``(rows with the critique columns, the Critiques)``.

    Raises:
        RecordError: rows without the task's columns (``compare`` on rows without a pair); see the critic's
            ``judge``.
    """
    from ..core import schema
    from ..critic.output import add_columns, as_dataset
    from ..io import check_fields

    data = as_dataset(records)
    pair = [c for c in (schema.RESPONSE_1, schema.RESPONSE_2) if c in data.column_names]
    wanted = schema.Task.POINTWISE if task == "grade" else schema.Task.PAIRWISE
    if (wanted is schema.Task.PAIRWISE) != (schema.RESPONSE_1 in pair):  # the other task's rows
        has_reference = schema.REFERENCE in data.column_names if referenced is None else referenced
        fields = schema.Setting(wanted, has_reference).fields
        if any(f not in data.column_names for f in fields):  # the message the task's own check writes
            check_fields(data, fields, source)
    judged = data.remove_columns(pair) if wanted is schema.Task.POINTWISE and pair else data
    critiques = critic.judge(judged, swap=swap, source=source, referenced=referenced)
    return add_columns(data, critiques.columns), critiques


#: Bootstrap resamples (of the questions) behind the interval of the within-question accuracy ``grade`` prints.
SUMMARY_BOOTSTRAP = 1000


def _figures(result, args) -> list[str]:
    """Agreement with the human (or GPT-4) labels present in the data, per verdict source (text, probability, both
    orders combined) with baselines and calibration; nothing when there are none.

    ``grade``: one line per verdict source with the row-level (pooled) correlation, the text-level Pearson and the
    within-question pairwise accuracy (pairs of one question's responses with different human scores, a critic tie
    counting half) with its 95% bootstrap interval over :data:`SUMMARY_BOOTSTRAP` resamples of the questions
    (questions grouped by ``query_id``, else by their text). ``compare``: agreement, consistency and first-order
    agreement per source, and, where the human labels have no tie (``--two-way auto``, or ``on``), the two-way
    accuracy (response 1 or 2 alone; see :func:`hf_critic.meta_eval.agreement.two_way_decisions`).
    """
    from ..core import schema
    from ..meta_eval.verdict_sources import figure_lines, pairwise_verdict_figures, pointwise_verdict_figures

    reward = schema.CRITIQUE_REWARD in result.column_names  # verdicts of a reward critic: named so
    if args.task == "grade":
        # Per-system figures and the tables come from `hf-critic meta-eval`.
        column = args.human_score or ("human_score" if "human_score" in result.column_names else None)
        if not column:
            return []
        figures = pointwise_verdict_figures(result, column, bootstrap=SUMMARY_BOOTSTRAP)
        return figure_lines(figures, "grade", column, reward=reward)
    column = args.human_label or ("label" if "label" in result.column_names else None)
    two_way = getattr(args, "two_way", "auto")
    if not column:
        return []
    return figure_lines(pairwise_verdict_figures(result, column, two_way=two_way), "compare", column, reward=reward)
