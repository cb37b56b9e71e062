"""The one exception tree of hf-critic: a base class and the few kinds of failure a user can act on.

Every exception hf-critic raises is one of these kinds or a subclass of one, so that a caller (the command line, a
notebook, a service) can tell a user's mistake from a bug by the class alone:

- :class:`BadInputError`: bad input (an argument, a file, a row, a recipe, a model that cannot be used); also a
  ``ValueError``, as the library raised before these kinds existed.
- :class:`CriticChangedError`: a critic whose identity differs from the one a calibration, cache, jury or claim was
  made with; a kind of bad input.
- :class:`ServerError`: a server that failed or answered wrongly during a run (also a ``RuntimeError``);
  :class:`ServerUnusableError` is one found unusable before any work.
- :class:`MissingExtraError`: an optional package not installed (also an ``ImportError``); names the extra.
- :class:`ShortfallError`: a run that produced too few rows to keep.

A ``ValueError`` that is none of these comes from a bug, not from the user's input: the command line shows it as an
internal error, never as bad input. The exit code of each kind is in :mod:`hf_critic.commands.exit_status`.

Library messages name the argument (``tie_margin=``), never a command-line flag (``--tie-margin``): the command line
rewrites ``name=`` into its flag (:func:`hf_critic.commands.exit_status.error_line`), so that one message reads right in
both places.
"""

from __future__ import annotations

__all__ = [
    "BadInputError",
    "CriticChangedError",
    "HfCriticError",
    "MissingExtraError",
    "ServerError",
    "ServerUnusableError",
    "ShortfallError",
]


class HfCriticError(Exception):
    """The base of every exception hf-critic raises on purpose: catch it to handle any failure the user can act on.

    The message is one line that names what failed (the file, row, field, argument or URL) and its value.
    """


class BadInputError(HfCriticError, ValueError):
    """Bad input: an argument, a file, a row, a recipe or a model that cannot be used as given.

    Also a ``ValueError``, so code written as ``except ValueError`` keeps catching it. The message names the argument
    as ``name=`` (``tie_margin=-1: must be >= 0``); the command line shows the flag instead (``--tie-margin -1``).
    """


class CriticChangedError(BadInputError):
    """A critic whose identity (weights, tokenizer and chat template, template, verdict options, server) differs from
    the one a calibration file, cache, jury or calibration claim was made with: its numbers do not hold for this one.
    The message names the file and the part that changed."""


class ServerError(HfCriticError, RuntimeError):
    """A server that failed or answered wrongly during a run: requests refused or still failing after retries, or
    answers that cannot be read (e.g. verdict read-outs with no probability on the allowed verdicts). The message
    names the base URL (never a key) and the model."""


class ServerUnusableError(ServerError, ConnectionError):
    """A server that cannot be used, found before any work: down, not OpenAI-compatible, refusing the key, or not
    serving the model asked for (the user's URL, model or key to fix). Also a ``ConnectionError``."""


class MissingExtraError(HfCriticError, ImportError):
    """An optional package hf-critic needs for this run is not installed.

    Args:
        message: what needs the package and which package, one line.
        extra: hf-critic's extra that installs it (``"report"``); the message ends with
            ``pip install 'hf-critic[EXTRA]'`` when it does not already say so.

    Attributes:
        extra: the extra's name.
    """

    def __init__(self, message: str, *, extra: str):
        self.extra = extra
        fix = f"pip install 'hf-critic[{extra}]'"
        super().__init__(message if fix in message else f"{message}: {fix}")


class ShortfallError(HfCriticError, RuntimeError):
    """A run that produced no rows, or lost more than the allowed share of a stage's items: nothing is saved or
    pushed. The message is one line naming the stage and the main reason."""
