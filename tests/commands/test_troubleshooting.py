"""docs/troubleshooting.md covers every one-line error the command line can print, and each error names its section.

The errors are collected from the code, not listed by hand: every ``raise`` in a module the command line can import
(directly or inside a function), of a class ``hf_critic.cli.main`` turns into a one-line error (read from its
``except`` clauses), is given its section by :func:`hf_critic.commands.troubleshooting.section_for` as the CLI does at
run time; the test fails on a raise site with no section and on a section the page lacks. A new error in a new module
fails here until its place has a section; a new section needs its ``## Title {#anchor}`` on the page.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hf_critic.cli import main
from hf_critic.commands.troubleshooting import (
    SECTIONS_BY_ERROR,
    SECTIONS_BY_PLACE,
    TROUBLESHOOTING,
    pointer,
    section_for,
)
from tests.test_architecture import _imports, _modules

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / TROUBLESHOOTING


def page_anchors() -> set[str]:
    """The explicit anchors of the page's headings (``## Title {#anchor}``)."""
    text = PAGE.read_text(encoding="utf-8")
    return set(re.findall(r"^#+ .*\{#([\w-]+)\}\s*$", text, flags=re.MULTILINE))


def cli_modules() -> set[str]:
    """Every hf_critic module the command line can import: those reachable from ``hf_critic.cli`` through imports at
    any depth (an import inside a function counts: it runs when that command does)."""
    edges: dict[str, set[str]] = {}
    for module, _, target in _imports(_modules()):
        edges.setdefault(module, set()).add(target)
    seen, queue = {"hf_critic", "hf_critic.cli"}, deque(["hf_critic", "hf_critic.cli"])
    while queue:
        for target in edges.get(queue.popleft(), ()):
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


@functools.cache
def _trees() -> dict[str, ast.Module]:
    return {module: ast.parse(path.read_text(encoding="utf-8")) for module, (path, _) in _modules().items()}


def class_chains(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """``{class name: [its name, its bases' names, ... up to BaseException]}`` for hf_critic's exception classes and
    Python's built-in ones."""
    bases: dict[str, list[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]

    def chain(name: str) -> list[str]:
        builtin = getattr(builtins, name, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            return [cls.__name__ for cls in builtin.__mro__]
        return [name, *[n for base in bases.get(name, []) for n in chain(base)]]

    return {name: chain(name) for name in [*bases, *dir(builtins)]}


def caught_by_cli(trees: dict[str, ast.Module]) -> set[str]:
    """The exception classes ``hf_critic.cli.main`` turns into one-line errors (its ``except`` clauses)."""
    (main_def,) = [n for n in ast.walk(trees["hf_critic.cli"]) if isinstance(n, ast.FunctionDef) and n.name == "main"]
    caught = set()
    for handler in (n for n in ast.walk(main_def) if isinstance(n, ast.ExceptHandler)):
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        caught |= {t.id for t in types if isinstance(t, ast.Name)}
    return caught


@dataclass(frozen=True)
class RaiseSite:
    """One ``raise`` the command line can turn into a one-line error."""

    place: str  # module.qualname, as the CLI reads it from the traceback
    line: int
    error: str  # the class raised

    def __str__(self) -> str:
        return f"{self.place}:{self.line} raises {self.error}"


def _returned_classes(function: ast.FunctionDef) -> list[str]:
    """The classes an exception factory (``def bad(msg): return RecordError(msg)``) returns."""
    calls = [n.value for n in ast.walk(function) if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)]
    return [c.func.id for c in calls if isinstance(c.func, ast.Name)]


def _raised(name: str, chains: dict, factories: dict) -> list[str]:
    """The classes ``raise NAME(...)`` raises: NAME itself when it is a class, else what the factory NAME returns."""
    if name in chains:
        return [name]
    return _returned_classes(factories[name]) if name in factories else []


def _callee(node: ast.Raise) -> str | None:
    if not isinstance(node.exc, ast.Call):
        return None  # a bare raise, or an exception object re-raised: raised first elsewhere
    func = node.exc.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _raises(node: ast.AST, qualname: list[str], in_function: bool = False):
    """``(qualname, raise node)`` of every raise under ``node``; the qualname as Python writes it
    (``Outer.method.<locals>.inner``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope = [*qualname, "<locals>"] if in_function else qualname
            yield from _raises(child, [*scope, child.name], not isinstance(child, ast.ClassDef))
            continue
        if isinstance(child, ast.Raise):
            yield qualname, child
        yield from _raises(child, qualname, in_function)


def raise_sites() -> list[RaiseSite]:
    """Every raise site, in a module the CLI imports, of an error the CLI prints as one line."""
    trees = _trees()
    chains, caught = class_chains(trees), caught_by_cli(trees)
    reachable = cli_modules()
    sites = []
    for module in sorted(reachable & set(trees)):
        factories = {n.name: n for n in ast.walk(trees[module]) if isinstance(n, ast.FunctionDef)}
        for qualname, node in _raises(trees[module], []):
            for error in _raised(_callee(node) or "", chains, factories):
                if caught & set(chains.get(error, [])):
                    sites.append(RaiseSite(".".join([module, *qualname]), node.lineno, error))
    return sites


SITES = raise_sites()


def test_the_scan_finds_the_errors_the_cli_prints():
    """The scan sees the errors it must: a factory's RecordError, a subclass of ValueError, errors inside methods."""
    found = {str(s) for s in SITES}
    assert len(SITES) > 400
    factory = "hf_critic.glassbox.encoding.conversation_from_record"
    assert any(s.startswith(factory) and s.endswith("RecordError") for s in found)
    assert any(s.startswith("hf_critic.backends.cache.GenerationCache.__init__") for s in found)
    assert any(s.startswith("hf_critic.backends.threads.env_num_threads") for s in found)
    assert not any(s.startswith("hf_critic.training.sft") for s in found), "recipes/ runs it, not the CLI"


def test_every_error_the_cli_prints_has_a_section_on_the_page():
    anchors = page_anchors()
    unplaced = [str(s) for s in SITES if section_for(chain_of(s.error), s.place) is None]
    assert unplaced == [], "give these places a section in SECTIONS_BY_PLACE (hf_critic/commands/troubleshooting.py)"
    missing = sorted({section_for(chain_of(s.error), s.place) for s in SITES} - anchors)
    assert missing == [], f"add a section `## Title {{#anchor}}` to {TROUBLESHOOTING} for each of these anchors"


def test_every_section_named_in_the_table_is_on_the_page():
    named = set(SECTIONS_BY_ERROR.values()) | set(SECTIONS_BY_PLACE.values())
    assert named - page_anchors() == set()


def test_the_page_has_the_sections_of_juries_and_calibration():
    """Juries, delta_share, fit_share and calibration claims each have their section, which names the option."""
    text = PAGE.read_text(encoding="utf-8")
    words = {"juries": "jury", "delta-share": "delta_share", "fit-share": "fit_share"}
    words |= {"calibration": "calibration file", "threads": "OMP_NUM_THREADS", "cache": "HF_CRITIC_CACHE"}
    for anchor, word in words.items():
        section = text.split(f"{{#{anchor}}}", 1)[1].split("\n## ", 1)[0]
        assert word in section, anchor


def chain_of(error: str) -> list[str]:
    return _CHAINS.get(error, [error])


_CHAINS = class_chains(_trees())


# --------------------------------------------------------------------------------------------------
# The pointer each one-line error prints
# --------------------------------------------------------------------------------------------------
def test_the_pointer_names_the_section_of_where_the_error_was_raised():
    from hf_critic.io import RecordError
    from hf_critic.selective.cascade import delta_shares

    class Stage:
        delta_share = 0.7

    with pytest.raises(ValueError) as err:
        delta_shares([Stage(), Stage()])
    assert pointer(err.value) == f"{TROUBLESHOOTING}#delta-share"
    assert pointer(RecordError("x")) == f"{TROUBLESHOOTING}#bad-input"  # never raised: its class decides
    assert pointer(ValueError("x")) == TROUBLESHOOTING  # raised nowhere in hf_critic: the page itself


def _one_line(argv, capsys) -> str:
    """The one error line of ``hf-critic ARGV`` (exit status 2); progress bars of the data read may precede it."""
    code = main(argv)
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if ": error: " in line]
    assert code == 2 and len(lines) == 1, lines
    return lines[0]


def _cascade(tmp_path, **jury) -> str:
    members = [{"name": "longer", "baseline": "longer-wins"}, {"name": "l2", "baseline": "longer-wins"}]
    spec = {"critics": [{"name": "j", "jury": {"members": members, "aggregate": "fitted", **jury}}]}
    path = tmp_path / "cascade.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "edit, anchor, says",
    [
        ({"fit_share": 1.5}, "fit-share", "jury fit_share must be a number in (0, 1)"),
        ({"aggregate": "median"}, "juries", "aggregate must be one of"),
    ],
)
def test_a_jury_error_points_to_its_section(tmp_path, capsys, edit, anchor, says):
    data = tmp_path / "pairs.jsonl"
    data.write_text('{"question": "q", "response_1": "a", "response_2": "bb", "label": 1}\n', encoding="utf-8")
    output = tmp_path / "calibration.json"
    cascade = _cascade(tmp_path, **edit)
    argv = [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        cascade,
        "--target-agreement",
        "0.8",
        "--output",
        str(output),
    ]
    line = _one_line(argv, capsys)
    assert says in line and line.endswith(f"(see {TROUBLESHOOTING}#{anchor})"), line
    assert not output.exists()


def test_a_missing_data_file_points_to_bad_input(tmp_path, capsys):
    line = _one_line(["grade", "--data", str(tmp_path / "none.jsonl"), "--output", str(tmp_path / "o.jsonl")], capsys)
    assert line.endswith(f"(see {TROUBLESHOOTING}#bad-input)"), line
