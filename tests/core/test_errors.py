"""One exception tree (hf_critic.core.errors), its exit codes in one table, and flags only at the command line.

Every exception class of the package is a kind of ``HfCriticError``; the command line turns each kind into its exit
status and one line, and a bug's exception (a ``ValueError`` of no kind) into a traceback, never "bad input"; a
library message names the argument (``tie_margin=``) and the command line prints the flag (``--tie-margin``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from hf_critic import cli
from hf_critic.commands import exit_status
from hf_critic.commands.exit_status import EXIT_BY_KIND, INTERNAL_ERROR_NOTE, error_line
from hf_critic.core.errors import (
    BadInputError,
    CriticChangedError,
    HfCriticError,
    MissingExtraError,
    ServerError,
    ServerUnusableError,
    ShortfallError,
    command_line_message,
    flags_for_arguments,
    help_flags,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "hf_critic"
# Subpackages whose modules import an extra at module level (pip install 'hf-critic[train]'): read, not imported.
_NEEDS_EXTRA = ("hf_critic.training",)


def _module_names() -> list[str]:
    names = []
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not name.startswith(_NEEDS_EXTRA):
            names.append(name)
    return names


def _exception_classes() -> dict[str, type[BaseException]]:
    """``{module.qualname: class}`` of every exception class defined in an importable hf_critic module."""
    found = {}
    for name in _module_names():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                found[f"{name}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_class_of_the_package_is_a_kind_of_hf_critic_error():
    classes = _exception_classes()
    assert len(classes) >= 20, sorted(classes)  # the scan sees them: RecordError, the servers' errors, the kinds
    assert {"hf_critic.io.errors.RecordError", "hf_critic.backends.retry.EndpointError"} <= set(classes)
    assert [name for name, cls in classes.items() if not issubclass(cls, HfCriticError)] == []


def test_the_kinds_keep_the_standard_bases_callers_catch():
    """``except ValueError`` / ``ImportError`` / ``ConnectionError`` written before the tree still catch the same."""
    from hf_critic.backends.models import ModelNotFoundError
    from hf_critic.backends.retry import EndpointError, FatalAPIError, RequestsFailedError
    from hf_critic.io import RecordError

    assert issubclass(BadInputError, ValueError) and issubclass(CriticChangedError, BadInputError)
    assert issubclass(MissingExtraError, ImportError) and issubclass(ServerUnusableError, ConnectionError)
    assert issubclass(RecordError, BadInputError) and issubclass(ModelNotFoundError, OSError)
    assert issubclass(EndpointError, ServerUnusableError)
    assert issubclass(FatalAPIError, ServerError) and issubclass(RequestsFailedError, ServerError)
    assert not issubclass(ServerError, ValueError)  # a failed server is never "bad input"


def test_a_missing_extra_names_the_pip_install_once():
    err = MissingExtraError("the report's plots need matplotlib", extra="report")
    assert str(err) == "the report's plots need matplotlib: pip install 'hf-critic[report]'" and err.extra == "report"
    again = MissingExtraError(str(err), extra="report")
    assert str(again) == str(err)


# --------------------------------------------------------------------------------------------------
# Each kind through the command line: its exit status and its one line
# --------------------------------------------------------------------------------------------------
# (error, exit status, section of the troubleshooting page: by the error's class, else by where it was raised, here
# in this test, which has none: the page itself)
KINDS = [
    (BadInputError("data.jsonl: row 3: field 'label' is 'maybe'"), 2, ""),
    (CriticChangedError("cal.json: critic 'a' differs from the one calibrated"), 2, ""),
    (ServerUnusableError("no OpenAI-compatible server answers at http://127.0.0.1:9/v1"), 2, "#servers"),
    (ServerError("3 of 8 request(s) to http://127.0.0.1:9/v1 failed after retries"), 3, "#servers"),
    (MissingExtraError("the report's plots need matplotlib", extra="report"), 2, "#missing-extra"),
    (ShortfallError("no rows in any config: stage score_difficulty kept 0 of 10"), 4, ""),
]


@pytest.mark.parametrize(("error", "code", "section"), KINDS, ids=[type(k[0]).__name__ for k in KINDS])
def test_each_kind_exits_with_its_code_and_one_line(error, code, section, monkeypatch, capsys):
    def fails(args):
        raise error

    monkeypatch.setattr("hf_critic.commands.options.check_shared_settings", fails)
    assert cli.main(["metrics", "path", "critique_correlation"]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hf-critic metrics: error: {error} (see docs/troubleshooting.md{section})"]


def test_the_table_maps_every_kind_and_the_most_specific_kind_wins():
    kinds = [kind for kind, _ in EXIT_BY_KIND]
    assert set(kinds) == {BadInputError, CriticChangedError, HfCriticError, MissingExtraError, ServerError}.union(
        {ServerUnusableError, ShortfallError}
    )
    for i, kind in enumerate(kinds):  # a subclass before its base, or the base would take its errors
        assert not any(issubclass(kind, earlier) for earlier in kinds[:i]), kind
    assert exit_status.exit_status(ServerUnusableError("x")) == 2 and exit_status.exit_status(ServerError("x")) == 3
    with pytest.raises(TypeError, match="ValueError is no kind"):
        exit_status.exit_status(ValueError("x"))


def test_a_server_that_does_not_answer_is_bad_input_before_any_work(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text('{"question": "q", "response": "r"}\n', encoding="utf-8")
    argv = ["grade", "--data", str(data), "--output", str(tmp_path / "o.jsonl"), "--no-progress"]
    assert cli.main([*argv, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-cache"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("hf-critic grade: error: no OpenAI-compatible server answers at http://127.0.0.1:9/v1")
    assert line.endswith("(see docs/troubleshooting.md#servers)")


def test_a_bug_s_value_error_is_a_traceback_not_bad_input(monkeypatch, capsys):
    def bug(args):
        raise ValueError("too many values to unpack (expected 2)")

    monkeypatch.setattr("hf_critic.commands.options.check_shared_settings", bug)
    with pytest.raises(ValueError, match="too many values to unpack") as raised:
        cli.main(["metrics", "path", "critique_correlation"])
    assert "error:" not in capsys.readouterr().err  # no one-line "bad input"
    if hasattr(raised.value, "add_note"):  # Python 3.11+: the traceback ends by saying it is a bug
        assert raised.value.__notes__ == [INTERNAL_ERROR_NOTE]


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("hf_critic.commands.options.check_shared_settings", interrupted)
    assert cli.main(["metrics", "path", "critique_correlation"]) == 130
    assert capsys.readouterr().err.strip() == "hf-critic metrics: interrupted"


# --------------------------------------------------------------------------------------------------
# Library messages name arguments; the command line names flags
# --------------------------------------------------------------------------------------------------
def test_the_command_line_writes_arguments_as_its_flags():
    flags = help_flags(cli.build_parser().commands["compare"].format_help())
    assert {"--tie-margin", "--swap", "--base-url", "--score-range", "--verdict"} <= flags
    cases = {
        "tie_margin=-1: must be a finite number >= 0": "--tie-margin -1: must be a finite number >= 0",
        "constrain_verdict=True needs grammars; use engine=llamacpp or base_url= of a llama.cpp server": (
            "--constrain-verdict needs grammars; use --engine llamacpp or --base-url of a llama.cpp server"
        ),
        "swap=False: nothing to compare": "without --swap: nothing to compare",
        "rubric= (no criteria; score_range= sets the scale)": "--rubric (no criteria; --score-range sets the scale)",
        "cannot read the rubric file 'a b.yaml' (rubric=): no such file": (
            "cannot read the rubric file 'a b.yaml' (--rubric): no such file"
        ),
        "verdict='text' is refused": "--verdict 'text' is refused",
        # not arguments of this command: a column map, a dotted key, a URL's query, an unknown name
        "map yours with columns=, e.g. question=prompt": "map yours with --columns, e.g. question=prompt",
        "data.sha256=ab http://h/v1?model=m k=3": "data.sha256=ab http://h/v1?model=m k=3",
    }
    assert {m: flags_for_arguments(m, flags) for m in cases} == cases


def test_a_library_error_reaches_the_command_line_with_its_flag():
    from hf_critic.critic.rewards import refuse_for_generator

    with pytest.raises(BadInputError) as err:
        refuse_for_generator(0.5, False, "transformers", True)
    assert str(err.value) == "tie_margin=0.5: only a reward critic (a reward model) has a tie band"
    flags = help_flags(cli.build_parser().commands["compare"].format_help())
    code, line = error_line(err.value, "compare", flags)
    assert code == 2 and line.startswith("hf-critic compare: error: --tie-margin 0.5: only a reward critic")


#: Flags a library message may name: other programs' (pip, vLLM) and commands to run next, not an argument's name.
_OTHER_PROGRAMS = {"--no-deps", "--runner"}


def _flags_in_raises(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            texts = [n.value for n in ast.walk(node.exc) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            flags = {f for t in texts for f in re.findall(r"(?<![\w-])--[a-z][\w-]*", t)} - _OTHER_PROGRAMS
            found += [f"{path.relative_to(SRC)}:{node.lineno} {flag}" for flag in sorted(flags)]
    return found


def test_library_messages_name_arguments_not_flags():
    found = [hit for path in sorted(SRC.rglob("*.py")) for hit in _flags_in_raises(path)]
    assert any(hit.startswith("commands/") for hit in found)  # the scan sees flags where they belong
    outside = {re.sub(r":\d+ ", " ", hit) for hit in found if not hit.startswith(("commands/", "cli.py"))}
    assert outside == set(), "name the argument (name=); the command line writes its flag"


def test_an_argument_the_command_line_spells_otherwise_is_written_as_that_flag():
    """:data:`~hf_critic.core.errors.ARGUMENT_FLAGS`: only where the command has the flag it maps to."""
    parser = cli.build_parser()
    meta, compare = (help_flags(parser.commands[c].format_help()) for c in ("meta-eval", "compare"))
    eval_instruct = help_flags(parser.commands["eval-instruct"].format_help())
    assert flags_for_arguments("column='gold': no such column (have ['a'])", meta) == (
        "--ppi-labels 'gold': no such column (have ['a'])"
    )
    assert flags_for_arguments("field 'v' must be text for parse= (a verdict parser), got 3", meta) == (
        "field 'v' must be text for --verdict-parser (a verdict parser), got 3"
    )
    assert (
        flags_for_arguments("needs fraction= (a share) or column=", meta)
        == "needs --human-subset (a share) or --ppi-labels"
    )
    assert flags_for_arguments("push=True needs hub.repo_id", eval_instruct) == "--push-to-hub needs hub.repo_id"
    # a command without the flag keeps the argument's name
    assert flags_for_arguments("column='gold': no such column", compare) == "column='gold': no such column"


def test_a_script_prints_the_message_with_its_own_flags():
    import argparse

    parser = argparse.ArgumentParser(prog="build_judgment_data.py")
    parser.add_argument("--overwrite", action="store_true")
    err = BadInputError("output_dir out: already holds hub; pass overwrite=True to replace")
    assert command_line_message(err, parser) == "output_dir out: already holds hub; pass --overwrite to replace"
