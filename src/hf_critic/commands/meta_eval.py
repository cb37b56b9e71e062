"""``hf-critic meta-eval``: how well critics agree with humans, in the papers' table layouts."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError
from ..critic.config import option_field
from ..critics.computed import check_template
from ..loaders import name_and_value, parse_benchmark
from .arguments import add_dataclass_args, add_option
from .exit_status import DONE
from .option_groups import BenchmarkOptions, DataOptions, HumanOptions, PairOptions, ReportOptions, option_help
from .options import (
    add_cache_args,
    add_comparison_args,
    add_critic_args,
    add_decoding_args,
    add_endpoint_args,
    add_figure_args,
    add_gold_args,
    add_model_args,
    add_verdict_args,
    critic_from_args,
    require_extra,
    select_rows,
)

EPILOG = """\
Inputs (any mix, each repeatable):
  --critiques [CRITIC/DATASET=]FILE   critique files written by `hf-critic grade` / `compare` (JSONL or parquet:
                                      critique_* columns plus human_score or label); names default to the
                                      file's folder and stem.
  --benchmark [NAME=]FORMAT:PATH      a benchmark to run critics on (formats: alignbench, autoj, fastchat,
                                      prometheus, generic) with every --model (default: the embedded critic).
  --verdicts [CRITIC=]FILE[:FIELD][,SWAPPED[:FIELD]]
                                      a judge's verdicts on the single --benchmark, one row per benchmark row
                                      (JSONL / JSON / CSV / parquet / xlsx; FIELD default: output): a label (any
                                      spelling, or --verdict-label-map), a score, or free text with --verdict-parser;
                                      --order-column FIELD maps rows judged in swapped order back; the SWAPPED file
                                      holds the same pairs judged in swapped order, in swapped terms.
  --benchmark [NAME=]criticbench:DIR  CriticBench (Lan et al., 2024): DIR in the Hub layout (obj_test_data/ ...,
                                      gold labels: objective scores) or a folder of CriticEval prediction files
                                      (their prompts); critics answer every objective prompt (--limit N: the first N
                                      of each file). Report: criticbench.md / criticbench.json.
  --predictions [NAME=]DIR            CriticEval prediction files ({split}_{task}_{dimension}_obj.json ...) to score:
                                      parse rate per file, comparison consistency per task, objective scores against
                                      a Hub-layout criticbench benchmark. With it, no default critic runs.

Examples:
  hf-critic meta-eval --benchmark alignbench-ref=alignbench:shared/data/critiquellm/evaluation/pointwise/alignbench_reference_based_sample.jsonl --output-dir outputs/meta_eval
  hf-critic meta-eval --benchmark criticbench:shared/data/criticbench/deepseek-67b-chat-hf \\
      --predictions deepseek-67b=shared/data/criticbench/deepseek-67b-chat-hf --output-dir outputs/criticbench
  hf-critic meta-eval --benchmark autoj:shared/data/autoj/test/testdata_pairwise.jsonl \\
      --verdicts auto-j-13b=shared/data/autoj/outputs/pairwise_example_output.jsonl,shared/data/autoj/outputs/pairwise_exchange_example_output.jsonl \\
      --bootstrap 1000 --output-dir outputs/autoj
  hf-critic meta-eval --benchmark generic:pandalm_test.json --task pairwise \\
      --columns 'question={instruction}\\n\\n{input},response_1=response1,response_2=response2' \\
      --label-columns annotator1,annotator2,annotator3 --label-map 0=tie,1=response_1,2=response_2 \\
      --verdicts judge=verdicts.csv:judgement --verdict-parser mtbench --order-column exchange --output-dir out
Is critic A better than critic B? With two or more critics on one benchmark (several --model, --verdicts or
--critiques of the same rows), the report compares each two, and each with answer length, figure by figure: the
difference with a paired bootstrap interval over the questions and a p-value (exact McNemar for agreement, a paired
permutation test for correlations), in one plain line per pair. Every report has the baselines on the same rows
(always 'response 1', label prior, longer / shorter wins; length as score), Cohen's kappa, Krippendorff's alpha of
--label-columns with and without the critic, agreement by length-ratio tercile, the length-controlled agreement and
the positional preference. --ppi --human-subset 0.1 adds prediction-powered estimates from 10% human labels:
  hf-critic meta-eval --critiques untrained/hhh=untrained_hhh.jsonl --critiques trained/hhh=trained_hhh.jsonl \\
      --ppi --human-subset 0.1 --output-dir out
Selective judging (which verdicts to trust, a human-agreement guarantee, cascades that escalate or abstain) is
measured by `hf-critic calibrate --splits R --report-dir DIR`: coverage, agreement on the kept rows, the guarantee's
success rate over R random calibration / test splits against no selection and a plain cut-off, and the curve.
Every pairwise report has each critic's risk-coverage (critique_confidence, or its verdict source's confidence):
the AURC with a bootstrap interval over questions (--bootstrap), agreement at 10/25/50/100% coverage and coverage at
70/75/80/85% agreement, beside longer-wins and the label prior, and risk_coverage.png.
Writes report.md (Table 2 / Table 3 layouts, within-question pairwise accuracy of pointwise grades, two-way
accuracy where the human labels have no tie, parse failures, per-category tables), report.json and PNG plots
(per-category bars, confusion heat maps); critiques generated here go to <output-dir>/critiques/<critic>/<dataset>.jsonl.
"""


@dataclass
class MetaEvalInputs:
    """What ``meta-eval`` measures: ``--critiques``, ``--benchmark``, ``--predictions``, ``--task``, ``--attacks``."""

    critiques: list[str] = option_field("existing critique file", [], action="append", metavar="[CRITIC/DATASET=]FILE")
    benchmark: list[str] = option_field(
        "benchmark to run critics on", [], action="append", metavar="[NAME=]FORMAT:PATH"
    )
    predictions: list[str] = option_field(
        "CriticEval-format prediction folder to score on the criticbench --benchmark",
        [],
        action="append",
        metavar="[NAME=]DIR",
    )
    task: str | None = option_field("for --benchmark generic:...", None, choices=["pointwise", "pairwise"])
    attacks: str | None = option_field(
        "robustness to judge attacks (hf_critic.meta_eval.attacks): all, groups (master-key, verdict, turn, "
        "authority, padding, position) or names, comma-separated; the worse answer of each pair is attacked "
        "(pointwise with references: content-free answers against the reference); writes attacks.md / attacks.json",
        None,
        metavar="NAMES",
    )


def register(subparsers) -> None:
    """Add the ``meta-eval`` sub-command."""
    parser = subparsers.add_parser(
        "meta-eval",
        help="agreement of critics with human judgments: Table 2 / Table 3 style reports with plots",
        description="Meta-evaluation (CritiqueLLM v2 §4.4): text- and system-level correlation for pointwise "
        "grading, agreement and consistency under order swap for pairwise comparison.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inputs = parser.add_argument_group("inputs")
    add_dataclass_args(inputs, MetaEvalInputs, only=["critiques", "benchmark"])
    add_verdict_args(inputs)
    add_option(inputs, MetaEvalInputs, "predictions")
    add_dataclass_args(
        inputs,
        DataOptions,
        only=["columns", "limit", "sample", "sample_seed"],
        overrides={
            "columns": {"help": option_help(DataOptions, "columns") + " (for --benchmark generic:...)"},
            "limit": {"help": "only the first N rows of each benchmark (at least 1)"},
            "sample": {"help": "a seeded random sample of N rows of each benchmark (shuffled with --sample-seed)"},
        },
    )
    add_gold_args(inputs)
    add_option(inputs, MetaEvalInputs, "task")
    add_option(inputs, BenchmarkOptions, "turn")
    add_option(
        inputs, HumanOptions, "human_score", default="human_score", help="human score column (default: human_score)"
    )
    add_option(inputs, HumanOptions, "human_label", default="label", help="human label column (default: label)")
    add_option(inputs, BenchmarkOptions, "category")

    critics = add_model_args(parser, title="critics run here (on each --benchmark)", several=True)
    add_endpoint_args(parser)
    add_critic_args(critics)
    swap = {"action": argparse.BooleanOptionalAction, "default": True, "help": "judge both orders (default: on)"}
    add_dataclass_args(critics, PairOptions, overrides={"swap": swap})
    add_option(critics, MetaEvalInputs, "attacks")
    add_cache_args(critics)
    add_decoding_args(parser)

    out = parser.add_argument_group("report")
    add_option(out, ReportOptions, "output_dir", required=True)
    add_dataclass_args(out, DataOptions, only=["overwrite"])
    add_option(
        out, ReportOptions, "title", default="Meta-evaluation", help="title of report.md (default: Meta-evaluation)"
    )
    add_option(out, ReportOptions, "no_plots")
    add_figure_args(out)
    add_comparison_args(out)
    two_way = (
        "pairwise two-way accuracy: the critic's choice between response 1 and response 2 alone (the tie option "
        "dropped from its verdict distribution; a text tie counts half), beside the three-way figures; auto (default): "
        "when the human labels have no tie (chosen / rejected data such as HHH)"
    )
    add_option(out, HumanOptions, "two_way", help=two_way)
    parser.set_defaults(func=run_meta_eval)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "critic"


def _load_benchmark(args, fmt: str, path: str):
    """The benchmark's rows (the first ``--limit``) and its full length (verdict files must match it)."""
    from ..io import parse_columns
    from ..loaders import load_benchmark

    kwargs = {}
    if fmt == "generic":
        if not args.task:
            raise BadInputError("--benchmark generic:... needs --task pointwise or --task pairwise")
        kwargs.update(
            task=args.task,
            columns=parse_columns(args.columns),
            label_map=args.label_map,
            label_columns=args.label_columns,
            aggregate=args.aggregate or ("majority" if args.task == "pairwise" else "mean"),
            coerce_text=args.coerce_text,
        )
    elif args.label_map or args.label_columns:
        raise BadInputError(f"--label-map / --label-columns read a generic benchmark's own gold columns, not {fmt}:")
    elif fmt == "fastchat":
        kwargs["turn"] = args.turn
    dataset = load_benchmark(fmt, path, **kwargs)
    total = len(dataset)
    dataset = select_rows(dataset, args)
    if not len(dataset):
        raise BadInputError(f"--benchmark {fmt}:{path}: no rows to judge")
    return dataset, total


def _file_and_field(spec: str) -> tuple[str, str | None]:
    """``FILE[:FIELD]`` -> (file, field); a colon that belongs to an existing path is no field separator."""
    path, sep, field = spec.rpartition(":")
    if sep and field and "/" not in field and not Path(spec).exists():
        return path, field
    return spec, None


def _verdict_parser(args, data):
    """``text -> ParsedCritique`` of ``--verdict-parser`` (a template family, name or file) for the benchmark's
    setting; None without the option."""
    from ..core import schema
    from ..parsing import parse
    from ..prompts import get_template, list_families, load_template

    if not args.verdict_parser:
        return None
    check_template(args.verdict_parser, "--verdict-parser")  # a missing file was a FileNotFoundError traceback
    task = schema.Task.PAIRWISE if "response_1" in data.column_names else schema.Task.POINTWISE
    setting = schema.Setting(task, "reference" in data.column_names)
    if args.verdict_parser in list_families():
        template = get_template(args.verdict_parser, setting, args.language)
    else:
        template = load_template(args.verdict_parser)
    wanted = "label" if task is schema.Task.PAIRWISE else "score"
    if template.output.kind != wanted:
        raise BadInputError(
            f"--verdict-parser {args.verdict_parser}: its verdicts are {template.output.kind}s, the "
            f"benchmark needs {wanted}s"
        )
    return lambda text: parse(text, template.output.kind, template.output.score_range)


def _verdict_runs(args, benchmarks):
    """Verdict files of any shape turned into critique datasets (a swapped file mapped back to original order)."""
    from ..core import schema
    from ..core.labels import swap_label
    from ..loaders.generic import load_verdict_file

    if not args.verdicts:
        return []
    if len(benchmarks) != 1:
        raise BadInputError("--verdicts needs exactly one --benchmark to attach the verdicts to")
    name, data, total = benchmarks[0]
    task = "pairwise" if "response_1" in data.column_names else "pointwise"
    parser = _verdict_parser(args, data)
    runs = []
    for spec in args.verdicts:
        critic, files = name_and_value(spec)
        first_spec, _, swapped_spec = files.partition(",")
        if swapped_spec and task != "pairwise":
            raise BadInputError(f"--verdicts {spec}: a swapped-order file is for pairwise benchmarks")
        columns = {}
        for which, file_spec in (("first", first_spec), ("swapped", swapped_spec)):
            if not file_spec:
                continue
            path, field = _file_and_field(file_spec)
            verdicts = load_verdict_file(
                path,
                task,
                field,
                label_map=args.verdict_label_map,
                parse=parser,
                order_column=args.order_column if which == "first" else None,
            )
            ids = _verdict_ids(path)
            if ids is not None and "id" in data.column_names:  # matched by id, in any order
                verdicts = _verdicts_by_id(path, verdicts, ids, data["id"], name)
            elif len(verdicts) != total:
                raise BadInputError(
                    f"{path}: {len(verdicts)} verdicts for the {total} rows of {name}: a verdict file must have "
                    "exactly one row per benchmark row, in the same order (or an id column matching the benchmark's)"
                )
            else:
                verdicts = verdicts[: len(data)]  # --limit, allowed by --limit-verdicts
            if which == "swapped":
                columns[schema.CRITIQUE_LABEL_SWAPPED] = [swap_label(v) for v in verdicts]
            else:
                columns[schema.CRITIQUE_LABEL if task == "pairwise" else schema.CRITIQUE_SCORE] = verdicts
        critique = data
        for column, values in columns.items():
            critique = critique.add_column(column, values)
        runs.append((critic or Path(_file_and_field(first_spec)[0]).stem, name, critique))
    return runs


def _verdict_ids(path: str) -> list[str] | None:
    """The ``id`` field of every row of a verdict file, as text; None when some row has none."""
    from ..io import iter_rows

    ids = [row.get("id") for _, row in iter_rows(path)]
    return None if not ids or None in ids else [str(i) for i in ids]


def _verdicts_by_id(path: str, verdicts: list, ids: list[str], wanted, name: str) -> list:
    """The verdicts of the benchmark rows ``wanted`` (their ids), looked up by id.

    Raises:
        ValueError: an id found twice in the file, or a benchmark row whose id the file lacks (names both).
    """
    by_id = dict(zip(ids, verdicts, strict=True))
    if len(by_id) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise BadInputError(f"{path}: id {twice!r} is found more than once; a verdict file has one row per id")
    missing = [str(i) for i in wanted if str(i) not in by_id]
    if missing:
        raise BadInputError(f"{path}: no verdict for {len(missing)} row(s) of {name} (first: id {missing[0]!r})")
    return [by_id[str(i)] for i in wanted]


def _critic_runs(args, benchmarks):
    """Run every --model (default: the embedded critic) on every benchmark; save the critiques."""
    from ..io import save_records
    from .critique import judge_rows

    models = args.model or ([None] if not args.verdicts else [])
    runs = []
    for model in models:
        critic_name = "default-critic" if model is None else Path(model).name or model
        critic = critic_from_args(args, model)
        for name, data, _ in benchmarks:
            pairwise = "response_1" in data.column_names
            critique, critiques = judge_rows(
                critic, data, "compare" if pairwise else "grade", swap=pairwise and args.swap, source=name
            )
            path = save_records(
                critique, Path(args.output_dir) / "critiques" / _slug(critic_name) / f"{_slug(name)}.jsonl"
            )
            orders = (
                (" (both orders: --swap)" if args.swap else " (the given order only: --no-swap)")
                if ("response_1" in data.column_names)
                else ""
            )
            print(f"{critic_name} on {name}{orders}: {critiques.stats.summary()} -> {path}")
            runs.append((critic_name, name, critique))
    return runs


def _family(critic, task: str) -> str:
    """The critic family whose verdict format the critic's template for ``task`` uses (for verdict injection)."""
    from ..core.schema import Setting, Task
    from ..formats import families

    fmt = critic.template_for(Setting(Task(task), False)).output.format
    return next((f.name for f in families() if fmt in {v.name for v in f.formats}), "mtbench")


def _plan_attacks(args, benchmarks) -> dict[str, list]:
    """The attacks each benchmark runs, checked before any critic runs.

    Raises:
        ValueError: ``--attacks`` naming none (``,``) or an unknown one, no benchmark, a benchmark with neither pairs
            nor references, or pairwise attacks named on pointwise data.
    """
    from ..meta_eval.attacks import pointwise_attacks, resolve_attacks

    attacks = resolve_attacks(args.attacks)
    if not benchmarks:
        raise BadInputError("--attacks needs a --benchmark to attack (and a critic run on it)")
    plan = {}
    for name, data, _ in benchmarks:
        if "response_1" in data.column_names:
            plan[name] = attacks
        elif "reference" in data.column_names:
            plan[name] = pointwise_attacks(attacks, args.attacks, name)
        else:
            raise BadInputError(
                f"--attacks on {name}: needs pairwise pairs with a gold label, or pointwise references"
            )
    return plan


def _attack_runs(args, benchmarks, plan: dict[str, list]) -> list[dict]:
    """Judge each benchmark again under its attacks (:func:`_plan_attacks`) with every --model, in the orders the
    main run judged (``--swap``); the robustness figures, each row saying its orders."""
    from ..meta_eval.attacks import attack_pairs, pairwise_robustness, pointwise_shift, render_attack, stood_by
    from .critique import judge_rows

    results = []
    orders = "both" if args.swap else "one"
    for model in args.model or [None]:
        critic_name = "default-critic" if model is None else Path(model).name or model
        critic = critic_from_args(args, model)
        for name, data, _ in benchmarks:
            rows = data.to_list()
            if "response_1" in data.column_names:
                family = _family(critic, "pairwise")
                clean = stood_by(judge_rows(critic, data, "compare", swap=args.swap, source=name)[0], args.swap)
                for attack in plan[name]:
                    attacked = judge_rows(
                        critic,
                        attack_pairs(rows, attack, family),
                        "compare",
                        swap=args.swap,
                        source=f"{name} ({attack.name})",
                    )[0]
                    figures = pairwise_robustness(
                        data[args.human_label],
                        clean,
                        stood_by(attacked, args.swap),
                        swapped=attack.render is None,
                        seed=args.bootstrap_seed,
                    )
                    results.append(
                        {
                            "critic": critic_name,
                            "dataset": name,
                            "attack": attack.name,
                            "task": "pairwise",
                            "orders": orders,
                            **figures,
                        }
                    )
            else:
                references = [{**r, "response": r["reference"]} for r in rows]
                graded = critic.judge(references, source=f"{name} (references)").columns["critique_score"]
                for attack in plan[name]:
                    free = [{**r, "response": render_attack(attack, "", None)} for r in rows]
                    scores = critic.judge(free, source=f"{name} ({attack.name})").columns["critique_score"]
                    figures = pointwise_shift(graded, scores)
                    results.append(
                        {
                            "critic": critic_name,
                            "dataset": name,
                            "attack": attack.name,
                            "task": "pointwise",
                            "orders": "one",
                            **figures,
                        }
                    )
    return results


def _write_attacks(output_dir: str, results: list[dict]) -> None:
    """attacks.md and attacks.json in ``output_dir``; the table on stdout."""
    from ..reports.robustness_report import write_robustness_report

    print(write_robustness_report(results, output_dir))


def _check_criticbench_path(path: str, gold: bool) -> None:
    """Fail before any model loads on a criticbench ``--benchmark`` path that does not exist (no glob match either);
    when it only serves as the gold of ``--predictions`` (``gold``) and lacks CriticBench's Hub layout, say on stderr
    that the report holds parse rates and consistency only (both need no gold), so no one reads it as scored."""
    import glob
    import sys

    from ..criticbench.report import is_benchmark_folder

    if not Path(path).exists() and not glob.glob(path):
        raise BadInputError(f"--benchmark criticbench:{path}: no such folder or file")
    if gold and not is_benchmark_folder(path):
        print(
            f"hf-critic meta-eval: --benchmark criticbench:{path} holds no gold labels (no obj_dev_data/, "
            "obj_test_data/, sub_dev_data/ or sub_test_data/ folder): the report has parse rates and comparison "
            "consistency only, no objective scores",
            file=sys.stderr,
        )


def _criticbench(args, specs: list[tuple[str, str]]) -> None:
    """CriticBench: score --predictions folders and answers of every --model (default: the embedded critic, unless
    predictions are given) on each criticbench --benchmark; write criticbench.md and criticbench.json."""
    import json

    from ..criticbench.loaders import load_criticbench_predictions
    from ..criticbench.report import (
        answer_prompts,
        criticbench_prompts,
        criticbench_report,
        is_benchmark_folder,
        render_criticbench_markdown,
        write_predictions,
    )
    from ..io import write_text

    golds = [path for _, path in specs if is_benchmark_folder(path)]
    gold = golds[0] if golds else None
    reports = {}
    for spec in args.predictions:
        name, folder = name_and_value(spec)
        reports[name or Path(folder).name] = criticbench_report(load_criticbench_predictions(folder), gold)
    for model in args.model or ([None] if not args.predictions else []):
        critic_name = "default-critic" if model is None else Path(model).name or model
        critic = critic_from_args(args, model)
        if not critic.writes_explanation:
            raise BadInputError(f"--model {model}: a {critic.kind} critic writes no answers for CriticBench")
        for name, path in specs:
            prompts = criticbench_prompts(path, limit=args.limit)
            predictions, cached = answer_prompts(critic.backend, critic.decoding, critic.cache, prompts)
            folder = write_predictions(predictions, Path(args.output_dir) / "criticbench" / _slug(critic_name) / name)
            print(f"{critic_name} on {name}: {len(predictions)} answers, {cached} from cache -> {folder}")
            reports[f"{critic_name} on {name}"] = criticbench_report(
                predictions, path if is_benchmark_folder(path) else None
            )
    out = Path(args.output_dir)
    markdown = render_criticbench_markdown(reports)
    write_text(out / "criticbench.md", markdown)
    write_text(out / "criticbench.json", json.dumps(reports, indent=1, default=str))
    print(markdown)
    print(f"wrote {out / 'criticbench.md'} and {out / 'criticbench.json'}")


def _check_columns(args, datasets) -> None:
    """Before any critic runs: each benchmark and critique file ``(name, dataset)`` has the human column its kind needs
    (``--human-label`` for pairs, ``--human-score`` for scores) and, when ``--category`` is given, that column (it would
    otherwise be found missing after every critic ran, or ignored).

    Raises:
        ValueError: one line naming the dataset, the option and the column.
    """
    from ..core import schema

    for name, data in datasets:
        columns = data.column_names
        pairwise = schema.CRITIQUE_SCORE not in columns and {schema.RESPONSE_1, schema.CRITIQUE_LABEL} & set(columns)
        human = ("--human-label", args.human_label) if pairwise else ("--human-score", args.human_score)
        for option, column in [human, *([("--category", args.category)] if args.category else [])]:
            if column not in columns:
                raise BadInputError(f"{name}: {option} {column!r}: no such column (the data has {columns})")


def _ppi_spec(args, spec_type):
    """The :class:`~hf_critic.meta_eval.critic_extras.PPISpec` of ``--ppi`` (None without it).

    Raises:
        ValueError: ``--ppi`` without ``--human-subset`` or ``--ppi-labels``, or either of them without ``--ppi``.
    """
    if not args.ppi:
        if args.human_subset is not None or args.ppi_labels:
            raise BadInputError("--human-subset / --ppi-labels choose the human-labelled rows of --ppi: add --ppi")
        return None
    if args.human_subset is None and not args.ppi_labels:
        raise BadInputError(
            "--ppi needs the human-labelled rows: --human-subset FRACTION (a simulation) or --ppi-labels COLUMN"
        )
    return spec_type(fraction=args.human_subset, column=args.ppi_labels, seed=args.ppi_seed)


def run_meta_eval(args: argparse.Namespace) -> int:
    """Collect critique datasets (files, verdicts, fresh runs), evaluate them and write the report."""
    from ..io import RecordError, check_output_dir, load_records
    from ..meta_eval import PPISpec, compare_critics, evaluate_critiques
    from ..reports.meta_eval_report import write_report

    if not (args.critiques or args.benchmark):
        raise BadInputError("nothing to evaluate: give --critiques FILE and/or --benchmark FORMAT:PATH")
    if args.sample is not None and args.verdicts:
        raise BadInputError("--sample reorders the rows, and verdict files follow the benchmark's order: use --limit")
    if args.limit is not None and args.verdicts and not args.limit_verdicts:
        raise BadInputError(
            "--limit with --verdicts: the verdict files cover every row; add --limit-verdicts to judge the first "
            f"{args.limit} rows with the first {args.limit} verdicts"
        )
    from ..meta_eval.bootstrap import check_resamples

    check_resamples(args.bootstrap, "--bootstrap")
    check_resamples(args.paired_resamples, "--paired-resamples", none=False)
    ppi = _ppi_spec(args, PPISpec)
    reports = ("report.md", "report.json", "criticbench.md", "criticbench.json", "attacks.md", "attacks.json")
    check_output_dir(args.output_dir, outputs=reports, overwrite=args.overwrite)  # before any model loads
    runs, files = [], {}
    for spec in args.critiques:
        name, path = name_and_value(spec)
        critic, _, dataset = (name or "").partition("/")
        runs.append((critic or Path(path).resolve().parent.name, dataset or Path(path).stem, load_records(path)))
        files[len(runs) - 1] = path
    benchmarks, criticbench = [], []
    for spec in args.benchmark:
        name, fmt, path = parse_benchmark(spec)
        if fmt == "criticbench":
            _check_criticbench_path(path, gold=bool(args.predictions) and not args.model)
            criticbench.append((name, path))
        else:
            benchmarks.append((name, *_load_benchmark(args, fmt, path)))
    attack_plan = _plan_attacks(args, benchmarks) if args.attacks is not None else None  # before any critic runs
    if not args.no_plots and (runs or benchmarks):  # the report's plots: checked before any critic runs
        require_extra("matplotlib", "report", "the report's plots", "--no-plots")
    if args.predictions and not criticbench:
        raise BadInputError("--predictions needs a --benchmark criticbench:DIR")
    _check_columns(args, [(files[i], run[2]) for i, run in enumerate(runs)] + [(b[0], b[1]) for b in benchmarks])
    runs += _verdict_runs(args, benchmarks)  # verdict files checked before any critic runs or any report is written
    if criticbench:
        _criticbench(args, criticbench)
        if not (runs or benchmarks):
            return DONE
    if benchmarks:
        runs += _critic_runs(args, benchmarks)
    if attack_plan is not None:
        _write_attacks(args.output_dir, _attack_runs(args, benchmarks, attack_plan))

    annotators = [c.strip() for c in (args.label_columns or "").split(",") if c.strip()]
    options = {
        "human_score": args.human_score,
        "label": args.human_label,
        "category": args.category or "category",
        "unparsed": args.unparsed,
        "bootstrap": args.bootstrap,
        "seed": args.bootstrap_seed,
        "two_way": getattr(args, "two_way", "auto"),
        "ppi": ppi,
    }
    results = []
    for i, (critic, dataset, data) in enumerate(runs):
        try:
            results.append(
                evaluate_critiques(
                    data, critic, dataset, annotators=[a for a in annotators if a in data.column_names], **options
                )
            )
        except RecordError:
            raise
        except ValueError as err:  # a bad verdict value: say in which file and row
            detail = re.sub(r"^predictions\[(\d+)\]", r"row \1: critique_label", str(err))
            raise BadInputError(f"{files.get(i, f'{critic} on {dataset}')}: {detail}") from None
    if not results:
        raise BadInputError("no meta-evaluation results to report")
    paired = compare_critics(results, resamples=args.paired_resamples, seed=args.bootstrap_seed)
    written = write_report(results, args.output_dir, title=args.title, plots=not args.no_plots, paired=paired)
    print(Path(written["markdown"]).read_text(encoding="utf-8"))
    print(f"wrote {written['markdown']}, {written['json']} and {len(written['plots'])} plot(s)")
    return DONE
