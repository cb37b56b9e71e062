"""CriticBench: prompts byte for byte, verdict parsers, objective metrics on hand-computed fixtures, the sandbox."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from hf_critic.core.schema import ParseStatus
from hf_critic.criticbench.loaders import (
    load_criticbench,
    load_criticbench_predictions,
    strip_opencompass_wrapper,
)
from hf_critic.criticbench.prompts import CRITICBENCH_TASKS, get_criticbench_template
from hf_critic.criticbench.sandbox import run_python
from hf_critic.criticbench.scoring import (
    comparison_accuracy,
    comparison_consistency,
    consistency_by_task,
    correction_passed,
    extract_code,
    objective_scores,
    overall_objective,
    parse_math_answer,
    parse_rates,
    parse_verdict,
    spearman_x100,
)
from hf_critic.io import RecordError


@pytest.fixture(scope="module")
def shared_predictions(shared_data):
    folder = shared_data / "criticbench" / "deepseek-67b-chat-hf"
    if not folder.is_dir():
        pytest.skip(f"CriticBench predictions not found at {folder}")
    return load_criticbench_predictions(folder)


# ------------------------------------------------------------------------------------------------ templates
def _recover(template, message: str) -> dict[str, str] | None:
    """The field values that make ``template`` render ``message`` (a regex built from the template's texts)."""
    pieces = re.split(r"(\{\w+\})", template.body)
    pattern = "".join(f"(?P<{p[1:-1]}>.*)" if p.startswith("{") else re.escape(p) for p in pieces)
    match = re.fullmatch(re.escape(template.prefix) + pattern + re.escape(template.post), message, re.DOTALL)
    return match.groupdict() if match else None


def test_templates_reproduce_every_shared_prompt_byte_for_byte(shared_predictions):
    covered, failures = Counter(), []
    for row in shared_predictions:
        template = get_criticbench_template(row["dimension"], row["task"], row["evaluation"])
        fields = _recover(template, row["message"])
        if fields is None:
            failures.append(row["file"])
            continue
        assert set(fields) == set(template.fields)
        rendered = "User: " + template.render(fields) + "\n\nAssistant: "
        assert rendered.encode("utf-8") == row["origin_prompt"].encode("utf-8")
        covered[(template.variant, row["task"])] += 1
    assert not failures, Counter(failures)
    assert sum(covered.values()) == 6289
    # every task x dimension present in the shared files: 9 tasks x (feedback obj/sub, comparison obj/sub,
    # meta-feedback) + 9 corrections = 54 templates
    assert len(covered) == 54
    assert {task for _, task in covered} == set(CRITICBENCH_TASKS)


def test_template_render_names_missing_field():
    template = get_criticbench_template("comp_feedback", "code_exec", "obj")
    assert template.fields == ("question", "unit_test", "generation_a", "exec_rest_a", "generation_b", "exec_rest_b")
    with pytest.raises(KeyError, match="exec_rest_b"):
        template.render(
            {"question": "q", "unit_test": "u", "generation_a": "a", "exec_rest_a": "r", "generation_b": "b"}
        )
    with pytest.raises(ValueError, match="unknown CriticBench task"):
        get_criticbench_template("feedback", "poetry")


def test_strip_wrapper():
    assert strip_opencompass_wrapper("User: hi\n\nAssistant: ") == "hi"
    with pytest.raises(ValueError):
        strip_opencompass_wrapper("hi")


# ------------------------------------------------------------------------------------------------ parsers
@pytest.mark.parametrize(
    ("text", "kind", "status", "value"),
    [
        ("\n\nDecision: 5\n\nThe answer is fine.", "decision_score", ParseStatus.OK, 5.0),
        ("**Decision:** 6/7", "decision_score", ParseStatus.OK, 6.0),
        ("Decision: 3. The translation", "decision_score", ParseStatus.OK, 3.0),
        ("Decision: 9", "decision_score", ParseStatus.OUT_OF_RANGE, None),
        ("I would rate it 5.", "decision_score", ParseStatus.UNPARSED, None),  # no guess from a number in prose
        ("7", "decision_score", ParseStatus.OK, 7.0),  # the whole answer is the verdict
        ("1. Fluency: good", "decision_score", ParseStatus.UNPARSED, None),
        ("B.", "decision_option", ParseStatus.OK, 1),
        ("Score: 6.5", "score", ParseStatus.OK, 6.5),
        ("Score: 6`.", "score", ParseStatus.OK, 6.0),
        ("Score: Yes.", "score", ParseStatus.UNPARSED, None),
        ("Decision: A", "decision_option", ParseStatus.OK, 0),
        (" Decision: C.\n\nBoth are fine.", "decision_option", ParseStatus.OK, 2),
        ("decision: b", "decision_option", ParseStatus.UNPARSED, None),  # the options are capital letters
        ("\nDecision: A/B/C.", "decision_option", ParseStatus.UNPARSED, None),  # the instruction echoed
        ("Decision: A/C.", "decision_option", ParseStatus.UNPARSED, None),
        ("决策：B\n\n翻译B更好", "decision_option", ParseStatus.OK, 1),
        ("As an AI, answer A is better", "decision_option", ParseStatus.UNPARSED, None),
        ("so the total is $1,250.", "math_answer", ParseStatus.OK, 1250.0),
        ("no number here", "math_answer", ParseStatus.UNPARSED, None),
        ("", "text", ParseStatus.UNPARSED, None),
    ],
)
def test_parse_verdict(text, kind, status, value):
    parsed = parse_verdict(text, kind)
    assert parsed.status is status
    got = parsed.label if kind == "decision_option" else parsed.score
    assert got == value


def test_parse_math_answer_and_extract_code():
    assert parse_math_answer("x = 3/4") == 0.75
    assert parse_math_answer("The answer is 0.") == 0.0  # CriticEval skipped 0; an answer of 0 is an answer
    assert parse_math_answer({"Answer": "#### 72"}) == 72.0
    assert parse_math_answer(12) == 12.0
    assert extract_code("text\n```python\nprint(1)\n```\nmore ```python\nprint(2)\n```") == "print(1)\n"
    assert extract_code("def f():\n    return 1") == "def f():\n    return 1"
    assert extract_code("```\n```") is None
    assert extract_code("see ```bash\nls\n```") is None


def test_parse_rates_on_all_shared_predictions(shared_predictions):
    rates = parse_rates(shared_predictions)
    assert len(rates) == 156
    assert sum(r["n"] for r in rates) == 6289
    by_kind = Counter()
    for r in rates:
        by_kind[(r["kind"], "n")] += r["n"]
        by_kind[(r["kind"], "parsed")] += r["parsed"]
        assert r["parsed"] + r["unparsed"] + r["out_of_range"] == r["n"]
    assert (by_kind["decision_option", "n"], by_kind["decision_option", "parsed"]) == (1800, 1720)
    assert (by_kind["decision_score", "n"], by_kind["decision_score", "parsed"]) == (924, 919)
    assert (by_kind["score", "n"], by_kind["score", "parsed"]) == (742, 739)
    assert (by_kind["text", "n"], by_kind["text", "parsed"]) == (2459, 2459)


def test_consistency_of_shared_comparisons(shared_predictions):
    rows = consistency_by_task(shared_predictions)
    assert [r["task"] for r in rows if r["split"] == "dev"] == [*CRITICBENCH_TASKS, "all"]
    pooled = {r["split"]: r for r in rows if r["task"] == "all"}
    assert pooled["dev"]["n"] == pooled["test"]["n"] == 450
    for r in rows:
        assert 0 <= r["consistent"] <= r["both_parsed"] <= r["n"]


# ------------------------------------------------------------------------------------------------ metrics (maths)
def test_spearman_leaves_unparsed_out():
    result = spearman_x100([2, 1, 4, 3, None], [1, 2, 3, 4, 5], ["low", "low", "high", "high", "high"])
    assert result["spearman"] == pytest.approx(60.0)  # 1 - 6 * 4 / (4 * 15)
    assert (result["parsed"], result["unparsed"]) == (4, 1)
    assert result["by_group"]["low"]["spearman"] == pytest.approx(-100.0)
    assert result["by_group"]["high"]["parsed"] == 2


def test_comparison_accuracy_rules():
    # gold A, B, C; forward A, B, C; reverse (swapped terms) B, B, C
    result = comparison_accuracy([0, 1, 2], [1, 1, 2], [0, 1, 2])
    assert result["accuracy"] == pytest.approx(100 / 3)  # CriticEval: only pair 1 (letters differ, forward right)
    assert result["accuracy_strict"] == pytest.approx(200 / 3)  # mapped back: pairs 1 and 3 consistent and right
    assert comparison_accuracy([0, None], [1, 1], [0, 0])["accuracy"] == 50.0  # an unparsed order counts 0
    consistency = comparison_consistency([0, 1, 2, None, 0], [1, 1, 2, 0, 2])
    assert (consistency["both_parsed"], consistency["consistent"], consistency["same_letter"]) == (4, 2, 1)
    assert consistency["consistency"] == 50.0 and consistency["differ_rate"] == 50.0


def test_overall_objective():
    assert overall_objective(feedback=60, comparison=40, correction=70, meta_feedback=-20) == pytest.approx(
        (80 + 40 + 70 + 40) / 4
    )
    assert overall_objective(comparison=50) == 50
    with pytest.raises(ValueError):
        overall_objective()


# ------------------------------------------------------------------------------------------------ fixtures
def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _hub_fixture(root: Path) -> None:
    """A CriticBench folder in the Hub layout, test split, objective format: small and hand-checkable."""
    data = root / "obj_test_data"
    _write(
        data / "translate_feedback_correction.json",
        [
            {
                "question": f"src {i}",
                "generation": f"tr {i}",
                "feedback": "fb",
                "feedback_score": s,
                "metadata": {"quality": q},
            }
            for i, (s, q) in enumerate([(1, "low"), (2, "low"), (3, "high"), (4, "high")])
        ],
    )
    _write(
        data / "correction_part" / "translate_feedback.json",
        [{"question": "src 5", "generation": "tr 5", "feedback_score": 5, "metadata": {"quality": "high"}}],
    )
    _write(
        data / "translate_comp_feedback.json",
        [
            {
                "question": f"src {i}",
                "obj": {"generation_a": f"a{i}", "generation_b": f"b{i}", "preference": p},
                "metadata": {"quality_a_sub": "low", "quality_b_sub": "high"},
            }
            for i, p in enumerate(["ansA", "ansB", "C"])
        ],
    )
    _write(
        data / "math_cot_feedback_correction.json",
        [
            {
                "question": "q0",
                "generation": "r0",
                "feedback": "f0",
                "ground_truth_answer": "#### 72",
                "feedback_score": 2,
                "metadata": {"quality": "low"},
            },
            {
                "question": "q1",
                "generation": "r1",
                "feedback": "f1",
                "ground_truth_answer": "The answer is 5.",
                "feedback_score": 6,
                "metadata": {"quality": "med"},
            },
        ],
    )
    _write(
        data / "code_not_exec_feedback_correction.json",
        [
            {
                "question": "def add(a, b):",
                "generation": "def add(a, b): return a - b",
                "feedback": "wrong sign",
                "unit_test": "assert add(1, 2) == 3",
                "data_source": "mbpp",
                "feedback_score": 1,
                "metadata": {"quality": "low"},
            }
        ],
    )
    _write(
        data / "meta_feedback_single" / "meta_feedback_singlewise_translate.json",
        [
            {
                "question": f"src {i}",
                "generation": f"tr {i}",
                "ground_truth_feedback": "gt",
                "evaluated_feedback": f"ev {i}",
                "meta_feedback_score": s,
                "raw_quality": "low",
            }
            for i, s in enumerate([7, 4, 1])
        ],
    )


def _predictions_fixture(folder: Path) -> None:
    def items(*texts):
        return {str(i): {"origin_prompt": "User: m\n\nAssistant: ", "prediction": t} for i, t in enumerate(texts)}

    _write(
        folder / "test_translate_feedback_obj.json", items("Decision: 2", "Decision: 1", "Decision: 4", "Decision: 3")
    )
    _write(folder / "test_translate_feedback_obj_correction_part.json", items("I like it."))
    _write(folder / "test_translate_comp_feedback_obj.json", items("Decision: A", "Decision: B", "Decision: C"))
    _write(
        folder / "test_translate_comp_feedback_obj_reverse.json", items("Decision: B", "Decision: B", "Decision: C")
    )
    _write(folder / "test_math_cot_correction_obj.json", items("... so 70 + 2 = 72.", "The answer is 6"))
    _write(
        folder / "test_code_not_exec_correction_obj.json",
        items("Fixed:\n```python\ndef add(a, b):\n    return a + b\n```"),
    )
    _write(folder / "test_translate_meta_feedback_obj.json", items("Score: 6", "Score: 5", "Score: 2"))


def test_loader_reads_the_hub_layout(tmp_path):
    _hub_fixture(tmp_path)
    feedback = load_criticbench(tmp_path, "feedback")
    assert len(feedback) == 8  # translate 4 + its correction part 1, math_cot 2, code_not_exec 1
    assert feedback["part"][:6] == ["main"] * 4 + ["correction_part", "main"]
    assert feedback["prediction_file"][4] == "test_translate_feedback_obj_correction_part.json"
    assert feedback["human_score"] == [1.0, 2.0, 3.0, 4.0, 5.0, 2.0, 6.0, 1.0]
    assert feedback[0]["prompt"] == get_criticbench_template("feedback", "translate").render(
        {"question": "src 0", "generation": "tr 0"}
    )
    comparison = load_criticbench(tmp_path, "comp_feedback")
    assert comparison["label"] == [0, 1, 2]
    assert comparison["quality"] == ["easy"] * 3
    assert "### Translation A:\nb0\n### Translation B:\na0" in comparison[0]["prompt_reverse"]
    correction = load_criticbench(tmp_path, "correction")
    assert correction["task"] == ["math_cot", "math_cot", "code_not_exec"]
    assert correction["reference"][:2] == ["#### 72", "The answer is 5."]


def test_loader_errors_name_file_item_and_field(tmp_path):
    _write(
        tmp_path / "obj_test_data" / "qa_comp_feedback.json",
        [{"question": "q", "obj": {"generation_a": "a", "generation_b": "b", "preference": "neither"}}],
    )
    with pytest.raises(RecordError, match=r"qa_comp_feedback\.json\[0\].*'preference'"):
        load_criticbench(tmp_path, "comp_feedback")
    with pytest.raises(RecordError, match="no CriticBench feedback files"):
        load_criticbench(tmp_path, "feedback")


def test_objective_scores_match_hand_computed_values(tmp_path):
    _hub_fixture(tmp_path / "bench")
    _predictions_fixture(tmp_path / "preds")
    predictions = load_criticbench_predictions(tmp_path / "preds")
    subset = load_criticbench_predictions(tmp_path / "preds" / "test_translate_comp_*.json")  # a glob: some files
    assert sorted(set(subset["file"])) == [
        "test_translate_comp_feedback_obj.json",
        "test_translate_comp_feedback_obj_reverse.json",
    ]
    scores = objective_scores(predictions, tmp_path / "bench", "test", timeout=20)
    # feedback: (2, 1, 4, 3) vs (1, 2, 3, 4): rho = 0.6; the correction-part verdict is unparsed and left out
    assert scores["feedback"]["spearman"] == pytest.approx(60.0)
    assert (scores["feedback"]["parsed"], scores["feedback"]["unparsed"]) == (4, 1)
    assert scores["comparison"]["accuracy"] == pytest.approx(100 / 3)
    assert scores["comparison"]["accuracy_strict"] == pytest.approx(200 / 3)
    # correction: math_cot 72 == 72 but 6 != 5 -> 50; the corrected add() passes its assert -> 100
    assert scores["correction"]["by_task"]["math_cot"]["pass_rate"] == 50.0
    assert scores["correction"]["by_task"]["math_cot"]["reasons"] == {"passed": 1, "wrong answer": 1}
    assert scores["correction"]["by_task"]["code_not_exec"]["pass_rate"] == 100.0
    assert scores["correction"]["pass_rate"] == 75.0
    assert scores["meta_feedback"]["spearman"] == pytest.approx(100.0)
    assert scores["overall"] == pytest.approx((80 + 100 / 3 + 75 + 100) / 4)


def test_correction_code_failures(tmp_path):
    record = {"unit_test": "assert add(1, 2) == 3", "data_source": "mbpp"}
    assert correction_passed("```python\ndef add(a, b):\n    return a - b\n```", "code_exec", record)[1].startswith(
        "failed: AssertionError"
    )
    assert correction_passed("I cannot fix it. ```", "code_exec", record) == (False, "unparsed")
    humaneval = {"unit_test": "def check(candidate):\n    assert candidate(2) == 4\n", "data_source": "humaneval"}
    assert correction_passed("```python\ndef double(x):\n    return 2 * x\n```", "code_exec", humaneval) == (
        True,
        "passed",
    )
    pot = {"reference": "#### 12"}
    code = "```python\nclass Solution:\n    def solution(self):\n        return 3 * 4\n```"
    assert correction_passed(code, "math_pot", pot) == (True, "passed")
    assert correction_passed(code.replace("3 * 4", "3 * 5"), "math_pot", pot) == (False, "wrong answer")


# ------------------------------------------------------------------------------------------------ sandbox
def test_sandbox_runs_good_code_in_a_temp_dir():
    result = run_python("import os\nprint(os.getcwd())")
    assert result.passed and "hf-critic-sandbox-" in result.stdout


@pytest.mark.parametrize(
    "code",
    [
        "while True:\n    pass",
        "import os\nwhile True:\n    os.fork()",  # fork bomb
    ],
    ids=["infinite-loop", "fork-bomb"],
)
def test_sandbox_kills_runaway_code_within_its_timeout(code):
    start = time.monotonic()
    result = run_python(code, timeout=2)
    assert not result.passed and result.status in ("timeout", "failed")
    assert time.monotonic() - start < 2 + 3  # the timeout, plus start-up and the group kill


def test_sandbox_blocks_network_and_caps_memory():
    net = run_python("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)")
    assert net.status == "failed" and ("network access is disabled" in net.stderr or "Errno" in net.stderr)
    memory = run_python("x = bytearray(3 * 1024 ** 3)", memory_mb=512)
    assert memory.status == "failed" and "MemoryError" in memory.stderr
    with pytest.raises(ValueError):
        run_python("pass", timeout=0)


def test_sandbox_warns_and_records_when_only_the_audit_hook_isolates(monkeypatch, caplog):
    """Without a network namespace the run says so (a warning) and records it in every result."""
    from hf_critic.criticbench import sandbox

    for cached in (sandbox.isolation, sandbox.network_isolation):
        cached.cache_clear()
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)  # no `unshare` on this system
    try:
        with caplog.at_level("WARNING"):
            result = run_python("print('hi')")
        assert result.passed and result.isolation == sandbox.AUDIT_HOOK_ONLY
        assert "audit hook alone" in caplog.text
        net = run_python("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)")
        assert net.status == "failed" and "network access is disabled" in net.stderr
        assert caplog.text.count("audit hook alone") == 1  # once per process
    finally:
        for cached in (sandbox.isolation, sandbox.network_isolation):
            cached.cache_clear()
    assert run_python("pass").isolation == sandbox.isolation()


# ------------------------------------------------------------------------------------------------ command line
def test_meta_eval_scores_prediction_folders_against_the_gold(tmp_path, capsys):
    from hf_critic.cli import main

    _hub_fixture(tmp_path / "bench")
    _predictions_fixture(tmp_path / "preds")
    out = tmp_path / "out"
    code = main(
        [
            "meta-eval",
            "--benchmark",
            f"criticbench:{tmp_path / 'bench'}",
            "--predictions",
            f"mine={tmp_path / 'preds'}",
            "--output-dir",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads((out / "criticbench.json").read_text())
    assert list(report) == ["mine"]  # predictions given: no default critic ran
    assert report["mine"]["objective"]["test"]["overall"] == pytest.approx((80 + 100 / 3 + 75 + 100) / 4)
    markdown = (out / "criticbench.md").read_text()
    assert "| 60.0 | 33.3 | 66.7 | 75.0 | 100.0 | 72.1 |" in markdown
    assert "| test_translate_feedback_obj_correction_part.json | decision_score | 1 | 0 | 1 | 0 | 0.0 |" in markdown


def test_meta_eval_runs_a_critic_on_criticbench_prompts_and_resumes(tmp_path, tiny_model_dir, capsys):
    from hf_critic.cli import main

    _hub_fixture(tmp_path / "bench")
    argv = [
        "meta-eval",
        "--benchmark",
        f"cb=criticbench:{tmp_path / 'bench'}",
        "--model",
        str(tiny_model_dir),
        "--limit",
        "1",
        "--max-new-tokens",
        "4",
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--output-dir",
        str(tmp_path / "out"),
        "--no-progress",
    ]
    assert main(argv) == 0
    # first item of each objective file: feedback 4 files (translate, its correction part, math_cot, code_not_exec),
    # comparison 2 orders, correction 2, meta-feedback 1
    assert "9 answers, 0 from cache" in capsys.readouterr().out
    written = sorted(p.name for p in (tmp_path / "out" / "criticbench").rglob("*.json"))
    assert "test_translate_comp_feedback_obj_reverse.json" in written and len(written) == 9
    answers = load_criticbench_predictions(next((tmp_path / "out" / "criticbench").rglob("*.json")).parent)
    assert set(answers["index"]) == {0}
    assert main([*argv, "--overwrite"]) == 0  # the reports exist: replacing them is asked for
    assert "9 answers, 9 from cache" in capsys.readouterr().out


@pytest.mark.parametrize("with_model", [False, True])
def test_meta_eval_names_a_criticbench_path_that_does_not_exist(tmp_path, capsys, with_model):
    """A missing benchmark folder was a report without gold labels (exit 0), or a model load before any error."""
    from hf_critic.cli import main

    _predictions_fixture(tmp_path / "preds")
    missing = tmp_path / "no" / "such" / "dir"
    argv = ["meta-eval", "--benchmark", f"criticbench:{missing}", "--output-dir", str(tmp_path / "out")]
    argv += ["--model", str(tmp_path / "no-model")] if with_model else ["--predictions", f"mine={tmp_path / 'preds'}"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"hf-critic meta-eval: error: --benchmark criticbench:{missing}: no such folder or file"
        " (see docs/troubleshooting.md#meta-eval)"
    ]
    assert not (tmp_path / "out" / "criticbench.json").exists()


def test_meta_eval_predictions_without_gold_labels_report_parse_rates_only(tmp_path, capsys):
    """Predictions against a folder with no gold: parse rates and consistency (no gold needed), said on stderr."""
    import json

    from hf_critic.cli import main

    _predictions_fixture(tmp_path / "preds")
    argv = ["meta-eval", "--benchmark", f"criticbench:{tmp_path / 'preds'}", "--predictions", str(tmp_path / "preds")]
    assert main([*argv, "--output-dir", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--benchmark criticbench:{tmp_path / 'preds'} holds no gold labels" in err[0]
    assert "parse rates and comparison consistency only" in err[0]
    report = json.loads((tmp_path / "out" / "criticbench.json").read_text())["preds"]
    assert set(report) == {"parse_rates", "consistency"}  # no objective scores without gold
    assert sum(r["parsed"] for r in report["parse_rates"]) == 16
    assert report["consistency"][-1] == {**report["consistency"][-1], "task": "all", "n": 3, "consistent": 2}


def test_meta_eval_checks_verdict_files_before_writing_the_criticbench_report(tmp_path, capsys):
    """A verdict file that does not follow its benchmark was found after criticbench.md was written."""
    from hf_critic.cli import main

    _predictions_fixture(tmp_path / "preds")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"question": f"q{i}", "response_1": "a", "response_2": "b", "label": 0}) + "\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(json.dumps({"output": "A"}) + "\n", encoding="utf-8")  # one verdict for three rows
    argv = ["meta-eval", "--benchmark", f"criticbench:{tmp_path / 'preds'}", "--predictions", str(tmp_path / "preds")]
    argv += ["--benchmark", f"generic:{pairs}", "--task", "pairwise", "--verdicts", f"j={verdicts}"]
    assert main([*argv, "--output-dir", str(tmp_path / "out"), "--no-plots"]) == 2
    assert "1 verdicts for the 3 rows of pairs" in capsys.readouterr().err
    assert not (tmp_path / "out" / "criticbench.json").exists()
