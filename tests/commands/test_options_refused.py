"""Options never ignored, and no traceback: unknown keys in every YAML file hf-critic reads are
one-line errors naming the key, the file and the closest valid key; optional extras fail before the work; --report-dir
naming a file and an all-tie --drop-tie are one-line errors."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from hf_critic.cli import main


# --------------------------------------------------------------------------------------------------
# Cascade files
# --------------------------------------------------------------------------------------------------
def _load(tmp_path, spec, monkeypatch):
    """``load_cascade`` of ``spec`` with critics built by a stand-in (a typo must not reach a model load)."""
    from hf_critic import load_cascade
    from hf_critic.critics import specs

    monkeypatch.setitem(specs.BUILDERS, "computed", lambda spec, rows: object())
    path = tmp_path / "cascade.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return load_cascade(str(path)), str(path)


SERVED = {"base_url": "http://127.0.0.1:1/v1", "model": "judge"}


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"critics": [{"name": "a", "options": SERVED}], "thresholds": [0.9]},
            "unknown key of a cascade file (thresholds come from --calibration) 'thresholds'",
        ),
        ({"critics": [{"name": "a", "options": SERVED}], "target": 0.8}, "unknown key of a cascade file"),
        (
            {"critics": [{"name": "a", "options": SERVED, "threshold": 0.9}]},
            "critics[0] (a): unknown key of a critic 'threshold'",
        ),
        (
            {"critics": [{"name": "a", "options": SERVED, "weight": 2}]},
            "critics[0] (a): unknown key of a critic 'weight'",
        ),
        ({"critics": [{"name": "a", "option": SERVED}]}, "unknown key of a critic 'option' (did you mean 'options'?)"),
        (
            {"critics": [{"name": "a", "recroded": {"critiques": "x.jsonl"}}]},
            "unknown key of a critic 'recroded' (did you mean 'recorded'?)",
        ),
        (
            {"critics": [{"name": "a", "recorded": {"critique": "x.jsonl"}}]},
            "recorded: unknown key of recorded verdicts 'critique' (did you mean 'critiques'?)",
        ),
        (
            {"critics": [{"name": "a", "options": {**SERVED, "temprature": 0.5}}]},
            "option 'temprature' is no option of compare (did you mean 'temperature'?)",
        ),
    ],
)
def test_unknown_keys_in_a_cascade_file_are_errors_naming_the_file_and_the_closest_key(
    tmp_path, monkeypatch, spec, message
):
    """These keys used to be ignored: a typo turned the critic into the embedded default one."""
    with pytest.raises(ValueError) as err:
        _load(tmp_path, spec, monkeypatch)
    text = str(err.value)
    assert message in text and "cascade.yaml" in text and "\n" not in text


def test_a_known_cascade_file_still_loads(tmp_path, monkeypatch):
    stages, _ = _load(tmp_path, {"critics": [{"name": "a", "options": SERVED, "price_per_call": 0.1}]}, monkeypatch)
    assert [s.name for s in stages] == ["a"] and stages[0].price_per_call == 0.1


# --------------------------------------------------------------------------------------------------
# The other YAML files
# --------------------------------------------------------------------------------------------------
def test_a_rubric_key_typo_names_the_closest_key(tmp_path):
    from hf_critic.prompts.rubric import load_rubric

    path = tmp_path / "rubric.yaml"
    path.write_text("criteria: helpful?\nscore_description: {1: bad, 2: good}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown key of a rubric 'score_description' \(did you mean "):
        load_rubric(path)


def test_a_rewrite_prompt_with_an_unknown_key_is_refused(tmp_path):
    from hf_critic.prompts.rewrite import load_rewrite_prompt

    path = tmp_path / "rewrite.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "version": "1",
                "source": "me",
                "language": "en",
                "fields": ["question"],
                "prompt": "{question}",
                "promt": "typo",
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(
        ValueError, match=r"rewrite.yaml: unknown key of a rewrite prompt 'promt' \(did you mean 'prompt'"
    ):
        load_rewrite_prompt(str(path))


def test_an_eval_instruct_recipe_typo_names_the_closest_key():
    from hf_critic.eval_instruct.config import ConfigError, config_from_dict

    with pytest.raises(ConfigError, match=r"unknown key 'varaint' \(did you mean 'variant'\?\)"):
        config_from_dict({"varaint": "v2"}, "recipe.yaml")


# --------------------------------------------------------------------------------------------------
# calibrate: --report-dir, --drop-tie, the [report] extra
# --------------------------------------------------------------------------------------------------
def _calibrate_files(tmp_path, labels):
    data = tmp_path / "pairs.jsonl"
    rows = [{"question": f"q{i}", "response_1": "a", "response_2": "b", "label": g} for i, g in enumerate(labels)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    critiques = tmp_path / "earlier.jsonl"
    critiques.write_text(
        "".join(json.dumps({**r, "critique_label": 0, "critique_confidence": 0.9}) + "\n" for r in rows),
        encoding="utf-8",
    )
    cascade = tmp_path / "cascade.yaml"
    cascade.write_text(yaml.safe_dump({"critics": [{"name": "earlier", "recorded": {"critiques": str(critiques)}}]}))
    return [
        "calibrate",
        "--data",
        str(data),
        "--cascade",
        str(cascade),
        "--target-agreement",
        "0.8",
        "--output",
        str(tmp_path / "calibration.json"),
    ]


def _error(argv, capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def test_report_dir_naming_a_file_is_a_one_line_error(tmp_path, capsys):
    argv = _calibrate_files(tmp_path, [0, 1] * 20)
    (tmp_path / "report").write_text("not a folder")
    line = _error([*argv, "--report-dir", str(tmp_path / "report")], capsys)
    assert "--report-dir" in line and "a file, not a folder" in line
    assert not (tmp_path / "calibration.json").exists()


def test_drop_tie_on_all_tie_data_is_a_one_line_error(tmp_path, capsys):
    line = _error([*_calibrate_files(tmp_path, [2] * 10), "--drop-tie"], capsys)
    assert "--drop-tie leaves no row: all 10 pairs are ties in 'label'" in line


def test_the_report_extra_is_asked_for_before_the_work(tmp_path, capsys, monkeypatch):
    """Without matplotlib, calibrate --splits --report-dir used to judge everything, then end in ModuleNotFoundError."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if `pip install hf-critic` without [report]
    argv = [*_calibrate_files(tmp_path, [0, 1] * 20), "--splits", "10", "--report-dir", str(tmp_path / "r")]
    line = _error(argv, capsys)
    assert "need matplotlib, not installed: pip install 'hf-critic[report]'" in line
    assert not (tmp_path / "calibration.json").exists()  # nothing was done


def test_meta_eval_asks_for_the_report_extra_before_the_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    critiques = tmp_path / "critiques.jsonl"
    critiques.write_text(
        json.dumps({"question": "q", "response_1": "a", "response_2": "b", "label": 0, "critique_label": 0}) + "\n"
    )
    argv = ["meta-eval", "--critiques", str(critiques), "--output-dir", str(tmp_path / "out")]
    line = _error(argv, capsys)
    assert "pip install 'hf-critic[report]' (or --no-plots)" in line
    assert not (tmp_path / "out" / "report.md").exists()


# --------------------------------------------------------------------------------------------------
# Threads and cache paths: checked before any model loads, one line naming the option or variable
# --------------------------------------------------------------------------------------------------
def _grade(tmp_path, *more) -> list[str]:
    """grade on one row with a model that does not exist: an error about the model means the check came too late."""
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"question": "q", "response": "r"}) + "\n", encoding="utf-8")
    model = str(tmp_path / "no-model")
    return ["grade", "--data", str(data), "--output", str(tmp_path / "out.jsonl"), "--model", model, *more]


@pytest.mark.parametrize("flag, value", [("--threads", "-2"), ("--threads", "0"), ("--batch-size", "0")])
def test_a_thread_or_batch_count_below_one_is_refused_by_the_option_parser(tmp_path, capsys, flag, value):
    """--threads -2 was a torch traceback after the model loaded, --threads 0 silently the default, --batch-size 0
    silently 1."""
    with pytest.raises(SystemExit) as exit_:
        main(_grade(tmp_path, flag, value))
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"hf-critic grade: error: argument {flag}: must be at least 1, got {value}"


def test_a_thread_count_below_one_is_refused_by_the_library(tiny_model_dir):
    from hf_critic.backends.transformers import TransformersBackend

    for bad in (0, -2):
        with pytest.raises(ValueError, match=rf"^num_threads must be a positive integer .*, got {bad}$"):
            TransformersBackend.from_pretrained(str(tiny_model_dir), num_threads=bad)


@pytest.fixture
def torch_threads():
    """Restores torch's thread count after a test that sets it."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_omp_num_threads_is_honoured_unless_threads_is_given(tiny_model_dir, monkeypatch, torch_threads):
    """OMP_NUM_THREADS used to be overridden by one thread per core: a count the default can never give (one more
    than the CPUs this process may use) must come through, and --threads (num_threads) still wins."""
    import torch

    from hf_critic.backends.threads import default_num_threads, usable_cpus
    from hf_critic.backends.transformers import TransformersBackend

    asked = usable_cpus() + 1
    monkeypatch.setenv("OMP_NUM_THREADS", f"{asked},1")  # OpenMP's nested form: the first level counts
    assert default_num_threads() == asked and default_num_threads(cores=1) == 1
    TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32")
    assert torch.get_num_threads() == asked
    TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", num_threads=1)
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("value", ["abc", "0", "-1", "2.5"])
def test_a_bad_omp_num_threads_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, value):
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    line = _error(_grade(tmp_path), capsys)
    says = f"OMP_NUM_THREADS={value!r}: must be a positive integer (the CPU threads), or unset"
    assert line == f"hf-critic grade: error: {says} (see docs/troubleshooting.md#threads)"
    main(_grade(tmp_path, "--threads", "1"))  # --threads given: the variable is not read
    assert "OMP_NUM_THREADS" not in capsys.readouterr().err


def test_hf_critic_cache_under_a_file_is_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    """HF_CRITIC_CACHE under a regular file was a NotADirectoryError traceback after the model loaded."""
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("HF_CRITIC_CACHE", str(tmp_path / "a-file" / "cache"))
    line = _error(_grade(tmp_path), capsys)
    says = f"{tmp_path / 'a-file'} is a file, not a folder; set HF_CRITIC_CACHE to a folder"
    variable = f"HF_CRITIC_CACHE={tmp_path / 'a-file' / 'cache'}"
    assert line == f"hf-critic grade: error: {variable}: {says} (see docs/troubleshooting.md#cache)"
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "name, says",
    [
        ("a-file/cache.sqlite", "{tmp}/a-file is a file, not a folder"),
        ("rows.jsonl", "not a SQLite file, so not a generation cache; name another file"),
        (".", "is a folder; name the cache file (created if missing)"),
    ],
)
def test_a_cache_option_that_cannot_hold_a_cache_is_one_line_before_any_work(tmp_path, capsys, name, says):
    (tmp_path / "a-file").write_text("x")
    cache = tmp_path / name
    line = _error(_grade(tmp_path, "--cache", str(cache)), capsys)
    expected = f"--cache {cache.expanduser()}: {says.format(tmp=tmp_path)} (see docs/troubleshooting.md#cache)"
    assert line.startswith("hf-critic grade: error: ") and line.endswith(expected), line
    assert not (tmp_path / "out.jsonl").exists()


def test_a_generation_cache_under_a_file_is_refused_naming_its_argument(tmp_path):
    from hf_critic.backends.cache import GenerationCache

    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ValueError, match=r"^path .*/a-file/c\.sqlite: .*/a-file is a file, not a folder$"):
        GenerationCache(tmp_path / "a-file" / "c.sqlite")


# --------------------------------------------------------------------------------------------------
# Human-label, human-score and category columns: checked before any critic runs, never ignored
# --------------------------------------------------------------------------------------------------
PAIR = {"question": "q", "response_1": "a", "response_2": "bb", "label": 0}


@pytest.mark.parametrize(
    "command, row, option",
    [
        ("grade", {"question": "q", "response": "r", "human_score": 3}, "--human-score"),
        ("compare", PAIR, "--human-label"),
    ],
)
def test_a_missing_human_column_of_grade_or_compare_is_refused_before_the_critic(
    tmp_path, capsys, command, row, option
):
    """It was a KeyError-style 'Column 'x' doesn't exist.' after the critiques were written."""
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    argv = [command, "--data", str(data), "--output", str(tmp_path / "out.jsonl"), "--model", str(tmp_path / "none")]
    line = _error([*argv, option, "nosuch"], capsys)
    assert f"{data}: {option} 'nosuch': no such column (the data has [" in line
    assert not (tmp_path / "out.jsonl").exists()


def test_meta_eval_refuses_a_category_column_the_data_lacks(tmp_path, capsys):
    """--category naming a missing column was ignored: a report without the breakdown asked for."""
    critiques = tmp_path / "critiques.jsonl"
    critiques.write_text(json.dumps({**PAIR, "critique_label": 0}) + "\n", encoding="utf-8")
    argv = ["meta-eval", "--critiques", str(critiques), "--output-dir", str(tmp_path / "out"), "--no-plots"]
    line = _error([*argv, "--category", "topic"], capsys)
    assert f"{critiques}: --category 'topic': no such column (the data has [" in line
    assert not (tmp_path / "out" / "report.md").exists()


def test_meta_eval_refuses_a_missing_human_label_before_any_critic_runs(tmp_path, capsys):
    """It was found missing after every critic had judged the benchmark (here: a model that does not exist)."""
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(PAIR) + "\n", encoding="utf-8")
    argv = ["meta-eval", "--benchmark", f"generic:{data}", "--task", "pairwise", "--model", str(tmp_path / "none")]
    line = _error([*argv, "--human-label", "gold", "--output-dir", str(tmp_path / "out")], capsys)
    assert "pairs: --human-label 'gold': no such column (the data has [" in line


# --------------------------------------------------------------------------------------------------
# Critic options checked before the model loads
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, says",
    [
        ("nosuch", "--template 'nosuch': no template family (autoj, "),
        ("{tmp}/none.yaml", "--template {tmp}/none.yaml: no such file"),  # was a FileNotFoundError traceback
    ],
)
def test_a_template_that_does_not_exist_is_refused_before_the_model_loads(tmp_path, capsys, value, says):
    line = _error(_grade(tmp_path, "--template", value.format(tmp=tmp_path)), capsys)
    assert says.format(tmp=tmp_path) in line and line.endswith("(see docs/troubleshooting.md#options)"), line


def test_min_verdict_mass_outside_zero_one_is_refused_by_the_option_parser(tmp_path, capsys):
    """It was 'min_verdict_mass must be in [0, 1]' (the library's argument, not the flag) after the model loaded."""
    with pytest.raises(SystemExit):
        main(_grade(tmp_path, "--min-verdict-mass", "2"))
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .endswith("argument --min-verdict-mass: must lie in [0, 1], got 2")
    )


@pytest.mark.parametrize(
    "option, says",
    [
        (
            ["--constrain-verdict"],
            "--constrain-verdict needs grammar-constrained decoding, which transformers lacks",
        ),
        (["--tie-margin", "0.5"], "--tie-margin 0.5: only a reward critic (a reward model) has a tie band"),
    ],
)
def test_an_option_the_engine_cannot_honour_is_refused_before_the_model_loads(tmp_path, capsys, option, says):
    """Both were found after the model had loaded (here the model does not exist: its error would come first)."""
    line = _error(_grade(tmp_path, *option), capsys)
    assert says in line and line.endswith("(see docs/troubleshooting.md#options)"), line


def test_a_verdict_parser_file_that_does_not_exist_is_one_line(tmp_path, capsys):
    """It was a FileNotFoundError traceback."""
    data, verdicts = tmp_path / "pairs.jsonl", tmp_path / "verdicts.jsonl"
    data.write_text(json.dumps(PAIR) + "\n", encoding="utf-8")
    verdicts.write_text(json.dumps({"output": "[[A]]"}) + "\n", encoding="utf-8")
    argv = ["meta-eval", "--benchmark", f"generic:{data}", "--task", "pairwise", "--verdicts", f"j={verdicts}"]
    argv += ["--verdict-parser", str(tmp_path / "none.yaml"), "--output-dir", str(tmp_path / "out"), "--no-plots"]
    line = _error(argv, capsys)
    assert f"--verdict-parser {tmp_path / 'none.yaml'}: no such file (see docs/troubleshooting.md#options)" in line
