"""Verdicts read from the critic's probabilities instead of parsed from its text.

A critic that does not write its verdict in the requested format still holds one: after the template's verdict
prefix (``Rating: [[``, ``[[``, ``{'Overall Score':``) the model's next-token distribution over the allowed verdict
strings is its judgment. This is G-Eval's probability-weighted scoring (Liu et al., 2023, §2) and the distributional
judgment of Wang et al. (2025, arXiv:2503.03064, §3): the expected score of the distribution is the pointwise
verdict, and in pairwise comparison the distributions of both presentation orders are averaged before deciding.

What lives here (backends only run forward passes; everything else is plain maths):

* :class:`VerdictReadout`: the probabilities of the allowed verdicts, their mass, the renormalised distribution and
  its entropy;
* :class:`TokenTrie`: exact probabilities of multi-token verdicts (``"10"`` = ``"1"`` then ``"0"``) from per-node
  next-token log-probabilities, with and without a leading space;
* :func:`walk_top_logprobs`: the same over servers that only return the top-k next tokens as strings;
* :func:`expected_score`, :func:`combine_orders`, :func:`swap_distribution`, :func:`decide_label`.

**Exclusive verdicts.** Where one allowed verdict's token path is a proper prefix of another's (``"1"`` and
``"10"``), the shorter verdict gets only the mass that does not continue into the longer one:
``P("1") = P("1") * (1 - P("0" | "1"))`` and ``P("10") = P("1") * P("0" | "1")``. So the probabilities of all allowed
verdicts sum to at most 1, and their sum, the **verdict mass**, says how much of the model's next-token mass follows
the format at all.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
from ..core.schema import ParseStatus

__all__ = [
    "EXPLANATION_MODES",
    "VERDICT_MODES",
    "TokenTrie",
    "VerdictProbabilityError",
    "VerdictReadout",
    "ProbabilityVerdict",
    "aggregate_readouts",
    "resolve_verdict",
    "VerdictMode",
    "VerdictPlan",
    "combine_orders",
    "decide_label",
    "expected_score",
    "swap_distribution",
    "top_k_table",
    "walk_top_logprobs",
]

#: ``--verdict``: parse the generated text, read the probabilities, or both (text kept in its own columns).
VERDICT_MODES = ("text", "probability", "both")
#: ``--explanation``: ``none`` = verdict prefix right after the generation prompt (one prefill, no decoding);
#: ``first`` = generate the critique, cut its own verdict, append the prefix after the explanation.
EXPLANATION_MODES = ("none", "first")
#: What ``verdict="auto"`` picks for the embedded default critic; any other model gets ``text``. Measured (README,
#: "Results on real data"; bfloat16): the direct read-out (``none``) beat the read-out after the model's own critique
#: (``first``) on MT-Bench turn 1 (Pearson 0.296 vs 0.274 with GPT-4), Vicuna-Bench (0.471 vs 0.408) and 200 Auto-J
#: Eval-P pairs (both orders combined: agreement 37.5 vs 29.5), and it needs no decoding. The 135M model's own
#: explanations mislead its verdict; ``--verdict both`` still writes them.
AUTO_EMBEDDED = ("probability", "none")
#: Default ``--min-verdict-mass``: rows whose verdict mass is below it get status ``low_mass`` and no verdict. 0.01
#: flags only read-outs where 99% of the next-token mass is outside the format. Measured with the embedded critic:
#: the direct read-out's mass is at least 0.55 (MT-Bench) / 0.67 (Vicuna-Bench) per row and 0.016 per pair order on
#: Auto-J Eval-P (median 0.21), so no row is lost; and its pairwise first-order accuracy does not rise with the mass
#: (terciles 0.38 / 0.33 / 0.30), so a higher bar would discard rows without making the rest more accurate.
DEFAULT_MIN_VERDICT_MASS = 0.01


class VerdictMode(str, enum.Enum):
    """Where a critic's verdicts come from (``--verdict``; ``auto`` is resolved by :func:`resolve_verdict`)."""

    TEXT = "text"  # parsed from the generated critique
    PROBABILITY = "probability"  # read from the next-token distribution after the verdict prefix
    BOTH = "both"  # probability, with the text verdict kept in its own columns
    REWARD = "reward"  # an order-free reward critic: a reward model (hf_critic.critic.rewards)


class VerdictPlan(NamedTuple):
    """A critic's verdict mode and explanation mode, resolved once; the critic asks it what to do, never compares
    mode strings. Equal to the plain ``(verdict, explanation)`` tuple, e.g. ``("probability", "none")``.

    Attributes:
        mode: the :class:`VerdictMode`.
        explanation: ``"none"`` (the verdict prefix right after the prompt) or ``"first"`` (the critique first).
    """

    mode: VerdictMode
    explanation: str

    @property
    def generates(self) -> bool:
        """A critique is generated: text verdicts, or a probability read-out after the critique's explanation."""
        return self.mode in (VerdictMode.TEXT, VerdictMode.BOTH) or self.explanation == "first"

    @property
    def reads_probabilities(self) -> bool:
        """Verdicts are read from the next-token distribution (``probability`` or ``both``)."""
        return self.mode in (VerdictMode.PROBABILITY, VerdictMode.BOTH)

    @property
    def parses_text(self) -> bool:
        """The generated critique's own verdict is parsed (``text`` or ``both``)."""
        return self.mode in (VerdictMode.TEXT, VerdictMode.BOTH)

    @property
    def keeps_text(self) -> bool:
        """The text verdicts go in their own ``critique_text_*`` columns beside the probability ones (``both``)."""
        return self.mode is VerdictMode.BOTH


def resolve_verdict(verdict: str, explanation: str | None, *, embedded: bool) -> VerdictPlan:
    """The verdict plan a critic runs with.

    Args:
        verdict: one of :data:`VERDICT_MODES` or ``"auto"`` (:data:`AUTO_EMBEDDED` for the embedded default critic,
            ``text`` for any other model).
        explanation: one of :data:`EXPLANATION_MODES`, or None: what ``auto`` picks, else ``first``.
        embedded: the critic is the embedded default model.

    Returns:
        The :class:`VerdictPlan` (equal to the tuple ``(verdict, explanation)``).

    Raises:
        ValueError: an unknown mode.
    """
    if verdict == "auto":
        verdict, picked = AUTO_EMBEDDED if embedded else ("text", "first")
        explanation = explanation or picked
    if verdict not in VERDICT_MODES:
        raise BadInputError(f"verdict must be 'auto' or one of {VERDICT_MODES}, got {verdict!r}")
    explanation = explanation or "first"
    if explanation not in EXPLANATION_MODES:
        raise BadInputError(f"explanation must be one of {EXPLANATION_MODES}, got {explanation!r}")
    return VerdictPlan(VerdictMode(verdict), explanation)


class VerdictProbabilityError(BadInputError):
    """A backend that cannot return next-token probabilities was asked for ``--verdict probability`` / ``both``."""


@dataclass(frozen=True)
class VerdictReadout:
    """The probabilities of the allowed verdicts at one read-out position.

    Attributes:
        probabilities: verdict string -> probability in [0, 1], exclusive events (see the module docstring), not
            renormalised; every allowed verdict is a key.
        unseen: verdicts whose probability the backend could not see (outside a server's top-k); they count as 0,
            i.e. as missing mass.
    """

    probabilities: Mapping[str, float]
    unseen: tuple[str, ...] = field(default=())

    @property
    def mass(self) -> float:
        """Probability on the allowed verdicts before renormalising, in [0, 1]: how well the model follows the format."""
        return float(min(1.0, sum(self.probabilities.values())))

    @property
    def distribution(self) -> dict[str, float]:
        """The probabilities renormalised to sum to 1 (all zeros when the mass is 0)."""
        total = sum(self.probabilities.values())
        return {v: (p / total if total > 0 else 0.0) for v, p in self.probabilities.items()}

    @property
    def entropy(self) -> float:
        """Shannon entropy of :attr:`distribution` in nats, in [0, log(number of verdicts)]."""
        return entropy(self.distribution)


def entropy(distribution: Mapping[str, float]) -> float:
    """``-sum p log p`` in nats over a renormalised distribution (terms with p = 0 contribute 0)."""
    return float(-sum(p * math.log(p) for p in distribution.values() if p > 0))


def expected_score(distribution: Mapping[str, float], values: Mapping[str, float]) -> float:
    """``sum_v p(v) * value(v)``: the probability-weighted score (G-Eval §2; Wang et al. 2025 §3.1).

    Args:
        distribution: verdict -> probability, summing to 1.
        values: verdict -> numeric score.

    Raises:
        ValueError: an empty distribution or a verdict without a value.
    """
    if not distribution or abs(sum(distribution.values()) - 1.0) > 1e-6:
        raise BadInputError("expected_score needs a distribution that sums to 1")
    return float(sum(p * float(values[v]) for v, p in distribution.items()))


def swap_distribution(distribution: Mapping[str, float]) -> dict[str, float]:
    """Map a pairwise distribution judged on the swapped pair back to the original order.

    Args:
        distribution: keys ``"response_1"``, ``"response_2"``, ``"tie"`` (:data:`hf_critic.core.labels.LABEL_NAMES`).

    Returns:
        The same probabilities with the two responses' keys exchanged.
    """
    names = {
        LABEL_NAMES[RESPONSE_1_WINS]: LABEL_NAMES[RESPONSE_2_WINS],
        LABEL_NAMES[RESPONSE_2_WINS]: LABEL_NAMES[RESPONSE_1_WINS],
    }
    return {names.get(k, k): p for k, p in distribution.items()}


def combine_orders(*distributions: Mapping[str, float]) -> dict[str, float]:
    """Average distributions over the same keys (both presentation orders, Wang et al. 2025 §3.2; or the samples of
    self-consistency).

    Args:
        distributions: >= 1 mappings with the same keys, each summing to 1; a swapped order must already be mapped
            back (:func:`swap_distribution`).

    Raises:
        ValueError: no distributions, or different keys.
    """
    if not distributions:
        raise BadInputError("combine_orders needs at least one distribution")
    keys = list(distributions[0])
    if any(sorted(d) != sorted(keys) for d in distributions):
        raise BadInputError("distributions to combine must have the same verdicts")
    return {k: sum(d[k] for d in distributions) / len(distributions) for k in keys}


def decide_label(distribution: Mapping[str, float]) -> int:
    """The pairwise label of highest probability (0 = response 1, 1 = response 2, 2 = tie).

    Exact ties between the highest probabilities go to the tie label when it is among them, else to response 1
    (a documented, deterministic rule; with probabilities read from a model exact ties practically never occur).
    """
    codes = {name: code for code, name in LABEL_NAMES.items()}
    best = max(distribution.values())
    leaders = [codes[k] for k, p in distribution.items() if p == best]
    return TIE if TIE in leaders else min(leaders)


@dataclass(frozen=True)
class ProbabilityVerdict:
    """One input's verdict from its read-out(s) (one per sampled critique under self-consistency).

    Attributes:
        status: ``OK``, or ``LOW_MASS`` when the mean verdict mass is below the threshold (then no score).
        distribution: the mean of the samples' renormalised distributions; keys are the verdict strings
            (pointwise) or :data:`~hf_critic.core.labels.LABEL_NAMES` values (pairwise). None when no sample has mass.
        mass: mean verdict mass over the samples, in [0, 1].
        entropy: entropy of :attr:`distribution` in nats (None with it).
        score: pointwise: the mean of the samples' expected scores (self-consistency under probabilities); None
            for pairwise and for ``LOW_MASS``.
        unseen: allowed verdicts outside a server's top-k, summed over the samples.
    """

    status: ParseStatus
    distribution: dict[str, float] | None
    mass: float
    entropy: float | None
    score: float | None = None
    unseen: int = 0


def aggregate_readouts(
    readouts: Sequence[VerdictReadout], values: Mapping[str, float], *, kind: str, min_mass: float
) -> ProbabilityVerdict:
    """Turn one input's read-outs into its verdict.

    Args:
        readouts: >= 1 read-outs of the same input (several under self-consistency).
        values: verdict string -> score (``kind="score"``) or label 0 / 1 / 2 (``kind="label"``).
        kind: ``"score"`` or ``"label"``.
        min_mass: rows whose mean verdict mass is below it get ``LOW_MASS``: counted, never scored.

    Raises:
        ValueError: no read-outs.
    """
    if not readouts:
        raise BadInputError("aggregate_readouts needs at least one read-out")
    mass = float(np.mean([r.mass for r in readouts]))
    unseen = sum(len(r.unseen) for r in readouts)
    usable = [r.distribution for r in readouts if r.mass > 0]
    if kind == "label":
        usable = [{LABEL_NAMES[int(values[v])]: p for v, p in d.items()} for d in usable]
    distribution = combine_orders(*usable) if usable else None
    h = entropy(distribution) if distribution else None
    if mass < min_mass or not usable:
        return ProbabilityVerdict(ParseStatus.LOW_MASS, distribution, mass, h, None, unseen)
    score = float(np.mean([expected_score(d, values) for d in usable])) if kind == "score" else None
    return ProbabilityVerdict(ParseStatus.OK, distribution, mass, h, score, unseen)


# ------------------------------------------------------------------------------------------------ token trie
class TokenTrie:
    """The allowed verdicts as token paths (with and without a leading space), for exact multi-token read-outs.

    The backend computes the next-token log-probabilities at the root (the read-out position) and at every internal
    node (:attr:`fed`: the nodes it has to feed through the model, all in one forward pass over the KV cache of the
    prompt); :meth:`probabilities` turns them into :class:`VerdictReadout`\\ s.

    Args:
        paths: verdict -> its token-id sequences (one per spelling, e.g. ``"8"`` and ``" 8"``); identical sequences
            of one verdict are merged.

    Attributes:
        tokens, parents: per node (index 0 = root, token -1), its token id and parent index.
        fed: indices of the internal non-root nodes, parents before children.
        source: per node, the position of the distribution its token is read from: 0 = the root's, ``1 + j`` = the
            one computed at ``fed[j]``.

    Raises:
        ValueError: an empty path, or two verdicts with the same token path.
    """

    def __init__(self, paths: Mapping[str, Sequence[Sequence[int]]]):
        self.verdicts = tuple(paths)
        self.tokens, self.parents = [-1], [-1]
        children: list[dict[int, int]] = [{}]
        self._ends: dict[int, str] = {}
        for verdict, spellings in paths.items():
            for path in {tuple(p) for p in spellings}:
                if not path:
                    raise BadInputError(f"verdict {verdict!r} has an empty token path")
                node = 0
                for token in path:
                    if token not in children[node]:
                        children[node][token] = len(self.tokens)
                        self.tokens.append(int(token))
                        self.parents.append(node)
                        children.append({})
                    node = children[node][token]
                if self._ends.get(node, verdict) != verdict:
                    raise BadInputError(f"verdicts {self._ends[node]!r} and {verdict!r} have the same token path")
                self._ends[node] = verdict
        self.children = [tuple(c.values()) for c in children]
        self.fed = [n for n in range(1, len(self.tokens)) if self.children[n]]
        position = {n: 1 + j for j, n in enumerate(self.fed)}
        self.source = [0] + [
            0 if self.parents[n] == 0 else position[self.parents[n]] for n in range(1, len(self.tokens))
        ]

    @property
    def depth(self) -> list[int]:
        """Depth of every node (root 0)."""
        depth = [0] * len(self.tokens)
        for n in range(1, len(self.tokens)):
            depth[n] = depth[self.parents[n]] + 1
        return depth

    def ancestors(self) -> np.ndarray:
        """Boolean ``[len(fed), len(fed)]``: ``[i, j]`` is True when fed node j is fed node i or one of its ancestors
        (the tree attention mask among fed tokens)."""
        index = {n: j for j, n in enumerate(self.fed)}
        mask = np.zeros((len(self.fed), len(self.fed)), dtype=bool)
        for i, n in enumerate(self.fed):
            while n != 0:
                mask[i, index[n]] = True
                n = self.parents[n]
        return mask

    def probabilities(self, token_logprobs: np.ndarray) -> list[VerdictReadout]:
        """Verdict probabilities from each node's token log-probability.

        Args:
            token_logprobs: ``[batch, nodes]``; column ``n`` (n >= 1) is ``log P(tokens[n] | path to parents[n])``,
                read from the distribution :attr:`source` ``[n]`` names; column 0 is ignored.

        Returns:
            One readout per row; a verdict's probability sums its spellings, each the product of its path's token
            probabilities, times ``1 - P(continuing into a longer verdict)`` when its path is internal.
        """
        lp = np.asarray(token_logprobs, dtype=np.float64)
        path = np.zeros_like(lp)
        for n in range(1, len(self.tokens)):  # parents come before children
            path[:, n] = path[:, self.parents[n]] + lp[:, n]
        result = np.zeros((lp.shape[0], len(self.verdicts)))
        column = {v: i for i, v in enumerate(self.verdicts)}
        for node, verdict in self._ends.items():
            stop = 1.0 - sum(np.exp(lp[:, c]) for c in self.children[node]) if self.children[node] else 1.0
            result[:, column[verdict]] += np.exp(path[:, node]) * np.clip(stop, 0.0, 1.0)
        return [VerdictReadout(dict(zip(self.verdicts, map(float, row), strict=True))) for row in result]


def verdict_spellings(verdict: str) -> tuple[str, ...]:
    """The spellings scored for one verdict: as written and with one leading space (tokenizers that glue the space
    to the next word write ``" 8"`` after ``Rating:``)."""
    return (verdict, " " + verdict) if not verdict.startswith(" ") else (verdict,)


# ------------------------------------------------------------------------------------------------ top-k servers
#: One next-token alternative as a server reports it: ``{"token": str, "logprob": float}`` plus, where the server
#: sends them, ``"bytes"`` (the token's UTF-8 bytes; OpenAI, llama.cpp) and ``"id"`` (llama.cpp); or a
#: ``(token, logprob)`` / ``(token, logprob, id)`` tuple.
TopEntry = Mapping[str, Any] | tuple


def top_k_table(top: Mapping[str, float] | Iterable[TopEntry]) -> dict[str, float]:
    """``{text: log-probability}`` of the next token's text from a server's top-k alternatives, keeping only the
    tokens that a verdict walk can follow (:func:`walk_top_logprobs`).

    * The text is the token's ``bytes`` decoded as UTF-8 when the server sends them; a token whose bytes are not
      whole UTF-8 characters (llama.cpp writes ``" \xe2"`` as ``" "`` and a partial emoji as ``""``) is dropped:
      its string is not its text, and a position cannot be asked for by a partial character.
    * A token with an empty text (special tokens such as ``<|im_end|>``, which servers write as ``""``) is dropped:
      it adds nothing to the text, so it cannot lead to a verdict (after it the turn ends).
    * The same token listed twice counts once. A token is the same when its ``id`` is, else (no ids) when its text
      is: then the larger log-probability is kept, never the sum. Distinct ids with the same text are distinct
      tokens that write the same next text: their probabilities add.

    Args:
        top: a ``{token: log-probability}`` mapping (empty tokens are still dropped) or the server's entries
            (:data:`TopEntry`), in any order.

    Returns:
        Non-empty text -> log-probability that the next token writes exactly that text.
    """
    if isinstance(top, Mapping):
        return {str(t): float(lp) for t, lp in top.items() if t}
    by_token: dict[Any, tuple[str, float]] = {}
    for entry in top:
        if isinstance(entry, Mapping):
            text, lp, token_id, raw = entry["token"], float(entry["logprob"]), entry.get("id"), entry.get("bytes")
        else:
            text, lp, token_id, raw = entry[0], float(entry[1]), (entry[2] if len(entry) > 2 else None), None
        if raw is not None:
            try:
                text = bytes(raw).decode("utf-8")
            except (UnicodeDecodeError, ValueError, TypeError):
                continue  # part of a character: not a text the walk can extend or send back
        if not text:
            continue
        key = ("id", token_id) if token_id is not None else ("text", text)
        if key not in by_token or lp > by_token[key][1]:
            by_token[key] = (text, lp)
    table: dict[str, float] = {}
    for text, lp in by_token.values():
        table[text] = float(np.logaddexp(table[text], lp)) if text in table else lp
    return table


def walk_top_logprobs(
    top_logprobs: Callable[[Sequence[tuple[int, str]]], Sequence[Mapping[str, float] | Iterable[TopEntry]]],
    num_rows: int,
    verdicts: Sequence[str],
) -> list[VerdictReadout]:
    """Verdict probabilities from a server that returns only the top-k next tokens as strings (OpenAI ``logprobs`` +
    ``top_logprobs``, llama.cpp ``n_probs``).

    Walks the verdict strings (and their leading-space spellings) token by token: a top-k token that makes the text
    a proper prefix of a spelling is extended with one more request; one that completes a spelling (possibly
    followed by characters that cannot continue a verdict, such as ``"]"``) ends it; any other token (empty special
    tokens, partial characters, whitespace or words that lead to no verdict) contributes nothing and is not
    extended (:func:`top_k_table`). Every extension makes the text longer and no longer than the longest spelling,
    so the walk ends after at most that many rounds of requests. Each position is asked once: two token paths that
    reach the same text (``" "`` then ``"1"``, and ``" 1"`` in one token) are distinct events, both counted, and the
    second reuses the first's answer. Exclusive verdicts as in the module docstring. Verdicts that never appear
    in a top-k list get probability 0 and are listed as unseen: missing mass.

    Args:
        top_logprobs: ``[(row, text already appended after the row's read-out position), ...]`` -> the next token's
            top-k for each, in order: ``{token string: log-probability}`` or the server's entries
            (:data:`TopEntry`, with ``bytes`` and ``id`` where it sends them).
        num_rows: rows to read out.
        verdicts: the allowed verdict strings.

    Returns:
        One :class:`VerdictReadout` per row.
    """
    spellings = {s: v for v in verdicts for s in verdict_spellings(v)}
    longest = max((len(s) for s in spellings), default=0)
    probs = np.zeros((num_rows, len(verdicts)))
    column = {v: i for i, v in enumerate(verdicts)}
    frontier = {(row, ""): 0.0 for row in range(num_rows)}  # (row, text so far) -> log-prob of reaching the text
    tables: dict[tuple[int, str], dict[str, float]] = {}  # each position is asked once
    for _ in range(longest):  # each round makes every text at least one character longer
        if not frontier:
            break
        positions = list(frontier)
        asked = [p for p in positions if p not in tables]
        if asked:
            tables.update(zip(asked, map(top_k_table, top_logprobs(asked)), strict=True))
        grown: dict[tuple[int, str], float] = {}
        for row, text in positions:
            logp = frontier[row, text]
            continuing = 0.0  # mass that leaves ``text`` for another verdict
            for token, token_lp in tables[row, text].items():
                longer = text + token
                if _is_prefix(longer, spellings):
                    key = (row, longer)
                    grown[key] = float(np.logaddexp(grown[key], logp + token_lp)) if key in grown else logp + token_lp
                    continuing += math.exp(token_lp)
                    continue
                spelling = longer if longer in spellings else _completed(longer, spellings)
                if spelling is None or spelling == text:  # not a verdict, or ``text`` itself ending (below)
                    continue
                probs[row, column[spellings[spelling]]] += math.exp(logp + token_lp)
                continuing += math.exp(token_lp)
            if text in spellings:  # a verdict that a longer one extends keeps the mass that does not continue
                probs[row, column[spellings[text]]] += math.exp(logp) * max(0.0, 1.0 - continuing)
        frontier = grown
    return [
        VerdictReadout(
            dict(zip(verdicts, map(float, row), strict=True)),
            tuple(v for v, p in zip(verdicts, row, strict=True) if p == 0),
        )
        for row in probs
    ]


def _is_prefix(text: str, spellings: Mapping[str, str]) -> bool:
    return any(s != text and s.startswith(text) for s in spellings)


def _completed(text: str, spellings: Mapping[str, str]) -> str | None:
    """The spelling ``text`` completes when it runs on with a character that cannot continue a verdict."""
    for s in sorted(spellings, key=len, reverse=True):
        if text.startswith(s) and len(text) > len(s) and not text[len(s)].isalnum():
            return s
    return None
