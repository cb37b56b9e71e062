"""Length and position: the baselines a critic must beat, and how much of its agreement is length or position.

Human and GPT-4 judges both favour longer answers (Zheng et al., 2023, MT-Bench, §3.3 "verbosity bias"; Dubois et
al., 2024, "Length-Controlled AlpacaEval"), and LLM judges favour the answer shown first (Wang et al., 2023, "Large
Language Models are not Fair Evaluators"). A critic's agreement with humans means something only beside what length
or position alone achieve on the same rows:

* :func:`pairwise_baselines`: "always response 1", the label prior (the most frequent human label,
  :func:`label_prior`: the one home of that baseline), "longer wins" and "shorter wins" as pairwise verdicts, scored as the critic is (first-order agreement, Cohen's kappa, the
  two-way accuracy); :func:`length_verdicts` gives the length verdicts themselves and :func:`longer_wins` "longer
  wins" as a critic with a confidence (the one home of the length baseline);
* :func:`pointwise_length_baseline`: the answer's length as its score (text-level and row-level correlation,
  within-question accuracy);
* :func:`length_tercile_agreement`: the critic's agreement within terciles of the length ratio of the two answers
  (similar lengths, rather different, very different);
* :func:`length_controlled_agreement`: a logistic regression of the human preference on the critic's decision and
  the length difference, as AlpacaEval's length-controlled win rate is built (Dubois et al., 2024, §3: a GLM with a
  ``tanh``-squashed, standardised length difference; the length-controlled figure is the model's prediction with
  the length term set to zero): the critic's coefficient with and without length in the model, and the agreement
  the critic keeps once length is accounted for;
* :func:`positional_preference`: the share of verdicts naming the response shown first, in each order.

Lengths are counted in words (whitespace-separated), as ``scripts/length_baseline.py`` counted them.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import special, stats

from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, RESPONSE_1_WINS, RESPONSE_2_WINS, TIE, normalize_labels
from ..selective.logistic import fit_logistic
from .agreement import pairwise_agreement, pairwise_credits
from .correlation import critique_correlation

__all__ = [
    "LENGTH_TIES",
    "label_prior",
    "length_credits",
    "length_confidence",
    "length_controlled_agreement",
    "length_tercile_agreement",
    "length_verdicts",
    "longer_wins",
    "pairwise_baselines",
    "pointwise_length_baseline",
    "positional_preference",
    "response_lengths",
]


def response_lengths(texts: Sequence[str | None]) -> np.ndarray:
    """Words (whitespace-separated) of each text, shape ``(n,)`` float64; None counts 0 words."""
    return np.asarray([len((t or "").split()) for t in texts], dtype=np.float64)


def length_verdicts(
    response_1: Sequence[str | None] | np.ndarray,
    response_2: Sequence[str | None] | np.ndarray,
    *,
    longer: bool = True,
) -> np.ndarray:
    """The "longer wins" (or, ``longer=False``, "shorter wins") verdict of each pair.

    Args:
        response_1: the first response's text, or its length, shape ``(n,)``.
        response_2: the second response's text or length, shape ``(n,)``.
        longer: True: the longer response wins; False: the shorter one.

    Returns:
        int64 label codes ``(n,)`` of :mod:`hf_critic.core.labels`: 0 = response 1, 1 = response 2, 2 = tie (equal lengths).

    Raises:
        ValueError: different lengths.
    """
    a, b = _lengths(response_1), _lengths(response_2)
    if len(a) != len(b):
        raise BadInputError(f"response_1 and response_2 differ in length: {len(a)} != {len(b)}")
    diff = a - b if longer else b - a
    return np.where(diff > 0, RESPONSE_1_WINS, np.where(diff < 0, RESPONSE_2_WINS, TIE)).astype(np.int64)


def length_confidence(
    response_1: Sequence[str | None] | np.ndarray, response_2: Sequence[str | None] | np.ndarray
) -> np.ndarray:
    """The confidence of the "longer wins" verdict: ``0.5 + 0.5 * |l1 - l2| / max(l1, l2)`` (lengths in words).

    It grows monotonically with the relative length difference: 0.5 for equal lengths (the verdict is then a tie),
    1.0 when one response is empty and the other is not. This makes "longer wins" a critic with a confidence, so its
    risk-coverage (:mod:`hf_critic.selective.risk_coverage`) and a jury that counts length as a member
    (:mod:`hf_critic.critics.baselines`, :mod:`hf_critic.critics.jury`) can be measured like any critic's.

    Args:
        response_1: the first response's text or length, shape ``(n,)``.
        response_2: the second response's text or length, shape ``(n,)``.

    Returns:
        float64 confidences in [0.5, 1], shape ``(n,)``.

    Raises:
        ValueError: different lengths, or a negative length.
    """
    a, b = _lengths(response_1), _lengths(response_2)
    if len(a) != len(b):
        raise BadInputError(f"response_1 and response_2 differ in length: {len(a)} != {len(b)}")
    if (a < 0).any() or (b < 0).any():
        raise BadInputError("response lengths must be >= 0")
    longest = np.maximum(a, b)
    relative = np.divide(np.abs(a - b), longest, out=np.zeros_like(longest), where=longest > 0)
    return 0.5 + 0.5 * relative


#: How :func:`longer_wins` decides pairs of equal length: a tie verdict, or response 1 (a verdict that never says tie).
LENGTH_TIES = ("tie", "response_1")


def longer_wins(
    response_1: Sequence[str | None] | np.ndarray,
    response_2: Sequence[str | None] | np.ndarray,
    *,
    ties: str = "tie",
) -> tuple[np.ndarray, np.ndarray]:
    """ "The longer response wins" as a critic with a confidence: the one home of the length baseline that the
    ``longer-wins`` critic of cascades and juries, the meta-evaluation's risk-coverage baseline and the held-out dev
    score all judge with (MT-Bench's verbosity bias, Zheng et al., 2023, §3.3).

    Args:
        response_1: the first response's text or length in words, shape ``(n,)``.
        response_2: the second response's text or length, shape ``(n,)``.
        ties: pairs of equal length: ``"tie"`` (a tie verdict at confidence 0.5) or ``"response_1"`` (response 1 wins:
            the rule of the held-out dev score and ``scripts/length_baseline.py``, which never say tie).

    Returns:
        ``(labels, confidences)``: int64 label codes of :mod:`hf_critic.core.labels` (:func:`length_verdicts`) and float64
        confidences in [0.5, 1] (:func:`length_confidence`), shape ``(n,)`` each.

    Raises:
        ValueError: an unknown ``ties``, different lengths, or a negative length.
    """
    if ties not in LENGTH_TIES:
        raise BadInputError(f"ties must be one of {', '.join(LENGTH_TIES)}, got {ties!r}")
    labels = length_verdicts(response_1, response_2)
    if ties == "response_1":
        labels = np.where(labels == TIE, RESPONSE_1_WINS, labels).astype(np.int64)
    return labels, length_confidence(response_1, response_2)


def _lengths(values) -> np.ndarray:
    """Texts -> word counts; numbers stay as they are."""
    values = list(values) if not isinstance(values, np.ndarray) else values
    if isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
        return values.astype(np.float64)
    if len(values) and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=np.float64)
    return response_lengths(values)


_BASELINE_KEYS = ("first_order_agreement", "cohen_kappa", "two_way_accuracy")


def label_prior(references: Sequence[Any] | np.ndarray, *, name: str = "references") -> tuple[int, float]:
    """The label prior: the most frequent human label and its share, the baseline that answers it on every pair (the
    one home of that baseline: :func:`pairwise_baselines`, the risk-coverage baselines and the ``label-prior`` critic
    of cascades and juries all take it from here).

    Args:
        references: the human labels, shape ``(n,)``, any spelling :func:`~hf_critic.core.labels.normalize_labels`
            reads; pairs without one are left out.
        name: what to call ``references`` in error messages.

    Returns:
        ``(label, share)``: the label code of :mod:`hf_critic.core.labels` (equal counts go to the lower code:
        response 1, then response 2, then tie) and its share among the labelled pairs, in (0, 1]; ``(0, nan)`` when
        no pair has a label.

    Raises:
        ValueError: an unknown label.
    """
    ref = normalize_labels(references, name=name)
    counts = np.bincount(ref[ref >= 0], minlength=3)
    prior, total = int(np.argmax(counts)), int(counts.sum())
    return prior, float(counts[prior] / total) if total else math.nan


def pairwise_baselines(
    references: Sequence[Any] | np.ndarray,
    response_1: Sequence[str | None] | np.ndarray | None = None,
    response_2: Sequence[str | None] | np.ndarray | None = None,
    *,
    two_way: str = "auto",
) -> dict[str, Any]:
    """Verdicts that need no critic, scored on the same pairs as the critic: the floor a critic must beat.

    ``always_response_1`` answers "response 1" on every pair; ``label_prior`` answers the most frequent human label;
    ``longer_wins`` / ``shorter_wins`` (with the texts) answer the longer / shorter response, a tie on equal lengths
    (:func:`length_verdicts`). Each is scored by :func:`~hf_critic.meta_eval.agreement.pairwise_agreement`: first-order
    agreement, Cohen's kappa and, by the same rule as the critic (``two_way``), the two-way accuracy (a tie verdict
    counts half). This is the public function behind ``scripts/length_baseline.py``.

    Args:
        references: the human labels, shape ``(n,)``, any spelling :func:`~hf_critic.core.labels.normalize_labels` reads;
            pairs without one are left out.
        response_1: the first responses' texts (or word counts), shape ``(n,)``; None: no length baselines.
        response_2: the second responses' texts (or word counts), shape ``(n,)``.
        two_way: ``auto`` (when the human labels have no tie), ``on`` or ``off``, as in
            :func:`~hf_critic.meta_eval.agreement.pairwise_agreement`.

    Returns:
        ``{"always_response_1": {...}, "label_prior": {..., "label"}, "longer_wins": {...}?, "shorter_wins": {...}?,
        "n": pairs with a human label}``; each entry has ``first_order_agreement`` (in [0, 1]), ``cohen_kappa`` (in
        [-1, 1]; 0 for a constant answer) and, with the two-way figures, ``two_way_accuracy`` and ``two_way_n``.

    Raises:
        ValueError: different lengths or an unknown label.
    """
    ref = normalize_labels(references, name="references")
    n = len(ref)
    prior = label_prior(ref[ref >= 0])[0]
    verdicts = {"always_response_1": np.full(n, RESPONSE_1_WINS), "label_prior": np.full(n, prior)}
    if response_1 is not None and response_2 is not None:
        verdicts["longer_wins"] = length_verdicts(response_1, response_2)
        verdicts["shorter_wins"] = length_verdicts(response_1, response_2, longer=False)
    out: dict[str, Any] = {}
    gold = np.where(ref >= 0, ref, np.nan)  # the missing labels as missing, not as the code -1 (no label value)
    for name, codes in verdicts.items():
        r = pairwise_agreement(codes, gold, two_way=two_way)
        out[name] = {k: r[k] for k in (*_BASELINE_KEYS, "two_way_n") if k in r}
    out["label_prior"]["label"] = LABEL_NAMES[prior]
    out["n"] = int((ref >= 0).sum())
    return out


def pointwise_length_baseline(
    responses: Sequence[str | None] | np.ndarray,
    references: Sequence[float] | np.ndarray,
    query_ids: Sequence[Hashable] | np.ndarray | None = None,
    system_ids: Sequence[Hashable] | np.ndarray | None = None,
) -> dict[str, Any]:
    """The answer's length (in words) as its score, against the human scores: the floor of a pointwise critic.

    Args:
        responses: the answers' texts (or word counts), shape ``(n,)``.
        references: the human scores, shape ``(n,)`` (None / NaN left out).
        query_ids: the question of each row, for text-level correlation and within-question accuracy; None: one
            question.
        system_ids: the system of each row; None: no system-level figures.

    Returns:
        ``{"text_pearson", "text_spearman", "text_kendall", "pooled_pearson", "pooled_spearman", "pooled_kendall",
        "within_question_accuracy", "within_question_pairs", "n_rows", "n_queries_used"}`` (plus ``system_*`` with
        systems), as
        :func:`~hf_critic.meta_eval.correlation.critique_correlation` computes them with the lengths as the scores.

    Raises:
        ValueError: see :func:`~hf_critic.meta_eval.correlation.critique_correlation`.
    """
    r = critique_correlation(_lengths(responses), references, query_ids=query_ids, system_ids=system_ids)
    keys = [k for k in r if k.startswith(("text_", "pooled_", "system_")) or k.startswith("within_question")]
    return {k: r[k] for k in (*keys, "n_rows", "n_queries_used")}


def length_tercile_agreement(
    credits: Mapping[str, np.ndarray],
    response_1: Sequence[str | None] | np.ndarray,
    response_2: Sequence[str | None] | np.ndarray,
    baseline: Mapping[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """The critic's figures within terciles of the length ratio of the two answers (longer / shorter, in words).

    A critic that only reads length does well where the lengths differ a lot and is at chance where they are alike.

    Args:
        credits: ``{figure: per-pair credit (n,)}``, NaN where the pair does not count
            (:func:`~hf_critic.meta_eval.agreement.pairwise_credits`).
        response_1: texts or word counts of the first responses ``(n,)``.
        response_2: of the second responses ``(n,)``.
        baseline: ``{figure: per-pair credit (n,)}`` of another verdict (e.g. "longer wins") to show beside.

    Returns:
        Three dicts (fewer when the ratios take fewer distinct values), shortest ratios first: ``{"low", "high"}``
        (the ratio's range in the tercile, ``(longer + 1) / (shorter + 1)``), ``"n"`` pairs, each figure's mean over
        the tercile's pairs that count (NaN without), and ``"baseline": {figure: mean}`` with ``baseline``.

    Raises:
        ValueError: different lengths.
    """
    a, b = _lengths(response_1), _lengths(response_2)
    ratio = (np.maximum(a, b) + 1) / (np.minimum(a, b) + 1)
    if any(len(c) != len(ratio) for c in credits.values()):
        raise BadInputError("credits and responses differ in length")
    if not len(ratio):
        return []
    edges = np.quantile(ratio, [1 / 3, 2 / 3])
    tercile = np.searchsorted(edges, ratio, side="left")  # a ratio equal to an edge goes to the lower tercile
    out = []
    for t in range(3):
        m = tercile == t
        if not m.any():
            continue
        entry = {"low": float(ratio[m].min()), "high": float(ratio[m].max()), "n": int(m.sum())}
        entry.update({name: _mean(c[m]) for name, c in credits.items()})
        if baseline is not None:
            entry["baseline"] = {name: _mean(c[m]) for name, c in baseline.items()}
        out.append(entry)
    return out


def _mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if len(finite) else math.nan


def length_controlled_agreement(
    decisions: Sequence[float] | np.ndarray,
    references: Sequence[Any] | np.ndarray,
    response_1: Sequence[str | None] | np.ndarray,
    response_2: Sequence[str | None] | np.ndarray,
) -> dict[str, Any]:
    """The critic's agreement with the humans once the length difference is in the model (AlpacaEval's recipe).

    On the pairs whose human label is no tie, a logistic regression of the human preference (1 = response 1 better)
    on the critic's decision ``c`` (+1 = response 1, -1 = response 2, 0 = undecided or unparsed) and the length
    difference ``l = tanh((len_1 - len_2) / sd(len_1 - len_2))`` (Dubois et al., 2024, Length-Controlled AlpacaEval,
    §3, Eq. 2-3: the same squashed, standardised length term)::

        logit P(human prefers response 1) = b0 + b_critic * c + b_length * l

    The critic's coefficient ``b_critic`` is what its decision says about the human preference that length does not;
    ``b_critic_without_length`` fits the model without ``l``. The **length-controlled agreement** is the model's
    probability that the human agrees with the critic's decision when the length term is set to zero (as the
    length-controlled win rate is the prediction with the length term zeroed), averaged over the pairs: ``sigma(b0 +
    b_critic)`` where the critic chose response 1, ``1 - sigma(b0 - b_critic)`` where it chose response 2, 1/2 where
    it did not choose.

    Args:
        decisions: the critic's two-way decisions ``(n,)`` (:func:`~hf_critic.meta_eval.agreement.two_way_decisions`:
            0 = response 1, 1 = response 2, 0.5 = undecided, NaN = unparsed).
        references: human labels ``(n,)``; pairs with a tie or no label are left out.
        response_1: texts or word counts of the first responses ``(n,)``.
        response_2: of the second responses ``(n,)``.

    Returns:
        ``{"critic_coefficient", "critic_se", "critic_p" (Wald test), "length_coefficient", "length_se", "intercept",
        "critic_coefficient_without_length", "length_controlled_agreement" (in [0, 1]), "two_way_accuracy" (the raw
        figure on the same pairs), "n", "n_undecided", "separated"}``; NaN coefficients (and agreement) when the fit
        has no finite maximum (a critic or length that predicts the humans perfectly) or fewer than 3 pairs.

    Raises:
        ValueError: different lengths.
    """
    d = np.asarray(decisions, dtype=np.float64)
    ref = normalize_labels(references, name="references")
    a, b = _lengths(response_1), _lengths(response_2)
    if not len(d) == len(ref) == len(a) == len(b):
        raise BadInputError("decisions, references and responses differ in length")
    keep = (ref == RESPONSE_1_WINS) | (ref == RESPONSE_2_WINS)
    d, y, delta = d[keep], (ref[keep] == RESPONSE_1_WINS).astype(np.float64), (a - b)[keep]
    c = np.where(np.isfinite(d), 1 - 2 * d, 0.0)
    sd = delta.std()
    length = np.tanh(delta / sd) if sd > 0 else np.zeros_like(delta)
    credit = np.where(np.isfinite(d), 1 - np.abs(d - (1 - y)), 0.0)
    out: dict[str, Any] = {"n": int(keep.sum()), "n_undecided": int((c == 0).sum())}
    out["two_way_accuracy"] = float(credit.mean()) if len(credit) else math.nan
    enough = len(y) >= 3
    unfit = {"coef": np.full(3, np.nan), "se": np.full(3, np.nan), "separated": False}
    full = fit_logistic(np.column_stack([c, length]), y) if enough else unfit
    alone = fit_logistic(c[:, None], y) if enough else unfit
    b0, bc, bl = (float(v) for v in full["coef"])
    se_c = float(full["se"][1])
    out.update(critic_coefficient=bc, critic_se=se_c, length_coefficient=bl, length_se=float(full["se"][2]))
    out["critic_p"] = float(2 * stats.norm.sf(abs(bc / se_c))) if se_c > 0 else math.nan
    out.update(intercept=b0, critic_coefficient_without_length=float(alone["coef"][1]))
    kept = np.where(c > 0, special.expit(b0 + bc), np.where(c < 0, 1 - special.expit(b0 - bc), 0.5))
    out["length_controlled_agreement"] = float(kept.mean()) if len(kept) and math.isfinite(bc) else math.nan
    out["separated"] = bool(full.get("separated", False))
    return out


def positional_preference(
    predictions: Sequence[Any] | np.ndarray,
    swapped_predictions: Sequence[Any] | np.ndarray | None = None,
    references: Sequence[Any] | np.ndarray | None = None,
) -> dict[str, Any]:
    """How often the critic names the response shown first, in each order (Wang et al., 2023, positional bias).

    Args:
        predictions: original-order verdicts ``(n,)`` (any spelling; None = unparsed).
        swapped_predictions: the swapped order's verdicts **mapped back** to the original order ``(n,)`` (the
            response shown first there is the original response 2); None: the original order only.
        references: the human labels ``(n,)``, for the humans' own share of "response 1" beside.

    Returns:
        ``{"first_shown_original": share of parsed original-order verdicts naming response 1, "tie_original",
        "n_original", "first_shown_swapped"?, "tie_swapped"?, "n_swapped"?, "first_shown_both"?: the mean of the two
        (0.5 - tie share / 2 for a critic that ignores position), "human_response_1"?: share of the human labels
        naming response 1}``; shares in [0, 1], NaN without parsed verdicts.
    """

    def shares(codes, first):
        n = int((codes >= 0).sum())
        if not n:
            return math.nan, math.nan, n
        return float((codes == first).sum() / n), float((codes == TIE).sum() / n), n

    pred = normalize_labels(predictions, name="predictions")
    out: dict[str, Any] = {}
    out["first_shown_original"], out["tie_original"], out["n_original"] = shares(pred, RESPONSE_1_WINS)
    if swapped_predictions is not None:
        swapped = normalize_labels(swapped_predictions, name="swapped_predictions")
        out["first_shown_swapped"], out["tie_swapped"], out["n_swapped"] = shares(swapped, RESPONSE_2_WINS)
        out["first_shown_both"] = (out["first_shown_original"] + out["first_shown_swapped"]) / 2
    if references is not None:
        ref = normalize_labels(references, name="references")
        out["human_response_1"] = shares(ref, RESPONSE_1_WINS)[0]
    return out


def length_credits(
    references: Sequence[Any] | np.ndarray,
    response_1: Sequence[str | None] | np.ndarray,
    response_2: Sequence[str | None] | np.ndarray,
    *,
    two_way: str = "auto",
) -> dict[str, np.ndarray]:
    """Per-pair credits of "longer wins" (:func:`~hf_critic.meta_eval.agreement.pairwise_credits` of
    :func:`length_verdicts`), to compare a critic with length pair by pair."""
    return pairwise_credits(length_verdicts(response_1, response_2), references, two_way=two_way)
