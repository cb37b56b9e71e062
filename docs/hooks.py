"""MkDocs hooks: pages generated from the code at build time, so they follow it without a hand-written copy.

- ``<!-- generated: cli-reference -->`` (alone on a line): the command-line reference, read from the real argparse parsers
  (:func:`hf_critic.cli.build_parser`): one section per command and sub-command, its usage, description and one
  table per argument group. A new option appears on the next build.
- ``<!-- generated: include PATH -->``: the file PATH of the repository (YAML front matter removed), e.g. the shipped
  critic's model card, which stays the one hand-written home of its figures.
- ``<!-- generated: results NAME -->``: the figures and PNGs of a named run of ``scripts/build_results_docs.py``, read
  from its committed ``docs/results/NAME/report.json``.
- ``<!-- generated: other-modules -->``: a ``::: hf_critic.NAME`` line (rendered by mkdocstrings) for every public
  module or subpackage that no other API page names, so a new module is documented on the next build.
- On the API pages, a ``::: PACKAGE`` line (a subpackage of hf_critic) renders the package with its own names only,
  then each public submodule the page does not name itself (:func:`api_directives`): every public function appears
  once, under the module that defines it, not a second time as the package's re-export.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MARKER = re.compile(r"^<!-- generated: (cli-reference|other-modules|include (\S+)|results (\S+)) -->$", re.MULTILINE)
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


def results_section(name: str) -> str:
    """The section of a named run of scripts/build_results_docs.py: its figures from its committed report.json and
    its PNGs (docs/results/NAME/)."""
    spec = importlib.util.spec_from_file_location("build_results_docs", REPO / "scripts" / "build_results_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.section(name)


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


_GRIFFE: dict[str, object] = {}


def _package():
    """hf_critic as griffe reads it (what mkdocstrings renders), loaded once per build process."""
    if "pkg" not in _GRIFFE:
        import griffe

        _GRIFFE["pkg"] = griffe.load("hf_critic", search_paths=[str(REPO / "src")], resolve_aliases=False)
    return _GRIFFE["pkg"]


def _target(member) -> str | None:
    try:
        return member.target_path if member.is_alias else None
    except Exception:  # noqa: BLE001 - an external alias
        return None


def _public_submodules(module) -> list:
    return [m for name, m in module.modules.items() if not name.startswith("_")]


def _own_names(module, rendered: set[str], shown: set[str]) -> list[str] | None:
    """The public names of ``module`` less its re-exports of objects whose module the page renders (they appear
    there) or that an earlier module of the page re-exported (``shown``, updated); None where nothing is left out
    (mkdocstrings' own choice of members stands)."""
    names = module.exports if module.exports is not None else [n for n in module.members if not n.startswith("_")]
    own, dropped = [], False
    for name in (n if isinstance(n, str) else n.name for n in names):
        member = module.members.get(name)
        if member is None or (not member.is_alias and member.is_module):
            continue
        target = _target(member)
        if target and (target.rpartition(".")[0] in rendered or target in shown):
            dropped = True
            continue
        shown.add(target or member.path)
        own.append(name)
    return own if dropped else None


def api_directives(markdown: str) -> str:
    """An API page's ``::: hf_critic.PACKAGE`` lines expanded: each public submodule (recursively) the page does not
    name with a line of its own follows its package; then each module is rendered without its re-exports of names
    another module of the page defines. ``::: hf_critic`` (the root, whose subpackages have pages of their own) stays
    as it is."""
    line = re.compile(r"^::: (\S+)[ \t]*$", re.M)
    named = set(line.findall(markdown))

    def get(path: str):
        return _package() if path == "hf_critic" else _package().get_member(path.removeprefix("hf_critic."))

    def modules(path: str) -> list[str]:
        module = get(path)
        out = [path]
        if path != "hf_critic" and module.is_init_module:
            for sub in _public_submodules(module):
                if sub.path not in named:
                    named.add(sub.path)
                    out += modules(sub.path)
        return out

    expanded = {path: modules(path) for path in line.findall(markdown)}
    rendered = {m for paths in expanded.values() for m in paths}
    shown: set[str] = set()

    def directive(path: str) -> str:
        own = None if path == "hf_critic" else _own_names(get(path), rendered, shown)
        if own is None:
            return f"::: {path}"
        members = "[" + ", ".join(own) + "]" if own else "false"
        return f"::: {path}\n    options:\n      members: {members}"

    return line.sub(lambda m: "\n\n".join(directive(p) for p in expanded[m.group(1)]), markdown)


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
        if match.group(3):
            return results_section(match.group(3))
        return _other_modules_markdown() if match.group(1) == "other-modules" else include(match.group(2))

    markdown = MARKER.sub(expand, markdown)
    if page.file.src_uri.startswith("api/"):
        markdown = api_directives(markdown)
    return "\n".join(_literal_brackets(line) for line in markdown.split("\n"))
