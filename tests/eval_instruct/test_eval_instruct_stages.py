"""Eval-Instruct stages on hand-made teacher outputs: parsers, filters, cross validation, swap augmentation,
balancing, the SFT messages, the dataset card, the recipe, and the whole pipeline against a scripted local server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import datasets
import pytest
import yaml

from hf_critic.backends.chat import ChatResult, UsageLedger, rejection
from hf_critic.backends.retry import RetryPolicy
from hf_critic.core import schema
from hf_critic.core.labels import swap_critique
from hf_critic.eval_instruct import filters, stages
from hf_critic.eval_instruct.config import ConfigError, load_config
from hf_critic.eval_instruct.hub import push_to_hub, render_card, save_outputs
from hf_critic.eval_instruct.pipeline import run_eval_instruct
from hf_critic.eval_instruct.stage_report import PipelineReport, StageReport
from hf_critic.eval_instruct.text import (
    SeedRougeFilter,
    SelfBleuFilter,
    copied_ngrams,
    detect_language,
    rouge_l,
    tokenize,
)
from hf_critic.prompts import get_template
from hf_critic.testing.servers import StubOpenAIServer
from tests._eval_instruct_support import SEEDS, recipe, scripted_reply


class Source:
    """An in-process chat source: ``reply(messages) -> text``; ids in ``fail`` fail."""

    def __init__(self, reply: Callable[[list], str], fail: set[str] = frozenset(), name: str = "teacher"):
        self.reply, self.fail, self.name, self.ledger, self.calls = reply, set(fail), name, UsageLedger(), []

    def complete_many(self, requests, *, stage, progress=True, check=None):
        self.calls.extend(requests)
        self.ledger.stage(stage).items += len(requests)
        return [self._answer(r, check) for r in requests]

    def _answer(self, request, check):
        if request.id in self.fail:
            return ChatResult(request.id, None, "500: boom (after 7 attempts)")
        text = self.reply(request.messages)
        reason = rejection(text, None, check)
        return ChatResult(request.id, text) if reason is None else ChatResult(request.id, None, f"rejected: {reason}")


def ds(rows):
    return datasets.Dataset.from_list(rows)


POINTWISE_EN = (
    "Correctness: 8. The facts are right.\nUser Satisfaction: 7. It answers the question.\n"
    "Overall Score: 7. A good answer.\n{'Correctness': 8, 'User Satisfaction': 7, 'Overall Score': 7}"
)
PAIRWISE_EN = (
    "Correctness: Assistant 1 is accurate, while Assistant 2 misses a step.\n"
    "Assistant 1's answer is better overall. {'Overall Comparison Result': 'Assistant 1'}"
)
PAIRWISE_ZH = "事实正确性：助手1的回答准确，助手2的答案遗漏了关键步骤。\n综合来看助手1更好。{'综合比较结果': '助手1'}"


# ----------------------------------------------------------------------------------------------- parsers
def test_parse_generated_queries_and_categories():
    text = "1.@@What is 2+2?@@ &&数学计算&&\n2. @@Write a\nhaiku.@@&&Writing Ability&&\n3.@@@@&&x&&\nnoise"
    assert stages.parse_generated_queries(text) == [
        ("What is 2+2?", "数学计算"),
        ("Write a\nhaiku.", "Writing Ability"),
    ]
    assert schema.normalize_category("数学计算") == "Mathematics"
    assert schema.normalize_category("10. multi-lingual ability") == "Multi-lingual Ability"
    assert schema.normalize_category("基本能力") == "Fundamental Language Ability"  # AlignBench's name
    assert schema.normalize_category("综合问答类别") == "Open-ended Question Answering"
    assert schema.normalize_category("Cooking") is None and schema.normalize_category(None) is None
    assert len(schema.CATEGORIES) == 10


def test_parse_difficulties():
    text = "1.@@a@@&&b&&##2##\n2.@@c@@&&d&&##7##\n3. @@e@@ && f && ## 3 ##\n3.@@g@@&&h&&##1##"
    assert stages.parse_difficulties(text, 3) == {0: 2, 2: 3}  # 7 is off the 1-3 scale; the first serial 3 wins
    assert stages.parse_difficulties("no scores", 3) == {}


def test_query_id_is_stable_and_normalised():
    assert schema.query_id("What?") == schema.query_id("  What?\n") != schema.query_id("Why?")
    assert schema.query_id("ＡＢＣ") == schema.query_id("ABC")  # full-width folded (NFKC)


# ----------------------------------------------------------------------------------------------- text measures
def test_rouge_self_bleu_language_and_copies():
    assert tokenize("Hi, 北京!") == ["hi", "北", "京"]
    assert rouge_l(["a", "b", "c", "d"], ["a", "c", "d", "e"]) == pytest.approx(0.75)
    assert rouge_l([], ["a"]) == 0.0
    rouge = SeedRougeFilter(["What is the capital of France?"], threshold=0.7)
    assert rouge.rejects("what is the capital of France") and not rouge.rejects("Write a poem about rain.")
    bleu = SelfBleuFilter(threshold=0.5)
    assert bleu.offer("What is the capital of France?") and not bleu.offer("What is the capital of Spain?")
    assert bleu.offer("Write a short poem about autumn rain.") and len(bleu) == 2
    assert bleu.score("What is the capital of France?") == pytest.approx(1.0)
    assert detect_language("这个回答很好，但 Python 代码有误。") == "zh"
    assert detect_language("The answer quotes 北京 correctly.") == "en" and detect_language("123 !!") is None
    copied = copied_ngrams("it says the sky is blue because of scattering", "Because of scattering the sky is blue", 3)
    assert copied == [("the", "sky", "is"), ("sky", "is", "blue"), ("because", "of", "scattering")]
    assert copied_ngrams("the sky is blue", "the sky is blue", 3, allowed=["the sky is blue today"]) == []


# ----------------------------------------------------------------------------------------------- filters
@pytest.mark.parametrize(
    ("text", "kind", "language", "reference", "reason"),
    [
        (POINTWISE_EN, "score", "en", None, None),
        ("Good answer, nothing to add here.", "score", "en", None, "unparseable"),
        ("Fine answer with some depth. {'Overall Score': 12}", "score", "en", None, "out_of_range"),
        ("{'Overall Score': 7}", "score", "en", None, "empty_explanation"),
        (
            "Overall Score: 6. Decent.\n{'Correctness': 8, 'Overall Score': 7}",
            "score",
            "en",
            None,
            "dict_text_mismatch",
        ),
        ("Correctness: 9. Right.\n{'Correctness': 8, 'Overall Score': 7}", "score", "en", None, "dict_text_mismatch"),
        (PAIRWISE_EN, "label", "en", None, None),
        (
            "Overall Comparison Result: Assistant 2. Close call.\n{'Overall Comparison Result': 'Assistant 1'}",
            "label",
            "en",
            None,
            "dict_text_mismatch",
        ),
        (PAIRWISE_ZH, "label", "en", None, "wrong_language"),
        (PAIRWISE_ZH, "label", "zh", None, None),
        (
            "Compared with the reference answer it lacks depth. {'Overall Score': 5}",
            "score",
            "en",
            "R",
            "reference_leak",
        ),
        (
            "It omits that sunlight scatters off nitrogen molecules high up. {'Overall Score': 5}",
            "score",
            "en",
            "Sunlight scatters off nitrogen molecules high up in the air.",
            "reference_leak",
        ),
        ("助手1没有提到参考答案中的要点。{'综合比较结果': '助手2'}", "label", "zh", "参考", "reference_leak"),
    ],
)
def test_check_critique_reasons(text, kind, language, reference, reason):
    config = filters.FilterConfig(leak_ngram=5)
    parsed, got = filters.check_critique(text, kind=kind, language=language, reference=reference, config=config)
    assert got == reason
    assert reason is None or reason in filters.REASONS
    if reason is None:
        assert parsed.score is not None or parsed.label is not None


def test_leak_rule_ignores_text_the_critique_may_quote():
    response = "Sunlight scatters off nitrogen molecules high up in the air."
    text = f"The response says '{response}' which is right. {{'Overall Score': 8}}"
    _, reason = filters.check_critique(
        text,
        kind="score",
        language="en",
        reference=response,
        quotable=[response],
        config=filters.FilterConfig(leak_ngram=5),
    )
    assert reason is None


def test_label_contradicts_scores():
    assert filters.label_contradicts_scores(1, 9, 4, gap=3) and filters.label_contradicts_scores(2, 9, 4, gap=3)
    assert not filters.label_contradicts_scores(0, 9, 4, gap=3) and not filters.label_contradicts_scores(
        1, 6, 5, gap=3
    )
    assert filters.label_contradicts_scores(0, 2, 8, gap=3) and not filters.label_contradicts_scores(None, 2, 8, gap=3)


# ----------------------------------------------------------------------------------------------- swap augmentation
def test_swap_critique_exchanges_the_assistants():
    assert swap_critique(PAIRWISE_EN) == (
        "Correctness: Assistant 2 is accurate, while Assistant 1 misses a step.\n"
        "Assistant 2's answer is better overall. {'Overall Comparison Result': 'Assistant 2'}"
    )
    assert swap_critique(PAIRWISE_ZH) == PAIRWISE_ZH.replace("助手1", "X").replace("助手2", "助手1").replace(
        "X", "助手2"
    )
    assert (
        swap_critique("[[A]] beats response B; Assistant 10 unchanged")
        == "[[B]] beats response A; Assistant 10 unchanged"
    )
    assert swap_critique(swap_critique(PAIRWISE_ZH)) == PAIRWISE_ZH


def test_swap_augment_maps_texts_label_and_critique():
    rows = [
        {
            "id": "p1",
            "response_1": "R1",
            "response_2": "R2",
            "generator_1": "g1",
            "generator_2": "g2",
            "score_1": 8.0,
            "score_2": 5.0,
            "critique": PAIRWISE_EN,
            "label": 0,
        },
        {
            "id": "p2",
            "response_1": "R3",
            "response_2": "R4",
            "generator_1": "g1",
            "generator_2": "g2",
            "score_1": 6.0,
            "score_2": 6.0,
            "critique": "Both are equally good, truly. {'Overall Comparison Result': 'Tie'}",
            "label": 2,
        },
        {
            "id": "p3",
            "response_1": "R5",
            "response_2": "R6",
            "generator_1": "g1",
            "generator_2": "g2",
            "score_1": 6.0,
            "score_2": 6.0,
            "critique": "Prefers the first. {'Overall Comparison Result': 'Assistant 1'} Verdict: [[1]]",
            "label": 0,
        },
    ]
    report = StageReport("swap")
    out = list(stages.swap_augment(ds(rows), report=report))
    assert [r["id"] for r in out] == ["p1", "p1/swap", "p2", "p2/swap", "p3"]
    swapped = out[1]
    assert (swapped["response_1"], swapped["response_2"], swapped["generator_1"], swapped["score_1"]) == (
        "R2",
        "R1",
        "g2",
        5.0,
    )
    assert swapped["label"] == 1 and swapped["swapped"] and "Assistant 2 is accurate" in swapped["critique"]
    assert out[3]["label"] == 2
    assert report.rejected == {"swap_unparseable": 1}  # "[[1]]" is not swapped: p3's copy would contradict itself
    assert (report.items_in, report.items_out) == (3, 5)


# ----------------------------------------------------------------------------------------------- cross validation
def _pair(pid, label, path):
    return {"pair_id": pid, "label": label, "critique": f"{path} critique {pid}", "path": path}


def test_cross_validation_keeps_agreeing_pairs_with_both_critiques():
    path1 = ds([_pair("a", 0, "path1"), _pair("b", 1, "path1"), _pair("c", 2, "path1"), _pair("d", 0, "path1")])
    path2 = ds([_pair("a", 0, "path2"), _pair("b", 0, "path2"), _pair("c", 2, "path2"), _pair("e", 1, "path2")])
    report = StageReport("cv")
    out = stages.cross_validate(path1, path2, report=report)
    assert out["id"] == ["a/path1", "a/path2", "c/path1", "c/path2"]
    assert out["critique"] == ["path1 critique a", "path2 critique a", "path1 critique c", "path2 critique c"]
    assert report.rejected == {"label_mismatch": 1, "missing_path": 2}
    assert (report.items_in, report.items_out) == (5, 2) and report.balanced
    assert report.notes == {"pairs_in_both_paths": 3, "filtered_share": pytest.approx(1 / 3)}
    with pytest.raises(ValueError, match="twice"):
        stages.cross_validate(ds([_pair("a", 0, "p"), _pair("a", 1, "p")]), path2)


# ----------------------------------------------------------------------------------------------- multi-path stages
def graded_rows():
    return [
        {
            "id": f"q1/{g}",
            "response_id": f"q1/{g}",
            "query_id": "q1",
            "question": "Why is the sky blue?",
            "category": "Open-ended Question Answering",
            "difficulty": 2,
            "generator": g,
            "response": f"Answer by {g}.",
            "reference": "Rayleigh scattering of sunlight by air molecules makes the sky look blue to us.",
            "critique": POINTWISE_EN.replace("7", s),
            "score": float(s),
        }
        for g, s in (("a", "8"), ("b", "4"), ("c", "7"))
    ]


def test_make_pairs_is_deterministic_and_complete():
    pairs = stages.make_pairs(ds(graded_rows()), seed=0)
    assert len(pairs) == 3 and len(set(pairs["pair_id"])) == 3
    assert pairs["pair_id"] == stages.make_pairs(ds(graded_rows()), seed=0)["pair_id"]
    assert {frozenset((p["generator_1"], p["generator_2"])) for p in pairs} == {
        frozenset("ab"),
        frozenset("ac"),
        frozenset("bc"),
    }
    row = pairs[0]
    assert row["critique_1"] == next(r["critique"] for r in graded_rows() if r["generator"] == row["generator_1"])
    assert len(stages.make_pairs(ds(graded_rows()), per_query=2)) == 2


def test_pointwise_to_pairwise_filters_labels_against_large_score_gaps():
    teacher = Source(
        lambda m: "Correctness: Assistant 2 is more accurate overall. {'Overall Comparison Result': 'Assistant 2'}"
    )
    pairs = stages.make_pairs(ds(graded_rows()))
    report = StageReport("p2p")
    out = stages.pointwise_to_pairwise(pairs, teacher, referenced=True, report=report, path="path1")
    # "Assistant 2" goes against a gap >= 3 in the pairs where response 1 scored 3+ higher
    expected_bad = sum(1 for p in pairs if p["score_1"] - p["score_2"] >= 3)
    assert report.rejected == ({"label_contradicts_scores": expected_bad} if expected_bad else {})
    assert len(out) + expected_bad == 3 and all(r["label"] == 1 and r["path"] == "path1" for r in out)
    prompt = teacher.calls[0].messages[0]["content"]
    assert "[Critique for Assistant 1's Answer Begin]" in prompt and "[Reference Answer Begin]" in prompt
    assert out[0]["teacher_prompt"] == "eval_instruct_p2p_pairwise_referenced_en@1.0"


def test_referenced_to_reference_free_checks_shift_and_leaks():
    replies = {
        "q1/a": "Correctness: 8. Right.\n{'Correctness': 8, 'Overall Score': 8}",  # same score: kept
        "q1/b": "Correctness: 7. Right.\n{'Correctness': 7, 'Overall Score': 7}",  # 4 -> 7: score_shift
        "q1/c": "It never says that Rayleigh scattering of sunlight by air molecules makes the sky look blue. "
        "{'Overall Score': 7}",  # copies 12 tokens of the reference
    }
    teacher = Source(lambda m: replies[next(k for k in replies if f"Answer by {k[-1]}." in m[0]["content"])])
    report = StageReport("r2rf")
    out = stages.referenced_to_reference_free(
        ds(graded_rows()), teacher, task="pointwise", path="path2", report=report
    )
    assert out["id"] == ["q1/a"] and out[0]["score_referenced"] == 8.0 and out[0]["path"] == "path2"
    assert out[0]["critique_referenced"] == graded_rows()[0]["critique"]
    assert report.rejected == {"score_shift": 1, "reference_leak": 1} and report.balanced


def test_failures_are_reported_not_dropped():
    teacher = Source(lambda m: POINTWISE_EN, fail={"q1/b"})
    report = StageReport("grading")
    rows = [{k: v for k, v in r.items() if k not in ("id", "critique", "score")} for r in graded_rows()]
    out = stages.grade_pointwise_referenced(ds(rows), teacher, report=report)
    assert out["id"] == ["q1/a", "q1/c"] and [f.id for f in report.failures] == ["q1/b"]
    assert report.items_in == 3 and report.balanced and "after 7 attempts" in report.failures[0].error
    assert json.loads(out[0]["dimension_scores"]) == {"Correctness": 8.0, "User Satisfaction": 7.0}


def test_v1_dialogue_revision_bounds_the_score_move():
    first = [
        {
            "id": f"r{i}",
            "question": "Q?",
            "reference": "A reference text.",
            "response": f"resp {i}",
            "critique": f"Fine. Rating: [[{s}]]",
            "score": float(s),
        }
        for i, s in enumerate((6, 6, 6))
    ]
    moves = {"resp 0": 7, "resp 1": 8, "resp 2": 5}
    teacher = Source(
        lambda m: (
            f"Decent answer with gaps. Rating: [[{moves[m[0]['content'].split('[The Start of Assistant')[1].split(chr(10))[1]]}]]"
        )
    )
    report = StageReport("v1")
    out = stages.dialogue_revision(ds(first), teacher, report=report)
    assert out["id"] == ["r0", "r2"] and report.rejected == {"score_shift": 1}
    roles = [m["role"] for m in teacher.calls[0].messages]
    assert roles == ["user", "assistant", "user"] and teacher.calls[0].messages[1]["content"] == "Fine. Rating: [[6]]"
    assert "Please revise your previous round" in teacher.calls[0].messages[2]["content"]


def test_balance_queries_by_category_then_difficulty():
    rows = [{"query_id": f"m{i}", "category": "Mathematics", "difficulty": 1 + i % 3} for i in range(9)]
    rows += [{"query_id": f"w{i}", "category": "Writing Ability", "difficulty": 1} for i in range(2)]
    report = StageReport("balance")
    out = stages.balance_queries(ds(rows), total=8, report=report)
    cats = [r["category"] for r in out]
    assert cats.count("Writing Ability") == 2 and cats.count("Mathematics") == 6
    assert sorted(r["difficulty"] for r in out if r["category"] == "Mathematics") == [1, 1, 2, 2, 3, 3]
    assert report.rejected == {"balance": 3} and report.balanced
    assert out["query_id"] == stages.balance_queries(ds(rows), total=8)["query_id"]  # seeded


def test_pseudo_references_and_manual_revisions():
    rows = [
        {"query_id": q, "question": f"question {q}", "generator": g, "response": f"{g} on {q}"}
        for q in ("q1", "q2")
        for g in ("gpt4", "small")
    ]
    rows = [r for r in rows if not (r["query_id"] == "q2" and r["generator"] == "gpt4")]  # no reference for q2
    report = StageReport("refs")
    out = stages.add_pseudo_references(
        ds(rows), reference_generator="gpt4", revisions={"question q1": "Revised."}, report=report
    )
    assert [(r["generator"], r["reference"], r["reference_source"]) for r in out] == [
        ("gpt4", "Revised.", "manual_revision"),
        ("small", "Revised.", "manual_revision"),
    ]
    assert report.rejected == {"no_reference": 1}


def test_augmentation_filters_duplicates_unknown_categories_and_near_copies():
    reply = (
        "1.@@What causes the seasons on Earth, and why is it warmer in summer?@@ &&综合问答&&\n"  # near copy of a seed
        "2.@@Name three uses of graphene in electronics.@@ &&专业能力&&\n"
        "3.@@Name three uses of graphene in electronics.@@ &&专业能力&&\n"  # duplicate
        "4.@@Name three uses of graphene in batteries.@@ &&专业能力&&\n"  # Self-BLEU near copy
        "5.@@Plan a picnic.@@ &&Cooking&&"
    )
    teacher = Source(lambda m: reply)
    report = StageReport("aug")
    seeds = datasets.load_dataset("json", data_files=str(SEEDS), split="train")
    out = stages.augment_queries(seeds, teacher, rounds=2, self_bleu_max=0.5, report=report)
    assert out.filter(lambda r: r["source"] == "augmented")["question"] == [
        "Name three uses of graphene in electronics."
    ]
    assert len(out) == len(seeds) + 1
    assert report.rejected == {"rouge_l_seed": 2, "duplicate": 3, "self_bleu": 2, "unknown_category": 2}
    assert [c.params["seed"] for c in teacher.calls] == [0, 1]
    prompt = teacher.calls[0].messages[0]["content"]
    assert prompt.count("@@") >= 20 and "&&Writing Ability&&" in prompt or "&&" in prompt


# ----------------------------------------------------------------------------------------------- SFT messages
@pytest.mark.parametrize("setting", ["pointwise_referenced", "pairwise_reference_free"])
def test_sft_messages_use_the_critics_inference_template(setting):
    row = {**graded_rows()[0], "response_1": "R1", "response_2": "R2", "label": 0, "path": "path2", "swapped": False}
    out = stages.to_sft_dataset(ds([row]), setting, language="en", teacher="gpt-4")
    messages = out[0]["messages"]
    assert messages[:-1] == get_template("critiquellm_v2", setting, "en").render(row)
    assert messages[-1] == {"role": "assistant", "content": row["critique"]}
    assert out.features == stages.OUTPUT_FEATURES[setting] and out[0]["teacher"] == "gpt-4"
    empty = stages.to_sft_dataset(datasets.Dataset.from_dict({}), setting)
    assert len(empty) == 0 and empty.features == stages.OUTPUT_FEATURES[setting]


# ----------------------------------------------------------------------------------------------- card and saving
def test_card_has_a_valid_yaml_header_and_lists_the_configs(tmp_path):
    row = {**graded_rows()[0], "label": 0, "response_1": "a", "response_2": "b"}
    data = datasets.DatasetDict(
        {
            name: stages.to_sft_dataset(
                ds([row]) if name.startswith("pointwise") else datasets.Dataset.from_dict({}), name
            )
            for name in stages.OUTPUT_FEATURES
        }
    )
    report = PipelineReport(
        stages=[StageReport("cross_validation", "pairs", 10, 9, notes={"filtered_share": 0.1})],
        info={"teacher": "gpt-4-1106-preview", "prompts": ["eval_instruct_p2p_pairwise_referenced_zh@1.0"]},
    )
    report.stages[0].reject("label_mismatch")
    card = render_card(data, report, license="cc-by-nc-4.0", pretty_name="My critiques", repo_id="me/critiques")
    text = str(card)
    assert text.startswith("---\n")
    header = yaml.safe_load(text.split("---\n")[1])
    assert (
        header["license"] == "cc-by-nc-4.0"
        and header["language"] == ["en"]
        and header["pretty_name"] == "My critiques"
    )
    assert header["task_categories"] == ["text-generation"]
    assert [c["config_name"] for c in header["configs"]] == list(stages.OUTPUT_FEATURES)
    assert header["configs"][0]["data_files"] == [{"split": "train", "path": "pointwise_referenced/train-*"}]
    infos = {i["config_name"]: i for i in header["dataset_info"]}
    assert infos["pointwise_referenced"]["splits"][0]["num_examples"] == 1
    assert {f["name"] for f in infos["pairwise_reference_free"]["features"]} >= {"label", "messages", "response_2"}
    for section in (
        "## Dataset Summary",
        "## Dataset Structure",
        "## Dataset Creation",
        "## Bias, Risks, and Limitations",
        "## Citation",
    ):
        assert section in text
    assert "`gpt-4-1106-preview`" in text and "eval_instruct_p2p_pairwise_referenced_zh@1.0" in text
    assert "| `label_mismatch` | 1 |" in text and "10.0%" in text and 'load_dataset("me/critiques"' in text

    paths = save_outputs(data, tmp_path, card)
    loaded = datasets.load_dataset(str(paths["hub"]), "pointwise_referenced", split="train")
    assert loaded["id"] == data["pointwise_referenced"]["id"]
    assert datasets.load_from_disk(str(paths["dataset"]))["pairwise_referenced"].num_rows == 0

    class FakeApi:
        def __init__(self):
            self.calls = []

        def create_repo(self, repo_id, **kw):
            self.calls.append(("create", repo_id, kw))
            return f"https://huggingface.co/datasets/{repo_id}"

        def upload_folder(self, **kw):
            self.calls.append(("upload", kw["repo_id"], sorted(p.name for p in Path(kw["folder_path"]).iterdir())))

    api = FakeApi()
    assert push_to_hub(paths["hub"], "me/critiques", api=api).endswith("me/critiques")
    assert api.calls[0] == ("create", "me/critiques", {"repo_type": "dataset", "private": True, "exist_ok": True})
    assert api.calls[1][2] == ["README.md", *sorted(stages.OUTPUT_FEATURES)]


# ----------------------------------------------------------------------------------------------- recipe
def test_recipes_in_the_repo_load():
    root = Path(__file__).resolve().parents[2] / "recipes" / "eval_instruct"
    for path in sorted(root.glob("*.yaml")):
        teacher = yaml.safe_load(path.read_text(encoding="utf-8"))["teacher"]
        config = load_config(path, {"teacher": {**teacher, "base_url": "http://127.0.0.1:1/v1", "model": "m"}})
        assert config.variant in ("v1", "v2") and config.generators
        assert config.teacher.retry == RetryPolicy(**teacher["retry"])  # the nested retry policy is read


def test_bad_recipes_name_the_key(tmp_path):
    good = yaml.safe_load(recipe(tmp_path, "http://127.0.0.1:1/v1").read_text())
    for change, message in [
        ({"teacher": {**good["teacher"], "temprature": 0}}, "teacher: unknown key 'temprature'; known: api_key_env"),
        ({"variant": "v3"}, "variant must be 'v1' or 'v2'"),
        ({"references": {"generator": "nobody"}}, "references.generator 'nobody'"),
        ({"teacher": {**good["teacher"], "sampling": {"api_key": "sk-x"}}}, "credential"),
        ({"generators": [{"name": "x"}]}, "exactly one of 'endpoint' / 'transformers'"),
        ({"teacher": {**good["teacher"], "max_retries": 3}}, "teacher: unknown key 'max_retries'"),
        (
            {"teacher": {**good["teacher"], "retry": {"max_retry": 3}}},
            "teacher.retry: unknown key 'max_retry' (did you mean 'max_retries'?)",
        ),
        (
            {"teacher": {**good["teacher"], "retry": {"jitter": 2}}},
            "teacher.retry: need multiplier >= 1, jitter in [0, 1]",
        ),
    ]:
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({**good, **change}), encoding="utf-8")
        with pytest.raises(ConfigError, match=re.escape(message)) as err:
            load_config(path)
        assert str(path) in str(err.value)


# ----------------------------------------------------------------------------------------------- whole pipeline
def test_pipeline_against_a_scripted_local_server(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-NEVER-STORED-4242")
    lines = []
    first_seed = json.loads(SEEDS.read_text(encoding="utf-8").splitlines()[0])["question"]
    revisions = tmp_path / "revisions.jsonl"
    revisions.write_text(json.dumps({"question": first_seed, "reference": "MANUALLY REVISED REFERENCE."}) + "\n")
    with StubOpenAIServer(scripted_reply) as server:
        config = load_config(
            recipe(tmp_path, server.url, references={"generator": "gen-a", "revisions": str(revisions)})
        )
        result = run_eval_instruct(config, echo=lines.append)
        sent = server.requests
        again = run_eval_instruct(config, echo=lambda line: None)
        assert server.requests == sent  # a rerun of the same recipe makes no request
    report = result.report
    assert all(s.balanced for s in report.stages), [s.to_dict() for s in report.stages if not s.balanced]
    assert report.counts["pointwise_referenced"] == 20 and report.counts["pairwise_referenced"] == 20
    cv = report.stage("cross_validation")
    assert cv.rejected["label_mismatch"] >= 1 and 0 < cv.notes["filtered_share"] < 1
    assert report.counts["pairwise_reference_free"] == 4 * cv.items_out  # two paths, each swapped
    for name, split in result.dataset.items():
        assert len(set(split["id"])) == len(split)
        assert split.features == stages.OUTPUT_FEATURES[name]
    manual = result.dataset["pointwise_referenced"].filter(lambda r: r["question"] == first_seed)
    assert len(manual) == 2 and set(manual["reference"]) == {"MANUALLY REVISED REFERENCE."}
    rf = result.dataset["pairwise_reference_free"]
    assert set(rf["path"]) == {"path1", "path2"} and sum(rf["swapped"]) == len(rf) // 2
    assert all(m[-1]["role"] == "assistant" for m in rf["messages"])
    assert again.dataset["pairwise_reference_free"]["id"] == rf["id"]
    assert again.report.total_usage().requests == 0
    assert again.report.total_usage().cache_hits == report.total_usage().items == 96 > sent  # identical asks sent once
    assert any(line.startswith("[15/15] swap_pairwise_reference_free:") for line in lines)
    table = report.table()
    assert "label_mismatch=" in table and table.splitlines()[-2].startswith("total")
    saved = json.loads(result.paths["report"].read_text())
    assert saved["counts"] == report.counts and saved["info"]["api_key_env"] == "OPENAI_API_KEY"
    for path in Path(config.output_dir).rglob("*"):
        if path.is_file():
            assert b"sk-test-NEVER-STORED-4242" not in path.read_bytes(), path


def test_cli_runs_the_recipe_and_prints_the_summary(tmp_path, capsys):
    from hf_critic.cli import main

    with StubOpenAIServer(scripted_reply) as server:
        path = recipe(tmp_path, server.url, variant="v1", queries={"augmentation": None, "difficulty": False})
        code = main(["eval-instruct", "--config", str(path), "--output-dir", str(tmp_path / "cli"), "--no-progress"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "v1_turn2_reference_free" in out.out and "rows per config: pointwise_referenced=20" in out.out
    assert "[6/6] v1_turn2_reference_free" in out.err
    saved = datasets.load_from_disk(str(tmp_path / "cli" / "dataset"))
    assert saved["pointwise_reference_free"].num_rows == 20 and saved["pairwise_referenced"].num_rows == 0
    assert saved["pointwise_reference_free"][0]["path"] == "dialogue"
    assert (
        saved["pointwise_reference_free"][0]["messages"][0]
        == get_template("critiquellm_v1", "pointwise_reference_free", "en").render(
            saved["pointwise_reference_free"][0]
        )[0]
    )


# ----------------------------------------------------------------------------------------------- a new stage
SECOND_OPINION_PROMPT = """\
version: "1.0"
source: a second, reference-free opinion on each reference-free pointwise critique (test stage)
setting: pointwise_reference_free
language: en
fields: [question, response]
output:
  kind: "score"
  format: "rating_brackets"
  score_range: [1, 10]
  dimensions: false
  verdict_prefix: "Rating: [["
prompt: |-
  Grade the answer to the question on a scale of 1 to 10, ending with "Rating: [[rating]]".

  [Question]
  {question}

  [The Start of Assistant's Answer]
  {response}
  [The End of Assistant's Answer]
"""


def test_a_new_stage_is_one_declaration(tmp_path):
    """A stage is one declaration (here, in this file) plus its prompt YAML; the run order, the progress
    count, the report's rows, failures.jsonl and the teacher's grammar all follow from the pipeline list."""
    from hf_critic.backends.chat import ChatRequest
    from hf_critic.critic.grammars import critique_grammar
    from hf_critic.eval_instruct.pipeline import V2_PIPELINE
    from hf_critic.eval_instruct.stage import GrammarSpec, Stage, stage_grammars
    from hf_critic.eval_instruct.stages import critique_rows
    from hf_critic.prompts import load_template

    (tmp_path / "second_opinion_en.yaml").write_text(SECOND_OPINION_PROMPT, encoding="utf-8")
    template = load_template(tmp_path / "second_opinion_en.yaml")

    def second_opinion(ctx, critiques, *, stage, report):
        """Keep a reference-free pointwise critique only when a second, direct grade of the answer is at least 5."""
        report.unit = "responses"
        rows = list(critiques)
        requests = [ChatRequest(row["id"], template.render(row)) for row in rows]
        kept = critique_rows(
            ctx.teacher,
            rows,
            requests,
            lambda row, parsed, text: row,
            output=template.output,
            language=ctx.language,
            filters=ctx.config.filters,
            stage=stage,
            report=report,
            progress=ctx.progress,
            rule=lambda row, parsed: "second_opinion_low" if parsed.score < 5 else None,
        )
        return datasets.Dataset.from_list(kept) if kept else critiques.select([])

    stage = Stage(
        "second_opinion",
        ("pointwise_reference_free",),
        "pointwise_reference_free",
        second_opinion,
        grammar=lambda spec: critique_grammar(template.output, spec.explanation_chars),
    )
    pipeline = [*V2_PIPELINE, stage]
    lines = []
    with StubOpenAIServer(scripted_reply) as server:
        config = load_config(recipe(tmp_path, server.url))
        result = run_eval_instruct(config, echo=lines.append, pipeline=pipeline)
    report = result.report
    assert [s.name for s in report.stages][-2:] == ["swap_pairwise_reference_free", "second_opinion"]
    assert any(line.startswith("[16/16] second_opinion: 20 responses in") for line in lines)
    mine = report.stage("second_opinion")
    assert mine.items_in == report.stage("path2_r2rf_pointwise").items_out == 20 and mine.balanced
    assert 0 < mine.rejected["second_opinion_low"] < 20
    assert result.dataset["pointwise_reference_free"].num_rows == mine.items_out
    named = [json.loads(line) for line in result.paths["failures"].read_text().splitlines()]
    low = [n for n in named if n["stage"] == "second_opinion"]
    assert len(low) == mine.rejected["second_opinion_low"] and {n["reason"] for n in low} == {"second_opinion_low"}
    grammars = stage_grammars(pipeline, GrammarSpec("en", "critiquellm_v2", 256, 256))
    assert "second_opinion" in grammars and "Rating: [[" in grammars["second_opinion"]["grammar"]

    # a stage that reads what no earlier stage writes is named before any request
    early = Stage("too_early", ("pairwise_reference_free",), "x", second_opinion)
    with pytest.raises(ValueError, match=r"stage 'too_early' reads \['pairwise_reference_free'\]"):
        run_eval_instruct(config, pipeline=[early, *V2_PIPELINE])
