"""Training data from published judgments (AlpacaEval, Auto-J): loaders, swap, neutral names, decontamination, split.

Fixture rows are synthetic, shaped like the real files in ``../shared/data`` (``alpacaeval/*/<model>.json``,
``autoj/training/single_traindata.jsonl``); one test builds from the real files when they are present.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import datasets
import pytest

from hf_critic.formats import parse_output
from hf_critic.io import RecordError
from hf_critic.judgments import (
    PUBLISHED_CONFIGS,
    benchmark_questions,
    build_published_judgment_data,
    decontaminate,
    heldout_excludes,
    neutral_explanation,
    normalize_question,
    parse_exclude,
    published_outputs,
    render_published_card,
    save_published_judgment_data,
    verdict_text,
)
from hf_critic.loaders import load_alpacaeval, load_autoj_single, load_benchmark
from hf_critic.prompts import get_template

REPO_ROOT = Path(__file__).resolve().parents[2]
BASE = "gpt4_1106_preview"


def _cot(question, out1, out2, preference, explanation=None, names=None, ranks=None, model="model-x", **extra):
    """One ``alpaca_eval_cot_gpt4_turbo_fn`` annotation row as published."""
    row = {
        "instruction": question,
        "output_1": out1,
        "generator_1": BASE,
        "dataset": "helpful_base",
        "output_2": out2,
        "generator_2": model,
        "annotator": "alpaca_eval_cot_gpt4_turbo_fn",
        "preference": preference,
        "price_per_example": 0.01,
        "time_per_example": 2.0,
        "raw_completion": None,
    }
    if explanation is not None:
        row["raw_completion"] = {
            "concise_explanation": explanation,
            "ordered_models": [{"model": m, "rank": r} for m, r in (ranks or {}).items()],
        }
        row["referenced_models"] = names
    row.update(extra)
    return row


def _weighted(question, out1, out2, preference, model="model-y"):
    return {
        "instruction": question,
        "output_1": out1,
        "generator_1": BASE,
        "dataset": "oasst",
        "output_2": out2,
        "generator_2": model,
        "annotator": "weighted_alpaca_eval_gpt4_turbo",
        "preference": preference,
        "price_per_example": 0.008,
        "time_per_example": 0.4,
    }


M1 = {"M": "output_1", "m": "output_2"}  # Model M is output_1
M2 = {"m": "output_1", "M": "output_2"}  # Model M is output_2

COT_ROWS = [
    # 0: output_1 better; "Model M" / "Model m's response"
    _cot(
        "Name three primes.",
        "2, 3 and 5.",
        "4, 6, 8.",
        1.0,
        "Model M listed three primes. Model m's response listed even numbers, which are not prime.",
        M1,
        {"M": 1, "m": 2},
    ),
    # 1: output_2 better, names the other way round, quoted forms and a possessive through the closing quote
    _cot(
        "What is the capital of France?",
        "Lyon.",
        "Paris is the capital of France.",
        2,
        "Model 'M' is ranked first; model 'm' is wrong and lacks the accuracy of Model 'M's answer.",
        M2,
        {"M": 1, "m": 2},
    ),
    # 2: missing preference (AlpacaEval's None row): skipped, counted
    _cot("Explain TypeScript.", "TypeScript is typed JavaScript.", "", None),
    # 3: missing output: skipped, counted
    _cot("Explain duck typing.", "If it quacks...", None, 1.0),
    # 4: the baseline judged against itself: dropped by the build
    _cot("Say hi.", "Hi!", "Hi!", 1.5, model=BASE),
    # 5: the judge ranked both first, AlpacaEval published 1.0: a tie here
    _cot(
        "Give me a keyword.",
        "Which topic?",
        "What topic do you mean?",
        1,
        "Neither model provided keywords; both asked for more information, so they are ranked equally.",
        {"M": "output_2"},
        {"m": 1, "M": 1},
    ),
    # 6: Python-literal raw_completion with Output (a) / (b) names and no referenced_models
    _cot(
        "Translate 'chat' to English.",
        "cat",
        "chat",
        1.0,
        None,
        raw_completion="{'concise_explanation': 'Output (a) translates the word; Output (b) copies it.', "
        "'ordered_models': [{'model': 'a', 'rank': 1}, {'model': 'b', 'rank': 2}]}",
    ),
    # 7: an explanation naming a response by position only: kept as a preference, no critique
    _cot(
        "Write a haiku about rain.",
        "Rain taps the window / ...",
        "Rain.",
        1.0,
        "Model M wrote a haiku; the second response is one word.",
        M1,
        {"M": 1, "m": 2},
    ),
]
WEIGHTED_ROWS = [
    _weighted("Name three primes.", "2, 3 and 5.", "2, 3, 5", 1.2),
    _weighted("How tall is Everest?", "8,849 m.", "About 8.8 km, 8,849 m.", 1.9),
    _weighted("Is water wet?", "Depends on the definition.", "Sort of.", 1.5),
    _weighted("Say hi.", "Hi!", "Hi!", 1.4999),
]


def _autoj_rows():
    template = get_template("autoj", "pointwise_reference_free")
    items = [
        ("What is the meaning of life?", "42.", 2, "summarization"),
        ("Write a limerick about a cat.", "There once was a cat...", 6, "default"),
        ("How do I boil an egg?", "Put it in boiling water for 9 minutes.", 7, "seeking_advice"),
    ]
    rows = []
    for question, response, score, scenario in items:
        prompt = template.render({"question": question, "response": response})[-1]["content"]
        rows.append(
            {
                "usrmsg": prompt,
                "target_output": f"The response is short.\n\nRating: [[{score}]]",
                "pred_score": float(score),
                "scenario": scenario,
                "source_dataset": "chatbot_arena",
            }
        )
    return rows


@pytest.fixture
def data_dir(tmp_path):
    """A miniature ``shared/data`` with the three published sources."""
    root = tmp_path / "data"
    (root / "alpacaeval" / "cot_gpt4_turbo").mkdir(parents=True)
    (root / "alpacaeval" / "weighted_gpt4_turbo").mkdir(parents=True)
    (root / "autoj" / "training").mkdir(parents=True)
    (root / "alpacaeval" / "cot_gpt4_turbo" / "model-x.json").write_text(json.dumps(COT_ROWS))
    (root / "alpacaeval" / "weighted_gpt4_turbo" / "model-y.json").write_text(json.dumps(WEIGHTED_ROWS))
    lines = "".join(json.dumps(r) + "\n" for r in _autoj_rows())
    (root / "autoj" / "training" / "single_traindata.jsonl").write_text(lines)
    (root / "autoj" / "scenario_groups.json").write_text(
        json.dumps({"Summarization": ["summarization"], "General Communication": ["seeking_advice"]})
    )
    return root


# --- loaders -------------------------------------------------------------------------------------------------------


def test_load_alpacaeval_cot_labels_names_and_skipped_rows(data_dir):
    skipped = Counter()
    rows = list(load_alpacaeval(data_dir / "alpacaeval" / "cot_gpt4_turbo", skipped=skipped))
    assert dict(skipped) == {
        "missing preference": 1,
        "missing output_2": 1,
        "gpt-4 ranked both outputs first: labelled tie": 1,
    }
    assert [r["label"] for r in rows] == [0, 1, 2, 2, 0, 0]
    assert [r["preference"] for r in rows] == [0.0, 1.0, 0.5, 0.5, 0.0, 0.0]
    assert [r["gpt4_tie"] for r in rows] == [False, False, False, True, False, False]
    assert rows[3]["alpacaeval_preference"] == 1.0  # the published value is kept beside the tie
    assert json.loads(rows[0]["explanation_names"]) == {"M": 1, "m": 2}
    assert json.loads(rows[1]["explanation_names"]) == {"M": 2, "m": 1}
    assert json.loads(rows[3]["explanation_names"]) == {"M": 2, "m": 1}  # one-name mapping completed
    assert json.loads(rows[4]["explanation_names"]) == {"a": 1, "b": 2}  # Output (a) / (b), literal string parsed
    assert rows[4]["explanation"].startswith("Output (a) translates")
    assert rows[2]["explanation"] is None and rows[2]["explanation_names"] is None
    assert rows[0]["location"].endswith("model-x.json[0]") and rows[0]["model_2"] == "model-x"
    assert rows[0]["category"] == "helpful_base"


def test_load_alpacaeval_weighted_soft_preferences(data_dir):
    rows = load_alpacaeval(data_dir / "alpacaeval" / "weighted_gpt4_turbo")
    assert rows["preference"] == pytest.approx([0.2, 0.9, 0.5, 0.4999])
    assert rows["label"] == [0, 1, 2, 0]
    assert rows["explanation"] == [None] * 4
    assert len(load_benchmark("alpacaeval", data_dir / "alpacaeval" / "weighted_gpt4_turbo")) == 4


@pytest.mark.parametrize(
    "change, message",
    [
        ({"preference": 3.0}, r"bad\.json\[0\]: field 'preference' must be in \[1, 2\]"),
        ({"preference": "often"}, r"bad\.json\[0\]: field 'preference' must be a number"),
        ({"preference": 2.0}, r"bad\.json\[0\]: field 'preference' = 2.0 contradicts 'raw_completion'"),
        ({"raw_completion": "{'concise_explanation': "}, r"bad\.json\[0\]: field 'raw_completion' is not a dict"),
        ({"referenced_models": {"M": "output_3"}}, r"bad\.json\[0\]: field 'referenced_models' maps 'M'"),
    ],
)
def test_load_alpacaeval_bad_rows_name_file_item_and_field(tmp_path, change, message):
    row = {**COT_ROWS[0], **change}
    (tmp_path / "bad.json").write_text(json.dumps([row]))
    with pytest.raises(RecordError, match=message):
        load_alpacaeval(tmp_path / "bad.json")


def test_load_autoj_single_reads_prompt_score_and_group(data_dir):
    rows = load_autoj_single(data_dir / "autoj" / "training" / "single_traindata.jsonl")
    assert rows["question"][0] == "What is the meaning of life?" and rows["response"][0] == "42."
    assert rows["human_score"] == [2.0, 6.0, 7.0]
    assert rows["category"] == ["Summarization", "default", "General Communication"]  # default is in no group
    assert rows["critique"][1].endswith("Rating: [[6]]")
    assert rows["location"][2].endswith("single_traindata.jsonl:3")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"target_output": "Fine."}, r"bad\.jsonl:1: field 'target_output' has no 'Rating: \[\[n\]\]'"),
        ({"pred_score": 5.0}, r"bad\.jsonl:1: field 'pred_score' = 5.0 but the critique's rating is 2.0"),
        ({"usrmsg": "Grade this: 42."}, r"bad\.jsonl:1: field 'usrmsg' is not Auto-J's single-response prompt"),
        ({"target_output": "Rating: [[11]]"}, r"bad\.jsonl:1: field 'target_output' rates 11.0, outside"),
    ],
)
def test_load_autoj_single_bad_rows(tmp_path, change, message):
    (tmp_path / "bad.jsonl").write_text(json.dumps({**_autoj_rows()[0], **change}) + "\n")
    with pytest.raises(RecordError, match=message):
        load_autoj_single(tmp_path / "bad.jsonl")


# --- neutral names and verdicts --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, names, expected",
    [
        ("Model M is better than Model m.", {"M": 1, "m": 2}, "Response 1 is better than Response 2."),
        ("Model M is better than Model m.", {"M": 2, "m": 1}, "Response 2 is better than Response 1."),
        ("model 'm' beats Model \"M\".", {"M": 1, "m": 2}, "Response 2 beats Response 1."),
        ("It lacks the depth of model 'm's response.", {"M": 1, "m": 2}, "It lacks the depth of Response 2."),
        (
            "Therefore, 'm' is ranked higher than 'M'.",
            {"M": 2, "m": 1},
            "Therefore, Response 1 is ranked higher than Response 2.",
        ),
        ("Both models M and m erred.", {"M": 1, "m": 2}, "Both Response 1 and Response 2 erred."),
        ("The first model ('m') stays in character.", {"M": 1, "m": 2}, "Response 2 stays in character."),
        ("Model M's output is longer.", {"M": 2, "m": 1}, "Response 2 is longer."),
        ("Output (a) is correct; Output (b) is not.", {"a": 2, "b": 1}, "Response 2 is correct; Response 1 is not."),
        ("I'm sure Model M is right.", {"M": 1, "m": 2}, "I'm sure Response 1 is right."),
    ],
)
def test_neutral_explanation_rewrites_every_form(text, names, expected):
    assert neutral_explanation(text, names) == expected


def test_neutral_explanation_uses_the_template_names_and_refuses_what_it_cannot_rewrite():
    assert (
        neutral_explanation("Model m wins.", {"M": 1, "m": 2}, ("Assistant A", "Assistant B")) == "Assistant B wins."
    )
    with pytest.raises(ValueError, match="'second response'"):
        neutral_explanation("Model M wins; the second response is short.", {"M": 1, "m": 2})
    with pytest.raises(ValueError, match="names 'm'"):
        neutral_explanation("Model m wins.", {"M": 1})
    with pytest.raises(ValueError, match="'M'"):
        neutral_explanation("Both M and m are fine.", {"M": 1, "m": 2})


@pytest.mark.parametrize("family", ["autoj", "mtbench", "critiquellm_v2"])
def test_verdict_text_parses_back(family):
    output = get_template(family, "pairwise_reference_free").output
    for label in (0, 1, 2):
        text = "Response 1 is clearer.\n\n" + verdict_text(output, label)
        assert parse_output(text, output).label == label
    assert verdict_text(get_template("autoj", "pairwise_reference_free").output, 2) == "So, the final decision is Tie."
    rating = get_template("autoj", "pointwise_reference_free").output
    assert verdict_text(rating, 7.0) == "Rating: [[7]]" and parse_output("Ok.\n\nRating: [[7]]", rating).score == 7.0


# --- decontamination -------------------------------------------------------------------------------------------------


def test_normalize_question():
    assert normalize_question("  What's the   CAPITAL of France?! ") == "what s the capital of france"
    assert normalize_question("Hello,world") == normalize_question("hello, world") == "hello world"
    assert normalize_question("ＡＢＣ") == "abc"  # NFKC


def test_decontaminate_counts_exact_and_normalised_matches_per_benchmark():
    records = [
        {"question": "What is the capital of France?", "source": "a"},
        {"question": "what is the capital of france", "source": "a"},
        {"question": "What is the capital of France?", "source": "b"},
        {"question": "Name three primes.", "source": "b"},
        {"question": "Write a poem.", "source": "a"},
    ]
    benchmarks = {
        "bench1": ["What is the capital of France?", "Unrelated?"],
        "bench2": ["NAME three primes", "What is the capital of France ?"],
    }
    kept, stats = decontaminate(records, benchmarks)
    assert kept == [records[4]]
    assert stats["bench1"] == {
        "questions": 2,
        "dropped": 3,
        "exact": 2,
        "normalised": 1,
        "dropped_questions": 1,
        "by_source": {"a": 2, "b": 1},
        "questions_by_source": {"a": 1, "b": 1},
    }
    assert stats["bench2"]["dropped"] == 4 and stats["bench2"]["exact"] == 0 and stats["bench2"]["normalised"] == 4
    assert stats["bench2"]["dropped_questions"] == 2


def test_exclude_specs_and_benchmark_questions(tmp_path):
    assert parse_exclude("evalp=autoj:/x/test.jsonl") == ("evalp", "autoj", "/x/test.jsonl")
    assert parse_exclude("questions:examples/*.jsonl") == (
        "questions:examples/*.jsonl",
        "questions",
        "examples/*.jsonl",
    )
    for bad in ("nothing", "nope:/x", "autoj:"):
        with pytest.raises(ValueError, match="expected \\[NAME=\\]FORMAT:PATH"):
            parse_exclude(bad)
    with pytest.raises(ValueError, match="use questions:"):
        benchmark_questions("generic", "x.jsonl")
    pairs = tmp_path / "testdata_pairwise.jsonl"
    pairs.write_text(
        json.dumps({"scenario": "x", "label": 0, "prompt": "Q1?", "response 1": "a", "response 2": "b"}) + "\n"
    )
    assert benchmark_questions("autoj", str(pairs)) == ["Q1?"]
    (tmp_path / "a.jsonl").write_text(json.dumps({"question": "Qa"}) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"question": "Qb"}) + "\n" + json.dumps({"q": "x"}) + "\n")
    with pytest.raises(RecordError, match=r"b\.jsonl:2: field 'question' is missing"):
        benchmark_questions("questions", str(tmp_path / "*.jsonl"))
    examples = benchmark_questions("questions", str(REPO_ROOT / "examples" / "*.jsonl"))
    assert "What causes the seasons on Earth?" in examples  # every demo file, pointwise and pairwise alike


# --- the build ---------------------------------------------------------------------------------------------------------


def test_build_swaps_pairs_and_rewrites_names(data_dir):
    configs, report = build_published_judgment_data(data_dir, validation_fraction=0.0)
    assert set(configs) == set(PUBLISHED_CONFIGS)
    sft = configs["pairwise_reference_free"]["train"]
    by_id = {row["id"]: row for row in sft}
    first, swapped = (
        by_id["alpacaeval_cot_gpt4_turbo/model-x.json[1]"],
        by_id["alpacaeval_cot_gpt4_turbo/model-x.json[1]/swap"],
    )
    assert (first["label"], first["preference"], first["model_1"], first["model_2"]) == (1, 1.0, BASE, "model-x")
    assert (swapped["label"], swapped["preference"], swapped["model_1"], swapped["model_2"]) == (
        0,
        0.0,
        "model-x",
        BASE,
    )
    assert swapped["response_1"] == first["response_2"] == "Paris is the capital of France."
    # M is output_2 here: response 2 in the published order, response 1 after the swap
    assert first["explanation"] == (
        "Response 2 is ranked first; Response 1 is wrong and lacks the accuracy of Response 2."
    )
    assert swapped["explanation"] == (
        "Response 1 is ranked first; Response 2 is wrong and lacks the accuracy of Response 1."
    )
    assert first["critique"].endswith("\n\nSo, the final decision is Response 2.")
    assert swapped["critique"].endswith("\n\nSo, the final decision is Response 1.")
    template = get_template("autoj", "pairwise_reference_free")
    assert swapped["messages"][:-1] == template.render(swapped)
    assert swapped["messages"][-1] == {"role": "assistant", "content": swapped["critique"]}
    assert swapped["template"] == template.name
    tie = by_id["alpacaeval_cot_gpt4_turbo/model-x.json[5]/swap"]
    assert (tie["label"], tie["preference"], tie["gpt4_tie"]) == (2, 0.5, True)
    assert tie["critique"].endswith("So, the final decision is Tie.")
    literal = by_id["alpacaeval_cot_gpt4_turbo/model-x.json[6]/swap"]
    assert literal["explanation"] == "Response 2 translates the word; Response 1 copies it."
    for row in sft:  # every SFT target parses back to its label
        assert parse_output(row["critique"], template.output).label == row["label"]

    prefs = configs["pairwise_preference"]["train"]
    assert len(prefs) == 2 * (5 + 3) and len(sft) == 2 * 4  # 5 cot + 3 weighted kept; 4 cot with a critique
    weighted = [r for r in prefs if r["source"] == "alpacaeval_weighted_gpt4_turbo"]
    assert sorted((r["id"].rsplit("/", 1)[-1], r["preference"]) for r in weighted)[:2] == [
        ("model-y.json[0]", pytest.approx(0.2)),
        ("model-y.json[1]", pytest.approx(0.9)),
    ]
    assert {r["id"]: r["preference"] for r in weighted}["alpacaeval_weighted_gpt4_turbo/model-y.json[0]/swap"] == (
        pytest.approx(0.8)
    )
    assert all(r["critique"] is None and r["explanation"] is None for r in weighted)
    unresolved = [r for r in prefs if r["id"].startswith("alpacaeval_cot_gpt4_turbo/model-x.json[7]")]
    assert len(unresolved) == 2 and all(r["critique"] is None for r in unresolved)
    assert "messages" not in prefs.column_names

    point = configs["pointwise_reference_free"]["train"]
    assert point["score"] == [2.0, 6.0, 7.0] and point["explanation"][0] == "The response is short."
    assert point["messages"][0][0]["content"] == _autoj_rows()[0]["usrmsg"]

    cot = report.sources["alpacaeval_cot_gpt4_turbo"]
    assert cot["read"] == 8 and cot["kept"] == 5
    assert cot["skipped"] == {
        "identical responses (baseline judged against itself)": 1,
        "missing output_2": 1,
        "missing preference": 1,
    }
    assert cot["relabelled"] == {"gpt-4 ranked both outputs first: labelled tie": 1}
    assert cot["rows"] == {"pairwise_reference_free": 8, "pairwise_preference": 10}
    assert report.explanations["rewritten"] == 4 and report.explanations["unresolved"] == 1
    assert report.sources["alpacaeval_weighted_gpt4_turbo"]["skipped"] == {
        "identical responses (baseline judged against itself)": 1
    }


def test_build_without_swap_keeps_the_published_order(data_dir):
    configs, _ = build_published_judgment_data(data_dir, swap=False, validation_fraction=0.0)
    prefs = configs["pairwise_preference"]["train"]
    assert len(prefs) == 8 and not any(prefs["swapped"]) and set(prefs["model_1"]) == {BASE}


def test_build_decontaminates_per_benchmark(data_dir, tmp_path):
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"question": "name three PRIMES"}) + "\n")
    exclude = {"france": ["What is the capital of France?"], "life": ["what is the meaning of life"]}
    configs, report = build_published_judgment_data(
        data_dir,
        exclude=[
            f"primes=questions:{bench}",
            *(f"{k}=questions:{_write(tmp_path, k, v)}" for k, v in exclude.items()),
        ],
        validation_fraction=0.0,
    )
    d = report.decontamination
    assert (d["primes"]["dropped"], d["primes"]["exact"], d["primes"]["normalised"]) == (2, 0, 2)
    assert d["primes"]["by_source"] == {"alpacaeval_cot_gpt4_turbo": 1, "alpacaeval_weighted_gpt4_turbo": 1}
    assert (d["france"]["dropped"], d["france"]["exact"]) == (1, 1)
    assert (d["life"]["dropped"], d["life"]["normalised"], d["life"]["by_source"]) == (1, 1, {"autoj_single_train": 1})
    assert d["primes"]["format"] == "questions" and d["primes"]["questions"] == 1
    questions = {q for c in configs.values() for s in c.values() for q in s["question"]}
    assert not questions & {"Name three primes.", "What is the capital of France?", "What is the meaning of life?"}
    assert report.sources["autoj_single_train"]["decontaminated"] == 1
    summary = report.summary()
    assert "primes: 1 benchmark questions; dropped 2 examples (0 exact, 2 normalised)" in summary
    assert "autoj_single_train: 1 examples / 1 questions" in summary


def _write(folder: Path, name: str, questions) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"question": q}) + "\n" for q in questions))
    return path


def test_split_by_normalised_question_is_disjoint_and_seeded(tmp_path):
    root = tmp_path / "data"
    folder = root / "alpacaeval" / "weighted_gpt4_turbo"
    folder.mkdir(parents=True)
    rows = [_weighted(f"Question number {i}?", f"a{i}", f"b{i}", 1.3, model=m) for i in range(60) for m in "xy"]
    rows += [_weighted("QUESTION number 3", "c", "d", 1.7)]  # same normalised question as number 3
    folder.joinpath("m.json").write_text(json.dumps(rows))
    sources = ["alpacaeval_weighted_gpt4_turbo"]
    configs, report = build_published_judgment_data(root, sources=sources, seed=1)
    splits = configs["pairwise_preference"]
    keys = {s: {normalize_question(q) for q in splits[s]["question"]} for s in ("train", "validation")}
    assert not keys["train"] & keys["validation"]
    assert report.questions == {"train": 54, "validation": 6}
    assert len(splits["train"]) + len(splits["validation"]) == 2 * 121
    again, _ = build_published_judgment_data(root, sources=sources, seed=1)
    assert again["pairwise_preference"]["validation"]["id"] == splits["validation"]["id"]
    other, _ = build_published_judgment_data(root, sources=sources, seed=2)
    assert set(other["pairwise_preference"]["validation"]["question"]) != set(splits["validation"]["question"])


# --- saving, card, command ---------------------------------------------------------------------------------------------


def test_save_writes_configs_hub_folder_card_and_report(data_dir, tmp_path):
    configs, report = build_published_judgment_data(
        data_dir, exclude={"france": ["What is the capital of France?"]}, validation_fraction=0.5, seed=3
    )
    card = render_published_card(configs, report, repo_id="org/name")
    out = tmp_path / "out"
    written = save_published_judgment_data(configs, report, out, card=card)
    assert set(written) == {*PUBLISHED_CONFIGS, "hub", "report", *(f"validation_{c}" for c in PUBLISHED_CONFIGS[:2])}
    assert sorted(p.name for p in written.values()) == sorted(published_outputs())
    loaded = datasets.load_from_disk(str(out / "pairwise_reference_free"))
    assert {s: len(d) for s, d in loaded.items()} == report.rows["pairwise_reference_free"]
    hub = datasets.load_dataset(str(out / "hub"), "pairwise_preference")
    assert {s: len(d) for s, d in hub.items()} == report.rows["pairwise_preference"]
    text = (out / "hub" / "README.md").read_text()
    assert "license: other" in text and "config_name: pairwise_reference_free" in text
    assert "tatsu-lab/alpaca_eval" in text and "`cd543a1`" in text and "GAIR-NLP/auto-j" in text
    assert "| `france` | - | 1 | 1 | 1 | 0 | 1 | alpacaeval_cot_gpt4_turbo: 1 examples / 1 questions |" in text
    assert "| `alpacaeval_cot_gpt4_turbo` |" in text and "| 8 | 3 | 1 | 4 |" in text
    assert "CC BY-NC 4.0" in (out / "hub" / "LICENSE").read_text()
    saved = json.loads((out / "build_report.json").read_text())
    assert saved["decontamination"]["france"]["dropped"] == 1 and saved["rows"] == report.rows
    val = [json.loads(x) for x in (out / "validation_pairwise_reference_free.jsonl").read_text().splitlines()]
    assert len(val) == report.rows["pairwise_reference_free"]["validation"]
    assert all("messages" not in r and r["label"] in (0, 1, 2) for r in val)


def _script():
    path = REPO_ROOT / "scripts" / "smollm2-135m" / "build_judgment_data.py"
    spec = importlib.util.spec_from_file_location("build_judgment_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_command_prints_counts_and_refuses_to_push_offline(data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    script = _script()
    out = tmp_path / "out"
    bench = _write(tmp_path, "bench", ["What is the meaning of life?"])
    argv = ["--data-dir", str(data_dir), "--output-dir", str(out), "--validation-fraction", "0.6"]
    argv += ["--exclude", f"life=questions:{bench}"]  # 0.6 of 9 questions: every config has validation rows
    assert script.main([*argv, "--push-to-hub", "org/name"]) == 2
    captured = capsys.readouterr()
    assert "life: 1 benchmark questions; dropped 1 examples (1 exact, 0 normalised)" in captured.out
    assert "alpacaeval_cot_gpt4_turbo: read 8, skipped 3" in captured.out
    assert "questions per split:" in captured.out
    errors = captured.err.strip().splitlines()
    assert len(errors) == 1 and "not pushed to org/name" in errors[0] and "offline" in errors[0]
    assert (out / "hub" / "README.md").is_file() and (out / "pairwise_preference" / "dataset_dict.json").is_file()
    assert script.main(argv) == 2  # the output exists: --overwrite needed
    assert "--overwrite" in capsys.readouterr().err
    assert script.main([*argv, "--overwrite"]) == 0
    assert script.main([*argv[:4], "--exclude", "nope:/x", "--overwrite"]) == 2
    assert "expected [NAME=]FORMAT:PATH" in capsys.readouterr().err
    assert script.main([*argv, f"life=questions:{bench}", "--overwrite"]) == 2
    assert "the name 'life' is given twice" in capsys.readouterr().err


def test_heldout_excludes_name_the_held_out_benchmarks(tmp_path):
    specs = heldout_excludes(tmp_path, tmp_path / "examples" / "*.jsonl")
    assert [parse_exclude(s)[:2] for s in specs] == [
        ("autoj_eval_p", "autoj"),
        ("hhh", "prometheus"),
        ("mt_bench", "fastchat"),
        ("vicuna_bench", "fastchat"),
        ("examples", "questions"),
    ]


def test_real_data_build(shared_data):
    """The real files: source counts, about 61 Auto-J training queries in Eval-P, MT-Bench turns read."""
    mt = benchmark_questions("fastchat", str(shared_data / "selfeval" / "mt_bench"))
    assert len(set(mt)) == 160  # 80 questions x 2 turns
    configs, report = build_published_judgment_data(
        shared_data, exclude=[f"evalp=autoj:{shared_data / 'autoj' / 'test' / 'testdata_pairwise.jsonl'}"]
    )
    cot = report.sources["alpacaeval_cot_gpt4_turbo"]
    assert (cot["read"], cot["skipped"]["missing preference"], cot["relabelled"]) == (
        5676,
        1,
        {"gpt-4 ranked both outputs first: labelled tie": 9},
    )
    assert report.sources["alpacaeval_weighted_gpt4_turbo"]["read"] == 8511
    assert report.sources["autoj_single_train"]["read"] == 960
    evalp = report.decontamination["evalp"]
    assert 55 <= evalp["questions_by_source"]["autoj_single_train"] <= 70
    assert report.explanations["unresolved"] <= 10
    keys = {
        s: {normalize_question(q) for c in configs.values() for q in c[s]["question"]} for s in ("train", "validation")
    }
    assert not keys["train"] & keys["validation"]
