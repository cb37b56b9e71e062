"""Tests for the prompt library: every built-in template, rendering, validation of user files, lookup."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from hf_critic.core.schema import SETTINGS, Setting, Task
from hf_critic.formats import DEFAULT_FAMILY
from hf_critic.prompts import (
    LANGUAGES,
    RESPONSE_FIELDS,
    PromptTemplate,
    TemplateFieldError,
    get_template,
    list_families,
    list_templates,
    load_template,
)

TEMPLATES = list_templates()
RECORD = {
    "question": "QUESTION-7f3a 北京在哪里？",
    "reference": "REFERENCE-91c2 北京在中国北方。",
    "response": "RESPONSE-0b5e in the north.",
    "response_1": "RESPONSE1-aa11",
    "response_2": "RESPONSE2-bb22",
    "rubric": "RUBRIC-3c7d [Is it good?]",  # prometheus2's required rubric; ignored by the other templates
    "id": 17,  # extra keys are ignored
    "category": "综合问答",
}
LEFTOVER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
CJK = re.compile(r"[\u4e00-\u9fff]")
# Which (family, language) pairs exist, per setting.
EXPECTED = {
    ("critiquellm_v1", "en"): {"pointwise_referenced", "pointwise_reference_free"},
    ("critiquellm_v1", "zh"): {"pointwise_referenced", "pointwise_reference_free"},
    ("critiquellm_v2", "en"): {s.name for s in SETTINGS},
    ("critiquellm_v2", "zh"): {s.name for s in SETTINGS},
    ("critiquellm_6b", "en"): set(),
    ("critiquellm_6b", "zh"): {s.name for s in SETTINGS},
    ("mtbench", "en"): {s.name for s in SETTINGS},
    ("mtbench", "zh"): set(),
    # The published critics' families (tests/formats/test_families.py checks their texts against the published prompts).
    ("prometheus2", "en"): {s.name for s in SETTINGS},
    ("autoj", "en"): {"pointwise_reference_free", "pairwise_reference_free"},
    ("autoj", "zh"): {"pointwise_reference_free", "pairwise_reference_free"},
    ("judgelm", "en"): {"pointwise_referenced", "pairwise_referenced", "pairwise_reference_free"},
    ("pandalm", "en"): {"pairwise_reference_free"},
}


def full_text(template: PromptTemplate, record: dict) -> str:
    return "\n".join(m["content"] for m in template.render(record))


def test_inventory():
    assert sorted({family for family, _ in EXPECTED}) == list_families()
    expected = sorted(f"{fam}_{s}_{lang}" for (fam, lang), settings in EXPECTED.items() for s in settings)
    assert TEMPLATES == expected
    assert DEFAULT_FAMILY == "critiquellm_v2"


@pytest.mark.parametrize("name", TEMPLATES)
def test_builtin_template_is_consistent(name):
    t = load_template(name)
    assert t.name == name and name.endswith(f"_{t.setting.name}_{t.language}")
    assert t.version and t.source and t.language in LANGUAGES
    assert set(t.setting.fields) <= set(t.fields)
    assert set(t.fields) - set(t.setting.fields) - set(t.required) == set(t.defaults)  # optional fields have defaults
    assert (t.output.kind == "score") == (t.setting.task is Task.POINTWISE)
    if t.output.kind == "score":
        scale = (1.0, 5.0) if name.startswith("prometheus2") else (1.0, 10.0)  # Prometheus grades 1-5 by default
        assert t.output.score_range == scale and t.output.labels is None
    assert load_template(name) is t  # built-ins are cached; templates are immutable
    with pytest.raises(TypeError):
        t.defaults["x"] = "y"


@pytest.mark.parametrize("name", TEMPLATES)
def test_render_contains_values_and_no_leftover_placeholder(name):
    t = load_template(name)
    messages = t.render(RECORD)
    assert [m["role"] for m in messages] == (["system", "user"] if t.system is not None else ["user"])
    assert messages[-1]["content"] == t.render_text(RECORD)
    text = full_text(t, RECORD)
    for f in t.setting.fields:
        assert RECORD[f] in text
        assert text.count(RECORD[f]) == 1
    assert LEFTOVER.findall(text) == []
    assert "17" not in text and "综合问答" not in text  # extra keys are not rendered


# PandaLM's published prompt asks it to "generate a reference answer" of its own; it is shown none.
@pytest.mark.parametrize("name", [n for n in TEMPLATES if "_reference_free_" in n and not n.startswith("pandalm")])
def test_reference_free_never_shows_the_reference(name):
    text = full_text(load_template(name), RECORD)
    assert RECORD["reference"] not in text
    assert "reference" not in text.lower() and "参考答案" not in text


@pytest.mark.parametrize("name", TEMPLATES)
def test_prompt_asks_for_the_declared_verdict(name):
    """The exact verdict strings a parser will look for appear in the rendered prompt."""
    t, out = load_template(name), load_template(name).output
    text = full_text(t, RECORD)
    if name.startswith("critiquellm_6b"):  # the released model's bare input format carries no instructions
        assert "[生成型回答]" in text
        return
    if name.startswith("pandalm"):  # PandaLM's raw input: its answer follows "### Evaluation:"
        assert text.endswith("\n\n### Evaluation:\n")
        return
    if out.format == "prometheus_result":
        assert "[RESULT] (" + ("an integer number between 1 and 5)" if out.kind == "score" else "A or B)") in text
    elif out.format == "autoj_rating":
        assert f'"{out.verdict_prefix}5]]"' in text
    elif out.format == "autoj_decision":
        # "So, the final decision is Response 1 / Response 2 / Tie", "所以，最终决定是回应1/回应2/平局"
        zh = t.language == "zh"
        assert out.verdict_prefix + ("" if zh else " ") + ("/" if zh else " / ").join(out.labels) in text
    elif out.format == "judgelm_scores":
        assert "a single line containing only two values" in text
        assert text.endswith("### Response:" + ("10" if out.kind == "score" else ""))
    elif out.format == "rating_brackets":
        assert '"[[rating]]"' in text and "Rating: [[5]]" in text
    elif out.format == "score_dict":
        assert f"'{out.overall_key}': 7}}" in text
    elif out.format == "pair_brackets":
        assert all(f'"[[{label}]]"' in text for label in out.labels)
    else:
        assert all(f"{{'{out.overall_key}': '{label}'}}" in text for label in out.labels)


def test_literal_dict_braces_survive_rendering():
    en = get_template("critiquellm_v2", Setting(Task.POINTWISE, True), "en").render_text(RECORD)
    assert "{'Dimension 1': score, 'Dimension 2': score, ..., 'Overall Score': score}" in en
    assert "{'Correctness': 9, 'User Satisfaction': 6, ..., 'Overall Score': 7}" in en
    zh = get_template("critiquellm_v2", Setting(Task.POINTWISE, False), "zh").render_text(RECORD)
    assert "{'事实正确性': 9, '满足用户需求': 6, ..., '综合得分': 7}" in zh
    pair = get_template("critiquellm_v2", Setting(Task.PAIRWISE, False), "zh").render_text(RECORD)
    assert "{'综合比较结果': '助手1'}或{'综合比较结果': '助手2'}或{'综合比较结果': '质量相当'}" in pair


def test_critiquellm_v2_dimension_defaults_and_overrides():
    t = get_template("critiquellm_v2", "pointwise_referenced", "zh")
    default = t.render_text(RECORD)
    assert "1. 事实正确性: " in default and "5. 丰富度: " in default
    assert t.render_text({**RECORD, "dimensions": None}) == default
    assert t.render_text({**RECORD, "dimensions": "  "}) == default
    custom = t.render_text({**RECORD, "dimensions": "1. 清晰度: 是否清晰。"})
    assert "1. 清晰度: 是否清晰。\n我们会给您提供" in custom and "丰富度" not in custom
    en = get_template("critiquellm_v2", "pairwise_referenced", "en").render_text(RECORD)
    assert "following dimensions:\n1. Correctness: " in en and "\n5. Richness: " in en


@pytest.mark.parametrize("name", [n for n in TEMPLATES if n.endswith("_en")])
def test_english_templates_contain_no_chinese(name):
    t = load_template(name)
    assert not CJK.search(full_text(t, dict.fromkeys(t.setting.fields + t.required, "x")))


def test_critiquellm_v1_en_differs_from_published_zh_only_in_language():
    for setting in ("pointwise_referenced", "pointwise_reference_free"):
        zh, en = get_template("critiquellm_v1", setting, "zh"), get_template("critiquellm_v1", setting, "en")
        assert zh.prompt.count("IN CHINESE") == 2 and "IN ENGLISH" not in zh.prompt
        assert en.prompt == zh.prompt.replace("IN CHINESE", "IN ENGLISH")


def test_record_values_are_inserted_literally():
    t = get_template("mtbench", "pointwise_reference_free")
    text = t.render_text({"question": "what is {response} and {{x}}?", "response": 42})
    assert "what is {response} and {{x}}?" in text
    assert "[The Start of Assistant's Answer]\n42\n[The End of Assistant's Answer]" in text


@pytest.mark.parametrize("name", TEMPLATES)
@pytest.mark.parametrize("bad", ["drop", None, "", " \n"])
def test_missing_required_field_names_template_and_field(name, bad):
    t = load_template(name)
    for f in t.setting.fields:
        if bad in ("", " \n") and f in RESPONSE_FIELDS:
            continue  # an empty response is judged, see test_blank_response_is_rendered
        record = {k: v for k, v in RECORD.items() if k != f} if bad == "drop" else {**RECORD, f: bad}
        with pytest.raises(TemplateFieldError) as err:
            t.render(record)
        assert isinstance(err.value, ValueError)
        assert err.value.fields == (f,) and err.value.template == name
        assert repr(f) in str(err.value) and name in str(err.value)


@pytest.mark.parametrize("name", TEMPLATES)
def test_blank_response_is_rendered(name):
    t = load_template(name)
    for f in set(t.setting.fields) & RESPONSE_FIELDS:
        text = t.render_text({**RECORD, f: ""})
        assert RECORD[f] not in text


def test_missing_fields_are_all_reported():
    t = get_template("mtbench", "pairwise_referenced")
    with pytest.raises(TemplateFieldError) as err:
        t.render_text({"question": "q", "response_1": "a"})
    assert err.value.fields == ("reference", "response_2")


# --------------------------------------------------------------------------- user template files
VALID = {
    "version": "0.1",
    "source": "test",
    "setting": "pointwise_reference_free",
    "language": "en",
    "fields": ["question", "response", "rubric"],
    "defaults": {"rubric": "helpfulness"},
    "system": "You grade with {rubric}.",
    "output": {"kind": "score", "format": "rating_brackets", "score_range": [1, 5]},
    "prompt": "Q: {question}\nA: {response}\nAnswer {{'score': n}} then [[n]].",
}


def write_yaml(tmp_path: Path, data: dict, name: str = "my_template.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def test_user_template_file_loads_and_renders(tmp_path):
    t = load_template(str(write_yaml(tmp_path, VALID)))
    assert t.name == "my_template" and t.output.score_range == (1.0, 5.0)
    assert t.render({"question": "q?", "response": "r."}) == [
        {"role": "system", "content": "You grade with helpfulness."},
        {"role": "user", "content": "Q: q?\nA: r.\nAnswer {'score': n} then [[n]]."},
    ]
    assert t.render({"question": "q?", "response": "r.", "rubric": "accuracy"})[0]["content"].endswith("accuracy.")
    assert load_template(write_yaml(tmp_path, VALID, "other.yml")).name == "other"  # a Path works too


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"prompt": VALID["prompt"] + " {score}"}, "not declared in 'fields': ['score']"),
        ({"system": "Use {rubrik}."}, "not declared in 'fields': ['rubrik']"),
        ({"fields": [*VALID["fields"], "extra"], "defaults": {"rubric": "h", "extra": "e"}}, "never uses: ['extra']"),
        ({"fields": ["question", "rubric"], "prompt": "{question} {rubric}"}, "lacks ['response']"),
        ({"defaults": {}}, "'defaults'"),
        ({"setting": "pointwise_graded"}, "'setting'"),
        ({"language": "fr"}, "'language'"),
        ({"version": 1.0}, "'version'"),
        ({"prompt": "{question} {response} {rubric} {'a': 1}"}, "'prompt'"),
        ({"prompt": "{question} {response} {rubric!r}"}, "'prompt'"),
        ({"colour": "red"}, "unknown key of a template 'colour'"),
        ({"output": {"kind": "score", "format": "rating_brackets"}}, "'output.score_range'"),
        ({"output": {"kind": "score", "format": "rating_brackets", "score_range": [5, 1]}}, "'output.score_range'"),
        ({"output": {"kind": "score", "format": "pair_brackets", "score_range": [1, 5]}}, "'output.format'"),
        ({"output": {"kind": "grade", "format": "rating_brackets"}}, "'output.kind'"),
        ({"output": {**VALID["output"], "dimensions": True}}, "'output.dimensions'"),
        ({"output": {**VALID["output"], "overall_key": "Score"}}, "'output.overall_key'"),
        ({"output": {"kind": "label", "format": "pair_brackets", "labels": ["A", "B", "C"]}}, "'output.kind'"),
    ],
)
def test_invalid_user_template_names_file_and_key(tmp_path, change, expected):
    path = write_yaml(tmp_path, {**VALID, **change})
    with pytest.raises(ValueError) as err:
        load_template(str(path))
    assert str(path) in str(err.value) and expected in str(err.value)


def test_label_output_needs_three_distinct_labels(tmp_path):
    data = {**VALID, "setting": "pairwise_reference_free", "fields": ["question", "response_1", "response_2"]}
    data.update(defaults={}, system=None, prompt="{question} {response_1} {response_2}")
    ok = {"kind": "label", "format": "pair_brackets", "labels": ["1", "2", "Tie"]}
    assert load_template(write_yaml(tmp_path, {**data, "output": ok})).output.labels == ("1", "2", "Tie")
    with pytest.raises(ValueError, match="'output.labels'"):
        load_template(write_yaml(tmp_path, {**data, "output": {**ok, "labels": ["A", "A", "C"]}}))


def test_unknown_name_or_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="mtbench_pointwise_referenced_en"):
        load_template("no_such_template")
    bad = tmp_path / "broken.yaml"
    bad.write_text("prompt: [unclosed", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.yaml: not valid YAML"):
        load_template(bad)


# --------------------------------------------------------------------------- lookup by family
@pytest.mark.parametrize(("family", "language"), sorted(EXPECTED))
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_get_template(family, language, setting):
    if setting.name in EXPECTED[(family, language)]:
        t = get_template(family, setting, language)
        assert (t.name, t.setting, t.language) == (f"{family}_{setting.name}_{language}", setting, language)
        assert get_template(family, setting.name, language) is t
    else:
        with pytest.raises(ValueError, match=f"family '{family}' has no template for '{setting.name}'") as err:
            get_template(family, setting, language)
        assert all(n in str(err.value) for n in TEMPLATES if n.startswith(family + "_"))


def test_get_template_defaults_to_english():
    assert get_template("mtbench", SETTINGS[0]).language == "en"


def test_unknown_family_lists_available_ones():
    with pytest.raises(ValueError, match="unknown template family 'prometheus'") as err:
        get_template("prometheus", SETTINGS[0])
    assert all(f in str(err.value) for f in ("critiquellm_v1", "critiquellm_v2", "critiquellm_6b", "mtbench"))


# --------------------------------------------------------------------------- fidelity against published files
def test_mtbench_templates_match_fastchat_judge_prompts(shared_data):
    path = shared_data / "selfeval" / "judge_prompts.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    fastchat = {d["name"]: d for d in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    rename = {"answer": "response", "ref_answer_1": "reference", "answer_a": "response_1", "answer_b": "response_2"}
    for name, setting in [
        ("single-v1", "pointwise_reference_free"),
        ("single-math-v1", "pointwise_referenced"),
        ("pair-v2", "pairwise_reference_free"),
        ("pair-math-v1", "pairwise_referenced"),
    ]:
        t = get_template("mtbench", setting)
        record = {new: f"<{old}>" for old, new in rename.items()} | {"question": "<question>"}
        expected = fastchat[name]["prompt_template"].format(
            **{old: f"<{old}>" for old in rename}, question="<question>"
        )
        assert t.render(record) == [
            {"role": "system", "content": fastchat[name]["system_prompt"]},
            {"role": "user", "content": expected},
        ]
