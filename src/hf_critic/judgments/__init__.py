"""Critique SFT data from published GPT-4 judgments: MT-Bench / Vicuna-Bench single grades and Prometheus feedback
(:mod:`.gpt4_single`), and critic training data from AlpacaEval and Auto-J (:mod:`.sources`, :mod:`.published`,
:mod:`.published_hub`), decontaminated against the benchmarks a user names (:mod:`.decontamination`).

CritiqueLLM fine-tunes a critic on teacher critiques (v1 §3.2-3.3, v2 §3.2-3.3: GPT-4 writes a score plus an
explanation; the critic learns to write both). Eval-Instruct (:mod:`hf_critic.eval_instruct`) builds such data by prompting a
teacher. This module builds it from judgments GPT-4 already wrote and that were published, so that a critic can be
trained and meta-evaluated on real data with no API call:

* FastChat MT-Bench / Vicuna-Bench ``model_judgment/gpt-4_single.jsonl`` (Zheng et al., 2023; as copied in
  HuihuiChyan/SelfEval): GPT-4's 1-10 grade and full judgment of one answer. Only first-turn judgments are used
  (``single-v1`` and ``single-math-v1``): the multi-turn judge prompts have no template in :mod:`hf_critic.prompts`.
  The question, reference and answer are read back from the prompt GPT-4 saw, and that prompt is re-rendered with
  the project's ``mtbench`` templates; a row whose re-rendering differs from the published prompt raises, so the
  training prompt is exactly the one the teacher answered and the one the critic sees at inference.
* Prometheus ``{mt_bench,vicuna}_eval.json`` (Kim et al., 2024, prometheus-eval, Apache-2.0): rubric-based absolute
  grading prompts with a reference answer, GPT-4's 1-5 scores and feedback from three runs. Each run is one
  example; the prompt is the published one, verbatim, and the target is ``"<feedback> [RESULT] <score>"``, the
  output format that prompt asks for. (hf-critic's parsers do not read ``[RESULT]`` yet, so this config is training
  data only, never a validation set.)

Every example is assigned to train / validation / test by its question (``(benchmark, question_id)``), so no
question, and none of its answers, rubrics or judgments, appears in two splits (CritiqueLLM v1 §4.1 footnote 6 and
v2 §4.1 footnote 9 check the same for their queries). The MT-Bench Prometheus items use the MT-Bench question ids
(81-160; they grade second-turn answers of the same questions), the Vicuna ones the Vicuna-Bench ids (1-80).

Output: ``{config: DatasetDict(train, validation, test)}`` with configs ``pointwise_referenced`` and
``pointwise_reference_free`` (MT-Bench / Vicuna-Bench judgments, ``mtbench`` templates) and ``prometheus_absolute``.
Every row carries the structured fields, the teacher's ``score`` and ``critique`` and an SFT-ready ``messages``
column (the critic prompt, then the assistant's critique), the format ``recipes/sft.py`` trains on.

**Published judgments for training** (:func:`build_published_judgment_data`): judgments whose
questions are *not* in the evaluation sets, so a critic trained on them can still be meta-evaluated there:

* AlpacaEval GPT-4-turbo pairwise verdicts with a concise explanation (``alpacaeval/cot_gpt4_turbo``) and soft
  preferences without one (``alpacaeval/weighted_gpt4_turbo``), read by
  :func:`hf_critic.loaders.alpacaeval.load_alpacaeval`; every pair has the GPT-4-turbo baseline as output 1, so
  each pair is emitted in both orders (label, preference, models and explanation swapped; the explanation's names
  for the outputs, ``Model M`` / ``model 'm'`` / ``Output (a)``, rewritten to the pairwise template's names,
  ``Response 1`` / ``Response 2``, by :func:`neutral_explanation`);
* Auto-J's 960 GPT-4 single-response critiques (``autoj/training/single_traindata.jsonl``, read by
  :func:`hf_critic.loaders.autoj.load_autoj_single`); Auto-J's prompt is re-rendered byte for byte by hf-critic's
  ``autoj`` pointwise template.

A decontamination stage (:func:`decontaminate`) drops every example whose question matches, exactly or after
:func:`normalize_question`, a question of a benchmark the user names (``[NAME=]FORMAT:PATH``, any
:func:`hf_critic.loaders.load_benchmark` format, or ``questions:`` for any file with a ``question`` column), counted
per benchmark; the rest is split into train / validation by normalised question. Configs (the reference-free
CritiqueLLM settings: these sources have no reference answers): ``pointwise_reference_free`` (Auto-J),
``pairwise_reference_free`` (AlpacaEval pairs with an explanation, SFT-ready) and ``pairwise_preference`` (every
AlpacaEval pair, with or without an explanation, for preference / reward training; no ``messages``).
"""

from .decontamination import (
    QUESTIONS_FORMAT,
    benchmark_questions,
    decontaminate,
    heldout_excludes,
    normalize_question,
    parse_exclude,
)
from .gpt4_single import (
    BENCHMARKS,
    CONFIGS,
    SPLITS,
    BuildReport,
    build_judgment_sft_data,
    load_gpt4_single_judgments,
    load_prometheus_feedback,
    save_judgment_sft_data,
    split_by_question,
)
from .published import PublishedBuildReport, build_published_judgment_data, neutral_explanation, verdict_text
from .published_hub import (
    PUBLISHED_CARD_TEMPLATE,
    published_outputs,
    push_published_judgment_data,
    render_published_card,
    save_published_judgment_data,
)
from .sources import PUBLISHED_CONFIGS, PUBLISHED_SOURCES

__all__ = [
    "BENCHMARKS",
    "CONFIGS",
    "PUBLISHED_CARD_TEMPLATE",
    "PUBLISHED_CONFIGS",
    "PUBLISHED_SOURCES",
    "QUESTIONS_FORMAT",
    "SPLITS",
    "BuildReport",
    "PublishedBuildReport",
    "benchmark_questions",
    "build_judgment_sft_data",
    "build_published_judgment_data",
    "decontaminate",
    "heldout_excludes",
    "load_gpt4_single_judgments",
    "load_prometheus_feedback",
    "neutral_explanation",
    "normalize_question",
    "parse_exclude",
    "published_outputs",
    "push_published_judgment_data",
    "render_published_card",
    "save_judgment_sft_data",
    "save_published_judgment_data",
    "split_by_question",
    "verdict_text",
]
