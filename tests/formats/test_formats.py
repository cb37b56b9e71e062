"""The critic-format registry: each critic family declared once, in one module of its own.

A new family is one declaration (here, in this file) plus its prompt YAMLs; the template lookup, the output-format check
of template files, the parser, the verdict grammar, the published input wrapper and ``--template auto`` all follow
from the registry, for grading and comparison alike.
"""

from __future__ import annotations

import argparse
import re
import shutil

import pytest

from hf_critic.commands.options import template_from_args
from hf_critic.core import schema
from hf_critic.core.schema import ParseStatus
from hf_critic.critic import Critic
from hf_critic.critic.grammars import critique_grammar, verdict_grammar
from hf_critic.formats import (
    BUILTIN_FAMILIES,
    DEFAULT_FAMILY,
    CriticFamily,
    VerdictFormat,
    builtin_template_families,
    family_for_model,
    get_family,
    output_formats,
    parse_output,
    pick_family,
    published_chat_format,
    register_family,
    unregister_family,
    verdict_format,
)
from hf_critic.parsing import ParsedCritique
from hf_critic.prompts import get_template, list_families, list_templates, load_template
from tests.critic.test_critic import ScriptedBackend

# ----------------------------------------------------------------------------------------------- a new family
ARROW_POINTWISE = """\
version: "1.0"
source: the terse test critic (tests/formats/test_formats.py)
setting: pointwise_reference_free
language: en
fields: [question, response]
output:
  kind: "score"
  format: "terse_arrow"
  score_range: [1, 10]
  verdict_prefix: "=>"
prompt: |-
  Grade the answer from 1 to 10. End with a line "=> score".
  Q: {question}
  A: {response}
"""
ARROW_PAIRWISE = """\
version: "1.0"
source: the terse test critic (tests/formats/test_formats.py)
setting: pairwise_reference_free
language: en
fields: [question, response_1, response_2]
output:
  kind: "label"
  format: "terse_arrow"
  labels: ["first", "second", "tie"]
  verdict_prefix: "=>"
prompt: |-
  Which answer is better? End with a line "=> first", "=> second" or "=> tie".
  Q: {question}
  1: {response_1}
  2: {response_2}
"""
TERSE_WRAPPER = "{% for m in messages %}<<{{ m['content'] }}>>{% endfor %}"


def parse_arrow(text: str, output) -> ParsedCritique:
    """The terse critic's verdict: a last line ``=> 7`` (a score) or ``=> first`` / ``second`` / ``tie``."""
    body, _, last = text.rstrip().rpartition("\n")
    m = re.fullmatch(r"=>[ \t]*(\S+)", last.strip())
    if m is None:
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    value, explanation = m.group(1), body.strip()
    if output.kind == "label":
        if value not in output.labels:
            return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
        return ParsedCritique(ParseStatus.OK, label=output.labels.index(value), explanation=explanation)
    if not value.isdigit():
        return ParsedCritique(ParseStatus.UNPARSED, explanation=text.strip())
    low, high = output.score_range
    if not low <= float(value) <= high:
        return ParsedCritique(ParseStatus.OUT_OF_RANGE, explanation=explanation)
    return ParsedCritique(ParseStatus.OK, score=float(value), explanation=explanation)


def terse_family(folder) -> CriticFamily:
    """The whole declaration of the terse critic: settings, templates, verdict format, wrapper, model names."""
    return CriticFamily(
        name="terse",
        title="The terse test critic",
        source="tests/formats/test_formats.py",
        templates={"pointwise_reference_free": ("en",), "pairwise_reference_free": ("en",)},
        formats=(VerdictFormat("terse_arrow", ("score", "label"), parse_arrow, closing="", default_prefix="=>"),),
        model_names=("tersecritic",),
        chat_template=TERSE_WRAPPER,
        chat_template_source="tests/formats/test_formats.py",
        template_dir=folder,
    )


@pytest.fixture
def terse(tmp_path):
    """The terse family registered for one test, its YAMLs in ``tmp_path``; unregistered afterwards."""
    (tmp_path / "terse_pointwise_reference_free_en.yaml").write_text(ARROW_POINTWISE, encoding="utf-8")
    (tmp_path / "terse_pairwise_reference_free_en.yaml").write_text(ARROW_PAIRWISE, encoding="utf-8")
    family = register_family(terse_family(tmp_path))
    yield family
    unregister_family("terse")


def reply(text: str, k: int) -> str:
    """The scripted terse critic: Paris is right, wherever it stands."""
    if "1: Paris" in text:
        return "The first names the capital.\n=> first"
    if "2: Paris" in text:
        return "The second names the capital.\n=> second"
    return "Right.\n=> 9" if "A: Paris" in text else "Wrong.\n=> 2"


def test_a_new_family_is_one_declaration(terse):
    """A family declared in one place (above) plus its YAMLs grades and compares like a built-in one."""
    assert "terse" in list_families() and "terse" not in builtin_template_families()
    assert output_formats()["terse_arrow"] == ("score", "label")
    critic = Critic(ScriptedBackend(reply), template="terse")
    graded = critic.grade([{"question": "Capital of France?", "response": r} for r in ("Paris.", "Berlin.")])
    assert graded[schema.CRITIQUE_SCORE] == [9.0, 2.0]
    assert graded[schema.CRITIQUE_EXPLANATION] == ["Right.", "Wrong."]
    pairs = [{"question": "Capital of France?", "response_1": "Paris.", "response_2": "Berlin."}]
    compared = critic.compare(pairs, swap=True)
    assert compared[schema.CRITIQUE_LABEL] == [0] and compared[schema.CRITIQUE_LABEL_SWAPPED] == [0]
    lost = Critic(ScriptedBackend(lambda t, k: "Paris, surely.\nfirst"), template="terse").compare(pairs)
    assert lost[schema.CRITIQUE_LABEL] == [None] and lost[schema.CRITIQUE_STATUS] == ["unparsed"]

    # the parser, the verdict grammar, the wrapper and --template auto all come from the one declaration
    template = get_template("terse", "pointwise_reference_free")
    assert parse_output("ok\n=> 11", template.output).status is ParseStatus.OUT_OF_RANGE
    assert verdict_grammar(template.output).startswith('root ::= "\\n" "=> " value\n')
    assert "explanation ::= [^{]" in critique_grammar(template.output, 100)
    assert family_for_model("acme/Terse-Critic-7B") == "terse"
    assert published_chat_format("/models/tersecritic-7b/") == ("terse", TERSE_WRAPPER)
    assert pick_family("acme/Terse-Critic-7B").family == "terse"
    pick = template_from_args(argparse.Namespace(template="auto", language="en"), "acme/Terse-Critic-7B")
    assert pick == ("terse", "en")
    with pytest.raises(ValueError, match="'terse' has no template for 'pairwise_referenced'"):
        get_template("terse", "pairwise_referenced")


def test_a_family_or_format_is_registered_once(terse, tmp_path):
    with pytest.raises(ValueError, match="registered already"):
        register_family(terse_family(tmp_path))
    clash = CriticFamily("terse2", "t", "s", formats=(VerdictFormat("rating_brackets", ("score",)),))
    with pytest.raises(ValueError, match=r"\['rating_brackets'\] are declared by another family"):
        register_family(clash)
    with pytest.raises(ValueError, match="not a family registered"):
        unregister_family(DEFAULT_FAMILY)


def test_an_unregistered_family_is_gone(tmp_path):
    family = register_family(terse_family(tmp_path))
    unregister_family(family.name)
    assert "terse" not in list_families() and verdict_format("terse_arrow") is None
    with pytest.raises(ValueError, match="unknown template family 'terse'"):
        get_template("terse", "pointwise_reference_free")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "Bad Name"}, "lower-case letters"),
        ({"templates": {"pointwise": ("en",)}}, "unknown setting"),
        ({"templates": {"pointwise_referenced": ("fr",)}}, "unknown setting"),
        ({"model_names": ("Prometheus-7B",)}, "model names"),
        ({"kind": "oracle"}, "kind must be"),
    ],
)
def test_a_bad_declaration_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CriticFamily(**{"name": "x", "title": "t", "source": "s", **kwargs})


# ----------------------------------------------------------------------------------------------- the built-ins
def test_every_builtin_template_file_is_declared_by_its_family():
    """One home: the built-in template files are exactly the families' declared (setting, language) pairs, each
    template's verdict format is declared by one family, and each format once."""
    assert sorted(n for f in BUILTIN_FAMILIES for n in f.template_names()) == list_templates()
    declared = [fmt.name for f in BUILTIN_FAMILIES for fmt in f.formats]
    assert len(declared) == len(set(declared))
    for family in BUILTIN_FAMILIES:
        for name in family.template_names():
            template = load_template(name)
            assert family.has_template(template.setting.name, template.language)
            assert template.output.format in declared
    assert builtin_template_families() == [
        "critiquellm_v2",
        "critiquellm_v1",
        "critiquellm_6b",
        "mtbench",
        "prometheus2",
        "autoj",
        "judgelm",
        "pandalm",
    ]
    assert list_families() == sorted(builtin_template_families())


def test_the_reward_model_family_judges_reference_free_without_a_prompt():
    family = get_family("reward_model")
    assert family.kind == "reward" and not family.templates and not family.formats
    assert family.settings == ("pointwise_reference_free", "pairwise_reference_free")
    assert "reward_model" not in list_families()


def test_only_published_critics_have_a_wrapper():
    wrapped = {f.name for f in BUILTIN_FAMILIES if f.chat_template is not None}
    assert wrapped == {"prometheus2", "autoj", "judgelm", "pandalm"}
    assert all(f.chat_template_source and f.model_names for f in BUILTIN_FAMILIES if f.chat_template is not None)


def test_from_pretrained_resolves_template_auto(tiny_model_dir, tmp_path, caplog):
    """``--template auto`` is the library's: Critic.from_pretrained picks the family from the model's name."""
    path = tmp_path / "autoj-13b"
    shutil.copytree(tiny_model_dir, path)
    with caplog.at_level("INFO", logger="hf_critic.critic"):
        critic = Critic.from_pretrained(str(path), template="auto", progress=False)
    assert (critic.template, critic.language) == ("autoj", "en")
    assert "--template auto: using template family 'autoj'" in caplog.text
    plain = Critic.from_pretrained(str(tiny_model_dir), template="auto", language="zh", progress=False)
    assert (plain.template, plain.language) == (DEFAULT_FAMILY, "zh")


# ------------------------------------------------------------------ chat template files for servers (vllm --chat-template)
def test_chat_template_file_renders_the_published_wrapper(tmp_path):
    """``python -m hf_critic.formats chat-template prometheus2 --output F``: the file vLLM's --chat-template reads
    renders Prometheus 2's published "[INST] {system}\\n{user} [/INST]" (and the comment naming its source, nothing)."""
    import subprocess
    import sys

    import jinja2

    out = tmp_path / "prometheus2.jinja"
    done = subprocess.run(
        [sys.executable, "-m", "hf_critic.formats", "chat-template", "prometheus2", "--output", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"wrote {out}" in done.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("{# hf-critic prometheus2: prometheus-eval/prometheus-eval @ ")
    messages = [{"role": "system", "content": "You are a fair judge."}, {"role": "user", "content": "Grade this."}]
    rendered = jinja2.Environment().from_string(text).render(messages=messages, bos_token="<s>")
    assert rendered == "<s>[INST] You are a fair judge.\nGrade this. [/INST]"  # jinja drops the final newline


def test_chat_template_file_refuses_a_family_without_a_wrapper():
    from hf_critic.formats.__main__ import chat_template_file

    assert chat_template_file("autoj").endswith("{% endfor %} [/INST]\n")
    with pytest.raises(ValueError, match="'mtbench' has no published input wrapper"):
        chat_template_file("mtbench")


def test_prometheus2_without_a_rubric_says_to_give_rubric():
    """The error named the missing field only."""
    from hf_critic.io import RecordError

    critic = Critic(ScriptedBackend(lambda user, k: "x"), template="prometheus2")
    with pytest.raises(RecordError, match="missing or empty field\\(s\\) 'rubric'; give the criteria with rubric="):
        critic.grade([{"question": "q", "response": "a"}])
