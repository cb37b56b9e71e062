"""``hf-critic calibrate``: thresholds with a human-agreement guarantee for a cascade of critics, and the guarantee
measured over random calibration / test splits (Jung, Brahman, Choi, "Trust or Escalate", ICLR 2025)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError
from ..critic.config import fraction, option_field, positive_int
from ..critics.specs import load_cascade
from .arguments import add_dataclass_args, add_option
from .calibrate_report import (
    calibration_risk_coverage,
    check_fit_shares,
    jury_entry,
    jury_lines,
    jury_refits,
    prepare_fits,
    question_keys,
    threshold_rows,
)
from .exit_status import DONE
from .option_groups import CascadeOptions, FigureOptions, HumanOptions
from .options import add_data_args, add_gold_args

EPILOG = """\
Example (Auto-J Eval-P's pairs without a tie; Auto-J-13B's published verdicts as the last critic):
  hf-critic calibrate --data ../shared/data/autoj/test/testdata_pairwise.jsonl --format autoj --drop-tie \\
      --cascade examples/cascade_autoj.yaml --target-agreement 0.8 --delta 0.1 --output outputs/calibration.json \\
      --splits 1000 --levels 0.7,0.75,0.8,0.85 --report-dir outputs/selective
then judge new pairs with it:
  hf-critic compare --data pairs.jsonl --cascade examples/cascade_autoj.yaml --calibration outputs/calibration.json \\
      --output judged.jsonl
Every critic judges every calibration row once (computed critics through the generation cache: a rerun makes no
model call). Each critic's threshold is tested from its highest confidence down; the first threshold whose exact
(Clopper-Pearson) bound on disagreement exceeds 1 - target stops the sequence; a critic none of whose thresholds
passes keeps no row. delta is divided among the critics (equally, or by each critic's `delta_share:` in the cascade
file); each later critic is calibrated on the rows its predecessors did not keep. A jury stage (a cascade file's
`jury:`, members aggregated by vote, mean or a fitted logistic regression) is one critic here; a fitted jury is fitted
on the rows of half of the calibration questions (its `fit_share:`), which then set no threshold (again within each
calibration half under --splits), and its fit is stored in the calibration file with its members' fingerprints.
"""


def _levels(text: str) -> list[float]:
    """``--levels``: comma-separated target agreements, each in (0, 1).

    Raises:
        OptionValueError: a level outside (0, 1) (ValueError: not a number).
    """
    return [fraction(t) for t in text.split(",") if t.strip()]


@dataclass
class GuaranteeOptions:
    """The guarantee to calibrate for (Trust or Escalate §3): ``--target-agreement``, ``--delta``, ``--min-rows``."""

    target_agreement: float = option_field("1 - alpha: the agreement with humans to guarantee", type=fraction)
    delta: float = option_field("the guarantee fails with probability at most delta (default 0.1)", 0.1, type=fraction)
    min_rows: int = option_field(
        "rows at or above a threshold before it is tested (default 30)", 30, type=positive_int
    )


@dataclass
class SplitOptions:
    """The guarantee measured over random calibration / test splits (Trust or Escalate §4.1): ``--report-dir``,
    ``--splits``, ``--calibration-fraction``, ``--levels``, ``--seed``."""

    report_dir: str | None = option_field(
        "write each critic's critiques, its risk-coverage (AURC with a bootstrap interval over questions, "
        "agreement at coverage, coverage at agreement; beside longer-wins and the label prior) in report.md, "
        "report.json and risk_coverage.png, and with --splits the guarantee's report and agreement_coverage.png",
        None,
    )
    splits: int = option_field("R random splits (Trust or Escalate §4.1; 0: none)", 0)
    calibration_fraction: float = option_field("share of rows calibrated on per split (0.5)", 0.5, type=fraction)
    levels: list[float] | None = option_field(
        "target agreements to measure (default: --target-agreement)", None, type=_levels
    )
    seed: int = option_field("seed of the splits and the bootstrap (default 0)", 0)


def register(subparsers) -> None:
    """Add the ``calibrate`` sub-command."""
    parser = subparsers.add_parser(
        "calibrate",
        help="thresholds with a human-agreement guarantee for a cascade of critics (selective judging)",
        description="Selective judging (Trust or Escalate, Jung et al. 2025): choose each critic's confidence "
        "threshold on human-labelled pairs so that the verdicts kept agree with humans at rate >= the target with "
        "probability >= 1 - delta; rows no critic keeps are abstained.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = add_data_args(parser, output="critique columns", formats=True, setting=True)
    (output,) = [a for a in data._group_actions if a.dest == "output"]
    output.help = "where to write the calibration file (.json): each critic's threshold, its bound and the data's hash"
    add_gold_args(data)
    add_option(data, HumanOptions, "human_label", help="column of human labels 0/1/2 (default: label)")
    add_option(data, HumanOptions, "drop_tie")
    guarantee = parser.add_argument_group("guarantee")
    add_option(guarantee, CascadeOptions, "cascade", required=True, help="the cascade file (YAML, cheapest first)")
    add_dataclass_args(guarantee, GuaranteeOptions)
    report = parser.add_argument_group("measuring the guarantee (random calibration / test splits)")
    add_dataclass_args(report, SplitOptions)
    resamples = (
        "bootstrap resamples (over questions) of each critic's AURC interval in the report (0: none; default 1000)"
    )
    add_option(report, FigureOptions, "bootstrap", default=1000, help=resamples, metavar=None)
    parser.set_defaults(func=run_calibrate)


def _judged(args, stages, records):
    """Per critic: (run, confidences, corrects); the human labels as codes. A confidence is kept only on a row with a
    verdict and a usable value (:func:`~hf_critic.selective.keepable_confidences`); a verdict is correct only when it
    is a label equal to the human one (an abstained, unparsed or missing verdict is never correct)."""
    from ..core import schema
    from ..core.labels import normalize_labels
    from ..selective import keepable_confidences
    from ..selective.cascade import judge_all

    gold = args.human_label or "label"
    if gold not in records.column_names:
        raise BadInputError(f"{args.data}: no human label column {gold!r} to calibrate against (--human-label)")
    human = normalize_labels(records[gold], name=f"{args.data}: {gold}")
    if (human < 0).any():
        raise BadInputError(f"{args.data}: {int((human < 0).sum())} rows have no human label in {gold!r}")
    check_fit_shares(stages, records, human.tolist(), args.cascade)  # before any critic runs
    prepare_fits(stages, human.tolist(), question_keys(records))  # a fitted jury or a label prior fits on these rows
    runs = judge_all(stages, records, source=args.data)
    judged = []
    for stage, run in zip(stages, runs, strict=True):
        labels = run.columns[schema.CRITIQUE_LABEL]
        correct = [lab is not None and lab == h for lab, h in zip(labels, human, strict=True)]
        confidence = run.columns[schema.CRITIQUE_CONFIDENCE]
        if schema.CRITIQUE_REWARD in run.columns:  # a reward critic: the margin logistic fitted here
            confidence, stage.logistic = _fit_reward_confidence(run.columns, correct)
        judged.append((run, keepable_confidences(labels, confidence)[0], correct))
    return judged, human


def _fit_reward_confidence(columns, correct):
    from ..core import schema
    from ..selective import confidence_of, fit_margin_logistic

    r1, r2 = columns[schema.CRITIQUE_REWARD], columns[schema.CRITIQUE_REWARD_2]
    rows = [i for i, (a, b) in enumerate(zip(r1, r2, strict=True)) if a is not None and b is not None]
    logistic = fit_margin_logistic([r1[i] - r2[i] for i in rows], [correct[i] for i in rows])
    return confidence_of(columns, logistic=logistic)[0], logistic


def _stored_verdicts(run, confidence, held) -> dict:
    """A critic's verdicts on the threshold rows as its calibration entry keeps them (labels, keepable
    confidences, a reward critic's margins): what its threshold is re-derived from on load."""
    from ..core import schema

    labels = run.columns[schema.CRITIQUE_LABEL]
    out = {
        "labels": [None if labels[i] is None else int(labels[i]) for i in held],
        "confidences": [confidence[i] for i in held],
    }
    if schema.CRITIQUE_REWARD in run.columns and schema.CRITIQUE_REWARD_2 in run.columns:
        r1, r2 = run.columns[schema.CRITIQUE_REWARD], run.columns[schema.CRITIQUE_REWARD_2]
        out["margins"] = [None if r1[i] is None or r2[i] is None else float(r1[i] - r2[i]) for i in held]
    return out


def _probes(stage, run, confidence, records, setting, held) -> list | None:
    """A served critic's re-checkable rows (:func:`~hf_critic.commands.cascade_probes.pick_probes`); None for others."""
    from ..core import schema
    from .cascade_probes import pick_probes

    if stage.critic.served_client is None:
        return None
    return pick_probes(records, run.columns[schema.CRITIQUE_LABEL], confidence, held, list(setting.fields))


def _calibration(args, stages, judged, records, setting, held, human):
    """The calibration file: every threshold set on the rows ``held`` (the calibration rows less a fitted jury's fit
    rows, :func:`threshold_rows`), with those rows (ids, human label codes ``human``) and each critic's verdicts on
    them, from which :func:`~hf_critic.selective.load_calibration` re-derives every threshold."""
    from ..selective import CalibrationFile, CriticThreshold, calibrate_cascade, data_hash
    from ..selective.cascade import critic_fingerprint, delta_shares

    alpha = 1 - args.target_agreement
    shares = delta_shares(stages)
    fitted = calibrate_cascade(
        [[j[1][i] for i in held] for j in judged],
        [[j[2][i] for i in held] for j in judged],
        alpha=alpha,
        delta=args.delta,
        min_rows=args.min_rows,
        shares=shares,
    )
    rows = len(held)
    ids = records["query_id"] if "query_id" in records.column_names else list(range(len(records)))
    ids, gold = [ids[i] for i in held], [int(human[i]) for i in held]
    critics = []
    for stage, (run, confidence, _), (lam, n, k, upper, cal_rows, failed), share in zip(
        stages, judged, fitted, shares, strict=True
    ):
        critics.append(
            CriticThreshold(
                name=stage.name,
                fingerprint=critic_fingerprint(stage, setting),
                confidence=run.kind,
                threshold=lam,
                n=n,
                k=k,
                upper_bound=upper,
                delta=args.delta * share,
                calibration_rows=cal_rows,
                coverage=n / rows,
                logistic=list(stage.logistic) if stage.logistic else None,
                failed=failed,
                jury=jury_entry(stage, setting, held),
                verdicts=_stored_verdicts(run, confidence, held),
                probes=_probes(stage, run, confidence, records, setting, held),
            )
        )
    return CalibrationFile(
        task="pairwise",
        setting=setting.name,
        alpha=alpha,
        delta=args.delta,
        min_rows=args.min_rows,
        data={
            "path": str(args.data),
            "rows": rows,
            "sha256": data_hash(ids, gold),
            **({"jury_fit_rows": len(records) - rows} if rows < len(records) else {}),
        },
        critics=critics,
        rows={"ids": ids, "human": gold},
    )


def _calibration_lines(calibration, judged, held) -> list[str]:
    import numpy as np

    from ..selective import cascade_decisions, selective_figures
    from ..selective.calibration import clopper_pearson_upper
    from ..selective.cascade import describe_missing

    lines = [
        f"calibration: target agreement {1 - calibration.alpha:.2f}, delta {calibration.delta} over "
        f"{calibration.data['rows']} rows"
    ]
    if "jury_fit_rows" in calibration.data:
        lines[0] += (
            f" (the other {calibration.data['jury_fit_rows']} of the data's rows fitted the jury and set no threshold)"
        )
    for c, (run, confidence, _) in zip(calibration.critics, judged, strict=True):
        missing = describe_missing(run.without_confidence(confidence), len(confidence))
        if missing:
            lines.append(f"  {c.name}: {missing}")
        if run.unmatched:
            lines.append(f"  {c.name}: the rows not in its files: {run.unmatched_rows}")
        if run.conflicting:
            lines.append(
                f"  {c.name}: {run.conflicting} rows matched by order among copies of a pair with different "
                f"recorded verdicts ({run.conflicting_rows})"
            )
        if c.threshold is None:
            lines.append(
                f"  {c.name} ({c.confidence}): keeps no row (no threshold passed on its {c.calibration_rows} rows)"
            )
        else:
            lines.append(
                f"  {c.name} ({c.confidence}): threshold {c.threshold:.4g}, keeps {c.n} of its "
                f"{c.calibration_rows} rows ({100 * c.coverage:.1f}% of all), {c.k} disagree, bound "
                f"{c.upper_bound:.3f} <= {calibration.alpha:.3f}"
            )
    decided = cascade_decisions([[j[1][i] for i in held] for j in judged], [c.threshold for c in calibration.critics])
    figures = selective_figures(decided, np.array([[j[2][i] for i in held] for j in judged]))
    if figures["kept"]:
        hits = round(figures["agreement"] * figures["kept"])
        low = 1 - clopper_pearson_upper(figures["kept"] - hits, figures["kept"], 0.025)
        high = clopper_pearson_upper(hits, figures["kept"], 0.025)
        lines.append(
            f"cascade on the calibration rows: coverage {100 * figures['coverage']:.1f}%, agreement "
            f"{100 * figures['agreement']:.1f}% [{100 * low:.1f}, {100 * high:.1f}] on the {figures['kept']} "
            f"kept rows, {figures['abstained']} abstained"
        )
    else:
        lines.append(f"cascade on the calibration rows: no row kept ({figures['abstained']} abstained)")
    return lines


def _split_report(args, stages, judged, human, questions) -> dict:
    """The guarantee over ``--splits`` random splits per level, with the plain cut-off and no selection."""
    from ..selective import agreement_coverage_curve, split_protocol
    from ..selective.cascade import delta_shares

    confidences, corrects = [j[1] for j in judged], [j[2] for j in judged]
    levels = args.levels or [args.target_agreement]
    report = {
        "rows": len(human),
        "splits": args.splits,
        "delta": args.delta,
        "critics": [s.name for s in stages],
        "calls": [j[0].calls for j in judged],
        "levels": [],
        "delta_shares": delta_shares(stages),
    }
    kwargs = {
        "delta": args.delta,
        "splits": args.splits,
        "calibration_fraction": args.calibration_fraction,
        "min_rows": args.min_rows,
        "seed": args.seed,
    }
    refits = jury_refits(stages, human.tolist(), questions)  # a fitted jury: refit on each calibration half only
    shares = report["delta_shares"]
    for level in levels:
        alpha = 1 - level
        entry = {"target": level}
        entry["cascade"] = split_protocol(
            confidences, corrects, alpha=alpha, refit=refits, delta_shares=shares, **kwargs
        )
        entry["plain_cutoff"] = split_protocol(
            confidences, corrects, alpha=alpha, bound="observed", refit=refits, delta_shares=shares, **kwargs
        )
        if len(stages) > 1:  # the strongest critic alone, calibrated with the whole delta
            last = {0: refits[len(stages) - 1]} if len(stages) - 1 in refits else None
            entry["strongest_alone"] = split_protocol(
                confidences[-1:], corrects[-1:], alpha=alpha, refit=last, **kwargs
            )
        report["levels"].append(entry)
    report["curves"] = {
        s.name: agreement_coverage_curve(c, ok) for s, c, ok in zip(stages, confidences, corrects, strict=True)
    }
    return report


def _success(result: dict) -> str:
    """``"98.5 (197 of 200)"``: the success rate over the splits that kept rows; ``"- (0 of 0)"`` when none did."""
    kept = result["splits"] - result["empty_splits"]
    rate = "-" if result["success_rate"] is None else f"{100 * result['success_rate']:.1f}"
    return f"{rate} ({result['successes']} of {kept})"


def _pct(spread: dict) -> str:
    if spread["mean"] is None:
        return "-"
    return f"{100 * spread['mean']:.1f} [{100 * spread['low']:.1f}, {100 * spread['high']:.1f}]"


def split_markdown(report: dict) -> str:
    """The split report as a Markdown table (one row per level and method)."""
    names = report["critics"]
    lines = [
        f"Selective judging over {report['splits']} random calibration / test splits of {report['rows']} rows "
        f"(delta {report['delta']}); coverage and agreement on kept test rows: mean [2.5th, 97.5th percentile]. "
        "The success rate is over the splits that kept test rows; a split that keeps none is no success and no "
        "failure, and is counted apart. The guarantee is about every split: the kept test rows fall below the "
        f"target in at most delta = {100 * report['delta']:g}% of all splits (failing splits %).",
        "",
        "| target | method | success rate % (of splits keeping rows) | failing splits % (of all) | coverage % | "
        f"agreement on kept % | shares % ({' / '.join(names)}) | {names[-1]} asked on % of rows | splits keeping no "
        "row | no selection: agreement % |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for entry in report["levels"]:
        for method in ("cascade", "strongest_alone", "plain_cutoff"):
            if method not in entry:
                continue
            r = entry[method]
            shares = " / ".join(f"{100 * s:.1f}" for s in r["shares"])
            label = {
                "cascade": "cascade" if len(names) > 1 else names[0],
                "strongest_alone": f"{names[-1]} alone",
                "plain_cutoff": "plain cut-off (no bound)",
            }[method]
            failing = r["splits"] - r["empty_splits"] - r["successes"]
            held = "" if method == "plain_cutoff" or failing <= report["delta"] * r["splits"] else " (above delta)"
            lines.append(
                f"| {entry['target']:.2f} | {label} | {_success(r)} | {100 * failing / r['splits']:.1f}{held} | "
                f"{_pct(r['coverage'])} | "
                f"{_pct(r['agreement'])} | {shares} | {100 * r['strongest_asked']:.1f} | {r['empty_splits']} | "
                f"{100 * r['no_selection']['agreement']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def _check_report_dir(args) -> None:
    """Before any work: ``--splits`` with ``--report-dir``, a report folder that is no file, and matplotlib for its
    curve (the ``[report]`` extra).

    Raises:
        ValueError: one line naming the option and the fix.
    """
    if args.splits < 0 or (args.splits and not args.report_dir):
        raise BadInputError("--splits R (>= 1) writes its report to --report-dir DIR: give both")
    if args.report_dir and Path(args.report_dir).exists() and not Path(args.report_dir).is_dir():
        raise BadInputError(
            f"--report-dir {args.report_dir}: a file, not a folder; name a folder (created if missing)"
        )
    if args.report_dir:  # risk_coverage.png, and the splits' figures
        from .options import require_extra

        require_extra("matplotlib", "report", "--report-dir's risk-coverage and agreement-coverage curves")


def _drop_ties(args, records):
    """``--drop-tie``: the rows whose human label is no tie.

    Raises:
        ValueError: no human label column, or no row left (every pair a tie).
    """
    from ..core.labels import TIE, normalize_labels

    gold = args.human_label or "label"
    if gold not in records.column_names:
        raise BadInputError(
            f"{args.data}: --drop-tie reads the human label column {gold!r}, which the data lacks (--human-label)"
        )
    human = normalize_labels(records[gold], name=f"{args.data}: {gold}")
    kept = [i for i, h in enumerate(human) if h != TIE]
    if not kept:
        raise BadInputError(f"{args.data}: --drop-tie leaves no row: all {len(records)} pairs are ties in {gold!r}")
    return records.select(kept)


def _check_splits(args, rows: int) -> None:
    """``--splits``: each split's calibration half (``--calibration-fraction`` of the rows, rounded) and its test half
    must both hold rows.

    Raises:
        ValueError: one line naming the option, its value and the row counts.
    """
    calibrating = int(round(args.calibration_fraction * rows))
    if args.splits and not 0 < calibrating < rows:
        raise BadInputError(
            f"--calibration-fraction {args.calibration_fraction:g} of the {rows} rows gives "
            f"{calibrating} calibration and {rows - calibrating} test rows per split (--splits "
            f"{args.splits}): both halves need rows; choose a fraction between {1 / rows:.3g} and "
            f"{1 - 1 / rows:.3g}"
        )


def run_calibrate(args: argparse.Namespace) -> int:
    """Judge the calibration rows with every critic, write the calibration file and, with ``--report-dir``, the
    report (risk-coverage of every critic; with ``--splits``, the guarantee over random splits). Every option is
    checked before any critic runs, and everything is computed before anything is written."""
    from ..core import schema
    from ..io import check_output, write_text
    from ..selective import check_claim
    from .critique import load_rows

    check_output(args.output, inputs=[args.data], overwrite=args.overwrite, suffixes=(".json",))
    from ..meta_eval.bootstrap import check_resamples

    check_resamples(args.bootstrap, "--bootstrap")
    _check_report_dir(args)
    records = load_rows(args, "compare")
    if args.drop_tie:
        records = _drop_ties(args, records)
    if schema.RESPONSE_1 not in records.column_names:
        raise BadInputError(f"{args.data}: calibration needs pairs (response_1, response_2) with human labels")
    _check_splits(args, len(records))
    referenced = args.referenced if args.referenced is not None else schema.REFERENCE in records.column_names
    setting = schema.Setting(schema.Task.PAIRWISE, referenced)
    stages = load_cascade(args.cascade, rows=len(records))
    judged, human = _judged(args, stages, records)
    held = threshold_rows(stages, len(records)).tolist()
    calibration = _calibration(args, stages, judged, records, setting, held, human)
    check_claim(calibration, str(args.output))  # what is written re-derives on load
    report = _report(args, stages, judged, records, human, held) if args.report_dir else None
    write_text(args.output, calibration.to_json())
    for line in [*_calibration_lines(calibration, judged, held), *jury_lines(stages)]:
        print(line)
    print(f"wrote {args.output}")
    if report is not None:
        _write_report_dir(args, stages, judged, records, report)
    return DONE


def _report(args, stages, judged, records, human, held) -> dict:
    """Everything ``--report-dir`` holds, computed before any file is written: the risk-coverage of every critic
    (``report``'s ``risk_coverage``, its curves) and, with ``--splits``, the split report and its curve's points."""
    from ..reports.risk_coverage import risk_coverage_markdown

    blocks, curves = calibration_risk_coverage(
        stages, judged, records, human, held, resamples=args.bootstrap, seed=args.seed
    )
    report = {
        "risk_coverage": blocks,
        "juries": {s.name: vars(s.critic.counts) for s in stages if s.critic.counts is not None},
    }
    left_out = ", the jury's fit rows left out" if len(held) < len(records) else ""
    title = f"calibration rows ({len(held)}{left_out})"
    markdown, points = risk_coverage_markdown({title: blocks}), {}
    if args.splits:
        report.update(_split_report(args, stages, judged, human, question_keys(records)))
        markdown = split_markdown(report) + "\n" + markdown
        for entry in report["levels"]:
            r = entry["cascade"]
            if r["agreement"]["mean"] is not None:
                points[f"cascade @ {entry['target']:.2f}"] = (r["coverage"]["mean"], r["agreement"]["mean"])
    return {"json": report, "markdown": markdown, "curves": {title: curves}, "points": points}


def _write_report_dir(args, stages, judged, records, report: dict) -> None:
    """Each critic's critiques, ``report.md``, ``report.json``, ``risk_coverage.png`` and, with ``--splits``,
    ``agreement_coverage.png`` (``report``: :func:`_report`'s)."""
    from ..core import schema
    from ..critics.jury import JURY_MEMBERS
    from ..reports.calibration_report import write_calibration_report

    critiques = {}
    for stage, (run, _, _) in zip(stages, judged, strict=True):
        rows = (
            records.select_columns([c for c in records.column_names if not c.startswith("critique_")])
            .add_column("critique_label", run.columns[schema.CRITIQUE_LABEL])
            .add_column("critique_confidence", run.columns[schema.CRITIQUE_CONFIDENCE])
        )
        if JURY_MEMBERS in run.columns:
            rows = rows.add_column(JURY_MEMBERS, run.columns[JURY_MEMBERS])
        critiques[stage.name] = rows
    out = Path(args.report_dir)
    pictures = write_calibration_report(out, critiques, report, splits=bool(args.splits))
    print(report["markdown"])
    print(f"wrote {out / 'report.md'}, {out / 'report.json'}, {' and '.join(p.name for p in pictures)}")
