"""The evaluate modules under metrics/: one copy, shipped in the wheel, loadable three ways offline, doctests pass."""

from __future__ import annotations

import argparse
import doctest
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import evaluate
import pytest

import hf_critic
from hf_critic.commands import metrics as metrics_command
from hf_critic.meta_eval.modules import METRIC_NAMES, MODULE_FILES, metric_path
from hf_critic.reports.metric_modules import install_metrics

REPO_ROOT = Path(__file__).resolve().parents[2]

EXAMPLE = {
    "critique_correlation": (
        {"predictions": [8, 6, 3, 9, 4, 7], "references": [5, 3, 4, 4, 2, 3], "query_ids": [1, 1, 1, 2, 2, 2]},
        "text_spearman",
        0.75,
    ),
    "pairwise_agreement": (
        {"predictions": [0, 1, 2, 0], "references": [0, 1, 1, 0], "swapped_predictions": [0, 1, 2, 1]},
        "consistency",
        0.75,
    ),
}


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_module_layout(name):
    folder = REPO_ROOT / "metrics" / name
    script = (folder / f"{name}.py").read_text()
    for marker in (
        "Licensed under the Apache License",
        "_DESCRIPTION",
        "_KWARGS_DESCRIPTION",
        "_CITATION",
        "@evaluate.utils.file_utils.add_start_docstrings",
        "def _info(self)",
        "def _compute(",
    ):
        assert marker in script
    readme = (folder / "README.md").read_text()
    assert readme.startswith("---\ntitle: ") and "app_file: app.py" in readme
    for section in (
        "## Metric Description",
        "## How to Use",
        "### Inputs",
        "### Output Values",
        "### Examples",
        "## Limitations and Bias",
        "## Citation",
    ):
        assert section in readme
    app = [
        line
        for line in (folder / "app.py").read_text().splitlines()
        if line and not line.startswith(("import", "from"))
    ]
    assert app == [f'module = evaluate.load("{name}")', "launch_gradio_widget(module)"]
    # as evaluate's canonical modules: what a Space running app.py installs (see the test below)
    requirements = [
        line for line in (folder / "requirements.txt").read_text().splitlines() if not line.startswith("#")
    ]
    assert [line.split(">=")[0] for line in requirements] == ["evaluate", "datasets"]


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_requirements_install_from_pypi_and_cover_the_module_imports(name):
    """A requirement on a git URL that does not exist made ``pip install -r requirements.txt`` (and so
    evaluate's own ``LocalModuleTest``) fail. Every line is now a plain PyPI requirement, installed here, and they are
    exactly the libraries evaluate's loader finds imported by the module, hf_critic (the package itself) aside."""
    from importlib.metadata import version

    from evaluate.loading import get_imports
    from packaging.requirements import Requirement

    folder = REPO_ROOT / "metrics" / name
    lines = [line for line in (folder / "requirements.txt").read_text().splitlines() if line.strip()]
    requirements = [Requirement(line) for line in lines if not line.startswith("#")]
    assert all(r.url is None and not r.marker for r in requirements), lines
    assert all(version(r.name) in r.specifier for r in requirements)  # satisfiable: this environment satisfies them
    imported = {lib for kind, lib, _, _ in get_imports(str(folder / f"{name}.py")) if kind == "library"}
    assert {r.name for r in requirements} == imported - {"hf_critic"}
    assert any("hf_critic" in line and line.startswith("#") for line in lines)  # says where hf_critic comes from


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_load_from_checkout_path_and_metric_path(name, monkeypatch):
    kwargs, key, value = EXAMPLE[name]
    monkeypatch.chdir(REPO_ROOT)
    assert evaluate.load(f"metrics/{name}").compute(**kwargs)[key] == pytest.approx(value)
    assert metric_path(name) == str(REPO_ROOT / "metrics" / name)
    assert evaluate.load(hf_critic.metric_path(name)).compute(**kwargs)[key] == pytest.approx(value)


def test_pairwise_agreement_leaves_a_cascades_abstained_pairs_out_and_counts_them_apart_from_unparsed(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    module = evaluate.load("metrics/pairwise_agreement")
    verdicts, human = [0, None, 1, None, 0], [0, 1, 1, 0, 1]
    statuses = ["ok", "abstained", "ok", "unparsed", "ok"]
    out = module.compute(predictions=verdicts, references=human, statuses=statuses)
    # 4 decided pairs (one unparsed, wrong): 2 right; the abstained pair is in no figure
    assert out["first_order_agreement"] == pytest.approx(0.5) and out["n"] == 4 and out["n_unparsed"] == 1
    assert out["n_abstained"] == 1 and out["coverage"] == pytest.approx(0.8)
    without = module.compute(predictions=verdicts, references=human)  # no statuses: both None count as unparsed
    assert without["first_order_agreement"] == pytest.approx(0.4) and without["n_unparsed"] == 2
    assert "n_abstained" not in without
    with pytest.raises(ValueError, match="statuses has 4 entries for 5 predictions"):
        module.compute(predictions=verdicts, references=human, statuses=statuses[:4])


IGNORED = ("build", "dist", "outputs")  # build products and run outputs (git-ignored)


def test_the_only_copy_is_in_metrics():
    """No second copy of a module anywhere in the source tree (the wheel maps metrics/ to hf_critic._metrics)."""
    tops = [d for d in REPO_ROOT.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name not in IGNORED]
    for name in METRIC_NAMES:
        copies = [path for top in tops for path in top.rglob(f"{name}.py")]
        assert copies == [REPO_ROOT / "metrics" / name / f"{name}.py"]


# What a build needs: the files pyproject.toml and setup.py read.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "src", "metrics", "dataset_cards")


def build_wheel(tmp_path: Path) -> Path:
    """Build hf-critic's wheel (no dependencies) from a copy of the sources under ``tmp_path``; return its path.

    The build runs on a copy, so the checkout gets no build/ or egg-info folders (~7 s).
    """
    source = tmp_path / "source"
    source.mkdir()
    for entry in BUILD_INPUTS:
        src = REPO_ROOT / entry
        if src.is_dir():
            shutil.copytree(src, source / entry, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, source / entry)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "whl"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp_path / "whl").glob("hf_critic-*.whl")
    return wheel


def test_wheel_ships_metric_modules_and_card_template(tmp_path):
    """`pip wheel .` carries metrics/ as hf_critic/_metrics/ and dataset_cards/ as hf_critic/_dataset_cards/."""
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in METRIC_NAMES:
        for pattern in MODULE_FILES:
            filename = pattern.format(name=name)
            assert f"hf_critic/_metrics/{name}/{filename}" in names
            packed = zipfile.ZipFile(wheel).read(f"hf_critic/_metrics/{name}/{filename}")
            assert packed == (REPO_ROOT / "metrics" / name / filename).read_bytes()
    assert "hf_critic/_dataset_cards/eval_instruct.md" in names
    assert {"hf_critic/_dataset_cards/critic_run.md", "hf_critic/reports/templates/view.html.j2"} <= names  # view
    library = REPO_ROOT / "src"  # every module and prompt file of the library, in every sub-package
    for path in [*library.rglob("*.py"), *library.rglob("*.yaml")]:
        if "__pycache__" not in path.parts:
            assert path.relative_to(library).as_posix() in names
    assert not [n for n in names if "__pycache__" in n or n.startswith(("metrics/", "dataset_cards/"))]


def test_metric_path_unknown_name():
    with pytest.raises(ValueError, match="unknown hf-critic metric 'bleu'"):
        metric_path("bleu")


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_doctests_in_kwargs_description(name, monkeypatch):
    """The _KWARGS_DESCRIPTION examples (they load the bare name, here redirected to the checkout)."""
    module = evaluate.load(metric_path(name))
    shim = argparse.Namespace(load=lambda n: evaluate.load(metric_path(n)))
    tests = doctest.DocTestFinder().find(type(module), globs={"evaluate": shim})
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 5 and result.failed == 0


BARE_NAME_SCRIPT = """
import argparse, json, sys
import evaluate
from hf_critic.commands import metrics as command

try:  # before the install: the bare name resolves nowhere (offline, empty module cache)
    evaluate.load("critique_correlation")
    print(json.dumps({"before": "loaded"}))
    sys.exit(1)
except FileNotFoundError:
    pass
parser = argparse.ArgumentParser()
command.register(parser.add_subparsers(dest="command"))
args = parser.parse_args(["metrics", "install"])  # default target: $HF_MODULES_CACHE
args.func(args)
out = {name: evaluate.load(name).compute(**kwargs) for name, kwargs in json.loads(sys.argv[1]).items()}
print(json.dumps(out))
"""


def test_bare_name_after_install_offline(tmp_path):
    """`hf-critic metrics install` makes evaluate.load("<name>") work in an offline process, from any folder."""
    cache = tmp_path / "modules"
    workdir = tmp_path / "elsewhere"  # no metrics/ folder here, so only the module cache can answer
    workdir.mkdir()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_MODULES_CACHE": str(cache),
        "HF_EVALUATE_CACHE": str(tmp_path / "evaluate"),  # the downloads copy lands here, not in the user's cache
    }
    inputs = {name: EXAMPLE[name][0] for name in METRIC_NAMES}
    proc = subprocess.run(
        [sys.executable, "-c", BARE_NAME_SCRIPT, json.dumps(inputs)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in METRIC_NAMES:
        _, key, value = EXAMPLE[name]
        assert out[name][key] == pytest.approx(value)
        assert list((cache / "evaluate_modules" / "metrics").glob(f"evaluate-metric--{name}/*/{name}.py"))


def test_install_is_idempotent_and_rejects_unknown_names(tmp_path):
    first = install_metrics(["pairwise_agreement"], modules_cache=tmp_path)
    second = install_metrics(["pairwise_agreement"], modules_cache=tmp_path)
    assert first == second and len(first) == 1
    with pytest.raises(ValueError, match="unknown hf-critic metric"):
        install_metrics(["nope"], modules_cache=tmp_path)


def test_cli_path_action(capsys):
    parser = argparse.ArgumentParser()
    metrics_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["metrics", "path", "pairwise_agreement"])
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == metric_path("pairwise_agreement")


def test_editable_install_reads_the_checkout():
    """Under `pip install -e`, the mapped packages are the checkout's folders: edits show without a re-install."""
    from hf_critic.eval_instruct.hub import default_card_template

    assert default_card_template() == REPO_ROOT / "dataset_cards" / "eval_instruct.md"
    assert [metric_path(name) for name in METRIC_NAMES] == [str(REPO_ROOT / "metrics" / n) for n in METRIC_NAMES]


def _readme_section(name: str, title: str) -> str:
    text = (REPO_ROOT / "metrics" / name / "README.md").read_text()
    start = text.index(title)
    return text[start : text.index("\n## ", start + 1) if "\n## " in text[start + 1 :] else len(text)]


def test_critique_correlation_readme_lists_every_output_key():
    """Output Values names every key the module returns (with system ids and a bootstrap)."""
    import re

    from hf_critic.meta_eval.correlation import critique_correlation

    section = _readme_section("critique_correlation", "### Output Values")
    named = set(re.findall(r"\*\*(\w+)\*\*", section))
    out = critique_correlation(
        [8, 6, 3, 9, 4, 7], [5, 3, 4, 4, 2, 3], [1, 1, 1, 2, 2, 2], ["a", "b", "c"] * 2, bootstrap=100
    )
    assert set(out) <= named, set(out) - named
    assert {"within_question_accuracy", "within_question_pairs", "pooled_pearson"} <= named


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_readme_examples_run(name):
    """The README's Examples section, run as one doctest (bare-name loads redirected to the checkout)."""
    examples = _readme_section(name, "### Examples")
    code = "\n".join(block.removeprefix("python\n") for block in examples.split("```")[1::2])
    shim = argparse.Namespace(load=lambda n: evaluate.load(metric_path(n)))
    test = doctest.DocTestParser().get_doctest(code, {"evaluate": shim}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 5 and result.failed == 0


# evaluate's own LocalModuleTest (tests/test_metric_common.py of huggingface/evaluate), re-written as a script run in
# the environment under test. argv[1]: JSON {name: module folder, or null for hf_critic.metric_path(name)}. Each
# module is (a) loaded as evaluate's loader does, (b) checked for a `_compute` without **kwargs, and (c) has the
# doctests of its module run with `evaluate.load` patched so a bare name loads the given folder. Prints one JSON
# line: per name, the folder and file loaded, any **kwargs, doctests attempted and failed, and the first error.
LOCAL_MODULE_TEST_SCRIPT = """
import doctest, importlib, inspect, json, sys
from unittest import mock

import evaluate
from evaluate.loading import evaluation_module_factory, import_main_class

import hf_critic

folders = {name: folder or hf_critic.metric_path(name) for name, folder in json.loads(sys.argv[1]).items()}
real_load = evaluate.load


def load_local(name, *args, **kwargs):
    return real_load(folders[name], *args, **kwargs)


report = {"prefix": sys.prefix, "hf_critic": hf_critic.__file__}
for name, folder in folders.items():
    entry = report[name] = {"folder": folder}
    try:
        module = importlib.import_module(evaluation_module_factory(folder, module_type="metric").module_path)
        entry["file"] = module.__file__
        parameters = inspect.signature(import_main_class(module.__name__)._compute).parameters.values()
        entry["var_keyword"] = [p.name for p in parameters if p.kind is p.VAR_KEYWORD]
        doctest.ELLIPSIS_MARKER = "[...]"
        with mock.patch("evaluate.load", side_effect=load_local):
            result = doctest.testmod(module, raise_on_error=True)
        entry.update(attempted=result.attempted, failed=result.failed)
    except doctest.DocTestFailure as failure:
        example = failure.example
        entry["error"] = f"doctest {example.source.strip()!r}: expected {example.want!r}, got {failure.got!r}"
    except doctest.UnexpectedException as unexpected:
        entry["error"] = f"doctest {unexpected.example.source.strip()!r} raised {unexpected.exc_info[1]!r}"
    except Exception as error:
        entry["error"] = repr(error)
print(json.dumps(report))
"""


def run_local_module_test(python: str | os.PathLike, folders: dict[str, str | None], cwd: Path) -> dict:
    """Run :data:`LOCAL_MODULE_TEST_SCRIPT` with ``python`` (offline, module caches under ``cwd``); its report."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        "HF_HUB_OFFLINE": "1",
        "PYTHONNOUSERSITE": "1",
        "HF_MODULES_CACHE": str(cwd / "modules"),
        "HF_EVALUATE_CACHE": str(cwd / "evaluate"),
        "HF_DATASETS_CACHE": str(cwd / "datasets"),
    }
    proc = subprocess.run(
        [str(python), "-c", LOCAL_MODULE_TEST_SCRIPT, json.dumps(folders)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_local_module_test_passes(report: dict, name: str) -> None:
    """evaluate's LocalModuleTest verdict on one module of a :func:`run_local_module_test` report."""
    entry = report[name]
    assert "error" not in entry, entry
    assert entry["var_keyword"] == [], f"{name}._compute takes **{entry['var_keyword'][0]}"
    assert entry["failed"] == 0 and entry["attempted"] >= 5, entry


def test_local_module_test_script_catches_kwargs_and_a_failing_doctest(tmp_path):
    """The checks below fail as evaluate's would: a `_compute(**kwargs)`, a doctest whose output differs (~6 s)."""
    kwargs_copy = shutil.copytree(
        REPO_ROOT / "metrics" / "critique_correlation", tmp_path / "a" / "critique_correlation"
    )
    script = kwargs_copy / "critique_correlation.py"
    text = script.read_text()
    assert text.count("annotations=None\n") == 1
    script.write_text(text.replace("annotations=None\n", "annotations=None, **kwargs\n"))
    doctest_copy = shutil.copytree(REPO_ROOT / "metrics" / "pairwise_agreement", tmp_path / "b" / "pairwise_agreement")
    script = doctest_copy / "pairwise_agreement.py"
    text = script.read_text()
    lines = text.splitlines(keepends=True)
    want = next(i for i, line in enumerate(lines) if ">>> print(" in line) + 1  # the first printed example's output
    indent = lines[want][: len(lines[want]) - len(lines[want].lstrip())]
    lines[want] = f"{indent}not what it prints\n"
    script.write_text("".join(lines))
    report = run_local_module_test(
        sys.executable, {"critique_correlation": str(kwargs_copy), "pairwise_agreement": str(doctest_copy)}, tmp_path
    )
    with pytest.raises(AssertionError, match=r"_compute takes \*\*kwargs"):
        assert_local_module_test_passes(report, "critique_correlation")
    with pytest.raises(AssertionError, match="not what it prints"):
        assert_local_module_test_passes(report, "pairwise_agreement")


# pip's warnings when it cannot reach an index (it then reports "from versions: none"); a probe that fails without one
# of them is a real failure, not a skip.
NETWORK_ERROR = re.compile(
    r"connection broken by|Could not fetch URL|NewConnectionError|NameResolutionError|ConnectTimeoutError|"
    r"ProxyError|SSLError|Read timed out"
)


@pytest.mark.slow
def test_local_module_test_in_a_fresh_venv_from_the_wheel(tmp_path):
    """Evaluate's LocalModuleTest passes on both modules in a fresh venv holding only the wheel and evaluate.

    The venv (``python -m venv --without-pip``: no system site packages, no pip of its own; this interpreter's pip
    installs into it with ``--python``) gets ``evaluate`` and ``scipy`` from the package index, then the wheel with
    ``--no-deps``: hf-critic's own dependencies pull torch, and the modules import only hf_critic.meta_eval's
    correlation / agreement maths (numpy, pandas, which evaluate brings, and scipy) and hf_critic.core.schema (standard
    library). Both modules are loaded from the installed ``hf_critic/_metrics`` (``hf_critic.metric_path``), away from
    the checkout. Skipped when a quick probe (downloading evaluate's wheel) shows the index cannot be reached. About
    20 s with pip's cache warm (2 busy cores); the first run also downloads evaluate's dependencies and scipy.
    """
    pip = [sys.executable, "-m", "pip"]
    probe = subprocess.run(
        [
            *pip,
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--retries",
            "1",
            "--timeout",
            "15",
            "-q",
            "-d",
            str(tmp_path / "probe"),
            "evaluate",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if probe.returncode != 0:
        network = NETWORK_ERROR.search(probe.stdout + probe.stderr)
        if network:
            line = next(line for line in (probe.stdout + probe.stderr).splitlines() if network.group() in line)
            pytest.skip(f"package index unreachable (pip download evaluate: {line.strip()[:200]})")
        raise AssertionError(f"pip download evaluate failed:\n{probe.stdout}{probe.stderr}")
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    for args in (["evaluate", "scipy"], ["--no-deps", str(wheel)]):
        proc = subprocess.run(
            [*pip, "--python", str(python), "install", "-q", *args], capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    workdir = tmp_path / "elsewhere"  # no metrics/ folder here: only the installed package can answer
    workdir.mkdir()
    report = run_local_module_test(python, dict.fromkeys(METRIC_NAMES), workdir)
    assert Path(report["prefix"]) == venv
    installed = Path(report["hf_critic"]).parent
    assert installed.is_relative_to(venv / "lib"), report["hf_critic"]
    for name in METRIC_NAMES:
        assert Path(report[name]["folder"]) == installed / "_metrics" / name
        assert_local_module_test_passes(report, name)
