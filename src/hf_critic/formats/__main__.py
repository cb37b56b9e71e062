"""``python -m hf_critic.formats chat-template FAMILY [--output FILE]``: a published critic's input wrapper as a Jinja
chat template file, for a server that applies its own template (``vllm serve MODEL --chat-template FILE``;
llama.cpp's ``llama-server --jinja --chat-template-file FILE``).

The wrapper is the family's ``chat_template`` (:func:`hf_critic.formats.published_chat_format`), the format the
critic was trained and evaluated with; the file starts with a Jinja comment naming its source.
"""

from __future__ import annotations

import argparse
import sys

from ..core.errors import BadInputError
from .registry import families, get_family


def chat_template_file(family: str) -> str:
    """The text of ``family``'s chat template file: a ``{# ... #}`` source comment, then the wrapper.

    Raises:
        ValueError: the family is unknown or publishes no wrapper (its models' own chat template applies).
    """
    declared = get_family(family)
    if declared.chat_template is None:
        raise BadInputError(f"family {family!r} has no published input wrapper: the model's own chat template applies")
    return (
        f"{{# hf-critic {family}: {declared.chat_template_source} -#}}\n{declared.chat_template}\n"  # -#}: no newline
    )


def main(argv: list[str] | None = None) -> int:
    """Write (or print) one family's chat template file; exit status 2 with one line on a family without one."""
    with_wrapper = sorted(f.name for f in families() if f.chat_template is not None)
    parser = argparse.ArgumentParser(prog="python -m hf_critic.formats", description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="action", required=True)
    export = actions.add_parser("chat-template", help="write a published critic's chat template (Jinja)")
    export.add_argument("family", choices=with_wrapper, help="the critic family")
    export.add_argument("--output", help="file to write (default: print to stdout)")
    args = parser.parse_args(argv)
    text = chat_template_file(args.family)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
