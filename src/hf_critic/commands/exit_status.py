"""The exit status of every ``hf-critic`` command, listed once: ``hf-critic --help`` prints the whole list (and so the
generated command-line reference shows it), ``hf-critic eval-instruct --help`` the codes of that command, and
:func:`hf_critic.cli.main` and the commands return these names."""

from __future__ import annotations

import textwrap

DONE = 0
PARTLY_FAILED = 1  # eval-instruct: done, but some items failed after retries
BAD_INPUT = 2
SERVER_FAILED = 3
NO_ROWS = 4  # eval-instruct: nothing left to save

#: status -> what it means; the one list every page and help text shows or links to.
EXIT_STATUS: dict[int, str] = {
    DONE: "done",
    PARTLY_FAILED: "eval-instruct only: done, but some items failed after retries (listed in "
    "<output_dir>/failures.jsonl)",
    BAD_INPUT: "bad input (an option, a file, a row, a recipe), a missing package, or a server unusable before any "
    "work: one line on stderr that names it (see docs/troubleshooting.md)",
    SERVER_FAILED: "a server failed or refused requests during the run: answered requests are cached, so the same "
    "command started again resumes",
    NO_ROWS: "eval-instruct only: no rows at all, or a stage lost more than max_rejected_share of its items (one line "
    "names the stage and its main reason; nothing is saved or pushed)",
}

#: the codes only ``eval-instruct`` returns
EVAL_INSTRUCT_ONLY = (PARTLY_FAILED, NO_ROWS)


def exit_status_text(codes: tuple[int, ...] | None = None) -> str:
    """The ``exit status:`` paragraph of a help text: one line per code of :data:`EXIT_STATUS` (all by default).

    Args:
        codes: the codes to list, in order (default: every code).

    Returns:
        ``"exit status:\\n  0  done\\n  ..."``, each meaning after its code, wrapped at 110 characters.

    Raises:
        KeyError: a code that is not in :data:`EXIT_STATUS`.
    """
    lines = ["exit status:"]
    for code in EXIT_STATUS if codes is None else codes:
        lines.append(textwrap.fill(EXIT_STATUS[code], 110, initial_indent=f"  {code}  ", subsequent_indent=" " * 5))
    return "\n".join(lines) + "\n"
