"""Decoding strategies for critique generation and self-consistency aggregation.

CritiqueLLM v1 §3.4 and v2 §4.3 / §4.7 compare greedy search, beam search, nucleus sampling and a
self-consistency variant adapted to evaluation: sample several critiques, take the mean score, and
return the explanation whose score is closest to that mean.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.errors import BadInputError
from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
from ..core.schema import ParseStatus
from ..parsing import ParsedCritique

STRATEGIES = ("greedy", "beam", "sampling", "self_consistency")


@dataclass(frozen=True)
class DecodingConfig:
    """How critiques are decoded (CritiqueLLM v1 §3.4, v2 §4.7).

    Each field's ``metadata["help"]`` says what it holds, with its unit and range; it is also the help text of
    the matching ``hf-critic`` option (:func:`hf_critic.commands.options.add_decoding_args`), and
    ``metadata["flag"]`` names the option where it is not ``--<field-name>``.

    Raises:
        ValueError: an unknown strategy, a budget / beam / sample count below 1, temperature <= 0 or top_p
            outside (0, 1].
    """

    strategy: str = field(
        default="greedy",
        metadata={
            "flag": "--decoding",
            "choices": STRATEGIES,
            "help": "decoding strategy: greedy search, beam search, nucleus sampling, or self-consistency (sample "
            "--num-samples critiques; mean score / majority label, the explanation closest to it)",
        },
    )
    max_new_tokens: int = field(default=512, metadata={"help": "generation budget per output, in tokens"})
    num_beams: int = field(default=4, metadata={"help": "beams of --decoding beam (CritiqueLLM uses 4)"})
    temperature: float = field(default=0.9, metadata={"help": "temperature of sampled generations, > 0"})
    top_p: float = field(default=0.9, metadata={"help": "nucleus mass of sampled generations, in (0, 1]"})
    num_samples: int = field(
        default=5, metadata={"help": "critiques sampled per input under --decoding self_consistency, >= 1"}
    )
    seed: int = field(
        default=0, metadata={"help": "seed set before each generation call, so sampling is reproducible"}
    )

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise BadInputError(f"decoding strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.max_new_tokens < 1 or self.num_beams < 1 or self.num_samples < 1:
            raise BadInputError("max_new_tokens, num_beams and num_samples must be >= 1")
        if self.temperature <= 0 or not 0 < self.top_p <= 1:
            raise BadInputError("temperature must be > 0 and top_p in (0, 1]")

    @property
    def num_return_sequences(self) -> int:
        """Generations per input: ``num_samples`` under self-consistency, else 1."""
        return self.num_samples if self.strategy == "self_consistency" else 1

    def generate_kwargs(self) -> dict:
        """Keyword arguments for ``transformers`` ``model.generate`` (and, mapped, for HTTP backends)."""
        kwargs = {"max_new_tokens": self.max_new_tokens, "num_return_sequences": self.num_return_sequences}
        if self.strategy == "greedy":
            kwargs.update(do_sample=False, num_beams=1)
        elif self.strategy == "beam":
            kwargs.update(do_sample=False, num_beams=self.num_beams, early_stopping=True)
        else:
            kwargs.update(do_sample=True, temperature=self.temperature, top_p=self.top_p, top_k=0)
        return kwargs


@dataclass(frozen=True)
class Aggregate:
    """The outcome of aggregating one input's sampled critiques.

    Attributes:
        parsed: the final verdict (score or label, dimensions, explanation); status UNPARSED when no
            sample parsed.
        chosen: index of the sample whose explanation and raw text are reported.
    """

    parsed: ParsedCritique
    chosen: int


def aggregate_scores(samples: Sequence[ParsedCritique]) -> Aggregate:
    """Self-consistency for pointwise grading (CritiqueLLM v1 §3.4).

    The final score is the mean of the parsed sample scores; the reported explanation is that of the
    sample whose score is closest to the mean (the first such sample on ties). Per-dimension scores are
    averaged over the parsed samples that have them. Unparsed samples are left out of the mean.

    Args:
        samples: parsed critiques of one input, >= 1.

    Returns:
        :class:`Aggregate` with a float score in the template's range, or status UNPARSED (score None,
        chosen = 0) when no sample parsed.

    Raises:
        ValueError: on an empty ``samples``.
    """
    if not samples:
        raise BadInputError("self-consistency needs at least one sample")
    ok = [(i, s) for i, s in enumerate(samples) if s.status is ParseStatus.OK and s.score is not None]
    if not ok:
        return Aggregate(_unparsed(samples), 0)
    mean = sum(s.score for _, s in ok) / len(ok)
    chosen = min(ok, key=lambda item: abs(item[1].score - mean))[0]
    dims: dict[str, list[float]] = {}
    for _, s in ok:
        for name, value in (s.dimensions or {}).items():
            dims.setdefault(name, []).append(value)
    dimensions = {name: sum(v) / len(v) for name, v in dims.items()} or None
    best = samples[chosen]
    return Aggregate(
        ParsedCritique(ParseStatus.OK, score=mean, dimensions=dimensions, explanation=best.explanation), chosen
    )


_VOTE_VALUE = {RESPONSE_1_WINS: 1.0, TIE: 0.0, RESPONSE_2_WINS: -1.0}


def aggregate_labels(samples: Sequence[ParsedCritique]) -> Aggregate:
    """Self-consistency for pairwise comparison: majority vote over the parsed sample labels.

    When two or more labels share the top count, the tie is broken by the mean vote with
    response 1 wins = +1, tie = 0, response 2 wins = -1: a positive mean gives "response 1", a negative
    one "response 2", exactly 0 gives "tie". So an even split between the two responses is a tie, and
    e.g. votes (1, 1, tie, tie, 2) give response 1. The reported explanation is the first sample carrying
    the final label (or the first parsed sample when the tie-break picks a label nobody voted for).

    Args:
        samples: parsed critiques of one input, >= 1.

    Returns:
        :class:`Aggregate` with label 0 / 1 / 2, or status UNPARSED (label None) when no sample parsed.

    Raises:
        ValueError: on an empty ``samples``.
    """
    if not samples:
        raise BadInputError("self-consistency needs at least one sample")
    votes = [(i, s.label) for i, s in enumerate(samples) if s.status is ParseStatus.OK and s.label is not None]
    if not votes:
        return Aggregate(_unparsed(samples), 0)
    counts = Counter(label for _, label in votes).most_common()
    leaders = [label for label, count in counts if count == counts[0][1]]
    if len(leaders) == 1:
        label = leaders[0]
    else:
        mean = sum(_VOTE_VALUE[label] for _, label in votes) / len(votes)
        label = TIE if math.isclose(mean, 0.0, abs_tol=1e-12) else (RESPONSE_1_WINS if mean > 0 else RESPONSE_2_WINS)
    chosen = next((i for i, lab in votes if lab == label), votes[0][0])
    return Aggregate(ParsedCritique(ParseStatus.OK, label=label, explanation=samples[chosen].explanation), chosen)


def _unparsed(samples: Sequence[ParsedCritique]) -> ParsedCritique:
    # Keep the most specific failure: a score out of range says more than no score at all.
    statuses = {s.status for s in samples}
    status = ParseStatus.OUT_OF_RANGE if ParseStatus.OUT_OF_RANGE in statuses else ParseStatus.UNPARSED
    return ParsedCritique(status, explanation=samples[0].explanation)
