"""The evaluate modules under metrics/: one copy, shipped in the wheel, loadable three ways offline, doctests pass."""

from __future__ import annotations

import argparse
import doctest
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import evaluate
import pytest

import hf_critic
from hf_critic.commands import metrics as metrics_command
from hf_critic.meta_eval.modules import METRIC_NAMES, MODULE_FILES, install_metrics, metric_path

REPO_ROOT = Path(__file__).resolve().parents[1]

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
    for marker in ("Licensed under the Apache License", "_DESCRIPTION", "_KWARGS_DESCRIPTION", "_CITATION",
                   "@evaluate.utils.file_utils.add_start_docstrings", "def _info(self)", "def _compute("):  # fmt: skip
        assert marker in script
    readme = (folder / "README.md").read_text()
    assert readme.startswith("---\ntitle: ") and "app_file: app.py" in readme
    for section in ("## Metric Description", "## How to Use", "### Inputs", "### Output Values", "### Examples",
                    "## Limitations and Bias", "## Citation"):  # fmt: skip
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
    """Issue 21: a requirement on a git URL that does not exist made ``pip install -r requirements.txt`` (and so
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


IGNORED = ("build", "dist", "outputs")  # build products and run outputs (git-ignored)


def test_the_only_copy_is_in_metrics():
    """No second copy of a module anywhere in the source tree (the wheel maps metrics/ to hf_critic._metrics)."""
    tops = [d for d in REPO_ROOT.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name not in IGNORED]
    for name in METRIC_NAMES:
        copies = [path for top in tops for path in top.rglob(f"{name}.py")]
        assert copies == [REPO_ROOT / "metrics" / name / f"{name}.py"]


# What a build needs: the files pyproject.toml and setup.py read.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "src", "metrics", "dataset_cards")


def test_wheel_ships_metric_modules_and_card_template(tmp_path):
    """`pip wheel .` carries metrics/ as hf_critic/_metrics/ and dataset_cards/ as hf_critic/_dataset_cards/.

    The build runs on a copy of the sources, so the checkout gets no build/ or egg-info folders (~7 s).
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
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "whl"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp_path / "whl").glob("hf_critic-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in METRIC_NAMES:
        for pattern in MODULE_FILES:
            filename = pattern.format(name=name)
            assert f"hf_critic/_metrics/{name}/{filename}" in names
            packed = zipfile.ZipFile(wheel).read(f"hf_critic/_metrics/{name}/{filename}")
            assert packed == (REPO_ROOT / "metrics" / name / filename).read_bytes()
    assert "hf_critic/_dataset_cards/eval_instruct.md" in names
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
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
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
    from hf_critic.data.hub import default_card_template

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
    out = critique_correlation([8, 6, 3, 9, 4, 7], [5, 3, 4, 4, 2, 3], [1, 1, 1, 2, 2, 2], ["a", "b", "c"] * 2,
                               bootstrap=10)  # fmt: skip
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
