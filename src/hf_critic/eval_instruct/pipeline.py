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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from ..backends.cache import GenerationCache
from ..backends.chat import BackendSource, ChatSource, Pricing, UsageLedger
from ..backends.openai_client import OpenAIClient
from ..core.errors import BadInputError
from ..core.redaction import redact_url
from ..core.schema import CATEGORIES, SETTINGS, Setting, Task, category_name
from ..critic.grammars import difficulty_grammar, query_generation_grammar
from ..io import RecordError, load_records, write_text
from ..prompts import get_instruction_prompt, get_teacher_template, get_template
from . import stages
from .config import EndpointConfig, EvalInstructConfig, GeneratorConfig
from .hub import push_to_hub, render_card, save_outputs
from .stage import GrammarSpec, RunContext, Stage, check_pipeline, critique_stage_grammar, stage_grammars
from .stage_report import PipelineReport, ShortfallError, StageReport

logger = logging.getLogger(__name__)

__all__ = [
    "V1_PIPELINE",
    "V2_PIPELINE",
    "EvalInstructResult",
    "make_client",
    "make_generator",
    "run_eval_instruct",
    "teacher_grammars",
]


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


def _augment(ctx: RunContext, seeds, **report):
    q, aug = ctx.config.queries, ctx.config.queries.augmentation
    return stages.augment_queries(
        seeds,
        ctx.teacher,
        language=ctx.language,
        rounds=aug.rounds if aug else 0,
        examples=aug.examples if aug else 3,
        format_examples=aug.format_examples if aug else 10,
        rouge_l_max=aug.rouge_l_max if aug else 0.7,
        self_bleu_max=aug.self_bleu_max if aug else 0.7,
        keep_seeds=q.keep_seeds,
        params=aug.sampling if aug else None,
        seed=ctx.config.seed,
        source=str(q.seeds),
        progress=ctx.progress,
        **report,
    )


def _references(ctx: RunContext, responses, **report):
    refs = ctx.config.references
    return stages.add_pseudo_references(
        responses,
        reference_generator=refs.generator,
        revisions=_load_revisions(refs.revisions),
        grade_reference_generator=refs.grade_reference_generator,
        **report,
    )


def _responses(ctx: RunContext, queries, **report):
    system = {g.name: g.system for g in ctx.config.generators}
    return stages.collect_responses(queries, ctx.generators, system=system, progress=ctx.progress, **report)


def _grade(ctx: RunContext, responses, **report):
    return stages.grade_pointwise_referenced(responses, family=ctx.family, **ctx.critique, **report)


def _critic_prompt(setting: str):
    return lambda language, family: get_template(family, Setting.from_name(setting), language)


def _teacher_prompt(strategy: str, setting: str):
    return lambda language, family: get_teacher_template(strategy, Setting.from_name(setting), language)


def _categories(language: str) -> list[str]:
    return [category_name(en, language) for en, _ in CATEGORIES]


# The stages both variants start with (CritiqueLLM v2 §3.2.1; v1 §3.2.1): queries, their responses and references.
_QUERIES_AND_RESPONSES = [
    Stage(
        "augment_queries",
        ("seeds",),
        "queries",
        _augment,
        grammar=lambda g: query_generation_grammar(_categories(g.language), g.augmentation_max_tokens),
    ),
    Stage(
        "score_difficulty",
        ("queries",),
        "queries",
        lambda ctx, queries, **r: stages.score_difficulty(
            queries, ctx.teacher, language=ctx.language, progress=ctx.progress, **r
        ),
        grammar=lambda g: difficulty_grammar(3),
        when=lambda config: bool(config.queries.difficulty),
    ),
    Stage(
        "balance_queries",
        ("queries",),
        "queries",
        lambda ctx, queries, **r: stages.balance_queries(
            queries, total=ctx.config.queries.balance_total, seed=ctx.config.seed, **r
        ),
        when=lambda config: bool(config.queries.balance_total),
    ),
    Stage("collect_responses", ("queries",), "responses", _responses),
    Stage("pseudo_references", ("responses",), "responses", _references),
]

#: CritiqueLLM v2 §3.2 (Eval-Instruct): referenced pointwise grading, multi-path prompting (Path#1: f_P2P then
#: f_R2RF; Path#2: f_R2RF then f_P2P), cross validation, swap augmentation (§3.3).
V2_PIPELINE: list[Stage] = [
    *_QUERIES_AND_RESPONSES,
    Stage(
        "grade_pointwise_referenced",
        ("responses",),
        "pointwise_referenced",
        _grade,
        grammar=critique_stage_grammar(_critic_prompt("pointwise_referenced")),
    ),
    Stage(
        "make_pairs",
        ("pointwise_referenced",),
        "pairs",
        lambda ctx, graded, **r: stages.make_pairs(
            graded, per_query=ctx.config.pairs.per_query, seed=ctx.config.seed, **r
        ),
    ),
    Stage(
        "path1_p2p_referenced",
        ("pairs",),
        "pairwise_referenced",
        lambda ctx, pairs, **r: stages.pointwise_to_pairwise(
            pairs, referenced=True, path="path1", **ctx.critique, **r
        ),
        grammar=critique_stage_grammar(_teacher_prompt("p2p", "pairwise_referenced")),
    ),
    Stage(
        "path1_r2rf_pairwise",
        ("pairwise_referenced",),
        "path1_reference_free",
        lambda ctx, pairs, **r: stages.referenced_to_reference_free(
            pairs, task="pairwise", path="path1", **ctx.critique, **r
        ),
        grammar=critique_stage_grammar(_teacher_prompt("r2rf", "pairwise_reference_free")),
    ),
    Stage(
        "path2_r2rf_pointwise",
        ("pointwise_referenced",),
        "pointwise_reference_free",
        lambda ctx, graded, **r: stages.referenced_to_reference_free(
            graded, task="pointwise", path="path2", **ctx.critique, **r
        ),
        grammar=critique_stage_grammar(_teacher_prompt("r2rf", "pointwise_reference_free")),
    ),
    Stage(
        "path2_attach_pointwise",
        ("pairs", "pointwise_reference_free"),
        "path2_pairs",
        lambda ctx, pairs, pointwise, **r: stages.attach_pointwise_critiques(pairs, pointwise, **r),
    ),
    Stage(
        "path2_p2p_reference_free",
        ("path2_pairs",),
        "path2_reference_free",
        lambda ctx, pairs, **r: stages.pointwise_to_pairwise(
            pairs, referenced=False, path="path2", **ctx.critique, **r
        ),
        grammar=critique_stage_grammar(_teacher_prompt("p2p", "pairwise_reference_free")),
    ),
    Stage(
        "cross_validation",
        ("path1_reference_free", "path2_reference_free"),
        "pairwise_reference_free",
        lambda ctx, path1, path2, **r: stages.cross_validate(path1, path2, **r),
    ),
    Stage(
        "swap_pairwise_referenced",
        ("pairwise_referenced",),
        "pairwise_referenced",
        lambda ctx, pairs, **r: stages.swap_augment(pairs, **r),
        when=lambda config: config.swap_augmentation,
    ),
    Stage(
        "swap_pairwise_reference_free",
        ("pairwise_reference_free",),
        "pairwise_reference_free",
        lambda ctx, pairs, **r: stages.swap_augment(pairs, **r),
        when=lambda config: config.swap_augmentation,
    ),
]

#: CritiqueLLM v1 §3.2.3 (dialogue-based prompting, Table 6): the referenced critique, then its reference-free
#: revision in the same conversation.
V1_PIPELINE: list[Stage] = [
    *_QUERIES_AND_RESPONSES,
    Stage(
        "v1_turn1_referenced",
        ("responses",),
        "pointwise_referenced",
        _grade,
        grammar=critique_stage_grammar(_critic_prompt("pointwise_referenced")),
    ),
    Stage(
        "v1_turn2_reference_free",
        ("pointwise_referenced",),
        "pointwise_reference_free",
        lambda ctx, graded, **r: stages.dialogue_revision(graded, **ctx.critique, **r),
    ),
]


def teacher_grammars(
    language: str, family: str, max_tokens: int, augmentation_max_tokens: int | None = None
) -> dict[str, dict[str, str]]:
    """The GBNF grammar of each teacher stage of both pipelines (``teacher.grammar: true``), as
    ``{stage: {"grammar": ...}}`` (:func:`~hf_critic.eval_instruct.stage.stage_grammars` over
    :data:`V2_PIPELINE` and :data:`V1_PIPELINE`).

    Built from each stage's expected output format: the query-generation and difficulty lines of CritiqueLLM v2
    Appendix A, and for the critique stages a free explanation (at most 2 characters per token of ``max_tokens``)
    ending in the verdict line of the template that stage renders (:func:`hf_critic.critic.grammars.critique_grammar`).
    The v1 dialogue's second turn is left free.

    Args:
        language: ``"en"`` or ``"zh"``.
        family: the critic template family (``critiquellm_v2`` or ``critiquellm_v1``).
        max_tokens: the teacher's ``max_tokens``.
        augmentation_max_tokens: the query-generation requests' ``max_tokens`` (default ``max_tokens``).
    """
    spec = GrammarSpec(language, family, max_tokens, augmentation_max_tokens or max_tokens)
    return stage_grammars([*V2_PIPELINE, *V1_PIPELINE], spec)


def make_client(
    endpoint: EndpointConfig,
    *,
    cache: GenerationCache | None,
    ledger: UsageLedger,
    name: str,
    seed: int = 0,
    stage_params: Mapping[str, Mapping[str, Any]] | None = None,
) -> OpenAIClient:
    """An :class:`~hf_critic.backends.openai_client.OpenAIClient` for an endpoint of the recipe (``stage_params``: see
    :class:`~hf_critic.backends.openai_client.OpenAIClient`)."""
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
    from ..critic.decoding import DecodingConfig

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
    pipeline: Sequence[Stage] | None = None,
) -> EvalInstructResult:
    """Run a whole Eval-Instruct recipe (CritiqueLLM v2 §3.2, or v1 §3.2 with ``variant: v1``).

    Args:
        config: the recipe (see :mod:`hf_critic.eval_instruct.config`).
        teacher: a chat source to use instead of the recipe's teacher endpoint (tests, custom clients).
        generators: ``name -> chat source`` to use instead of the recipe's generators.
        push: push the result to ``config.hub.repo_id`` (must be set).
        echo: where progress lines go (default: standard error).
        pipeline: the stages to run (default :data:`V2_PIPELINE` or :data:`V1_PIPELINE` by ``config.variant``); a
            stage's output named after a setting becomes that config, the others stay empty.

    Returns:
        :class:`EvalInstructResult` with the four configs; outputs written under ``config.output_dir``.

    Raises:
        RecordError: unreadable seed / revision files.
        hf_critic.backends.retry.FatalAPIError: the teacher or a generator refuses every request (401 / 403 / 404);
            finished work stays cached, so the run can be started again once fixed.
        ValueError: ``push`` without ``hub.repo_id``; a ``pipeline`` stage that reads what no earlier stage writes.
        ShortfallError: no config has a row, or a stage lost more than ``config.max_rejected_share`` of its items; the
            message is one line naming the stage and its main loss reason. ``report.json`` and ``failures.jsonl`` are
            written; the dataset and its card are not, and nothing is pushed.
    """
    if push and not config.hub.repo_id:
        raise BadInputError("push=True needs hub.repo_id, the Hub dataset ORG/NAME to push to")
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    out_dir = Path(config.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = GenerationCache(config.cache_path)
    ledger = teacher.ledger if teacher is not None else UsageLedger()
    teacher_name = teacher.name if teacher is not None else config.teacher.model
    v2 = config.variant == "v2"
    family = "critiquellm_v2" if v2 else "critiquellm_v1"
    pipeline = check_pipeline(pipeline if pipeline is not None else V2_PIPELINE if v2 else V1_PIPELINE, config)
    if teacher is None:
        teacher = _recipe_teacher(config, pipeline, family, cache, ledger)
    if generators is None:
        generators = {
            g.name: make_generator(g, cache=cache, ledger=ledger, progress=config.progress) for g in config.generators
        }
    lang = config.language
    report = PipelineReport()
    run = _Runner(ledger, report, echo, len(pipeline))
    seeds = load_records(config.queries.seeds, config.queries.columns or None, config.queries.limit)
    context = RunContext(config, teacher, generators, family)
    named: dict[str, datasets.Dataset] = {"seeds": seeds}
    for stage in pipeline:
        named[stage.output] = run(stage.name, stage.run, context, *(named[i] for i in stage.inputs))
    dataset = _output_configs(named, family=family, language=lang, teacher=teacher_name)
    report.counts = {name: len(split) for name, split in dataset.items()}
    report.info = _info(config, teacher_name, v2, family, queries=len(seeds))
    paths = _write_report(report, out_dir)
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


def _recipe_teacher(config: EvalInstructConfig, pipeline: Sequence[Stage], family: str, cache, ledger) -> ChatSource:
    """The recipe's teacher endpoint as a client, with a GBNF grammar per stage when ``teacher.grammar`` is on."""
    max_tokens = int(config.teacher.sampling.get("max_tokens") or 2048)
    aug = config.queries.augmentation
    aug_tokens = int((aug.sampling or {}).get("max_tokens") or max_tokens) if aug else max_tokens
    spec = GrammarSpec(config.language, family, max_tokens, aug_tokens)
    per_stage = stage_grammars(pipeline, spec) if config.teacher.grammar else None
    return make_client(
        config.teacher, cache=cache, ledger=ledger, name="teacher", seed=config.seed, stage_params=per_stage
    )


def _write_report(report: PipelineReport, out_dir: Path) -> dict[str, Any]:
    """``report.json`` and ``failures.jsonl`` written in ``out_dir``: ``{"report": path, "failures": path}``."""
    return {
        "report": write_text(out_dir / "report.json", report.to_json()),
        # every item a stage did not pass on, by stage, id, kind (failed / rejected / left_out) and reason
        "failures": write_text(
            out_dir / "failures.jsonl",
            "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in report.named_losses()),
        ),
    }


def _output_configs(
    named: Mapping[str, datasets.Dataset], *, family: str, language: str, teacher: str
) -> datasets.DatasetDict:
    """The four output configs: each setting's rows (named after it by a stage; empty when none is) as SFT rows.

    Raises:
        RuntimeError: an id twice in one config (a bug in a stage).
    """
    dataset = datasets.DatasetDict()
    for setting in SETTINGS:
        rows = named.get(setting.name)
        if rows is None:
            rows = datasets.Dataset.from_dict({})
        split = stages.to_sft_dataset(rows, setting, family=family, language=language, teacher=teacher)
        ids = split["id"]
        if len(set(ids)) != len(ids):
            raise RuntimeError(f"{setting.name}: duplicate ids in the output (a bug): {len(ids) - len(set(ids))}")
        dataset[setting.name] = split
    return dataset


def _info(config: EvalInstructConfig, teacher: str, v2: bool, family: str, *, queries: int) -> dict:
    """Run facts for report.json and the card (no credentials: only the key's variable name)."""
    lang = config.language
    used = [get_template(family, Setting(Task.POINTWISE, True), lang)]
    if v2:
        used += [
            get_teacher_template(s, Setting.from_name(n), lang)
            for s, n in (
                ("p2p", "pairwise_referenced"),
                ("r2rf", "pairwise_reference_free"),
                ("r2rf", "pointwise_reference_free"),
                ("p2p", "pairwise_reference_free"),
            )
        ]
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
