"""A jury cascade file measured on the dev / test halves of the held-out benchmarks: every choice
on dev, the figures on test.

For each benchmark (HHH alignment; Auto-J Eval-P without its ties, every pair of a half or ``--autoj-sample`` of them; MT-Bench +
Vicuna-Bench turn-1 answers paired within their question wherever GPT-4's grades differ) the cascade file's first
critic, a jury (``hf_critic.critics.jury.Jury``), judges the dev rows and its ``fitted`` aggregate is fitted on them only
(``calibrate_on``, as ``hf-critic calibrate`` does), then judges the test rows with that fit unchanged. Beside it:
the jury without ``longer-wins`` (fitted on dev only), the ``vote`` and ``mean`` aggregates with and without
``longer-wins`` (nothing fitted), each member, and the baselines ``longer-wins`` and ``label-prior``.

Choice on dev only: each aggregate's dev AURC (a fitted one 2-fold cross-fitted by question on dev, so never
in-sample); the lowest is marked chosen. Test: the risk-coverage blocks (AURC with a 95% bootstrap interval over
questions, agreement at fixed coverages, agreement at full coverage) and the goal: the jury's test AURC below that
of longer-wins and of each member. Model read-outs go through the generation cache, so a rerun (or a killed run
restarted) makes no model call for the rows already judged.

Usage:

# the local jury (examples/cascades/local_jury.yaml) on every benchmark: hours on 2 cores for the first run
python scripts/smollm2-135m/jury_halves.py --output-dir outputs/jury_halves
# a smoke run: 6 rows a half of HHH
python scripts/smollm2-135m/jury_halves.py --benchmarks hhh --limit 6 --output-dir outputs/jury_halves_smoke

Writes OUTPUT_DIR/report.json (per benchmark: the dev choice, blocks per half, the goal), report.md and
risk_coverage.png (the test halves). exit status: 0 done; 2 bad data, a bad cascade file or a split file missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
SPLITS = HERE / "splits"
BENCHMARKS = ("hhh", "autoj", "mt_vicuna")
TITLES = {"hhh": "HHH alignment", "autoj": "Auto-J Eval-P (no ties)", "mt_vicuna": "MT-Bench + Vicuna-Bench"}


# ------------------------------------------------------------------------------------------------ the rows of a half
def load_pairs(
    benchmark: str, half_dir: str | os.PathLike, *, autoj_sample: int | None = None, limit: int | None = None
):
    """One benchmark's pairs with human labels in a written half (:func:`hf_critic.reports.heldout_halves.write_half`).

    * ``hhh``: ``prometheus/hhh_alignment_eval.json`` as ``compare --format prometheus`` loads it;
    * ``autoj``: ``autoj/test/testdata_pairwise.jsonl`` (``--format autoj``), ``autoj_sample`` pairs (None: all) shuffled with
      seed 0 (``compare --sample``), then the ties dropped (``calibrate --drop-tie``);
    * ``mt_vicuna``: MT-Bench and Vicuna-Bench turn-1 answers graded by GPT-4
      (:func:`hf_critic.loaders.load_fastchat`), paired within their question where the grades differ
      (:func:`hf_critic.judgments.extra_pairs.within_query_pairs`).

    ``limit``: the first N of those pairs (smoke runs). Returns a ``datasets.Dataset`` with ``question``,
    ``response_1``, ``response_2`` and ``label``.
    """
    import datasets

    from hf_critic.core.labels import TIE, normalize_labels
    from hf_critic.loaders import load_benchmark

    half_dir = Path(half_dir)
    if benchmark == "hhh":
        rows = load_benchmark("prometheus", half_dir / "prometheus" / "hhh_alignment_eval.json")
    elif benchmark == "autoj":
        rows = load_benchmark("autoj", half_dir / "autoj" / "test" / "testdata_pairwise.jsonl")
        rows = rows.shuffle(seed=0).select(range(min(autoj_sample or len(rows), len(rows))))
        human = normalize_labels(rows["label"], name="autoj label")
        rows = rows.select([i for i, h in enumerate(human) if h != TIE])
    elif benchmark == "mt_vicuna":
        from hf_critic.judgments.extra_pairs import within_query_pairs

        pairs = []
        for bench in ("mt_bench", "vicuna_bench"):
            graded = load_benchmark("fastchat", half_dir / "selfeval" / bench)
            pairs += within_query_pairs(
                {
                    "query_id": f"{bench}:{r['query_id']}",
                    "question": r["question"],
                    "response": r["response"],
                    "score": r["human_score"],
                }
                for r in graded
                if r["human_score"] is not None
            )
        rows = datasets.Dataset.from_list(pairs)
    else:
        raise ValueError(f"unknown benchmark {benchmark!r}; use {', '.join(BENCHMARKS)}")
    if limit is not None:
        rows = rows.select(range(min(limit, len(rows))))
    return rows


# --------------------------------------------------------------------------------------- aggregates, choice and goal
def credit(labels: Sequence, human: Sequence[int]) -> list[float]:
    """1.0 where a verdict equals the human label, else 0.0 (no verdict: a miss)."""
    return [float(lab is not None and int(lab) == int(h)) for lab, h in zip(labels, human, strict=True)]


def dev_aurc(labels: Sequence, confidences: Sequence, human: Sequence[int]) -> float:
    """The AURC of verdicts with confidences against the human labels (rows without a confidence ranked last)."""
    from hf_critic.selective.risk_coverage import aurc

    return aurc(confidences, credit(labels, human))


def cross_fitted(
    members: Mapping[str, Mapping[str, Sequence]],
    human: Sequence[int],
    questions: Sequence,
    folds: int = 2,
    seed: int = 0,
) -> tuple[list, list]:
    """The ``fitted`` aggregate's verdicts on every row, each from a fit on the other folds' rows only
    (:func:`~hf_critic.selective.jury.group_folds` by question).

    Raises:
        ValueError: a fold whose complement lacks either human preference (the fit is undefined there).
    """
    from hf_critic.selective.jury import fit_features, fitted_verdicts, group_folds, jury_features

    names, x = jury_features(members)
    gold, fold = np.asarray(human), group_folds(questions, folds, seed)
    groups = np.asarray([str(q) for q in questions], dtype=object)
    labels, confidences = [None] * len(gold), [None] * len(gold)
    for k in range(folds):
        rows = np.flatnonzero(fold == k)
        if not len(rows):
            continue
        fit = fit_features(names, x[fold != k], gold[fold != k], groups[fold != k])
        got_labels, got_confidences = fitted_verdicts(fit, names, x[rows])
        for i, lab, conf in zip(rows, got_labels, got_confidences, strict=True):
            labels[i], confidences[i] = lab, conf
    return labels, confidences


def choose(dev_aurcs: Mapping[str, float | None]) -> str | None:
    """The aggregate with the lowest dev AURC (first listed on a tie); None when none has one."""
    finite = {k: v for k, v in dev_aurcs.items() if v is not None and np.isfinite(v)}
    return min(finite, key=finite.get) if finite else None


def goal(blocks: Mapping[str, dict], jury: str, members: Sequence[str], longer_wins: str = "longer-wins") -> dict:
    """Whether ``jury``'s test AURC is below longer-wins' and below each member's (``blocks``: the test blocks)."""
    mine = blocks[jury]["aurc"]
    beats = {name: bool(mine < blocks[name]["aurc"]) for name in [longer_wins, *members] if name in blocks}
    return {"jury": jury, "aurc": mine, "beats": beats, "holds": all(beats.values())}


def jury_aggregates(
    jury, dev_members: dict, test_members: dict, human_dev: Sequence[int], dev_questions: Sequence
) -> dict[str, dict]:
    """Every aggregate of the jury's members, with and without ``longer-wins``: verdicts on dev and test, dev AURC.

    A ``fitted`` aggregate is fitted on every dev row for test (with every member and the jury's own aggregate
    ``fitted``: the jury's fit from dev, :attr:`~hf_critic.critics.jury.Jury.fit`) and 2-fold cross-fitted by question for its
    dev verdicts and AURC; ``vote`` and ``mean`` fit nothing.

    Returns:
        ``{"jury (HOW)[ without longer-wins]": {"test": (labels, confidences) or None, "dev": (labels, confidences)
        or None, "dev_aurc": float or None, "note": why None or None}}``.
    """
    from hf_critic.selective.jury import AGGREGATES, aggregate, fit_jury

    baselines = _baselines(jury)
    sets = {"": list(dev_members)}
    if baselines and len(baselines) < len(dev_members):
        sets[" without longer-wins"] = [m for m in dev_members if m not in baselines]
    out = {}
    for how in AGGREGATES:
        for suffix, names in sets.items():
            dev_cols, test_cols = ({m: members[m] for m in names} for members in (dev_members, test_members))
            entry = {"test": None, "dev": None, "dev_aurc": None, "note": None}
            try:
                if how == "fitted":
                    fit = (
                        jury.fit
                        if not suffix and jury.how == "fitted"
                        else fit_jury(dev_cols, human_dev, dev_questions)
                    )
                    entry["test"] = aggregate(how, test_cols, fit)[:2]
                    entry["dev"] = cross_fitted(dev_cols, human_dev, dev_questions)
                else:
                    entry["test"], entry["dev"] = aggregate(how, test_cols)[:2], aggregate(how, dev_cols)[:2]
                entry["dev_aurc"] = dev_aurc(*entry["dev"], human_dev)
            except ValueError as err:  # a fit undefined on too few rows (one human preference only)
                entry["note"] = str(err)
            out[f"jury ({how}){suffix}"] = entry
    return out


def _baselines(jury) -> set[str]:
    """The names of the jury's ``longer-wins`` members."""
    from hf_critic.critics.baselines import LongerWins

    return {m.name for m in jury.members if isinstance(m.critic, LongerWins)}


# ------------------------------------------------------------------------------------------------ one benchmark
def measure(stage, dev, test, *, resamples: int = 1000) -> dict:
    """Fit on ``dev``, choose on ``dev``, report on ``test`` (module docstring).

    Args:
        stage: the cascade file's first stage, a jury (:class:`hf_critic.selective.cascade.CascadeStage`).
        dev, test: the halves' pairs (``question``, ``response_1``, ``response_2``, ``label``).
        resamples: bootstrap resamples of each AURC interval (0: none).

    Returns:
        ``{"dev": {...}, "test": {...}, "chosen", "goal", "goal_chosen"}``; each half's ``blocks`` as
        :func:`~hf_critic.meta_eval.risk_coverage.risk_coverage_report` gives them, its ``curves`` under ``_curves``.
    """
    from hf_critic.core.labels import normalize_labels
    from hf_critic.critics.jury import Jury
    from hf_critic.meta_eval.risk_coverage import risk_coverage_report
    from hf_critic.selective.cascade import judge_all

    jury = stage.critic
    if not isinstance(jury, Jury):
        raise ValueError(f"the cascade file's first critic {stage.name!r} is no jury")
    human_dev = normalize_labels(dev["label"], name="dev label").tolist()
    human_test = normalize_labels(test["label"], name="test label").tolist()
    jury.calibrate_on(human_dev, dev["question"], share=1.0)  # fitted on every dev row (no threshold is set here)
    (dev_run,) = judge_all([stage], dev, source="dev")
    dev_members = dict(jury.member_columns)
    if jury._fit_labels is not None:  # pragma: no cover - judge consumes them
        raise RuntimeError("the jury still holds calibration labels after judging dev")
    (test_run,) = judge_all([stage], test, source="test")  # the fit from dev, unchanged
    test_members = dict(jury.member_columns)
    aggregates = jury_aggregates(jury, dev_members, test_members, human_dev, dev["question"])
    own = f"jury ({jury.how})"
    aggregates[own]["test"] = (test_run.columns["critique_label"], test_run.columns["critique_confidence"])
    dev_aurcs = {k: a["dev_aurc"] for k, a in aggregates.items()}
    chosen = choose(dev_aurcs)
    members = [m.name for m in jury.members if m.name not in _baselines(jury)]  # longer-wins: the baseline

    def named(name):  # "jury (fitted)" -> "local-jury (fitted)"
        return f"{stage.name} {name[len('jury ') :]}"

    def report(rows, human, half):
        critics = {named(k): a[half] for k, a in aggregates.items() if a[half] is not None}
        critics |= {f"{stage.name}/{m}": _member((dev_members if half == "dev" else test_members)[m]) for m in members}
        return risk_coverage_report(
            critics,
            human,
            questions=rows["question"],
            response_1=rows["response_1"],
            response_2=rows["response_2"],
            resamples=resamples,
        )

    dev_blocks, dev_curves = report(dev, human_dev, "dev")
    test_blocks, test_curves = report(test, human_test, "test")
    if chosen:
        dev_blocks[named(chosen)]["chosen"] = test_blocks[named(chosen)]["chosen"] = True
    member_names = [f"{stage.name}/{m}" for m in members]
    return {
        "dev": {
            "rows": len(dev),
            "dev_aurc": {named(k): v for k, v in dev_aurcs.items()},
            "notes": {named(k): a["note"] for k, a in aggregates.items() if a["note"]},
            "blocks": dev_blocks,
            "_curves": dev_curves,
            "calls": dev_run.calls,
        },
        "test": {
            "rows": len(test),
            "blocks": test_blocks,
            "_curves": test_curves,
            "calls": test_run.calls,
            "counts": jury.counts.line() if jury.counts else None,
            "agreement": {k: b["agreement_at_coverage"][1.0] for k, b in test_blocks.items()},
        },
        "chosen": named(chosen) if chosen else None,
        "goal": goal(test_blocks, named(own), member_names),
        "goal_chosen": goal(test_blocks, named(chosen), member_names) if chosen else None,
    }


def _member(columns: Mapping[str, Sequence]) -> tuple[list, list]:
    return list(columns["critique_label"]), list(columns["critique_confidence"])


# ------------------------------------------------------------------------------------------------ printing, files
def summary_lines(benchmark: str, result: dict) -> list[str]:
    """The choice, the agreement at full coverage and the goal, one line each."""
    dev = ", ".join(f"{k} {'-' if v is None else f'{v:.3f}'}" for k, v in result["dev"]["dev_aurc"].items())
    lines = [
        f"{benchmark}: dev {result['dev']['rows']} pairs, test {result['test']['rows']} pairs",
        f"  dev AURC (fitted: 2-fold cross-fitted by question): {dev}",
        f"  chosen on dev: {result['chosen'] or 'none'}",
        "  test agreement at full coverage: "
        + ", ".join(f"{k} {100 * v:.1f}" for k, v in result["test"]["agreement"].items()),
    ]
    for name, note in result["dev"]["notes"].items():
        lines.append(f"  {name}: no dev AURC ({note})")
    for key in ("goal", "goal_chosen"):
        g = result[key]
        if g:
            beaten = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in g["beats"].items())
            lines.append(
                f"  goal ({g['jury']}, test AURC {g['aurc']:.3f} below): {beaten} -> "
                f"{'holds' if g['holds'] else 'does not hold'}"
            )
    return lines


def _loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown"


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _parse_args(argv) -> argparse.Namespace:
    """The command line of :func:`main`, checked (argparse exits 2 on a bad value)."""
    parser = argparse.ArgumentParser(
        description=__doc__.strip().split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_data = os.environ.get("HF_CRITIC_SHARED_DATA", str(REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument(
        "--cascade",
        default=str(REPO_ROOT / "examples" / "cascades" / "local_jury.yaml"),
        help="the cascade file; its first critic must be a jury (default: %(default)s)",
    )
    parser.add_argument("--output-dir", default="outputs/jury_halves", help="default: %(default)s")
    parser.add_argument("--data-dir", default=default_data, help="real-data folder (default: %(default)s)")
    parser.add_argument("--splits", default=str(SPLITS), help="the id files' folder (default: %(default)s)")
    parser.add_argument(
        "--benchmarks", default=",".join(BENCHMARKS), help="comma-separated, of %(default)s (default: all)"
    )
    parser.add_argument(
        "--autoj-sample",
        type=int,
        help="Eval-P pairs a half, shuffled with seed 0 before the ties are dropped (default: all)",
    )
    parser.add_argument("--limit", type=int, help="at most N pairs a half (smoke runs)")
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="bootstrap resamples of each AURC interval (0: none; default: 1000)",
    )
    args = parser.parse_args(argv)
    benchmarks = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown or not benchmarks:
        parser.error(f"--benchmarks: unknown {unknown}; use {', '.join(BENCHMARKS)}")
    if args.bootstrap and args.bootstrap < 100:
        parser.error("--bootstrap: 0 or at least 100")
    return args


def main(argv=None) -> int:
    """Measure the jury on the chosen benchmarks' halves; returns the exit status."""
    args = _parse_args(argv)
    benchmarks = [b.strip() for b in args.benchmarks.split(",") if b.strip()]

    from hf_critic import load_cascade
    from hf_critic.io import RecordError
    from hf_critic.meta_eval.halves import load_split
    from hf_critic.reports.heldout_halves import write_half
    from hf_critic.reports.risk_coverage import risk_coverage_markdown

    out = Path(args.output_dir)
    load_start = _loadavg()
    print(f"load average at start: {load_start}", flush=True)
    started = time.perf_counter()
    results, sections, panels = {}, {}, {}
    try:
        split = load_split(args.splits)
        with tempfile.TemporaryDirectory() as tmp:
            halves = {}
            for half in ("dev", "test"):
                write_half(args.data_dir, split, half, Path(tmp) / half)
                halves[half] = {
                    b: load_pairs(b, Path(tmp) / half, autoj_sample=args.autoj_sample, limit=args.limit)
                    for b in benchmarks
                }
        for bench in benchmarks:
            t0 = time.perf_counter()
            dev, test = halves["dev"][bench], halves["test"][bench]
            stages = load_cascade(args.cascade, rows=max(len(dev), len(test)))
            result = measure(stages[0], dev, test, resamples=args.bootstrap)
            result["wall_s"] = round(time.perf_counter() - t0, 1)
            results[bench] = result
            sections[f"{TITLES[bench]}: dev ({len(dev)} pairs; fitted aggregates cross-fitted)"] = result["dev"][
                "blocks"
            ]
            sections[f"{TITLES[bench]}: test ({len(test)} pairs)"] = result["test"]["blocks"]
            panels[f"{TITLES[bench]} test"] = result["test"]["_curves"]
            for line in summary_lines(bench, result):
                print(line)
            print(f"  wall time {result['wall_s']:.1f} s", flush=True)
    except (RecordError, ValueError, FileNotFoundError) as err:
        print(f"jury_halves.py: error: {err}", file=sys.stderr)
        return 2
    markdown = risk_coverage_markdown(sections)
    print(markdown)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# Jury on the held-out halves: {args.cascade}", ""]
    for bench, result in results.items():
        lines += ["```", *summary_lines(bench, result), f"  wall time {result['wall_s']:.1f} s", "```", ""]
    (out / "report.md").write_text("\n".join(lines) + "\n" + markdown, encoding="utf-8")
    report = {
        "cascade": args.cascade,
        "limit": args.limit,
        "autoj_sample": args.autoj_sample,
        "bootstrap": args.bootstrap,
        "benchmarks": results,
        "load_average_start": load_start,
    }
    from hf_critic.reports.risk_coverage import plot_risk_coverage

    plot_risk_coverage(panels, out / "risk_coverage.png")
    end = _loadavg()
    report["wall_s"] = round(time.perf_counter() - started, 1)
    report["load_average_end"] = end
    (out / "report.json").write_text(json.dumps(_jsonable(report), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out / 'report.json'}, {out / 'report.md'}, {out / 'risk_coverage.png'}")
    print(f"load average at end: {end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
