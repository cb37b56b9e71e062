"""Critiques from rewards: the order-free critics (reward models, local or served).

A reward critic scores each (question, response) alone; pointwise grading maps the reward onto the template's scale
and pairwise comparison reads the label from the two rewards (:mod:`hf_critic.critics.reward`; CritiqueLLM v2 §3.1's
two tasks, without an explanation). Two scorers share one interface (:class:`RewardScorer`):

* :class:`~hf_critic.critics.reward.RewardModel`: a local sequence-classification model (transformers / PEFT);
* :class:`ServedRewardModel`: one behind vLLM's pooling endpoint (:mod:`hf_critic.backends.pooling`).

The critic that judges with either is :class:`~hf_critic.critic.reward_critic.RewardCritic`.

Every reward goes through the critique cache under the scorer's identity and the exact input it scored, so a killed
run restarted recomputes nothing it finished. The critique columns are those of the other critics: ``critique_score``
or ``critique_label``, ``critique_status``, ``critique_truncated``, the read-out columns (``critique_distribution``
...) and the raw ``critique_reward`` (``critique_reward_2`` for the second response); ``critique_explanation`` is None.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..backends.cache import GenerationCache, cache_key
from ..core import schema
from ..core.errors import BadInputError
from ..core.identity import model_identity
from ..core.progress import RunBar
from ..critics.reward import RewardCalibration, fit_ids, pairwise_verdict, reward_conversation
from .decoding import DecodingConfig
from .output import RunStats, distribution_columns
from .verdicts import DEFAULT_MIN_VERDICT_MASS, ProbabilityVerdict, entropy

logger = logging.getLogger(__name__)

__all__ = [
    "NonFiniteRewardError",
    "RewardRun",
    "RewardScorer",
    "ServedRewardModel",
    "compare_columns",
    "grade_columns",
    "refuse_for_reward",
    "with_tie_margin",
    "score_responses",
]

#: What a reward critic honours of the critic options (the rest is refused by the command line).
ORDER_FREE_NOTE = "an order-free critic: both orders give the same rewards, so --swap makes no second pass"


class RewardScorer(Protocol):
    """What a reward critic needs of its scorer.

    Attributes:
        name: the model, for messages.
        identity: what its rewards depend on, by content (weights, chat template, context, calibration; a server's URL
            and model): part of every cache key and calibration fingerprint.
        kind: what it is, for messages ("reward model", "served reward model").
        calibration: the pointwise map and tie band (:class:`~hf_critic.critics.reward.RewardCalibration`).
    """

    name: str
    identity: str
    kind: str
    calibration: RewardCalibration

    def fit(self, question: str, response: str, truncate: str) -> tuple[Any, bool]:
        """The input scored for one response (JSON-serialisable; None when skipped) and whether it was cut."""

    def score(self, inputs: Sequence[Any]) -> list[float]:
        """One reward per input of :meth:`fit`."""


class NonFiniteRewardError(BadInputError):
    """A scorer gave NaN or Infinity: no verdict can come from it, so the run stops, naming the row."""


@dataclass
class RewardRun:
    """Rewards of one batch of responses.

    Attributes:
        rewards: one per response (None: skipped as too long).
        truncated: per response, whether its input was cut (or skipped) to fit the context.
        cached: per response, whether the reward came from the cache.
    """

    rewards: list[float | None]
    truncated: list[bool]
    cached: list[bool]


def score_responses(
    scorer: RewardScorer,
    items: Sequence[tuple[str, str]],
    *,
    truncate: str = "middle",
    cache: GenerationCache | None = None,
    chunk: int = 64,
    item_name: Callable[[int], str] = lambda i: f"row {i}",
) -> RewardRun:
    """The reward of every ``(question, response)``, through the cache, in chunks stored as they finish.

    Args:
        item_name: names item ``i`` in messages (pairwise comparison: the row and which response).

    Raises:
        OverflowError: an input too long under ``truncate="error"`` (the caller names the row).
        NonFiniteRewardError: the scorer gave NaN or Infinity for an item (named); nothing of that chunk is cached.
    """
    fitted = [scorer.fit(q, r, truncate) for q, r in items]
    keys = [None if x is None else cache_key(reward=scorer.identity, input=x) for x, _ in fitted]
    done = cache.get_many({k for k in keys if k}) if cache is not None else {}
    done = {k: v for k, v in done.items() if isinstance(v, (int, float)) and math.isfinite(v)}
    cached = [k in done for k in keys]
    todo = list(dict.fromkeys(k for k in keys if k and k not in done))
    where = {k: i for i, k in enumerate(keys) if k}
    with RunBar(len(todo), "response", "rewards", scorer) as bar:
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            fresh = dict(zip(part, scorer.score([fitted[where[k]][0] for k in part]), strict=True))
            bad = [k for k in part if not math.isfinite(fresh[k])]
            if bad:
                raise NonFiniteRewardError(
                    f"the {scorer.kind} {scorer.name} gave reward {fresh[bad[0]]} for {item_name(where[bad[0]])} "
                    f"({len(bad)} of {len(part)} non-finite in this batch); nothing of it is kept"
                )
            if cache is not None:
                cache.put_many(fresh)
            done.update(fresh)
            bar.done(len(part))
    rewards = [None if k is None else float(done[k]) for k in keys]
    return RewardRun(rewards, [cut for _, cut in fitted], cached)


def _stats(statuses: Sequence[schema.ParseStatus], run: RewardRun, kind: str) -> RunStats:
    stats = RunStats(verdict="reward", cached=sum(run.cached), truncated=sum(run.truncated), source=kind)
    for status in statuses:
        stats.count(status)
    return stats


def grade_columns(
    scorer: RewardScorer, questions: Sequence[str], responses: Sequence[str], scale: tuple[float, float], **kwargs
) -> tuple[dict[str, list], RunStats]:
    """Pointwise grading by rewards: ``critique_score`` in ``[low, high]`` of ``scale`` and ``critique_reward``.

    Args:
        questions, responses: one per row, shape ``(n,)``.
        scale: the template's ``(low, high)``.
        **kwargs: ``truncate`` and ``cache`` of :func:`score_responses`.

    Returns:
        ``(columns, stats)``: the critique columns (lists of ``n``) and the run's counts.
    """
    run = score_responses(scorer, list(zip(questions, responses, strict=True)), **kwargs)
    ok, skipped = schema.ParseStatus.OK, schema.ParseStatus.SKIPPED
    statuses = [ok if r is not None else skipped for r in run.rewards]
    columns = {
        schema.CRITIQUE_SCORE: [None if r is None else scorer.calibration.score(r, scale) for r in run.rewards],
        schema.CRITIQUE_REWARD: run.rewards,
        schema.CRITIQUE_EXPLANATION: [None] * len(statuses),
        schema.CRITIQUE_GENERATION: [None] * len(statuses),
        schema.CRITIQUE_STATUS: [s.value for s in statuses],
        schema.CRITIQUE_TRUNCATED: run.truncated,
    }
    return columns, _stats(statuses, run, scorer.kind)


def compare_columns(
    scorer: RewardScorer,
    questions: Sequence[str],
    first: Sequence[str],
    second: Sequence[str],
    *,
    swap: bool = False,
    **kwargs,
) -> tuple[dict[str, list], RunStats]:
    """Pairwise comparison by rewards: the label from ``r1 - r2`` and the tie band, the Rao-Kupper distribution.

    Args:
        questions, first, second: one per row, shape ``(n,)``.
        swap: asked for the swapped order too: an order-free critic makes no second pass and says so (a log line);
            no ``*_swapped`` column is written, so no consistency is reported as if measured.
        **kwargs: ``truncate`` and ``cache`` of :func:`score_responses`.

    Returns:
        ``(columns, stats)``; a row with either response skipped has label None and status ``skipped``.
    """
    if swap:
        logger.warning("%s: %s", scorer.kind, ORDER_FREE_NOTE)
    items = [(q, r) for q, a, b in zip(questions, first, second, strict=True) for r in (a, b)]
    run = score_responses(scorer, items, item_name=lambda i: f"row {i // 2} response {i % 2 + 1}", **kwargs)
    tau = scorer.calibration.tie_margin
    verdicts, labels = [], []
    for r1, r2 in zip(run.rewards[0::2], run.rewards[1::2], strict=True):
        if r1 is None or r2 is None:
            verdicts.append(ProbabilityVerdict(schema.ParseStatus.SKIPPED, None, 0.0, None))
            labels.append(None)
            continue
        label, distribution = pairwise_verdict(r1, r2, tau)
        verdicts.append(ProbabilityVerdict(schema.ParseStatus.OK, distribution, 1.0, entropy(distribution)))
        labels.append(label)
    pair_run = RewardRun(
        run.rewards[0::2],
        [a or b for a, b in zip(run.truncated[0::2], run.truncated[1::2], strict=True)],
        [a and b for a, b in zip(run.cached[0::2], run.cached[1::2], strict=True)],
    )
    columns = {
        schema.CRITIQUE_LABEL: labels,
        schema.CRITIQUE_REWARD: run.rewards[0::2],
        schema.CRITIQUE_REWARD_2: run.rewards[1::2],
        schema.CRITIQUE_EXPLANATION: [None] * len(labels),
        schema.CRITIQUE_GENERATION: [None] * len(labels),
        schema.CRITIQUE_STATUS: [v.status.value for v in verdicts],
        schema.CRITIQUE_TRUNCATED: pair_run.truncated,
        **distribution_columns(verdicts),
    }
    return columns, _stats([v.status for v in verdicts], pair_run, scorer.kind)


# ----------------------------------------------------------------------------------- the other two scorers
class ServedRewardModel:
    """A reward model behind vLLM's pooling endpoint (``vllm serve MODEL --runner pooling``).

    Named by its own files (:meth:`for_client`: a shipped trained critic's name, or the folder the server loaded), it
    judges as the same critic does in-process: its calibration (pointwise map, tie band) and its context
    (``max_length``), the inputs encoded here with its tokenizer and cut the same way (:func:`fit_ids`, so ``--truncate``
    is honoured), and sent as token ids. Without them the server applies the model's chat template and its own context,
    and ``--truncate`` cannot be honoured.

    Args:
        client: a :class:`~hf_critic.backends.pooling.PoolingRewardClient`.
        calibration: the pointwise map, tie band and context (default: not fitted, tie only on equal rewards).
        tokenizer: the critic's tokenizer, or None (the server encodes the conversation).
        context_length: the tokens an input may have (None: the server's limit applies).
        files: the folder the calibration and tokenizer came from (said in messages), or None.
    """

    kind = "served reward model"

    def __init__(
        self,
        client,
        calibration: RewardCalibration | None = None,
        *,
        tokenizer=None,
        context_length: int | None = None,
        files: str | None = None,
    ):
        self.client, self.calibration = client, calibration or RewardCalibration()
        self.tokenizer, self.context_length, self.files = tokenizer, context_length, files
        self.keeps_text = tokenizer is not None  # encoded here with control-token strings kept as text

    @classmethod
    def for_client(cls, client) -> ServedRewardModel:
        """The served critic with its own files when the name or the server says where they are
        (:func:`hf_critic.critics.reward.served_critic_files`), said on stderr either way (never guessed silently).

        Args:
            client: a :class:`~hf_critic.backends.pooling.PoolingRewardClient` after its ``check()``.

        Raises:
            ValueError: a bad ``hf_critic_reward.json`` in the critic's folder (names the file).
        """
        import sys

        from ..critics.reward import critic_tokenizer, served_critic_files

        folder = served_critic_files(client.model, client.served)
        if folder is None:
            print(
                f"served reward model {client.model!r}: no critic files found for it (not a shipped critic's name, "
                "no local folder); unfitted score map, tie only on equal rewards, the server's context",
                file=sys.stderr,
            )
            return cls(client)
        calibration = RewardCalibration.load(folder)
        tokenizer = critic_tokenizer(folder)
        limits = [calibration.max_length, client.served.get("max_model_len")]
        if 0 < (tokenizer.model_max_length or 0) < 1_000_000:
            limits.append(tokenizer.model_max_length)
        context = min((n for n in limits if n), default=None)
        print(
            f"served reward model {client.model!r}: calibration, tie band {calibration.tie_margin:g} and "
            f"{context}-token context from {folder}",
            file=sys.stderr,
        )
        return cls(client, calibration, tokenizer=tokenizer, context_length=context, files=str(folder))

    @property
    def name(self) -> str:
        """The client's base URL, model and what the server reports of it."""
        return f"pooling:{self.client.identity}"

    @property
    def identity(self) -> str:
        """Identity in cache keys and calibration fingerprints: :attr:`name`, the calibration applied to the
        server's rewards (its pointwise map and tie band) and, where the critic's own tokenizer cuts the inputs, its
        context and chat template."""
        calibration = dataclasses.asdict(self.calibration)
        if self.tokenizer is None:
            return model_identity(self.name, calibration=calibration)
        chat = self.tokenizer.chat_template
        return model_identity(self.name, calibration=calibration, context=self.context_length, chat_template=chat)

    def fit(self, question: str, response: str, truncate: str) -> tuple[Any, bool]:
        """The token ids within the critic's context (:func:`fit_ids`) when its tokenizer is known; else the
        conversation, never cut here (the server's context applies)."""
        if self.tokenizer is None:
            return reward_conversation(question, response), False
        return fit_ids(self.tokenizer, question, response, self.context_length, truncate)

    def score(self, inputs: Sequence[Any]) -> list[float]:
        """Rewards from the server, in input order."""
        return self.client.rewards(list(inputs))


def refuse_for_reward(kind: str, options: dict) -> None:
    """Raise BadInputError naming the first argument a reward critic of ``kind`` cannot honour (nothing is ignored),
    as ``name=value``: the command line shows the flag.

    A reward critic honours ``template`` (its score scale), ``score_range``, ``truncate`` and ``cache_path``; the
    verdict must be ``auto`` or ``reward``; everything else must keep its default.
    """
    if options["verdict"] not in ("auto", "reward"):
        raise BadInputError(
            f"verdict={options['verdict']}: a {kind}'s verdicts come from its rewards (use verdict=auto)"
        )
    refused = {
        "explanation": options["explanation"] not in (None, "none"),
        "decoding": (options["decoding"] or DecodingConfig()) != DecodingConfig(),
        "constrain_verdict": options["constrain_verdict"],
        "rubric": options["rubric"] is not None,
        "min_verdict_mass": options["min_verdict_mass"] != DEFAULT_MIN_VERDICT_MASS,
        "language": options["language"] != "en",
    }
    unshown = {  # arguments whose value reads badly in one line: named, with what they stand for
        "decoding": " / num_samples= / temperature= / max_new_tokens=",
        "rubric": " (a reward critic reads no criteria; score_range= sets the scale)",
    }
    for name, given in refused.items():
        if given:
            value = "" if name in unshown else options[name]
            raise BadInputError(
                f"{name}={value}{unshown.get(name, '')}: a {kind} writes no critique text and cannot honour it"
            )


def refuse_for_generator(tie_margin: float | None, constrain_verdict: bool, engine: str, grammar: bool) -> None:
    """Raise BadInputError naming an argument a critic that generates text (no reward model) cannot honour:
    ``tie_margin`` (a reward critic's tie band), or ``constrain_verdict`` on an ``engine`` (its name) without grammars
    (``grammar`` False).
    """
    if tie_margin is not None:
        raise BadInputError(f"tie_margin={tie_margin}: only a reward critic (a reward model) has a tie band")
    if constrain_verdict and not grammar:
        raise BadInputError(
            f"constrain_verdict=True needs grammar-constrained decoding, which {engine} lacks; use engine=llamacpp "
            "or base_url= of a llama.cpp server"
        )


def with_tie_margin(calibration, tie_margin: float | None):
    """``calibration`` with its tie band replaced by ``tie_margin`` (None: unchanged).

    Raises:
        ValueError: a negative margin.
    """
    if tie_margin is None:
        return calibration
    if not math.isfinite(tie_margin) or tie_margin < 0:
        raise BadInputError(f"tie_margin={tie_margin}: must be a finite number >= 0")
    return dataclasses.replace(calibration, tie_margin=float(tie_margin))
