"""The dev / test protocol: the committed split is the seeded one, by question and disjoint; a half
is written in the benchmark's own format; the figures and the dev score; the choice-making script reads dev halves
only (it refuses a test half, and no recipe that chooses names a test half)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from hf_critic.core.schema import query_id
from hf_critic.io import RecordError
from hf_critic.loaders import load_benchmark
from hf_critic.meta_eval.halves import (
    BENCHMARKS,
    dev_score,
    heldout_figures,
    load_split,
    make_split,
    training_facts,
    verdicts_of,
)
from hf_critic.reports.heldout_halves import write_half

REPO = Path(__file__).resolve().parents[2]
SPLITS = REPO / "scripts" / "smollm2-135m" / "splits"


def _select_critic():
    spec = importlib.util.spec_from_file_location("select_critic", REPO / "scripts/smollm2-135m/select_critic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_split_is_disjoint_and_by_question():
    split = load_split(SPLITS)
    assert set(split) == set(BENCHMARKS)
    for halves in split.values():
        assert halves["dev"] and halves["test"] and not set(halves["dev"]) & set(halves["test"])
        assert abs(len(halves["dev"]) - len(halves["test"])) <= 1
    assert len(split["mt_bench"]["dev"]) == 40 and len(split["hhh"]["dev"]) + len(split["hhh"]["test"]) == 102


def test_a_broken_split_file_is_refused(tmp_path):
    for name in BENCHMARKS:
        (tmp_path / f"{name}.json").write_text(json.dumps({"dev": ["a"], "test": ["b"]}))
    assert load_split(tmp_path)["hhh"] == {"dev": ["a"], "test": ["b"]}
    (tmp_path / "hhh.json").write_text(json.dumps({"dev": ["a"], "test": ["a"]}))
    with pytest.raises(RecordError, match="in both halves"):
        load_split(tmp_path)
    (tmp_path / "hhh.json").unlink()
    with pytest.raises(RecordError, match="no split file for hhh"):
        load_split(tmp_path)


def test_the_committed_split_is_the_seeded_one_and_halves_load(shared_data, tmp_path):
    assert make_split(shared_data, seed=0) == load_split(SPLITS)
    split = load_split(SPLITS)
    counts = write_half(shared_data, split, "dev", tmp_path)
    hhh = load_benchmark("prometheus", tmp_path / BENCHMARKS["hhh"][1])
    assert len(hhh) == counts["hhh"] > 0 and {query_id(q) for q in hhh["question"]} <= set(split["hhh"]["dev"])
    evalp = load_benchmark("autoj", tmp_path / BENCHMARKS["autoj_eval_p"][1])
    assert {query_id(q) for q in evalp["question"]} <= set(split["autoj_eval_p"]["dev"])
    mt = load_benchmark("fastchat", tmp_path / BENCHMARKS["mt_bench"][1])
    assert {str(q) for q in mt["query_id"]} == set(split["mt_bench"]["dev"]) and len(mt) == 80


def _folder(tmp_path: Path, half: str | None) -> Path:
    """A fake evaluate_heldout.sh output: the critic right on 3 of 4 pairs, length right on 2; graded rows."""
    folder = tmp_path / f"critic_{half}"
    folder.mkdir()
    pairs = [
        {"response_1": "a b c", "response_2": "a", "label": 0, "critique_label": 0},
        {"response_1": "a", "response_2": "a b c", "label": 0, "critique_label": 0},
        {"response_1": "a", "response_2": "a b c", "label": 1, "critique_label": 1},
        {"response_1": "a b c", "response_2": "a", "label": 1, "critique_label": 0},
    ]
    graded = [
        {"query_id": q, "response": "w " * n, "human_score": h, "critique_score": s}
        for q, n, h, s in [("1", 5, 8, 7.0), ("1", 2, 3, 4.0), ("2", 2, 9, 6.0), ("2", 6, 2, 5.0)]
    ]
    for name, rows in (("hhh", pairs), ("autoj", pairs), ("mt_bench", graded), ("mt_vicuna", graded)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if half:
        (folder / "half.txt").write_text(half + "\n")
    return folder


def test_figures_and_the_dev_score(tmp_path):
    figures = heldout_figures(_folder(tmp_path, "dev"))
    assert figures["hhh_two_way"] == {"critic": 75.0, "length": 50.0, "margin": 25.0, "n": 4}
    assert figures["mt_vicuna_within_question"]["critic"] == 100.0
    assert figures["mt_vicuna_within_question"]["length"] == 50.0
    assert figures["mt_bench_row_pearson"]["n"] == 4
    expected = sum(f["margin"] for f in figures.values()) / 4
    assert dev_score(figures) == pytest.approx(expected)


def test_hhh_two_way_reads_a_probability_critics_tie_as_hf_critic_does(tmp_path):
    """A probability read-out whose decided label is a tie still chooses between the two responses (the tie
    dropped, as hf-critic's two-way accuracy); a text tie counts half; an unparsed verdict counts as wrong."""
    folder = _folder(tmp_path, "dev")
    tie_r1 = json.dumps({"response_1": 0.3, "response_2": 0.1, "tie": 0.6})
    rows = [
        {"response_1": "a", "response_2": "a b", "label": 0, "critique_label": 2, "critique_distribution": tie_r1},
        {"response_1": "a", "response_2": "a b", "label": 1, "critique_label": 2, "critique_distribution": tie_r1},
        {"response_1": "a", "response_2": "a b", "label": 1, "critique_label": None, "critique_distribution": None},
        {"response_1": "a", "response_2": "a b", "label": 2, "critique_label": 2, "critique_distribution": tie_r1},
    ]
    (folder / "hhh.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert heldout_figures(folder)["hhh_two_way"]["critic"] == pytest.approx(100 / 3)  # right, wrong, unparsed
    text = [{**r, "critique_distribution": None} for r in rows[:2]]
    (folder / "hhh.jsonl").write_text("".join(json.dumps(r) + "\n" for r in text))
    assert heldout_figures(folder)["hhh_two_way"]["critic"] == 50.0  # two text ties: half each


def test_a_verdict_both_run_is_also_scored_on_its_written_critiques(tmp_path, capsys):
    """The written critique's parsed verdict (critique_text_*) is its own candidate: unparsed counts as wrong for a
    pair and leaves a graded row out; a folder without text verdicts refuses the text view."""
    folder = _folder(tmp_path, "dev")
    assert verdicts_of(folder) == ("run",)
    with pytest.raises(RecordError, match="no text verdicts"):
        heldout_figures(folder, "text")
    with pytest.raises(ValueError, match="verdict must be one of"):
        heldout_figures(folder, "reward")
    for name in ("hhh", "autoj"):
        rows = [json.loads(line) for line in (folder / f"{name}.jsonl").read_text().splitlines()]
        texts = [0, None, 0, 1]  # right, unparsed, wrong, right
        rows = [{**r, "critique_text_label": t} for r, t in zip(rows, texts, strict=True)]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("mt_bench", "mt_vicuna"):
        rows = [json.loads(line) for line in (folder / f"{name}.jsonl").read_text().splitlines()]
        rows = [{**r, "critique_text_score": t} for r, t in zip(rows, [3.0, 8.0, None, 1.0], strict=True)]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert verdicts_of(folder) == ("run", "text")
    text = heldout_figures(folder, "text")
    assert text["hhh_two_way"]["critic"] == 50.0 and text["eval_p_first_order"]["critic"] == 50.0
    assert heldout_figures(folder)["hhh_two_way"]["critic"] == 75.0  # the run's own verdict is unchanged
    assert text["mt_vicuna_within_question"] == {"critic": 0.0, "length": 100.0, "margin": -100.0, "n": 1}
    rows = _select_critic().dev_table([str(folder)])
    assert [r["critic"] for r in rows] == ["critic_dev", "critic_dev [text]"]
    spec = importlib.util.spec_from_file_location("report_halves", REPO / "scripts/smollm2-135m/report_halves.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    assert report.main([str(folder)]) == 0
    printed = capsys.readouterr().out
    score = {r["critic"]: f"{dev_score(r):+.2f}" for r in rows}
    assert f"| {folder} | dev | {score['critic_dev']} |" in printed
    assert f"| {folder} [text] | dev | {score['critic_dev [text]']} |" in printed
    assert score["critic_dev"] != score["critic_dev [text]"]


def test_the_choice_making_script_reads_dev_halves_only(tmp_path):
    select = _select_critic()
    rows = select.dev_table([str(_folder(tmp_path, "dev"))])
    assert rows[0]["critic"] == "critic_dev" and rows[0]["dev_score"] == pytest.approx(dev_score(rows[0]))
    with pytest.raises(RecordError, match="a test half; choices are made on dev halves only"):
        select.dev_table([str(_folder(tmp_path, "test"))])
    with pytest.raises(RecordError, match="no half.txt"):
        select.dev_table([str(_folder(tmp_path, None))])
    assert select.main([str(tmp_path / "critic_test")]) == 2


def test_the_dev_table_gives_each_trained_critics_cost(tmp_path, capsys):
    """Pairs or examples seen, training wall and per hour come from the judged model folder's trainer state."""
    model = tmp_path / "run"
    model.mkdir()
    history = [{"loss": 0.7, "step": 10}, {"train_runtime": 1800.0, "train_samples_per_second": 2.5, "step": 500}]
    (model / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    (tmp_path / "other").mkdir()
    trained, untrained = _folder(tmp_path, "dev"), _folder(tmp_path / "other", "dev")
    (trained / "model.txt").write_text(f"{model}\n")
    (untrained / "model.txt").write_text("default\n")
    assert training_facts(trained) == {"seen": 4500, "wall_s": 1800.0, "per_hour": 9000.0}
    assert training_facts(untrained) is None
    (model / "train_results.json").write_text(json.dumps({"train_samples": 1500, "epoch": 2.0}))
    assert training_facts(trained)["seen"] == 3000  # the recipe's rows x epochs, not the rounded rate
    (model / "train_results.json").unlink()
    assert _select_critic().main([str(trained), str(untrained)]) == 0
    table = capsys.readouterr().out
    assert "| 4,500 | 30 min | 9,000 |" in table and table.count("|  |  |  |") == 1


def test_no_choice_making_recipe_names_a_test_half():
    """Training recipes pick checkpoints on their own validation split, the ship choice reads dev folders: only the
    scripts that write or judge a half for the report (and the READMEs) may name the test half."""
    names_test = re.compile(
        r"heldout_halves/test|heldout_halves\.py\s+write\s+test|evaluate_heldout\.sh\s+\S+\s+\S+\s+test"
    )
    assert names_test.search("bash scripts/smollm2-135m/evaluate_heldout.sh M outputs/x test")  # the check can fail
    allowed = {"heldout_halves.py", "evaluate_heldout.sh", "README.md"}
    offenders = [
        str(path.relative_to(REPO))
        for folder in ("recipes", "scripts")
        for path in sorted((REPO / folder).rglob("*"))
        if path.is_file()
        and path.suffix in {".py", ".yaml", ".sh", ".md"}
        and path.name not in allowed
        and names_test.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
