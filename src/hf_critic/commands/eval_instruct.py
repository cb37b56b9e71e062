"""``hf-critic eval-instruct --config recipes/eval_instruct/<name>.yaml``: build critique training data.

Runs Eval-Instruct (CritiqueLLM v2 §3.2) or v1's dialogue prompting (v1 §3.2.3) as the recipe says, printing one
progress line per stage and, at the end, a summary table (items in / out per stage, rejections by reason, failed
items, requests, cache hits, tokens, cost). See :mod:`hf_critic.eval_instruct.pipeline`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from ..core.errors import BadInputError
from ..critic.config import option_field
from .arguments import add_dataclass_args, add_option
from .exit_status import DONE, PARTLY_FAILED, exit_status_text
from .option_groups import DataOptions, ModelOptions, ReportOptions
from .options import add_cache_args

EPILOG = """\
Every teacher and generator answer is cached (SQLite, <output_dir>/cache.sqlite by default): a killed run started
again asks only for what is missing, and a rerun of the same recipe makes no request. The API key is read from the
environment variable the recipe names (api_key_env, default OPENAI_API_KEY), never from the recipe.

""" + exit_status_text()


@dataclass
class RecipeOptions:
    """The Eval-Instruct recipe to run: ``--config``."""

    config: str = option_field("recipe YAML, e.g. recipes/eval_instruct/local_server.yaml")


def register(subparsers) -> None:
    """Add the ``eval-instruct`` sub-command (handler: :func:`run`)."""
    parser = subparsers.add_parser(
        "eval-instruct",
        help="build critique training data with an OpenAI-compatible teacher (Eval-Instruct)",
        description="Eval-Instruct (CritiqueLLM v2 §3.2): queries -> responses -> pseudo references -> teacher "
        "critiques via multi-path prompting, cross validation and rule-based filters -> four Hub-ready datasets.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dataclass_args(parser, RecipeOptions)
    add_option(parser, ReportOptions, "output_dir", help="override the recipe's output_dir")
    add_dataclass_args(parser, DataOptions, only=["overwrite"])
    add_cache_args(parser, default="the recipe's cache, else <output_dir>/cache.sqlite", can_disable=False)
    add_option(parser, ReportOptions, "push_to_hub")
    progress = {"default": None, "help": "progress bars (default: the recipe's)"}
    add_dataclass_args(parser, ModelOptions, only=["progress"], overrides={"progress": progress})
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the recipe; print progress to stderr and the summary table to stdout. Returns the exit status."""
    import dataclasses

    from ..eval_instruct.config import load_config
    from ..eval_instruct.hub import finished_outputs
    from ..eval_instruct.pipeline import run_eval_instruct
    from ..io import check_output_dir

    overrides = {k: v for k, v in (("output_dir", args.output_dir), ("cache", args.cache)) if v}
    if args.progress is not None:
        overrides["progress"] = args.progress
    config = load_config(args.config, overrides)
    if args.push_to_hub:
        config = dataclasses.replace(config, hub=dataclasses.replace(config.hub, repo_id=args.push_to_hub))
    # the cache in output_dir is how a killed run resumes: only finished outputs need --overwrite (what a run killed
    # while saving left is none)
    check_output_dir(config.output_dir, outputs=finished_outputs(config.output_dir), overwrite=args.overwrite)
    # a server refusing every request is exit 3 and too few rows exit 4, in hf_critic.cli.main like every command's
    try:
        result = run_eval_instruct(config, push=bool(args.push_to_hub))
    except FileNotFoundError as err:  # e.g. the dataset card template outside a checkout: a file to give
        raise BadInputError(str(err)) from err
    print(result.report.table())
    share = next((s.notes.get("filtered_share") for s in result.report.stages if "filtered_share" in s.notes), None)
    if share is not None:
        print(
            f"cross validation filtered {100 * share:.1f}% of the pairs reaching it through both paths (paper: 7.7%)"
        )
    print(f"datasets: {result.paths['dataset']}  hub folder: {result.paths['hub']}  report: {result.paths['report']}")
    if "url" in result.paths:
        print(f"pushed to {result.paths['url']}")
    failed = len(result.report.failures)
    if failed:
        print(f"{failed} item(s) failed after retries; see {result.paths['failures']}", file=sys.stderr)
        return PARTLY_FAILED
    return DONE
