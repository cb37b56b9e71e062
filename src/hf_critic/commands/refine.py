"""``hf-critic refine``: critiques as feedback (CritiqueLLM v1 §4.8 Table 3, v2 §4.6 Table 4)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError
from ..critic.config import option_field
from .arguments import add_dataclass_args, add_option
from .exit_status import DONE
from .option_groups import BenchmarkOptions, DataOptions, ModelOptions, ReportOptions
from .options import add_cache_args, add_critic_args, add_decoding_args, add_endpoint_args, critic_from_args

EPILOG = """\
For each record every --critic writes a reference-free critique, the --generator rewrites the response with it
(--rounds N repeats critique -> rewrite), and the --judge grades the originals and all rewrites (referenced where
the record has a reference). MODEL: a local folder, a Hub id in the local cache, or nothing for the embedded
SmolLM2-135M-Instruct (--critic NAME alone); with --base-url, the name of a model the server serves (every role
then runs on that server). Every generation goes through the --cache, so a killed run started
again repeats none; the summary counts the cache hits per stage.

Examples:
  hf-critic refine --data ../shared/data/selfeval/mt_bench --format fastchat --limit 40 --critic smollm2 \\
      --template mtbench --output-dir outputs/refine
  hf-critic refine --data answers.jsonl --critic a=./critic-a --critic b=./critic-b --generator ./gen \\
      --judge ./judge --rounds 2 --output-dir outputs/refine
Writes rows.jsonl (one row per record, critic and round: critique, rewrite, judge verdict), report.md (the Table 4
layout, win / tie / lose against the original, the judge's parse rate, cache hits, wall time) and report.json.
"""


@dataclass
class RefineRoles:
    """Who critiques, rewrites and judges (CritiqueLLM v2 §4.6): ``--critic``, ``--generator``, ``--judge``,
    ``--rounds``, ``--rewrite-prompt``, ``--rewrite-max-new-tokens``, ``--judge-verdict``, ``--judge-explanation``."""

    critic: list[str] = option_field(
        "a critic whose critiques feed the rewrite; repeat for several side by side (default: one, the "
        "embedded model, named 'embedded')",
        [],
        action="append",
        metavar="NAME[=MODEL]",
    )
    generator: str | None = option_field("the model that rewrites (default: the embedded model)", None)
    judge: str | None = option_field(
        "the model that grades originals and rewrites (default: the embedded model)", None
    )
    rounds: int = option_field("critique -> rewrite iterations (default: 1)", 1)
    rewrite_prompt: str | None = option_field(
        "the rewrite prompt: en, zh or your own YAML file (default: the --language of the critiques)", None
    )
    rewrite_max_new_tokens: int = option_field("token budget of a rewrite (default: 512)", 512)
    judge_verdict: str | None = option_field(
        "the judge's verdict source (default: --verdict); the critics' verdicts are only reported",
        None,
        choices=["auto", "text", "probability", "both"],
    )
    judge_explanation: str | None = option_field(
        "the judge's --explanation (default: --explanation); none = one prefill per verdict, no text",
        None,
        choices=["none", "first"],
    )


def register(subparsers) -> None:
    """Add the ``refine`` sub-command."""
    parser = subparsers.add_parser(
        "refine",
        help="critiques as feedback: critique, rewrite, re-judge (CritiqueLLM Table 4 layout)",
        description="Critiques as feedback (CritiqueLLM v2 §4.6): critics critique each response, a generator "
        "rewrites it from the critique, a judge grades original and rewrites.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = parser.add_argument_group("data")
    add_dataclass_args(
        data,
        DataOptions,
        only=["data", "columns", "format", "split", "limit"],
        overrides={
            "data": {
                "help": "records with question and response (and optionally reference, category): "
                "a JSONL / JSON / CSV / parquet file, a Hub dataset id, or a benchmark folder with --format"
            }
        },
    )
    add_option(data, BenchmarkOptions, "turn", help="for --format fastchat (default: 1)")
    add_option(
        data,
        BenchmarkOptions,
        "category",
        default="category",
        help="column of the table's categories (default: category)",
    )

    roles = parser.add_argument_group("critics, generator and judge")
    add_dataclass_args(roles, RefineRoles)
    add_dataclass_args(
        roles, ModelOptions, only=["engine", "trust_remote_code", "batch_size", "threads", "dtype", "progress"]
    )
    add_critic_args(roles)
    add_cache_args(roles)
    add_endpoint_args(parser)
    add_decoding_args(parser)

    out = parser.add_argument_group("report")
    add_option(
        out, ReportOptions, "output_dir", required=True, help="folder for rows.jsonl, report.md and report.json"
    )
    add_dataclass_args(out, DataOptions, only=["overwrite"])
    add_option(out, ReportOptions, "title", default="Critiques as feedback")
    parser.set_defaults(func=run_refine)


def _load(args):
    """The records, with references attached to FastChat folders (MT-Bench's reference answers where they exist)."""
    from ..io import load_records, parse_columns, rename_columns

    if args.format:
        from ..loaders import load_benchmark

        kwargs = {"turn": args.turn} if args.format == "fastchat" else {}
        records = load_benchmark(args.format, args.data, **kwargs)
        if args.format == "fastchat":
            referenced = load_benchmark("fastchat", args.data, with_reference=True, **kwargs)
            by_query = dict(zip(referenced["query_id"], referenced["reference"], strict=True))
            records = records.add_column("reference", [by_query.get(q) for q in records["query_id"]])
        records = rename_columns(records, parse_columns(args.columns), args.data)
        if args.limit is not None:
            records = records.select(range(min(args.limit, len(records))))
        return records
    return load_records(args.data, parse_columns(args.columns), args.limit, split=args.split)


def _critic_specs(specs: list[str]) -> dict[str, str | None]:
    """``NAME[=MODEL]`` -> {name: model or None (the embedded model)}.

    Raises:
        ValueError: an empty name or the same name twice.
    """
    critics: dict[str, str | None] = {}
    for spec in specs or ["embedded"]:
        name, _, model = (part.strip() for part in spec.partition("="))
        if not name or name in critics:
            raise BadInputError(f"--critic {spec!r}: give each critic a distinct NAME (NAME=MODEL)")
        critics[name] = model or None
    return critics


def run_refine(args: argparse.Namespace) -> int:
    """Load the records and the models (each model once), run the loop, write rows, report.md and report.json."""
    import json
    from dataclasses import replace

    from ..critic.verdicts import VerdictMode
    from ..io import check_output_dir, save_records, write_text
    from ..refine import refine
    from .options import cache_from_args, decoding_from_args

    if args.rounds < 1:
        raise BadInputError("--rounds must be at least 1")
    outputs = ("rows.jsonl", "report.md", "report.json")
    check_output_dir(args.output_dir, outputs=outputs, overwrite=args.overwrite)  # before any model loads
    records = _load(args)
    loaded: dict[str | None, object] = {}

    def critic_on(model: str | None):
        if model not in loaded:  # one model in memory per distinct name, whatever its roles
            loaded[model] = critic_from_args(args, model)
        return loaded[model]

    if getattr(args, "explanation", None) == "none":
        raise BadInputError(
            "the critics' critiques are the feedback: --explanation none would leave them empty "
            "(use --judge-explanation none for a judge without text)"
        )
    critics = {name: critic_on(model) for name, model in _critic_specs(args.critic).items()}
    for name, critic in critics.items():
        if not critic.writes_explanation:  # feedback is the critique's text, which a reward critic does not write
            raise BadInputError(
                f"--critic {name}: a {critic.engine.kind} writes no critique for the generator to revise from "
                "(it can be the --judge)"
            )
    for critic in critics.values():
        if critic.plan == ("probability", "none"):
            # The generator revises from the written critique: read verdicts directly, but write the critique too.
            critic.plan = critic.plan._replace(mode=VerdictMode.BOTH)
    if not critic_on(args.generator).writes_explanation:
        raise BadInputError(f"--generator {args.generator}: a reward model cannot write a revision")
    generator = critic_on(args.generator).backend
    if args.judge_verdict or args.judge_explanation:  # the judge's own verdict settings, on its own Critic
        overrides = {"verdict": args.judge_verdict or args.verdict, "explanation": args.judge_explanation}
        judge = critic_from_args(argparse.Namespace(**{**vars(args), **overrides}), args.judge)
    else:
        judge = critic_on(args.judge)
    cache = cache_from_args(args)
    result = refine(
        records,
        critics,
        generator,
        judge,
        rounds=args.rounds,
        prompt=args.rewrite_prompt or args.language,
        decoding=replace(decoding_from_args(args), max_new_tokens=args.rewrite_max_new_tokens),
        cache_path=cache,
        category=args.category,
        source=args.data,
    )
    out = Path(args.output_dir)
    save_records(result.rows, out / "rows.jsonl")
    markdown = result.markdown(args.title)
    write_text(out / "report.md", markdown)
    write_text(out / "report.json", json.dumps(result.to_dict(), indent=1))
    print(markdown)
    print(f"wrote {out / 'rows.jsonl'} ({len(result.rows)} rows), {out / 'report.md'} and {out / 'report.json'}")
    return DONE
