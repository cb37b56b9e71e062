"""Eval-Instruct end to end: one recipe in, four datasets (one per CritiqueLLM setting) out.

:func:`run_eval_instruct` chains the stages of :mod:`hf_critic.eval_instruct.stages` as CritiqueLLM v2 §3.2 describes
(``variant: v2``: query augmentation -> responses -> pseudo references -> referenced pointwise grading -> multi-path
prompting, Path#1 and Path#2 -> cross validation -> swap augmentation) or as CritiqueLLM v1 §3.2 does (``variant:
v1``: the two-turn dialogue), then writes the ``DatasetDict`` (``save_to_disk`` and Hub-layout parquet with a
rendered dataset card), ``report.json`` and ``failures.jsonl``, and can push to the Hub.

Resumability: every teacher / generator answer is committed to the request cache as it arrives, and every stage is
a deterministic function of its inputs and the cache (seeded draws, no wall-clock), so a killed run started again
recomputes the stages from the cache, asks only for what is missing, and rewrites the outputs whole: nothing is
lost or duplicated.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from ..backends.chat import BackendSource, ChatSource, Pricing, UsageLedger
from ..backends.openai import OpenAIClient, redact_url
from ..cache import GenerationCache
from ..grammars import critique_grammar, difficulty_grammar, query_generation_grammar
from ..io import RecordError, load_records, write_text
from ..prompts import get_instruction_prompt, get_teacher_template, get_template
from ..schema import SETTINGS, Setting, Task
from . import stages
from .config import EndpointConfig, EvalInstructConfig, GeneratorConfig
from .hub import push_to_hub, render_card, save_outputs
from .stage_report import PipelineReport, ShortfallError, StageReport

logger = logging.getLogger(__name__)

__all__ = ["EvalInstructResult", "make_client", "make_generator", "run_eval_instruct"]


@dataclass
class EvalInstructResult:
    """What a run produced.

    Attributes:
        dataset: the four configs, keyed by setting name (``pointwise_referenced``, ``pointwise_reference_free``,
            ``pairwise_referenced``, ``pairwise_reference_free``), each a ``train`` split's Dataset.
        report: per-stage counts, usage and run facts.
        paths: ``dataset`` (save_to_disk), ``hub`` (parquet + README.md), ``report`` (report.json), ``failures``
            (failures.jsonl: every failed, rejected or left-out item by stage, id and reason, see
            :meth:`~hf_critic.eval_instruct.stage_report.PipelineReport.named_losses`), and ``url`` when pushed.
    """

    dataset: datasets.DatasetDict
    report: PipelineReport
    paths: dict[str, Any]


def teacher_grammars(
    language: str, family: str, max_tokens: int, augmentation_max_tokens: int | None = None
) -> dict[str, dict[str, str]]:
    """The GBNF grammar of each teacher stage (``teacher.grammar: true``), as ``{stage: {"grammar": ...}}``.

    Built from each stage's expected output format: the query-generation and difficulty lines of CritiqueLLM v2
    Appendix A, and for the critique stages a free explanation (at most 2 characters per token of ``max_tokens``)
    ending in the verdict line of the template that stage renders (:func:`hf_critic.grammars.critique_grammar`).
    The v1 dialogue's second turn is left free.

    Args:
        language: ``"en"`` or ``"zh"``.
        family: the critic template family (``critiquellm_v2`` or ``critiquellm_v1``).
        max_tokens: the teacher's ``max_tokens``.
        augmentation_max_tokens: the query-generation requests' ``max_tokens`` (default ``max_tokens``).
    """
    chars = max(10, 2 * max_tokens - 40)
    critique = {
        "grade_pointwise_referenced": get_template(family, Setting(Task.POINTWISE, True), language),
        "v1_turn1_referenced": get_template(family, Setting(Task.POINTWISE, True), language),
        "path1_p2p_referenced": get_teacher_template("p2p", Setting(Task.PAIRWISE, True), language),
        "path2_p2p_reference_free": get_teacher_template("p2p", Setting(Task.PAIRWISE, False), language),
        "path1_r2rf_pairwise": get_teacher_template("r2rf", Setting(Task.PAIRWISE, False), language),
        "path2_r2rf_pointwise": get_teacher_template("r2rf", Setting(Task.POINTWISE, False), language),
    }
    categories = [stages.category_name(en, language) for en, _ in stages.CATEGORIES]
    out = {stage: critique_grammar(t.output, chars) for stage, t in critique.items()}
    out["augment_queries"] = query_generation_grammar(categories, augmentation_max_tokens or max_tokens)
    out["score_difficulty"] = difficulty_grammar(3)
    return {stage: {"grammar": grammar} for stage, grammar in out.items()}


def make_client(
    endpoint: EndpointConfig,
    *,
    cache: GenerationCache | None,
    ledger: UsageLedger,
    name: str,
    seed: int = 0,
    stage_params: Mapping[str, Mapping[str, Any]] | None = None,
) -> OpenAIClient:
    """An :class:`~hf_critic.backends.openai.OpenAIClient` for an endpoint of the recipe (``stage_params``: see
    :class:`~hf_critic.backends.openai.OpenAIClient`)."""
    return OpenAIClient(
        endpoint.base_url,
        endpoint.model,
        api_key_env=endpoint.api_key_env,
        params=endpoint.sampling,
        concurrency=endpoint.concurrency,
        timeout=endpoint.timeout,
        retry=endpoint.retry,
        pricing=Pricing(endpoint.price_input_per_million, endpoint.price_output_per_million),
        cache=cache,
        ledger=ledger,
        name=name,
        seed=seed,
        stage_params=stage_params,
    )


def make_generator(
    generator: GeneratorConfig, *, cache: GenerationCache | None, ledger: UsageLedger, progress: bool = True
) -> ChatSource:
    """The chat source of a generator: an HTTP client for ``endpoint``, a local transformers backend otherwise."""
    if generator.endpoint is not None:
        return make_client(generator.endpoint, cache=cache, ledger=ledger, name=generator.name)
    from ..backends.transformers import TransformersBackend
    from ..decoding import DecodingConfig

    backend = TransformersBackend.from_pretrained(
        generator.transformers, batch_size=generator.batch_size, progress=progress
    )
    return BackendSource(
        backend,
        DecodingConfig(max_new_tokens=generator.max_new_tokens),
        cache=cache,
        ledger=ledger,
        chunk_size=generator.batch_size * 4,
        name=generator.name,
    )


def _load_revisions(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    data = load_records(path)
    if "reference" not in data.column_names or not {"query_id", "question"} & set(data.column_names):
        raise RecordError(f"{path}: revisions need a 'reference' column and a 'query_id' or 'question' column")
    out = {}
    for row in data:
        key = row.get("query_id") or row.get("question")
        if key and row["reference"]:
            out[key] = row["reference"]
    return out


class _Runner:
    """Runs stages one after the other, timing them, booking usage and echoing progress."""

    def __init__(self, ledger: UsageLedger, report: PipelineReport, echo: Callable[[str], None], total: int):
        self.ledger, self.report, self.echo, self.total, self.done = ledger, report, echo, total, 0

    def __call__(self, name: str, fn, *args, **kwargs):
        self.done += 1
        stage = StageReport(name)
        self.echo(f"[{self.done}/{self.total}] {name} ...")
        started = time.perf_counter()
        out = fn(*args, stage=name, report=stage, **kwargs)
        stage.seconds = time.perf_counter() - started
        stage.usage = self.ledger.stage(name)
        self.report.stages.append(stage)
        rejected = sum(stage.rejected.values())
        extra = f", {stage.usage.requests} requests, {stage.usage.cache_hits} cached" if stage.usage.items else ""
        reasked = stage.usage.errors.get("rejected_from_cache", 0)
        if reasked:  # cached answers that do not pass the stage's check (an older run kept them): asked again
            extra += f", {reasked} cached answer(s) re-asked"
        self.echo(
            f"[{self.done}/{self.total}] {name}: {stage.items_in} {stage.unit} in, {stage.items_out} out, "
            f"{stage.failed} failed, {rejected} rejected{extra} ({stage.seconds:.1f} s)"
        )
        return out


def run_eval_instruct(
    config: EvalInstructConfig,
    *,
    teacher: ChatSource | None = None,
    generators: Mapping[str, ChatSource] | None = None,
    push: bool = False,
    echo: Callable[[str], None] | None = None,
) -> EvalInstructResult:
    """Run a whole Eval-Instruct recipe (CritiqueLLM v2 §3.2, or v1 §3.2 with ``variant: v1``).

    Args:
        config: the recipe (see :mod:`hf_critic.eval_instruct.config`).
        teacher: a chat source to use instead of the recipe's teacher endpoint (tests, custom clients).
        generators: ``name -> chat source`` to use instead of the recipe's generators.
        push: push the result to ``config.hub.repo_id`` (must be set).
        echo: where progress lines go (default: standard error).

    Returns:
        :class:`EvalInstructResult` with the four configs; outputs written under ``config.output_dir``.

    Raises:
        RecordError: unreadable seed / revision files.
        hf_critic.backends.openai.FatalAPIError: the teacher or a generator refuses every request (401 / 403 / 404);
            finished work stays cached, so the run can be started again once fixed.
        ValueError: ``push`` without ``hub.repo_id``.
        ShortfallError: no config has a row, or a stage lost more than ``config.max_rejected_share`` of its items; the
            message is one line naming the stage and its main loss reason. ``report.json`` and ``failures.jsonl`` are
            written; the dataset and its card are not, and nothing is pushed.
    """
    if push and not config.hub.repo_id:
        raise ValueError("push to the Hub needs hub.repo_id (or --push-to-hub ORG/NAME)")
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    out_dir = Path(config.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = GenerationCache(config.cache_path)
    ledger = teacher.ledger if teacher is not None else UsageLedger()
    teacher_name = teacher.name if teacher is not None else config.teacher.model
    if teacher is None:
        family = "critiquellm_v2" if config.variant == "v2" else "critiquellm_v1"
        max_tokens = int(config.teacher.sampling.get("max_tokens") or 2048)
        aug = config.queries.augmentation
        aug_tokens = int((aug.sampling or {}).get("max_tokens") or max_tokens) if aug else max_tokens
        per_stage = (
            teacher_grammars(config.language, family, max_tokens, aug_tokens) if config.teacher.grammar else None
        )
        teacher = make_client(
            config.teacher, cache=cache, ledger=ledger, name="teacher", seed=config.seed, stage_params=per_stage
        )
    if generators is None:
        generators = {
            g.name: make_generator(g, cache=cache, ledger=ledger, progress=config.progress) for g in config.generators
        }
    lang, progress, filters, v2 = config.language, config.progress, config.filters, config.variant == "v2"
    family = "critiquellm_v2" if v2 else "critiquellm_v1"
    q = config.queries
    aug = q.augmentation
    report = PipelineReport()
    total = 4 + bool(q.difficulty) + bool(q.balance_total) + (7 + 2 * config.swap_augmentation if v2 else 1)
    run = _Runner(ledger, report, echo, total)
    seeds = load_records(q.seeds, q.columns or None, q.limit)
    queries = run(
        "augment_queries",
        stages.augment_queries,
        seeds,
        teacher,
        language=lang,
        rounds=aug.rounds if aug else 0,
        examples=aug.examples if aug else 3,
        format_examples=aug.format_examples if aug else 10,
        rouge_l_max=aug.rouge_l_max if aug else 0.7,
        self_bleu_max=aug.self_bleu_max if aug else 0.7,
        keep_seeds=q.keep_seeds,
        params=aug.sampling if aug else None,
        seed=config.seed,
        source=str(q.seeds),
        progress=progress,
    )
    if q.difficulty:
        queries = run("score_difficulty", stages.score_difficulty, queries, teacher, language=lang, progress=progress)
    if q.balance_total:
        queries = run("balance_queries", stages.balance_queries, queries, total=q.balance_total, seed=config.seed)
    system = {g.name: g.system for g in config.generators}
    responses = run(
        "collect_responses", stages.collect_responses, queries, generators, system=system, progress=progress
    )
    responses = run(
        "pseudo_references",
        stages.add_pseudo_references,
        responses,
        reference_generator=config.references.generator,
        revisions=_load_revisions(config.references.revisions),
        grade_reference_generator=config.references.grade_reference_generator,
    )
    graded = run(
        "grade_pointwise_referenced" if v2 else "v1_turn1_referenced",
        stages.grade_pointwise_referenced,
        responses,
        teacher,
        language=lang,
        family=family,
        filters=filters,
        progress=progress,
    )
    parts: dict[str, datasets.Dataset] = {"pointwise_referenced": graded}
    if v2:
        pairs = run("make_pairs", stages.make_pairs, graded, per_query=config.pairs.per_query, seed=config.seed)
        common = {"teacher": teacher, "language": lang, "filters": filters, "progress": progress}
        p1_ref = run(
            "path1_p2p_referenced", stages.pointwise_to_pairwise, pairs, referenced=True, path="path1", **common
        )
        p1_rf = run(
            "path1_r2rf_pairwise", stages.referenced_to_reference_free, p1_ref, task="pairwise", path="path1", **common
        )
        pw_rf = run(
            "path2_r2rf_pointwise",
            stages.referenced_to_reference_free,
            graded,
            task="pointwise",
            path="path2",
            **common,
        )
        p2_pairs = run("path2_attach_pointwise", stages.attach_pointwise_critiques, pairs, pw_rf)
        p2_rf = run(
            "path2_p2p_reference_free",
            stages.pointwise_to_pairwise,
            p2_pairs,
            referenced=False,
            path="path2",
            **common,
        )
        pair_rf = run("cross_validation", stages.cross_validate, p1_rf, p2_rf)
        if config.swap_augmentation:
            p1_ref = run("swap_pairwise_referenced", stages.swap_augment, p1_ref)
            pair_rf = run("swap_pairwise_reference_free", stages.swap_augment, pair_rf)
        parts.update(pointwise_reference_free=pw_rf, pairwise_referenced=p1_ref, pairwise_reference_free=pair_rf)
    else:
        parts["pointwise_reference_free"] = run(
            "v1_turn2_reference_free",
            stages.dialogue_revision,
            graded,
            teacher,
            language=lang,
            filters=filters,
            progress=progress,
        )
    dataset = datasets.DatasetDict()
    for setting in SETTINGS:
        rows = parts.get(setting.name)
        if rows is None:
            rows = datasets.Dataset.from_dict({})
        split = stages.to_sft_dataset(rows, setting, family=family, language=lang, teacher=teacher_name)
        ids = split["id"]
        if len(set(ids)) != len(ids):
            raise RuntimeError(f"{setting.name}: duplicate ids in the output (a bug): {len(ids) - len(set(ids))}")
        dataset[setting.name] = split
    report.counts = {name: len(split) for name, split in dataset.items()}
    report.info = _info(config, teacher_name, v2, family, queries=len(seeds))
    paths: dict[str, Any] = {
        "report": write_text(out_dir / "report.json", report.to_json()),
        # every item a stage did not pass on, by stage, id, kind (failed / rejected / left_out) and reason
        "failures": write_text(
            out_dir / "failures.jsonl",
            "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in report.named_losses()),
        ),
    }
    problem = report.shortfall(config.max_rejected_share)
    if problem is not None:  # an empty dataset is never saved as a result, nor carded, nor pushed
        cache.close()
        raise ShortfallError(f"{problem}; see {paths['report']} and {paths['failures']}")
    card = render_card(
        dataset,
        report,
        license=config.hub.license,
        pretty_name=config.hub.pretty_name,
        repo_id=config.hub.repo_id,
        template_path=config.hub.card_template,
    )
    paths.update(save_outputs(dataset, out_dir, card))
    if push:
        paths["url"] = push_to_hub(
            paths["hub"], config.hub.repo_id, private=config.hub.private, token_env=config.hub.token_env
        )
    cache.close()
    return EvalInstructResult(dataset, report, paths)


def _info(config: EvalInstructConfig, teacher: str, v2: bool, family: str, *, queries: int) -> dict:
    """Run facts for report.json and the card (no credentials: only the key's variable name)."""
    lang = config.language
    used = [get_template(family, Setting(Task.POINTWISE, True), lang)]
    if v2:
        used += [get_teacher_template(s, Setting.from_name(n), lang) for s, n in (
            ("p2p", "pairwise_referenced"), ("r2rf", "pairwise_reference_free"),
            ("r2rf", "pointwise_reference_free"), ("p2p", "pairwise_reference_free"))]  # fmt: skip
        used += [get_template(family, s, lang) for s in SETTINGS if s != Setting(Task.POINTWISE, True)]
    else:
        used += [
            get_instruction_prompt("v1_revision", lang),
            get_template(family, Setting(Task.POINTWISE, False), lang),
        ]
    q = config.queries
    if q.augmentation and q.augmentation.rounds:
        used.append(get_instruction_prompt("query_generation", lang))
    if q.difficulty:
        used.append(get_instruction_prompt("query_difficulty", lang))
    aug = (
        f", augmented over {q.augmentation.rounds} generation round(s)"
        if q.augmentation and q.augmentation.rounds
        else ""
    )
    balance = f", balanced to {q.balance_total} by category and difficulty" if q.balance_total else ""
    if v2:
        method = "Eval-Instruct (CritiqueLLM v2, Ke et al., ACL 2024, §3.2)"
        details = (
            "Referenced pointwise grading by the teacher with the multi-dimension prompt, then multi-path prompting: "
            "Path#1 = pointwise-to-pairwise (f_P2P) then referenced-to-reference-free (f_R2RF); Path#2 = f_R2RF then "
            "f_P2P. Cross validation keeps a reference-free pair only when both paths give the same label, with "
            "both critiques."
        )
    else:
        method = "dialogue-based prompting (CritiqueLLM v1, Ke et al., 2023, §3.2.3)"
        details = (
            "Two-turn dialogue: the teacher's referenced critique (first turn), then its revision without the "
            "reference, the score allowed to move by at most the configured bound (second turn)."
        )
    return {
        "method": method,
        "method_details": details,
        "variant": config.variant,
        "language": lang,
        "family": family,
        "teacher": teacher,
        "teacher_url": redact_url(config.teacher.base_url),
        "teacher_params": dict(config.teacher.sampling),
        "api_key_env": config.teacher.api_key_env,
        "generators": [g.name for g in config.generators],
        "reference_generator": config.references.generator,
        "revisions": bool(config.references.revisions),
        "queries": f"{queries} seed queries from `{q.seeds}`{aug}{balance}",
        "prompts": [f"{p.name}@{p.version}" for p in used],
        "swap_augmentation": bool(v2 and config.swap_augmentation),
        "fingerprint": config.fingerprint(),
        "date": datetime.date.today().isoformat(),
        "cache_file": str(config.cache_path),
    }
