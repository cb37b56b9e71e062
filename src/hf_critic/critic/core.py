"""The user-facing critic: pointwise grading and pairwise comparison in the four CritiqueLLM settings.

Data flows one way: records -> prompt template -> backend generations (cached) -> parsing ->
decoding aggregation -> critique columns added to the records (CritiqueLLM v2 §3.1, §4.3).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence

import datasets

from ..backends.base import Backend
from ..backends.cache import GenerationCache
from ..backends.cached import CachedBackend, Generations
from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import swap_label
from ..critics.protocol import CriticKind, Critiques, setting_of
from ..formats import AUTO, DEFAULT_FAMILY, parse_output, pick_family
from ..io import check_fields
from ..parsing import ParsedCritique
from ..prompts import RESPONSE_FIELDS, PromptTemplate, resolve_template
from ..prompts.rubric import Rubric
from ..selective import confidence_of, sample_labels
from .config import check_plan_options
from .decoding import DecodingConfig, aggregate_labels, aggregate_scores
from .grammars import verdict_grammar
from .inputs import TRUNCATE_POLICIES, ContextLengthError, count_control_tokens, render_conversations
from .output import (
    CritiqueRun,
    Judged,
    RunStats,
    add_columns,
    as_dataset,
    distribution_columns,
    pairwise_columns,
    probability_stats,
    run_stats,
)
from .readout import force_verdicts, read_verdicts
from .rewards import (
    NonFiniteRewardError,
    RewardScorer,
    compare_columns,
    grade_columns,
    refuse_for_generator,
    refuse_for_reward,
    with_tie_margin,
)
from .verdicts import (
    DEFAULT_MIN_VERDICT_MASS,
    VerdictMode,
    VerdictPlan,
    resolve_verdict,
)

logger = logging.getLogger(__name__)


class Critic(CriticKind):
    """Generate critiques (score or label plus explanation) with any :class:`~hf_critic.backends.Backend`.

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
        reward: an order-free reward critic (:class:`~hf_critic.critic.rewards.RewardScorer`: a reward model, one
            behind a server): every verdict then comes from rewards (pointwise: the calibrated
            reward; pairwise: the Rao-Kupper distribution of the two rewards, :mod:`hf_critic.critics.reward`), no text
            is generated, and every option it cannot honour (text or probability verdicts, explanations, decoding,
            rubric criteria, grammars, verdict mass, a reference) is refused with a ValueError naming it.
        tie_margin: a reward critic's tie band in reward units, >= 0 (None: its calibration's).

    Raises:
        ValueError: an unknown truncation policy, ``constrain_verdict`` on a backend without grammars, or a rubric
            whose scores disagree with ``score_range``.
        ValueError: also for an unknown verdict / explanation mode or a min_verdict_mass outside [0, 1], and an option
            a reward critic cannot honour.

    Examples:
        >>> critic = Critic.from_pretrained()  # doctest: +SKIP
        >>> graded = critic.grade([{"question": "2+2?", "response": "4"}])  # doctest: +SKIP
        >>> graded[0]["critique_score"]  # doctest: +SKIP
    """

    def __init__(
        self,
        backend: Backend | None,
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
        reward: RewardScorer | None = None,
        tie_margin: float | None = None,
    ):
        if truncate not in TRUNCATE_POLICIES:
            raise BadInputError(f"truncate must be one of {TRUNCATE_POLICIES}, got {truncate!r}")
        self.reward = reward
        if self.reward is not None:
            refuse_for_reward(self.reward.kind, locals())
            self.reward.calibration = with_tie_margin(self.reward.calibration, tie_margin)
        else:
            refuse_for_generator(tie_margin, constrain_verdict, backend.name, backend.supports_grammar)
        if not 0 <= min_verdict_mass <= 1:
            raise BadInputError(f"min_verdict_mass must be in [0, 1], got {min_verdict_mass}")
        if rubric is not None and score_range is not None and tuple(score_range) != rubric.score_range:
            raise BadInputError(
                f"the rubric describes scores {rubric.score_range[0]}-{rubric.score_range[1]}, but the score range is "
                f"{score_range[0]}-{score_range[1]}"
            )
        self.constrain_verdict = constrain_verdict
        self.rubric, self.score_range = rubric, tuple(score_range) if score_range is not None else None
        if self.reward is not None:
            self.plan = VerdictPlan(VerdictMode.REWARD, "none")
        else:
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
        """The resolved verdict mode: ``"text"``, ``"probability"``, ``"both"`` or ``"reward"``."""
        return self.plan.mode.value

    @property
    def explanation(self) -> str:
        """The resolved explanation mode: ``"none"`` or ``"first"``."""
        return self.plan.explanation

    # ------------------------------------------------------------------ the critic protocol
    @property
    def kind(self) -> str:
        """Its kind in :mod:`hf_critic.critics.registry`: ``reward`` / ``pooling`` (a reward model, local or served)
        or ``generative`` / ``served`` (a chat model, local or behind ``--base-url``)."""
        served = self.served_client is not None
        if self.reward is not None:
            return "pooling" if served else "reward"
        return "served" if served else "generative"

    @property
    def served_client(self):
        """The client of the server it judges on (a chat model or a pooling reward model), else None."""
        client = getattr(self.reward or self.backend, "client", None)
        return client if hasattr(client, "identity") else None

    def judge(self, records, *, swap: bool = False, source: str = "data") -> Critiques:
        """The protocol's judging (:class:`~hf_critic.critics.protocol.CriticKind`): :meth:`compare` on pairs (both
        orders with ``swap``, unless a reward critic, which is order-free), else :meth:`grade`; its ``critique_*``
        columns, their confidence (:func:`~hf_critic.selective.confidence_of`) and the calls made (rows x orders).

        Raises:
            ValueError: as :meth:`compare` / :meth:`grade`.
        """
        data = as_dataset(records)
        setting = setting_of(data)
        if setting.task is schema.Task.PAIRWISE:
            judged = self.compare(data, swap=swap, source=source)
        else:
            judged = self.grade(data, source=source)
        columns = {c: list(judged[c]) for c in judged.column_names if c.startswith("critique_")}
        orders = 2 if swap and self.reward is None and setting.task is schema.Task.PAIRWISE else 1
        return Critiques(
            columns,
            confidence_of(columns)[1],
            calls=len(data) * orders,
            identity=self.identity(setting, swap=swap),
        )

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """What changes its verdicts (:func:`~hf_critic.critic.identity.verdict_options`) and ``swap``."""
        from .identity import verdict_options

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
        **kwargs,
    ) -> Critic:
        """A critic on a local model (None = the embedded default critic, SmolLM2-135M-Instruct).

        Args:
            model: local folder, Hub id (fails fast when offline and not cached), ``.gguf`` file, PEFT adapter
                folder, or the name of a built-in trained critic (:data:`hf_critic.backends.models.TRAINED_CRITICS`, e.g.
                ``"smollm2-135m-critic"``, from the package's data, offline). A one-label sequence classifier (a
                reward model, :func:`hf_critic.critics.reward.is_reward_model`) becomes a reward critic.
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
            **kwargs: passed to :class:`Critic` (template, language, decoding, truncate, cache_path,
                constrain_verdict, verdict, explanation, min_verdict_mass); ``template="auto"`` picks the family of a
                known published critic from ``model``'s name (:func:`hf_critic.formats.pick_family`), and logs it.

        Raises:
            hf_critic.backends.models.ModelNotFoundError: the model cannot be found offline.
            ValueError: a trained critic asked to run on llama.cpp, or with ``gguf_recode`` (no GGUF runs); a
                classifier with several labels; see also :class:`Critic`.
        """
        from ..backends import load_backend
        from ..backends.models import resolve_engine, trained_critic
        from ..critics.reward import is_reward_model

        if kwargs.get("template") == AUTO:  # the family of a known published critic, from the model's name
            pick = pick_family(model, kwargs.get("language", "en"))
            logger.info(pick.message)
            kwargs.update(template=pick.family, language=pick.language)

        local = {"dtype": dtype, "batch_size": batch_size, "progress": progress, "num_threads": num_threads}
        local.update(trust_remote_code=trust_remote_code, tensor_parallel_size=tensor_parallel_size)
        local.update(data_parallel_size=data_parallel_size)  # how the model runs, for either kind
        trained = trained_critic(model)
        if trained is not None or is_reward_model(model):  # a sequence-classification reward model
            if engine not in ("auto", "transformers", "vllm"):
                raise BadInputError(f"{model} is a reward model: it runs on engine=transformers or vllm, not {engine}")
            if gguf_recode != "auto":
                raise BadInputError(
                    f"gguf_recode={gguf_recode}: {model} is a reward model on transformers; no GGUF runs"
                )
            chosen = resolve_engine(engine, model, batch_size, job="reward")
            if trained is not None:
                model = trained.check_installed()
                trained.note_licence()
            from ..backends.serving import load_reward_scorer

            return cls(None, reward=load_reward_scorer(model, engine=chosen, **local), **kwargs)
        job = "text" if kwargs.get("verdict") in ("text", "both") else "readout"
        chosen = resolve_engine(engine, model, batch_size, job=job)  # what it cannot honour is refused before it loads
        refuse_for_generator(kwargs.get("tie_margin"), kwargs.get("constrain_verdict"), chosen, chosen == "llamacpp")
        backend = load_backend(model, engine=chosen, gguf_recode=gguf_recode, **local)
        return cls(backend, **kwargs)

    # ----------------------------------------------------------------------------------- templates
    def template_for(self, setting: schema.Setting) -> PromptTemplate:
        """The template used for ``setting``.

        The scale of pointwise grading is ``score_range``, else the rubric's scores (see :class:`Critic`).

        Raises:
            ValueError: a fixed template (name or file) written for another setting, an unknown family, a rubric
                given to a template that takes none, or a scale the template cannot grade on.
        """
        template = resolve_template(self.template, setting, self.language)
        if self.rubric is not None and "rubric" not in template.fields:
            raise BadInputError(f"template {template.name!r} takes no rubric (prometheus2 does)")
        scale = self.score_range or (self.rubric.score_range if self.rubric is not None else None)
        if scale is not None and template.output.kind == "score":
            template = template.with_scale(*scale)
        return template

    # ----------------------------------------------------------------------------------- public API
    def grade(
        self,
        records: datasets.Dataset | Sequence[Mapping],
        *,
        referenced: bool | None = None,
        source: str = "data",
        return_stats: bool = False,
    ) -> datasets.Dataset | CritiqueRun:
        """Pointwise grading: a score (float in the template's range, e.g. [1, 10]) and explanation per response.

        Args:
            records: rows with ``question``, ``response`` and, for the referenced setting, ``reference``.
            referenced: force the referenced (True) or reference-free (False) setting; None = referenced
                exactly when a ``reference`` column is present.
            source: name of the data used in error messages.
            return_stats: also return the run's counts (parsed, unparsed, truncated, cached, ...).

        Returns:
            With ``return_stats``, a :class:`~hf_critic.critic.output.CritiqueRun` ``(critiques, stats)``; else the
            critiques alone (the same counts are then in ``critic.last_stats`` until the next call). The critiques are
            the input rows plus ``critique_score``, ``critique_explanation``, ``critique_generation``,
            ``critique_status``, ``critique_dimensions`` (JSON or None), ``critique_truncated`` and, under
            self-consistency, ``critique_samples``. Unparsed rows have score None and status
            ``unparsed`` / ``out_of_range``; they are never given a default score.

        Raises:
            RecordError: a missing column or empty field (names the row and field).
            ContextLengthError: an input too long for the model with ``truncate="error"``.
        """
        dataset = as_dataset(records)
        if self.reward is not None:
            return self._result(dataset, *self._grade_with_rewards(dataset, referenced, source), return_stats)
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
        return self._result(dataset, columns, stats, return_stats, votes)

    def compare(
        self,
        records: datasets.Dataset | Sequence[Mapping],
        *,
        referenced: bool | None = None,
        swap: bool = False,
        source: str = "data",
        return_stats: bool = False,
    ) -> datasets.Dataset | CritiqueRun:
        """Pairwise comparison: a label (0 = response 1 better, 1 = response 2 better, 2 = tie) and explanation.

        Args:
            records: rows with ``question``, ``response_1``, ``response_2`` and optionally ``reference``.
            referenced: as in :meth:`grade`.
            swap: also judge every pair with the responses in swapped order (position bias, CritiqueLLM v2
                §4.4.2); the swapped verdict is mapped back to the original order.
            source: name of the data used in error messages.
            return_stats: as in :meth:`grade`.

        Returns:
            As in :meth:`grade` (:class:`~hf_critic.critic.output.CritiqueRun` with ``return_stats``); the critiques
            are the input rows plus ``critique_label`` (int or None), ``critique_explanation``,
            ``critique_generation``, ``critique_status``, ``critique_truncated`` and, with ``swap``,
            ``critique_label_swapped`` (mapped back), ``critique_generation_swapped``,
            ``critique_status_swapped`` and ``critique_consistent`` (None when either order is unparsed).

        Raises:
            RecordError, ContextLengthError: as in :meth:`grade`.
        """
        dataset = as_dataset(records)
        if self.reward is not None:
            return self._result(dataset, *self._compare_with_rewards(dataset, referenced, swap, source), return_stats)
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
        return self._result(dataset, columns, stats, return_stats, votes)

    def _probability_stats(self, verdicts, truncated, judged: Judged, text: RunStats) -> RunStats:
        return probability_stats(
            verdicts, truncated, judged, text, min_mass=self.min_verdict_mass, keeps_text=self.plan.keeps_text
        )

    def _result(self, dataset: datasets.Dataset, columns: dict, stats: RunStats, return_stats: bool, votes=None):
        """The critiques (and stats): ``columns`` plus every verdict's ``critique_confidence``
        (:func:`hf_critic.selective.confidence_of`; ``votes``: the text verdicts' samples per row), and the count of
        inputs holding control-token strings."""
        columns[schema.CRITIQUE_CONFIDENCE] = confidence_of(columns, votes=votes)[0]
        engine = self.reward if self.reward is not None else self.backend
        stats.keeps_text = bool(getattr(engine, "keeps_text", False))
        stats.control_tokens = count_control_tokens(dataset, getattr(engine, "control_tokens", ()))
        if stats.control_tokens and not stats.keeps_text:
            logger.warning(
                "%d input(s) hold chat control-token strings (e.g. <|im_end|>); the server tokenises the prompt itself "
                "and may read them as control tokens, so the judged text could end its turn (see hf_critic.core.control_tokens)",
                stats.control_tokens,
            )
        self.last_stats = stats
        critiques = add_columns(dataset, columns)
        return CritiqueRun(critiques, stats) if return_stats else critiques

    # ----------------------------------------------------------------------------------- reward critics
    def _grade_with_rewards(self, dataset: datasets.Dataset, referenced: bool | None, source: str):
        """Pointwise grading by rewards (:func:`hf_critic.critic.rewards.grade_columns`) on the template's scale:
        ``(columns, stats)``."""
        template = self._reward_setting(dataset, schema.Task.POINTWISE, referenced, source)
        if template.output.kind != "score":
            raise BadInputError(f"template {template.name!r} does not grade on a score scale")
        return self._reward_call(
            grade_columns, source, dataset[schema.QUESTION], dataset[schema.RESPONSE], template.output.score_range
        )

    def _compare_with_rewards(self, dataset: datasets.Dataset, referenced: bool | None, swap: bool, source: str):
        """Pairwise comparison by rewards (:func:`hf_critic.critic.rewards.compare_columns`), order-free:
        ``(columns, stats)``."""
        if self.template != DEFAULT_FAMILY:
            raise BadInputError(
                f"template={self.template}: a {self.reward.kind} compares by rewards and reads no template"
            )
        self._reward_setting(dataset, schema.Task.PAIRWISE, referenced, source)
        return self._reward_call(
            compare_columns,
            source,
            dataset[schema.QUESTION],
            dataset[schema.RESPONSE_1],
            dataset[schema.RESPONSE_2],
            swap=swap,
        )

    def _reward_setting(self, dataset, task: schema.Task, referenced: bool | None, source: str) -> PromptTemplate:
        """The reference-free setting's template (its scale); a reward critic reads no reference, and says so."""
        if referenced:
            raise BadInputError(
                f"a {self.reward.kind} reads no reference: it scores the question and response alone (drop referenced=True)"
            )
        if schema.REFERENCE in dataset.column_names:
            logger.warning(
                "%s: the reference column is not shown to the %s (it reads no reference)", source, self.reward.kind
            )
        setting = schema.Setting(task, False)
        check_fields(dataset, setting.fields, source, allow_empty=RESPONSE_FIELDS)
        return self.template_for(setting)

    def _reward_call(self, build, source, *args, **kwargs):
        try:
            return build(self.reward, *args, truncate=self.truncate, cache=self.cache, **kwargs)
        except OverflowError as err:
            raise ContextLengthError(f"{source}: {err} (truncate=middle cuts it, truncate=skip leaves it)") from None
        except NonFiniteRewardError as err:
            raise NonFiniteRewardError(f"{source}: {err}") from None

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
