"""The ``hf-critic`` command line: one sub-command per job, each defined in :mod:`hf_critic.commands`."""

from __future__ import annotations

import argparse
import sys

from ._version import __version__
from .commands import calibrate, critique, eval_instruct, export, meta_eval, metrics, refine, self_eval, view
from .commands.exit_status import BAD_INPUT, DONE, SERVER_FAILED, exit_status_text
from .commands.troubleshooting import pointer
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
    """Entry point of the ``hf-critic`` console script. Returns the process exit code."""
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose)  # every log line redacted: no key, whatever a library logs (-v, -vv)
    if getattr(args, "progress", None) is False:
        _silence_library_progress()
    from .backends.models import ModelNotFoundError
    from .backends.retry import EndpointError, FatalAPIError, RequestsFailedError, ServedReadoutError
    from .commands.options import check_shared_settings
    from .io import RecordError

    # The exit codes: hf_critic.commands.exit_status, the one list (`hf-critic --help` prints it). Each error line
    # names its section of the troubleshooting page.
    try:
        check_shared_settings(args)  # before any work: threads, cache paths
        return args.func(args) or DONE
    except (RecordError, ModelNotFoundError, ValueError, EndpointError) as err:
        code, message, error = BAD_INPUT, str(err), err
    except (FatalAPIError, RequestsFailedError, ServedReadoutError) as err:
        code, message, error = SERVER_FAILED, str(err), err
    except ModuleNotFoundError as err:  # an optional extra not installed: one line, not a traceback
        extra = EXTRAS.get((err.name or "").partition(".")[0])
        code, message, error = BAD_INPUT, f"{err}" + (f": pip install 'hf-critic[{extra}]'" if extra else ""), err
    print(f"hf-critic {args.command}: error: {message} (see {pointer(error)})", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
