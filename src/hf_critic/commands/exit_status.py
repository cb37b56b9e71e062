"""The exit status of every ``hf-critic`` command, listed once: ``hf-critic --help`` prints the whole list (and so the
generated command-line reference shows it), ``hf-critic eval-instruct --help`` the codes of that command, and
:func:`hf_critic.cli.main` and the commands return these names.

Here too is how an error becomes its status and its one line: :data:`EXIT_BY_KIND` maps each kind of
:mod:`hf_critic.core.errors` to its status, and :func:`error_line` writes the line, with the command's flags in place of
the library's argument names (:func:`hf_critic.core.errors.flags_for_arguments`). An exception of no kind is a bug:
:func:`bugs_reported` lets it through as a traceback, with a note saying so, never as bad input.
"""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator

from ..core import errors
from ..core.errors import HfCriticError, flags_for_arguments
from .troubleshooting import pointer

DONE = 0
PARTLY_FAILED = 1  # eval-instruct: done, but some items failed after retries
BAD_INPUT = 2
SERVER_FAILED = 3
NO_ROWS = 4  # eval-instruct: nothing left to save
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)

#: status -> what it means; the one list every page and help text shows or links to.
EXIT_STATUS: dict[int, str] = {
    DONE: "done",
    PARTLY_FAILED: "eval-instruct: done, but some items failed after retries (listed in "
    "<output_dir>/failures.jsonl); any command: an internal error, a bug in hf-critic (a Python traceback that says so)",
    BAD_INPUT: "bad input (an option, a file, a row, a recipe), a missing package, or a server unusable before any "
    "work: one line on stderr that names it (see docs/troubleshooting.md)",
    SERVER_FAILED: "a server failed or refused requests during the run: answered requests are cached, so the same "
    "command started again resumes",
    NO_ROWS: "eval-instruct only: no rows at all, or a stage lost more than max_rejected_share of its items (one line "
    "names the stage and its main reason; nothing is saved or pushed)",
    INTERRUPTED: "interrupted (Ctrl-C): answered requests are cached, so the same command started again resumes",
}

#: kind of error -> exit status, most specific first: an error takes the status of the first kind it is an instance of.
EXIT_BY_KIND: tuple[tuple[type[HfCriticError], int], ...] = (
    (errors.ShortfallError, NO_ROWS),
    (errors.ServerUnusableError, BAD_INPUT),  # found before any work: the URL, model or key to fix
    (errors.ServerError, SERVER_FAILED),
    (errors.MissingExtraError, BAD_INPUT),
    (errors.CriticChangedError, BAD_INPUT),
    (errors.BadInputError, BAD_INPUT),
    (errors.HfCriticError, BAD_INPUT),
)

#: The one-line error of a command: ``hf-critic COMMAND: error: MESSAGE (see docs/troubleshooting.md#SECTION)``.
ERROR_LINE = "hf-critic {command}: error: {message} (see {pointer})"

#: The note a bug's traceback ends with.
INTERNAL_ERROR_NOTE = (
    "hf-critic: internal error: an exception hf-critic does not turn into a one-line error, so a bug (even where "
    "your input set it off: it deserves a line naming it); please report it with the traceback above"
)

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


def exit_status(error: BaseException) -> int:
    """The exit status of ``error`` by its kind (:data:`EXIT_BY_KIND`).

    Args:
        error: an instance of a kind of :mod:`hf_critic.core.errors`.

    Returns:
        The status: 2 (bad input), 3 (a server failed) or 4 (no rows).

    Raises:
        TypeError: ``error`` is of no kind (a bug, which has no status of its own).
    """
    for kind, code in EXIT_BY_KIND:
        if isinstance(error, kind):
            return code
    raise TypeError(f"{type(error).__name__} is no kind of hf_critic.core.errors.HfCriticError")


def error_line(error: HfCriticError, command: str, flags: frozenset[str] = frozenset()) -> tuple[int, str]:
    """The exit status of a command that failed with ``error`` and the one line it prints on stderr.

    Args:
        error: the error (a kind of :mod:`hf_critic.core.errors`).
        command: the command's name as typed (``grade``).
        flags: the command's long flags, to write the arguments its message names as flags
            (:func:`~hf_critic.core.errors.help_flags`).

    Returns:
        ``(status, line)``: the line is :data:`ERROR_LINE` filled in, with the troubleshooting section of the error.
    """
    message = flags_for_arguments(str(error), flags)
    return exit_status(error), ERROR_LINE.format(command=command, message=message, pointer=pointer(error))


@contextlib.contextmanager
def bugs_reported() -> Iterator[None]:
    """Let any exception that is no kind of :class:`~hf_critic.core.errors.HfCriticError` through as a bug: its
    traceback ends with :data:`INTERNAL_ERROR_NOTE` (Python 3.11+; Python's own exit status, 1), so that a bug's
    ``ValueError`` is never shown as bad input.

    Yields:
        Nothing; wraps a command's run.
    """
    try:
        yield
    except HfCriticError:
        raise
    except Exception as err:
        if hasattr(err, "add_note"):  # Python 3.11+
            err.add_note(INTERNAL_ERROR_NOTE)
        raise
