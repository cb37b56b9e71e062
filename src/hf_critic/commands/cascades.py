"""Cascades of critics on the command line: ``compare --cascade FILE --calibration FILE``. The cascade file (YAML)
is read and its critics built by :func:`hf_critic.load_cascade` (:mod:`hf_critic.critics.specs`, which documents the
file); this module holds the command's glue only: its options, the critic options it refuses beside a cascade, and the
run's printed summary.
"""

from __future__ import annotations

import argparse
import dataclasses

from ..core.errors import BadInputError
from ..critics.options import GROUPS
from ..critics.specs import load_cascade
from .arguments import add_dataclass_args
from .exit_status import DONE
from .option_groups import CascadeOptions

__all__ = ["add_cascade_args", "refuse_critic_options", "run_cascade_command"]


def add_cascade_args(parser: argparse.ArgumentParser) -> None:
    """``--cascade FILE`` and ``--calibration FILE`` (``compare``;
    :class:`~hf_critic.commands.option_groups.CascadeOptions`)."""
    group = parser.add_argument_group("selective judging (a cascade of critics)")
    add_dataclass_args(group, CascadeOptions)


def refuse_critic_options(args: argparse.Namespace) -> None:
    """With ``--cascade``, the critic options of the command line would be ignored: refuse any that was set (a field
    of :data:`hf_critic.critics.options.GROUPS` whose parsed value is not its default).

    Raises:
        ValueError: naming the options given.
    """
    given = []
    for cls in GROUPS.values():
        for f in dataclasses.fields(cls):
            value = getattr(args, f.name, f.default)
            if f.default is not dataclasses.MISSING and value != f.default:
                flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
                given.append(flag.replace("--", "--no-", 1) if value is False else flag)
    if given:
        raise BadInputError(f"{', '.join(given)} with --cascade: each critic's options belong in the cascade file")


def run_cascade_command(args: argparse.Namespace, records) -> int:
    """``compare --cascade FILE --calibration FILE``: judge, write the critiques, print the summary and the
    agreement of the decided rows."""
    from ..core import schema
    from ..io import save_records
    from ..selective import load_calibration
    from ..selective.cascade import check_calibration, run_cascade
    from .cascade_probes import recheck_served

    if args.task != "compare":
        raise BadInputError(
            "--cascade: pointwise grading has no human-agreement guarantee here; cascades compare pairs"
        )
    if not args.calibration:
        raise BadInputError("--cascade needs --calibration FILE (write one with `hf-critic calibrate`)")
    refuse_critic_options(args)
    calibration = load_calibration(args.calibration)  # before any model loads: every threshold re-derived
    stages = load_cascade(args.cascade, rows=len(records))
    checked = []
    if schema.RESPONSE_1 in records.column_names:  # else run_cascade says the rows are no pairs
        setting = schema.Setting(schema.Task.PAIRWISE, schema.REFERENCE in records.column_names)
        check_calibration(calibration, stages, setting, args.calibration)
        checked = recheck_served(stages, calibration, args.calibration, args.data)  # before the rows are judged
    result = run_cascade(stages, records, calibration, source=args.data, calibration_path=args.calibration)
    save_records(result.critiques, args.output)
    print(f"wrote {len(result.critiques)} rows to {args.output}")
    for line in [*result.summary_lines(), *checked]:
        print(line)
    gold = args.human_label or ("label" if "label" in result.critiques.column_names else None)
    if gold:
        from ..core.labels import normalize_labels

        human = normalize_labels(result.critiques[gold], name=gold)
        decided = [
            (lab, h) for lab, h in zip(result.critiques[schema.CRITIQUE_LABEL], human, strict=True) if lab is not None
        ]
        if decided:
            agree = sum(lab == h for lab, h in decided) / len(decided)
            rows = len(result.critiques)
            print(
                f"vs {gold}: agreement {100 * agree:.2f} on the {len(decided)} decided rows, coverage "
                f"{100 * len(decided) / rows:.1f}% ({rows - len(decided)} abstained, neither unparsed nor wrong; "
                f"target {100 * (1 - calibration.alpha):.4g}, guaranteed with probability "
                f"{1 - calibration.delta:.4g} on data like the calibration's)"
            )
    return DONE
