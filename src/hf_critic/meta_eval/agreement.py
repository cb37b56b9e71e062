"""Pairwise comparison meta-evaluation: agreement and consistency under order swap (numpy, vectorised).

As in CritiqueLLM v2 §4.4.2, Table 3 (after Auto-J, Li et al., ICLR 2024): *agreement* counts a pair as correct
only when the verdicts on both orders of the two responses equal the human label; *consistency* is the share of
pairs whose verdict on the swapped pair, mapped back to the original order, equals the verdict on the original
order. See :func:`pairwise_agreement`.

Where the human labels know no tie (chosen / rejected pairs such as Anthropic HHH), the three-way figures charge a
critic for every tie it calls although the gold never is one. The **two-way** figures (:func:`two_way_decisions`,
``two_way_accuracy`` / ``two_way_accuracy_combined`` of :func:`pairwise_agreement`) ask only which of the two
responses the critic prefers: from a verdict distribution, P(response 1 better) against P(response 2 better) with
the tie option dropped (renormalised); from text verdicts, a tie counts as half a pair.

Labels use the codes of :mod:`hf_critic.core.labels`: 0 = response 1 better, 1 = response 2 better, 2 = tie.
:func:`~hf_critic.core.labels.normalize_labels` maps the spellings judges and datasets use onto them; an unparsed
verdict becomes :data:`~hf_critic.core.labels.UNPARSED` and counts as wrong, never as a tie.

**Figures** of :func:`pairwise_agreement`:

* ``agreement``: share of pairs where **both** verdicts (the swapped one mapped back) equal the
  human label;
* ``consistency``: share of pairs where the two verdicts are equal (whatever the human label);
* ``first_order_agreement``: share of pairs where the original-order verdict equals the label;
* ``cohen_kappa``: Cohen's kappa (1960) of the original-order verdicts against the human labels, the agreement
  beyond what the two label frequencies give by chance (an unparsed verdict is a category of its own, never equal
  to a human label; :func:`hf_critic.meta_eval.chance.cohen_kappa`);
* ``accuracy``, ``macro_precision``, ``macro_recall``, ``macro_f1``: of the original-order
  verdicts over the classes {response 1 wins, response 2 wins, tie} present in the data; ``per_class``:
  counts, precision, recall and F1 per class;
* ``win_rate``, ``tie_rate``, ``lose_rate``: how often the critic prefers response 1, calls a tie, prefers
  response 2 (Auto-J Eval-C: with both orders, a pair whose verdicts conflict is a tie); the rest of the
  pairs are unparsed;
* two-way figures, by default only when the human labels contain no tie (``two_way="auto"``: chosen /
  rejected data such as Anthropic HHH, where a three-way figure charges every tie the critic calls): the
  critic's choice between response 1 and response 2 alone, see :func:`two_way_decisions`.
  ``two_way_accuracy``: of the original order, from ``distributions`` (P(response 1) against P(response 2),
  the tie option dropped) or, without them, from ``predictions`` (a tie verdict counts as half);
  ``two_way_accuracy_combined``: of both orders together, from ``combined_distributions`` or, without them,
  from ``predictions`` and ``swapped_predictions`` added as one-hot distributions (one order's tie leaves the
  other's choice; opposite choices count half). Only pairs whose gold label is no tie count
  (``two_way_n``; ``two_way_n_gold_ties`` are left out, only possible with ``two_way="on"``); unparsed
  verdicts follow ``unparsed`` (wrong: 0, tie: 1/2, drop: left out), and ``two_way_source`` says whether the
  choice came from ``"distribution"`` or ``"labels"``.

Unparsed verdicts (None / NaN) follow ``unparsed`` (:data:`UNPARSED_POLICIES`): by default they are kept in
the denominators and count as wrong and as inconsistent (never silently a tie); ``n_unparsed`` /
``n_unparsed_swapped`` report them whatever the policy. Pairs without a human label are dropped and counted
in ``n_missing_references``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ..core.errors import BadInputError
from ..core.labels import LABEL_NAMES, RESPONSE_1_WINS, RESPONSE_2_WINS, TIE, UNPARSED, normalize_labels, swap_codes
from ..core.schema import read_distribution
from .grouped import _factorize

__all__ = [
    "UNPARSED_POLICIES",
    "map_groups",
    "pairwise_agreement",
    "pairwise_credits",
    "TWO_WAY_MODES",
    "two_way_decisions",
]

#: ``--unparsed``: what an unparsed verdict counts as. ``wrong`` (default): kept in every denominator, wrong and
#: inconsistent; ``tie``: read as a tie, as some papers score failures; ``drop``: the pair leaves every denominator.
UNPARSED_POLICIES = ("wrong", "tie", "drop")

_CLASS_NAMES = {RESPONSE_1_WINS: "response_1", RESPONSE_2_WINS: "response_2", TIE: "tie"}


#: ``--two-way``: when :func:`pairwise_agreement` adds the two-way figures. ``auto`` (default): when the human labels
#: (of the pairs that have one) contain no tie; ``on``: always (pairs with a tie label are then left out of them and
#: counted); ``off``: never.
TWO_WAY_MODES = ("auto", "on", "off")

_R1, _R2 = LABEL_NAMES[RESPONSE_1_WINS], LABEL_NAMES[RESPONSE_2_WINS]


def _margin_of_distribution(value: Any) -> float:
    """P(response 1 better) - P(response 2 better) of one distribution (JSON text or mapping); NaN for None."""
    d = read_distribution(value)
    if d is None:
        return math.nan
    return float(d.get(_R1, 0.0)) - float(d.get(_R2, 0.0))


def two_way_decisions(
    labels: Sequence[Any] | np.ndarray,
    distributions: Sequence[Any] | None = None,
    swapped_labels: Sequence[Any] | np.ndarray | None = None,
    *,
    digits: Literal["label", "position"] = "label",
) -> np.ndarray:
    """The critic's choice between response 1 and response 2 only, the tie option dropped.

    Where a verdict distribution is given (``critique_distribution`` of a probability read-out, or
    ``critique_distribution_combined``: both orders averaged, Wang et al. 2025, §3.2), the choice is the larger of
    P(response 1 better) and P(response 2 better), i.e. the two renormalised to sum to 1 without the tie (keys
    :data:`hf_critic.core.labels.LABEL_NAMES`: ``"response_1"``, ``"response_2"``, and ``"tie"`` unless the template
    knows no tie); equal probabilities are undecided. From text verdicts (no distribution) each verdict is a
    one-hot distribution: response 1 or 2 is a choice, a tie is undecided. With ``swapped_labels`` (the other
    order's text verdicts, mapped back) both orders' one-hot distributions are added before choosing, as the
    probability read-out averages its two orders: one order's tie leaves the other's choice, two opposite choices
    are undecided.

    Args:
        labels: the decided labels, shape ``(n,)``, any spelling :func:`normalize_labels` accepts; None / NaN =
            unparsed (a row whose label is unparsed is unparsed here too, even when it has a distribution, e.g. a
            ``low_mass`` read-out).
        distributions: None, or per row a JSON object / mapping ``{verdict: probability}`` or None (unparsed).
        swapped_labels: None, or the swapped order's labels mapped back to the original order (text verdicts
            only; a probability read-out passes the combined distribution instead).
        digits: see :func:`normalize_labels`.

    Returns:
        float64 array ``(n,)``: 0.0 = response 1 better, 1.0 = response 2 better, 0.5 = undecided, NaN = unparsed;
        the credit of a row against a gold label ``g`` in {0, 1} is ``1 - |decision - g|`` (1, 1/2 or 0).

    Raises:
        ValueError: different lengths, an unknown label, or a distribution that is not a mapping.
    """
    codes = normalize_labels(labels, name="labels", digits=digits)
    if distributions is not None and len(distributions) != len(codes):
        raise BadInputError(f"labels and distributions differ in length: {len(codes)} != {len(distributions)}")
    other = None
    if swapped_labels is not None:
        other = normalize_labels(swapped_labels, name="swapped_labels", digits=digits)
        if len(other) != len(codes):
            raise BadInputError(f"labels and swapped_labels differ in length: {len(codes)} != {len(other)}")
    return _two_way(codes, distributions, other)


def _two_way(codes: np.ndarray, distributions: Sequence[Any] | None = None, swapped: np.ndarray | None = None):
    """:func:`two_way_decisions` on label codes (-1 = unparsed); ``swapped`` is ignored with ``distributions``."""
    unparsed = codes < 0
    if distributions is not None:
        margin = np.array([_margin_of_distribution(d) for d in distributions], dtype=np.float64)
    else:
        margin = (codes == RESPONSE_1_WINS).astype(np.float64) - (codes == RESPONSE_2_WINS)
        if swapped is not None:
            margin = margin + (swapped == RESPONSE_1_WINS) - (swapped == RESPONSE_2_WINS)
            unparsed = unparsed | (swapped < 0)
    decision = np.where(margin > 0, 0.0, np.where(margin < 0, 1.0, 0.5))
    return np.where(unparsed | np.isnan(margin), np.nan, decision)


def _pairwise_statistic(
    pred: np.ndarray, ref: np.ndarray, swapped: np.ndarray | None, two_way: dict[str, np.ndarray] | None = None
):
    """The pairwise figures as a function of per-pair weights ``(b, n)`` -> ``{figure: (b,)}``.

    A row of ones gives the figures themselves; a row of bootstrap counts gives them on that resample (see
    :mod:`~hf_critic.meta_eval.bootstrap`). Macro precision / recall / F1 are over the classes present in ``ref``
    or ``pred`` on the whole data. Unparsed predictions (-1) are wrong and count as a prediction of no class (they
    lower recall, not precision); a class never predicted has precision 0, one with P = R = 0 has F1 0 (as
    scikit-learn's ``precision_recall_fscore_support(average="macro", zero_division=0)``). ``two_way``: ``{figure:
    per-pair credit (n,)}`` (NaN = unparsed, credit 0), averaged over the pairs whose gold label is no tie.
    """
    classes = np.union1d(ref, pred[pred >= 0])
    first_ok = (pred == ref).astype(np.float64)
    true_k = (ref[:, None] == classes[None, :]).astype(np.float64)  # (n, k)
    pred_k = (pred[:, None] == classes[None, :]).astype(np.float64)
    hit_k = true_k * first_ok[:, None]
    if swapped is not None:
        consistent = ((pred == swapped) & (pred >= 0)).astype(np.float64)
        agree = first_ok * consistent
        final = np.where(consistent > 0, pred, np.where((pred >= 0) & (swapped >= 0), TIE, UNPARSED))
    else:
        final = pred
    # Win / tie / lose of response 1's system (Auto-J Eval-C): both orders must agree, a conflict is a tie.
    outcome = np.stack([final == RESPONSE_1_WINS, final == TIE, final == RESPONSE_2_WINS], axis=1).astype(float)

    # One matrix product per block of resamples: every per-pair column side by side.
    k = len(classes)
    ones = np.ones((len(pred), 1))
    columns = [ones, first_ok[:, None], hit_k, pred_k, true_k, outcome]
    two_way = two_way or {}
    if two_way:
        decided_gold = (ref != TIE).astype(np.float64)
        columns += [decided_gold[:, None]] + [np.nan_to_num(c * decided_gold)[:, None] for c in two_way.values()]
    if swapped is not None:
        columns += [agree[:, None], consistent[:, None]]
    values = np.hstack(columns)
    first_two_way = 5 + 3 * k  # column of decided_gold

    def statistic(w: np.ndarray) -> dict[str, np.ndarray]:
        sums = w @ values
        with np.errstate(invalid="ignore", divide="ignore"):
            total = sums[:, 0]
            tp, n_pred, n_true = sums[:, 2 : 2 + k], sums[:, 2 + k : 2 + 2 * k], sums[:, 2 + 2 * k : 2 + 3 * k]
            out = {}
            if swapped is not None:
                out["agreement"] = sums[:, -2] / total
                out["consistency"] = sums[:, -1] / total
            out["first_order_agreement"] = sums[:, 1] / total
            out["accuracy"] = out["first_order_agreement"]
            precision = np.where(n_pred > 0, tp / np.maximum(n_pred, 1e-300), 0.0)
            recall = np.where(n_true > 0, tp / np.maximum(n_true, 1e-300), 0.0)
            denom = precision + recall
            f1 = np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1), 0.0)
            out["macro_precision"] = precision.mean(axis=1) if k else np.full(len(w), np.nan)
            out["macro_recall"] = recall.mean(axis=1) if k else np.full(len(w), np.nan)
            out["macro_f1"] = f1.mean(axis=1) if k else np.full(len(w), np.nan)
            # Cohen's kappa (1960) of the original-order verdicts: an unparsed verdict is a category of its own.
            expected = (n_true * n_pred).sum(axis=1) / (total * total)
            out["cohen_kappa"] = (out["first_order_agreement"] - expected) / (1 - expected)
            rates = sums[:, 2 + 3 * k : 5 + 3 * k] / total[:, None]
            out["win_rate"], out["tie_rate"], out["lose_rate"] = rates.T
            for j, name in enumerate(two_way, start=1):
                out[name] = sums[:, first_two_way + j] / sums[:, first_two_way]
        return out

    return statistic, classes


def _per_class(pred: np.ndarray, ref: np.ndarray, classes: np.ndarray) -> dict[str, dict[str, float]]:
    """Per class (``response_1`` / ``response_2`` / ``tie``): gold and predicted counts, hits, P, R, F1."""
    out = {}
    for k in classes.tolist():
        n_true, n_pred = int((ref == k).sum()), int((pred == k).sum())
        tp = int(((pred == k) & (ref == k)).sum())
        p = tp / n_pred if n_pred else 0.0
        r = tp / n_true if n_true else 0.0
        out[_CLASS_NAMES[k]] = {
            "n_gold": n_true,
            "n_predicted": n_pred,
            "n_correct": tp,
            "precision": p,
            "recall": r,
            "f1": 2 * p * r / (p + r) if p + r else 0.0,
        }
    return out


def pairwise_agreement(
    predictions: Sequence[Any] | np.ndarray,
    references: Sequence[Any] | np.ndarray,
    swapped_predictions: Sequence[Any] | np.ndarray | None = None,
    *,
    swapped_mapped_back: bool = True,
    groups: Sequence[Hashable] | np.ndarray | None = None,
    digits: Literal["label", "position"] = "label",
    unparsed: Literal["wrong", "tie", "drop"] = "wrong",
    two_way: Literal["auto", "on", "off"] = "auto",
    distributions: Sequence[Any] | None = None,
    combined_distributions: Sequence[Any] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Agreement and consistency of pairwise verdicts with human labels under order swap.

    CritiqueLLM v2 §4.4.2 (Table 3), following Auto-J's Eval-P protocol (Li et al., ICLR 2024, and its
    ``codes/leaderboard/pairwise_eval.py``): the critic judges each pair twice, once in the original
    order and once with the two responses swapped.

    The figures are those listed in the module docstring (Figures).

    Args:
        predictions: verdicts on the original order, shape ``(n,)``, any spelling
            :func:`normalize_labels` accepts.
        references: human labels, shape ``(n,)``.
        swapped_predictions: verdicts on the swapped pair, shape ``(n,)``; None: only the first-order
            values are returned (no ``agreement`` / ``consistency`` keys).
        swapped_mapped_back: True (default, as hf-critic's ``critique_label_swapped`` column) when the
            swapped verdicts are already in original-order terms; False when they are in swapped terms
            (0 = the response shown first, i.e. the original response 2, won), as in Auto-J's
            ``pairwise_exchange_example_output.jsonl``: they are then mapped back here.
        groups: group id per pair, shape ``(n,)`` (e.g. Auto-J scenario group); adds ``per_group``:
            ``{group: {"agreement", "consistency", "first_order_agreement", "n"}}`` in order of first
            appearance (with ``bootstrap``, each entry also has its ``ci``).
        digits: how digit strings are read, see :func:`normalize_labels`.
        unparsed: ``"wrong"``, ``"tie"`` or ``"drop"``, see :data:`UNPARSED_POLICIES`.
        two_way: ``"auto"``, ``"on"`` or ``"off"``, see :data:`TWO_WAY_MODES` and above.
        distributions: the original order's verdict distributions, shape ``(n,)`` (``critique_distribution``:
            JSON objects or mappings, None where unparsed), for ``two_way_accuracy``; None: from ``predictions``.
        combined_distributions: both orders' averaged distributions (``critique_distribution_combined``), for
            ``two_way_accuracy_combined``; None: from ``predictions`` and ``swapped_predictions`` (no
            ``two_way_accuracy_combined`` without either).
        bootstrap: resamples of the pairs for percentile confidence intervals (0: none); adds ``ci``:
            ``{figure: [low, high]}`` for every figure above (see :mod:`~hf_critic.meta_eval.bootstrap`).
        seed: the bootstrap's seed.
        confidence: the intervals' coverage (default 0.95).

    Returns:
        dict of floats in [0, 1] (fractions, not percentages; ``cohen_kappa`` in [-1, 1]) and ints ``n``, ``n_unparsed``,
        ``n_unparsed_swapped``, ``n_missing_references``, ``n_dropped`` (pairs left out by ``unparsed="drop"``),
        the policy as ``unparsed``, ``per_class``; with the two-way figures also ``two_way_n``,
        ``two_way_n_gold_ties``, ``two_way_source``; plus ``per_group`` (with the two-way accuracies when computed)
        and ``ci`` when asked. Values are NaN when no pair is left (empty inputs included), with the counts still
        reported.

    Raises:
        ValueError: on mismatched lengths, an unknown label (naming the value and its index), an unknown
            ``unparsed`` policy or ``two_way`` mode, or ``combined_distributions`` without ``swapped_predictions``.
    """
    _check_modes(unparsed, two_way, combined_distributions is not None and swapped_predictions is None)
    codes = _codes(predictions, references, swapped_predictions, digits, swapped_mapped_back)
    pred, ref, swapped, gid, uniques, first_dist, combined_dist, n_missing, on = _referenced(
        *codes, groups, distributions, combined_distributions, two_way
    )
    counts = _unparsed_counts(pred, swapped)
    pred, ref, swapped, gid, first_dist, combined_dist, pred_parsed, parsed, n_dropped = _unparsed_policy(
        unparsed, pred, ref, swapped, gid, first_dist, combined_dist
    )
    credits = _two_way_credits(on, pred, ref, swapped, pred_parsed, parsed, first_dist, combined_dist, unparsed)
    out = _figures(pred, ref, swapped, bootstrap, seed, confidence, credits)
    out.update(n=len(ref), **counts, n_missing_references=n_missing, n_dropped=n_dropped, unparsed=unparsed)
    if credits:
        out.update(two_way_n=int((ref != TIE).sum()), two_way_n_gold_ties=int((ref == TIE).sum()))
        out["two_way_source"] = "distribution" if distributions is not None else "labels"
    if gid is not None:
        out["per_group"] = _per_group(pred, ref, swapped, gid, uniques, credits, bootstrap, seed, confidence)
    return out


def pairwise_credits(
    predictions: Sequence[Any] | np.ndarray,
    references: Sequence[Any] | np.ndarray,
    swapped_predictions: Sequence[Any] | np.ndarray | None = None,
    *,
    swapped_mapped_back: bool = True,
    digits: Literal["label", "position"] = "label",
    unparsed: str = "wrong",
    two_way: str = "auto",
    distributions: Sequence[Any] | None = None,
    combined_distributions: Sequence[Any] | None = None,
) -> dict[str, np.ndarray]:
    """Each pair's credit in the headline figures of :func:`pairwise_agreement`: the per-row values a paired
    comparison of two critics on the same pairs needs (:mod:`~hf_critic.meta_eval.paired`).

    Args: as :func:`pairwise_agreement` (same policies, same two-way rule).

    Returns:
        ``{figure: float64 array (n,)}`` over **all** input rows, NaN where the pair does not count in that figure
        (no human label, dropped by ``unparsed="drop"``, a gold tie in a two-way figure): ``first_order_agreement``
        (1 = the original-order verdict equals the label, else 0), with swapped verdicts ``agreement`` (both orders
        equal the label); with the two-way figures ``two_way_accuracy`` (and ``two_way_accuracy_combined`` with
        swapped verdicts): 1, 1/2 (undecided) or 0. The mean of each array over its finite values equals the
        figure of :func:`pairwise_agreement`.

    Raises:
        ValueError: see :func:`pairwise_agreement`.
    """
    _check_modes(unparsed, two_way, combined_distributions is not None and swapped_predictions is None)
    pred, ref, swapped = _codes(predictions, references, swapped_predictions, digits, swapped_mapped_back)
    n_all = len(pred)
    has_ref = ref >= 0
    on = two_way == "on" or (two_way == "auto" and bool(has_ref.any()) and not (ref[has_ref] == TIE).any())
    first_dist = _objects(distributions, n_all, "distributions")
    combined_dist = _objects(combined_distributions, n_all, "combined_distributions")
    pred_parsed = pred >= 0
    parsed = pred_parsed & (swapped >= 0 if swapped is not None else True)
    keep = has_ref & (parsed if unparsed == "drop" else True)
    if unparsed == "tie":
        pred = np.where(pred < 0, TIE, pred)
        swapped = np.where(swapped < 0, TIE, swapped) if swapped is not None else None
    first_ok = (pred == ref).astype(np.float64)
    out = {"first_order_agreement": first_ok}
    if swapped is not None:
        out["agreement"] = first_ok * ((pred == swapped) & (pred >= 0))
    credits = _two_way_credits(on, pred, ref, swapped, pred_parsed, parsed, first_dist, combined_dist, unparsed)
    out.update({name: np.where(ref == TIE, np.nan, np.nan_to_num(c)) for name, c in credits.items()})
    return {name: np.where(keep, values, np.nan) for name, values in out.items()}


def _check_modes(unparsed: str, two_way: str, combined_without_swap: bool) -> None:
    """Raise ValueError for an unknown ``unparsed`` policy or ``two_way`` mode, or combined distributions without
    the swapped order's verdicts."""
    if unparsed not in UNPARSED_POLICIES:
        raise BadInputError(f"unparsed must be one of {UNPARSED_POLICIES}, got {unparsed!r}")
    if two_way not in TWO_WAY_MODES:
        raise BadInputError(f"two_way must be one of {TWO_WAY_MODES}, got {two_way!r}")
    if combined_without_swap:
        raise BadInputError("combined_distributions are of both orders: give swapped_predictions too")


def _unparsed_policy(unparsed: str, pred, ref, swapped, gid, first_dist, combined_dist):
    """The pairs under the ``unparsed`` policy: ``(pred, ref, swapped, gid, first_dist, combined_dist, pred_parsed,
    parsed, n_dropped)``, unparsed verdicts read as ties (``"tie"``) or the pairs not parsed in both orders left out
    (``"drop"``, counted in ``n_dropped``). ``pred_parsed`` and ``parsed`` (in both orders) are taken before the
    policy reads unparsed verdicts as ties (a low-mass read-out keeps a distribution, but no verdict: it is no two-way
    choice either)."""
    pred_parsed = pred >= 0
    parsed = pred_parsed & (swapped >= 0 if swapped is not None else True)
    if unparsed == "drop":
        kept = _select(parsed, pred, ref, swapped, gid, first_dist, combined_dist, pred_parsed, parsed)
        return (*kept, int((~parsed).sum()))
    if unparsed == "tie":
        pred = np.where(pred < 0, TIE, pred)
        swapped = np.where(swapped < 0, TIE, swapped) if swapped is not None else None
    return pred, ref, swapped, gid, first_dist, combined_dist, pred_parsed, parsed, 0


def _unparsed_counts(pred: np.ndarray, swapped: np.ndarray | None) -> dict[str, int]:
    """``n_unparsed`` (and ``n_unparsed_swapped`` with a swapped order): verdicts coded :data:`UNPARSED`."""
    counts = {"n_unparsed": int((pred < 0).sum())}
    if swapped is not None:
        counts["n_unparsed_swapped"] = int((swapped < 0).sum())
    return counts


def _codes(predictions, references, swapped_predictions, digits: str, swapped_mapped_back: bool):
    """``(pred, ref, swapped)`` code arrays (swapped in original-order terms, None without), lengths checked."""
    pred = normalize_labels(predictions, name="predictions", digits=digits)
    ref = normalize_labels(references, name="references", digits=digits)
    if len(ref) != len(pred):
        raise BadInputError(f"predictions and references differ in length: {len(pred)} != {len(ref)}")
    swapped = None
    if swapped_predictions is not None:
        swapped = normalize_labels(swapped_predictions, name="swapped_predictions", digits=digits)
        if len(swapped) != len(pred):
            raise BadInputError(f"predictions and swapped_predictions differ in length: {len(pred)} != {len(swapped)}")
        if not swapped_mapped_back:
            swapped = swap_codes(swapped)
    return pred, ref, swapped


def _referenced(pred, ref, swapped, groups, distributions, combined_distributions, two_way: str):
    """The pairs with a human label: ``(pred, ref, swapped, gid, uniques, first_dist, combined_dist, n_missing,
    on)``, the groups' codes and the distributions read (:func:`_objects`) and restricted to them, with the unique
    group ids (None without groups), the number of pairs left out for a missing label, and whether the two-way
    figures are computed (``two_way``: ``"on"``, or ``"auto"`` and no human tie among them)."""
    n_all = len(pred)
    gid, uniques = _factorize(groups, "groups", n_all) if groups is not None else (None, None)
    has_ref = ref >= 0
    first_dist = _objects(distributions, n_all, "distributions")
    combined_dist = _objects(combined_distributions, n_all, "combined_distributions")
    pred, ref, swapped, gid, first_dist, combined_dist = _select(
        has_ref, pred, ref, swapped, gid, first_dist, combined_dist
    )
    on = two_way == "on" or (two_way == "auto" and len(ref) > 0 and not (ref == TIE).any())
    return pred, ref, swapped, gid, uniques, first_dist, combined_dist, int((~has_ref).sum()), on


def _select(mask: np.ndarray, *arrays):
    """Each array (or None) restricted to the pairs of ``mask``."""
    return tuple(None if a is None else a[mask] for a in arrays)


def _two_way_credits(on, pred, ref, swapped, pred_parsed, parsed, first_dist, combined_dist, unparsed) -> dict:
    """The credit of each pair in the two-way figures (``two_way_accuracy[_combined]``): 1, 1/2 (undecided) or 0,
    NaN (unparsed) counting 0; {} when they are off."""
    decisions = {}
    if on:
        decisions["two_way_accuracy"] = (
            _two_way(np.where(pred_parsed, pred, UNPARSED), first_dist) if first_dist is not None else _two_way(pred)
        )
        if swapped is not None:
            decisions["two_way_accuracy_combined"] = (
                _two_way(np.where(parsed, pred, UNPARSED), combined_dist)
                if combined_dist is not None
                else _two_way(pred, swapped=swapped)
            )
        if unparsed == "tie":  # an unparsed verdict read as a tie: undecided
            decisions = {name: np.where(np.isnan(d), 0.5, d) for name, d in decisions.items()}
    return {name: 1.0 - np.abs(d - ref) for name, d in decisions.items()}


def _per_group(pred, ref, swapped, gid, uniques, credits, bootstrap, seed, confidence) -> dict[Hashable, dict]:
    """``{group: {agreement, consistency, first_order_agreement, two-way accuracies, n[, ci]}}`` in order of first
    appearance (``gid``: each pair's index into ``uniques``)."""
    per_group: dict[Hashable, dict[str, Any]] = {}
    for k, key in enumerate(uniques.tolist()):  # one entry per group, not per row
        m = gid == k
        figures = _figures(
            pred[m],
            ref[m],
            None if swapped is None else swapped[m],
            bootstrap,
            seed,
            confidence,
            {name: c[m] for name, c in credits.items()},
        )
        names = ("agreement", "consistency", "first_order_agreement") if swapped is not None else ()
        entry = {name: figures[name] for name in (*names, "first_order_agreement", *credits)}
        entry["n"] = int(m.sum())
        if "ci" in figures:
            entry["ci"] = {name: figures["ci"][name] for name in entry if name in figures["ci"]}
        per_group[key] = entry
    return per_group


def _objects(values: Sequence[Any] | None, n: int, name: str) -> np.ndarray | None:
    """``values`` as a 1-D object array of length ``n``, to follow row selections (None stays None)."""
    if values is None:
        return None
    values = list(values)
    if len(values) != n:
        raise BadInputError(f"predictions and {name} differ in length: {n} != {len(values)}")
    out = np.empty(n, dtype=object)
    out[:] = values
    return out


def _figures(
    pred: np.ndarray,
    ref: np.ndarray,
    swapped: np.ndarray | None,
    bootstrap: int,
    seed: int,
    confidence: float,
    two_way: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Point figures of :func:`pairwise_agreement` (NaN without pairs), per-class counts and, optionally, CIs."""
    from .bootstrap import bootstrap_intervals

    statistic, classes = _pairwise_statistic(pred, ref, swapped, two_way)
    n = len(ref)
    out: dict[str, Any] = {
        name: float(values[0]) if n else math.nan for name, values in statistic(np.ones((1, n))).items()
    }
    out["per_class"] = _per_class(pred, ref, classes)
    if bootstrap and n:
        intervals = bootstrap_intervals(statistic, n, bootstrap, seed, confidence)
        out["ci"] = dict(intervals)
        if intervals.dropped:  # resamples whose figure was undefined, left out of the interval
            out["ci_dropped"] = intervals.dropped
    return out


def map_groups(values: Sequence[Hashable], mapping: Mapping[Hashable, Sequence[Hashable]]) -> list[Hashable]:
    """Map fine-grained ids to their group, e.g. Auto-J scenario → scenario group.

    Args:
        values: ids, shape ``(n,)`` (e.g. Auto-J ``scenario`` column).
        mapping: ``{group: [id, ...]}`` as in Auto-J's ``scenario_groups.json``.

    Returns:
        list of length ``n`` with the group of each id.

    Raises:
        ValueError: if an id belongs to no group (naming it and its index) or to two groups.
    """
    inverse: dict[Hashable, Hashable] = {}
    for group, members in mapping.items():
        for member in members:
            if member in inverse and inverse[member] != group:
                raise BadInputError(f"{member!r} is in two groups: {inverse[member]!r} and {group!r}")
            inverse[member] = group
    codes, uniques = _factorize(values, "values", len(values))
    missing = [u for u in uniques.tolist() if u not in inverse]
    if missing:
        i = int(np.flatnonzero(uniques[codes] == missing[0])[0])
        raise BadInputError(f"values[{i}] = {missing[0]!r} is in no group of the mapping")
    return np.asarray([inverse[u] for u in uniques.tolist()], dtype=object)[codes].tolist()
