"""The Eval-Instruct teacher prompts (CritiqueLLM v2 Appendix A-B, v1 Table 6): inventory, rendering, fidelity."""

from __future__ import annotations

import re

import pytest

from hf_critic.core.schema import Setting, Task
from hf_critic.prompts import (
    EVAL_INSTRUCT_PREFIX,
    InstructionPrompt,
    PromptTemplate,
    TemplateFieldError,
    get_instruction_prompt,
    get_teacher_template,
    get_template,
    list_eval_instruct_prompts,
    list_families,
    list_templates,
    load_template,
)

RECORD = {
    "question": "QUESTION-7f3a 北京在哪里？",
    "reference": "REFERENCE-91c2 北京在中国北方。",
    "response": "RESPONSE-0b5e in the north.",
    "response_1": "RESPONSE1-aa11",
    "response_2": "RESPONSE2-bb22",
    "critique": "CRITIQUE-REF-5d5d {'Overall Score': 6}",
    "critique_1": "CRITIQUE1-c1c1",
    "critique_2": "CRITIQUE2-c2c2",
}
LEFTOVER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
CJK = re.compile(r"[\u4e00-\u9fff]")
TEACHER = [
    (s, n)
    for s in ("p2p", "r2rf")
    for n in ("pairwise_referenced", "pairwise_reference_free", "pointwise_reference_free")
    if not (s == "p2p" and n.startswith("pointwise")) and not (s == "r2rf" and n == "pairwise_referenced")
]


def test_inventory_and_critic_listing_unchanged():
    names = list_eval_instruct_prompts()
    assert len(names) == 14 and all(n.startswith(EVAL_INSTRUCT_PREFIX) for n in names)
    assert not set(names) & set(list_templates())  # critic templates and families are unaffected
    assert "eval_instruct" not in " ".join(list_families())
    assert sorted(TEACHER) == [
        ("p2p", "pairwise_reference_free"),
        ("p2p", "pairwise_referenced"),
        ("r2rf", "pairwise_reference_free"),
        ("r2rf", "pointwise_reference_free"),
    ]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize(("strategy", "setting"), TEACHER)
def test_teacher_templates_render_every_input_once(strategy, setting, language):
    t = get_teacher_template(strategy, setting, language)
    assert isinstance(t, PromptTemplate) and t.setting == Setting.from_name(setting) and t.language == language
    assert t.version and "CritiqueLLM v2" in t.source and "Appendix B" in t.source
    text = t.render_text(RECORD)
    inputs = ["question", *t.required, *t.setting.fields]
    for field in dict.fromkeys(inputs):
        assert text.count(RECORD[field]) == 1, field
    assert LEFTOVER.findall(text) == []
    labels_or_key = t.output.labels or (t.output.overall_key,)
    assert all(v in text for v in labels_or_key)
    if language == "en":
        assert not CJK.search(t.render_text(dict.fromkeys(RECORD, "x")))


def test_p2p_shows_the_reference_only_on_path1_and_r2rf_always():
    ref = get_teacher_template("p2p", "pairwise_referenced", "en").render_text(RECORD)
    free = get_teacher_template("p2p", "pairwise_reference_free", "en").render_text(RECORD)
    assert RECORD["reference"] in ref and RECORD["reference"] not in free
    for setting in ("pointwise_reference_free", "pairwise_reference_free"):
        for language in ("en", "zh"):
            assert RECORD["reference"] in get_teacher_template("r2rf", setting, language).render_text(RECORD)


def test_p2p_zh_matches_the_authors_layout_and_paper_sentences():
    text = get_teacher_template("p2p", "pairwise_referenced", "zh").render_text(RECORD)
    # Table 7's sentences, in order, and the blocks of thu-coai/CritiqueLLM data/P2P_1.py
    for piece in [
        "你是一个擅长评价文本质量的助手。\n请你以公正的评判者的身份",
        "以及两个答案各自的质量评价分析。",
        "质量评价分析中的各维度分数和综合得分仅供参考",
        "{'综合比较结果': '助手1'}或{'综合比较结果': '助手2'}或{'综合比较结果': '质量相当'}。",
        "[助手1的答案质量评价分析开始]\nCRITIQUE1-c1c1\n[助手1的答案质量评价分析结束]",
        "[助手2的答案开始]\nRESPONSE2-bb22\n[助手2的答案结束]",
    ]:
        assert piece in text, piece
    assert text.index("1. 事实正确性") < text.index("我们会给你提供")  # default dimensions listed first


def test_r2rf_en_is_the_papers_table_10():
    pointwise = get_teacher_template("r2rf", "pointwise_reference_free", "en").render_text(RECORD)
    assert pointwise.startswith("You are an expert at text quality evaluation.\nPlease revise the critique")
    assert "{'Overall Score': Score for Overall Quality}, for instance: {'Overall Score': '5'}." in pointwise
    assert "[Critique Begin]\nCRITIQUE-REF-5d5d {'Overall Score': 6}\n[Critique End]" in pointwise
    pairwise = get_teacher_template("r2rf", "pairwise_reference_free", "en").render_text(RECORD)
    assert "The explanation should be consistent with the comparison result." in pairwise


def test_teacher_templates_require_their_input_critiques():
    t = get_teacher_template("p2p", "pairwise_reference_free", "en")
    assert t.required == ("critique_1", "critique_2") and set(t.defaults) == {"dimensions"}
    with pytest.raises(TemplateFieldError) as err:
        t.render({k: v for k, v in RECORD.items() if k != "critique_2"})
    assert err.value.fields == ("critique_2",)
    r2rf = get_teacher_template("r2rf", "pointwise_reference_free", "zh")
    with pytest.raises(TemplateFieldError, match="reference"):
        r2rf.render({**RECORD, "reference": " "})


def test_unknown_teacher_prompts_are_refused():
    with pytest.raises(ValueError, match="f_P2P"):
        get_teacher_template("p2p", Setting(Task.POINTWISE, True))
    with pytest.raises(ValueError, match="strategy"):
        get_teacher_template("p3p", "pairwise_referenced")
    with pytest.raises(ValueError, match="no instruction prompt"):
        get_instruction_prompt("query_generation", "fr")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_query_generation_prompt(language):
    p = get_instruction_prompt("query_generation", language)
    assert isinstance(p, InstructionPrompt) and p.output == "queries" and p.fields == ("examples", "format_examples")
    text = p.render_text({"examples": "1.EX-ONE", "format_examples": "@@EX-TWO@@ &&Mathematics&&"})
    assert text.startswith("You are asked to provide 10 diverse prompts.")
    assert "The following are some examples:\n1.EX-ONE\nHere are the requirements" in text
    assert "Here are some examples of prompts you provide:\n@@EX-TWO@@ &&Mathematics&&\n" in text
    assert text.endswith("The following is a list of 10 good task prompts with serial numbers and categories:")
    categories = re.findall(
        r"^\d+\. (.+)$", text.split("The category must be one of the following 10 categories.")[1], re.MULTILINE
    )[:10]
    assert len(categories) == 10
    assert ("综合问答" in categories) == (language == "zh") and ("Mathematics" in categories) == (language == "en")
    assert ("Simplified Chinese" in text) == (language == "zh")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_query_difficulty_prompt(language):
    p = get_instruction_prompt("query_difficulty", language)
    text = p.render_text({"queries": "1.@@Q1@@&&C1&&\n2.@@Q2@@&&C2&&\n3.@@Q3@@&&C3&&"})
    assert text.startswith("1.@@Q1@@&&C1&&\n2.@@Q2@@&&C2&&\n3.@@Q3@@&&C3&&\n")
    assert ("1.@@题目1@@&&综合问答&&##1##" in text) == (language == "zh")
    assert ("1.@@Title 1@@&&Open-ended Questions&&##1##" in text) == (language == "en")
    with pytest.raises(TemplateFieldError):
        p.render_text({})


def test_v1_revision_prompt_is_table_6_second_turn():
    zh, en = get_instruction_prompt("v1_revision", "zh"), get_instruction_prompt("v1_revision", "en")
    assert zh.fields == () and zh.render() == [{"role": "user", "content": zh.prompt}]
    assert "The score can vary by no more than 1 point" in zh.prompt
    assert zh.prompt.count("remains Chinese") == 1 and en.prompt == zh.prompt.replace(
        "remains Chinese", "remains English"
    )
    # the first turn is the v1 critic template itself (Table 6 first turn = Table 7 referenced)
    assert "v1" in get_template("critiquellm_v1", "pointwise_referenced", "en").source


def test_user_template_files_may_declare_required_fields(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        'version: "0.1"\nsource: test\nsetting: pointwise_reference_free\nlanguage: en\n'
        "fields: [question, response, critique]\nrequired: [critique]\n"
        "output: {kind: score, format: rating_brackets, score_range: [1, 10]}\n"
        "prompt: '{question} {response} {critique}'\n",
        encoding="utf-8",
    )
    t = load_template(str(path))
    assert (
        t.required == ("critique",) and t.render_text({"question": "q", "response": "r", "critique": "c"}) == "q r c"
    )
    bad = path.read_text().replace("required: [critique]", "required: [question]")
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ValueError, match="'required'"):
        load_template(str(path))
