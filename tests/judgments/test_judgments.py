"""Critique SFT data from published GPT-4 judgments (MT-Bench / Vicuna-Bench, Prometheus), split by question."""

from __future__ import annotations

import json
from collections import Counter

import datasets
import pytest

from hf_critic.judgments import (
    build_judgment_sft_data,
    load_gpt4_single_judgments,
    load_prometheus_feedback,
    save_judgment_sft_data,
    split_by_question,
)
from hf_critic.parsing import parse
from hf_critic.prompts import get_template


def test_split_by_question_is_per_benchmark_and_reproducible():
    keys = [("a", i) for i in range(80)] + [("b", i) for i in range(40)] + [("a", 3)]
    split = split_by_question(keys, test_fraction=0.2, validation_fraction=0.1, seed=1)
    assert len(split) == 120
    counts = Counter((benchmark, s) for (benchmark, _), s in split.items())
    assert counts == {
        ("a", "test"): 16,
        ("a", "validation"): 8,
        ("a", "train"): 56,
        ("b", "test"): 8,
        ("b", "validation"): 4,
        ("b", "train"): 28,
    }
    assert split == split_by_question(reversed(keys), test_fraction=0.2, validation_fraction=0.1, seed=1)
    assert split != split_by_question(keys, test_fraction=0.2, validation_fraction=0.1, seed=2)
    with pytest.raises(ValueError):
        split_by_question(keys, test_fraction=0.6, validation_fraction=0.5)


@pytest.fixture(scope="module")
def built(shared_data):
    return build_judgment_sft_data(shared_data)


def test_gpt4_single_judgments_are_turn_one_with_exact_prompts(shared_data):
    records = load_gpt4_single_judgments(shared_data, "mt_bench")
    assert len(records) == 159  # 80 questions x 2 models, one judgment without a rating dropped
    by_prompt = Counter(r["judge_prompt"] for r in records)
    assert by_prompt == {"single-v1": 100, "single-math-v1": 59}
    for r in records:
        assert 1 <= r["score"] <= 10 and r["score"] == int(r["score"])
        parsed = parse(r["critique"], "score", (1.0, 10.0))  # the teacher's critique carries its own grade
        assert parsed.score == r["score"]
        assert (r["reference"] is not None) == (r["setting"] == "pointwise_referenced")
    assert len(load_gpt4_single_judgments(shared_data, "vicuna_bench")) == 160


def test_prometheus_feedback_one_record_per_run(shared_data):
    records = load_prometheus_feedback(shared_data, "vicuna_bench")
    assert len(records) == 960 and Counter(r["run"] for r in records) == {0: 320, 1: 320, 2: 320}
    first = records[0]
    assert first["critique"].endswith(f"[RESULT] {int(first['score'])}") and 1 <= first["score"] <= 5
    assert first["prompt"].endswith("###Feedback: ") and first["question"] in first["prompt"]
    assert first["rubric"].startswith("[") and "Score 5:" in first["rubric"]


def test_build_splits_by_question_with_sft_messages(built):
    configs, report = built
    assert report.rows == {
        "pointwise_referenced": {"train": 50, "validation": 13, "test": 16},
        "pointwise_reference_free": {"train": 174, "validation": 18, "test": 48},
        "prometheus_absolute": {"train": 1344, "validation": 192, "test": 384},
    }
    assert report.questions == {"test": 32, "train": 112, "validation": 16}
    assert dict(report.dropped) == {"gpt-4 gave no rating (score -1)": 1}
    seen: dict = {}
    for config, splits in configs.items():
        for split, rows in splits.items():
            for key in zip(rows["benchmark"], rows["question_id"], strict=True):
                assert seen.setdefault(key, split) == split, f"question {key} in {seen[key]} and {split} ({config})"
            for row in rows.select(range(3)):
                assert row["messages"][-1] == {"role": "assistant", "content": row["critique"]}
                if config != "prometheus_absolute":
                    template = get_template("mtbench", row["setting"])
                    assert row["messages"][:-1] == template.render(row)
                    assert row["template"] == template.name and row["template_version"] == template.version
    assert "reference" not in configs["pointwise_reference_free"]["train"].column_names
    assert len(set(configs["prometheus_absolute"]["train"]["id"])) == 1344


def test_save_writes_training_folders_and_cli_files(built, tmp_path):
    configs, _ = built
    written = save_judgment_sft_data(configs, tmp_path)
    assert {p.name for p in written} == {
        "pointwise_referenced",
        "pointwise_reference_free",
        "prometheus_absolute",
        "validation_pointwise_referenced.jsonl",
        "test_pointwise_referenced.jsonl",
        "validation_pointwise_reference_free.jsonl",
        "test_pointwise_reference_free.jsonl",
    }
    assert len(datasets.load_from_disk(str(tmp_path / "pointwise_referenced"))["test"]) == 16
    free = [json.loads(x) for x in (tmp_path / "test_pointwise_reference_free.jsonl").read_text().splitlines()]
    assert len(free) == 48 and all("reference" not in r and "messages" not in r and r["score"] >= 1 for r in free)
    ref = [json.loads(x) for x in (tmp_path / "test_pointwise_referenced.jsonl").read_text().splitlines()]
    assert len(ref) == 16 and all(r["reference"] for r in ref)
