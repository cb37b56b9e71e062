"""Meta-evaluation on anyone's data from the command line, and every input that used to be accepted silently.

One test (at least) per input that used to be accepted silently; most go through ``hf-critic meta-eval`` itself, on small
files written here in the shapes published benchmarks use (PandaLM's three annotators with 0 = tie, judge files with
their own field names and label words, critique-comparison files judged in one order per row).
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_critic.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]

ROWS = [  # PandaLM layout: annotators 0 = tie, 1 = response 1 better, 2 = response 2 better
    {
        "instruction": "Add the numbers.",
        "input": "2 and 3",
        "response1": "five",
        "response2": "six",
        "app": "math",
        "annotator1": 1,
        "annotator2": 1,
        "annotator3": 2,
    },
    {
        "instruction": "Name a colour.",
        "input": "",
        "response1": "blue",
        "response2": "seven",
        "app": "chat",
        "annotator1": 1,
        "annotator2": 1,
        "annotator3": 1,
    },
    {
        "instruction": "Translate 'chat'.",
        "input": "to English",
        "response1": "dog",
        "response2": "cat",
        "app": "chat",
        "annotator1": 2,
        "annotator2": 2,
        "annotator3": 0,
    },
    {
        "instruction": "Say hello.",
        "input": "",
        "response1": "hello",
        "response2": "hi",
        "app": "chat",
        "annotator1": 0,
        "annotator2": 1,
        "annotator3": 2,
    },  # a split vote: a tie by the documented rule
]
COLUMNS = r"question={instruction}\n\n{input},response_1=response1,response_2=response2,category=app"
GOLD = ["--label-columns", "annotator1,annotator2,annotator3", "--label-map", "0=tie,1=response_1,2=response_2"]
# The same pairs in the schema's own layout (gold = the annotators' majority), for the checks that need no new flag.
PLAIN = [
    {
        "question": r["instruction"],
        "response_1": r["response1"],
        "response_2": r["response2"],
        "category": r["app"],
        "label": label,
    }
    for r, label in zip(ROWS, (0, 0, 1, 2), strict=True)
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def _meta_eval(tmp_path, *args, benchmark=None, plain=False):
    """``hf-critic meta-eval`` on the PandaLM-layout rows (or, with ``plain``, on :data:`PLAIN` with no new flags)."""
    out = tmp_path / "report"
    bench = benchmark or _jsonl(tmp_path / "bench.jsonl", PLAIN if plain else ROWS)
    gold = [] if plain else ["--columns", COLUMNS, *GOLD]
    argv = ["meta-eval", "--benchmark", f"bench=generic:{bench}", "--task", "pairwise", *gold]
    code = main([*argv, *args, "--no-plots", "--output-dir", str(out), "--overwrite"])  # one folder, many runs
    report = json.loads((out / "report.json").read_text()) if code == 0 else None
    text = (out / "report.md").read_text() if code == 0 else None
    return code, report, text


def _load_generic(*args, **kwargs):
    from hf_critic.loaders import load_generic

    return load_generic(*args, **kwargs)


# -------------------------------------------------------------------------------------------- 1. columns, labels
def test_columns_join_fills_a_column_from_several(tmp_path):
    data = _load_generic(
        _jsonl(tmp_path / "b.jsonl", ROWS),
        task="pairwise",
        columns=COLUMNS + ",label=annotator1",
        label_map={"0": "tie", "1": "response_1", "2": "response_2"},
    )
    assert data["question"][0] == "Add the numbers.\n\n2 and 3"
    assert data["question"][1] == "Name a colour.\n\n"  # an empty input joins as empty text
    assert data["label"] == [0, 0, 1, 2]


def test_column_errors_name_the_source_column(tmp_path):
    rows = [dict(ROWS[0]), {**ROWS[1], "response1": 42}]
    with pytest.raises(ValueError, match=r"row 1, field 'response_1' \(column 'response1' of the data\): not text"):
        _load_generic(
            _jsonl(tmp_path / "b.jsonl", rows),
            task="pairwise",
            columns="question=instruction,response_1=response1,response_2=response2,label=annotator2",
        )
    rows = [dict(ROWS[0]), {**ROWS[1], "instruction": " "}]
    with pytest.raises(ValueError, match=r"row 1, field 'question' \(column 'instruction' of the data\): empty"):
        _load_generic(
            _jsonl(tmp_path / "d.jsonl", rows),
            task="pairwise",
            columns="question=instruction,response_1=response1,response_2=response2,label=annotator2",
        )
    with pytest.raises(ValueError, match=r"\['prompt'\] not found \(columns= question='\{prompt\}"):
        _load_generic(
            _jsonl(tmp_path / "c.jsonl", ROWS),
            task="pairwise",
            columns="question={prompt}!,response_1=response1,response_2=response2,label=annotator1",
        )


def test_label_map_string_keys_match_integer_labels_or_error(tmp_path):
    """0 = tie in the file must become a tie, not 'response 1' because the int 0 slipped past the key "0"."""
    path = _jsonl(tmp_path / "b.jsonl", ROWS)
    columns = "question=instruction,response_1=response1,response_2=response2,label=annotator3"
    pandalm = {"0": "tie", "1": "response_1", "2": "response_2"}
    assert _load_generic(path, task="pairwise", columns=columns, label_map=pandalm)["label"] == [1, 0, 2, 1]
    with pytest.raises(ValueError, match=r"row 2.*0 is not in the label map"):
        _load_generic(path, task="pairwise", columns=columns, label_map={"1": "response_1", "2": "response_2"})


def test_non_text_responses_are_an_error_unless_coerced(tmp_path):
    rows = [{**r, "response2": 7} for r in ROWS]
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": "tie"}] * 4)
    code, _, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", benchmark=_jsonl(tmp_path / "n.jsonl", rows))
    assert code == 2
    code, report, _ = _meta_eval(
        tmp_path, "--verdicts", f"j={verdicts}", "--coerce-text", benchmark=_jsonl(tmp_path / "n.jsonl", rows)
    )
    assert code == 0 and report["runs"][0]["n_rows"] == 4


def test_grade_and_compare_read_the_gold_convention_before_any_model_loads(tmp_path, capsys, monkeypatch):
    from hf_critic import critic

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(critic.Critic, "from_pretrained", no_load)
    data = _jsonl(tmp_path / "b.jsonl", ROWS)
    argv = ["compare", "--data", data, "--output", str(tmp_path / "o.jsonl"), "--columns", COLUMNS]
    assert main([*argv, "--label-columns", "annotator1,annotator2", "--label-map", "1=response_1,2=response_2"]) == 2
    assert "row 3, field 'annotator1': 0 is not in the label map" in capsys.readouterr().err


def test_several_annotators_majority_and_human_ceiling(tmp_path):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in ("A", "A", "B", "C")])
    code, report, text = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}")
    assert code == 0
    run = report["runs"][0]
    assert run["metrics"]["accuracy"] == 1.0  # gold: majority 0, 0, 1 and the split vote as a tie
    ceiling = run["ceiling"]
    assert ceiling["annotator1"]["agreement"] == 1.0 and ceiling["annotator2"]["agreement"] == 0.75
    assert ceiling["annotator3"]["agreement"] == 0.25 and ceiling["mean"]["agreement"] == pytest.approx(2 / 3)
    assert "## Human ceiling: bench (agreement with the majority (%))" in text
    assert "| annotator3 | 25.00 | 4 |" in text


# ------------------------------------------------------------------------------------------------ 2. verdict files
def test_verdicts_from_any_field_of_a_csv_with_its_own_label_words(tmp_path):
    verdicts = _csv(
        tmp_path / "v.csv", [{"id": i, "winner": w} for i, w in enumerate(["model_a", "model_a", "model_b", "tie"])]
    )
    code, report, _ = _meta_eval(
        tmp_path,
        "--verdicts",
        f"j={verdicts}:winner",
        "--verdict-label-map",
        "model_a=response_1,model_b=response_2,tie=tie",
    )
    assert code == 0 and report["runs"][0]["metrics"]["accuracy"] == 1.0


def test_free_text_verdicts_parsed_with_a_named_template(tmp_path):
    texts = ["A is right. [[A]]", "Blue is a colour. [[A]]", "no verdict here", "Both fine. [[C]]"]
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"judgement": t} for t in texts])
    code, report, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}:judgement", "--verdict-parser", "mtbench")
    assert code == 0
    metrics = report["runs"][0]["metrics"]
    assert metrics["n_unparsed"] == 1 and metrics["accuracy"] == 0.75  # unparsed counts as wrong


def test_a_verdict_that_is_no_text_for_the_parser_names_the_flag_on_the_command_line(tmp_path, capsys):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"judgement": "[[A]]"}, {"judgement": 3}, {"judgement": "[[B]]"}] * 2)
    capsys.readouterr()
    code, _, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}:judgement", "--verdict-parser", "mtbench")
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "field 'judgement' must be text for --verdict-parser (a verdict parser), got 3" in err


def test_order_column_maps_one_order_verdicts_back(tmp_path):
    """Each row judged in one order: with exchange = 1, 'A' (shown first) is the original response 2."""
    rows = [{"exchange": 0, "v": "A"}, {"exchange": 1, "v": "B"}, {"exchange": 1, "v": "A"}, {"exchange": 0, "v": "C"}]
    verdicts = _jsonl(tmp_path / "v.jsonl", rows)
    code, report, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}:v", "--order-column", "exchange")
    assert code == 0 and report["runs"][0]["metrics"]["accuracy"] == 1.0


@pytest.mark.parametrize("n_verdicts", [3, 5])
def test_verdict_file_of_another_length_is_an_error(tmp_path, capsys, n_verdicts):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": 0}] * n_verdicts)
    code, _, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", plain=True)
    assert code == 2 and f"{n_verdicts} verdicts for the 4 rows" in capsys.readouterr().err


def test_limit_with_verdicts_needs_limit_verdicts(tmp_path, capsys):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in (0, 0, 1, 2)])
    code, _, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", "--limit", "2", plain=True)
    assert code == 2 and "--limit-verdicts" in capsys.readouterr().err
    code, report, _ = _meta_eval(
        tmp_path, "--verdicts", f"j={verdicts}", "--limit", "2", "--limit-verdicts", plain=True
    )
    assert code == 0 and report["runs"][0]["n_rows"] == 2


# ------------------------------------------------------------------------------------------------ 3. unparsed policy
def test_unparsed_policy_is_applied_and_stated(tmp_path):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in (0, None, 1, None)])
    figures = {}
    for policy in ("wrong", "tie", "drop"):
        code, report, text = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", "--unparsed", policy, plain=True)
        assert code == 0 and f"(`--unparsed {policy}`)" in text.split("## ")[0]
        figures[policy] = report["runs"][0]["metrics"]["accuracy"]
    assert figures == {"wrong": 0.5, "tie": 0.75, "drop": 1.0}  # the 4th pair's gold label is a tie


# ---------------------------------------------------------------------------------------------- 4. reported figures
def test_win_tie_lose_and_macro_prf_with_class_counts_in_the_markdown(tmp_path):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in (0, 1, 1, 2)])
    code, report, text = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", plain=True)
    assert code == 0
    m = report["runs"][0]["metrics"]
    assert (m["win_rate"], m["tie_rate"], m["lose_rate"]) == (0.25, 0.25, 0.5)
    assert "| j | bench | 25.00 | 25.00 | 50.00 | 0.00 | 50.00 / 25.00 / 25.00 |" in text
    assert "| j | bench | 75.00 | 83.33 | 83.33 | 77.78 |" in text  # accuracy, macro P / R / F1
    assert "| j | bench | response_1 | 2 | 1 | 1 | 100.00 | 50.00 | 66.67 |" in text


def test_per_category_table_filled_without_swapped_verdicts(tmp_path):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in (0, 1, 1, 2)])
    code, _, text = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", plain=True)
    assert code == 0
    section = text.split("## Per category: bench")[1]
    assert "| math | 100.00 (1) |" in section and "| chat | 66.67 (3) |" in section


def test_per_system_means_and_ranks(tmp_path):
    rows = [
        {"question": f"q{q}", "response": "r", "model": m, "score": s, "critic": c}
        for q, (m, s, c) in enumerate([("x", 5, 9), ("y", 1, 2), ("x", 4, 8), ("y", 2, 5), ("z", 3, 1)])
    ]
    bench = _jsonl(tmp_path / "p.jsonl", rows)
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"score": r["critic"]} for r in rows])
    out = tmp_path / "report"
    code = main(
        [
            "meta-eval",
            "--benchmark",
            f"p=generic:{bench}",
            "--task",
            "pointwise",
            "--columns",
            "human_score=score,system_id=model",
            "--verdicts",
            f"j={verdicts}:score",
            "--no-plots",
            "--output-dir",
            str(out),
        ]
    )
    assert code == 0
    table = json.loads((out / "report.json").read_text())["runs"][0]["metrics"]["per_system"]
    assert table["x"] == {"n": 2, "critic_mean": 8.5, "human_mean": 4.5, "critic_rank": 1.0, "human_rank": 1.0}
    assert table["z"]["critic_rank"] == 3.0 and table["z"]["human_rank"] == 2.0
    assert "| y | 2 | 1.500 | 3.0 | 3.500 | 2.0 |" in (out / "report.md").read_text()


def test_bootstrap_intervals_on_the_headline_figures(tmp_path):
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in (0, 1, 1, 2)])
    code, report, text = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", "--bootstrap", "200", plain=True)
    assert code == 0
    m = report["runs"][0]["metrics"]
    for key in ("accuracy", "macro_f1", "win_rate"):  # four pairs: "n too small", never a zero-width "95%" interval
        assert m["ci"][key] == "n too small"
    assert "95% percentile bootstrap intervals over 200 resamples" in text and "[n too small]" in text
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in (0, 1, 1, 2) * 5])
    bench = _jsonl(tmp_path / "bench20.jsonl", PLAIN * 5)
    code, report, _ = _meta_eval(
        tmp_path, "--verdicts", f"j={verdicts}", "--bootstrap", "200", benchmark=bench, plain=True
    )
    m = report["runs"][0]["metrics"]
    for key in ("accuracy", "macro_f1", "win_rate"):
        low, high = m["ci"][key]
        assert low <= m[key] <= high


# -------------------------------------------------------------------------------------------------- 5. spreadsheets
def test_xlsx_annotator_sheet_loads_like_csv(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("openpyxl")
    path = tmp_path / "votes.xlsx"
    pd.DataFrame(ROWS).to_excel(path, index=False)
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"output": v} for v in ("A", "A", "B", "C")])
    code, report, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", benchmark=str(path))
    assert code == 0 and report["runs"][0]["metrics"]["accuracy"] == 1.0


# ------------------------------------------------------------------------------------------- 6. evaluate modules
@pytest.fixture(scope="module")
def modules():
    import evaluate

    return {
        name: evaluate.load(str(REPO_ROOT / "metrics" / name))
        for name in ("pairwise_agreement", "critique_correlation")
    }


@pytest.mark.parametrize(
    "predictions, message",
    [
        ([0, 1.7], r"predictions\[1\] = 1.7"),
        ([0.5, 1], r"predictions\[0\] = 0.5"),
        ([True, 1], r"predictions\[0\] = True"),
        ([0, "tie"], r"predictions\[1\] = 'tie' mixes strings and numbers"),
    ],
)
def test_pairwise_module_rejects_what_is_not_a_label(modules, predictions, message):
    with pytest.raises(ValueError, match=message):
        modules["pairwise_agreement"].compute(predictions=predictions, references=[0, 1])


def test_pairwise_module_nan_is_unparsed_and_empty_is_nan(modules):
    out = modules["pairwise_agreement"].compute(predictions=[0, float("nan")], references=[0, 1])
    assert out["n_unparsed"] == 1 and out["accuracy"] == 0.5
    empty = modules["pairwise_agreement"].compute(predictions=[], references=[])
    assert empty["n"] == 0 and math.isnan(empty["accuracy"])


def test_correlation_module_rejects_strings_and_booleans_and_names_query_ids(modules):
    module = modules["critique_correlation"]
    for bad in (["7", 1, 2], [True, 1.0, 2.0]):
        with pytest.raises(ValueError, match=r"predictions\[0\] is not a number"):
            module.compute(predictions=bad, references=[1, 2, 3])
    with pytest.raises(ValueError, match="query_ids"):
        module.compute(predictions=[1, 2, 3], references=[1, 2, 3], query_ids=["a", None, "b"])
    empty = module.compute(predictions=[], references=[])
    assert empty["n_rows"] == 0 and math.isnan(empty["text_pearson"])


def test_bare_name_load_after_install_prints_no_warning(tmp_path):
    script = (
        "import evaluate, subprocess, sys\n"
        "subprocess.run([sys.executable, '-m', 'hf_critic.cli', 'metrics', 'install'], check=True)\n"
        "print(evaluate.load('pairwise_agreement').compute(predictions=[0], references=[0])['n'])\n"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
        "HF_EVALUATE_CACHE": str(tmp_path / "evaluate"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "1"
    assert "couldn't be found locally" not in proc.stderr


# ---------------------------------------------------------------------------------------------- 7. zero rows, default
def test_limit_zero_is_an_error_before_any_model_loads(tmp_path, capsys, monkeypatch):
    from hf_critic import critic

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(critic.Critic, "from_pretrained", no_load)
    with pytest.raises(SystemExit):
        main(
            [
                "meta-eval",
                "--benchmark",
                f"generic:{_jsonl(tmp_path / 'b.jsonl', ROWS)}",
                "--task",
                "pairwise",
                "--limit",
                "0",
                "--output-dir",
                str(tmp_path / "o"),
            ]
        )
    assert "--limit: must be at least 1" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("question,response_1,response_2,label\n")
    code = main(
        ["meta-eval", "--benchmark", f"generic:{empty}", "--task", "pairwise", "--output-dir", str(tmp_path / "o")]
    )
    assert code == 2 and "no rows to judge" in capsys.readouterr().err


def test_default_critic_is_announced_before_it_loads(tmp_path, capsys, monkeypatch):
    from hf_critic import critic
    from hf_critic.core.errors import BadInputError

    def stop(*args, **kwargs):
        raise BadInputError("stopped before loading")  # a library refusal; a plain ValueError would be a bug

    monkeypatch.setattr(critic.Critic, "from_pretrained", stop)
    bench = _jsonl(tmp_path / "b.jsonl", [{"question": "q", "response_1": "a", "response_2": "b", "label": 0}])
    code = main(["meta-eval", "--benchmark", f"generic:{bench}", "--task", "pairwise", "--output-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 2 and "stopped before loading" in captured.err
    assert "embedded default critic smollm2-135m-instruct" in captured.out


# ------------------------------------------------------------------------------------------------- properties
_SPELLINGS = st.sampled_from(["tie", "response_1", "response_2", "Assistant 1", "Assistant 2", "A", "B", "C", "draw"])


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(
        st.one_of(st.integers(-5, 50), st.text("abcxyz_ ", min_size=1, max_size=6).filter(str.strip)),
        min_size=3,
        max_size=3,
        unique_by=lambda k: str(k).strip().lower(),
    ),
    codes=st.lists(st.integers(0, 2), max_size=40),
)
def test_label_maps_round_trip(keys, codes):
    """Write codes in a dataset's own convention, read them back through the map: the same codes."""
    from hf_critic.core.labels import normalize_labels
    from hf_critic.io import parse_label_map

    names = {0: "response_1", 1: "response_2", 2: "tie"}
    spec = ",".join(f"{str(k).strip()}={names[code]}" for code, k in enumerate(keys))
    label_map = parse_label_map(spec)
    assert label_map == {str(k).strip(): names[code] for code, k in enumerate(keys)}
    values = [keys[c] for c in codes] + [None]
    assert normalize_labels(values, label_map=label_map).tolist() == [*codes, -1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=60), st.integers(0, 10))
def test_bootstrap_interval_contains_the_estimate(pairs, seed):
    from hf_critic.meta_eval.agreement import pairwise_agreement
    from hf_critic.meta_eval.bootstrap import EXCLUDES_ESTIMATE, TOO_SMALL

    pred, ref = zip(*pairs, strict=True)
    out = pairwise_agreement(list(pred), list(ref), bootstrap=100, seed=seed)
    for key in ("accuracy", "macro_f1", "tie_rate"):  # an interval that holds the estimate, or a note saying why not
        if isinstance(out["ci"][key], str):
            assert out["ci"][key] in (TOO_SMALL, EXCLUDES_ESTIMATE) and (len(pairs) < 5) == (
                out["ci"][key] == TOO_SMALL
            )
            continue
        low, high = out["ci"][key]
        assert low - 1e-12 <= out[key] <= high + 1e-12


def test_bootstrap_interval_narrows_with_more_rows():
    from hf_critic.meta_eval.agreement import pairwise_agreement
    from hf_critic.meta_eval.correlation import critique_correlation

    rng = np.random.default_rng(0)
    widths = {}
    for n in (200, 5000):
        ref = rng.integers(0, 3, n)
        pred = np.where(rng.random(n) < 0.6, ref, rng.integers(0, 3, n))
        out = pairwise_agreement(pred, ref, pred, bootstrap=300)
        human = rng.integers(1, 6, n).astype(float)
        corr = critique_correlation(human + rng.normal(0, 2, n), human, query_ids=np.arange(n) // 5, bootstrap=300)
        widths[n] = [out["ci"][k][1] - out["ci"][k][0] for k in ("agreement", "macro_f1")]
        widths[n].append(corr["ci"]["text_pearson"][1] - corr["ci"]["text_pearson"][0])
    assert all(big < small / 3 for small, big in zip(widths[200], widths[5000], strict=True))


def test_a_verdict_files_id_column_matches_the_benchmarks_rows(tmp_path, capsys):
    """Verdicts are attached by id when both files have one, whatever the order; an id the file lacks is
    one line naming it."""
    bench = _jsonl(tmp_path / "bench.jsonl", [{"id": f"p{i}", **row} for i, row in enumerate(PLAIN)])
    right = [{"id": f"p{i}", "output": row["label"]} for i, row in enumerate(PLAIN)]
    verdicts = _jsonl(tmp_path / "v.jsonl", right[::-1])  # every verdict right, in reverse order
    code, report, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", benchmark=bench, plain=True)
    assert code == 0 and report["runs"][0]["metrics"]["accuracy"] == 1.0
    _jsonl(tmp_path / "v.jsonl", [*right[:3], {"id": "other", "output": 0}])
    code, _, _ = _meta_eval(tmp_path, "--verdicts", f"j={verdicts}", benchmark=bench, plain=True)
    assert code == 2 and "no verdict for 1 row(s) of bench (first: id 'p3')" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**PLAIN[0], "critique_label": "maybe"}, "row 0: critique_label = 'maybe' is not a pairwise label"),
        (
            {"question": "q", "response": "a", "human_score": 3, "critique_score": "high"},
            "row 0: critique_score 'high' is not a number",
        ),
    ],
)
def test_a_bad_verdict_in_a_critique_file_names_the_file_and_row(tmp_path, capsys, row, message):
    """'predictions[0] = ...' and 'could not convert string to float' named no file."""
    critiques = _jsonl(tmp_path / "c.jsonl", [row])
    code = main(["meta-eval", "--critiques", critiques, "--output-dir", str(tmp_path / "out"), "--no-plots"])
    assert code == 2 and f"{critiques}: {message}" in capsys.readouterr().err
