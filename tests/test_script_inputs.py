"""Bad and edge inputs of the scripts and recipes around the critic, as a new user gives them.

Each case gets the correct figure, or exit status 2 with one line on stderr naming the file (and the row and field
where there is one), no traceback, and its input left byte for byte as it was. The scripts run in-process through
their ``main(argv)``: ``scripts/length_baseline.py``, ``scripts/show_verdicts.py``,
``scripts/eval_instruct/split_by_query.py`` and ``scripts/smollm2-135m/build_judgment_data.py``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import pytest

from tests.judgments import test_published_judgments as published

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = {
    "length_baseline": "scripts/length_baseline.py",
    "show_verdicts": "scripts/show_verdicts.py",
    "split_by_query": "scripts/eval_instruct/split_by_query.py",
    "build_judgment_data": "scripts/smollm2-135m/build_judgment_data.py",
}


@functools.cache
def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / SCRIPTS[name])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _snapshot(path: Path) -> dict[str, bytes | None]:
    """Every file under ``path`` (or ``path`` itself) and its bytes: an input must come out as it went in."""
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in sorted(path.rglob("*"))}


# --- the rows ------------------------------------------------------------------------------------------------------

# longer wins: right, wrong, a tie (never right), right -> agreement 50.00 over 4, two-way 66.67 over 3
PAIRS = [
    {"response_1": "a b c", "response_2": "a", "label": 0},
    {"response_1": "a", "response_2": "a b", "label": 0},
    {"response_1": "a", "response_2": "a b", "label": 2},
    {"response_1": "a", "response_2": "a b c d", "label": 1},
]
PAIRS_FIGURE = "longer response wins: first order agreement 50.00 over 4 pairs, two-way accuracy 66.67 over 3 pairs"
GRADED = [
    {"query_id": "1", "response": "a b c", "human_score": 9},
    {"query_id": "1", "response": "a", "human_score": 2},
    {"query_id": "2", "response": "a b c", "human_score": 1},
    {"query_id": "2", "response": "a", "human_score": 5},
]
GRADED_FIGURE = "length as the score: within-question accuracy 50.0% over 2 pairs"
# AlpacaEval's preference: 1.0 = output_1 better, 2.0 = output_2, 1.5 = tie; longer wins on the first two only
ALPACAEVAL = [
    {"instruction": "Q1", "output_1": "a b c", "output_2": "a", "preference": 1.0},
    {"instruction": "Q2", "output_1": "a", "output_2": "a b c", "preference": 2.0},
    {"instruction": "Q3", "output_1": "a", "output_2": "a b c", "preference": 1.5},
]
COMPARED = [  # right, wrong, unparsed (wrong), a gold tie (shown, not counted) -> 1 of 3
    {"id": "p1", "question": "Q1", "critique_label": 0, "label": 0, "critique_status": "ok"},
    {"id": "p2", "question": "Q2", "critique_label": 1, "label": 0, "critique_status": "ok"},
    {"id": "p3", "question": "Q3", "critique_label": None, "label": 1, "critique_status": "unparsed"},
    {"id": "p4", "question": "Q4", "critique_label": 2, "label": 2, "critique_status": "ok"},
]
GRADED_TWINS = [  # q1: good above bad (right); q2: good below bad (WRONG) -> 1 of 2
    {"id": "q1-good", "question": "Q1", "critique_score": 8.0, "critique_status": "ok"},
    {"id": "q1-bad", "question": "Q1", "critique_score": 3.0, "critique_status": "ok"},
    {"id": "q2-good", "question": "Q2", "critique_score": 2.0, "critique_status": "ok"},
    {"id": "q2-bad", "question": "Q2", "critique_score": 5.0, "critique_status": "ok"},
]


def _with(rows: list, i: int, **changes) -> list:
    """``rows`` with fields of row ``i`` set (``_without`` deletes one)."""
    return [{**row, **changes} if j == i else row for j, row in enumerate(rows)]


def _without(rows: list, i: int, name: str) -> list:
    return [{k: v for k, v in row.items() if k != name} if j == i else row for j, row in enumerate(rows)]


def _relabel(rows: list, labels: list) -> list:
    return [{**row, "label": label} for row, label in zip(rows, labels, strict=True)]


def _saved(path: Path, splits: dict[str, list | datasets.Dataset], shard_empty: bool = True) -> Path:
    """A ``save_to_disk`` DatasetDict; an empty split gets one shard, as Eval-Instruct saves it (without one it
    cannot be loaded back)."""
    parts = datasets.DatasetDict(
        {
            name: rows if isinstance(rows, datasets.Dataset) else datasets.Dataset.from_list(rows)
            for name, rows in splits.items()
        }
    )
    parts.save_to_disk(str(path), num_shards={n: 1 for n, p in parts.items() if not len(p)} if shard_empty else None)
    return path


def _eval_instruct(path: Path, queries: int = 5, shard_empty: bool = True, **configs: list) -> Path:
    """An Eval-Instruct ``dataset/``: a DatasetDict keyed by config, 2 rows per query unless ``configs`` says."""
    rows = [{"query_id": f"q{q}", "question": f"Q{q}", "critique": "c"} for q in range(queries) for _ in range(2)]
    built = {"pointwise_referenced": rows, "pairwise_reference_free": rows, **configs}
    features = datasets.Features({k: datasets.Value("string") for k in ("query_id", "question", "critique")})
    built = {
        c: datasets.Dataset.from_dict({k: [x[k] for x in r] for k in features}, features) for c, r in built.items()
    }
    return _saved(path, built, shard_empty=shard_empty)


def _published(root: Path, empty: bool = False) -> Path:
    """A miniature shared/data with the three published sources (none of their rows with ``empty``)."""
    cot, weighted = root / "alpacaeval" / "cot_gpt4_turbo", root / "alpacaeval" / "weighted_gpt4_turbo"
    _text(cot / "model-x.json", json.dumps([] if empty else published.COT_ROWS))
    _text(weighted / "model-y.json", json.dumps([] if empty else published.WEIGHTED_ROWS))
    _jsonl(root / "autoj" / "training" / "single_traindata.jsonl", [] if empty else published._autoj_rows())
    return root


# --- the cases -----------------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One input: ``make(tmp) -> (argv, the input to keep intact)``; ``error``: the exit-2 line's fragments (file,
    row, field), else ``out``: fragments of the correct output; ``usage``: an argparse error (usage, then a line)."""

    id: str
    script: str
    make: Callable[[Path], tuple[list[str], Path | None]]
    error: list[str] = field(default_factory=list)
    out: list[str] = field(default_factory=list)
    usage: bool = False


def _one(rows_or_text, name: str = "pairs.jsonl", *extra: str):
    """``make`` for a single input file: rows (JSONL) or raw text; ``extra`` arguments after the file."""

    def make(tmp: Path):
        path = tmp / name
        _text(path, rows_or_text) if isinstance(rows_or_text, str) else _jsonl(path, rows_or_text)
        return [str(path), *extra], path

    return make


def _lb_folder(tmp: Path):
    _jsonl(tmp / "runs" / "pairs.jsonl", PAIRS)
    _jsonl(tmp / "runs" / "graded.jsonl", GRADED)
    _text(tmp / "runs" / "notes.txt", "not data")
    return [str(tmp / "runs")], tmp / "runs"


def _parquet(rows: list, name: str):
    def make(tmp: Path):
        path = tmp / name
        datasets.Dataset.from_list(rows).to_parquet(str(path))
        return [str(path)], path

    return make


def _saved_case(splits: dict[str, list]):
    def make(tmp: Path):
        return [str(_saved(tmp / "saved", splits))], tmp / "saved"

    return make


def _alpacaeval(*extra: str):
    def make(tmp: Path):
        path = _text(tmp / "annotations.json", json.dumps(ALPACAEVAL))
        return [*extra, str(path)], path

    return make


def _latin1(tmp: Path):
    path = tmp / "pairs.jsonl"
    path.write_bytes(b'{"response_1": "caf\xe9"}\n')
    return [str(path)], path


def _empty_folder(tmp: Path):
    (tmp / "runs").mkdir()
    return [str(tmp / "runs")], tmp / "runs"


def _sv_folder(tmp: Path):
    _jsonl(tmp / "demo" / "pairwise.jsonl", COMPARED)
    _jsonl(tmp / "demo" / "pointwise.jsonl", GRADED_TWINS)
    return [str(tmp / "demo")], tmp / "demo"


LENGTH_BASELINE = [
    Case("help", "length_baseline", lambda tmp: (["--help"], None), out=["usage: length_baseline.py"]),
    Case("no argument", "length_baseline", lambda tmp: ([], None), error=["FILE"], usage=True),
    Case("missing file", "length_baseline", lambda tmp: ([str(tmp / "nope.jsonl")], None), error=["nope.jsonl"]),
    Case("empty file", "length_baseline", _one(""), error=["pairs.jsonl", "no rows"]),
    Case("blank lines only", "length_baseline", _one("\n \n"), error=["pairs.jsonl", "no rows"]),
    Case(
        "malformed JSONL line",
        "length_baseline",
        _one(json.dumps(PAIRS[0]) + "\n{bad\n"),
        error=["pairs.jsonl:2", "malformed JSON"],
    ),
    Case(
        "a row of another shape (graded row in a compare file)",
        "length_baseline",
        _one([*PAIRS[:2], GRADED[0]]),
        error=["pairs.jsonl:3", "'label'"],
    ),
    Case(
        "a row without response_2",
        "length_baseline",
        _one(_without(PAIRS, 2, "response_2")),
        error=["pairs.jsonl:3", "'response_2'"],
    ),
    Case(
        "a response that is a number",
        "length_baseline",
        _one(_with(PAIRS, 1, response_1=5)),
        error=["pairs.jsonl:2", "'response_1'"],
    ),
    Case(
        "string labels (label vocabulary)",
        "length_baseline",
        _one(_relabel(PAIRS, ["response_1", "Assistant 1", "tie", "[[B]]"])),
        out=[f"pairs.jsonl: {PAIRS_FIGURE}"],
    ),
    Case(
        "integral float labels 0.0 / 2.0 / 1.0",
        "length_baseline",
        _one(_relabel(PAIRS, [0.0, 0.0, 2.0, 1.0])),
        out=[f"pairs.jsonl: {PAIRS_FIGURE}"],
    ),
    Case(
        "an unknown string label",
        "length_baseline",
        _one(_with(PAIRS, 2, label="maybe")),
        error=["pairs.jsonl:3", "'label'", "maybe"],
    ),
    Case(
        "float label 1.5 (not int() to response 2)",
        "length_baseline",
        _one(_with(PAIRS, 2, label=1.5)),
        error=["pairs.jsonl:3", "'label'", "1.5"],
    ),
    Case(
        "float label 0.7 (not int() to response 1)",
        "length_baseline",
        _one(_with(PAIRS, 0, label=0.7)),
        error=["pairs.jsonl:1", "'label'", "0.7"],
    ),
    Case(
        "boolean label",
        "length_baseline",
        _one(_with(PAIRS, 1, label=True)),
        error=["pairs.jsonl:2", "'label'"],
    ),
    Case(
        "list label",
        "length_baseline",
        _one(_with(PAIRS, 1, label=[0])),
        error=["pairs.jsonl:2", "'label'"],
    ),
    Case(
        "a null label is left out and counted",
        "length_baseline",
        _one([*PAIRS, {"response_1": "a", "response_2": "b", "label": None}]),
        out=[f"pairs.jsonl: {PAIRS_FIGURE} (1 rows without a label left out)"],
    ),
    Case(
        "every label null",
        "length_baseline",
        _one(_relabel(PAIRS, [None] * 4)),
        error=["pairs.jsonl", "no row has a 'label'"],
    ),
    Case(
        "string human score",
        "length_baseline",
        _one(_with(GRADED, 1, human_score="high"), "graded.jsonl"),
        error=["graded.jsonl:2", "'human_score'", "high"],
    ),
    Case(
        "human score written as text '9'",
        "length_baseline",
        _one(_with(GRADED, 0, human_score="9"), "graded.jsonl"),
        out=[f"graded.jsonl: {GRADED_FIGURE}"],
    ),
    Case(
        "one graded row",
        "length_baseline",
        _one(GRADED[:1], "graded.jsonl"),
        error=["graded.jsonl", "needs two"],
    ),
    Case(
        "neither shape",
        "length_baseline",
        _one([{"x": 1}]),
        error=["pairs.jsonl:1", "neither compare rows"],
    ),
    Case("not UTF-8", "length_baseline", _latin1, error=["pairs.jsonl:1", "not UTF-8"]),
    Case(
        "unsupported file type",
        "length_baseline",
        _one("response_1,response_2", "pairs.txt"),
        error=["pairs.txt", "unsupported file type"],
    ),
    Case(
        "a folder of compare and grade files",
        "length_baseline",
        _lb_folder,
        out=[f"pairs.jsonl: {PAIRS_FIGURE}", f"graded.jsonl: {GRADED_FIGURE}"],
    ),
    Case("an empty folder", "length_baseline", _empty_folder, error=["runs", "no data files"]),
    Case(
        "a parquet file", "length_baseline", _parquet(PAIRS, "pairs.parquet"), out=[f"pairs.parquet: {PAIRS_FIGURE}"]
    ),
    Case(
        "a save_to_disk DatasetDict (one line per split)",
        "length_baseline",
        _saved_case({"train": PAIRS, "validation": GRADED}),
        out=[f"saved/train: {PAIRS_FIGURE}", f"saved/validation: {GRADED_FIGURE}"],
    ),
    Case(
        "a save_to_disk split with no rows",
        "length_baseline",
        _saved_case({"train": PAIRS, "validation": datasets.Dataset.from_list(PAIRS).select([])}),
        error=["saved/validation", "no rows"],
    ),
    Case(
        "AlpacaEval annotations without --format",
        "length_baseline",
        _alpacaeval(),
        error=["annotations.json[0]", "--format alpacaeval"],
    ),
    Case(
        "AlpacaEval --format alpacaeval: 1.5 is a tie",
        "length_baseline",
        _alpacaeval("--format", "alpacaeval"),
        out=[
            "annotations.json: longer response wins: first order agreement 66.67 over 3 pairs, "
            "two-way accuracy 100.00 over 2 pairs"
        ],
    ),
]

SHOW_VERDICTS = [
    Case("help", "show_verdicts", lambda tmp: (["--help"], None), out=["usage: show_verdicts.py"]),
    Case("no argument", "show_verdicts", lambda tmp: ([], None), error=["FILE"], usage=True),
    Case("missing file", "show_verdicts", lambda tmp: ([str(tmp / "nope.jsonl")], None), error=["nope.jsonl"]),
    Case("empty file", "show_verdicts", _one("", "demo.jsonl"), error=["demo.jsonl", "no rows"]),
    Case(
        "malformed JSONL line",
        "show_verdicts",
        _one(json.dumps(COMPARED[0]) + "\n[1, 2\n", "demo.jsonl"),
        error=["demo.jsonl:2", "malformed JSON"],
    ),
    Case(
        "a grade row in a compare file",
        "show_verdicts",
        _one([*COMPARED[:2], GRADED_TWINS[0]], "demo.jsonl"),
        error=["demo.jsonl:3", "'critique_label'"],
    ),
    Case(
        "compare rows",
        "show_verdicts",
        _one(COMPARED, "demo.jsonl"),
        out=["response 1   [ok]  Q1  right", "no verdict   [unparsed]  Q3  WRONG", "1 of 3 verdicts match"],
    ),
    Case(
        "string labels (label vocabulary)",
        "show_verdicts",
        _one(
            [
                {**COMPARED[0], "critique_label": "response_1", "label": "Assistant 1"},
                {**COMPARED[1], "critique_label": "[[B]]", "label": "A"},
                {**COMPARED[3], "critique_label": "tie", "label": "tie"},
            ],
            "demo.jsonl",
        ),
        out=["response 2   [ok]  Q2  WRONG", "tie          [ok]  Q4\n", "1 of 2 verdicts match"],
    ),
    Case(
        "an unknown critique_label",
        "show_verdicts",
        _one(_with(COMPARED, 1, critique_label=5), "demo.jsonl"),
        error=["demo.jsonl:2", "'critique_label'", "5"],
    ),
    Case(
        "float label 1.5",
        "show_verdicts",
        _one(_with(COMPARED, 0, label=1.5), "demo.jsonl"),
        error=["demo.jsonl:1", "'label'", "1.5"],
    ),
    Case(
        "grade rows (twins)",
        "show_verdicts",
        _one(GRADED_TWINS, "demo.jsonl"),
        out=["score 8.00   [ok]  Q1  good above its bad twin: right", "1 of 2 verdicts match"],
    ),
    Case(
        "score written as text '8'",
        "show_verdicts",
        _one(_with(GRADED_TWINS, 0, critique_score="8"), "demo.jsonl"),
        out=["score 8.00", "1 of 2 verdicts match"],
    ),
    Case(
        "a score that is no number",
        "show_verdicts",
        _one(_with(GRADED_TWINS, 2, critique_score="high"), "demo.jsonl"),
        error=["demo.jsonl:3", "'critique_score'", "high"],
    ),
    Case(
        "a verdict mass that is no number",
        "show_verdicts",
        _one(_with(COMPARED, 0, critique_verdict_mass="x"), "demo.jsonl"),
        error=["demo.jsonl:1", "'critique_verdict_mass'"],
    ),
    Case(
        "rows that are no critiques",
        "show_verdicts",
        _one(PAIRS, "demo.jsonl"),
        error=["demo.jsonl:1", "critique_score", "critique_label"],
    ),
    Case(
        "a folder of critique files",
        "show_verdicts",
        _sv_folder,
        out=["pairwise.jsonl\n", "pointwise.jsonl\n", "2 of 5 verdicts match"],
    ),
    Case("an empty folder", "show_verdicts", _empty_folder, error=["runs", "no data files"]),
    Case(
        "a parquet file",
        "show_verdicts",
        lambda tmp: _parquet(COMPARED, "demo.parquet")(tmp),
        out=["demo.parquet\n", "1 of 3 verdicts match"],
    ),
    Case(
        "a save_to_disk DatasetDict",
        "show_verdicts",
        _saved_case({"test": COMPARED}),
        out=["saved/test\n", "1 of 3 verdicts match"],
    ),
]


def _split(tmp: Path, *extra: str, output: Path | None = None, **dataset_kwargs):
    source = _eval_instruct(tmp / "eval" / "dataset", **dataset_kwargs)
    return [str(source), str(output or tmp / "data"), "--validation-fraction", "0.2", *extra], source


def _split_twice(*extra: str):
    """The output of a first run exists; the second run's input to keep intact is that output."""

    def make(tmp: Path):
        argv, _ = _split(tmp)
        assert _script("split_by_query").main(argv) == 0
        return [*argv, *extra], tmp / "data"

    return make


def _null_query_id(tmp: Path):
    rows = [{"query_id": "q0", "question": "Q", "critique": "c"}, {"query_id": None, "question": "Q", "critique": "c"}]
    return _split(tmp, pairwise_reference_free=rows)


def _zero_rows(shard_empty: bool):
    def make(tmp: Path):
        return _split(tmp, shard_empty=shard_empty, pairwise_referenced=[])

    return make


def _output_file(tmp: Path):
    argv, _ = _split(tmp, output=_text(tmp / "data", "a file"))
    return argv, tmp


def _output_is_input(tmp: Path):
    argv, source = _split(tmp, "--overwrite", output=tmp / "eval" / "dataset")
    return argv, source


def _output_in_input(tmp: Path):
    argv, source = _split(tmp, output=tmp / "eval" / "dataset" / "splits")
    return argv, source


def _overwritten(tmp: Path):
    argv, _ = _split_twice("--overwrite")(tmp)
    return argv, None


def _no_dataset(tmp: Path):
    path = _jsonl(tmp / "rows.jsonl", PAIRS)
    return [str(path), str(tmp / "data")], path


SPLIT_BY_QUERY = [
    Case("help", "split_by_query", lambda tmp: (["--help"], None), out=["usage:"]),
    Case("no argument", "split_by_query", lambda tmp: ([], None), error=["dataset"], usage=True),
    Case(
        "output equal to the input (even with --overwrite)",
        "split_by_query",
        _output_is_input,
        error=["output", "dataset", "is the input"],
    ),
    Case("output inside the input", "split_by_query", _output_in_input, error=["output", "splits", "is the input"]),
    Case(
        "an existing output without --overwrite",
        "split_by_query",
        _split_twice(),
        error=["output", "data", "--overwrite"],
    ),
    Case(
        "an existing output with --overwrite",
        "split_by_query",
        _overwritten,
        out=["pointwise_referenced: train 8, validation 2"],
    ),
    Case(
        "an empty train split (2 queries, validation 0.5 + test 0.49)",
        "split_by_query",
        lambda tmp: _split(tmp, "--validation-fraction", "0.5", "--test-fraction", "0.49", queries=2),
        error=["dataset", "split 'train' would be empty"],
    ),
    Case("a null query_id", "split_by_query", _null_query_id, error=["dataset", "row 1", "'query_id'"]),
    Case("an output that is a file", "split_by_query", _output_file, error=["output", "data", "is a file"]),
    Case(
        "a config with zero rows",
        "split_by_query",
        _zero_rows(shard_empty=True),
        error=["dataset", "pairwise_referenced", "no rows"],
    ),
    Case(
        "a config with zero rows saved without a shard",
        "split_by_query",
        _zero_rows(shard_empty=False),
        error=["dataset", "cannot be read"],
    ),
    Case("an input that is no dataset", "split_by_query", _no_dataset, error=["rows.jsonl"]),
    Case(
        "a validation fraction of 0",
        "split_by_query",
        lambda tmp: _split(tmp, "--validation-fraction", "0"),
        error=["dataset", "too few"],
    ),
    Case(
        "fractions summing to 1",
        "split_by_query",
        lambda tmp: _split(tmp, "--validation-fraction", "0.5", "--test-fraction", "0.5"),
        error=["dataset", "test_fraction + validation_fraction < 1"],
    ),
]


def _build(*extra: str, empty: bool = False):
    def make(tmp: Path):
        data = _published(tmp / "data", empty=empty)
        return ["--data-dir", str(data), "--output-dir", str(tmp / "out"), "--exclude", *extra], data

    return make


BUILD_JUDGMENT_DATA = [
    Case("an empty source (kept 0)", "build_judgment_data", _build(empty=True), error=["no example kept"]),
    Case(
        "--validation-fraction 0",
        "build_judgment_data",
        _build("--validation-fraction", "0"),
        error=["--validation-fraction 0.0"],
    ),
    Case(
        "--validation-fraction 1",
        "build_judgment_data",
        _build("--validation-fraction", "1"),
        error=["--validation-fraction 1.0"],
    ),
    Case(
        "a config whose validation split is empty",
        "build_judgment_data",
        _build(),
        error=["pointwise_reference_free", "split 'validation' is empty"],
    ),
    Case(
        "every config split",
        "build_judgment_data",
        _build("--validation-fraction", "0.4"),
        out=["pointwise_reference_free: {'train': 2, 'validation': 1}"],
    ),
]

CASES = LENGTH_BASELINE + SHOW_VERDICTS + SPLIT_BY_QUERY + BUILD_JUDGMENT_DATA


@pytest.mark.parametrize("case", CASES, ids=[f"{c.script}: {c.id}" for c in CASES])
def test_bad_and_edge_inputs(case: Case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, kept = case.make(tmp_path)
    before = _snapshot(kept) if kept is not None else None
    capsys.readouterr()  # what making the input printed (save_to_disk's progress bars)
    try:
        status = _script(case.script).main(argv)
    except SystemExit as done:  # argparse: --help, usage errors
        status = done.code
    captured = capsys.readouterr()
    if kept is not None:
        assert _snapshot(kept) == before, "the input changed"
    assert "Traceback" not in captured.err
    if case.error:
        assert status == 2, captured.out + captured.err
        lines = captured.err.strip().splitlines()
        if case.usage:  # argparse's usage, then one line
            assert lines[0].startswith("usage:") and ": error: " in lines[-1], captured.err
            lines = lines[-1:]
        assert len(lines) == 1, captured.err
        for fragment in case.error:
            assert fragment in lines[0], (fragment, lines[0])
        if case.script == "build_judgment_data":
            assert not (tmp_path / "out").exists()  # nothing written
    else:
        assert status in (0, None), captured.err
        for fragment in case.out:
            assert fragment in captured.out, (fragment, captured.out)
