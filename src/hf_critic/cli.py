"""The ``hf-critic`` command line: one sub-command per job, each defined in :mod:`hf_critic.commands`."""

from __future__ import annotations

import argparse
import sys

from ._version import __version__
from .commands import calibrate, critique, eval_instruct, export, meta_eval, metrics, refine, self_eval, view
from .commands.exit_status import DONE, INTERRUPTED, bugs_reported, error_line, exit_status_text
from .core.errors import HfCriticError, MissingExtraError, help_flags
from .core.redaction import configure_logging

# Sub-command modules, in the order --help lists them; each registers its parsers (heavy imports wait for a run).
COMMANDS = (critique, calibrate, meta_eval, view, refine, self_eval, eval_instruct, metrics, export)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every sub-command registered (an import error in one is an error, never skipped)."""
    parser = argparse.ArgumentParser(
        prog="hf-critic",
        description="LLM-as-critic evaluation: critiques (score or label + explanation) with an open critic model.",
        epilog=exit_status_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hf-critic {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log at INFO level (-vv: DEBUG); API keys are masked in every line",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    parser.commands = subparsers.choices  # command name (or alias) -> its parser, for its flags in error lines
    return parser


def _silence_library_progress() -> None:
    """``--no-progress`` hides the libraries' bars too: datasets' split generation, transformers' weight loading."""
    import datasets
    import huggingface_hub

    datasets.disable_progress_bars()
    huggingface_hub.utils.disable_progress_bars()  # transformers reads this setting when it is imported
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()


# The optional packages each extra of pyproject.toml installs.
EXTRAS = {"matplotlib": "report", "openpyxl": "xlsx", "xllamacpp": "llamacpp", "trl": "train", "deepspeed": "train"}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hf-critic`` console script. Returns the process exit code.

    An error of :mod:`hf_critic.core.errors` becomes one line on stderr and its exit status
    (:mod:`hf_critic.commands.exit_status`); any other exception is a bug and shows as a traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)  # every log line redacted: no key, whatever a library logs (-v, -vv)
    if getattr(args, "progress", None) is False:
        _silence_library_progress()
    from .commands.options import check_shared_settings

    # Each error line names its section of the troubleshooting page; library messages name arguments (``swap=``),
    # the line names this command's flags (``--swap``).
    try:
        with bugs_reported():
            check_shared_settings(args)  # before any work: threads, cache paths
            return args.func(args) or DONE
    except HfCriticError as err:
        code, line = error_line(err, args.command, help_flags(parser.commands[args.command].format_help()))
    except ModuleNotFoundError as err:  # an optional extra not installed by a plain import: one line
        extra = EXTRAS.get((err.name or "").partition(".")[0])
        if extra is None:
            raise  # a module hf-critic itself needs: a broken install, shown whole
        code, line = error_line(MissingExtraError(str(err), extra=extra), args.command)
    except KeyboardInterrupt:
        code, line = INTERRUPTED, f"hf-critic {args.command}: interrupted"
    print(line, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
