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
rewrites ``name=`` into its flag (:func:`flags_for_arguments`, :func:`command_line_message`), so that one message reads
right in both places.
"""

from __future__ import annotations

import re

__all__ = [
    "BadInputError",
    "CriticChangedError",
    "HfCriticError",
    "MissingExtraError",
    "ServerError",
    "ARGUMENT_FLAGS",
    "ServerUnusableError",
    "ShortfallError",
    "command_line_message",
    "flags_for_arguments",
    "help_flags",
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
        fix: the command that installs it instead, where no extra can (vLLM lives in its own virtualenv:
            ``make vllm``).

    Attributes:
        extra: the extra's name.
    """

    def __init__(self, message: str, *, extra: str, fix: str | None = None):
        self.extra = extra
        fix = fix or f"pip install 'hf-critic[{extra}]'"
        super().__init__(message if fix in message else f"{message}: {fix}")


class ShortfallError(HfCriticError, RuntimeError):
    """A run that produced no rows, or lost more than the allowed share of a stage's items: nothing is saved or
    pushed. The message is one line naming the stage and the main reason."""


# An argument named in a library message, ``name=`` and its value if any (not inside a dotted name, a flag or a URL).
_ARGUMENT = re.compile(r"(?<![\w.\-?&/=])([a-z][a-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^\s,;:)]*)")
# The long flags of an option's invocation in a help text (``  -m MODEL, --model MODEL``).
_INVOCATION = re.compile(r"^ {2}(-.*?)(?: {2,}|$)", flags=re.MULTILINE)

#: Library arguments that the command line types under another name, ``{argument: flag}``: the rewrite uses one only
#: where the command has that flag and none of the argument's own spelling.
ARGUMENT_FLAGS = {
    "push": "--push-to-hub",  # run_eval_instruct(push=True): eval-instruct's --push-to-hub ORG/NAME
    "parse": "--verdict-parser",  # the generic loader's verdict parser (parse=): meta-eval's --verdict-parser
    "fraction": "--human-subset",  # PPISpec(fraction=): meta-eval's --human-subset
    "column": "--ppi-labels",  # PPISpec(column=): meta-eval's --ppi-labels
}


def help_flags(help_text: str) -> frozenset[str]:
    """The long flags a command's ``--help`` lists in its options' invocations (``--tie-margin``, ``--no-swap``).

    Args:
        help_text: the command parser's ``format_help()``.

    Returns:
        The flags, each with its leading ``--``.
    """
    return frozenset(flag for found in _INVOCATION.findall(help_text) for flag in re.findall(r"--[\w-]+", found))


def flags_for_arguments(message: str, flags: frozenset[str]) -> str:
    """``message`` with every argument named as ``name=`` written as the command's flag instead: ``tie_margin=-1: must
    be >= 0`` -> ``--tie-margin -1: must be >= 0``, ``needs human_subset= or ppi_labels=`` -> ``needs --human-subset or
    --ppi-labels``, ``swap=True`` -> ``--swap``, ``swap=False`` -> ``--no-swap`` (or ``without --swap``). An argument
    the command types otherwise is written as its flag of :data:`ARGUMENT_FLAGS` (``parse=`` -> ``--verdict-parser``)
    where the command has that flag. A name with no flag of that spelling in ``flags`` stays as it is, and so does
    ``name=`` inside a dotted name, a flag or a URL.

    Args:
        message: a library error's message (library messages name arguments, never flags).
        flags: the command's long flags (:func:`help_flags`).

    Returns:
        The message as the command line prints it.
    """

    def flag(match: re.Match) -> str:
        name, value = match.groups()
        spelled = "--" + name.replace("_", "-")
        negated = "--no-" + name.replace("_", "-")
        if spelled not in flags and ARGUMENT_FLAGS.get(name) in flags:
            spelled = ARGUMENT_FLAGS[name]
        if spelled not in flags:
            return negated if value == "False" and negated in flags else match.group(0)
        if value == "False":
            return negated if negated in flags else f"without {spelled}"
        return spelled if value in ("", "True") else f"{spelled} {value}"

    return _ARGUMENT.sub(flag, message)


def command_line_message(error: BaseException, parser) -> str:
    """An error's message as a command line prints it: the arguments it names (``overwrite=True``) written as the
    flags of ``parser`` (``--overwrite``), for a script that prints ``PROG: error: MESSAGE``.

    Args:
        error: the exception caught.
        parser: the script's ``argparse.ArgumentParser`` (its ``format_help()`` lists the flags).

    Returns:
        The message, one line as the library wrote it, flags in place of the arguments the parser has.
    """
    return flags_for_arguments(str(error), help_flags(parser.format_help()))
