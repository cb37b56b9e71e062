"""The reward critic: a reward model as a kind of critic of its own (``reward`` local, ``pooling`` served).

A reward model scores each (question, response) alone (:mod:`hf_critic.critic.rewards`): pointwise grading maps the
reward onto the template's scale, pairwise comparison reads the label from the two rewards and the tie band
(Rao & Kupper 1967; :mod:`hf_critic.critics.reward`), with no explanation. It is order-free: both orders of a pair
give the same rewards, so ``swap`` makes no second pass. Everything it cannot honour (text or probability verdicts,
explanations, decoding, rubric criteria, grammars, verdict mass, a reference, a language) is refused with a
ValueError naming the argument (:func:`~hf_critic.critic.rewards.refuse_for_reward`).
"""

from __future__ import annotations

import logging
import os

import datasets

from ..backends.cache import GenerationCache
from ..core import schema
from ..core.errors import BadInputError
from ..formats import DEFAULT_FAMILY
from ..io import check_fields
from ..prompts import RESPONSE_FIELDS, PromptTemplate
from ..prompts.rubric import Rubric
from .base import ComputedCritic, pick_template
from .decoding import DecodingConfig
from .inputs import TRUNCATE_POLICIES, ContextLengthError
from .output import RunStats
from .rewards import (
    NonFiniteRewardError,
    RewardScorer,
    compare_columns,
    grade_columns,
    refuse_for_reward,
    with_tie_margin,
)
from .verdicts import DEFAULT_MIN_VERDICT_MASS, VerdictMode, VerdictPlan

__all__ = ["RewardCritic"]

logger = logging.getLogger(__name__)


class RewardCritic(ComputedCritic):
    """An order-free critic whose verdicts come from a reward model's rewards (module docstring).

    Args:
        scorer: the :class:`~hf_critic.critic.rewards.RewardScorer`: a local
            :class:`~hf_critic.critics.reward.RewardModel`, or a
            :class:`~hf_critic.critic.rewards.ServedRewardModel` behind a vLLM pooling server.
        template: a template family or name, read for the scale of pointwise grading only; pairwise comparison reads
            no template (any other than the default family is refused there).
        truncate: what an input longer than the model's context becomes: ``"middle"`` (the response cut in the
            middle), ``"skip"`` (the row left unjudged, status skipped) or ``"error"``.
        cache_path: SQLite file of finished rewards; with it, a killed run restarted recomputes nothing.
        tie_margin: the tie band of pairwise comparison in reward units, finite and >= 0 (None: the scorer's
            calibration's). It replaces the scorer's calibration's band.
        score_range: ``(low, high)`` integers: the scale of pointwise grading for templates whose scale is
            configurable.
        language, decoding, constrain_verdict, verdict, explanation, min_verdict_mass, rubric: the generative
            critic's options, accepted so that each one given is refused by name (``verdict`` may be ``auto`` or
            ``reward``); a reward critic writes no text.

    Raises:
        ValueError: an unknown truncation policy, a negative or non-finite ``tie_margin``, or an option it cannot
            honour (one line naming it as ``name=value``).

    Examples:
        >>> critic = RewardCritic.from_pretrained("smollm2-135m-critic")  # doctest: +SKIP
        >>> pair = {"question": "2+2?", "response_1": "4", "response_2": "5"}
        >>> critic.judge([pair]).columns["critique_label"]  # doctest: +SKIP
        [0]
    """

    order_free = True
    #: ``reward`` (a local reward model) or ``pooling`` (behind a vLLM pooling server).
    kind_names = ("reward", "pooling")
    #: A reward critic reads no criteria and writes in no language: what the shared template lookup asks.
    rubric: Rubric | None = None

    def __init__(
        self,
        scorer: RewardScorer,
        *,
        template: str = DEFAULT_FAMILY,
        truncate: str = "middle",
        cache_path: str | os.PathLike | None = None,
        tie_margin: float | None = None,
        score_range: tuple[int, int] | None = None,
        language: str = "en",
        decoding: DecodingConfig | None = None,
        constrain_verdict: bool = False,
        verdict: str = "auto",
        explanation: str | None = None,
        min_verdict_mass: float = DEFAULT_MIN_VERDICT_MASS,
        rubric: Rubric | None = None,
    ):
        if truncate not in TRUNCATE_POLICIES:
            raise BadInputError(f"truncate must be one of {TRUNCATE_POLICIES}, got {truncate!r}")
        refuse_for_reward(scorer.kind, locals())
        scorer.calibration = with_tie_margin(scorer.calibration, tie_margin)
        self.scorer, self.template, self.language, self.truncate = scorer, template, language, truncate
        self.score_range = tuple(score_range) if score_range is not None else None
        self.plan = VerdictPlan(VerdictMode.REWARD, "none")
        self.cache = GenerationCache(cache_path) if cache_path else None
        self.last_stats = RunStats()

    @classmethod
    def from_pretrained(
        cls,
        model: str,
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
    ) -> RewardCritic:
        """The reward critic of a local reward model: a one-label sequence classifier (folder, Hub id in the local
        cache, PEFT adapter) or the name of a built-in trained critic (``"smollm2-135m-critic"``, from the package's
        data, offline; its licence is said on stderr).

        Args:
            model: the reward model.
            engine: ``"auto"``, ``"transformers"`` or ``"vllm"`` (vLLM's pooling runner); ``auto`` takes the engine
                measured fastest for reward critics (:func:`hf_critic.backends.models.resolve_engine`).
            trust_remote_code, batch_size, num_threads, dtype, progress: as in
                :meth:`~hf_critic.critics.reward.RewardModel.from_pretrained`.
            gguf_recode: must stay ``"auto"`` (no GGUF runs).
            tensor_parallel_size, data_parallel_size: vLLM's parallelism (engine ``vllm`` only).
            rows: the rows the run will judge, when known (see :meth:`hf_critic.critic.Critic.from_pretrained`).
            **kwargs: passed to :class:`RewardCritic` (``template="auto"`` picks the family of ``model``'s name for
                the score scale, :func:`hf_critic.formats.pick_family`).

        Raises:
            hf_critic.backends.models.ModelNotFoundError: the model cannot be found offline.
            ValueError: another engine, a ``gguf_recode``, a classifier with several labels, or an option a reward
                critic cannot honour.
        """
        from ..backends.models import resolve_engine, trained_critic
        from ..backends.serving import load_reward_scorer

        if engine not in ("auto", "transformers", "vllm"):
            raise BadInputError(f"{model} is a reward model: it runs on engine=transformers or vllm, not {engine}")
        if gguf_recode != "auto":
            raise BadInputError(f"gguf_recode={gguf_recode}: {model} is a reward model on transformers; no GGUF runs")
        chosen = resolve_engine(engine, model, batch_size, job="reward", rows=rows)
        kwargs = pick_template(model, kwargs)
        trained = trained_critic(model)
        if trained is not None:
            model = trained.check_installed()
            trained.note_licence()
        local = {"dtype": dtype, "batch_size": batch_size, "progress": progress, "num_threads": num_threads}
        local.update(trust_remote_code=trust_remote_code, tensor_parallel_size=tensor_parallel_size)
        scorer = load_reward_scorer(model, engine=chosen, data_parallel_size=data_parallel_size, **local)
        return cls(scorer, **kwargs)

    @property
    def verdict(self) -> str:
        """``"reward"``: every verdict comes from rewards."""
        return self.plan.mode.value

    # ------------------------------------------------------------------ the critic protocol
    @property
    def engine(self) -> RewardScorer:
        """What judges: its scorer."""
        return self.scorer

    def identity_parts(self, setting: schema.Setting, *, swap: bool = False) -> list[str]:
        """What changes its verdicts (:func:`~hf_critic.core.identity.reward_options`: the scorer by content, the
        input cut, the tie band) and ``swap``."""
        from ..core.identity import reward_options

        return [*reward_options(self.scorer, self.truncate), f"swap={swap}"]

    # ----------------------------------------------------------------------------------- grading, comparison
    def _grade_columns(self, dataset: datasets.Dataset, referenced: bool | None, source: str):
        """Pointwise grading by rewards (:func:`hf_critic.critic.rewards.grade_columns`) on the template's scale:
        ``(columns, stats, None)``."""
        template = self._reward_setting(dataset, schema.Task.POINTWISE, referenced, source)
        if template.output.kind != "score":
            raise BadInputError(f"template {template.name!r} does not grade on a score scale")
        return self._reward_call(
            grade_columns, source, dataset[schema.QUESTION], dataset[schema.RESPONSE], template.output.score_range
        )

    def _compare_columns(self, dataset: datasets.Dataset, referenced: bool | None, swap: bool, source: str):
        """Pairwise comparison by rewards (:func:`hf_critic.critic.rewards.compare_columns`), order-free:
        ``(columns, stats, None)``."""
        if self.template != DEFAULT_FAMILY:
            raise BadInputError(
                f"template={self.template}: a {self.scorer.kind} compares by rewards and reads no template"
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
                f"a {self.scorer.kind} reads no reference: it scores the question and response alone (drop referenced=True)"
            )
        if schema.REFERENCE in dataset.column_names:
            logger.warning(
                "%s: the reference column is not shown to the %s (it reads no reference)", source, self.scorer.kind
            )
        setting = schema.Setting(task, False)
        check_fields(dataset, setting.fields, source, allow_empty=RESPONSE_FIELDS)
        return self.template_for(setting)

    def _reward_call(self, build, source, *args, **kwargs):
        """``build``'s ``(columns, stats)`` as ``(columns, stats, None)``, its errors naming ``source``."""
        try:
            columns, stats = build(self.scorer, *args, truncate=self.truncate, cache=self.cache, **kwargs)
        except OverflowError as err:
            raise ContextLengthError(f"{source}: {err} (truncate=middle cuts it, truncate=skip leaves it)") from None
        except NonFiniteRewardError as err:
            raise NonFiniteRewardError(f"{source}: {err}") from None
        return columns, stats, None
