"""Critique SFT data from MT-Bench / Vicuna-Bench GPT-4 single grades and Prometheus feedback, split by question
(see :mod:`hf_critic.judgments`)."""

from __future__ import annotations

import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets

from ..core.errors import BadInputError
from ..core.schema import QUESTION, REFERENCE, RESPONSE
from ..io import read_json
from ..loaders.fastchat import read_judgments
from ..prompts import get_template

logger = logging.getLogger(__name__)


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
        raise BadInputError(f"unknown benchmark {benchmark!r}; expected one of {BENCHMARKS}")
    records = []
    for judgment in read_judgments(Path(data_dir) / "selfeval" / benchmark):
        if judgment.turn != 1:
            continue
        where, judge_prompt = judgment.where, judgment.judge_prompt
        setting = _JUDGE_SETTINGS.get(judge_prompt)
        if setting is None:
            raise BadInputError(f"{where}: unexpected judge prompt {judge_prompt!r} for a first-turn judgment")
        if judgment.score is None or judgment.score < 1:  # FastChat writes -1 when GPT-4's output had no [[rating]]
            if report is not None:
                report.dropped["gpt-4 gave no rating (score -1)"] += 1
            continue
        fields = judgment.prompt_fields()
        if fields["question"] is None:
            raise BadInputError(f"{where}: prompt is not in FastChat's single-answer layout")
        if (fields["reference"] is None) != (setting == "pointwise_reference_free"):
            raise BadInputError(f"{where}: {judge_prompt} prompt with(out) a reference answer")
        record = {QUESTION: fields["question"], RESPONSE: fields["answers"][0]}
        if fields["reference"] is not None:
            record[REFERENCE] = fields["reference"]
        template = get_template("mtbench", setting, "en")
        if template.render(record)[-1]["content"] != judgment.user_prompt:
            raise BadInputError(f"{where}: the {template.name} template does not reproduce GPT-4's prompt")
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
        raise BadInputError(f"unknown benchmark {benchmark!r}; expected one of {tuple(PROMETHEUS_FILES)}")
    path = Path(data_dir) / "prometheus" / PROMETHEUS_FILES[benchmark]
    items = read_json(path)
    records = []
    for index, item in enumerate(items):
        match = _PROMETHEUS_PROMPT.search(item["instruction"])
        if match is None:
            raise BadInputError(f"{path}: item {index}: prompt is not in the Prometheus absolute-grading layout")
        if len(item["gpt4_feedback"]) != len(item["gpt4_score"]):
            raise BadInputError(
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
        raise BadInputError("need 0 <= test_fraction, validation_fraction and test_fraction + validation_fraction < 1")
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
