"""Critics from specs, without the command line: a critic spec (one critic of a cascade file) is read into the option
dataclasses the command line is generated from and built by the same builder, so a spec and a command line with the
same options build the same critic; ``hf_critic.load_cascade`` works without loading the command line; bad keys and
values are one-line errors naming the file, the critic and the key; every option flag is declared in one place."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hf_critic.core import schema
from hf_critic.critics.options import CriticOptions, critic_options
from hf_critic.critics.specs import CriticSpec, build_critic, build_stage, read_spec
from hf_critic.testing.servers import StubOpenAIServer

SRC = Path(__file__).resolve().parents[1] / "src" / "hf_critic"
PAIRWISE = schema.Setting(schema.Task.PAIRWISE, False)


def _compare_args(argv: list[str]):
    from hf_critic.cli import build_parser

    return build_parser().parse_args(["compare", "--data", "d.jsonl", "--output", "o.jsonl", *argv])


def _fingerprint(critic, swap: bool) -> str:
    from hf_critic.selective.cascade import CascadeStage, critic_fingerprint

    return critic_fingerprint(CascadeStage("c", critic, swap), PAIRWISE)


# ------------------------------------------------------------------------------------------------ same critic
SPEC_AND_ARGV = [
    (
        {"template": "mtbench", "verdict": "text", "swap": True, "temperature": 0.5, "decoding": "sampling"},
        ["--template", "mtbench", "--verdict", "text", "--swap", "--temperature", "0.5", "--decoding", "sampling"],
    ),
    (
        {"model": "x/judge", "batch-size": "4", "no_cache": True, "progress": False, "min_verdict_mass": 0.25},
        ["--model", "x/judge", "--batch-size", "4", "--no-cache", "--no-progress", "--min-verdict-mass", "0.25"],
    ),
    ({}, []),
]


@pytest.mark.parametrize(("spec", "argv"), SPEC_AND_ARGV)
def test_a_spec_reads_into_the_same_option_dataclasses_as_the_command_line(spec, argv):
    from hf_critic.commands.options import critic_options_from_args

    args = _compare_args(argv)
    from_spec = critic_options(spec, "cascade.yaml: critics[0] (judge)")
    assert from_spec == critic_options_from_args(args, args.model)
    assert from_spec != CriticOptions() or not spec  # the options were read, not left at their defaults


def test_a_spec_and_a_command_line_build_the_same_critic(tmp_path):
    from hf_critic.commands.options import critic_from_args

    cache = str(tmp_path / "cache.sqlite")
    with StubOpenAIServer(lambda body: "[[A]]") as server:
        options = {"base_url": server.url, "model": "served-judge", "template": "mtbench", "verdict": "text"}
        options |= {"swap": True, "cache": cache, "concurrency": 2, "max_new_tokens": 64, "progress": False}
        spec = read_spec({"name": "judge", "options": options}, "cascade.yaml: critics[0]")
        argv = ["--base-url", server.url, "--model", "served-judge", "--template", "mtbench", "--verdict", "text"]
        argv += ["--swap", "--cache", cache, "--concurrency", "2", "--max-new-tokens", "64", "--no-progress"]
        args = _compare_args(argv)
        from_spec, from_cli = build_critic(spec), critic_from_args(args, args.model)
        assert _fingerprint(from_spec, spec.swap) == _fingerprint(from_cli, args.swap)
        assert (
            spec.swap is True and from_spec.decoding == from_cli.decoding and from_spec.decoding.max_new_tokens == 64
        )
        assert from_spec.template == from_cli.template == "mtbench"
        # and a spec that differs in one verdict option is another critic
        other = read_spec({"name": "judge", "options": {**options, "verdict": "both"}}, "cascade.yaml: critics[0]")
        assert _fingerprint(build_critic(other), True) != _fingerprint(from_cli, True)


def test_each_kind_is_built_by_its_builder():
    from hf_critic.critics.jury import Jury, LongerWins

    baseline = read_spec("longer-wins", "f.yaml: critics[0]")
    assert (baseline.kind, baseline.name, baseline.swap) == ("baseline", "longer-wins", False)
    assert isinstance(build_critic(baseline), LongerWins)
    jury = read_spec(
        {"name": "j", "jury": {"aggregate": "vote", "members": ["longer-wins"]}, "price_per_call": 0.25},
        "f.yaml: critics[1]",
    )
    stage = build_stage(jury)
    assert isinstance(stage.critic, Jury) and [m.name for m in stage.critic.members] == ["longer-wins"]
    assert (stage.name, stage.price_per_call, stage.swap) == ("j", 0.25, False)
    computed = read_spec({"name": "c", "options": {"swap": True}}, "f.yaml: critics[2]")
    assert isinstance(computed, CriticSpec) and computed.kind == "computed" and computed.swap is True


# ------------------------------------------------------------------------------------------------ no command line
def test_load_cascade_loads_no_command_line(tmp_path):
    """In a fresh interpreter: the public ``hf_critic.load_cascade`` builds a cascade's critics (a served critic, a
    jury, the length baseline) and ``hf_critic.commands`` (argparse's parsers) is never imported."""
    script = """
import json, sys
import hf_critic
from hf_critic.testing.servers import StubOpenAIServer
with StubOpenAIServer(lambda body: "[[A]]") as server:
    spec = {"critics": [
        {"name": "cheap", "options": {"base_url": server.url, "model": "m", "template": "mtbench", "no_cache": True}},
        {"name": "jury", "jury": {"aggregate": "vote", "members": ["longer-wins"]}},
    ]}
    path = sys.argv[1]
    open(path, "w").write(json.dumps(spec))
    stages = hf_critic.load_cascade(path, rows=4)
print([s.name for s in stages], [m for m in sys.modules if m.startswith("hf_critic.commands") or m == "argparse"])
"""
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "cascade.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    names, commands = done.stdout.strip().splitlines()[-1].split("] [")
    assert names == "['cheap', 'jury'" and "hf_critic.commands" not in commands, done.stdout


# ------------------------------------------------------------------------------------------------ errors
def _load(tmp_path, critics):
    import hf_critic

    path = tmp_path / "cascade.yaml"
    path.write_text(json.dumps({"critics": critics}), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        hf_critic.load_cascade(path)
    message = str(err.value)
    assert "\n" not in message and f"{path}: critics[" in message, message
    return message


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (
            {"temprature": 0.5},
            "critics[0] (judge): option 'temprature' is no option of compare (did you mean 'temperature'?)",
        ),
        ({"data": "x.jsonl"}, "critics[0] (judge): option 'data' belongs to the command line, not to one critic"),
        ({"batch_size": 0}, "critics[0] (judge): option 'batch_size': must be at least 1, got 0"),
        ({"batch_size": "many"}, "critics[0] (judge): option 'batch_size': invalid positive_int value 'many'"),
        ({"temperature": "nan"}, "critics[0] (judge): option 'temperature': not a finite number: 'nan'"),
        ({"verdict": "logits"}, "critics[0] (judge): option 'verdict': invalid choice 'logits' (choose from 'auto'"),
        ({"swap": "yes"}, "critics[0] (judge): option 'swap' is a switch: true or false, got 'yes'"),
        ({"max_new_tokens": True}, "critics[0] (judge): option 'max_new_tokens' takes one value, got True"),
        ({"temperature": 0}, "critics[0] (judge): temperature must be > 0 and top_p in (0, 1]"),
        ({"strategy": "beam", "decoding": "greedy"}, "critics[0] (judge): option 'decoding' given twice"),
    ],
)
def test_bad_option_keys_and_values_are_one_line_errors_naming_the_file_the_critic_and_the_key(
    tmp_path, options, says
):
    assert says in _load(tmp_path, [{"name": "judge", "options": options}])


def test_every_spec_is_checked_before_any_critic_is_built(tmp_path, monkeypatch):
    """A typo in the second critic is found before the first one (a model load) is built."""
    from hf_critic.critics import specs

    built = []
    monkeypatch.setitem(specs.BUILDERS, "computed", lambda spec, rows: built.append(spec.name))
    critics = [{"name": "first", "options": {}}, {"name": "second", "options": {"top-q": 0.5}}]
    assert "critics[1] (second): option 'top-q' is no option of compare (did you mean 'top_p'?)" in _load(
        tmp_path, critics
    )
    assert built == []


# ------------------------------------------------------------------------------------------------ architecture
def _modules():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC.parent).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


#: Modules outside ``commands/`` that parse argv of their own: the ``hf-critic`` entry point and the ``python -m``
#: scripts of test servers and GGUF files, and the vLLM worker run with vLLM's Python (each a ``main()``), not the library.
SCRIPTS = {
    "hf_critic/cli.py",
    "hf_critic/formats/__main__.py",
    "hf_critic/testing/servers.py",
    "hf_critic/backends/llamacpp.py",
    "hf_critic/backends/vllm_worker.py",
}


def test_no_library_module_uses_argparse_or_imports_the_command_line():
    offenders = []
    for name, tree in _modules():
        if name.startswith("hf_critic/commands/") or name in SCRIPTS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [("." * node.level) + (node.module or "")]
            else:
                continue
            bad = [
                t for t in targets if t == "argparse" or t.startswith(("hf_critic.commands", ".")) and "commands" in t
            ]
            offenders += [f"{name}:{node.lineno} imports {t}" for t in bad]
    assert offenders == []


def _declared_flags(modules) -> dict[str, list[str]]:
    """{flag: where declared} over ``modules`` (``(name, tree)``): the fields of option dataclasses (a field declared
    with help text) and the ``add_argument`` calls."""
    found: dict[str, list[str]] = {}
    for name, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                for flag in _dataclass_flags(node):
                    found.setdefault(flag, []).append(f"{name}:{node.name}")
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                        found.setdefault(arg.value, []).append(f"{name}:{node.lineno}")
    return found


def _dataclass_flags(node: ast.ClassDef) -> list[str]:
    """The flags of a dataclass's option fields (declared with help text): ``--<field-name>`` or the field's flag."""
    flags = []
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
            text = ast.unparse(item.value)
            if "help" in text or text.startswith(("_opt(", "option_field(")):
                flags.append(_flag_of(item.value) or "--" + item.target.id.replace("_", "-"))
    return flags


def _flag_of(value: ast.expr) -> str | None:
    """A field's ``flag`` (a keyword, or a key of its metadata), or None."""
    for node in ast.walk(value):
        if isinstance(node, ast.keyword) and node.arg == "flag" and isinstance(node.value, ast.Constant):
            return node.value.value
        if isinstance(node, ast.Dict):
            for key, item in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "flag" and isinstance(item, ast.Constant):
                    return item.value
    return None


#: Where the options of ``hf-critic`` are declared: the critic's option dataclasses and the commands (the scripts of
#: SCRIPTS and the training recipes' TRL parser, ``training/config.py``, are other programs with flags of their own).
CLI_OPTION_HOMES = (
    "hf_critic/critic/config.py",
    "hf_critic/critic/decoding.py",
    "hf_critic/critics/",
    "hf_critic/commands/",
)

#: Flags two commands take for different things (not one option declared twice), with what each means.
SAME_FLAG_OTHER_OPTION = {
    "--seed": "calibrate: the seed of its random calibration / test splits; elsewhere: the decoding seed",
    "--turn": "self-eval: the assistant turn(s) scored (last, all or a number); elsewhere: FastChat's MT-Bench turn",
}


def test_each_option_flag_is_declared_in_one_place():
    found = _declared_flags((name, tree) for name, tree in _modules() if name.startswith(CLI_OPTION_HOMES))
    assert {"--model", "--template", "--decoding", "--swap", "--data", "--cache", "--cascade"} <= set(found)
    assert "--strategy" not in found  # a field's own flag name is its flag
    twice = {flag: places for flag, places in found.items() if len(places) > 1}
    assert {flag: len(places) for flag, places in twice.items() if flag in SAME_FLAG_OTHER_OPTION} == {
        "--seed": 2,
        "--turn": 2,
    }
    assert {flag: places for flag, places in twice.items() if flag not in SAME_FLAG_OTHER_OPTION} == {}


def test_the_flag_scan_finds_a_flag_declared_twice():
    """The check can fail: a field and an ``add_argument`` of the same flag are two places."""
    field = ast.parse(
        "@dataclass\nclass PairOptions:\n    swap: bool = _opt('both orders', False, action='store_true')\n"
    )
    call = ast.parse("parser.add_argument('--swap', action='store_true', help='both orders')")
    assert _declared_flags([("a.py", field), ("b.py", call)]) == {"--swap": ["a.py:PairOptions", "b.py:1"]}
