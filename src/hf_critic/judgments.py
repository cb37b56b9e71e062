"""Critique SFT data from published GPT-4 judgments: MT-Bench / Vicuna-Bench single grades and Prometheus feedback.

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

**Published judgments for training** (:func:`build_published_judgment_data`; issue 20, part 2): judgments whose
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

from __future__ import annotations

import glob
import json
import logging
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets

from .grammars import _VERDICT_CLOSINGS, _default_prefix
from .labels import swap_label
from .loaders.fastchat import read_judgments
from .prompts import OutputSpec, get_template
from .schema import QUESTION, REFERENCE, RESPONSE

logger = logging.getLogger(__name__)

__all__ = [
    "BENCHMARKS",
    "CONFIGS",
    "PUBLISHED_CONFIGS",
    "PUBLISHED_SOURCES",
    "SPLITS",
    "BuildReport",
    "PublishedBuildReport",
    "benchmark_questions",
    "build_judgment_sft_data",
    "build_published_judgment_data",
    "decontaminate",
    "load_gpt4_single_judgments",
    "load_prometheus_feedback",
    "neutral_explanation",
    "normalize_question",
    "parse_exclude",
    "push_published_judgment_data",
    "render_published_card",
    "save_judgment_sft_data",
    "save_published_judgment_data",
    "split_by_question",
    "verdict_text",
]

#: Benchmarks with published GPT-4 single-answer judgments (folder names under ``selfeval/``).
BENCHMARKS = ("mt_bench", "vicuna_bench")
#: Prometheus evaluation files per benchmark (under ``prometheus/``).
PROMETHEUS_FILES = {"mt_bench": "mt_bench_eval.json", "vicuna_bench": "vicuna_eval.json"}
#: The configs :func:`build_judgment_sft_data` returns.
CONFIGS = ("pointwise_referenced", "pointwise_reference_free", "prometheus_absolute")
SPLITS = ("train", "validation", "test")

# FastChat judge prompt name -> hf-critic setting (the reference-based one is used for math / reasoning / coding).
_JUDGE_SETTINGS = {"single-v1": "pointwise_reference_free", "single-math-v1": "pointwise_referenced"}
_PROMETHEUS_PROMPT = re.compile(
    r"###The instruction to evaluate:\n(?P<question>.*?)\n\n###Response to evaluate:\n(?P<response>.*?)\n\n"
    r"###Reference Answer \(Score 5\):\n(?P<reference>.*?)\n\n###Score Rubrics:\n(?P<rubric>.*?)\n\n###Feedback:\s*$",
    re.S,
)


@dataclass
class BuildReport:
    """What :func:`build_judgment_sft_data` kept and dropped.

    Attributes:
        rows: ``{config: {split: count}}``.
        questions: ``{split: number of distinct (benchmark, question_id)}``.
        dropped: ``{reason: count}``, e.g. ``"gpt-4 gave no rating (score -1)"``.
    """

    rows: dict = field(default_factory=dict)
    questions: dict = field(default_factory=dict)
    dropped: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        """Multi-line human-readable summary."""
        lines = [f"questions per split: {self.questions}"]
        lines += [f"{config}: {counts}" for config, counts in self.rows.items()]
        lines += [f"dropped {n}: {reason}" for reason, n in self.dropped.items()]
        return "\n".join(lines)


def load_gpt4_single_judgments(
    data_dir: str | Path, benchmark: str, *, report: BuildReport | None = None
) -> list[dict]:
    """First-turn GPT-4 single-answer judgments of one benchmark, as critique records.

    Args:
        data_dir: the real-data folder (``../shared/data``), holding ``selfeval/<benchmark>/``.
        benchmark: one of :data:`BENCHMARKS`.
        report: if given, dropped rows are counted in ``report.dropped``.

    Returns:
        One dict per judgment (160 per benchmark, less dropped rows) with keys ``benchmark``, ``question_id``
        (int), ``model`` (the graded system), ``category``, ``judge_prompt`` (FastChat name), ``setting``
        (``pointwise_referenced`` for ``single-math-v1``, else ``pointwise_reference_free``), ``question``,
        ``reference`` (None when reference-free), ``response``, ``score`` (GPT-4's grade, float in [1, 10]) and
        ``critique`` (GPT-4's judgment text, ending in ``Rating: [[n]]``). Judgments whose score is -1 (GPT-4
        gave no parseable rating) are dropped, never given a score.

    Raises:
        hf_critic.io.RecordError: the benchmark's judgment or question file is missing or malformed (see
            :func:`hf_critic.loaders.fastchat.read_judgments`).
        ValueError: an unknown benchmark, a prompt not in FastChat's single-answer layout, or a prompt that the
            ``mtbench`` template does not re-render byte for byte (the data would not match inference).
    """
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; expected one of {BENCHMARKS}")
    records = []
    for judgment in read_judgments(Path(data_dir) / "selfeval" / benchmark):
        if judgment.turn != 1:
            continue
        where, judge_prompt = judgment.where, judgment.judge_prompt
        setting = _JUDGE_SETTINGS.get(judge_prompt)
        if setting is None:
            raise ValueError(f"{where}: unexpected judge prompt {judge_prompt!r} for a first-turn judgment")
        if judgment.score is None or judgment.score < 1:  # FastChat writes -1 when GPT-4's output had no [[rating]]
            if report is not None:
                report.dropped["gpt-4 gave no rating (score -1)"] += 1
            continue
        fields = judgment.prompt_fields()
        if fields["question"] is None:
            raise ValueError(f"{where}: prompt is not in FastChat's single-answer layout")
        if (fields["reference"] is None) != (setting == "pointwise_reference_free"):
            raise ValueError(f"{where}: {judge_prompt} prompt with(out) a reference answer")
        record = {QUESTION: fields["question"], RESPONSE: fields["answers"][0]}
        if fields["reference"] is not None:
            record[REFERENCE] = fields["reference"]
        template = get_template("mtbench", setting, "en")
        if template.render(record)[-1]["content"] != judgment.user_prompt:
            raise ValueError(f"{where}: the {template.name} template does not reproduce GPT-4's prompt")
        records.append(
            {
                "benchmark": benchmark,
                "question_id": judgment.question_id,
                "model": judgment.model,
                "category": judgment.category,
                "judge_prompt": judge_prompt,
                "setting": setting,
                QUESTION: fields["question"],
                REFERENCE: fields["reference"],
                RESPONSE: fields["answers"][0],
                "score": judgment.score,
                "critique": (judgment.judgment or "").strip(),
            }
        )
    return records


def load_prometheus_feedback(data_dir: str | Path, benchmark: str) -> list[dict]:
    """Prometheus absolute-grading items of one benchmark, one record per GPT-4 run.

    Args:
        data_dir: the real-data folder, holding ``prometheus/<file>.json`` (see :data:`PROMETHEUS_FILES`).
        benchmark: one of :data:`BENCHMARKS`.

    Returns:
        960 dicts per benchmark (320 items x 3 GPT-4 runs) with keys ``benchmark``, ``question_id`` (int, the
        benchmark's question id), ``model`` (the graded system), ``category``, ``run`` (0-2), ``prompt`` (the
        published absolute-grading prompt, verbatim), ``question`` (the instruction to evaluate), ``reference``
        (the score-5 reference answer), ``response``, ``rubric``, ``score`` (float in [1, 5]) and ``critique``
        (``"<feedback> [RESULT] <score>"``).

    Raises:
        FileNotFoundError: the file is missing.
        ValueError: an unknown benchmark, a prompt not in the Prometheus layout, or feedback and score lists of
            different lengths.
    """
    if benchmark not in PROMETHEUS_FILES:
        raise ValueError(f"unknown benchmark {benchmark!r}; expected one of {tuple(PROMETHEUS_FILES)}")
    path = Path(data_dir) / "prometheus" / PROMETHEUS_FILES[benchmark]
    items = json.loads(path.read_text(encoding="utf-8"))
    records = []
    for index, item in enumerate(items):
        match = _PROMETHEUS_PROMPT.search(item["instruction"])
        if match is None:
            raise ValueError(f"{path}: item {index}: prompt is not in the Prometheus absolute-grading layout")
        if len(item["gpt4_feedback"]) != len(item["gpt4_score"]):
            raise ValueError(
                f"{path}: item {index}: {len(item['gpt4_feedback'])} feedbacks for {len(item['gpt4_score'])} scores"
            )
        for run, (feedback, score) in enumerate(zip(item["gpt4_feedback"], item["gpt4_score"], strict=True)):
            records.append(
                {
                    "benchmark": benchmark,
                    "question_id": int(item["idx"]),
                    "model": item["response_source"],
                    "category": item.get("category"),
                    "run": run,
                    "prompt": item["instruction"],
                    **{k: v.strip() for k, v in match.groupdict().items()},
                    "score": float(score),
                    "critique": f"{feedback.strip()} [RESULT] {int(score)}",
                }
            )
    return records


def split_by_question(
    keys: Iterable, *, test_fraction: float = 0.2, validation_fraction: float = 0.1, seed: int = 0
) -> dict:
    """Assign each question to one split, per benchmark, reproducibly.

    Args:
        keys: question keys ``(benchmark, question_id)``; duplicates are ignored.
        test_fraction: share of each benchmark's questions in ``test``, in [0, 1).
        validation_fraction: share in ``validation``; ``test_fraction + validation_fraction < 1``.
        seed: shuffling seed.

    Returns:
        ``{key: "train" | "validation" | "test"}``. Per benchmark, ``round(n * test_fraction)`` questions go to
        test and ``round(n * validation_fraction)`` to validation.

    Raises:
        ValueError: fractions out of range.
    """
    if not (0 <= test_fraction < 1 and 0 <= validation_fraction < 1 and test_fraction + validation_fraction < 1):
        raise ValueError("need 0 <= test_fraction, validation_fraction and test_fraction + validation_fraction < 1")
    by_benchmark: dict = {}
    for key in sorted(set(keys)):
        by_benchmark.setdefault(key[0], []).append(key)
    assignment = {}
    for benchmark, group in sorted(by_benchmark.items()):
        order = list(group)
        random.Random(f"{seed}-{benchmark}").shuffle(order)
        n_test, n_val = round(len(order) * test_fraction), round(len(order) * validation_fraction)
        for i, key in enumerate(order):
            assignment[key] = "test" if i < n_test else "validation" if i < n_test + n_val else "train"
    return assignment


def _messages(prompt: Sequence[Mapping], critique: str) -> list[dict]:
    return [
        *({"role": m["role"], "content": m["content"]} for m in prompt),
        {"role": "assistant", "content": critique},
    ]


def build_judgment_sft_data(
    data_dir: str | Path,
    *,
    benchmarks: Sequence[str] = BENCHMARKS,
    prometheus: bool = True,
    test_fraction: float = 0.2,
    validation_fraction: float = 0.1,
    seed: int = 0,
) -> tuple[dict[str, datasets.DatasetDict], BuildReport]:
    """Critique SFT data from the published GPT-4 judgments, split by question.

    Args:
        data_dir: the real-data folder (``../shared/data``).
        benchmarks: subset of :data:`BENCHMARKS`.
        prometheus: include the Prometheus feedback (config ``prometheus_absolute``).
        test_fraction, validation_fraction, seed: see :func:`split_by_question`; the split is over the union of
            the questions of both sources.

    Returns:
        ``(configs, report)``: ``configs`` maps each of :data:`CONFIGS` present to a ``DatasetDict`` with the
        splits that have rows. Columns: ``id`` (unique string), ``benchmark``, ``question_id``, ``model``,
        ``category``, ``setting``, ``template``, ``template_version``, the setting's fields (``question``,
        [``reference``], ``response``; Prometheus adds ``rubric``), ``score`` (GPT-4's grade: 1-10 for the
        MT-Bench configs, 1-5 for Prometheus), ``critique`` and ``messages``.

    Raises:
        FileNotFoundError, ValueError: see :func:`load_gpt4_single_judgments` and :func:`load_prometheus_feedback`.
    """
    report = BuildReport()
    single = [r for b in benchmarks for r in load_gpt4_single_judgments(data_dir, b, report=report)]
    feedback = [r for b in benchmarks for r in load_prometheus_feedback(data_dir, b)] if prometheus else []
    keys = {(r["benchmark"], r["question_id"]) for r in single + feedback}
    assignment = split_by_question(
        keys, test_fraction=test_fraction, validation_fraction=validation_fraction, seed=seed
    )
    report.questions = dict(sorted(Counter(assignment.values()).items()))

    rows: dict[str, dict[str, list]] = {c: {s: [] for s in SPLITS} for c in CONFIGS}
    for r in single:
        template = get_template("mtbench", r["setting"], "en")
        record = {k: v for k, v in r.items() if not (k == REFERENCE and v is None)}
        row = {
            "id": f"{r['benchmark']}-{r['question_id']}-{r['model']}",
            **{k: v for k, v in record.items() if k != "judge_prompt"},
            "template": template.name,
            "template_version": template.version,
            "messages": _messages(template.render(record), r["critique"]),
        }
        rows[r["setting"]][assignment[(r["benchmark"], r["question_id"])]].append(row)
    for r in feedback:
        row = {
            "id": f"prometheus-{r['benchmark']}-{r['question_id']}-{r['model']}-run{r['run']}",
            **{k: v for k, v in r.items() if k != "prompt"},
            "setting": "pointwise_referenced",
            "template": "prometheus_absolute_grading (published prompt, verbatim)",
            "template_version": "prometheus-eval@dcfb442",
            "messages": _messages([{"role": "user", "content": r["prompt"]}], r["critique"]),
        }
        rows["prometheus_absolute"][assignment[(r["benchmark"], r["question_id"])]].append(row)

    configs = {}
    for config, splits in rows.items():
        present = {s: datasets.Dataset.from_list(v) for s, v in splits.items() if v}
        if present:
            configs[config] = datasets.DatasetDict(present)
            report.rows[config] = {s: len(d) for s, d in present.items()}
    return configs, report


def save_judgment_sft_data(configs: Mapping[str, datasets.DatasetDict], out_dir: str | Path) -> list[Path]:
    """Write the configs for training and for ``hf-critic grade``.

    Layout: ``<out_dir>/<config>/`` is a ``save_to_disk`` ``DatasetDict`` (what a recipe's ``dataset_mixture``
    points at, ``id: <out_dir>``, ``config: <config>``), and ``<out_dir>/<split>_<config>.jsonl`` holds the
    validation and test rows of the pointwise configs without the ``messages`` column, ready for
    ``hf-critic grade --data ... --human-score score``. Reference-free files have no ``reference`` column, so the
    CLI picks the reference-free setting.

    Args:
        configs: the first value returned by :func:`build_judgment_sft_data`.
        out_dir: target folder (created). Keep it out of version control: the source files carry no licence for
            redistribution (``outputs/`` is git-ignored).

    Returns:
        The paths written (folders and files).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for config, splits in configs.items():
        splits.save_to_disk(str(out_dir / config))
        written.append(out_dir / config)
        if not config.startswith("pointwise"):
            continue
        for split in ("validation", "test"):
            if split not in splits:
                continue
            path = out_dir / f"{split}_{config}.jsonl"
            with path.open("w", encoding="utf-8") as handle:
                for row in splits[split].remove_columns("messages"):
                    if row.get(REFERENCE) is None:
                        row.pop(REFERENCE, None)
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            written.append(path)
    return written


# ---------------------------------------------------------------------------------------------------------------
# Published judgments for training: AlpacaEval (pairwise) and Auto-J (pointwise), decontaminated, split by question
# ---------------------------------------------------------------------------------------------------------------

#: The sources :func:`build_published_judgment_data` reads (paths under the real-data folder), with provenance.
PUBLISHED_SOURCES: dict[str, dict[str, str]] = {
    "alpacaeval_cot_gpt4_turbo": {
        "path": "alpacaeval/cot_gpt4_turbo",
        "setting": "pairwise_reference_free",
        "repository": "tatsu-lab/alpaca_eval",
        "commit": "cd543a1",
        "upstream": "results/<model>/alpaca_eval_cot_gpt4_turbo_fn/annotations.json",
        "licence": "CC BY-NC 4.0 (AlpacaEval data; code Apache-2.0)",
        "judge": "GPT-4-turbo (gpt-4-1106-preview), AlpacaEval annotator alpaca_eval_cot_gpt4_turbo_fn",
        "what": "pairwise verdicts (output_1 / output_2 / tie) with a concise explanation",
    },
    "alpacaeval_weighted_gpt4_turbo": {
        "path": "alpacaeval/weighted_gpt4_turbo",
        "setting": "pairwise_reference_free",
        "repository": "tatsu-lab/alpaca_eval",
        "commit": "cd543a1",
        "upstream": "results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json",
        "licence": "CC BY-NC 4.0 (AlpacaEval data; code Apache-2.0)",
        "judge": "GPT-4-turbo (gpt-4-1106-preview), AlpacaEval annotator weighted_alpaca_eval_gpt4_turbo",
        "what": "soft preferences 1 + P(output_2 better) from the judge's token probabilities, no explanation",
    },
    "autoj_single_train": {
        "path": "autoj/training/single_traindata.jsonl",
        "setting": "pointwise_reference_free",
        "repository": "GAIR-NLP/auto-j",
        "commit": "2ae17a3",
        "upstream": "single_traindata.jsonl (single-response training data)",
        "licence": "none stated (research use only)",
        "judge": "GPT-4",
        "what": "single-response critiques ending in 'Rating: [[n]]' (1-10)",
    },
}
#: The configs :func:`build_published_judgment_data` returns.
PUBLISHED_CONFIGS = ("pointwise_reference_free", "pairwise_reference_free", "pairwise_preference")
#: Pseudo-format of :func:`benchmark_questions`: the ``question`` column of any JSON / JSONL / CSV / parquet file(s).
QUESTIONS_FORMAT = "questions"
_PUBLISHED_SPLITS = ("train", "validation")


def normalize_question(text: str) -> str:
    """The decontamination key of a question: NFKC, case-folded, punctuation removed, whitespace collapsed.

    Punctuation (Unicode categories ``P*``) becomes a space before whitespace is collapsed, so ``"Hello,world"`` and
    ``"hello, world!"`` share a key (``"hello world"``).

    Args:
        text: a question.

    Returns:
        The key (possibly empty, for a question of punctuation only).
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


def parse_exclude(spec: str) -> tuple[str, str, str]:
    """``[NAME=]FORMAT:PATH`` (the syntax of ``hf-critic meta-eval --benchmark``) -> ``(name, format, path)``.

    The name defaults to ``FORMAT:PATH`` itself. FORMAT is a :data:`hf_critic.loaders.FORMATS` key or
    ``questions`` (see :func:`benchmark_questions`).

    Raises:
        ValueError: no ``FORMAT:`` prefix, an empty path, or an unknown format.
    """
    from .loaders import FORMATS

    name, sep, rest = spec.partition("=")
    if not sep or ":" in name or "/" in name:
        name, rest = "", spec
    fmt, colon, path = rest.partition(":")
    formats = sorted([*FORMATS, QUESTIONS_FORMAT])
    if not colon or not path or fmt not in formats:
        raise ValueError(f"--exclude {spec!r}: expected [NAME=]FORMAT:PATH with FORMAT one of {formats}")
    return (name.strip() or rest), fmt, path


def benchmark_questions(fmt: str, path: str) -> list[str]:
    """Every question of a benchmark, read with the project's loaders.

    Args:
        fmt: a :func:`hf_critic.loaders.load_benchmark` format (``autoj``, ``prometheus``, ``fastchat``,
            ``alignbench``, ``autoj_single``, ``alpacaeval``; ``generic`` is not supported: it needs a task and gold
            columns, use ``questions``), or ``questions``: the ``question`` field of every row of a JSON / JSONL /
            CSV / parquet file, or of every file a glob pattern matches (``examples/*.jsonl``).
        path: the benchmark's file or folder (for ``fastchat``, ``selfeval/mt_bench``: the questions of every turn
            are read from its ``question.jsonl``, not only the judged first turns).

    Returns:
        The questions, in file order (duplicates kept).

    Raises:
        ValueError: ``generic``, or a glob that matches nothing.
        RecordError: see the loaders (a ``questions`` row without a non-empty ``question`` names file and row).
    """
    from .io import iter_rows
    from .loaders import load_benchmark
    from .loaders._rows import field as row_field
    from .loaders.fastchat import read_questions

    if fmt == "generic":
        raise ValueError(f"--exclude generic:{path}: use questions:{path} (decontamination only needs questions)")
    if fmt == QUESTIONS_FORMAT:
        files = sorted(glob.glob(path)) if any(c in path for c in "*?[") else [path]
        if not files:
            raise ValueError(f"--exclude questions:{path}: no file matches")
        return [row_field(row, "question", where) for file in files for where, row in iter_rows(file)]
    questions = list(load_benchmark(fmt, path)["question"])
    if fmt == "fastchat":
        questions += [turn for _, turns in read_questions(path).values() for turn in turns]
    return questions


def decontaminate(
    records: Sequence[Mapping[str, Any]], benchmarks: Mapping[str, Iterable[str]]
) -> tuple[list[Mapping[str, Any]], dict[str, dict[str, Any]]]:
    """Drop every record whose question matches a benchmark question, exactly or after :func:`normalize_question`.

    Args:
        records: dicts with ``question`` and ``source``.
        benchmarks: ``{name: questions}``.

    Returns:
        ``(kept, stats)``: the records that match no benchmark, in order, and per benchmark ``{"questions": distinct
        benchmark questions, "dropped": records dropped, "exact": of which matched exactly (after stripping outer
        whitespace), "normalised": of which matched only after normalisation, "dropped_questions": distinct
        normalised training questions dropped, "by_source": {source: records dropped}, "questions_by_source":
        {source: distinct normalised questions dropped}}``. A record matching several benchmarks is dropped once and
        counted under each.
    """
    tables = {}
    for name, questions in benchmarks.items():
        questions = [q for q in questions if isinstance(q, str)]
        tables[name] = ({q.strip() for q in questions}, {normalize_question(q) for q in questions} - {""})
    stats = {
        name: {
            "questions": len(exact),
            "dropped": 0,
            "exact": 0,
            "normalised": 0,
            "dropped_questions": 0,
            "by_source": Counter(),
        }
        for name, (exact, _) in tables.items()
    }
    seen: dict[str, set] = {name: set() for name in tables}
    seen_by_source: dict[str, dict[str, set]] = {name: {} for name in tables}
    kept = []
    for record in records:
        question = record["question"]
        key = normalize_question(question)
        hit = False
        for name, (exact, normalised) in tables.items():
            if key not in normalised:
                continue
            hit = True
            entry = stats[name]
            entry["dropped"] += 1
            entry["exact" if question.strip() in exact else "normalised"] += 1
            entry["by_source"][record["source"]] += 1
            seen[name].add(key)
            seen_by_source[name].setdefault(record["source"], set()).add(key)
        if not hit:
            kept.append(record)
    for name, entry in stats.items():
        entry["dropped_questions"] = len(seen[name])
        entry["by_source"] = dict(sorted(entry["by_source"].items()))
        entry["questions_by_source"] = {src: len(keys) for src, keys in sorted(seen_by_source[name].items())}
    return kept, stats


_QUOTE = "['\"\u2018\u2019]"
_APOSTROPHE = "['\u2019]"
# "The first model ('m')": the position words are the judge's prompt order, so the whole phrase is the name.
_ORDERED_NAME = re.compile(rf"\b[Tt]he (?:first|second) model \((?P<q>{_QUOTE}?)(?P<id>[Mm])(?P=q)\)")
_TWO_NAMES = re.compile(
    rf"\b[Mm]odels (?P<qa>{_QUOTE}?)(?P<a>[Mm])(?P=qa) and (?P<qb>{_QUOTE}?)(?P<b>[Mm])(?P=qb)(?!\w)"
)
# "Model M", "model 'm'", "Model 'M's" (the closing quote doubling as the possessive's apostrophe).
_MODEL_NAME = re.compile(rf"\b[Mm]odel (?P<q>{_QUOTE}?)(?P<id>[Mm])(?P=q)(?P<s>(?<={_APOSTROPHE})s)?(?!\w)")
_QUOTED_NAME = re.compile(rf"(?<![\w'\u2019])(?P<q>{_QUOTE})(?P<id>[Mm])(?P=q)(?P<s>(?<={_APOSTROPHE})s)?(?!\w)")
_OUTPUT_NAME = re.compile(r"\b[Oo]utput \((?P<id>[ab])\)")
# What must not survive the rewrite: a name left over, or a position word naming a response.
_UNRESOLVED = re.compile(
    rf"(?<![\w'\u2019]){_QUOTE}?[Mm]{_QUOTE}?(?![\w'\u2019])|\b[Oo]utput \([ab]\)|\b[Mm]odel [A-Za-z0-9]\b"
    r"|\b(?:first|second|former|latter) (?:model|output|response|answer|assistant)s?\b"
)


def neutral_explanation(
    text: str, names: Mapping[str, int], labels: Sequence[str] = ("Response 1", "Response 2")
) -> str:
    """Rewrite a judge's explanation so that it names the responses by position, as the critic's template does.

    AlpacaEval's judges name the outputs ``Model M`` / ``model 'm'`` (GPT-4-turbo CoT annotator, mapped to
    output_1 / output_2 by ``referenced_models``) or ``Output (a)`` / ``Output (b)``. Rewritten forms: ``Model M``,
    ``model m``, ``Model 'M'``, ``model "m"``, a bare quoted ``'m'``, ``models M and m``, ``The first model ('m')``,
    ``Output (a)``; a possessive ``'s`` is kept (``Model 'M's`` -> ``Response 1's``), and ``<name>'s response`` /
    ``output`` / ``answer`` becomes ``<name>``. Letter case matters: ``M`` and ``m`` are two names.

    Args:
        text: the explanation.
        names: ``{name: position}`` (1 or 2), e.g. ``{"M": 2, "m": 1}``; pass the positions of the order the
            example is shown in (swapped: ``3 - position``).
        labels: the names of response 1 and response 2 in the critic's template.

    Returns:
        The rewritten explanation.

    Raises:
        ValueError: the text uses a name that ``names`` lacks, or still names a response in a way that is not
            rewritten (a bare ``M``, ``the first response``, ``the latter model``...): after a swap it would be
            wrong. The message quotes the phrase.
    """
    unknown: list[str] = []

    def name(ident: str) -> str:
        if ident not in names or names[ident] not in (1, 2):
            unknown.append(ident)
            return ident
        return labels[names[ident] - 1]

    out = _ORDERED_NAME.sub(lambda m: name(m["id"]), text)
    out = _TWO_NAMES.sub(lambda m: f"{name(m['a'])} and {name(m['b'])}", out)
    out = _MODEL_NAME.sub(lambda m: name(m["id"]) + ("'s" if m["s"] else ""), out)
    out = _QUOTED_NAME.sub(lambda m: name(m["id"]) + ("'s" if m["s"] else ""), out)
    out = _OUTPUT_NAME.sub(lambda m: name(m["id"]), out)
    if unknown:
        raise ValueError(f"explanation names {unknown[0]!r}, which the row's names {dict(names)} do not map")
    for label in labels:
        out = re.sub(rf"{re.escape(label)}{_APOSTROPHE}s (?:response|output|answer)\b", label, out)
    left = _UNRESOLVED.search(out)
    if left is not None:
        raise ValueError(f"explanation names a response as {left.group(0)!r}, which cannot be rewritten by position")
    return out


def verdict_text(output: OutputSpec, value: int | float) -> str:
    """The verdict line a template asks for, as a critique ends with it.

    Args:
        output: the template's output spec; its format must end a critique with the verdict (``autoj_decision``,
            ``autoj_rating``, ``pair_brackets``, ``rating_brackets``, ``comparison_dict``, ``score_dict``,
            ``prometheus_result``).
        value: a label (0 / 1 / 2, :mod:`hf_critic.schema`) for label templates, a score for score templates.

    Returns:
        E.g. ``"So, the final decision is Response 1."``, ``"[[A]]"``, ``"{'Overall Comparison Result': 'Tie'}"``,
        ``"Rating: [[7]]"``; :func:`hf_critic.parsing.parse` reads it back as ``value``.

    Raises:
        ValueError: a format whose verdict opens the critique, or a label the template has no verdict for
            (Prometheus 2's pairwise templates know no tie).
    """
    prefix = output.verdict_prefix if output.verdict_prefix is not None else _default_prefix(output)
    if output.format not in _VERDICT_CLOSINGS or not prefix:
        raise ValueError(f"output format {output.format!r} does not end a critique with its verdict")
    if output.kind == "label":
        if not 0 <= int(value) < len(output.labels or ()):
            raise ValueError(f"label {value!r} has no verdict in this template (labels {output.labels})")
        shown = output.labels[int(value)]
    else:
        shown = str(int(value)) if float(value).is_integer() else str(value)
    space = " " if prefix[-1].isascii() and prefix[-1] not in "['" else ""
    return f"{prefix}{space}{shown}{_VERDICT_CLOSINGS[output.format]}"


def _response_names(output: OutputSpec) -> tuple[str, str]:
    """How a pairwise template names the two responses: its labels (``Response 1``, ``Assistant 1``), or
    ``Assistant A`` / ``Assistant B`` for single-letter labels (MT-Bench)."""
    first, second = output.labels[:2]
    if len(first) == 1:
        return f"Assistant {first}", f"Assistant {second}"
    return first, second


@dataclass
class PublishedBuildReport:
    """What :func:`build_published_judgment_data` read, dropped and wrote.

    Attributes:
        sources: ``{source: {"read": rows in the files, "skipped": {reason: rows}, "relabelled": {reason: rows}
            (kept, label changed: the judge ranked both outputs first), "decontaminated": rows dropped, "kept": source
            rows kept, "rows": {config: output rows (both orders for pairs)}}}``.
        decontamination: per benchmark, as :func:`decontaminate` returns (plus ``"format"`` and ``"path"``).
        explanations: ``{"rewritten": explanations rewritten (per source row), "unresolved": explanations that
            name a response in a way that cannot be rewritten (the row keeps its preference, loses its critique),
            "unresolved_examples": the first few phrases}``.
        rows: ``{config: {split: rows}}``.
        questions: ``{split: distinct normalised questions}``.
        settings: the build's parameters (template, seed, validation fraction, swap).
    """

    sources: dict = field(default_factory=dict)
    decontamination: dict = field(default_factory=dict)
    explanations: dict = field(default_factory=lambda: {"rewritten": 0, "unresolved": 0, "unresolved_examples": []})
    rows: dict = field(default_factory=dict)
    questions: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready copy (``build_report.json``)."""
        return json.loads(json.dumps(asdict(self), default=dict))

    def summary(self) -> str:
        """Multi-line human-readable summary: per-source counts, decontamination per benchmark, split sizes."""
        lines = ["sources (rows read -> skipped -> decontaminated -> kept; output rows per config):"]
        for source, s in self.sources.items():
            skipped = ", ".join(f"{n} {reason}" for reason, n in s["skipped"].items()) or "none"
            rows = ", ".join(f"{c}: {n}" for c, n in s["rows"].items())
            lines.append(
                f"  {source}: read {s['read']}, skipped {sum(s['skipped'].values())} ({skipped}), "
                f"decontaminated {s['decontaminated']}, kept {s['kept']} -> {rows}"
            )
            for reason, n in s.get("relabelled", {}).items():
                lines.append(f"    {n} rows: {reason}")
        lines.append("decontamination (training examples dropped per benchmark; exact / normalised-only matches):")
        if not self.decontamination:
            lines.append("  no benchmark given")
        for name, d in self.decontamination.items():
            by_source = (
                ", ".join(
                    f"{src}: {n} examples / {d['questions_by_source'][src]} questions"
                    for src, n in d["by_source"].items()
                )
                or "-"
            )
            lines.append(
                f"  {name}: {d['questions']} benchmark questions; dropped {d['dropped']} examples "
                f"({d['exact']} exact, {d['normalised']} normalised) of {d['dropped_questions']} training questions "
                f"[{by_source}]"
            )
        e = self.explanations
        lines.append(
            f"explanations rewritten to neutral names: {e['rewritten']}; unresolved (critique dropped): "
            f"{e['unresolved']}"
        )
        lines.append(f"questions per split: {self.questions}")
        lines += [f"{config}: {counts}" for config, counts in self.rows.items()]
        return "\n".join(lines)


_PAIR_FEATURES = {
    "id": datasets.Value("string"),
    "query_id": datasets.Value("string"),
    "question": datasets.Value("string"),
    "response_1": datasets.Value("string"),
    "response_2": datasets.Value("string"),
    "label": datasets.Value("int64"),
    "preference": datasets.Value("float64"),
    "critique": datasets.Value("string"),
    "explanation": datasets.Value("string"),
    "source": datasets.Value("string"),
    "model_1": datasets.Value("string"),
    "model_2": datasets.Value("string"),
    "swapped": datasets.Value("bool"),
    "category": datasets.Value("string"),
    "gpt4_tie": datasets.Value("bool"),
}
_POINT_FEATURES = {
    "id": datasets.Value("string"),
    "query_id": datasets.Value("string"),
    "question": datasets.Value("string"),
    "response": datasets.Value("string"),
    "score": datasets.Value("float64"),
    "critique": datasets.Value("string"),
    "explanation": datasets.Value("string"),
    "source": datasets.Value("string"),
    "scenario": datasets.Value("string"),
    "category": datasets.Value("string"),
    "source_dataset": datasets.Value("string"),
}
_SFT_FEATURES = {
    "template": datasets.Value("string"),
    "template_version": datasets.Value("string"),
    "messages": [{"role": datasets.Value("string"), "content": datasets.Value("string")}],
}


def _pair_rows(
    record: Mapping[str, Any], source: str, names: tuple[str, str], report: PublishedBuildReport, swap: bool
):
    """The example of one AlpacaEval annotation in its published order and, with ``swap``, the swapped order."""
    explanation_names = json.loads(record["explanation_names"]) if record["explanation_names"] else None
    explanation = record["explanation"]
    if explanation is not None:
        try:
            neutral_explanation(explanation, explanation_names, names)
            report.explanations["rewritten"] += 1
        except ValueError as err:
            report.explanations["unresolved"] += 1
            if len(report.explanations["unresolved_examples"]) < 5:
                report.explanations["unresolved_examples"].append(f"{record['location']}: {err}")
            explanation = None
    rows = []
    for swapped in (False, True) if swap else (False,):
        positions = explanation_names
        if swapped and positions is not None:
            positions = {name: 3 - position for name, position in positions.items()}
        first, second = ("response_2", "response_1") if swapped else ("response_1", "response_2")
        rows.append(
            {
                "id": f"{source}/{Path(record['location']).name}" + ("/swap" if swapped else ""),
                "query_id": record["query_id"],
                "question": record["question"],
                "response_1": record[first],
                "response_2": record[second],
                "label": swap_label(record["label"]) if swapped else record["label"],
                "preference": 1.0 - record["preference"] if swapped else record["preference"],
                "critique": None,  # the explanation and the verdict line, set by the caller
                "explanation": neutral_explanation(explanation, positions, names) if explanation else None,
                "source": source,
                "model_1": record["model_2" if swapped else "model_1"],
                "model_2": record["model_1" if swapped else "model_2"],
                "swapped": swapped,
                "category": record["category"],
                "gpt4_tie": record["gpt4_tie"],
            }
        )
    return rows


def build_published_judgment_data(
    data_dir: str | Path,
    *,
    sources: Sequence[str] = tuple(PUBLISHED_SOURCES),
    exclude: Sequence[str] | Mapping[str, Iterable[str]] = (),
    validation_fraction: float = 0.1,
    seed: int = 0,
    swap: bool = True,
    pairwise_family: str = "autoj",
) -> tuple[dict[str, datasets.DatasetDict], PublishedBuildReport]:
    """Critic training data from published judgments (AlpacaEval, Auto-J), decontaminated and split by question.

    Steps: load each source through its loader (:func:`~hf_critic.loaders.alpacaeval.load_alpacaeval`,
    :func:`~hf_critic.loaders.autoj.load_autoj_single`; rows with a missing preference or output are skipped and
    counted), drop pairs whose two responses are identical (AlpacaEval's baseline judged against itself), drop
    every row whose question matches an excluded benchmark (:func:`decontaminate`), emit each AlpacaEval pair in
    both orders (``swap``), and assign every normalised question to train or validation (so no question, in any
    source or order, is in two splits).

    Args:
        data_dir: the real-data folder (``../shared/data``), holding the :data:`PUBLISHED_SOURCES` paths.
        sources: subset of :data:`PUBLISHED_SOURCES`.
        exclude: benchmarks to decontaminate against: ``[NAME=]FORMAT:PATH`` strings (:func:`parse_exclude`,
            read by :func:`benchmark_questions`) or ``{name: questions}``.
        validation_fraction: share of the distinct normalised questions in ``validation``, in [0, 1).
        seed: question split seed.
        swap: also emit every pair in swapped order (response 2 first).
        pairwise_family: template family of the pairwise SFT prompts and verdicts (default ``autoj``: responses
            named ``Response 1`` / ``Response 2``, verdict ``So, the final decision is Response 1.``); its pairwise
            reference-free English template must end the critique with a verdict and know ties.

    Returns:
        ``(configs, report)``. ``configs`` maps each of :data:`PUBLISHED_CONFIGS` that has rows to a
        ``DatasetDict(train, validation)``:

        * ``pointwise_reference_free`` (Auto-J): ``id``, ``query_id``, ``question``, ``response``, ``score`` (GPT-4's
          rating, float in [1, 10]), ``critique`` (GPT-4's critique as published, ending in ``Rating: [[n]]``),
          ``explanation`` (the critique without the rating), ``source``, ``scenario``, ``category`` (Auto-J's
          scenario group), ``source_dataset``, ``template``, ``template_version``, ``messages`` (Auto-J's prompt,
          re-rendered by the ``autoj`` template and checked equal to the published one, then the critique);
        * ``pairwise_reference_free`` (AlpacaEval pairs with an explanation, both orders): ``id`` (``/swap`` suffix
          for the swapped copy), ``query_id``, ``question``, ``response_1``, ``response_2``, ``label`` (0 = response
          1 better, 1 = response 2, 2 = tie), ``preference`` (float in [0, 1], P(response 2 better)), ``critique``
          (the neutral explanation then the template's verdict line: the SFT target), ``explanation``, ``source``,
          ``model_1``, ``model_2`` (generators), ``swapped``, ``category`` (AlpacaEval subset), ``gpt4_tie``,
          ``template``, ``template_version``, ``messages`` (the template's prompt, then ``critique``);
        * ``pairwise_preference``: every AlpacaEval pair in both orders, with the pairwise columns but no
          ``template`` / ``messages``; ``critique`` and ``explanation`` are None for the soft preferences (and for
          the few explanations that cannot be rewritten). For preference / reward training.

    Raises:
        ValueError: an unknown source, a bad or repeated ``exclude`` spec, a bad fraction, a pairwise family without a
            tie verdict, or an Auto-J prompt that the ``autoj`` template does not re-render byte for byte (names file
            and line).
        RecordError: a malformed source or benchmark file (names file, row and field).
    """
    from .loaders.alpacaeval import load_alpacaeval
    from .loaders.autoj import load_autoj_single
    from .parsing import parse_output

    unknown = [s for s in sources if s not in PUBLISHED_SOURCES]
    if unknown:
        raise ValueError(f"unknown source(s) {unknown}; expected some of {tuple(PUBLISHED_SOURCES)}")
    if not 0 <= validation_fraction < 1:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    pair_template = get_template(pairwise_family, "pairwise_reference_free", "en")
    if pair_template.output.kind != "label" or len(pair_template.output.labels or ()) < 3:
        raise ValueError(f"template {pair_template.name} has no tie verdict; AlpacaEval has ties")
    verdict_text(pair_template.output, 0)  # raises for a format whose verdict opens the critique
    names = _response_names(pair_template.output)
    point_template = get_template("autoj", "pointwise_reference_free", "en")

    report = PublishedBuildReport(
        settings={
            "pairwise_template": f"{pair_template.name}@{pair_template.version}",
            "pointwise_template": f"{point_template.name}@{point_template.version}",
            "response_names": list(names),
            "validation_fraction": validation_fraction,
            "seed": seed,
            "swap": swap,
        }
    )
    if isinstance(exclude, Mapping):
        benchmarks = {name: list(questions) for name, questions in exclude.items()}
        specs = {name: {"format": None, "path": None} for name in benchmarks}
    else:
        benchmarks, specs = {}, {}
        for spec in exclude:
            name, fmt, path = parse_exclude(spec)
            if name in benchmarks:
                raise ValueError(f"--exclude {spec!r}: the name {name!r} is given twice")
            benchmarks[name] = benchmark_questions(fmt, path)
            specs[name] = {"format": fmt, "path": path}

    records = []
    for source in sources:
        skipped: Counter = Counter()
        path = Path(data_dir) / PUBLISHED_SOURCES[source]["path"]
        if source.startswith("alpacaeval"):
            loaded = list(load_alpacaeval(path, skipped=skipped))
            relabelled = {k: skipped.pop(k) for k in list(skipped) if k.startswith("gpt-4 ranked")}
            rows = [r for r in loaded if r["response_1"] != r["response_2"]]
            if len(rows) < len(loaded):
                skipped["identical responses (baseline judged against itself)"] = len(loaded) - len(rows)
        else:
            loaded = rows = list(load_autoj_single(path))
            relabelled = {}
        read = len(loaded) + sum(v for k, v in skipped.items() if k.startswith("missing"))
        report.sources[source] = {
            "read": read,
            "skipped": dict(sorted(skipped.items())),
            "relabelled": relabelled,
            "decontaminated": 0,
            "kept": 0,
            "rows": {},
        }
        records += [{**r, "source": source} for r in rows]

    kept, stats = decontaminate(records, benchmarks)
    report.decontamination = {name: {**specs[name], **entry} for name, entry in stats.items()}
    dropped = Counter(r["source"] for r in records) - Counter(r["source"] for r in kept)
    for source, info in report.sources.items():
        info["decontaminated"] = dropped.get(source, 0)
        info["kept"] = sum(1 for r in kept if r["source"] == source)

    assignment = split_by_question(
        {("published", normalize_question(r["question"])) for r in kept},
        test_fraction=0.0,
        validation_fraction=validation_fraction,
        seed=seed,
    )
    report.questions = dict(sorted(Counter(assignment.values()).items()))

    out: dict[str, dict[str, list]] = {c: {s: [] for s in _PUBLISHED_SPLITS} for c in PUBLISHED_CONFIGS}
    per_source: dict[str, Counter] = {s: Counter() for s in report.sources}
    for record in kept:
        split = assignment[("published", normalize_question(record["question"]))]
        source = record["source"]
        if PUBLISHED_SOURCES[source]["setting"] == "pointwise_reference_free":
            prompt = point_template.render({QUESTION: record["question"], RESPONSE: record["response"]})
            if prompt[-1]["content"] != record["prompt"]:
                where = record["location"]
                raise ValueError(f"{where}: the {point_template.name} template does not reproduce Auto-J's prompt")
            parsed = parse_output(record["critique"], point_template.output)
            out["pointwise_reference_free"][split].append(
                {
                    "id": f"{source}/{Path(record['location']).name}",
                    "query_id": record["query_id"],
                    "question": record["question"],
                    "response": record["response"],
                    "score": record["human_score"],
                    "critique": record["critique"],
                    "explanation": parsed.explanation or None,
                    "source": source,
                    "scenario": record["scenario"],
                    "category": record["category"],
                    "source_dataset": record["source_dataset"],
                    "template": point_template.name,
                    "template_version": point_template.version,
                    "messages": _messages(prompt, record["critique"]),
                }
            )
            per_source[source]["pointwise_reference_free"] += 1
            continue
        for row in _pair_rows(record, source, names, report, swap):
            verdict = verdict_text(pair_template.output, row["label"])
            row["critique"] = f"{row['explanation']}\n\n{verdict}" if row["explanation"] else None
            out["pairwise_preference"][split].append(row)
            per_source[source]["pairwise_preference"] += 1
            if row["critique"] is not None:
                prompt = pair_template.render(row)
                out["pairwise_reference_free"][split].append(
                    {
                        **row,
                        "template": pair_template.name,
                        "template_version": pair_template.version,
                        "messages": _messages(prompt, row["critique"]),
                    }
                )
                per_source[source]["pairwise_reference_free"] += 1
        # explanations are counted once per source row, not per order
    for source, counts in per_source.items():
        report.sources[source]["rows"] = {c: counts[c] for c in PUBLISHED_CONFIGS if counts[c]}

    features = {
        "pointwise_reference_free": {**_POINT_FEATURES, **_SFT_FEATURES},
        "pairwise_reference_free": {**_PAIR_FEATURES, **_SFT_FEATURES},
        "pairwise_preference": _PAIR_FEATURES,
    }
    configs = {}
    for config, splits in out.items():
        if not any(splits.values()):
            continue
        feats = datasets.Features(features[config])
        configs[config] = datasets.DatasetDict(
            {
                s: datasets.Dataset.from_list(rows, features=feats)
                if rows
                else datasets.Dataset.from_dict({k: [] for k in feats}, features=feats)  # an empty split keeps columns
                for s, rows in splits.items()
            }
        )
        report.rows[config] = {s: len(rows) for s, rows in splits.items()}
    return configs, report


#: The card template :func:`render_published_card` renders (in ``dataset_cards/``, shipped as
#: ``hf_critic._dataset_cards``).
PUBLISHED_CARD_TEMPLATE = "published_judgments.md"
#: The validation files :func:`save_published_judgment_data` writes for ``hf-critic grade`` / ``meta-eval``.
_VALIDATION_FILES = ("pointwise_reference_free", "pairwise_reference_free")


def _licence_text(report: PublishedBuildReport) -> str:
    """The ``LICENSE`` file of the Hub folder: each source's licence, as its authors state it."""
    lines = [
        "This dataset is derived from published LLM judgments; each part keeps its source's licence, and a model",
        "trained on it inherits them. The judgments were written by OpenAI models, whose terms of use may also apply.",
        "",
    ]
    for source in report.sources:
        info = PUBLISHED_SOURCES[source]
        lines.append(f"- {source}: {info['licence']} ({info['repository']} @ {info['commit']})")
    if any(PUBLISHED_SOURCES[s]["repository"] == "tatsu-lab/alpaca_eval" for s in report.sources):
        lines += ["", "CC BY-NC 4.0: https://creativecommons.org/licenses/by-nc/4.0/"]
    return "\n".join(lines) + "\n"


def published_outputs(configs: Iterable[str] = PUBLISHED_CONFIGS) -> list[str]:
    """The names :func:`save_published_judgment_data` writes in its folder (for ``check_output_dir``)."""
    configs = list(configs)
    files = [f"validation_{c}.jsonl" for c in _VALIDATION_FILES if c in configs]
    return [*configs, "hub", "build_report.json", *files]


def render_published_card(
    configs: Mapping[str, datasets.DatasetDict],
    report: PublishedBuildReport,
    *,
    repo_id: str | None = None,
    template_path: str | Path | None = None,
):
    """The Hub dataset card of :func:`build_published_judgment_data`'s output, with the build's real counts.

    Args:
        configs: the configs returned by the build.
        report: its report (sources, decontamination, explanations, rows, settings).
        repo_id: the Hub id shown in the usage snippet (``"<your-repo>"`` when None).
        template_path: the Jinja card template (default ``dataset_cards/published_judgments.md``).

    Returns:
        A ``huggingface_hub.DatasetCard``: YAML header (``license``: ``cc-by-nc-4.0`` when only AlpacaEval data is
        in, else ``other`` with ``license_name``; ``configs`` with ``data_files`` per split; ``dataset_info``), then
        Summary, Structure, Creation (each source with its repository@commit, licence and row counts;
        decontamination counts per benchmark; swap augmentation; split), Bias and Limitations, Citation.

    Raises:
        FileNotFoundError: the card template is missing (a broken install).
    """
    from importlib.resources import files

    from huggingface_hub import DatasetCard, DatasetCardData

    from ._version import __version__
    from .eval_instruct.hub import CARD_PACKAGE, _size_category

    path = Path(template_path) if template_path else Path(str(files(CARD_PACKAGE) / PUBLISHED_CARD_TEMPLATE))
    if not path.is_file():
        raise FileNotFoundError(f"dataset card template {path} not found (a broken install?)")
    autoj = "autoj_single_train" in report.sources
    card_data = DatasetCardData(
        license="other" if autoj else "cc-by-nc-4.0",
        language=["en"],
        task_categories=["text-generation", "text-classification"],
        pretty_name="Published LLM-judge critiques for critic training (AlpacaEval, Auto-J)",
        size_categories=[_size_category(sum(len(d) for dd in configs.values() for d in dd.values()))],
        tags=["llm-as-a-judge", "critique", "critiquellm", "alpacaeval", "auto-j", "preference"],
        configs=[
            {
                "config_name": name,
                "data_files": [{"split": split, "path": f"{name}/{split}-*"} for split in splits],
            }
            for name, splits in configs.items()
        ],
    )
    if autoj:
        card_data.license_name = "cc-by-nc-4.0-and-research-only"
        card_data.license_link = "LICENSE"
    infos = datasets.info.DatasetInfosDict(
        {
            name: datasets.DatasetInfo(
                features=next(iter(splits.values())).features,
                splits=datasets.SplitDict({s: datasets.SplitInfo(s, num_examples=len(d)) for s, d in splits.items()}),
            )
            for name, splits in configs.items()
        }
    )
    infos.to_dataset_card_data(card_data)
    sources = [
        {"name": name, **PUBLISHED_SOURCES[name], **info, "skipped_total": sum(info["skipped"].values())}
        for name, info in report.sources.items()
    ]
    return DatasetCard.from_template(
        card_data,
        template_path=str(path),
        repo_id=repo_id or "<your-repo>",
        configs=[{"name": n, "splits": report.rows.get(n, {})} for n in configs],
        sources=sources,
        decontamination=report.decontamination,
        explanations=report.explanations,
        questions=report.questions,
        settings=report.settings,
        autoj=autoj,
        version=__version__,
    )


def save_published_judgment_data(
    configs: Mapping[str, datasets.DatasetDict],
    report: PublishedBuildReport,
    out_dir: str | Path,
    *,
    card: Any = None,
) -> dict[str, Path]:
    """Write the build's output folder.

    Layout: ``<out_dir>/<config>/`` (``save_to_disk`` ``DatasetDict`` with ``train`` / ``validation``, what a
    recipe's ``dataset_mixture`` points at: ``id: <out_dir>``, ``config: <config>``), ``<out_dir>/hub/``
    (``<config>/<split>-00000-of-00001.parquet`` per config and split, ``LICENSE`` (each source's licence) and
    ``README.md`` = ``card`` when given: the folder :func:`push_published_judgment_data` uploads), ``<out_dir>/build_report.json``
    (:meth:`PublishedBuildReport.to_dict`), and ``<out_dir>/validation_<config>.jsonl`` for the pointwise and the
    pairwise SFT configs without ``messages`` / ``template`` columns (``hf-critic grade --human-score score``,
    ``hf-critic meta-eval --benchmark generic:...``). Each folder is written under a temporary name and renamed
    into place.

    Args:
        configs, report: what :func:`build_published_judgment_data` returned.
        out_dir: target folder (created). Keep it out of version control (``outputs/`` is git-ignored): AlpacaEval's
            data is CC BY-NC 4.0 and Auto-J's has no licence.
        card: the dataset card (:func:`render_published_card`), or None for no ``README.md``.

    Returns:
        ``{name: path}`` for every config folder, ``hub``, ``report`` and each validation file.
    """
    import shutil
    import tempfile

    from .io import write_text

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}

    def replace(target: Path, write) -> None:
        tmp = Path(tempfile.mkdtemp(dir=out_dir, prefix=f".{target.name}-"))
        try:
            write(tmp)
            if target.exists():
                shutil.rmtree(target) if target.is_dir() else target.unlink()
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    quiet = not datasets.are_progress_bars_disabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        for config, splits in configs.items():
            shards = {s: 1 for s, d in splits.items() if len(d) == 0}
            replace(
                out_dir / config,
                lambda tmp, splits=splits, shards=shards: splits.save_to_disk(str(tmp), num_shards=shards),
            )
            written[config] = out_dir / config

        def write_hub(tmp: Path) -> None:
            for config, splits in configs.items():
                (tmp / config).mkdir(parents=True)
                for split, data in splits.items():
                    data.to_parquet(str(tmp / config / f"{split}-00000-of-00001.parquet"))
            if card is not None:
                (tmp / "README.md").write_text(str(card), encoding="utf-8")
            (tmp / "LICENSE").write_text(_licence_text(report), encoding="utf-8")

        replace(out_dir / "hub", write_hub)
        written["hub"] = out_dir / "hub"
    finally:
        if quiet:
            datasets.enable_progress_bars()
    for config in _VALIDATION_FILES:
        if config not in configs or "validation" not in configs[config]:
            continue
        data = configs[config]["validation"]
        data = data.remove_columns([c for c in ("messages", "template", "template_version") if c in data.column_names])
        lines = [json.dumps(row, ensure_ascii=False) for row in data]
        path = out_dir / f"validation_{config}.jsonl"
        write_text(path, "".join(line + "\n" for line in lines))
        written[f"validation_{config}"] = path
    written["report"] = write_text(out_dir / "build_report.json", json.dumps(report.to_dict(), indent=2) + "\n")
    return written


def push_published_judgment_data(out_dir: str | Path, repo_id: str, *, private: bool = True, api: Any = None) -> str:
    """Upload ``<out_dir>/hub`` (parquet per config and split, and the card) to the Hub dataset ``repo_id``.

    Args:
        out_dir: the folder :func:`save_published_judgment_data` wrote (with a card).
        repo_id: ``org/name``.
        private: create the repository private (an existing one keeps its visibility).
        api: an ``huggingface_hub.HfApi`` (tests pass a stand-in).

    Returns:
        The repository URL.

    Raises:
        RuntimeError: the Hub is offline (``HF_HUB_OFFLINE`` set): nothing is attempted.
        FileNotFoundError: no ``hub/README.md`` (save with a card first).
        Exception: whatever ``huggingface_hub`` raises for a failed upload (network, authentication).
    """
    import os

    from .eval_instruct.hub import push_to_hub

    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE"):
        raise RuntimeError("the Hugging Face Hub is offline (HF_HUB_OFFLINE is set)")
    return push_to_hub(
        Path(out_dir) / "hub",
        repo_id,
        private=private,
        commit_message="Published judgment training data (hf-critic)",
        api=api,
    )
