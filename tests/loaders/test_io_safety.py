"""Outputs are checked before any model loads and written atomically; input errors name the file,
line and field; CSV text columns stay text; temporary folders of a killed save are removed by the next one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import datasets
import pytest

from hf_critic.cli import main
from hf_critic.eval_instruct.hub import save_outputs
from hf_critic.io import RecordError, atomic_path, check_fields, load_records, save_records

NO_MODEL = "/nonexistent/model-folder"  # loading it would fail: an output error must come first


def rows_file(path: Path, n: int = 3) -> Path:
    path.write_text("".join(json.dumps({"question": f"Q{i}?", "response": f"A{i}"}) + "\n" for i in range(n)))
    return path


def grade(*args: str) -> list[str]:
    return ["grade", "--model", NO_MODEL, "--no-progress", *args]


def test_output_equal_to_the_input_is_refused_and_the_input_kept(tmp_path, capsys):
    data = rows_file(tmp_path / "in.jsonl")
    before = data.read_bytes()
    assert main(grade("--data", str(data), "--output", str(data), "--limit", "2", "--overwrite")) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"hf-critic grade: error: --output {data}: is also the input; write to another file"
        " (see docs/troubleshooting.md#output-files)"
    )
    assert data.read_bytes() == before


def test_an_existing_output_needs_overwrite(tmp_path, capsys):
    data, out = rows_file(tmp_path / "in.jsonl"), tmp_path / "out.jsonl"
    out.write_text("previous results\n")
    assert main(grade("--data", str(data), "--output", str(out))) == 2
    assert "already exists; pass --overwrite to replace it" in capsys.readouterr().err
    assert out.read_text() == "previous results\n"
    assert main(grade("--data", str(data), "--output", str(out), "--overwrite")) == 2  # now the model is looked up
    assert NO_MODEL in capsys.readouterr().err


@pytest.mark.parametrize("case", ["parent_is_a_file", "output_is_a_directory", "bad_suffix"])
def test_unwritable_outputs_fail_in_one_line_before_the_model(tmp_path, capsys, case):
    data = rows_file(tmp_path / "in.jsonl")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.jsonl").mkdir()
    out, expected = {
        "parent_is_a_file": (tmp_path / "afile" / "out.jsonl", "is a file, not a folder"),
        "output_is_a_directory": (tmp_path / "adir.jsonl", "is a directory; give a file name"),
        "bad_suffix": (tmp_path / "out.txt", "must end in one of .jsonl, .json, .parquet"),
    }[case]
    assert main(grade("--data", str(data), "--output", str(out))) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "Traceback" not in err[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a read-only folder")
def test_a_read_only_folder_is_refused(tmp_path, capsys):
    data = rows_file(tmp_path / "in.jsonl")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main(grade("--data", str(data), "--output", str(locked / "out.jsonl"))) == 2
        assert "no permission to write" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


def test_meta_eval_output_dir_on_a_file_and_existing_reports(tmp_path, capsys):
    critiques = tmp_path / "c.jsonl"
    critiques.write_text(json.dumps({"question": "Q", "response": "A", "critique_score": 5.0, "score": 4}) + "\n")
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["meta-eval", "--critiques", str(critiques), "--output-dir", str(afile), "--no-plots"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.json").write_text("{}")
    assert main(["meta-eval", "--critiques", str(critiques), "--output-dir", str(out), "--no-plots"]) == 2
    assert "already holds report.json; pass --overwrite" in capsys.readouterr().err
    assert (out / "report.json").read_text() == "{}"


def test_eval_instruct_finished_outputs_need_overwrite(tmp_path, capsys):
    from tests._eval_instruct_support import recipe

    path = recipe(tmp_path, "http://127.0.0.1:9/v1")  # nothing listens: the check must come first
    (tmp_path / "out" / "dataset").mkdir(parents=True)
    (tmp_path / "out" / "hub").mkdir()  # moved into place last: both together are a finished save
    assert main(["eval-instruct", "--config", str(path), "--no-progress"]) == 2
    assert "already holds dataset, hub; pass --overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("leftover", ["killed_while_writing_the_hub_folder", "dataset_without_hub"])
def test_a_save_killed_part_way_needs_no_overwrite(tmp_path, capsys, monkeypatch, leftover):
    """The help says only finished outputs need --overwrite: a run killed while writing its hub folder left a complete
    ``dataset`` folder, which made the rerun stop at the output check."""
    import hf_critic.eval_instruct.pipeline as pipeline
    from tests._eval_instruct_support import recipe

    out = tmp_path / "out"
    if leftover == "dataset_without_hub":  # a kill between the two renames, or a save of an earlier version
        (out / "dataset").mkdir(parents=True)
    else:
        data = datasets.DatasetDict({"pointwise_referenced": datasets.Dataset.from_list([{"id": "a"}])})

        def killed(*args, **kwargs):  # the kill arrives while the hub folder's parquet files are written
            raise KeyboardInterrupt

        with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
            patch.setattr(datasets.Dataset, "to_parquet", killed)
            save_outputs(data, out)
        assert not (out / "hub").exists()

    def started(*args, **kwargs):
        raise FileNotFoundError("the run started")

    monkeypatch.setattr(pipeline, "run_eval_instruct", started)
    path = recipe(tmp_path, "http://127.0.0.1:9/v1")
    assert main(["eval-instruct", "--config", str(path), "--no-progress"]) == 2
    pointer = "(see docs/troubleshooting.md#eval-instruct)"
    assert capsys.readouterr().err.strip() == f"hf-critic eval-instruct: error: the run started {pointer}"


def test_self_eval_names_the_file_of_a_bad_row(tmp_path, capsys):
    data = tmp_path / "answers.jsonl"
    data.write_text(json.dumps({"question": "Q", "response": "A"}) + "\n" + json.dumps({"turns": ["Q"]}) + "\n")
    argv = ["self-eval", "--data", str(data), "--output", str(tmp_path / "o.jsonl"), "--model", NO_MODEL]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{data}: row 1: " in err and NO_MODEL not in err


# ------------------------------------------------------------------------------------------------ inputs
def test_a_directory_named_like_a_data_file(tmp_path):
    (tmp_path / "x.jsonl").mkdir()
    with pytest.raises(RecordError, match=r"x\.jsonl: is an empty directory, not a \.jsonl file"):
        load_records(tmp_path / "x.jsonl")


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_non_utf8_input_names_file_and_line(tmp_path, suffix):
    path = tmp_path / f"latin1{suffix}"
    good = {".jsonl": b'{"question": "ok", "response": "a"}\n', ".json": b"[\n", ".csv": b"question,response\n"}
    bad = {
        ".jsonl": b'{"question": "caf\xe9", "response": "a"}\n',
        ".json": b'{"question": "caf\xe9"}]\n',
        ".csv": b"caf\xe9,a\n",
    }
    path.write_bytes(good[suffix] + bad[suffix])
    with pytest.raises(RecordError, match=rf"latin1\{suffix}:2: not UTF-8 text \(byte 0xe9 at column \d+\)"):
        load_records(path)


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_an_empty_file_says_so(tmp_path, suffix):
    path = tmp_path / f"empty{suffix}"
    path.write_text("\n")
    with pytest.raises(RecordError, match=rf"empty\{suffix}: the file is empty"):
        load_records(path)


def test_csv_answers_that_look_like_numbers_stay_text(tmp_path):
    path = tmp_path / "qa.csv"
    path.write_text("prompt,answer,score,label\nWhat is 2+2?,4,5,0\nPad it,0012,3.5,1\nEmpty?,,,\n")
    records = load_records(path, {"question": "prompt", "response": "answer"})
    assert records["response"] == ["4", "0012", None] and records["question"][0] == "What is 2+2?"
    assert records["score"] == [5.0, 3.5, None] and records["label"] == [0, 1, None]
    check_fields(records.select(range(2)), ["question", "response"], source=str(path))  # text, not numbers


# ------------------------------------------------------------------------------------------------ atomic writes
def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "out.jsonl"
    save_records(datasets.Dataset.from_list([{"a": 1}]), out)
    (tmp_path / ".out.jsonl.killed.tmp").write_text("half a file")  # left by a killed write
    with pytest.raises(RuntimeError), atomic_path(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert out.read_text().strip() == '{"a":1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def _written_under(umask: int, write) -> int:
    """Run ``write`` under ``umask``; return the mode ``open()`` gives a new file under it."""
    old = os.umask(umask)
    try:
        write()
        with tempfile.TemporaryDirectory() as folder, open(Path(folder) / "plain.txt", "w") as handle:
            handle.write("x")
            return os.stat(handle.name).st_mode & 0o777
    finally:
        os.umask(old)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_output_files_honour_the_umask(tmp_path, umask):
    """Every output goes through atomic_path, whose temporary file was made by mkstemp (0600) and renamed into place:
    grade's JSONL or parquet, a report were 0600 whatever the umask."""
    rows = datasets.Dataset.from_list([{"question": "q", "response": "r"}])
    written = [tmp_path / "out.jsonl", tmp_path / "out.parquet"]
    plain = _written_under(umask, lambda: [save_records(rows, path) for path in written])
    assert plain == 0o666 & ~umask
    assert [path.stat().st_mode & 0o777 for path in written] == [plain, plain]


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_saved_folders_honour_the_umask(tmp_path, umask):
    """save_outputs' folders were made by mkdtemp (0700) and renamed into place whatever the umask."""
    data = datasets.DatasetDict({"pointwise_referenced": datasets.Dataset.from_list([{"a": 1}])})
    plain = _written_under(umask, lambda: save_outputs(data, tmp_path))
    assert plain == 0o666 & ~umask
    folders = [tmp_path / "dataset", tmp_path / "hub", tmp_path / "hub" / "pointwise_referenced"]
    assert {folder.stat().st_mode & 0o777 for folder in folders} == {0o777 & ~umask}
    parquet = tmp_path / "hub" / "pointwise_referenced" / "train-00000-of-00001.parquet"
    assert parquet.stat().st_mode & 0o777 == plain


def test_stale_temporary_dataset_folders_are_removed_by_the_next_save(tmp_path):
    for stale in (".dataset-abc123", ".hub-def456", ".dataset-old"):
        (tmp_path / stale).mkdir()
        (tmp_path / stale / "data.arrow").write_text("x")
    data = datasets.DatasetDict({"pointwise_referenced": datasets.Dataset.from_list([{"id": "a"}])})
    save_outputs(data, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset", "hub"]


def test_refine_checks_its_output_dir_before_loading(tmp_path, capsys):
    data = rows_file(tmp_path / "in.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    (out / "rows.jsonl").write_text("previous\n")
    assert main(["refine", "--data", str(data), "--output-dir", str(out), "--generator", NO_MODEL]) == 2
    assert "already holds rows.jsonl; pass --overwrite" in capsys.readouterr().err
    assert (out / "rows.jsonl").read_text() == "previous\n"


# --------------------------------------------------------------------------------------------------
# Malformed JSON in a user file: one line naming the file, the line and the JSON error, never a traceback
# --------------------------------------------------------------------------------------------------
def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_view_of_a_folder_whose_report_json_is_malformed_names_the_file_and_line(tmp_path, capsys):
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "report.md").write_text("# report\n", encoding="utf-8")
    (folder / "report.json").write_text('{"runs": [\n  {"critic": oops}\n]}\n', encoding="utf-8")
    assert main(["view", str(folder), "--output", str(tmp_path / "v.html")]) == 2
    err = _one_error_line(capsys)
    assert err.startswith(f"hf-critic view: error: {folder / 'report.json'}:2: malformed JSON (Expecting value)")


def test_view_of_a_malformed_critiques_file_names_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "compared.jsonl"
    path.write_text('{"question": "q", "critique_label": 0}\n{"question": \n', encoding="utf-8")
    assert main(["view", str(path), "--output", str(tmp_path / "v.html")]) == 2
    assert f"{path.name}:2: malformed JSON line (Expecting value)" in _one_error_line(capsys)


def test_self_eval_with_a_malformed_combo_normalization_names_the_file_and_line_before_the_model(tmp_path, capsys):
    data, combo = rows_file(tmp_path / "in.jsonl"), tmp_path / "combo.json"
    combo.write_text('{"mean": [0.1,\n 0.2,,]}\n', encoding="utf-8")
    argv = ["self-eval", "--model", NO_MODEL, "--data", str(data), "--output", str(tmp_path / "out.jsonl")]
    assert main([*argv, "--combo-normalization", str(combo)]) == 2
    err = _one_error_line(capsys)
    assert f"{combo}:2: malformed JSON (Expecting value)" in err and NO_MODEL not in err


def test_the_prometheus_feedback_of_the_gpt4_judgment_data_names_the_file_and_line(tmp_path):
    from hf_critic.judgments import load_prometheus_feedback

    path = tmp_path / "prometheus" / "mt_bench_eval.json"
    path.parent.mkdir()
    path.write_text('[\n  {"instruction": "x",\n   "gpt4_score": [5}\n]\n', encoding="utf-8")
    with pytest.raises(RecordError, match=r"mt_bench_eval\.json:3: malformed JSON \(Expecting ',' delimiter\)$"):
        load_prometheus_feedback(tmp_path, "mt_bench")


def test_the_gpt4_judgment_data_script_says_bad_input_in_one_line(tmp_path, capsys):
    import importlib.util

    script = Path(__file__).resolve().parents[2] / "scripts" / "smollm2-135m" / "build_mtbench_data.py"
    spec = importlib.util.spec_from_file_location("build_mtbench_data", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bench = tmp_path / "selfeval" / "mt_bench"
    (bench / "model_judgment").mkdir(parents=True)
    (bench / "question.jsonl").write_text('{"question_id": 1, "category": "writing", "turns": ["Hi"]}\n{"q\n')
    argv = ["--data-dir", str(tmp_path), "--benchmarks", "mt_bench", "--output-dir", str(tmp_path / "out")]
    assert module.main(argv) == 2
    assert f"{bench / 'question.jsonl'}:2: malformed JSON line" in _one_error_line(capsys)


def test_read_json_names_the_file_and_line_of_every_way_a_json_file_is_bad(tmp_path):
    from hf_critic.io import json_line, read_json

    good = tmp_path / "good.json"
    good.write_bytes(b'\xef\xbb\xbf{"a": [1, 2]}')  # a byte-order mark is read past
    assert read_json(good) == {"a": [1, 2]}
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a":\n "\xff"}')
    with pytest.raises(RecordError, match=r"bad\.json:2: not UTF-8 text \(byte 0xff\)"):
        read_json(bad)
    with pytest.raises(RecordError, match=r"missing\.json: no such file$"):
        read_json(tmp_path / "missing.json")
    with pytest.raises(RecordError, match=r"f\.jsonl:7: malformed JSON line \(Expecting value\)$"):
        json_line("oops", "f.jsonl:7")


def test_a_malformed_verdict_distribution_in_a_critiques_file_is_bad_input_naming_the_column_and_value():
    from hf_critic.core.errors import BadInputError
    from hf_critic.core.schema import read_distribution
    from hf_critic.meta_eval.agreement import pairwise_agreement
    from hf_critic.selective.confidence import probability_confidence

    assert read_distribution('{"response_1": 0.75, "response_2": 0.25}') == {"response_1": 0.75, "response_2": 0.25}
    assert (
        read_distribution(None) is None and read_distribution(float("nan")) is None and read_distribution(" ") is None
    )
    with pytest.raises(BadInputError, match=r"""critique_distribution '\{"response_1": 0.7,': not JSON \(Expecting"""):
        pairwise_agreement([0, 1], [0, 1], two_way="on", distributions=['{"response_1": 0.7,', None])
    with pytest.raises(BadInputError, match=r"critique_distribution: a verdict distribution must be a JSON object"):
        probability_confidence("[0.5, 0.5]", 0)
