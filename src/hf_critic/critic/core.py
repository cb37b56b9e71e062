"""The user-facing critic: pointwise grading and pairwise comparison in the four CritiqueLLM settings.

Data flows one way: records -> prompt template -> backend generations (cached) -> parsing ->
decoding aggregation -> critique columns added to the records (CritiqueLLM v2 §3.1, §4.3).
"""

from __future__ import annotations

import json
import logging
import os

import datasets

from ..backends.base import Backend
from ..backends.cache import GenerationCache
from ..backends.cached import CachedBackend, Generations
from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import swap_label
from ..formats import DEFAULT_FAMILY, parse_output
from ..io import check_fields
from ..parsing import ParsedCritique
from ..prompts import RESPONSE_FIELDS, PromptTemplate
from ..prompts.rubric import Rubric
from ..selective import sample_labels
from .base import ComputedCritic, pick_template
from .config import check_plan_options
from .decoding import DecodingConfig, aggregate_labels, aggregate_scores
from .grammars import verdict_grammar
from .inputs import TRUNCATE_POLICIES, render_conversations
from .output import (
    Judged,
    RunStats,
    distribution_columns,
    pairwise_columns,
    probability_stats,
    run_stats,
)
from .readout import force_verdicts, read_verdicts
from .rewards import refuse_for_generator
from .verdicts import DEFAULT_MIN_VERDICT_MASS, resolve_verdict

logger = logging.getLogger(__name__)


class Critic(ComputedCritic):
    """Generate critiques (score or label plus explanation) with any :class:`~hf_critic.backends.Backend`.

    Its :meth:`~hf_critic.critic.base.ComputedCritic.grade` and :meth:`~hf_critic.critic.base.ComputedCritic.compare`
    are the Python API, :meth:`~hf_critic.critic.base.ComputedCritic.judge` the critic protocol's. A reward model is a
    critic of its own kind, :class:`~hf_critic.critic.reward_critic.RewardCritic` (order-free, verdicts from rewards,
    no text); :meth:`from_pretrained` returns one for a reward model's folder.

    Args:
        backend: where generations come from (e.g. :class:`~hf_critic.backends.transformers.TransformersBackend`).
        template: a registered family (:mod:`hf_critic.formats`: ``"critiquellm_v2"``, ``"mtbench"``), a built-in
            template name, or a user's YAML file; resolved per setting (``"auto"``: see :meth:`from_pretrained`).
        language: language of the critique for family resolution ("en" or "zh").
        decoding: the decoding strategy (greedy, beam, sampling, self-consistency).
        truncate: what to do with an input longer than the context: ``"middle"`` cuts the response(s)
            from the middle, ``"skip"`` leaves the row unjudged (status skipped), ``"error"`` raises.
        cache_path: SQLite file of finished generations; with it, a killed run restarted redoes nothing.
        constrain_verdict: append a verdict in the template's syntax, chosen by the model under a GBNF grammar
            (:mod:`hf_critic.critic.grammars`), to every critique whose verdict does not parse; the explanation stays as
            generated. Needs a backend with ``supports_grammar`` (llama.cpp, in-process or behind its server).
        rubric: the score rubric for templates that grade against one (``prometheus2``), shown to the critic for
            every row (it replaces a ``rubric`` column); its scores set the scale of a configurable template. It is
            part of the rendered prompt, hence of every cache key.
        score_range: ``(low, high)`` integers: the scale of pointwise grading for templates whose scale is
            configurable (``prometheus2``); a template with a fixed scale accepts only its own.

        verdict: ``"text"`` (parse the generated verdict; never a default), ``"probability"`` (read it from the
            model's next-token distribution after the template's verdict prefix, :mod:`hf_critic.critic.verdicts`),
            ``"both"`` (probability, with the text verdict in its own ``critique_text_*`` columns), or ``"auto"``
            (probability for the embedded default critic, text for any other model; see
            :data:`~hf_critic.critic.verdicts.AUTO_EMBEDDED`).
        explanation: for probability read-outs: ``"none"`` (the prefix right after the generation prompt: one
            prefill, no decoding, no explanation) or ``"first"`` (the critique is generated, its own verdict is cut,
            and the prefix is appended after the explanation). None: what ``auto`` picks, else ``"first"``.
        min_verdict_mass: read-outs with less probability than this on the allowed verdicts get status
            ``low_mass`` and no verdict (default :data:`~hf_critic.critic.verdicts.DEFAULT_MIN_VERDICT_MASS`).

    Raises:
        ValueError: an unknown truncation policy, ``constrain_verdict`` on a backend without grammars, or a rubric
            whose scores disagree with ``score_range``.
        ValueError: also for an unknown verdict / explanation mode or a min_verdict_mass outside [0, 1].

    Examples:
        >>> critic = Critic.from_pretrained()  # doctest: +SKIP
        >>> graded = critic.grade([{"question": "2+2?", "response": "4"}])  # doctest: +SKIP
        >>> graded[0]["critique_score"]  # doctest: +SKIP
    """

    #: Its critiques are written text a generator can revise from (``refine``).
    writes_explanation = True
    #: ``generative`` (a local model) or ``served`` (a chat model behind ``base_url=``).
    kind_names = ("generative", "served")

    def __init__(
        self,
        backend: Backend,
        *,
        template: str = DEFAULT_FAMILY,
        language: str = "en",
        decoding: DecodingConfig | None = None,
        truncate: str = "middle",
        cache_path: str | os.PathLike | None = None,
        constrain_verdict: bool = False,
        verdict: str = "auto",
        explanation: str | None = None,
        min_verdict_mass: float = DEFAULT_MIN_VERDICT_MASS,
        rubric: Rubric | None = None,
        score_range: tuple[int, int] | None = None,
    ):
        if truncate not in TRUNCATE_POLICIES:
            raise BadInputError(f"truncate must be one of {TRUNCATE_POLICIES}, got {truncate!r}")
        refuse_for_generator(None, constrain_verdict, backend.name, backend.supports_grammar)
        if not 0 <= min_verdict_mass <= 1:
            raise BadInputError(f"min_verdict_mass must be in [0, 1], got {min_verdict_mass}")
        if rubric is not None and score_range is not None and tuple(score_range) != rubric.score_range:
            raise BadInputError(
                f"the rubric describes scores {rubric.score_range[0]}-{rubric.score_range[1]}, but the score range is "
                f"{score_range[0]}-{score_range[1]}"
            )
        self.constrain_verdict = constrain_verdict
        self.rubric, self.score_range = rubric, tuple(score_range) if score_range is not None else None
        self.plan = resolve_verdict(verdict, explanation, embedded=backend.embedded)
        check_plan_options(self.plan, explanation, min_verdict_mass, decoding)
        self.min_verdict_mass = min_verdict_mass
        self.backend, self.template, self.language = backend, template, language
        self.decoding = decoding or DecodingConfig()
        self.truncate = truncate
        self.cache = GenerationCache(cache_path) if cache_path else None
        self.last_stats = RunStats()

    @property
    def verdict(self) -> str:
        """The resolved verdict mode: ``"text"``, ``"probability"`` or ``"both"``."""
        return self.plan.mode.value

    @property
    def explanation(self) -> str:
        """The resolved explanation mode: ``"none"`` or ``"first"``."""
        return self.plan.explanation

    # ------------------------------------------------------------------ the critic protocol
    @property
    def engine(self) -> Backend:
        """What judges: its backend."""
        return self.backend

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """What changes its verdicts (:func:`~hf_critic.core.identity.verdict_options`) and ``swap``."""
        from ..core.identity import verdict_options

        return [*verdict_options(self, setting), f"swap={swap}"]

    @classmethod
    def from_pretrained(
        cls,
        model: str | None = None,
        *,
        engine: str = "auto",
        trust_remote_code: bool = False,
        batch_size: int = 8,
        num_threads: int | None = None,
        dtype: str = "auto",
        progress: bool = True,
        gguf_recode: str = "auto",
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        rows: int | None = None,
        **kwargs,
    ) -> ComputedCritic:
        """A critic on a local model (None = the embedded default critic, SmolLM2-135M-Instruct); a
        :class:`~hf_critic.critic.reward_critic.RewardCritic` for a reward model.

        Args:
            model: local folder, Hub id (fails fast when offline and not cached), ``.gguf`` file, PEFT adapter
                folder, or the name of a built-in trained critic (:data:`hf_critic.backends.models.TRAINED_CRITICS`, e.g.
                ``"smollm2-135m-critic"``, from the package's data, offline). A one-label sequence classifier (a
                reward model, :func:`hf_critic.critics.reward.is_reward_model`) and a built-in trained critic become a
                :class:`~hf_critic.critic.reward_critic.RewardCritic`
                (:meth:`~hf_critic.critic.reward_critic.RewardCritic.from_pretrained`).
            engine: ``"auto"``, ``"transformers"``, ``"llamacpp"`` or ``"vllm"`` (see
                :func:`hf_critic.backends.load_backend`); ``auto`` takes the engine measured fastest for the job.
            trust_remote_code: run the model repository's code; only when explicitly asked.
            batch_size: conversations per generate call (llama.cpp: parallel slots).
            num_threads: CPU threads >= 1 (default: OMP_NUM_THREADS when set, else one per physical core).
            dtype: ``"auto"`` (per CPU and batch size, :func:`hf_critic.backends.models.auto_dtype`; the checkpoint's dtype on
                CUDA) or a torch dtype name.
            progress: show progress bars.
            gguf_recode: llama.cpp only: run a re-encoding of the GGUF that its CPU kernels multiply faster
                (``"auto"``, ``"off"``, ``"Q8_0"``, ``"F32"``; :func:`hf_critic.backends.gguf_files.recoded_gguf`).
            tensor_parallel_size, data_parallel_size: vLLM's parallelism (engine ``vllm`` only).
            rows: the prompts the run will judge, when known: ``engine="auto"`` takes an engine measured faster only
                for runs at least as large as its measurement (a short run does not pay vLLM's start); None: as short.
            **kwargs: passed to :class:`Critic` (template, language, decoding, truncate, cache_path,
                constrain_verdict, verdict, explanation, min_verdict_mass) or the reward critic (its ``tie_margin``
                too; a critic that generates text refuses it); ``template="auto"`` picks the family of a
                known published critic from ``model``'s name (:func:`hf_critic.formats.pick_family`), and logs it.

        Returns:
            A :class:`Critic`, or a :class:`~hf_critic.critic.reward_critic.RewardCritic` for a reward model.

        Raises:
            hf_critic.backends.models.ModelNotFoundError: the model cannot be found offline.
            ValueError: a trained critic asked to run on llama.cpp, or with ``gguf_recode`` (no GGUF runs); a
                classifier with several labels; ``tie_margin`` for a model that generates text; see also
                :class:`Critic`.
        """
        from ..backends import load_backend
        from ..backends.models import resolve_engine, trained_critic
        from ..critics.registry import critic_class
        from ..critics.reward import is_reward_model

        kwargs = pick_template(model, kwargs)  # the family of a known published critic, from the model's name

        local = {"dtype": dtype, "batch_size": batch_size, "progress": progress, "num_threads": num_threads}
        local.update(trust_remote_code=trust_remote_code, tensor_parallel_size=tensor_parallel_size)
        local.update(data_parallel_size=data_parallel_size)  # how the model runs, for either kind
        if trained_critic(model) is not None or is_reward_model(model):  # a sequence-classification reward model
            return critic_class("reward").from_pretrained(  # its own kind, named by the registry
                model, engine=engine, gguf_recode=gguf_recode, rows=rows, **local, **kwargs
            )
        job = "text" if kwargs.get("verdict") in ("text", "both") else "readout"
        chosen = resolve_engine(engine, model, batch_size, job=job, rows=rows)  # refused before it loads
        refuse_for_generator(
            kwargs.pop("tie_margin", None), kwargs.get("constrain_verdict"), chosen, chosen == "llamacpp"
        )
        backend = load_backend(model, engine=chosen, gguf_recode=gguf_recode, **local)
        return cls(backend, **kwargs)

    # ----------------------------------------------------------------------------------- grading, comparison
    def _grade_columns(self, dataset: datasets.Dataset, referenced: bool | None, source: str):
        """Pointwise grading's critique columns (:meth:`~hf_critic.critic.base.ComputedCritic.grade`): parsed text
        verdicts or probability read-outs, ``(columns, stats, votes)``."""
        setting = schema.Setting(schema.Task.POINTWISE, _is_referenced(dataset, referenced))
        template = self.template_for(setting)
        check_fields(dataset, setting.fields, source, allow_empty=RESPONSE_FIELDS)

        conversations, truncated = self._render(template, dataset, source, swap=False)
        judged = self._judge(template, conversations, _judged_texts(dataset, setting))
        parsed, raws = judged.parsed, judged.raws
        columns = {
            schema.CRITIQUE_SCORE: [p.score for p in parsed],
            schema.CRITIQUE_EXPLANATION: [p.explanation or None for p in parsed],
            schema.CRITIQUE_GENERATION: raws,
            schema.CRITIQUE_STATUS: [p.status.value for p in parsed],
            schema.CRITIQUE_DIMENSIONS: [
                json.dumps(p.dimensions, ensure_ascii=False) if p.dimensions else None for p in parsed
            ],
            schema.CRITIQUE_TRUNCATED: truncated,
        }
        if self.decoding.strategy == "self_consistency" and judged.samples is not None:
            columns[schema.CRITIQUE_SAMPLES] = judged.samples
        stats = run_stats(parsed, truncated, judged)
        votes = [[p.score for p in sample] if sample else [] for sample in judged.sample_parses]
        if judged.verdicts is not None:
            verdicts = judged.verdicts
            if self.plan.keeps_text:
                columns[schema.CRITIQUE_TEXT_SCORE] = columns[schema.CRITIQUE_SCORE]
                columns[schema.CRITIQUE_TEXT_STATUS] = columns[schema.CRITIQUE_STATUS]
            columns[schema.CRITIQUE_SCORE] = [v.score for v in verdicts]
            columns[schema.CRITIQUE_STATUS] = [v.status.value for v in verdicts]
            columns.update(distribution_columns(verdicts))
            stats = self._probability_stats(verdicts, truncated, judged, stats)
        return columns, stats, votes

    def _compare_columns(self, dataset: datasets.Dataset, referenced: bool | None, swap: bool, source: str):
        """Pairwise comparison's critique columns (:meth:`~hf_critic.critic.base.ComputedCritic.compare`), both
        orders in one generate call under ``swap``: ``(columns, stats, votes)``."""
        setting = schema.Setting(schema.Task.PAIRWISE, _is_referenced(dataset, referenced))
        template = self.template_for(setting)
        check_fields(dataset, setting.fields, source, allow_empty=RESPONSE_FIELDS)

        conversations, truncated = self._render(template, dataset, source, swap=False)
        n = len(conversations)
        if swap:  # one generate call for both orders: better batches
            swapped, truncated_swapped = self._render(template, dataset, source, swap=True)
            conversations = conversations + swapped
        texts = _judged_texts(dataset, setting)
        judged = self._judge(template, conversations, texts + texts if swap else texts)
        parsed, raws = judged.parsed, judged.raws
        first = parsed[:n]
        columns = {
            schema.CRITIQUE_LABEL: [p.label for p in first],
            schema.CRITIQUE_EXPLANATION: [p.explanation or None for p in first],
            schema.CRITIQUE_GENERATION: raws[:n],
            schema.CRITIQUE_STATUS: [p.status.value for p in first],
            schema.CRITIQUE_TRUNCATED: truncated,
        }
        if self.decoding.strategy == "self_consistency" and judged.samples is not None:
            columns[schema.CRITIQUE_SAMPLES] = judged.samples[:n]
        if swap:
            back = [swap_label(p.label) for p in parsed[n:]]
            columns[schema.CRITIQUE_LABEL_SWAPPED] = back
            columns[schema.CRITIQUE_GENERATION_SWAPPED] = raws[n:]
            columns[schema.CRITIQUE_STATUS_SWAPPED] = [p.status.value for p in parsed[n:]]
            columns[schema.CRITIQUE_CONSISTENT] = [
                None if a.label is None or b is None else a.label == b for a, b in zip(first, back, strict=True)
            ]
            columns[schema.CRITIQUE_TRUNCATED] = [a or b for a, b in zip(truncated, truncated_swapped, strict=True)]
            truncated = truncated + truncated_swapped
        stats = run_stats(parsed, truncated, judged)
        votes = [sample_labels(s) for s in judged.sample_parses[:n]]
        if swap:  # the swapped order's samples are more simulated annotators, their labels mapped back
            votes = [
                a + [swap_label(v) for v in sample_labels(b)]
                for a, b in zip(votes, judged.sample_parses[n:], strict=True)
            ]
        if judged.verdicts is not None:
            if self.plan.keeps_text:
                for name in (schema.CRITIQUE_LABEL, schema.CRITIQUE_STATUS) + (
                    (schema.CRITIQUE_LABEL_SWAPPED, schema.CRITIQUE_STATUS_SWAPPED) if swap else ()
                ):
                    columns[schema.text_column(name)] = columns[name]
            columns.update(pairwise_columns(judged.verdicts[:n], judged.verdicts[n:] if swap else None))
            stats = self._probability_stats(judged.verdicts, truncated, judged, stats)
        return columns, stats, votes

    def _probability_stats(self, verdicts, truncated, judged: Judged, text: RunStats) -> RunStats:
        return probability_stats(
            verdicts, truncated, judged, text, min_mass=self.min_verdict_mass, keeps_text=self.plan.keeps_text
        )

    # ----------------------------------------------------------------------------------- internals
    def _render(self, template: PromptTemplate, dataset: datasets.Dataset, source: str, swap: bool):
        """Chat messages per row (None for rows skipped as too long) and per-row truncation flags
        (:func:`~hf_critic.critic.inputs.render_conversations`)."""
        rubric = self.rubric.text(template.setting.task) if self.rubric is not None else None
        return render_conversations(
            self.backend,
            template,
            dataset,
            source,
            swap=swap,
            rubric=rubric,
            truncate=self.truncate,
            max_new_tokens=self.decoding.max_new_tokens,
        )

    def _judge(self, template: PromptTemplate, conversations: list, judged_texts: list) -> Judged:
        """Generate (through the cache), parse and aggregate; read the verdict probabilities when asked.

        Each critique is read as its critic wrote it: not the prompt it echoed nor a marker quoted from the judged
        texts (``judged_texts``, one list per conversation; :func:`hf_critic.formats.parse_output`)."""
        generate = self.plan.generates
        if generate:
            made = self._generate(template, conversations)
            generations, cached, cut, reasked = made.texts, made.cached, made.cut_off, made.reasked
        else:
            generations, cached, cut, reasked = [None if c is None else [] for c in conversations], 0, None, 0
        kind = template.output.kind
        if self.constrain_verdict and generate:
            output = template.output
            generations = force_verdicts(
                self.backend, self.cache, output, verdict_grammar(output), conversations, generations
            )
        aggregate = aggregate_scores if kind == "score" else aggregate_labels
        parsed, raws, samples = [], [], []
        cut_off = None  # inputs whose chosen critique stopped at max_new_tokens, where the backend says
        for i, texts in enumerate(generations):
            if texts is None:  # skipped as too long
                parsed.append(ParsedCritique(schema.ParseStatus.SKIPPED))
                raws.append(None)
                samples.append(None)
            elif not texts:  # --verdict probability --explanation none: nothing generated
                parsed.append(ParsedCritique(schema.ParseStatus.UNPARSED))
                raws.append(None)
                samples.append([])
            else:
                prompt = [m["content"] for m in conversations[i] if m.get("role") != "assistant"]
                sample_parses = [parse_output(t, template.output, prompt, judged_texts[i]) for t in texts]
                result = aggregate(sample_parses)
                parsed.append(result.parsed)
                raws.append(texts[result.chosen])
                samples.append(sample_parses)
                if cut is not None and cut[i] is not None:
                    cut_off = (cut_off or 0) + bool(cut[i][result.chosen])
        verdicts = None
        if self.plan.reads_probabilities:
            verdicts, read_cached = read_verdicts(
                self.backend,
                self.cache,
                template.output,
                conversations,
                samples,
                explanation=self.plan.explanation,
                min_mass=self.min_verdict_mass,
            )
            # critiques and read-outs are cached apart: a resumed run can hold all of one and none of the other
            cached, cached_readouts = (cached, read_cached) if generate else (read_cached, None)
        else:
            cached_readouts = None
        return Judged(
            parsed,
            raws,
            generations if generate else None,
            cached,
            verdicts,
            cut_off,
            reasked,
            cached_readouts,
            samples,
        )

    def _generate(self, template: PromptTemplate, conversations: list) -> Generations:
        """Generations per conversation (None for skipped ones), through the cache.

        On a server (a backend with ``generate_checked``) whose text verdicts are the result (``verdict`` text or
        both, no ``constrain_verdict``), the template's parser is the acceptance rule: a critique that does not parse
        is asked again at once (bounded by the client's retries), and a cached one is asked again on a rerun (a flaky
        server's garbled answer is not final); one cut off at ``max_new_tokens`` is kept. Local engines write the
        same text again, so their cached critiques are always kept.
        """
        output = template.output

        def check(text: str) -> str | None:
            status = parse_output(text, output).status
            return None if status is schema.ParseStatus.OK else status.value

        reask = hasattr(self.backend, "generate_checked") and self.plan.parses_text and not self.constrain_verdict
        made = CachedBackend(self.backend, self.cache).generate(
            conversations, self.decoding, check=check if reask else None
        )
        fresh = sum(c is not None for c in conversations) - made.cached
        if fresh:
            logger.info("%d input(s) generated (%d re-asked), %d from cache", fresh, made.reasked, made.cached)
        return made


def _judged_texts(dataset: datasets.Dataset, setting: schema.Setting) -> list[list[str | None]]:
    """The texts a critic judges in each row (question, reference, responses), as its prompt shows them."""
    return [list(row) for row in zip(*(dataset[f] for f in setting.fields), strict=True)]


def _is_referenced(dataset: datasets.Dataset, referenced: bool | None) -> bool:
    return schema.REFERENCE in dataset.column_names if referenced is None else referenced
