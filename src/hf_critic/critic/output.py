"""What a critic run gives back besides its critiques' text: the run statistics of a grade / compare call
(:class:`RunStats`, the user's summary line) and the columns of probability read-outs (verdict distributions, their
mass and entropy, and both orders combined under ``--swap``; CritiqueLLM v2 §3.1 verdicts, Wang et al. 2025 §3.2)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import datasets
import numpy as np

from ..core import schema
from ..core.control_tokens import COMMON_CONTROL_TOKENS, find_control_tokens
from ..parsing import ParsedCritique
from .verdicts import (
    DEFAULT_MIN_VERDICT_MASS,
    ProbabilityVerdict,
    combine_orders,
    decide_label,
    entropy,
    swap_distribution,
)


@dataclass
class RunStats:
    """Counts of one grade / compare call, for the user's summary line.

    Attributes:
        total: inputs sent through the critic (each order counts under ``swap``).
        parsed: inputs whose final verdict parsed.
        unparsed / out_of_range / skipped: the other :class:`~hf_critic.core.schema.ParseStatus` outcomes.
        low_mass: inputs whose probability read-out had less verdict mass than ``min_mass`` (never scored).
        truncated: inputs whose prompt was truncated to fit the context window (the response cut in the middle).
        cut_off: critiques cut off at ``max_new_tokens`` (kept: that budget's critique; often unparsed), or None when
            the backend does not say (the local engines). A server reports it (``finish_reason: "length"``).
        reasked: inputs whose cached critique did not parse (a garbled answer kept by an earlier run against a
            flaky server) and was asked again (servers only: a local engine would write the same text again).
        cached: inputs answered from the generation cache (no model call; with both a critique and a read-out, the
            inputs whose critique came from the cache).
        cached_readouts: with both a generated critique and a probability read-out per input, the inputs whose
            read-outs all came from the cache (a run killed after its critiques resumes with those cached and the
            read-outs not); None otherwise.
        verdict: ``"text"``, ``"probability"`` or ``"reward"`` (an order-free reward critic): where the counted
            verdicts come from.
        source: for ``"reward"``, which kind of reward critic (``"reward model"``, ``"served reward model"``).
        mass: verdict mass of every read-out input (probability only).
        unseen: allowed verdicts a top-k server did not return, summed (probability only; counted as 0).
        min_mass: the ``--min-verdict-mass`` in force.
        text: under ``--verdict both``, the same counts for the text verdicts.
        control_tokens: inputs whose judged text (question, responses, reference) holds a chat control-token string
            (:data:`hf_critic.core.control_tokens.COMMON_CONTROL_TOKENS` or the local model's own, e.g. ``<|im_end|>``).
        keeps_text: True when the engine kept those strings as text (the local engines); False for a server, which
            tokenises the prompt itself and may read them as control tokens (a warning is logged).
    """

    total: int = 0
    parsed: int = 0
    unparsed: int = 0
    out_of_range: int = 0
    skipped: int = 0
    low_mass: int = 0
    truncated: int = 0
    cut_off: int | None = None
    reasked: int = 0
    cached: int = 0
    cached_readouts: int | None = None
    verdict: str = "text"
    mass: list = field(default_factory=list)
    unseen: int = 0
    min_mass: float = DEFAULT_MIN_VERDICT_MASS
    text: RunStats | None = None
    source: str = ""
    control_tokens: int = 0
    keeps_text: bool = True

    @property
    def parse_rate(self) -> float:
        """Share of inputs with a parsed verdict, in [0, 1] (0 when nothing ran)."""
        return self.parsed / self.total if self.total else 0.0

    def count(self, status: schema.ParseStatus) -> None:
        self.total += 1
        attr = {schema.ParseStatus.OK: "parsed"}.get(status, status.value)
        setattr(self, attr, getattr(self, attr) + 1)

    def summary(self) -> str:
        """One line: parse rate and every counter (probability read-outs: verdict rate, low mass, mean mass).

        ``truncated to fit the context`` counts prompts cut to fit the window; ``cut off at max tokens`` counts
        critiques that stopped at ``max_new_tokens`` (shown when the backend reports it); ``re-asked`` counts cached
        critiques that did not parse and were asked again (shown when there were any).
        """
        tail = f"skipped {self.skipped}, truncated to fit the context {self.truncated}"
        if self.cut_off is not None:
            tail += f", cut off at max tokens {self.cut_off}"
        if self.reasked:
            tail += f", re-asked {self.reasked} cached critique(s) that did not parse"
        tail += f", from cache {self.cached}"
        if self.control_tokens:
            kept = "kept as text" if self.keeps_text else "sent to the server as they are: it may read them as such"
            tail += f", {self.control_tokens} input(s) holding control-token strings ({kept})"
        if self.cached_readouts is not None:
            tail += f" critique(s) and {self.cached_readouts} read-out(s)"
        if self.verdict == "reward":
            return f"{self.parsed}/{self.total} verdicts from the {self.source} (rewards, no explanation), {tail}"
        if self.verdict == "text":
            return (
                f"{self.parsed}/{self.total} parsed ({100 * self.parse_rate:.1f}%), unparsed {self.unparsed}, "
                f"out of range {self.out_of_range}, {tail}"
            )
        line = (
            f"{self.parsed}/{self.total} verdicts from probabilities ({100 * self.parse_rate:.1f}%), low mass "
            f"{self.low_mass} (< {self.min_mass:g}), mean verdict mass {np.mean(self.mass) if self.mass else 0:.3f}, "
            f"{tail}"
        )
        if self.unseen:
            line += f", {self.unseen} verdict probabilities outside the server's top-k (counted as 0)"
        return line + (f"; text verdicts: {self.text.summary()}" if self.text else "")


class CritiqueRun(NamedTuple):
    """What :meth:`hf_critic.Critic.grade` / :meth:`~hf_critic.Critic.compare` return with ``return_stats=True``:
    the run's statistics with its result, not through the critic's state.

    Attributes:
        critiques: the input rows plus the critique columns.
        stats: the :class:`RunStats` of that call.
    """

    critiques: datasets.Dataset
    stats: RunStats


def _json(distribution: dict | None) -> str | None:
    return None if distribution is None else json.dumps({k: round(p, 6) for k, p in distribution.items()})


def distribution_columns(verdicts: Sequence[ProbabilityVerdict], suffix: str = "") -> dict[str, list]:
    """The read-out columns of probability verdicts (:mod:`hf_critic.critic.verdicts`; CritiqueLLM v2 §3.1 verdicts).

    Args:
        verdicts: one verdict per row, shape ``(n,)``.
        suffix: appended to each column name (e.g. ``_swapped``).

    Returns:
        ``critique_distribution`` (JSON ``{verdict: probability}``, probabilities in [0, 1] rounded to 6 places, None
        when unparsed), ``critique_verdict_mass`` (in [0, 1]) and ``critique_entropy`` (nats), each a list of ``n``.
    """
    return {
        schema.CRITIQUE_DISTRIBUTION + suffix: [_json(v.distribution) for v in verdicts],
        schema.CRITIQUE_VERDICT_MASS + suffix: [v.mass for v in verdicts],
        schema.CRITIQUE_ENTROPY + suffix: [v.entropy for v in verdicts],
    }


def pairwise_columns(first: Sequence[ProbabilityVerdict], swapped: Sequence[ProbabilityVerdict] | None) -> dict:
    """Label and distribution columns of pairwise probability verdicts (CritiqueLLM v2 §4.4.2 order swap).

    With ``swapped`` (the verdicts on the swapped pairs, same length), both orders' distributions, the swapped one
    mapped back, are averaged before deciding (Wang et al. 2025, §3.2), and the per-order labels, statuses and
    consistency are added.

    Args:
        first: verdicts on the original order, shape ``(n,)``.
        swapped: verdicts on the swapped order, shape ``(n,)``, or None.

    Returns:
        ``{column: list of n}``: ``critique_label`` (0 / 1 / 2, None when unparsed), ``critique_status`` and the
        :func:`distribution_columns`; with ``swapped`` also the ``_first`` / ``_swapped`` / ``_combined`` columns.
    """
    ok = schema.ParseStatus.OK
    labels = [decide_label(v.distribution) if v.status is ok else None for v in first]
    columns = {schema.CRITIQUE_LABEL: labels, schema.CRITIQUE_STATUS: [v.status.value for v in first]}
    columns.update(distribution_columns(first))
    if swapped is None:
        return columns
    back = [swap_distribution(v.distribution) if v.distribution else None for v in swapped]
    both_ok = [a.status is ok and b.status is ok for a, b in zip(first, swapped, strict=True)]
    combined = [combine_orders(a.distribution, b) if k else None for a, b, k in zip(first, back, both_ok, strict=True)]
    labels_back = [decide_label(b) if v.status is ok else None for v, b in zip(swapped, back, strict=True)]
    columns.update(
        {
            schema.CRITIQUE_LABEL: [decide_label(c) if c else None for c in combined],
            schema.CRITIQUE_STATUS: [
                ok.value if k else (a.status if a.status is not ok else b.status).value
                for a, b, k in zip(first, swapped, both_ok, strict=True)
            ],
            schema.CRITIQUE_LABEL_FIRST: labels,
            schema.CRITIQUE_LABEL_SWAPPED: labels_back,
            schema.CRITIQUE_STATUS_SWAPPED: [v.status.value for v in swapped],
            schema.CRITIQUE_CONSISTENT: [
                None if a is None or b is None else a == b for a, b in zip(labels, labels_back, strict=True)
            ],
            schema.CRITIQUE_DISTRIBUTION_SWAPPED: [_json(b) for b in back],
            schema.CRITIQUE_VERDICT_MASS_SWAPPED: [v.mass for v in swapped],
            schema.CRITIQUE_DISTRIBUTION_COMBINED: [_json(c) for c in combined],
            schema.CRITIQUE_ENTROPY: [entropy(c) if c else None for c in combined],
        }
    )
    return columns


@dataclass
class Judged:
    """What :meth:`hf_critic.critic.Critic._judge` returns: text verdicts, chosen raw texts, all samples (None when nothing was
    generated), the number of inputs from the cache, the probability verdicts (None under ``text``), the inputs
    whose chosen critique stopped at ``max_new_tokens`` (None when the backend does not say) and the cached critiques
    asked again, and the inputs whose read-outs came from the cache when critiques were generated too."""

    parsed: list[ParsedCritique]
    raws: list
    samples: list | None
    cached: int
    verdicts: list[ProbabilityVerdict] | None
    cut_off: int | None = None
    reasked: int = 0
    cached_readouts: int | None = None
    sample_parses: list | None = None  # per input, every sample's ParsedCritique (None: skipped): the text votes


def run_stats(parsed: list[ParsedCritique], truncated: list[bool], judged: Judged) -> RunStats:
    """The :class:`RunStats` of one call from its parsed critiques, the truncated inputs and the generation facts."""
    stats = RunStats(truncated=sum(truncated), cut_off=judged.cut_off, reasked=judged.reasked, cached=judged.cached)
    for p in parsed:
        stats.count(p.status)
    return stats


def probability_stats(
    verdicts: list[ProbabilityVerdict],
    truncated: list[bool],
    judged: Judged,
    text: RunStats,
    *,
    min_mass: float,
    keeps_text: bool,
) -> RunStats:
    """The :class:`RunStats` of one call whose verdicts are probability read-outs: their statuses, verdict mass and
    unseen verdicts, the generation facts of ``judged``, and (``keeps_text``: ``--verdict both``) the text verdicts'
    counts ``text``."""
    stats = RunStats(
        truncated=sum(truncated),
        cut_off=judged.cut_off,
        reasked=judged.reasked,
        cached=judged.cached,
        cached_readouts=judged.cached_readouts,
        verdict="probability",
        min_mass=min_mass,
    )
    for v in verdicts:
        stats.count(v.status)
        stats.unseen += v.unseen
        if v.status is not schema.ParseStatus.SKIPPED:
            stats.mass.append(v.mass)
    stats.text = text if keeps_text else None
    return stats


def as_dataset(records) -> datasets.Dataset:
    """``records`` (a Dataset, or a sequence of mappings) as a :class:`datasets.Dataset`."""
    if isinstance(records, datasets.Dataset):
        return records
    return datasets.Dataset.from_list([dict(r) for r in records])


def add_columns(dataset: datasets.Dataset, columns: dict[str, list]) -> datasets.Dataset:
    """``dataset`` plus ``columns`` (``{name: one value per row}``); a column it already has is replaced (re-grading a
    file that already holds critiques: the new ones replace the old)."""
    existing = [c for c in columns if c in dataset.column_names]
    if existing:
        dataset = dataset.remove_columns(existing)
    for name, values in columns.items():
        dataset = dataset.add_column(name, values)
    return dataset


def count_control_tokens(dataset: datasets.Dataset, own: Sequence[str] = ()) -> int:
    """Rows whose judged fields (question, response(s), reference) hold a chat control-token string: the common ones
    (:data:`~hf_critic.core.control_tokens.COMMON_CONTROL_TOKENS`) and the engine's ``own``."""
    tokens = (*COMMON_CONTROL_TOKENS, *own)
    fields = [f for f in schema.JUDGED_FIELDS if f in dataset.column_names]
    return sum(
        any(isinstance(row[f], str) and find_control_tokens(row[f], tokens) for f in fields)
        for row in dataset.select_columns(fields)
    )
