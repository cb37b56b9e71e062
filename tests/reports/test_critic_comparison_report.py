"""`hf-critic meta-eval` with several critics on the same rows: paired comparisons, baselines, agreement beyond chance,
length and position, PPI in report.md / report.json (hf_critic.meta_eval.critic_extras, hf_critic.reports.comparison_markdown)."""

from __future__ import annotations

import argparse
import json
import re

import datasets
import numpy as np
import pytest

from hf_critic.commands import meta_eval
from hf_critic.core import schema
from hf_critic.meta_eval import PPISpec, compare_critics, evaluate_critiques
from hf_critic.reports.meta_eval_report import write_report

N = 200


def pairwise_file(verdicts, seed=0, annotators=False):
    """200 pairs, no gold tie, the better response longer 70% of the time, one question per 2 pairs."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, N)
    longer_first = np.where(rng.random(N) < 0.7, gold == 0, gold == 1)
    short, long = ["word " * 5] * N, ["word " * 20] * N
    columns = {
        "question": [f"Q{i // 2}" for i in range(N)],
        "response_1": [lg if f else sh for lg, sh, f in zip(long, short, longer_first, strict=True)],
        "response_2": [sh if f else lg for lg, sh, f in zip(long, short, longer_first, strict=True)],
        "label": gold.tolist(),
        schema.CRITIQUE_LABEL: [int(v) for v in verdicts(gold, rng)],
    }
    if annotators:
        for k in range(3):
            columns[f"annotator{k}"] = np.where(rng.random(N) < 0.85, gold, 1 - gold).tolist()
    return datasets.Dataset.from_dict(columns)


def gold_critic(gold, rng):
    return gold


def random_critic(gold, rng):
    return rng.integers(0, 2, len(gold))


def test_report_compares_critics_on_the_same_rows(tmp_path):
    data = pairwise_file(gold_critic)
    longer = np.where([len(a) > len(b) for a, b in zip(data["response_1"], data["response_2"], strict=True)], 0, 1)
    longer_wins = float(np.mean(longer == np.asarray(data["label"])))
    runs = [
        evaluate_critiques(data, "oracle", "bench"),
        evaluate_critiques(pairwise_file(random_critic), "coin", "bench"),
    ]
    written = write_report(runs, tmp_path, plots=False, paired=compare_critics(runs, resamples=500))
    pairs = {(c["a"], c["b"]): c for c in written["paired"]}
    assert set(pairs) == {("oracle", "coin"), ("oracle", "longer wins"), ("coin", "longer wins")}
    first = pairs[("oracle", "coin")]["figures"]["first_order_agreement"]
    assert first["p_value"] < 0.01 and first["difference"] > 0.3
    assert pairs[("oracle", "coin")]["line"].startswith("oracle vs coin: oracle better than coin on first-order")
    text = (tmp_path / "report.md").read_text()
    assert "## Which critic is better? Paired comparisons on the same rows" in text
    assert "- bench: oracle vs coin: oracle better than coin on" in text
    assert "## Baselines on the same pairs" in text and f"| bench | longer wins | {100 * longer_wins:.2f} |" in text
    assert "## Length and position" in text
    # the report names its kappa (the two implementations differ on unparsed verdicts)
    assert (
        "Pairwise κ: Cohen's kappa (1960), unweighted, over all pairs with a gold label, an unparsed verdict" in text
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["paired"]) == 3 and "rows" not in report["runs"][0]
    baselines = report["runs"][0]["baselines"]
    assert baselines["longer_wins"]["first_order_agreement"] == pytest.approx(longer_wins)
    assert baselines["shorter_wins"]["first_order_agreement"] == pytest.approx(1 - longer_wins)
    assert report["runs"][0]["metrics"]["cohen_kappa"] == 1.0
    controlled = report["runs"][1]["length"]["length_controlled"]
    assert abs(controlled["critic_coefficient"]) < 3 * controlled["critic_se"]  # a coin says nothing about humans


def test_runs_on_other_rows_are_not_paired(tmp_path, caplog):
    other = pairwise_file(gold_critic, seed=1)
    other = other.map(lambda row: {"question": "other " + row["question"]})  # same gold, same answers, other pairs
    runs = [evaluate_critiques(pairwise_file(gold_critic), "a", "bench"), evaluate_critiques(other, "b", "bench")]
    with caplog.at_level("WARNING", logger="hf_critic.meta_eval.critic_extras"):
        paired = write_report(runs, tmp_path, plots=False, paired=compare_critics(runs, resamples=100))["paired"]
    assert {(c["a"], c["b"]) for c in paired} == {("a", "longer wins"), ("b", "longer wins")}
    assert "a vs b: 0 of 200 and 0 of 200 rows match by content" in caplog.text


def test_critics_are_paired_by_row_whatever_the_order(tmp_path, caplog):
    """The same pairs in another order keep the A-vs-B comparison, with the same figures; an ``id`` column
    pairs rows by id; rows only one run has are left out, counted and warned about."""

    def unique(dataset):  # each pair its own texts (the generated ones repeat)
        return dataset.map(
            lambda r, i: {"response_1": f"{r['response_1']}({i})", "response_2": f"{r['response_2']}({i})"},
            with_indices=True,
        )

    data, coin = unique(pairwise_file(gold_critic)), unique(pairwise_file(random_critic))
    order = np.random.default_rng(5).permutation(N)
    runs = [evaluate_critiques(data, "oracle", "bench"), evaluate_critiques(coin, "coin", "bench")]
    base = {
        (c["a"], c["b"]): c
        for c in write_report(runs, tmp_path / "a", plots=False, paired=compare_critics(runs, resamples=200))["paired"]
    }
    shuffled = [runs[0], evaluate_critiques(coin.select(order), "coin", "bench")]
    again = {
        (c["a"], c["b"]): c
        for c in write_report(shuffled, tmp_path / "b", plots=False, paired=compare_critics(shuffled, resamples=200))[
            "paired"
        ]
    }  # noqa: E501
    figure = "first_order_agreement"
    assert (
        again[("oracle", "coin")]["figures"][figure]["difference"]
        == base[("oracle", "coin")]["figures"][figure]["difference"]
    )  # noqa: E501
    assert (
        again[("oracle", "coin")]["figures"][figure]["p_value"]
        == base[("oracle", "coin")]["figures"][figure]["p_value"]
    )  # noqa: E501
    assert again[("oracle", "coin")]["line"].endswith("[200 rows matched by content]")
    # ids: the second file's ids name the rows, its texts stay the same; half its rows are other pairs
    ids = [f"pair-{i}" for i in range(N)]
    with_ids = data.add_column("id", ids)
    half = coin.select(order).add_column("id", [ids[i] if k < 100 else f"new-{i}" for k, i in enumerate(order)])
    with caplog.at_level("WARNING", logger="hf_critic.meta_eval.critic_extras"):
        runs = [evaluate_critiques(with_ids, "oracle", "bench"), evaluate_critiques(half, "coin", "bench")]
        paired = write_report(runs, tmp_path / "c", plots=False, paired=compare_critics(runs, resamples=200))["paired"]
    (entry,) = [c for c in paired if c["b"] == "coin"]
    assert entry["rows"] == 100 and entry["matched_by"] == "id" and entry["unmatched"] == [100, 100]
    assert re.search(
        r"\[100 rows matched by id; 100 of A's and 100 of B's rows unmatched \(A: ids 'pair-\d+', "
        r"'pair-\d+', 'pair-\d+', 'pair-\d+', 'pair-\d+' and 95 more; B: ids 'new-\d+', .* and 95 more\)\]$",
        entry["line"],
    )
    assert "oracle vs coin: 100 of 200 and 100 of 200 rows match by id" in caplog.text


def test_alpha_with_and_without_the_critic_and_ppi(tmp_path):
    data = pairwise_file(gold_critic, annotators=True)
    spec = PPISpec(fraction=0.2, seed=3)
    run = evaluate_critiques(data, "oracle", "bench", annotators=["annotator0", "annotator1", "annotator2"], ppi=spec)
    alpha = run.chance["alpha"]
    assert alpha["n_annotators"] == 3 and alpha["alpha_with_critic"] > alpha["alpha_annotators"]
    estimates = run.ppi["estimates"]["all"]
    truth = float(np.mean(np.asarray(data["label"]) == 0))
    assert estimates["all_rows"] == pytest.approx(truth) and estimates["n_labelled"] == 40
    ppi = estimates["ppi"]
    unlabelled = np.asarray(data["label"])[~np.isin(np.arange(200), np.flatnonzero(_labelled(spec)))]
    # A critic equal to the gold: no correction to make, the estimate is the unlabelled rows' gold mean.
    assert ppi["ppi"]["estimate"] == pytest.approx(float(np.mean(unlabelled == 0)))
    assert ppi["ppi"]["width"] < ppi["human_only"]["width"]
    text = (
        write_report([run], tmp_path, plots=False, paired=compare_critics([run], resamples=100))["markdown"]
    ).read_text()
    assert "## Human-corrected estimates (prediction-powered inference)" in text
    assert "## Agreement beyond chance: Krippendorff's α among the annotators" in text


def _labelled(spec):
    from hf_critic.meta_eval.ppi import draw_human_subset

    return draw_human_subset(N, spec.fraction, spec.seed)


def parse(argv):
    parser = argparse.ArgumentParser()
    meta_eval.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["meta-eval", *argv])


def test_cli_paired_report_and_ppi_flags(tmp_path, capsys):
    for name, critic in (("oracle", gold_critic), ("coin", random_critic)):
        pairwise_file(critic).to_json(tmp_path / f"{name}.jsonl", lines=True)
    argv = [
        "--critiques",
        f"oracle/bench={tmp_path / 'oracle.jsonl'}",
        "--critiques",
        f"coin/bench={tmp_path / 'coin.jsonl'}",
        "--output-dir",
        str(tmp_path / "out"),
        "--no-plots",
        "--paired-resamples",
        "300",
    ]
    args = parse([*argv, "--ppi", "--human-subset", "0.1"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "oracle vs coin: oracle better than coin on first-order agreement" in out
    assert "| oracle | bench | all | PPI |" in out
    with pytest.raises(ValueError, match="--ppi needs the human-labelled rows"):
        args = parse([*argv, "--ppi", "--overwrite"])
        args.func(args)
    with pytest.raises(ValueError, match="add --ppi"):
        args = parse([*argv, "--human-subset", "0.1", "--overwrite"])
        args.func(args)
    with pytest.raises(SystemExit):
        parse([*argv, "--ppi", "--human-subset", "1.5"])


def pointwise_file(noise, seed=0):
    """1,000 graded responses (125 questions x 8 systems), human 1-5, a critic 1-10 with ``noise``."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, 1000).astype(float)
    critic = np.clip(np.rint(2 * human + np.random.default_rng(seed + int(10 * noise)).normal(0, noise, 1000)), 1, 10)
    return datasets.Dataset.from_dict(
        {
            "query_id": (np.arange(1000) // 8).tolist(),
            "system_id": [f"s{k % 8}" for k in range(1000)],
            "question": [f"Q{k // 8}" for k in range(1000)],
            "response": ["w " * int(h * 10) for h in human],
            "human_score": human.tolist(),
            schema.CRITIQUE_SCORE: critic.tolist(),
        }
    )


def test_pointwise_report_pairs_critics_and_estimates_each_systems_mean(tmp_path):
    spec = PPISpec(fraction=0.2, seed=0)
    runs = [
        evaluate_critiques(pointwise_file(1.0), "sharp", "grades", ppi=spec),
        evaluate_critiques(pointwise_file(6.0), "blunt", "grades", ppi=spec),
    ]
    paired = write_report(runs, tmp_path, plots=False, paired=compare_critics(runs, resamples=300))["paired"]
    first = next(c for c in paired if (c["a"], c["b"]) == ("sharp", "blunt"))
    assert set(first["figures"]) == {"text_pearson", "pooled_pearson", "within_question_accuracy"}
    assert all(f["p_value"] < 0.01 and f["difference"] > 0 for f in first["figures"].values())
    assert first["line"].startswith("sharp vs blunt: sharp better than blunt on text-level Pearson")
    # Length here is the human score itself (10 words per point): length as score beats both critics.
    assert runs[0].baselines["length_as_score"]["within_question_accuracy"] == 1.0
    text = (tmp_path / "report.md").read_text()
    assert "Pointwise κ: quadratic-weighted (Cohen, 1968), the critic's scores binned to the gold's scale" in text
    estimates = runs[0].ppi["estimates"]
    assert set(estimates) == {"all", *(f"s{k}" for k in range(8))}
    tuned = estimates["all"]["ppi_tuned"]
    low, high = tuned["ppi"]["ci"]
    assert low <= estimates["all"]["all_rows"] <= high and tuned["width_ratio"] < 1
    assert 0 <= runs[0].metrics["quadratic_weighted_kappa"] <= 1
    assert "| sharp | grades | s0 | PPI++ |" in (tmp_path / "report.md").read_text()


def test_repeated_pairs_judged_by_several_annotators_are_all_matched():
    """The same pair judged by two annotators (another gold) is two rows: both are paired, by content and gold."""
    from hf_critic.meta_eval.critic_extras import match_rows, row_keys

    rows = [{"question": "q", "response_1": "a", "response_2": "b", "label": g} for g in (0, 1, 0)]
    a = datasets.Dataset.from_list(rows)
    b = datasets.Dataset.from_list(rows[::-1])
    keys_a, keys_b = row_keys(a), row_keys(b)
    index_a, index_b, how = match_rows({**keys_a, "references": [0, 1, 0]}, {**keys_b, "references": [0, 1, 0][::-1]})
    assert how == "content" and index_a.tolist() == [0, 1, 2] and sorted(index_b.tolist()) == [0, 1, 2]
    assert [rows[i]["label"] for i in index_a] == [rows[::-1][j]["label"] for j in index_b]  # same gold each pair
