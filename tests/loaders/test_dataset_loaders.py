"""hf_critic.loaders loaders: synthetic fixtures for the mapping and the errors, shared data for the real files."""

from __future__ import annotations

import json

import pytest

from hf_critic.core.schema import query_id
from hf_critic.io import RecordError
from hf_critic.loaders import (
    load_alignbench,
    load_autoj_eval_p,
    load_benchmark,
    load_fastchat,
    load_generic,
    load_prometheus,
    load_verdicts,
)


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------------
# AlignBench (CritiqueLLM format)
# --------------------------------------------------------------------------------------------------

POINTWISE = [
    {
        "id": 0,
        "category": "写作",
        "question": "Q1",
        "reference": "R1",
        "response": "A",
        "model": "m1",
        "human_score": 2,
    },
    {
        "id": 1,
        "category": "写作",
        "question": "Q1",
        "reference": "R1",
        "response": "B",
        "model": "m2",
        "human_score": 4.0,
    },
    {
        "id": 2,
        "category": "数学",
        "question": "Q2",
        "reference": "R2",
        "response": "",
        "model": "m1",
        "human_score": 1,
    },
]


def test_alignbench_pointwise_referenced(tmp_path):
    ds = load_alignbench(write_jsonl(tmp_path / "p.jsonl", POINTWISE))
    assert ds.column_names == [
        "query_id",
        "system_id",
        "question",
        "reference",
        "response",
        "human_score",
        "category",
        "id",
    ]
    assert ds["query_id"][0] == ds["query_id"][1] == query_id("Q1") != ds["query_id"][2]
    assert ds["system_id"] == ["m1", "m2", "m1"]
    assert ds["human_score"] == [2.0, 4.0, 1.0]
    assert ds["response"][2] == ""  # an empty answer is data, not an error
    assert ds["id"] == ["0", "1", "2"]


def test_alignbench_pairwise_reference_free(tmp_path):
    rows = [
        {
            "id": 0,
            "category": "c",
            "question": "Q",
            "response_1": "a",
            "response_2": "b",
            "human_score_1": 5,
            "human_score_2": 2,
            "label": 0,
        },
        {
            "id": 1,
            "category": "c",
            "question": "Q",
            "response_1": "a",
            "response_2": "b",
            "human_score_1": 3,
            "human_score_2": 3,
            "label": 2,
        },
    ]
    ds = load_alignbench(write_jsonl(tmp_path / "pair.jsonl", rows))
    assert "reference" not in ds.column_names and "system_id" not in ds.column_names
    assert ds["label"] == [0, 2] and ds["human_score_1"] == [5.0, 3.0]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"human_score": "high"}, r"p\.jsonl:2: field 'human_score' must be a number, got 'high'"),
        ({"question": ""}, r"p\.jsonl:2: field 'question' must be non-empty text"),
        ({"model": None}, r"p\.jsonl:2: field 'model' is missing"),
        ({"reference": None}, r"p\.jsonl:2: field 'reference' is missing here but present in the first row"),
        ({"response_1": "x"}, r"p\.jsonl:2: a pairwise row in a pointwise file"),
    ],
)
def test_alignbench_errors_name_file_line_and_field(tmp_path, change, message):
    rows = [dict(POINTWISE[0]), {**POINTWISE[1], **change}]
    with pytest.raises(RecordError, match=message):
        load_alignbench(write_jsonl(tmp_path / "p.jsonl", rows))


def test_alignbench_bad_label_and_malformed_line(tmp_path):
    row = {"id": 0, "question": "Q", "response_1": "a", "response_2": "b", "label": 3}
    with pytest.raises(RecordError, match=r"x\.jsonl:1: field 'label' must be 0, 1 or 2, got 3"):
        load_alignbench(write_jsonl(tmp_path / "x.jsonl", [row]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(POINTWISE[0]) + "\n{not json\n")
    with pytest.raises(RecordError, match=r"bad\.jsonl:2: malformed JSON line"):
        load_alignbench(bad)
    with pytest.raises(RecordError, match="no such file"):
        load_alignbench(tmp_path / "missing.jsonl")


# --------------------------------------------------------------------------------------------------
# Auto-J Eval-P
# --------------------------------------------------------------------------------------------------


def autoj_tree(tmp_path):
    rows = [
        {"scenario": "code_generation", "label": 1, "prompt": "P0", "response 1": "a", "response 2": "b"},
        {"scenario": "writing_email", "label": 2, "prompt": "P1", "response 1": "", "response 2": "d"},
    ]
    data = write_jsonl(tmp_path / "autoj" / "test" / "testdata_pairwise.jsonl", rows)
    (tmp_path / "autoj" / "scenario_groups.json").write_text(
        json.dumps({"Code": ["code_generation"], "Functional Writing": ["writing_email"]})
    )
    return data


def test_autoj_eval_p_with_groups_found_beside_the_data(tmp_path):
    ds = load_autoj_eval_p(autoj_tree(tmp_path))
    assert ds.column_names == ["query_id", "question", "response_1", "response_2", "label", "category", "scenario"]
    assert ds["query_id"] == ["0", "1"]
    assert ds["category"] == ["Code", "Functional Writing"]
    assert ds["label"] == [1, 2] and ds["response_1"][1] == ""


def test_autoj_eval_p_errors(tmp_path):
    data = autoj_tree(tmp_path)
    assert load_autoj_eval_p(data, scenario_groups={"Code": ["code_generation", "writing_email"]})["category"] == [
        "Code",
        "Code",
    ]
    with pytest.raises(RecordError, match=r"testdata_pairwise\.jsonl:2: field 'scenario' = 'writing_email' is in no"):
        load_autoj_eval_p(data, scenario_groups={"Code": ["code_generation"]})
    verdicts = write_jsonl(tmp_path / "v.jsonl", [{"output": 0}, {"output": None}, {"output": 2}])
    assert load_verdicts(verdicts) == [0, None, 2]
    with pytest.raises(RecordError, match=r"w\.jsonl:2: field 'output' must be 0, 1, 2 or null, got 'A'"):
        load_verdicts(write_jsonl(tmp_path / "w.jsonl", [{"output": 0}, {"output": "A"}]))


# --------------------------------------------------------------------------------------------------
# FastChat (MT-Bench / Vicuna-Bench)
# --------------------------------------------------------------------------------------------------

SINGLE = "[Question]\n{q}\n\n[The Start of Assistant's Answer]\n{a}\n[The End of Assistant's Answer]"
MULTI = (
    "<|The Start of Assistant A's Conversation with User|>\n\n### User:\n{q1}\n\n### Assistant A:\n{a1}\n\n"
    "### User:\n{q2}\n\n### Assistant A:\n{a2}\n\n<|The End of Assistant A's Conversation with User|>"
)


def fastchat_tree(tmp_path):
    root = tmp_path / "mt_bench"
    write_jsonl(
        root / "question.jsonl",
        [
            {"question_id": 1, "category": "writing", "turns": ["Write.", "Shorter."]},
            {"question_id": 2, "category": "math", "turns": ["1+1?", "2+2?"]},
        ],
    )
    write_jsonl(root / "reference_answer" / "gpt-4.jsonl", [{"question_id": 2, "choices": [{"turns": ["2", "4"]}]}])
    write_jsonl(
        root / "model_answer" / "m.jsonl",
        [
            {"question_id": 1, "choices": [{"turns": ["stale", "stale 2"]}]},
            {"question_id": 2, "choices": [{"turns": ["two", "four"]}]},
        ],
    )
    judgments = []
    for qid, (q1, q2), (a1, a2), (s1, s2) in [
        (1, ("Write.", "Shorter."), ("graded", "graded 2"), (7, -1)),
        (2, ("1+1?", "2+2?"), ("two", "four"), (10, 9)),
    ]:
        judgments.append(
            {
                "question_id": qid,
                "model": "m",
                "user_prompt": SINGLE.format(q=q1, a=a1),
                "judgment": f"ok [[{s1}]]",
                "score": s1,
                "turn": 1,
            }
        )
        judgments.append(
            {
                "question_id": qid,
                "model": "m",
                "user_prompt": MULTI.format(q1=q1, a1=a1, q2=q2, a2=a2),
                "judgment": "...",
                "score": s2,
                "turn": 2,
            }
        )
    write_jsonl(root / "model_judgment" / "gpt-4_single.jsonl", judgments)
    return root


def test_fastchat_turn_1_uses_the_judged_answers(tmp_path):
    ds = load_fastchat(fastchat_tree(tmp_path))
    assert ds.column_names == [
        "query_id",
        "system_id",
        "question",
        "response",
        "human_score",
        "category",
        "turn",
        "judgment",
    ]
    assert ds["query_id"] == ["1", "2"] and ds["system_id"] == ["m", "m"]
    assert ds["response"] == ["graded", "two"]  # from the judge prompt, not the stale answer file
    assert ds["human_score"] == [7.0, 10.0]
    assert load_fastchat(fastchat_tree(tmp_path), answers="model_answer")["response"] == ["stale", "two"]


def test_fastchat_turn_2_and_references(tmp_path):
    root = fastchat_tree(tmp_path)
    ds = load_fastchat(root, turn=2)
    assert ds["question"][0] == "### User:\nWrite.\n\n### Assistant:\ngraded\n\n### User:\nShorter."
    assert ds["response"] == ["graded 2", "four"]
    assert ds["human_score"] == [None, 9.0]  # FastChat's -1 (unparsed judge rating) is not a grade
    ref = load_fastchat(root, turn=2, with_reference=True)
    assert ref["query_id"] == ["2"] and ref["reference"] == ["4"]


def test_fastchat_errors(tmp_path):
    root = fastchat_tree(tmp_path)
    lines = (root / "model_judgment" / "gpt-4_single.jsonl").read_text().splitlines()
    (root / "model_judgment" / "gpt-4_single.jsonl").write_text("\n".join(lines + [lines[0]]) + "\n")
    with pytest.raises(RecordError, match=r"gpt-4_single\.jsonl:5: a second judgment of 'm' on question 1 turn 1"):
        load_fastchat(root)
    with pytest.raises(ValueError, match="turn must be 1 or 2"):
        load_fastchat(root, turn=3)
    with pytest.raises(RecordError, match="not a FastChat benchmark folder"):
        load_fastchat(tmp_path / "nope")


# --------------------------------------------------------------------------------------------------
# Prometheus
# --------------------------------------------------------------------------------------------------


def prometheus_prompt(question, response, reference=None):
    ref = f"###Reference Answer (Score 5):\n{reference}\n\n" if reference else ""
    return (
        "###Task Description:\nAn instruction ...\n\n###The instruction to evaluate:\n"
        f"{question}\n\n###Response to evaluate:\n{response}\n\n{ref}###Score Rubrics:\n[Is it good?]\n"
        "Score 1: no.\nScore 5: yes.\n\n###Feedback: "
    )


def test_prometheus_absolute_and_hhh(tmp_path):
    items = [
        {
            "idx": 7,
            "response_source": "vicuna",
            "category": "generic",
            "instruction": prometheus_prompt("Q", "A", "R"),
            "gpt4_score": [3, 4, 5],
            "gpt4_feedback": ["f"] * 3,
        },
    ]
    (tmp_path / "abs.json").write_text(json.dumps(items))
    ds = load_prometheus(tmp_path / "abs.json")
    assert ds[0] == {
        "query_id": "7",
        "system_id": "vicuna",
        "question": "Q",
        "reference": "R",
        "response": "A",
        "human_score": 4.0,
        "category": "generic",
        "rubric": "[Is it good?]\nScore 1: no.\nScore 5: yes.",
        "gpt4_scores": [3.0, 4.0, 5.0],
    }
    pairs = [
        {
            "source": "harmless",
            "chosen_instruction": prometheus_prompt("Q", "good"),
            "rejected_instruction": prometheus_prompt("Q", "bad"),
        },
    ] * 3
    (tmp_path / "hhh.json").write_text(json.dumps(pairs))
    ds = load_prometheus(tmp_path / "hhh.json")
    assert ds["label"] == [0, 1, 0]
    assert ds["response_1"] == ["good", "bad", "good"] and ds["response_2"] == ["bad", "good", "bad"]
    assert load_prometheus(tmp_path / "hhh.json", order="chosen_first")["label"] == [0, 0, 0]
    items[0]["instruction"] = "Grade this."
    (tmp_path / "bad.json").write_text(json.dumps(items))
    with pytest.raises(RecordError, match=r"bad\.json\[0\]: field 'instruction': not a Prometheus grading prompt"):
        load_prometheus(tmp_path / "bad.json")


# --------------------------------------------------------------------------------------------------
# Generic
# --------------------------------------------------------------------------------------------------


def test_generic_pairwise_with_column_and_label_mapping(tmp_path):
    rows = [
        {"prompt": "Q1", "a": "x", "b": "y", "winner": "model_a", "topic": "t"},
        {"prompt": "Q1", "a": "x", "b": "z", "winner": "Model_B", "topic": "t"},
        {"prompt": "Q2", "a": "x", "b": "y", "winner": "tie (bothbad)", "topic": "u"},
        {"prompt": "Q2", "a": "x", "b": "y", "winner": "Assistant 2", "topic": "u"},
    ]
    ds = load_generic(
        write_jsonl(tmp_path / "arena.jsonl", rows),
        task="pairwise",
        columns="question=prompt,response_1=a,response_2=b,label=winner,category=topic",
        label_map={"model_a": 0, "model_b": 1, "tie (bothbad)": "tie", "assistant 2": "response_2"},
    )
    assert ds["label"] == [0, 1, 2, 1]
    assert ds.column_names[:6] == ["query_id", "question", "response_1", "response_2", "label", "category"]
    assert ds["query_id"][0] == ds["query_id"][1] == query_id("Q1")
    rows[1]["winner"] = "model_c"
    with pytest.raises(
        RecordError, match=r"row 1, field 'label' \(column 'winner' of the data\): 'model_c' is not a pairwise"
    ):
        load_generic(
            write_jsonl(tmp_path / "arena.jsonl", rows),
            task="pairwise",
            columns={"question": "prompt", "response_1": "a", "response_2": "b", "label": "winner"},
        )


def test_generic_pointwise_csv_and_errors(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("qid,question,answer,score,model\n1,Q,A,4,m1\n1,Q,B,2,m2\n")
    ds = load_benchmark(
        "generic",
        path,
        task="pointwise",
        columns={"query_id": "qid", "response": "answer", "human_score": "score", "system_id": "model"},
    )
    assert ds["query_id"] == ["1", "1"] and ds["human_score"] == [4.0, 2.0] and ds["system_id"] == ["m1", "m2"]
    path.write_text("question,response,human_score\nQ,A,4\nQ,B,high\n")
    with pytest.raises(RecordError, match=r"row 1, field 'human_score': not a number: 'high'"):
        load_generic(path, task="pointwise")
    with pytest.raises(RecordError, match="required column 'human_score' missing"):
        load_generic(write_jsonl(tmp_path / "n.jsonl", [{"question": "Q", "response": "A"}]), task="pointwise")
    with pytest.raises(ValueError, match="unknown benchmark format"):
        load_benchmark("nope", path)


# --------------------------------------------------------------------------------------------------
# The published files
# --------------------------------------------------------------------------------------------------


def test_published_alignbench_files(shared_data):
    root = shared_data / "critiquellm" / "evaluation"
    ref = load_alignbench(root / "pointwise" / "alignbench_reference_based_sample.jsonl")
    free = load_alignbench(root / "pointwise" / "alignbench_reference_free_sample.jsonl")
    assert ref.num_rows == free.num_rows == 100
    assert "reference" in ref.column_names and "reference" not in free.column_names
    assert len(set(ref["query_id"])) == 86 and len(set(ref["system_id"])) == 8
    assert set(ref["human_score"]) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    pair = load_alignbench(root / "pairwise" / "alignbench_reference_based_sample.jsonl")
    assert pair.num_rows == 100 and sorted(set(pair["label"])) == [0, 1]


def test_published_autoj_prometheus_fastchat(shared_data):
    eval_p = load_autoj_eval_p(shared_data / "autoj" / "test" / "testdata_pairwise.jsonl")
    assert eval_p.num_rows == 1392 and len(set(eval_p["category"])) == 8 and len(set(eval_p["scenario"])) == 58
    assert eval_p["label"].count(2) == 373
    mt = load_prometheus(shared_data / "prometheus" / "mt_bench_eval.json")
    assert mt.num_rows == 320 and len(set(mt["system_id"])) == 4 and all(mt["reference"])
    hhh = load_prometheus(shared_data / "prometheus" / "hhh_alignment_eval.json")
    assert hhh.num_rows == 221 and set(hhh["category"]) == {"harmless", "helpful", "honest", "other"}
    turn1 = load_fastchat(shared_data / "selfeval" / "mt_bench")
    assert turn1.num_rows == 160 and turn1["human_score"].count(None) == 1
    turn2 = load_fastchat(shared_data / "selfeval" / "mt_bench", turn=2, with_reference=True)
    assert turn2.num_rows == 60 and all(turn2["reference"])
    assert load_fastchat(shared_data / "selfeval" / "vicuna_bench").num_rows == 160


def test_dataset_folder_and_hub_id_go_through_datasets(tmp_path):
    folder = tmp_path / "my_eval_p"
    write_jsonl(
        folder / "train.jsonl",
        [{"scenario": "chitchat", "label": 0, "prompt": "Hi", "response 1": "a", "response 2": "b"}],
    )
    ds = load_autoj_eval_p(folder, scenario_groups={"General Communication": ["chitchat"]})
    assert ds["category"] == ["General Communication"] and ds["question"] == ["Hi"]
    with pytest.raises(RecordError, match="not a local file, and loading it as a Hub dataset failed"):
        load_alignbench("hf-critic-nonexistent/alignbench")


def test_one_query_id_and_one_category_table():
    """Loaders, reports and Eval-Instruct share schema.query_id and schema's category table (AlignBench names too)."""
    from hf_critic.core import schema
    from hf_critic.eval_instruct import stages

    assert not hasattr(stages, "query_id")  # one home: schema
    assert schema.query_id is query_id
    assert query_id("Q1") == query_id(" Q1\n") == "q-" + __import__("hashlib").sha256(b"Q1").hexdigest()[:12]
    assert schema.normalize_category("综合问答") == schema.normalize_category("Open-ended Questions")
    assert schema.normalize_category("基本能力") == "Fundamental Language Ability"  # AlignBench's name
