"""hf_critic.meta_eval.critic_figures, hf_critic.reports.meta_eval_report and `hf-critic meta-eval`: tables in the papers' layouts, JSON, plots, several critics."""

from __future__ import annotations

import argparse
import json
import math

import datasets
import pytest
from scipy import stats

from hf_critic.commands import meta_eval
from hf_critic.core import schema
from hf_critic.meta_eval import compare_critics, evaluate_critiques
from hf_critic.meta_eval.agreement import pairwise_agreement
from hf_critic.meta_eval.correlation import critique_correlation
from hf_critic.reports.critic_markdown import render_markdown
from hf_critic.reports.meta_eval_report import write_report

PNG = b"\x89PNG\r\n\x1a\n"


def pointwise_critiques(scores):
    return datasets.Dataset.from_dict(
        {
            "query_id": ["a", "a", "a", "b", "b", "b"],
            "system_id": ["x", "y", "z", "x", "y", "z"],
            "question": ["Qa"] * 3 + ["Qb"] * 3,
            "reference": ["R"] * 6,
            "response": ["1", "2", "3", "4", "5", "6"],
            "human_score": [1.0, 3.0, 5.0, 2.0, 2.0, 4.0],
            "category": ["math", "math", "math", "writing", "writing", "writing"],
            schema.CRITIQUE_SCORE: scores,
        }
    )


def pairwise_critiques():
    return datasets.Dataset.from_dict(
        {
            "question": ["Q"] * 4,
            "response_1": ["a"] * 4,
            "response_2": ["b"] * 4,
            "label": [0, 1, 2, 0],
            "category": ["c1", "c1", "c2", "c2"],
            schema.CRITIQUE_LABEL: [0, 1, None, 1],
            schema.CRITIQUE_LABEL_SWAPPED: [0, 0, 2, 1],
        }
    )


def test_evaluate_pointwise_run():
    data = pointwise_critiques([2.0, 6.0, 9.0, 3.0, None, 8.0])
    run = evaluate_critiques(data, "critic", "bench")
    direct = critique_correlation(
        data[schema.CRITIQUE_SCORE], data["human_score"], query_ids=data["query_id"], system_ids=data["system_id"]
    )
    assert run.metrics == direct
    assert run.task == "pointwise" and run.referenced and run.n_rows == 6
    assert run.n_unparsed == 1 and run.parse_failure_rate == pytest.approx(1 / 6)
    assert run.per_category["math"]["text_pearson"] == pytest.approx(stats.pearsonr([2, 6, 9], [1, 3, 5]).statistic)
    assert run.per_category["writing"]["n_queries_used"] == 1
    assert run.confusion["rows"] == ["1", "2", "3", "4", "5"]
    assert run.confusion["columns"] == ["2", "3", "6", "8", "9", "unparsed"]
    counts = {
        (r, c): v
        for r, row in zip(run.confusion["rows"], run.confusion["counts"], strict=True)
        for c, v in zip(run.confusion["columns"], row, strict=True)
        if v
    }
    assert counts == {("1", "2"): 1, ("3", "6"): 1, ("5", "9"): 1, ("2", "3"): 1, ("2", "unparsed"): 1, ("4", "8"): 1}


def test_evaluate_pairwise_run():
    data = pairwise_critiques()
    run = evaluate_critiques(data, "critic", "pairs")
    direct = pairwise_agreement(data[schema.CRITIQUE_LABEL], data["label"], data[schema.CRITIQUE_LABEL_SWAPPED])
    assert run.metrics == direct
    assert run.n_critiques == 8 and run.n_unparsed == 1 and not run.referenced
    assert run.per_category == {
        "c1": {"agreement": 0.5, "consistency": 0.5, "first_order_agreement": 1.0, "n": 2},
        "c2": {"agreement": 0.0, "consistency": 0.5, "first_order_agreement": 0.0, "n": 2},
    }
    assert run.confusion["counts"] == [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]]


def test_evaluate_rejects_non_critique_data():
    with pytest.raises(ValueError, match="not a critique file"):
        evaluate_critiques(datasets.Dataset.from_dict({"question": ["q"]}), "c", "d")
    with pytest.raises(ValueError, match="human score column 'gpt4' missing"):
        evaluate_critiques(pointwise_critiques([1.0] * 6), "c", "d", human_score="gpt4")


def test_markdown_layouts_side_by_side():
    runs = [
        evaluate_critiques(pointwise_critiques([2.0, 6.0, 9.0, 3.0, 3.0, 8.0]), "good", "bench"),
        evaluate_critiques(pointwise_critiques([9.0, 6.0, 2.0, 8.0, 3.0, 3.0]), "bad", "bench"),
        evaluate_critiques(pairwise_critiques(), "good", "pairs"),
    ]
    text = render_markdown(runs, title="T")
    assert "CritiqueLLM Table 2 layout" in text and "CritiqueLLM Table 3 layout" in text
    assert "| Critic | Text-level: bench (ref.) |  |  | System-level: bench (ref.) |  |  |" in text
    good = runs[0].metrics
    assert f"| good | {good['text_pearson']:.3f} | {good['text_spearman']:.3f} | {good['text_kendall']:.3f} |" in text
    assert "| good | 25.00 | 50.00 | 50.00 |" in text  # agreement, consistency, first-order in %
    assert "| bad |  |  |  |" in text  # no pairwise run for that critic
    assert "| good | pairs | pairwise | reference-free | 4 | 1 / 8 | 12.50 |" in text
    assert "## Per category: pairs (agreement / consistency (%))" in text


def test_write_report_files(tmp_path):
    runs = [
        evaluate_critiques(pointwise_critiques([2.0, 6.0, 9.0, 3.0, None, 8.0]), "critic", "bench"),
        evaluate_critiques(pairwise_critiques(), "critic", "pairs"),
    ]
    out = write_report(runs, tmp_path / "report", paired=compare_critics(runs))
    assert out["markdown"].read_text().startswith("# Meta-evaluation")
    payload = json.loads(out["json"].read_text())
    assert [r["dataset"] for r in payload["runs"]] == ["bench", "pairs"]
    assert payload["runs"][1]["metrics"]["agreement"] == 0.25
    assert payload["runs"][0]["parse_failure_rate"] == pytest.approx(1 / 6)
    names = sorted(p.name for p in out["plots"])
    assert names == [
        "confusion_critic_bench.png",
        "confusion_critic_pairs.png",
        "per_category_bench.png",
        "per_category_pairs.png",
        "risk_coverage.png",
    ]
    assert all(p.read_bytes().startswith(PNG) for p in out["plots"])
    assert "![per_category_bench](per_category_bench.png)" in out["markdown"].read_text()


def test_json_has_no_nan(tmp_path):
    run = evaluate_critiques(pointwise_critiques([5.0] * 6), "flat", "bench")  # constant: no correlation at all
    assert math.isnan(run.metrics["text_pearson"])
    out = write_report([run], tmp_path, plots=False, paired=compare_critics([run]))
    assert json.loads(out["json"].read_text())["runs"][0]["metrics"]["text_pearson"] is None
    assert "| flat | – | – | – |" in out["markdown"].read_text()


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def parse(argv):
    parser = argparse.ArgumentParser()
    meta_eval.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["meta-eval", *argv])


def test_cli_reads_critique_files_of_several_critics(tmp_path, capsys):
    for critic, scores in (("good", [2.0, 6.0, 9.0, 3.0, 3.0, 8.0]), ("bad", [9.0, 6.0, 2.0, 8.0, 3.0, 3.0])):
        (tmp_path / critic).mkdir()
        pointwise_critiques(scores).to_json(tmp_path / critic / "bench.jsonl", lines=True)
    pairwise_critiques().to_parquet(tmp_path / "pairs.parquet")
    args = parse(
        [
            "--critiques",
            str(tmp_path / "good" / "bench.jsonl"),
            "--critiques",
            str(tmp_path / "bad" / "bench.jsonl"),
            "--critiques",
            f"good/pairs={tmp_path / 'pairs.parquet'}",
            "--output-dir",
            str(tmp_path / "out"),
            "--no-plots",
        ]
    )
    assert args.func(args) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [(r["critic"], r["dataset"]) for r in report["runs"]] == [
        ("good", "bench"),
        ("bad", "bench"),
        ("good", "pairs"),
    ]
    assert "| good | 25.00 | 50.00 | 50.00 |" in capsys.readouterr().out


def test_cli_runs_a_critic_on_benchmarks(tmp_path, monkeypatch):
    """The wiring of a run: benchmark loaded, each critic judged through the protocol (pointwise rows, then pairs with
    swap=True), critiques saved."""
    from hf_critic import critic as critic_module
    from hf_critic.critics.protocol import Critiques

    calls = []

    class FakeCritic:
        stats = type("Stats", (), {"summary": lambda self: "all parsed"})()

        @classmethod
        def from_pretrained(cls, model=None, **kwargs):
            calls.append(("load", model, kwargs["decoding"].max_new_tokens))
            return cls()

        def judge(self, data, *, swap=False, source="data", referenced=None):
            if schema.RESPONSE_1 in data.column_names:
                calls.append(("compare", source, swap))
                columns = {schema.CRITIQUE_LABEL: data["label"], schema.CRITIQUE_LABEL_SWAPPED: data["label"]}
            else:
                calls.append(("grade", source, len(data)))
                columns = {schema.CRITIQUE_SCORE: [2.0 * s for s in data["human_score"]]}
            return Critiques(columns, None, calls=len(data), stats=self.stats)

    monkeypatch.setattr(critic_module, "Critic", FakeCritic)
    point = tmp_path / "p.jsonl"
    point.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {
                    "id": i,
                    "question": f"Q{i // 2}",
                    "response": "r",
                    "model": f"m{i % 2}",
                    "human_score": 1 + i % 3,
                    "category": "c",
                }
                for i in range(6)
            ]
        )
    )
    pair = tmp_path / "pairs.jsonl"
    pair.write_text(
        "".join(
            json.dumps({"scenario": "s", "label": i % 3, "prompt": "P", "response 1": "a", "response 2": "b"}) + "\n"
            for i in range(5)
        )
    )
    args = parse(
        [
            "--benchmark",
            f"ab=alignbench:{point}",
            "--benchmark",
            f"ej=autoj:{pair}",
            "--limit",
            "4",
            "--max-new-tokens",
            "32",
            "--no-cache",
            "--output-dir",
            str(tmp_path / "out"),
            "--no-plots",
        ]
    )
    assert args.func(args) == 0
    assert calls == [("load", None, 32), ("grade", "ab", 4), ("compare", "ej", True)]
    assert (tmp_path / "out" / "critiques" / "default-critic" / "ab.jsonl").is_file()
    runs = json.loads((tmp_path / "out" / "report.json").read_text())["runs"]
    assert runs[0]["metrics"]["text_pearson"] == pytest.approx(1.0)
    assert runs[1]["metrics"]["agreement"] == 1.0


def test_cli_errors():
    with pytest.raises(ValueError, match="nothing to evaluate"):
        args = parse(["--output-dir", "x"])
        args.func(args)
    with pytest.raises(ValueError, match="expected \\[NAME=\\]FORMAT:PATH"):
        meta_eval.parse_benchmark("mmlu:data.jsonl")


def test_cli_reproduces_autoj_from_published_verdicts(shared_data, tmp_path, capsys):
    root = shared_data / "autoj"
    args = parse(
        [
            "--benchmark",
            f"Auto-J Eval-P=autoj:{root / 'test' / 'testdata_pairwise.jsonl'}",
            "--verdicts",
            f"Auto-J-13B={root / 'outputs' / 'pairwise_example_output.jsonl'},"
            f"{root / 'outputs' / 'pairwise_exchange_example_output.jsonl'}",
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert args.func(args) == 0
    text = (tmp_path / "report.md").read_text()
    assert "| Auto-J-13B | 54.96 | 83.41 | 59.99 |" in text
    assert "| Summarization | 45.83 / 73.61 (72) |" in text and "| NLP Tasks | 57.58 / 86.36 (264) |" in text
    assert (tmp_path / "per_category_Auto-J_Eval-P.png").read_bytes().startswith(PNG)
