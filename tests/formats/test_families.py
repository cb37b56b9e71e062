"""The published critics' template families: exact prompts, strict parsers, rubrics, scales, auto pick.

Each family's templates must render the model's published prompt exactly: the expected texts below are the published
strings with their own placeholder names (Prometheus 2 README, Auto-J ``constants_prompt.py``, JudgeLM ``common.py`` +
``gen_model_judgement*.py``, PandaLM ``build_pandalm_prompt``), filled by ``str.format`` from the same record. The
parsers are tested on every verdict spelling their repositories document and on 200 generated near-misses per
family and setting, which must all come out unparsed.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from hf_critic.backends.cache import cache_key
from hf_critic.commands.options import template_from_args
from hf_critic.core import schema
from hf_critic.core.schema import ParseStatus, Task
from hf_critic.critic import Critic
from hf_critic.critic.config import parse_score_range
from hf_critic.formats import family_for_model, known_critics, parse_output
from hf_critic.loaders.prometheus import split_prometheus_prompt
from hf_critic.prompts import (
    Rubric,
    TemplateFieldError,
    get_template,
    list_families,
    list_templates,
    load_rubric,
    load_template,
)
from tests.critic.test_critic import ScriptedBackend

FAMILIES = {
    "prometheus2": {
        "en": ["pointwise_referenced", "pointwise_reference_free", "pairwise_referenced", "pairwise_reference_free"]
    },
    "autoj": {
        "en": ["pointwise_reference_free", "pairwise_reference_free"],
        "zh": ["pointwise_reference_free", "pairwise_reference_free"],
    },
    "judgelm": {"en": ["pointwise_referenced", "pairwise_referenced", "pairwise_reference_free"]},
    "pandalm": {"en": ["pairwise_reference_free"]},
}
NAMES = sorted(f"{fam}_{s}_{lang}" for fam, langs in FAMILIES.items() for lang, ss in langs.items() for s in ss)
RECORD = {
    "question": "QUESTION-7f3a What is 2+2?",
    "reference": "REFERENCE-91c2 4",
    "response": "RESPONSE-0b5e four",
    "response_1": "RESPONSE1-aa11 4",
    "response_2": "RESPONSE2-bb22 5",
    "rubric": "RUBRIC-5d1e [Is it correct?]\nScore 1: no.\nScore 5: yes.",
}

# ------------------------------------------------------------------------------------------- published prompt texts
# Prometheus 2: prometheus-eval README @ 049b0aa (quotes unescaped), absolute without reference: prompts.py @ 8536c6d.
P2_ABS_SYSTEM = (
    "You are a fair judge assistant tasked with providing clear, objective feedback based on specific criteria, "
    "ensuring each assessment reflects the absolute standards set for performance."
)
P2_REL_SYSTEM = (
    "You are a fair judge assistant assigned to deliver insightful feedback that compares individual performances, "
    "highlighting how each stands relative to others within the same cohort."
)
P2_ABS_HEAD = """###Task Description:
An instruction (might include an Input inside it), a response to evaluate, {described}and a score rubric representing a evaluation criteria are given.
1. Write a detailed feedback that assess the quality of the response strictly based on the given score rubric, not evaluating in general.
2. After writing a feedback, write a score that is an integer between 1 and 5. You should refer to the score rubric.
3. The output format should look as follows: "Feedback: (write a feedback for criteria) [RESULT] (an integer number between 1 and 5)"
4. Please do not generate any other opening, closing, and explanations.

###The instruction to evaluate:
{{orig_instruction}}

###Response to evaluate:
{{orig_response}}

"""  # noqa: E501
P2_ABS_REF = (
    P2_ABS_HEAD.format(described="a reference answer that gets a score of 5, ")
    + "###Reference Answer (Score 5):\n{orig_reference_answer}\n\n###Score Rubrics:\n{orig_rubric}\n\n###Feedback: "
)
P2_ABS_FREE = P2_ABS_HEAD.format(described="") + "###Score Rubrics:\n{orig_rubric}\n\n###Feedback: "
P2_REL_HEAD = """###Task Description:
An instruction (might include an Input inside it), a response to evaluate, and a score rubric representing a evaluation criteria are given.
1. Write a detailed feedback that assess the quality of two responses strictly based on the given score rubric, not evaluating in general.
2. After writing a feedback, choose a better response between Response A and Response B. You should refer to the score rubric.
3. The output format should look as follows: "Feedback: (write a feedback for criteria) [RESULT] (A or B)"
4. Please do not generate any other opening, closing, and explanations.

###Instruction:
{orig_instruction}

###Response A:
{orig_response_A}

###Response B:
{orig_response_B}

"""  # noqa: E501
P2_REL_REF = (
    P2_REL_HEAD + "###Reference Answer:\n{orig_reference_answer}\n\n###Score Rubric:\n{orig_criteria}\n\n###Feedback: "
)
P2_REL_FREE = P2_REL_HEAD + "###Score Rubric:\n{orig_criteria}\n\n###Feedback: "
# Auto-J: GAIR-NLP/auto-j codes/usage/constants_prompt.py @ 5e280be and zh_constants_prompt.py @ 7b7ddd7.
AUTOJ_SINGLE = """Write critiques for a submitted response on a given user's query, and grade the response:
  
[BEGIN DATA]
***
[Query]: {prompt}
***
[Response]: {response}
***
[END DATA]

Write critiques for this response. After that, you should give a final rating for the response on a scale of 1 to 10 by strictly following this format: "[[rating]]", for example: "Rating: [[5]]".\
"""  # noqa: E501, W293
AUTOJ_PAIR = """You are assessing two submitted responses on a given user's query and judging which response is better or they are tied. Here is the data:

[BEGIN DATA]
***
[Query]: {prompt}
***
[Response 1]: {response}
***
[Response 2]: {response_another}
***
[END DATA]

Here are the instructions to assess and compare the two responses:

1. Pinpoint the key factors to distinguish these two responses.
2. Conclude your comparison by providing a final decision on which response is better, or they are tied. Begin your final decision statement with "So, the final decision is Response 1 / Response 2 / Tie". Ensure that your decision aligns coherently with the comprehensive evaluation and comparison you've provided.\
"""  # noqa: E501
AUTOJ_ZH_SINGLE = """为上传的针对给定用户问题的回应撰写评论, 并为该回复打分:

[BEGIN DATA]
***
[用户问询]: {prompt}
***
[回应]: {response}
***
[END DATA]

为这个回应撰写评论. 在这之后, 你应该按照如下格式给这个回应一个最终的1-10范围的评分: "[[评分]]", 例如: "评分: [[5]]".\
"""
AUTOJ_ZH_PAIR = """你将要评价两个针对给定用户问题的回应，并判断哪个回应胜出或两者持平。以下是相关内容:

[BEGIN DATA]
***
[用户问询]: {prompt}
***
[回应1]: {response}
***
[回应2]: {response_another}
***
[END DATA]

以下是评价并比较两个回应的指南：

1. 确定区分两个回应的关键因素。
2. 通过提供最终对何者胜出或两者持平的决定来总结你的比较和评价。最终决定语句应以\"所以，最终决定是回应1/回应2/平局\"开头。确保你的决定与你提供的综合的评价和比较一致。\
"""
# JudgeLM: judgelm/llm_judge/common.py @ 0da7c22; input = system + "\n" + prompt_template.format(...) + appendix.
JL_SYSTEM = "You are a helpful and precise assistant for checking the quality of the answer."
JL_PROMPT = (
    "We would like to request your feedback on the performance of two AI assistants in response to the user question "
    "displayed above.\nPlease rate the helpfulness, relevance, accuracy, level of details of their responses. Each "
    "assistant receives an overall score on a scale of 1 to 10, where a higher score indicates better overall "
    "performance.\nPlease first output a single line containing only two values indicating the scores for Assistant 1 "
    "and 2, respectively. The two scores are separated by a space. In the subsequent line, please provide a "
    "comprehensive explanation of your evaluation, avoiding any potential bias and ensuring that the order in which "
    "the responses were presented does not affect your judgment."
)
JL_TEMPLATE = (
    "[Question]\n{question}\n\n[The Start of Assistant 1's Answer]\n{answer_1}\n\n[The End of Assistant 1's Answer]\n\n"
    "[The Start of Assistant 2's Answer]\n{answer_2}\n\n[The End of Assistant 2's Answer]\n\n[System]\n{prompt}\n\n"
)
JL_TEMPLATE_REF = (
    "[Question]\n{question}\n\n[Reference Answer]\n{reference}\n\n[The Start of Assistant 1's Answer]\n{answer_1}\n\n"
    "[The End of Assistant 1's Answer]\n\n[The Start of Assistant 2's Answer]\n{answer_2}\n\n"
    "[The End of Assistant 2's Answer]\n\n[System]\n{prompt}\n\n"
)
# PandaLM: pandalm/utils/pandalm_inference.py @ 6823887, build_pandalm_prompt without an Input.
PANDALM = (
    "Below are two responses for a given task. The task is defined by the Instruction. Evaluate the responses and "
    "generate a reference answer for the task.\n\n### Instruction:\n{instruction}\n\n{rsp}\n\n### Evaluation:\n"
)


def published(name: str, r: dict) -> list[dict[str, str]]:
    """The chat messages each published source builds from record ``r`` (the independent expectation)."""
    q, ref, resp, r1, r2, rubric = (
        r[k] for k in ("question", "reference", "response", "response_1", "response_2", "rubric")
    )
    user = {
        "prometheus2_pointwise_referenced_en": P2_ABS_REF.format(
            orig_instruction=q, orig_response=resp, orig_reference_answer=ref, orig_rubric=rubric
        ),
        "prometheus2_pointwise_reference_free_en": P2_ABS_FREE.format(
            orig_instruction=q, orig_response=resp, orig_rubric=rubric
        ),
        "prometheus2_pairwise_referenced_en": P2_REL_REF.format(
            orig_instruction=q, orig_response_A=r1, orig_response_B=r2, orig_reference_answer=ref, orig_criteria=rubric
        ),
        "prometheus2_pairwise_reference_free_en": P2_REL_FREE.format(
            orig_instruction=q, orig_response_A=r1, orig_response_B=r2, orig_criteria=rubric
        ),
        "autoj_pointwise_reference_free_en": AUTOJ_SINGLE.format(prompt=q, response=resp),
        "autoj_pairwise_reference_free_en": AUTOJ_PAIR.format(prompt=q, response=r1, response_another=r2),
        "autoj_pointwise_reference_free_zh": AUTOJ_ZH_SINGLE.format(prompt=q, response=resp),
        "autoj_pairwise_reference_free_zh": AUTOJ_ZH_PAIR.format(prompt=q, response=r1, response_another=r2),
        "judgelm_pairwise_reference_free_en": JL_SYSTEM
        + "\n"
        + JL_TEMPLATE.format(question=q, answer_1=r1, answer_2=r2, prompt=JL_PROMPT)
        + "### Response:",
        "judgelm_pairwise_referenced_en": JL_SYSTEM
        + "\n"
        + JL_TEMPLATE_REF.format(question=q, reference=ref, answer_1=r1, answer_2=r2, prompt=JL_PROMPT)
        + "### Response:",
        "judgelm_pointwise_referenced_en": JL_SYSTEM
        + "\n"
        + JL_TEMPLATE.format(question=q, answer_1=ref, answer_2=resp, prompt=JL_PROMPT)
        + "### Response:10",
        "pandalm_pairwise_reference_free_en": PANDALM.format(
            instruction=q, rsp=f"### Response 1:\n{r1}\n\n### Response 2:\n{r2}"
        ),
    }[name]
    system = {"prometheus2_pointwise": P2_ABS_SYSTEM, "prometheus2_pairwise": P2_REL_SYSTEM}.get(
        "_".join(name.split("_")[:2])
    )
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]


def test_inventory_of_published_families():
    have = [n for n in list_templates() if n.split("_")[0] in FAMILIES]
    assert have == NAMES
    for name in NAMES:
        t = load_template(name)
        assert t.models and t.license and "@" in t.source  # model ids, licence, file @ commit
        assert all(family_for_model(m) == name.split("_")[0] for m in t.models)


@pytest.mark.parametrize("name", NAMES)
def test_render_is_the_published_prompt(name):
    assert load_template(name).render(RECORD) == published(name, RECORD)


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("prometheus2")])
def test_prometheus2_needs_a_rubric(name):
    with pytest.raises(TemplateFieldError, match="'rubric'"):
        load_template(name).render({k: v for k, v in RECORD.items() if k != "rubric"})


def _shared_prometheus_prompts(shared_data, files):
    for file in files:
        for item in json.loads((shared_data / "prometheus" / file).read_text(encoding="utf-8")):
            yield from (item[k] for k in ("instruction", "chosen_instruction", "rejected_instruction") if k in item)


def test_prometheus2_renders_the_640_shared_grading_prompts_byte_for_byte(shared_data):
    """MT-Bench + Vicuna-Bench absolute grading prompts (with reference) of prometheus-eval @ dcfb442."""
    template = get_template("prometheus2", "pointwise_referenced")
    prompts = list(_shared_prometheus_prompts(shared_data, ["mt_bench_eval.json", "vicuna_eval.json"]))
    same = sum(template.render_text(split_prometheus_prompt(p)) == p for p in prompts)
    print(f"prometheus2_pointwise_referenced_en: {same}/{len(prompts)} shared prompts match byte for byte")
    assert (same, len(prompts)) == (640, 640)


def test_prometheus2_reference_free_renders_the_442_hhh_prompts_byte_for_byte(shared_data):
    template = get_template("prometheus2", "pointwise_reference_free")
    prompts = list(_shared_prometheus_prompts(shared_data, ["hhh_alignment_eval.json"]))
    same = sum(template.render_text(split_prometheus_prompt(p)) == p for p in prompts)
    print(f"prometheus2_pointwise_reference_free_en: {same}/{len(prompts)} HHH prompts match byte for byte")
    assert (same, len(prompts)) == (442, 442)


# ------------------------------------------------------------------------------------------------------- parsers
# Every verdict spelling the families' papers / repositories document, with the value it must give.
DOCUMENTED = {
    "prometheus2_pointwise_referenced_en": [  # README "Direct Assessment Output Format"; item 3 of the prompt
        *((f"Feedback: The response is fine. [RESULT] {n}", float(n)) for n in range(1, 6)),
        *((f"The response is fine. [RESULT] {n}", float(n)) for n in range(1, 6)),
        ("The response meets the rubric.\n[RESULT] 4\n", 4.0),
        ("Feedback: good [RESULT]3", 3.0),
    ],
    "prometheus2_pairwise_referenced_en": [  # README "Pairwise Ranking Output Format"
        ("Feedback: Response A is accurate, B is not. [RESULT] A", 0),
        ("Response B follows the rubric better. [RESULT] B", 1),
        ("Feedback: both fine, A better. [RESULT] A\n", 0),
    ],
    "autoj_pointwise_reference_free_en": [  # single prompt: "Rating: [[5]]"; README extract_single_rating (float)
        *((f"The response is ...\n\nRating: [[{n}]]", float(n)) for n in range(1, 11)),
        ("The response is ... Rating: [[6.0]]", 6.0),
        ("In conclusion, ... for a comprehensive summary. \n\nRating: [[6]] ", 6.0),  # Auto-J's own critiques
    ],
    "autoj_pointwise_reference_free_zh": [(f"这个回应……\n\n评分: [[{n}]]", float(n)) for n in range(1, 11)],
    "autoj_pairwise_reference_free_en": [  # "So, the final decision is Response 1 / Response 2 / Tie"; README extraction
        ("1. The key factors ...\n\n2. So, the final decision is Response 1.", 0),
        ("So, the final decision is Response 2", 1),
        ("... So, the final decision is Tie. Both are equally good.", 2),
        ("So, the final decision is response 2.", 1),
        ("The final decision is Tie", 2),
    ],
    "autoj_pairwise_reference_free_zh": [
        ("关键因素……\n所以，最终决定是回应1。", 0),
        ("所以，最终决定是回应2", 1),
        ("所以，最终决定是平局。", 2),
    ],
    "judgelm_pairwise_referenced_en": [  # "a single line containing only two values ... separated by a space"
        ("8 7\nAssistant 1 is more accurate.", 0),
        ("6 9\nAssistant 2 ...", 1),
        ("8 8\nBoth ...", 2),
        ("7.5 8.0\n...", 1),
        ("9,7\n...", 0),  # parse_score replaces ',' by ' '
        ("10 1", 0),
    ],
    "judgelm_pointwise_referenced_en": [  # after the prompt's "### Response:10", the graded answer's score
        *((f" {n}\nThe answer ...", float(n)) for n in range(1, 11)),
        ("7\n", 7.0),
    ],
    "pandalm_pairwise_reference_free_en": [  # "{result}\n\n### Reason: {explain}\n\n### Reference: {ref}\n"
        ("1\n\n### Reason: Response 1 is correct.\n\n### Reference: 4\n", 0),
        ("2\n\n### Reason: ...\n\n### Reference: ...\n", 1),
        ("Tie\n\n### Reason: Both ...\n\n### Reference: ...\n", 2),
        ("tie\n\n### Reason: ...", 2),
    ],
}
# The two settings of one output format share their spellings.
DOCUMENTED["prometheus2_pointwise_reference_free_en"] = DOCUMENTED["prometheus2_pointwise_referenced_en"]
DOCUMENTED["prometheus2_pairwise_reference_free_en"] = DOCUMENTED["prometheus2_pairwise_referenced_en"]
DOCUMENTED["judgelm_pairwise_reference_free_en"] = DOCUMENTED["judgelm_pairwise_referenced_en"]

# Near-misses: shapes that look like the verdict but are not in the documented format; {n} a valid value.
NEAR_MISSES = {
    # Spellings with an unambiguous verdict ("[Result] 4", "[RESULT] (4)", "[RESULT] 4/5", "Score: 4" ending the
    # critique, "[RESULT] Response A", "RESULT: A") are read (test_prometheus2_reads_every_unambiguous_spelling).
    "prometheus2_score": [
        "[RESULT] {n}.5",
        "[RESULT]",
        "[RESULT] five",
        "[[{n}]]",
        "[RESULT] (an integer number between 1 and 5)",
        "[RESULT] {n} points",
        "[RESULT] -{n}",
        "{n} [RESULT]",
        "[RESULT] {n}, I think",
        "[RESULT] {n}{n}.0",
        "[RESULT] {n}/10",
        "[RESULT] {n} out of 10",
        "a score of {n}",
        "Score: {n}.5",
        "[RESULT] {n} or {n}",
    ],
    "prometheus2_label": [
        "[RESULT] C",
        "[RESULT] A or B",
        "[RESULT] (A or B)",
        "[RESULT]",
        "[RESULT] AB",
        "[RESULT] A/B",
        "[RESULT] Tie",
        "[RESULT] a",
        "[RESULT] b is better",
        "[[A]]",
        "A [RESULT]",
        "[RESULT] A, B",
        "[RESULT] {n}",
        "[RESULT] Response C",
        "I select Response B",
        "Response B",
        "(B)",
        "[RESULT] response a",
    ],
    "autoj_rating": [
        "Rating: [{n}]",
        "Rating [[{n}]]",
        "rating: [[{n}]]",
        "Rating: [[five]]",
        "Rating: [[{n}/10]]",
        "Rating: [[]]",
        "Rating: [[{n}]",
        "Rating: {n}",
        "Rating:[[{n}]]",
        "Score: [[{n}]]",
        "RATING: [[{n}]]",
        "Rating: [ [{n}]]",
        "Rating: [[{n} out of 10]]",
        "[[{n}]]",
    ],
    "autoj_rating_zh": ["评分: [{n}]", "评分 [[{n}]]", "评分：[[{n}]]", "评分: [[五]]", "评分: {n}", "得分: [[{n}]]"],
    "autoj_decision": [
        "So, the final decision is Response 1 / Response 2 / Tie",
        "So, the final decision is Response {n}0",
        "So, the final decision is tied",
        "So, the final decision is not Response 1",
        "So, the final decision is that Response 2 is better",
        "So, the decision is Response 1",
        "Response 1",
        "So, the final decision is Assistant 1",
        "So, the final decision is: Response 1",
        "final decision: Tie",
        "So, the final decision is Response1",
        "So, the final decision is Responses 1",
        "So, the final verdict is Tie",
    ],
    "autoj_decision_zh": [
        "所以，最终决定是回应1/回应2/平局",
        "所以，最终决定是回应{n}0",
        "所以，最终决定是：回应1",
        "所以，决定是回应1",
        "回应1",
        "所以，最终决定是平",
        "所以，最终决定是助手1",
    ],
    "judgelm_pair": [
        "{n} {n} {n}\n...",
        "{n}\n...",
        "Assistant 1: {n}\n",
        "{n}/10 {n}/10\n",
        "eight seven\n",
        "{n}, {n}, {n}\n",
        "Score: {n} {n}\n",
        "{n} and {n}\n",
        "[{n}, {n}]\n",
        "{n}-{n}\n",
        "The scores are {n} {n}\n",
        "{n}{n}{n}{n} {n}\n",
    ],
    "judgelm_single": [
        "{n} {n}\n...",
        "Assistant 2: {n}\n",
        "{n}/10\n",
        "seven\n",
        "Score: {n}\n",
        "[{n}]\n",
        "{n} points\n",
        "{n}.{n}.{n}\n",
        "- {n}\n",
        "{n}{n}{n}{n}\n",
    ],
    "pandalm": [
        "Response 1\n",
        "1.\n",
        "1 2\n",
        "Tied\n",
        "Response {n}\n...",
        "The answer is 1\n",
        "{n}0\n",
        "3\n",
        "A\n",
        "### Reason: 1\n",
        "1 is better\n",
        "[1]\n",
        "Tie!\n",
    ],
}
NEAR_MISS_KIND = {
    "prometheus2_pointwise_referenced_en": "prometheus2_score",
    "prometheus2_pointwise_reference_free_en": "prometheus2_score",
    "prometheus2_pairwise_referenced_en": "prometheus2_label",
    "prometheus2_pairwise_reference_free_en": "prometheus2_label",
    "autoj_pointwise_reference_free_en": "autoj_rating",
    "autoj_pointwise_reference_free_zh": "autoj_rating_zh",
    "autoj_pairwise_reference_free_en": "autoj_decision",
    "autoj_pairwise_reference_free_zh": "autoj_decision_zh",
    "judgelm_pairwise_referenced_en": "judgelm_pair",
    "judgelm_pairwise_reference_free_en": "judgelm_pair",
    "judgelm_pointwise_referenced_en": "judgelm_single",
    "pandalm_pairwise_reference_free_en": "pandalm",
}
LEADS = [
    "",
    "Feedback: ",
    "The response is accurate but brief. ",
    "Both answers are close.\n\n",
    "分析：\n",
    "**Verdict**\n",
]
TAILS = ["", "\n", " ", ".", "\nThanks."]


def near_misses(name: str, count: int = 200) -> list[str]:
    """``count`` distinct generated near-misses for the template ``name`` (seeded, so reproducible)."""
    rng, shapes, out = random.Random(name), NEAR_MISSES[NEAR_MISS_KIND[name]], set()
    first_line = name.startswith(("judgelm", "pandalm"))  # their verdict is the first line: no lead before it
    while len(out) < count:
        text = rng.choice(shapes).format(n=rng.randint(1, 5))
        lead = "" if first_line else rng.choice(LEADS)
        out.add(
            lead
            + text
            + rng.choice(TAILS)
            + ("\n" * rng.randint(0, 2) + "x" * rng.randint(0, 40) if first_line else "")
        )
    return sorted(out)


@pytest.mark.parametrize("name", NAMES)
def test_parser_reads_every_documented_spelling(name):
    output = load_template(name).output
    for text, expected in DOCUMENTED[name]:
        parsed = parse_output(text, output)
        assert parsed.status is ParseStatus.OK, text
        assert (parsed.score if output.kind == "score" else parsed.label) == expected, text


@pytest.mark.parametrize("name", NAMES)
def test_parser_leaves_200_near_misses_unparsed(name):
    output = load_template(name).output
    texts = near_misses(name)
    assert len(texts) == 200
    wrong = [(t, parse_output(t, output)) for t in texts]
    wrong = [
        (t, p) for t, p in wrong if p.status is not ParseStatus.UNPARSED or p.score is not None or p.label is not None
    ]
    assert wrong == []


def test_parsers_out_of_range_and_last_marker():
    p2 = get_template("prometheus2", "pointwise_referenced").output
    assert parse_output("x [RESULT] 6", p2).status is ParseStatus.OUT_OF_RANGE
    assert parse_output("[RESULT] 2 ... then [RESULT] (an integer number between 1 and 5)", p2).score is None
    assert parse_output("quoted [RESULT] 2 earlier\nFeedback: ok [RESULT] 5", p2).score == 5.0
    autoj = get_template("autoj", "pointwise_reference_free").output
    assert parse_output("Rating: [[11]]", autoj).status is ParseStatus.OUT_OF_RANGE
    assert parse_output("Rating: [[3]] then Rating: [[7]]", autoj).score == 7.0
    judgelm = get_template("judgelm", "pairwise_referenced").output
    assert parse_output("11 3\n", judgelm).status is ParseStatus.OUT_OF_RANGE
    assert parse_output("0 3\n", judgelm).label is None


# prometheus-eval's own parser tests (prometheus-eval/prometheus-eval, libs/prometheus-eval/tests/test_parser.py: 30
# parametrised texts plus the empty text in both modes), re-written here with hf-critic's expected outcome: the score
# (1-5 rubric) or the label, or None for unparsed. hf-critic agrees with prometheus-eval on all 32.
PROMETHEUS_EVAL_CASES = [
    # absolute grading: the verdict is unambiguous, only the spelling differs from "[RESULT] 4"
    ("Excellent. [RESULT] 5 out of 5", "score", 5.0),  # "x out of 5" on the 1-5 scale reads as x
    ("Poor performance. [RESULT] score of 1", "score", 1.0),  # a "score of" lead after the tag
    ("Good job. [Result] 3", "score", 3.0),  # the tag in another case
    ("Needs improvement. [Result] Score: 2", "score", 2.0),  # a "Score:" lead after the tag
    ("Well done. [Result] Result: 4", "score", 4.0),  # a "Result:" lead after the tag
    ("Average. [Result] 4/5", "score", 4.0),  # "x/5" on the 1-5 scale reads as x
    ("Excellent. [Result] 5 out of 5", "score", 5.0),
    ("Poor performance. [Result] score of 1", "score", 1.0),
    ("Good job. (Score 5)", "score", 5.0),  # no tag: a bracketed score ending the critique
    ("Good job. [Score 4]", "score", 4.0),
    ("Good job. score: 3", "score", 3.0),  # no tag: a sentence that is nothing but the score, ending the critique
    ("Good job. Score: 3", "score", 3.0),
    ("Good job. score of 1", "score", 1.0),
    ("Good job. [RESULT] (5)", "score", 5.0),  # the score in parentheses
    # absolute grading: no verdict to read
    ("The score is definitely not 3.", "score", None),  # mentions a number, and negates it
    ("I rate this a perfect 10!", "score", None),  # no verdict marker (and 10 is off the 1-5 scale)
    ("Score: 2.5", "score", None),  # not one of the rubric's integer scores
    ("Result: A", "score", None),  # a label where a score is asked
    ("", "score", None),  # nothing at all
    # relative grading
    ("Response A is better. [RESULT] A", "label", 0),  # the documented format
    ("Prefer Response B. [RESULT] B", "label", 1),
    (
        "Feedback: Both responses are similar... [Response B]",
        "label",
        1,
    ),  # no tag: a bracketed "Response B" at the end
    ("Feedback: Both responses are clear... [Result] Response B", "label", 1),  # "Response B" after the tag
    ("Feedback: Both responses are clear... [RESULT: B]", "label", 1),  # the label inside the tag's brackets
    ("Feedback: Both responses are clear... [Result: B]", "label", 1),
    ("Feedback: Both responses are clear...Response A. [RESULT] B", "label", 1),  # prose names A, the tag says B
    ("Feedback: Both responses are clear... Response B Response A", "label", None),  # two verdicts, no marker
    ("After careful consideration, I select Response B.", "label", None),  # prose, no verdict marker
    ("Both responses have their merits.", "label", None),  # no verdict
    ("Response C is clearly superior.", "label", None),  # C is no label of the template (and no marker)
    ("The better response is obviously B... or is it A? It's hard to decide.", "label", None),  # undecided
    ("", "label", None),  # nothing at all
]
# More spellings decided the same way (each was unparsed before; the refused ones stay unparsed).
PROMETHEUS_MORE_CASES = [
    ("Feedback: ok. [ RESULT ] 4", "score", 4.0),  # spaces inside the tag
    ("Feedback: ok. (RESULT) 4", "score", 4.0),  # the tag in parentheses
    ("Feedback: ok. [RESULT 4]", "score", 4.0),  # the score inside the tag's brackets
    ("Feedback: ok.\nRESULT: 4", "score", 4.0),  # an untagged result line ending the critique
    ("Feedback: ok. **Score:** 4", "score", 4.0),  # markdown bold around the lead
    ("Feedback: ok. The final score is 4.", "score", 4.0),
    ("Feedback: ok. [RESULT] 4\nScore: 4", "score", 4.0),  # the same verdict twice
    ("Feedback: ok. [RESULT] 3\nScore: 4", "score", None),  # two different verdicts
    ("Feedback: ok. Score: 4\nThanks.", "score", None),  # an untagged score that does not end the critique
    ("Feedback: ok. I would not give it a score of 4", "score", None),  # a "score of" inside a sentence
    ("Feedback: ok. [RESULT] 4/10", "score", None),  # another scale than the rubric's 1-5
    ("Feedback: ok. [RESULT] 6 out of 5", "score", "out_of_range"),
    ("Feedback: ok. [RESULT] (an integer number between 1 and 5)\nScore: 4", "score", None),  # the last tag rules
    ("Feedback: ok.\nRESULT: A", "label", 0),
    ("Feedback: ok. (Response A)", "label", 0),
    ("Feedback: ok. [RESULT] (B)", "label", 1),
    ("Feedback: ok. [RESULT] A\nResult: B", "label", None),  # two different verdicts
    ("Feedback: ok. [RESULT] a", "label", None),  # lower-case "a" is the article: "[RESULT] a tie" cut short
    ("Feedback: ok. (B)", "label", None),  # a bare bracketed letter is a list or citation mark
    ("Feedback: ok. Result: B is better", "label", None),  # a sentence goes on after the letter
]


@pytest.mark.parametrize(("text", "kind", "expected"), PROMETHEUS_EVAL_CASES + PROMETHEUS_MORE_CASES)
def test_prometheus2_reads_every_unambiguous_spelling(text, kind, expected):
    setting = "pointwise_referenced" if kind == "score" else "pairwise_referenced"
    parsed = parse_output(text, get_template("prometheus2", setting).output)
    if expected == "out_of_range":
        assert (parsed.status, parsed.score) == (ParseStatus.OUT_OF_RANGE, None)
    elif expected is None:
        assert (parsed.status, parsed.score, parsed.label) == (ParseStatus.UNPARSED, None, None)
    elif kind == "score":
        assert (parsed.status, parsed.score) == (ParseStatus.OK, expected)
    else:
        assert (parsed.status, parsed.label) == (ParseStatus.OK, expected)


def test_prometheus2_explanations_cut_the_new_spellings():
    p2 = get_template("prometheus2", "pointwise_referenced").output
    assert parse_output("Feedback: Clear and right. [Result] Score: 4", p2).explanation == "Clear and right."
    assert parse_output("Feedback: Clear and right. (Score 5)", p2).explanation == "Clear and right."
    assert parse_output("Clear and right.\nRESULT: 4\n", p2).explanation == "Clear and right."


def test_explanations_cut_the_verdict():
    p2 = get_template("prometheus2", "pointwise_referenced").output
    assert parse_output("Feedback: Clear and right. [RESULT] 5", p2).explanation == "Clear and right."
    autoj = get_template("autoj", "pairwise_reference_free").output
    assert parse_output("Key factors: accuracy.\nSo, the final decision is Response 2.", autoj).explanation == (
        "Key factors: accuracy."
    )
    pandalm = get_template("pandalm", "pairwise_reference_free").output
    assert parse_output("2\n\n### Reason: R2 is right.", pandalm).explanation == "### Reason: R2 is right."


# ------------------------------------------------------------------------------------------------ rubric and scale
def write(tmp_path, text, name="rubric.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_example_rubric_renders_prometheus_helpfulness():
    from tests.conftest import REPO_ROOT

    rubric = load_rubric(REPO_ROOT / "examples" / "rubric_helpfulness.yaml")
    assert rubric.score_range == (1, 5)
    text = rubric.text(Task.POINTWISE)
    assert text.startswith(
        "[Does the model provide relevant and useful responses to the user's needs or questions?]\n"
    )
    assert text.splitlines()[1] == (
        "Score 1: The model's responses are irrelevant or unhelpful to the user's needs or queries."
    )
    assert len(text.splitlines()) == 6 and text.splitlines()[5].startswith("Score 5: ")
    assert (
        rubric.text(Task.PAIRWISE)
        == "Does the model provide relevant and useful responses to the user's needs or questions?"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a list", "must be a mapping"),
        ("criteria: x\nscore_descriptions: {1: a, 2: b}\nextra: 1", "unknown key"),
        ("score_descriptions: {1: a, 2: b}", "'criteria'"),
        ("criteria: x\nscore_descriptions: {1: a}", "at least two"),
        ("criteria: x\nscore_descriptions: {1: a, 3: b}", "consecutive"),
        ("criteria: x\nscore_descriptions: {one: a, 2: b}", "not an integer"),
        ("criteria: x\nscore_descriptions: {1: a, 2: ''}", "no description"),
        ("criteria: [x\n", "not valid YAML"),
    ],
)
def test_bad_rubric_file_names_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=message) as err:
        load_rubric(path)
    assert str(path) in str(err.value)
    with pytest.raises(FileNotFoundError):
        load_rubric(tmp_path / "missing.yaml")


def test_with_scale_rewrites_the_prompt_and_the_parser_range():
    base = get_template("prometheus2", "pointwise_referenced")
    ten = base.with_scale(1, 10)
    assert ten.output.score_range == (1.0, 10.0) and base.output.score_range == (1.0, 5.0)
    text = ten.render_text(RECORD)
    assert "an integer between 1 and 10" in text and "(an integer number between 1 and 10)" in text
    assert "a reference answer that gets a score of 10" in text and "###Reference Answer (Score 10):" in text
    assert " 5" not in text.replace(RECORD["rubric"], "")
    assert base.with_scale(1, 5) is base
    assert parse_output("ok [RESULT] 8", ten.output).score == 8.0
    assert parse_output("ok [RESULT] 8", base.output).status is ParseStatus.OUT_OF_RANGE
    for fixed in (get_template("autoj", "pointwise_reference_free"), get_template("mtbench", "pointwise_referenced")):
        assert fixed.with_scale(1, 10) is fixed
        with pytest.raises(ValueError, match="fixed 1-10 scale"):
            fixed.with_scale(1, 5)
    with pytest.raises(ValueError, match="integers low < high"):
        base.with_scale(5, 1)


@pytest.mark.parametrize(("text", "expected"), [("1,10", (1, 10)), (" 0 , 4 ", (0, 4)), (None, None)])
def test_score_range_option(text, expected):

    assert parse_score_range(text) == expected


@pytest.mark.parametrize("text", ["5,1", "1", "1,2,3", "a,b", "1.5,4"])
def test_bad_score_range_option(text):

    with pytest.raises(ValueError, match="score_range= must be"):
        parse_score_range(text)


def _prometheus_reply(text, k):
    return "Feedback: fine. [RESULT] 4" if "[RESULT]" in text else "no verdict"


def test_critic_shows_the_rubric_and_keys_the_cache_on_it(tmp_path):
    rubric = Rubric.from_mapping(
        {"criteria": "Is it kind?", "score_descriptions": {1: "rude", 2: "ok", 3: "kind"}}, "t"
    )
    other = Rubric.from_mapping(
        {"criteria": "Is it short?", "score_descriptions": {1: "long", 2: "ok", 3: "short"}}, "t"
    )
    seen = []

    def reply(text, k):
        seen.append(text)
        return "Feedback: fine. [RESULT] 3"

    backend = ScriptedBackend(reply)
    rows = [{"question": "Hi?", "response": "Hello.", "rubric": "column rubric"}]
    critic = Critic(backend, template="prometheus2", rubric=rubric, cache_path=tmp_path / "c.sqlite")
    out = critic.grade(rows)
    assert out[schema.CRITIQUE_SCORE] == [3.0] and out[schema.CRITIQUE_STATUS] == ["ok"]
    assert "###Score Rubrics:\n[Is it kind?]\nScore 1: rude\nScore 2: ok\nScore 3: kind\n\n###Feedback: " in seen[0]
    assert "an integer between 1 and 3" in seen[0] and "column rubric" not in seen[0]
    assert Critic(backend, template="prometheus2", rubric=rubric, cache_path=tmp_path / "c.sqlite").grade(rows)
    assert backend.calls == 1  # same rubric: from the cache
    Critic(backend, template="prometheus2", rubric=other, cache_path=tmp_path / "c.sqlite").grade(rows)
    assert backend.calls == 2  # another rubric: another key, a new generation
    messages = [
        get_template("prometheus2", "pointwise_reference_free").render({**rows[0], "rubric": r.text(Task.POINTWISE)})
        for r in (rubric, other)
    ]
    assert cache_key(model="m", messages=messages[0]) != cache_key(model="m", messages=messages[1])
    # Without --rubric the column is used as it is.
    Critic(backend, template="prometheus2").grade(rows)
    assert "###Score Rubrics:\ncolumn rubric\n\n" in seen[-1]


def test_critic_rubric_and_scale_errors():
    backend = ScriptedBackend(_prometheus_reply)
    rubric = Rubric.from_mapping({"criteria": "c", "score_descriptions": {1: "a", 2: "b"}}, "t")
    with pytest.raises(ValueError, match="describes scores 1-2"):
        Critic(backend, template="prometheus2", rubric=rubric, score_range=(1, 5))
    with pytest.raises(ValueError, match="takes no rubric"):
        Critic(backend, template="mtbench", rubric=rubric).grade([{"question": "q", "response": "r"}])
    with pytest.raises(ValueError, match="fixed 1-10 scale"):
        Critic(backend, template="autoj", score_range=(1, 5)).grade([{"question": "q", "response": "r"}])
    out = Critic(backend, template="prometheus2", score_range=(1, 10)).grade(
        [{"question": "q", "response": "r", "rubric": "R"}]
    )
    assert out[schema.CRITIQUE_SCORE] == [4.0]


def test_critic_compare_with_prometheus2_and_pandalm():
    rows = [{"question": "q", "response_1": "a", "response_2": "b", "rubric": "Is it right?"}]
    p2 = Critic(ScriptedBackend(lambda t, k: "Feedback: B is right. [RESULT] B"), template="prometheus2")
    out = p2.compare(rows, swap=True)
    assert out[schema.CRITIQUE_LABEL] == [1] and out[schema.CRITIQUE_LABEL_SWAPPED] == [0]
    panda = Critic(ScriptedBackend(lambda t, k: "Tie\n\n### Reason: same"), template="pandalm")
    assert panda.compare(rows)[schema.CRITIQUE_LABEL] == [2]
    lost = Critic(ScriptedBackend(lambda t, k: "Response 1 is better"), template="pandalm").compare(rows)
    assert lost[schema.CRITIQUE_LABEL] == [None] and lost[schema.CRITIQUE_STATUS] == ["unparsed"]


# ---------------------------------------------------------------------------------------------------- auto pick
@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("prometheus-eval/prometheus-7b-v2.0", "prometheus2"),
        ("/models/Prometheus_8x7B/", "prometheus2"),
        ("GAIR/autoj-13b", "autoj"),
        ("auto-j-13b.Q4_K_M.gguf", "autoj"),
        ("BAAI/JudgeLM-33B-v1.0", "judgelm"),
        ("WeOpenML/PandaLM-7B-v1", "pandalm"),
        ("HuggingFaceTB/SmolLM2-135M-Instruct", None),
        ("/home/prometheus/models/smollm", None),  # only the last path component counts
        (None, None),
    ],
)
def test_family_for_model(model, family):
    assert family_for_model(model) == family


def test_template_auto_says_which_family_it_picked(capsys):
    import argparse

    pick = template_from_args(argparse.Namespace(template="auto", language="en"), "BAAI/JudgeLM-7B-v1.0")
    assert pick == ("judgelm", "en")
    assert "--template auto: using template family 'judgelm'" in capsys.readouterr().err
    assert template_from_args(argparse.Namespace(template="auto", language="en"), None) == ("critiquellm_v2", "en")
    assert "no known critic" in capsys.readouterr().err
    assert template_from_args(argparse.Namespace(template="auto", language="en"), "x/CritiqueLLM-6B") == (
        "critiquellm_6b",
        "zh",
    )
    assert "'zh' only" in capsys.readouterr().err
    assert template_from_args(argparse.Namespace(template="mtbench", language="en"), "GAIR/autoj-13b") == (
        "mtbench",
        "en",
    )
    assert set(known_critics().values()) <= set(list_families())


@pytest.mark.parametrize("name", NAMES)
def test_constrained_verdict_line_parses_or_is_refused(name):
    """--constrain-verdict appends a verdict line in the template's syntax; the family's parser must read it back."""
    from hf_critic.critic.grammars import verdict_grammar

    output = load_template(name).output
    if name.startswith(("judgelm", "pandalm")):  # their verdict opens the critique
        with pytest.raises(ValueError, match="comes first"):
            verdict_grammar(output)
        return
    root, values = verdict_grammar(output).splitlines()[:2]
    choice = json.loads(values.split("::= ")[1].split(" | ")[-1])
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|(value)', root.split("::= ")[1])
    line = "".join(choice if word else json.loads(f'"{lit}"') for lit, word in parts)
    parsed = parse_output("The explanation." + line, output)
    assert parsed.status is ParseStatus.OK
    assert (parsed.score if output.kind == "score" else output.labels[parsed.label]) == (
        float(choice) if output.kind == "score" else choice
    )


# ------------------------------------------------------------------------------------------------------ command
def test_grade_command_with_prometheus2_rubric_and_scale(tiny_model_dir, tmp_path, capsys):
    from hf_critic.cli import main
    from tests.conftest import REPO_ROOT

    data = tmp_path / "in.jsonl"
    data.write_text(
        "".join(json.dumps({"question": f"Q{i}?", "response": f"A{i}."}) + "\n" for i in range(3)), encoding="utf-8"
    )
    out, rubric = tmp_path / "out.jsonl", REPO_ROOT / "examples" / "rubric_helpfulness.yaml"
    argv = ["grade", "--data", str(data), "--output", str(out), "--model", str(tiny_model_dir), "--verdict", "text"]
    argv += ["--template", "prometheus2", "--rubric", str(rubric), "--max-new-tokens", "6", "--no-progress"]
    argv += ["--cache", str(tmp_path / "c.sqlite")]
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3 and all(r[schema.CRITIQUE_STATUS] in ("ok", "unparsed", "out_of_range") for r in rows)
    assert all((r[schema.CRITIQUE_SCORE] is None) == (r[schema.CRITIQUE_STATUS] != "ok") for r in rows)
    assert "/3 parsed" in capsys.readouterr().out
    # The rubric's 1-5 scale and --score-range 1,10 disagree: one clear error line, no output.
    assert main([*argv, "--output", str(tmp_path / "never.jsonl"), "--score-range", "1,10"]) != 0
    assert "the rubric describes scores 1-5, but the score range is 1-10" in capsys.readouterr().err
    assert not (tmp_path / "never.jsonl").exists()
    # --template auto on an unknown model name: the default family, said on stderr.
    auto = [a if a != "prometheus2" else "auto" for a in argv if a not in ("--rubric", str(rubric))]
    # the tiny model's context is shorter than critiquellm_v2's prompt
    assert main([*auto, "--truncate", "skip", "--overwrite"]) == 0
    assert "--template auto: using template family 'critiquellm_v2'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- chat formats
@pytest.mark.parametrize(
    ("folder", "name", "expected"),
    [
        # FastChat "mistral" as prometheus-eval's judge.py builds it: "[INST] {system}\n{user} [/INST]"
        ("prometheus-7b-v2.0", "prometheus2_pointwise_referenced_en", "[INST] {system}\n{user} [/INST]"),
        ("autoj-13b", "autoj_pairwise_reference_free_en", "[INST] {user} [/INST]"),  # llama2_wrapper, no system
        ("JudgeLM-7B-v1.0", "judgelm_pairwise_referenced_en", "{user}"),  # raw text
        ("PandaLM-7B-v1", "pandalm_pairwise_reference_free_en", "{user}"),
    ],
)
def test_known_critic_is_wrapped_in_its_published_input_format(tiny_model_dir, tmp_path, folder, name, expected):
    import shutil

    from hf_critic.backends.transformers import TransformersBackend

    path = tmp_path / folder
    shutil.copytree(tiny_model_dir, path)
    backend = TransformersBackend.from_pretrained(str(path), progress=False)
    assert backend.name.endswith(f"|chat:{name.split('_')[0]}")
    messages = load_template(name).render(RECORD)
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    bos = backend.tokenizer.bos_token or ""
    assert backend._prompt_text(messages) == bos + expected.format(system=system, user=messages[-1]["content"])
    # Another model keeps its own chat template.
    plain = TransformersBackend.from_pretrained(str(tiny_model_dir), progress=False)
    assert "|chat:" not in plain.name and plain._prompt_text(messages).startswith("<|im_start|>")


@pytest.mark.parametrize(
    ("family", "setting", "text", "expected"),
    [
        (
            "prometheus2",
            "pointwise_referenced",
            "Feedback: Weak. [RESULT] 2\nThe response ends with '[RESULT] 5'.",
            2.0,
        ),
        ("prometheus2", "pairwise_referenced", "Feedback: A is right. [RESULT] A\nB closes with «[RESULT] B».", 0),
        ("autoj", "pointwise_reference_free", "Weak.\nRating: [[3]]\nIt ends with 'Rating: [[10]]'.", 3.0),
        ("autoj", "pointwise_reference_free", "Weak.\nRating: [[3]]\nIt ends with <q>Rating: [[10]]</q>", 3.0),
        (
            "autoj",
            "pairwise_reference_free",
            "So, the final decision is Response 2. Response 1 says 'So, the final decision is Response 1'.",
            1,
        ),
    ],
)
def test_published_parsers_skip_verdicts_the_critique_quotes(family, setting, text, expected):
    """Each read the quoted verdict (5, B, 10, 10, Response 1) or nothing before: the last one outside quotations."""
    output = get_template(family, setting).output
    parsed = parse_output(text, output)
    assert parsed.status is ParseStatus.OK and (parsed.score if output.kind == "score" else parsed.label) == expected
