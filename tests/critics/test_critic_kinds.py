"""Nothing a critic cannot do is silently ignored. Every option a reward critic (a reward-model folder, the shipped
critic as a PEFT adapter) cannot honour ends in one line and exit 2 with the input intact; what it does honour (truncation, ties,
one pass under --swap, the reference said ignored) gives the right rows. New critic kinds add their rows here."""

from __future__ import annotations

import hashlib
import json

import pytest

from hf_critic.cli import main
from hf_critic.testing.tiny_models import build_tiny_reward_model

QUESTION = "What is 2 + 2?"
LONG = "Four is the answer, as two plus two makes four. " * 300


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    """``--model`` values of each reward-critic kind: a reward-model folder and the shipped critic (a PEFT adapter)."""
    return {
        "reward model": [str(build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "model")), "--dtype", "float32"],
        "shipped adapter": ["smollm2-135m-critic"],  # a PEFT adapter on the embedded model
    }


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def files(tmp_path):
    return {
        "grade": _write(tmp_path / "grade.jsonl", [{"question": QUESTION, "response": "4"}]),
        "graded_ref": _write(tmp_path / "ref.jsonl", [{"question": QUESTION, "response": "4", "reference": "4"}]),
        "long": _write(
            tmp_path / "long.jsonl",
            [{"question": QUESTION, "response": LONG}, {"question": QUESTION, "response": "4"}],
        ),
        "compare": _write(
            tmp_path / "compare.jsonl",
            [
                {"question": QUESTION, "response_1": "4", "response_2": "4"},
                {"question": QUESTION, "response_1": "", "response_2": ""},
                {"question": QUESTION, "response_1": "It is 4.", "response_2": "It is 5, I think."},
            ],
        ),
        "rubric": _write(tmp_path / "rubric.yaml", []).with_suffix(".yaml"),
    }


REFUSED = [
    # (command, file, extra arguments, words the one-line error must contain)
    ("grade", "grade", ["--explanation", "first"], "--explanation"),
    ("grade", "grade", ["--verdict", "text"], "--verdict text"),
    ("grade", "grade", ["--verdict", "probability"], "--verdict probability"),
    ("grade", "grade", ["--decoding", "sampling"], "--decoding"),
    ("grade", "grade", ["--num-samples", "3", "--decoding", "self_consistency"], "--decoding"),
    ("grade", "grade", ["--max-new-tokens", "64"], "--decoding"),
    ("grade", "grade", ["--language", "zh"], "--language"),
    ("grade", "grade", ["--min-verdict-mass", "0.5"], "--min-verdict-mass"),
    ("grade", "grade", ["--constrain-verdict"], "--constrain-verdict"),
    ("grade", "grade", ["--engine", "llamacpp"], "--engine"),
    ("grade", "graded_ref", ["--referenced"], "reads no reference"),
    ("grade", "long", ["--truncate", "error"], "over the"),
    ("compare", "compare", ["--template", "pandalm"], "--template pandalm"),
    ("compare", "compare", ["--tie-margin", "-1"], "--tie-margin"),
]


def _snapshot(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", ["reward model", "shipped adapter"])
@pytest.mark.parametrize(("command", "data", "extra", "words"), REFUSED, ids=[" ".join(c[2]) for c in REFUSED])
def test_an_option_a_reward_critic_cannot_honour_is_one_line_and_exit_2(
    kinds, files, tmp_path, capsys, kind, command, data, extra, words
):
    before = _snapshot(files[data])
    argv = [
        command,
        "--data",
        str(files[data]),
        "--output",
        str(tmp_path / "out.jsonl"),
        "--no-cache",
        "--no-progress",
    ]
    code = main([*argv, "--model", *kinds[kind], *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err and words in err[-1] and "Traceback" not in "\n".join(err)
    assert _snapshot(files[data]) == before and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("kind", ["reward model", "shipped adapter"])
def test_what_a_reward_critic_honours_gives_the_right_rows(kinds, files, tmp_path, capsys, caplog, kind):
    def run(command, data, *extra):
        out = tmp_path / f"{command}-{len(extra)}.jsonl"
        argv = [command, "--data", str(files[data]), "--output", str(out), "--no-cache", "--no-progress"]
        assert main([*argv, "--model", *kinds[kind], *extra, "--overwrite"]) == 0
        return [json.loads(line) for line in out.read_text().splitlines()], capsys.readouterr()

    rows, printed = run("grade", "long")  # --truncate middle (default): cut, said and counted
    assert [r["critique_truncated"] for r in rows] == [True, False]
    assert "truncated to fit the context 1" in printed.out
    rows, _ = run("grade", "long", "--truncate", "skip")
    assert rows[0]["critique_status"] == "skipped" and rows[0]["critique_score"] is None
    assert rows[1]["critique_status"] == "ok"
    rows, printed = run("compare", "compare", "--swap")  # equal (and empty) responses are ties; one pass only
    assert [r["critique_label"] for r in rows[:2]] == [2, 2]
    assert all("critique_label_swapped" not in r for r in rows)
    assert "order-free" in caplog.text
    rows, printed = run("grade", "graded_ref")  # a reference column: said unused, not silently dropped
    assert rows[0]["critique_score"] is not None and "reference column is not shown" in caplog.text


def test_refine_refuses_a_reward_critic_as_the_critic(kinds, files, tmp_path, capsys):
    argv = ["refine", "--data", str(files["grade"]), "--critic", f"rm={kinds['reward model'][0]}"]
    code = main([*argv, "--output-dir", str(tmp_path / "refine"), "--no-cache", "--no-progress"])
    assert code == 2 and "writes no critique" in capsys.readouterr().err


def test_tie_margin_is_refused_for_a_generative_critic(tiny_model_dir, files, tmp_path, capsys):
    argv = ["compare", "--data", str(files["compare"]), "--output", str(tmp_path / "o.jsonl"), "--no-cache"]
    assert main([*argv, "--model", str(tiny_model_dir), "--tie-margin", "0.5", "--no-progress"]) == 2
    assert "--tie-margin 0.5: only a reward critic" in capsys.readouterr().err


GENERATIVE = [
    (["--verdict", "text", "--explanation", "first"], "--explanation first: applies to probability read-outs"),
    (["--verdict", "text", "--min-verdict-mass", "0.5"], "--min-verdict-mass 0.5: applies to probability read-outs"),
]


@pytest.mark.parametrize(("extra", "words"), GENERATIVE, ids=[" ".join(g[0]) for g in GENERATIVE])
def test_a_generative_critic_refuses_what_its_verdict_mode_ignores(tiny_model_dir, tmp_path, capsys, extra, words):
    data = _write(tmp_path / "short.jsonl", [{"question": "2+2?", "response": "4"}])
    argv = ["grade", "--data", str(data), "--output", str(tmp_path / "o.jsonl"), "--template", "mtbench"]
    assert main([*argv, "--model", str(tiny_model_dir), "--no-cache", "--no-progress", *extra]) == 2
    assert words in capsys.readouterr().err and not (tmp_path / "o.jsonl").exists()


def test_decoding_options_without_decoding_are_said_ignored(tiny_model_dir, tmp_path, caplog):
    data = _write(tmp_path / "short.jsonl", [{"question": "2+2?", "response": "4"}])
    argv = ["grade", "--data", str(data), "--output", str(tmp_path / "o.jsonl"), "--template", "mtbench"]
    extra = ["--verdict", "probability", "--explanation", "none", "--max-new-tokens", "32"]
    assert main([*argv, "--model", str(tiny_model_dir), "--no-cache", "--no-progress", *extra]) == 0
    assert "decoding options ignored" in caplog.text


def test_a_broken_reward_critic_folder_is_named_with_its_cause(files, tmp_path, capsys, monkeypatch):
    """A corrupt adapter_config.json, or the built-in critic installed without its data: one line naming the file
    and what is wrong with it."""
    import dataclasses

    from hf_critic.backends import models

    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "adapter_config.json").write_text("{not json")
    argv = [
        "grade",
        "--data",
        str(files["grade"]),
        "--output",
        str(tmp_path / "o.jsonl"),
        "--no-cache",
        "--no-progress",
    ]
    assert main([*argv, "--model", str(corrupt)]) == 2
    assert f"{corrupt / 'adapter_config.json'}: not valid JSON" in capsys.readouterr().err
    name = "smollm2-135m-critic"
    empty = dataclasses.replace(models.TRAINED_CRITICS[name], folder=tmp_path / "no-data")
    monkeypatch.setitem(models.TRAINED_CRITICS, name, empty)
    assert main([*argv, "--model", name]) == 2
    err = capsys.readouterr().err
    assert "adapter_config.json, adapter_model.safetensors missing" in err and "installed without its data" in err
