"""MkDocs hooks: pages generated from the code at build time, so they follow it without a hand-written copy.

- ``<!-- generated: cli-reference -->`` (alone on a line): the command-line reference, read from the real argparse parsers
  (:func:`hf_critic.cli.build_parser`): one section per command and sub-command, its usage, description and one
  table per argument group. A new option appears on the next build.
- ``<!-- generated: include PATH -->``: the file PATH of the repository (YAML front matter removed), e.g. the shipped
  critic's model card, which stays the one hand-written home of its figures.
- ``<!-- generated: other-modules -->``: a ``::: hf_critic.NAME`` line (rendered by mkdocstrings) for every public
  module or subpackage that no other API page names, so a new module is documented on the next build.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MARKER = re.compile(r"^<!-- generated: (cli-reference|other-modules|include (\S+)) -->$", re.MULTILINE)  # own line
# Modules of hf_critic that are no API: the command-line plumbing (documented by the CLI reference), test helpers, the
# shipped critics' data folder.
INTERNAL_MODULES = {"cli", "commands", "redaction", "testing", "tiny_models", "critics"}
OTHER_MODULES_PAGE = "other.md"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _option(action: argparse.Action) -> str:
    """``--data FILE`` / ``-v, --verbose`` / ``NAME`` as it reads in a usage line."""
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    spelled = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{spelled}`"
    metavar = action.metavar or (
        action.dest.upper() if not action.choices else "{" + ",".join(map(str, action.choices)) + "}"
    )
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    return f"`{spelled} {metavar}`"


def _help(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    """The option's help with argparse's %(default)s expanded, plus its default when the help does not say it."""
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    params = {**vars(action), "prog": parser.prog}
    params = {k: (getattr(v, "__name__", v)) for k, v in params.items()}
    try:
        text = text % params
    except (KeyError, TypeError, ValueError):
        pass
    default = action.default
    if default not in (None, False, argparse.SUPPRESS, [], "") and action.nargs != 0 and "default" not in text:
        text += f" (default: `{default}`)"
    return _cell(text)


def _section(parser: argparse.ArgumentParser, level: int) -> list[str]:
    """One command's section: heading, description, usage, one table per argument group, then its sub-commands."""
    lines = [f"{'#' * level} {parser.prog}", ""]
    if parser.description:
        lines += [parser.description, ""]
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines += ["```text", usage, "```", ""]
    children = []
    for group in parser._action_groups:
        rows = []
        for action in group._group_actions:
            if isinstance(action, argparse._SubParsersAction):
                children += [(name, sub) for name, sub in action.choices.items() if sub.prog.endswith(name)]
                continue
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            rows.append(f"| {_option(action)} | {_help(action, parser)} |")
        if rows:
            title = group.title if group.title not in ("options", "optional arguments") else "options"
            lines += [f"**{title}**", ""] + ([_cell(group.description), ""] if group.description else [])
            lines += ["| option | meaning |", "|---|---|", *rows, ""]
    if parser.epilog:
        lines += ["```text", parser.epilog.strip("\n"), "```", ""]
    seen = set()
    for _, sub in children:
        if id(sub) not in seen:  # aliases share one parser
            seen.add(id(sub))
            lines += _section(sub, min(level + 1, 4))
    return lines


def cli_reference() -> str:
    """The whole command-line reference as Markdown (``hf-critic`` and every sub-command)."""
    from hf_critic.cli import build_parser

    return "\n".join(_section(build_parser(), 2))


def include(path: str) -> str:
    """The repository file ``path`` without its YAML front matter and without its first heading (the page has one).

    Raises:
        FileNotFoundError: no such file (the build fails, naming it).
    """
    text = (REPO / path).read_text(encoding="utf-8")
    if text.startswith("---\n"):
        text = text.split("\n---\n", 1)[1]
    return re.sub(r"\A\s*# [^\n]*\n", "", text, count=1)


def _literal_brackets(line: str) -> str:
    """A table row's ``[L][H]`` is text, not a reference-style link (the docs use inline links only)."""
    return line.replace("][", "]\\[") if line.startswith("|") else line


def public_modules() -> set[str]:
    """The public top-level modules and subpackages of ``src/hf_critic`` (no leading underscore, not internal)."""
    package = REPO / "src" / "hf_critic"
    names = {p.stem for p in package.glob("*.py")}
    names |= {p.name for p in package.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    return {n for n in names if not n.startswith("_")} - INTERNAL_MODULES


def other_modules() -> list[str]:
    """The public modules no API page but the "other modules" page names with a ``::: hf_critic.NAME`` line."""
    pages = [p for p in (REPO / "docs" / "api").glob("*.md") if p.name != OTHER_MODULES_PAGE]
    named = {m for p in pages for m in re.findall(r"^::: hf_critic\.(\w+)", p.read_text(encoding="utf-8"), re.M)}
    return sorted(public_modules() - named)


def _other_modules_markdown() -> str:
    names = other_modules()
    if not names:
        return "Every public module has its own page."
    return "\n\n".join(f"::: hf_critic.{name}" for name in names)


def on_config(config):
    """Read this checkout's code (as mkdocstrings does with ``paths: [src]``), also when the Python running MkDocs has
    hf-critic installed from elsewhere. (MkDocs restores ``sys.path`` after importing a hook, hence here.)"""
    src = str(REPO / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return config


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each ``<!-- generated: ... -->`` marker of a page by what it names; table rows' brackets literal."""

    def expand(match: re.Match) -> str:
        if match.group(1) == "cli-reference":
            return cli_reference()
        return _other_modules_markdown() if match.group(1) == "other-modules" else include(match.group(2))

    return "\n".join(_literal_brackets(line) for line in MARKER.sub(expand, markdown).split("\n"))
