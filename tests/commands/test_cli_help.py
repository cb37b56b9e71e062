"""Every command's ``--help``, byte for byte, against the snapshots in ``tests/commands/help/``.

The options are generated from dataclasses (:mod:`hf_critic.commands.options`); a change in how they are declared
must not change what a user reads. A deliberate change to a help text updates the snapshots:
``HF_CRITIC_UPDATE_HELP=1 pytest tests/commands/test_cli_help.py``, then review the diff of ``tests/commands/help/`` and commit it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from hf_critic.cli import build_parser

HELP_DIR = Path(__file__).parent / "help"
# (command words, snapshot file); "" is ``hf-critic --help``.
COMMANDS = [
    "",
    "grade",
    "compare",
    "calibrate",
    "meta-eval",
    "view",
    "refine",
    "self-eval",
    "eval-instruct",
    "metrics",
    "metrics install",
    "metrics path",
    "export-critic",
]


def _subparser(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    """The parser of ``hf-critic WORD WORD ...`` (KeyError: no such sub-command)."""
    for word in words:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = action.choices[word]
    return parser


def _snapshot(command: str) -> Path:
    return HELP_DIR / f"{command.replace(' ', '_') or 'hf-critic'}.txt"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c or "hf-critic")
def test_help_is_unchanged(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps at the terminal's width
    text = _subparser(build_parser(), command.split()).format_help()
    path = _snapshot(command)
    if os.environ.get("HF_CRITIC_UPDATE_HELP") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"`hf-critic {command} --help` changed; see {path}"


def test_every_command_has_a_snapshot():
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert {c.split()[0] for c in COMMANDS if c} == set(action.choices)
    assert {p.name for p in HELP_DIR.glob("*.txt")} == {_snapshot(c).name for c in COMMANDS}


def test_a_changed_help_text_fails(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    parser = build_parser()
    grade = _subparser(parser, ["grade"])
    (limit,) = [a for a in grade._actions if a.dest == "limit"]
    limit.help = "only the first N rows"
    assert grade.format_help() != _snapshot("grade").read_text(encoding="utf-8")
