"""Every example of the docs (docs/**/*.md) and the README runs, and the built site renders.

- each ``python`` block runs from the repository root, offline; a block that loads a model is marked
  ``<!-- example: slow -->`` on the line before its fence (still run by ``make test``);
- each ``hf-critic ...`` line of a ``bash`` block parses with the real parser, and every repository path it names
  exists (``../shared/data`` paths too, when that folder is present);
- each ``python|bash recipes/...`` line names a file that exists, and each ``accelerate launch ... recipes/sft.py|
  reward.py`` line parses with that recipe's own parser, its overrides included;
- a block that needs a GPU, a server, the Hub or a long run is marked ``<!-- example: skip REASON -->``: its Python
  is not run (the skip names the reason); its command lines are still parsed and checked;
- ``make docs``' build (``mkdocs build --strict``) passes, and its home page and one API page render in headless
  Chromium (headings, a code block, no missing asset).

docs/contributing.md tells a writer the same.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
MARKER = re.compile(r"^<!-- example: (slow|skip)(?: (.+?))? -->$")
# What a repository path looks like in a command (the folders of the checkout a reader runs from).
REPO_PATH = re.compile(
    r"(?:\.\./shared/data|examples|recipes|scripts|benchmarks|accelerate_configs|src|docs|metrics|dataset_cards)"
    r"/[\w./*-]*"
)


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, first line, language, text and example marker (None, slow, skip)."""

    page: Path
    line: int
    lang: str
    text: str
    marker: str | None
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page``, each with the example marker on the line before its fence."""
    out, lines, i = [], page.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start, close = i, fence.group(1)
        i += 1
        while i < len(lines) and not lines[i].startswith(close):
            i += 1
        before = lines[start - 1] if start else ""
        marker = MARKER.match(before)
        text = "\n".join(lines[start + 1 : i])
        out.append(Block(page, start + 1, fence.group(2), text, *(marker.groups("") if marker else (None, ""))))
        i += 1
    return out


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]
PYTHON = [b for b in ALL_BLOCKS if b.lang == "python"]
SHELL = [b for b in ALL_BLOCKS if b.lang in ("bash", "shell", "sh")]


def commands(block: Block) -> list[list[str]]:
    """The block's command lines as argument lists: continuations joined, comments and ``VAR=value`` prefixes cut,
    ``cmd1 && cmd2`` split."""
    out = []
    for line in block.text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        for part in " ".join(shlex.quote(w) for w in words).split(" '&&' "):
            args = shlex.split(part)
            while args and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", args[0]):
                args = args[1:]
            if args:
                out.append(args)
    return out


def _param(block: Block):
    marks = [pytest.mark.slow] if block.marker == "slow" else []
    return pytest.param(block, id=block.id, marks=marks)


# ------------------------------------------------------------------------------------------------ python blocks
@pytest.mark.parametrize("block", [_param(b) for b in PYTHON])
def test_python_example_runs(block):
    if block.marker == "skip":
        pytest.skip(f"{block.id}: {block.reason}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", block.text], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stderr[-3000:]}"


def test_python_blocks_are_found_and_marked():
    """The extraction sees the blocks it must run (a changed fence syntax must not silently test nothing)."""
    pages = {b.page.name for b in PYTHON}
    assert {"README.md", "index.md", "metrics.md", "glassbox.md", "probabilities.md", "reward-models.md"} <= pages
    assert any(b.marker == "slow" for b in PYTHON) and any(b.marker is None for b in PYTHON)
    assert all(b.reason for b in ALL_BLOCKS if b.marker == "skip"), "a skip marker names its reason"


def test_yaml_blocks_parse():
    for block in (b for b in ALL_BLOCKS if b.lang == "yaml"):
        assert isinstance(yaml.safe_load(block.text), dict), block.id


def test_a_missing_extra_is_one_line_that_points_to_troubleshooting(tmp_path, capsys, monkeypatch):
    """meta-eval without the [report] extra (matplotlib): one line naming the extra and the troubleshooting page,
    which has a section for each extra the CLI names."""
    from hf_critic import cli
    from hf_critic.commands.troubleshooting import TROUBLESHOOTING

    page = (REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    assert TROUBLESHOOTING == "docs/troubleshooting.md"
    assert all(f"hf-critic[{extra}]" in page for extra in cli.EXTRAS.values())
    autoj = shared_data_dir() / "autoj"
    if not autoj.is_dir():
        pytest.skip("../shared/data (Auto-J's recorded verdicts) is absent")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ModuleNotFoundError
    verdicts = f"{autoj}/outputs/pairwise_example_output.jsonl"
    code = cli.main(
        [
            "meta-eval",
            "--benchmark",
            f"autoj:{autoj}/test/testdata_pairwise.jsonl",
            "--limit",
            "20",
            "--verdicts",
            f"j={verdicts}",
            "--limit-verdicts",
            "--output-dir",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "hf-critic[report]" in err[0] and err[0].endswith("(see docs/troubleshooting.md#missing-extra)"), err


def _within(listing, actual) -> bool:
    """``listing`` is ``actual`` or an excerpt of it: a mapping's keys a subset, each value within the file's."""
    if isinstance(listing, dict):
        return isinstance(actual, dict) and all(k in actual and _within(v, actual[k]) for k, v in listing.items())
    if isinstance(listing, list):
        return isinstance(actual, list) and len(listing) == len(actual) and all(map(_within, listing, actual))
    return listing == actual


def test_yaml_listing_matches_the_file_it_names():
    """A YAML block introduced by a sentence naming a repository ``.yaml`` file (ending with ``:``) shows that file
    (or an excerpt of it): no key or value the file lacks."""
    checked = 0
    for block in (b for b in ALL_BLOCKS if b.lang == "yaml"):
        lines = block.page.read_text(encoding="utf-8").splitlines()[: block.line - 1]
        intro = next((line for line in reversed(lines) if line.strip() and not line.startswith("<!--")), "")
        named = re.findall(r"`((?:examples|recipes|accelerate_configs)/[\w./-]+\.ya?ml)`\)?:$", intro)
        if named:
            actual = yaml.safe_load((REPO / named[-1]).read_text(encoding="utf-8"))
            assert _within(yaml.safe_load(block.text), actual), f"{block.id}: the listing differs from {named[-1]}"
            checked += 1
    assert checked >= 2


# ------------------------------------------------------------------------------------------------ command lines
def _repo_paths(args: list[str]) -> list[str]:
    return [m.group(0).rstrip(".") for arg in args for m in REPO_PATH.finditer(arg)]


def _check_paths(block: Block, args: list[str]) -> None:
    """Every repository path the command names exists (a glob matches something); ../shared/data only when present."""
    shared = shared_data_dir()
    for path in _repo_paths(args):
        if path.startswith("../shared/data"):
            if not shared.is_dir():
                continue
            target = shared / path.removeprefix("../shared/data").lstrip("/")
        else:
            target = REPO / path
        found = list(target.parent.glob(target.name)) if "*" in path else [target] if target.exists() else []
        assert found, f"{block.id}: `{' '.join(args)[:120]}` names {path}, which does not exist"


SHELL_COMMANDS = [(b, args) for b in SHELL for args in commands(b)]
CLI_LINES = [(b, a) for b, a in SHELL_COMMANDS if Path(a[0]).name == "hf-critic"]


@pytest.mark.parametrize("block,args", [pytest.param(b, a, id=f"{b.id}:{a[1]}") for b, a in CLI_LINES])
def test_hf_critic_line_parses_and_its_files_exist(block, args):
    from hf_critic.cli import build_parser

    try:
        build_parser().parse_args(args[1:])
    except SystemExit as err:
        pytest.fail(f"{block.id}: `{shlex.join(args)[:200]}` does not parse (exit {err.code})")
    _check_paths(block, args)


def test_the_docs_show_every_command():
    """At least one documented line per sub-command (the line test above parses each)."""
    from hf_critic.cli import COMMANDS  # noqa: F401  (the registered modules)

    shown = {a[1] for _, a in CLI_LINES}
    assert {"grade", "compare", "meta-eval", "view", "refine", "self-eval", "eval-instruct"} <= shown, shown


SCRIPT_LINES = [
    (b, a) for b, a in SHELL_COMMANDS if a[0] in ("python", "python3", "bash") and len(a) > 1 and a[1] != "-m"
]


@pytest.mark.parametrize("block,args", [pytest.param(b, a, id=f"{b.id}:{a[1]}") for b, a in SCRIPT_LINES])
def test_script_line_names_files_that_exist(block, args):
    assert (REPO / args[1]).is_file(), f"{block.id}: {args[1]} does not exist"
    _check_paths(block, args)


DOC_SCRIPTS = sorted({a[1] for _, a in SCRIPT_LINES if a[1].endswith(".py")} | {"recipes/reward.py"})


@pytest.mark.parametrize("script", DOC_SCRIPTS)
def test_every_script_the_docs_name_answers_help(script):
    """``python SCRIPT --help`` of each script a docs page runs exits 0 with a usage (not an error about a folder
    named --help)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, script, "--help"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "usage" in (done.stdout + done.stderr).lower(), done.stderr[-1500:]


@pytest.mark.parametrize(
    "script,config",
    [
        ("recipes/sft.py", "recipes/qwen2.5-7b-instruct/sft/lora.yaml"),
        ("recipes/reward.py", "recipes/qwen2.5-7b-instruct/reward/lora.yaml"),
    ],
)
def test_a_dry_run_without_the_model_stops_with_one_line(script, config):
    """build-a-critic.md: offline, ``--dry-run`` of a GPU recipe whose base model is not here stops with one line."""
    from hf_critic.backends.models import ModelNotFoundError, resolve_model

    try:
        resolve_model("Qwen/Qwen2.5-7B-Instruct")
        pytest.skip("Qwen2.5-7B-Instruct is in this machine's cache")
    except ModelNotFoundError:
        pass
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, script, "--config", config, "--dry-run"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Qwen" in lines[0], lines[:20]


def _recipe_parser(script: str):
    """The parser ``recipes/<script>`` reads its arguments with."""
    if script == "recipes/sft.py":
        from hf_critic import training

        return training.parser()
    from trl import ModelConfig, RewardConfig, TrlParser

    from hf_critic.training.reward import RewardScriptArguments

    assert script == "recipes/reward.py", f"unknown recipe script {script}"
    return TrlParser((RewardScriptArguments, RewardConfig, ModelConfig))


LAUNCH_LINES = [(b, a) for b, a in SHELL_COMMANDS if a[:2] == ["accelerate", "launch"]]


@pytest.mark.parametrize("block,args", [pytest.param(b, a, id=f"{b.id}:launch") for b, a in LAUNCH_LINES])
def test_recipe_launch_line_parses_with_the_recipe_parser(block, args):
    """As tests/training/test_training.py checks the recipes' READMEs: the script and its config exist and the recipe's own
    TrlParser accepts the line's arguments (on a CPU-only machine with --use_cpu true, as the GPU recipes' bf16
    needs)."""
    import torch

    script = next(a for a in args if a.endswith(".py"))
    assert (REPO / script).is_file(), f"{block.id}: {script} does not exist"
    _check_paths(block, args)
    recipe_args = args[args.index(script) + 1 :]
    extra = [] if torch.cuda.is_available() else ["--use_cpu", "true"]
    parsed = _recipe_parser(script).parse_args_and_config([*recipe_args, *extra])
    assert parsed[-1].model_name_or_path, block.id


def test_every_recipe_launch_line_of_the_docs_is_checked():
    scripts = {next(a for a in args if a.endswith(".py")) for _, args in LAUNCH_LINES}
    assert scripts == {"recipes/sft.py", "recipes/reward.py"}, scripts


# ------------------------------------------------------------------------------------------------ README and figures
def test_readme_is_short_and_keeps_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "make demo" in text and "make test" in text
    assert "make test" in (REPO / ".ci" / "run").read_text() and "make docs" in (REPO / ".ci" / "run").read_text()


def _load(name: str, path: Path):
    """The Python file ``path`` of the repository (a script or the MkDocs hooks) as a module named ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _results_script():
    """scripts/build_results_docs.py as a module."""
    return _load("build_results_docs", REPO / "scripts" / "build_results_docs.py")


def test_every_copied_figure_is_rendered_from_its_report():
    """A figure shown in several places (the README's results table, the shipped critic's card, the Results page, the
    recipe README, the choosing and selective-judging pages) sits in a ``<!-- figures: NAME -->`` block that is, byte
    for byte, what scripts/build_results_docs.py renders from its one committed report now: two copies cannot differ."""
    script = _results_script()
    assert script.check_figures() == []
    places = {name: files for name, (_, files) in script.PLACES.items()}
    assert {"README.md", script.CARD, "docs/results.md"} <= {f for files in places.values() for f in files}
    assert places["critic-test-halves"] == ["README.md", script.CARD]  # the README's table is the card's


def test_a_copy_that_differs_from_its_report_is_named(tmp_path):
    """Edit one figure of one copy (the card's coverage of the shipped critic on HHH): the check names that file and
    block and no other; a missing block is named too."""
    script = _results_script()
    for path in {p for _, files in script.PLACES.values() for p in files}:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / path, tmp_path / path)
    assert script.check_figures(tmp_path) == []
    card = tmp_path / script.CARD
    text = card.read_text(encoding="utf-8")
    assert text.count("| 0.475 (0.0) |") == 1
    card.write_text(text.replace("| 0.475 (0.0) |", "| 0.475 (4.0) |"), encoding="utf-8")
    assert script.check_figures(tmp_path) == [
        f"{script.CARD}: block critic-test-halves differs from what readme_table() renders"
    ]
    results = tmp_path / "docs" / "results.md"
    block = re.compile(r"<!-- figures: critic-heldout -->.*?<!-- /figures: critic-heldout -->\n", re.S)
    results.write_text(block.sub("", results.read_text(encoding="utf-8")), encoding="utf-8")
    assert "docs/results.md: no <!-- figures: critic-heldout --> block" in script.check_figures(tmp_path)


def test_each_row_label_names_one_set_of_rows():
    """The shipped critic's report labels every set of rows it reports differently (the whole benchmarks, the dev and
    the test half), so no two tables call different rows by one name, e.g. "Eval-P, 200 pairs (seed 0)"."""
    script = _results_script()
    report = script._read(script.CRITIC)
    labels = [*report["heldout"]["rows"].values()]
    labels += [label for half in report["halves"]["rows"].values() for label in half.values()]
    labels.append(report["demo"]["rows"])
    assert len(labels) == len(set(labels)), labels
    assert all(("half" in label) != (label in report["heldout"]["rows"].values()) for label in labels[:-1])


def test_the_exit_codes_are_listed_once():
    """The exit codes have one list (hf_critic.commands.exit_status): ``hf-critic --help`` prints it whole (so the
    generated command-line reference shows it), ``eval-instruct --help`` ends with it, and the judging page links to
    the reference instead of listing codes of its own."""
    from hf_critic.cli import build_parser
    from hf_critic.commands.exit_status import EXIT_STATUS, exit_status_text

    parser = build_parser()
    assert parser.epilog == exit_status_text() and set(EXIT_STATUS) == {0, 1, 2, 3, 4, 130}
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert subparsers.choices["eval-instruct"].epilog.endswith(exit_status_text())
    index = (REPO / "docs" / "judge" / "index.md").read_text(encoding="utf-8")
    assert "reference/cli.md#hf-critic" in index and not re.search(r"[Ee]xit codes?[^.]*\b2\b[^.]*\b3\b", index)


def _hooks():
    """docs/hooks.py, the MkDocs hooks, as a module."""
    return _load("docs_hooks", REPO / "docs" / "hooks.py")


def test_every_public_module_is_on_an_api_page():
    """A module no API page names is rendered on the generated "Other modules" page: none is left out."""
    hooks = _hooks()
    public = hooks.public_modules()
    assert {"critic", "meta_eval", "backends", "formats", "refine", "glassbox", "training", "criticbench"} <= public
    assert not public & hooks.INTERNAL_MODULES and "cli" not in public
    named = {
        m
        for p in (REPO / "docs" / "api").glob("*.md")
        for m in re.findall(r"^::: hf_critic\.(\w+)", p.read_text(), re.M)
    }
    assert public <= named | set(hooks.other_modules())


def test_docs_dependencies_are_in_the_dev_extra():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    dev = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    names = {re.split(r"[\[<>=]", d)[0] for d in dev}
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= names


# ------------------------------------------------------------------------------------------------ the built site
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``mkdocs build --strict`` (what ``make docs`` runs) into a temporary folder."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.skip("MkDocs is not installed (pip install -e '.[dev]')")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, warnings
    return out


def test_the_site_builds_strict_with_every_page(site):
    for page in (REPO / "docs").rglob("*.md"):
        rel = page.relative_to(REPO / "docs").with_suffix("")
        built = site / ("index.html" if rel.name == "index" and rel.parent == Path(".") else "")
        built = site / rel.parent / "index.html" if rel.name == "index" else site / rel / "index.html"
        assert built.is_file(), f"{page} was not built"
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    from hf_critic.cli import build_parser

    for action in build_parser()._subparsers._group_actions[0].choices:
        assert f"hf-critic {action}" in cli  # the generated reference covers every command
    assert "--min-verdict-mass" in cli and "--gguf-recode" in cli
    other = (site / "api" / "other" / "index.html").read_text(encoding="utf-8")
    for name in _hooks().other_modules():
        assert f'id="hf_critic.{name}"' in other, name  # a module without a page of its own is rendered there
    card = (site / "critic-card" / "index.html").read_text(encoding="utf-8")
    assert "Held-out figures" in card and "license: cc-by-nc-4.0" not in card  # the card, without its YAML header


def test_results_sections_come_from_committed_reports(site):
    """Each ``<!-- generated: results NAME -->`` section of the Results page is rendered from the committed
    docs/results/NAME/report.json: its figures in the built page, its PNGs shown; at least three PNGs in all."""
    script = _results_script()
    named = re.findall(r"^<!-- generated: results (\S+) -->$", (REPO / "docs" / "results.md").read_text(), re.M)
    assert set(named) == set(script.RUNS), named
    built = (site / "results" / "index.html").read_text(encoding="utf-8")
    pngs = 0
    for name in named:
        for key, value in script.figures(name).items():
            assert f">{value}<" in built, (name, key, value)
        for png in (REPO / "docs" / "results" / name).glob("*.png"):
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
            assert f'src="{name}/{png.name}"' in built and (site / "results" / name / png.name).is_file(), png
            pngs += 1
    assert pngs >= 3


def test_committed_reports_match_a_rerun():
    """``scripts/build_results_docs.py --check``: the committed reports are what their commands print today."""
    # the committed commands read ../shared/data as written (relative to the checkout), not $HF_CRITIC_SHARED_DATA
    if not (REPO.parent / "shared" / "data" / "autoj").is_dir():
        pytest.skip(
            "../shared/data/autoj (Auto-J's recorded verdicts, where the committed commands read them) is absent"
        )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "scripts/build_results_docs.py", "--check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


RAW_ROLE = re.compile(r":(mod|class|func|data|meth|attr|exc):(`|<code>)")


def test_no_raw_sphinx_role_in_the_built_site(site):
    """The docstrings' Sphinx roles are rendered as links or code (docs/griffe_sphinx_roles.py), never shown as
    ``:func:`name``` text."""
    raw = {
        str(page.relative_to(site)): len(RAW_ROLE.findall(page.read_text(encoding="utf-8")))
        for page in site.rglob("*.html")
    }
    assert not {p: n for p, n in raw.items() if n}, raw
    api = (site / "api" / "meta_eval" / "index.html").read_text(encoding="utf-8")
    assert api.count('class="autorefs autorefs-internal"') > 20  # the roles became links


def test_sphinx_roles_resolve_relative_names():
    spec = importlib.util.spec_from_file_location("griffe_sphinx_roles", REPO / "docs" / "griffe_sphinx_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    import griffe

    pkg = griffe.load("hf_critic", search_paths=[str(REPO / "src")], resolve_aliases=False)
    selective = pkg["selective"]
    assert roles.resolve(selective, ".confidence") == "hf_critic.selective.confidence"
    assert roles.resolve(pkg["meta_eval"], "~hf_critic.meta_eval.grouped".lstrip("~")) == "hf_critic.meta_eval.grouped"
    assert roles.resolve(pkg["meta_eval.correlation"], "grouped") == "hf_critic.meta_eval.grouped"
    assert roles.resolve(selective, "hf_critic.critic.Critic") == "hf_critic.critic.core.Critic"  # a lazy re-export
    assert roles.resolve(selective, "datasets.Dataset") is None  # outside hf-critic: a code span
    assert roles.convert(selective, ":func:`~hf_critic.selective.calibration.data_hash`") == (
        '<autoref identifier="hf_critic.selective.calibration.data_hash" optional><code>data_hash</code></autoref>'
    )
    assert roles.convert(selective, ":class:`str`") == "<code>str</code>"


def _documented(html: str, pkg) -> list[str]:
    """The canonical paths of the functions, classes and attributes an API page documents, once per heading."""
    out = []
    for kind, ident in re.findall(r'<div class="doc doc-object doc-(\w+)">\s*<h\d id="([^"]+)"', html):
        if kind != "module":
            obj = pkg if ident == "hf_critic" else pkg[ident.removeprefix("hf_critic.")]
            out.append(obj.canonical_path)
    return out


def test_api_pages_document_every_public_function_once(site):
    """Each ``::: MODULE`` line of an API page documents every public function and class that the module (or, for a
    package, any public module under it) defines, and none twice on the page; the index names every page."""
    import griffe

    pkg = griffe.load("hf_critic", search_paths=[str(REPO / "src")], resolve_aliases=True, resolve_external=False)

    def modules(module, root):
        yield module
        for name, sub in module.modules.items():
            if not name.startswith("_") and not root:
                yield from modules(sub, False)

    index = (REPO / "docs" / "api" / "index.md").read_text(encoding="utf-8")
    for md in sorted((REPO / "docs" / "api").glob("*.md")):
        if md.stem == "index":
            continue
        assert f"]({md.name})" in index, f"the API index has no row for {md.name}"
        shown = _documented((site / "api" / md.stem / "index.html").read_text(encoding="utf-8"), pkg)
        twice = sorted({p for p in shown if shown.count(p) > 1})
        assert not twice, f"{md.name} documents these twice: {twice}"
        wanted = set()
        for path in re.findall(r"^::: (\S+)", md.read_text(encoding="utf-8"), re.M):
            root = pkg if path == "hf_critic" else pkg[path.removeprefix("hf_critic.")]
            for module in modules(root, path == "hf_critic"):
                names = module.exports if module.exports is not None else [n for n in module.members if n[0] != "_"]
                for name in (n if isinstance(n, str) else n.name for n in names):
                    member = module.members.get(name)
                    if member is not None and not member.is_alias and (member.is_function or member.is_class):
                        wanted.add(member.path)
        missing = sorted(wanted - set(shown))
        assert not missing, f"{md.name} does not document {missing}"
    meta_eval = _documented((site / "api" / "meta_eval" / "index.html").read_text(encoding="utf-8"), pkg)
    assert "hf_critic.meta_eval.correlation.text_level_correlation" in meta_eval  # metrics.md sends readers there


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _render(site: Path, page: str, tmp_path: Path) -> tuple[str, str]:
    """The DOM of ``page`` after the browser ran its scripts, and the browser's log."""
    browser = _chromium()
    if browser is None:
        pytest.skip("headless chromium not installed (apt-get install -y chromium; .ci/run does it)")
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
        (site / page).as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def _assets(dom: str) -> list[str]:
    """The local files a page loads: stylesheets, scripts and images."""
    refs = re.findall(r'<(?:link|script|img)\b[^>]*?\b(?:href|src)="([^"]+)"', dom)
    local = [r.split("#")[0].split("?")[0] for r in refs if not re.match(r"[a-z]+:", r) and not r.startswith("#")]
    return [r + "index.html" if r.endswith("/") or not r else r for r in local]  # a page link names its folder


@pytest.mark.parametrize(
    "page,heading,code",
    [
        ("index.html", "What a critique is", "make demo"),
        ("api/critic/index.html", "hf_critic.critic.core.Critic", "from_pretrained("),
        ("api/selective/index.html", "hf_critic.selective.calibration", "calibrate_cascade("),
    ],
)
def test_page_renders_in_a_headless_browser(site, tmp_path, page, heading, code):
    dom, log = _render(site, page, tmp_path)
    assert re.search(r"<h1[^>]*>", dom) and heading in dom
    text = re.sub(r"<[^>]+>", "", dom)  # highlighted code is split into spans
    assert re.search(r"<pre\b[^>]*>.{0,400}?<code\b", dom, re.DOTALL) and code in text
    assert 'class="md-header' in dom and 'class="md-nav' in dom
    assert "md-code__button" in dom  # the copy button the theme's script adds to each code block: the script ran
    assets = _assets(dom)
    assert any(a.endswith(".css") for a in assets) and any(a.endswith(".js") for a in assets)
    missing = [a for a in assets if not ((site / page).parent / a).resolve().is_file()]
    assert not missing, missing
    assert "ERR_FILE_NOT_FOUND" not in log, log[-2000:]
    assert not RAW_ROLE.search(dom)  # no Sphinx role shown as text
    if page.startswith("api/"):
        assert 'class="autorefs autorefs-internal"' in dom  # cross-references are links
