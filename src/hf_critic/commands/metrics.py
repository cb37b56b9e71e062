"""``hf-critic metrics``: make the ``evaluate`` metric modules loadable by their bare names, offline."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ..critic.config import option_field
from .arguments import add_dataclass_args
from .exit_status import DONE

EPILOG = """\
After `hf-critic metrics install`, `evaluate.load("critique_correlation")` and
`evaluate.load("pairwise_agreement")` work without network access: the scripts are written to evaluate's
module cache ($HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--<name>/<hash>/), the last place
evaluate looks for a bare name. Run it again after upgrading hf-critic. Without installing,
`evaluate.load(hf_critic.metric_path("critique_correlation"))` always works.
"""


@dataclass
class InstallOptions:
    """Where ``metrics install`` writes the modules: ``--modules-cache``."""

    modules_cache: str | None = option_field(
        "HF_MODULES_CACHE to write to (default: evaluate's, from the environment)", None
    )


def register(subparsers) -> None:
    """Add the ``metrics`` sub-command with its ``install`` and ``path`` actions."""
    from ..meta_eval.modules import METRIC_NAMES

    parser = subparsers.add_parser(
        "metrics",
        help="install the evaluate metric modules (critique_correlation, pairwise_agreement)",
        description="The evaluate modules of CritiqueLLM's meta-evaluation: critique_correlation "
        "(text/system-level r, rho, tau; v2 §4.4.1) and pairwise_agreement (agreement and consistency; v2 §4.4.2).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    install = actions.add_parser("install", help="make evaluate.load('<name>') resolve offline")
    install.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(METRIC_NAMES)} (default: all)")
    add_dataclass_args(install, InstallOptions)
    install.set_defaults(func=run_install)

    path = actions.add_parser("path", help="print the folder of a metric module (for evaluate.load(path))")
    path.add_argument("name", choices=METRIC_NAMES, help="the metric module")
    path.set_defaults(func=run_path)


def run_install(args: argparse.Namespace) -> int:
    """Install the requested modules into evaluate's module cache and print where they went."""
    from ..reports.metric_modules import install_metrics

    for script in install_metrics(args.names or None, modules_cache=args.modules_cache):
        print(f"installed {script.stem}: {script}")
    return DONE


def run_path(args: argparse.Namespace) -> int:
    """Print :func:`hf_critic.meta_eval.modules.metric_path` of one module."""
    from ..meta_eval.modules import metric_path

    print(metric_path(args.name))
    return DONE
