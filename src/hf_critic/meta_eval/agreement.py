"""Pairwise comparison meta-evaluation: agreement and consistency under order swap (numpy, vectorised).

As in CritiqueLLM v2 §4.4.2, Table 3 (after Auto-J, Li et al., ICLR 2024): *agreement* counts a pair as correct
only when the verdicts on both orders of the two responses equal the human label; *consistency* is the share of
pairs whose verdict on the swapped pair, mapped back to the original order, equals the verdict on the original
order. See :func:`pairwise_agreement`.

Labels use the schema's codes (:mod:`hf_critic.schema`): 0 = response 1 better, 1 = response 2 better,
2 = tie. :func:`normalize_labels` maps the spellings judges and datasets use onto them; an unparsed verdict
becomes :data:`UNPARSED` and counts as wrong, never as a tie.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from hf_critic.schema import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE

from .correlation import _factorize

__all__ = ["LABEL_ALIASES", "UNPARSED", "map_groups", "normalize_labels", "pairwise_agreement"]

#: Code :func:`normalize_labels` gives an unparsed verdict (None / NaN).
UNPARSED = -1


def _alias_table() -> dict[str, int]:
    table: dict[str, int] = {}
    for code, position, letter in ((RESPONSE_1_WINS, "1", "a"), (RESPONSE_2_WINS, "2", "b")):
        for word in ("assistant", "response", "output", "model", "answer", "system"):
            table[word + position] = code
            table[word + letter] = code
        table[letter] = code
    table.update(first=RESPONSE_1_WINS, win=RESPONSE_1_WINS, second=RESPONSE_2_WINS, lose=RESPONSE_2_WINS)
    table.update(c=TIE, tie=TIE, draw=TIE, equal=TIE, same=TIE)
    return table


#: Accepted label spellings after normalisation (lower case; spaces, ``_``, ``-``, brackets, quotes and a
#: trailing ``.`` removed), mapped to the schema codes. So ``"Assistant 1"``, ``"response_1"``,
#: ``"[[A]]"``, ``"Output (a)"``, ``"first"``, ``"win"`` → 0; ``"Assistant 2"``, ``"response_2"``,
#: ``"B"``, ``"second"``, ``"lose"`` → 1; ``"tie"``, ``"[[C]]"``, ``"draw"``, ``"equal"`` → 2.
#: ``win`` / ``lose`` are from response 1's point of view. Digit strings are handled by
#: :func:`normalize_labels`'s ``digits`` argument, not by this table.
LABEL_ALIASES: dict[str, int] = _alias_table()

_STRIP = re.compile(r"[\s_\-\[\]()'\"`.]+")


def _label_of(value: Any, digits: str) -> int:
    """Code of one distinct value (called once per distinct value, not per row); -2 when unknown."""
    if isinstance(value, (bool, np.bool_)):
        return -2
    if isinstance(value, (int, np.integer)):
        return int(value) if 0 <= value <= 2 else -2
    if isinstance(value, (float, np.floating)):
        return int(value) if float(value).is_integer() and 0 <= value <= 2 else -2
    if isinstance(value, str):
        key = _STRIP.sub("", value.lower())
        if key.isdigit():
            if digits == "label":
                return int(key) if key in ("0", "1", "2") else -2
            return {"1": RESPONSE_1_WINS, "2": RESPONSE_2_WINS}.get(key, -2)
        return LABEL_ALIASES.get(key, -2)
    return -2


def normalize_labels(
    values: Sequence[Any] | np.ndarray,
    *,
    name: str = "labels",
    digits: Literal["label", "position"] = "label",
) -> np.ndarray:
    """Map pairwise verdicts to the schema codes 0 / 1 / 2, unparsed to :data:`UNPARSED` (-1).

    Mapping (CritiqueLLM v2 §3.1 and Auto-J label conventions; 0 = response 1 better, 1 = response 2
    better, 2 = tie):

    * ints 0, 1, 2 (and floats 0.0, 1.0, 2.0) are the codes themselves;
    * digit strings: with ``digits="label"`` (default) ``"0"``, ``"1"``, ``"2"`` are the codes, as when
      an int column was read as text; with ``digits="position"`` ``"1"`` / ``"2"`` name the winning
      response (→ 0 / 1), as judges that answer ``[[1]]`` / ``[[2]]`` do, and ``"0"`` is an error;
    * words, see :data:`LABEL_ALIASES`: ``"Assistant 1"`` / ``"response_1"`` / ``"A"`` / ``"[[A]]"``
      → 0; ``"Assistant 2"`` / ``"response_2"`` / ``"B"`` → 1; ``"tie"`` / ``"C"`` / ``"draw"`` → 2
      (case, spaces, underscores, hyphens, brackets and quotes are ignored);
    * None, NaN and ``pd.NA`` → -1 (unparsed: never silently a tie; callers count it).

    Args:
        values: the labels, shape ``(n,)``.
        name: what to call the argument in error messages.
        digits: how to read digit strings, see above.

    Returns:
        int64 array of shape ``(n,)`` with values in {-1, 0, 1, 2}.

    Raises:
        ValueError: for any other value (bools, 3, "maybe", ...), naming the value and its index.
    """
    if digits not in ("label", "position"):
        raise ValueError(f"digits must be 'label' or 'position', got {digits!r}")
    arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind in "iuf":  # fast path: numeric codes
        v = arr.astype(np.float64)
        bad = np.isfinite(v) & ~np.isin(v, (0.0, 1.0, 2.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{i}] = {arr[i]!r} is not a pairwise label (0, 1, 2)")
        return np.where(np.isfinite(v), v, UNPARSED).astype(np.int64)
    if arr.dtype.kind == "b":
        raise ValueError(f"{name}[0] = {arr[0]!r}: booleans are not pairwise labels")
    codes, uniques = pd.factorize(arr, sort=False, use_na_sentinel=True)
    mapped = np.array([_label_of(u, digits) for u in uniques] + [UNPARSED], dtype=np.int64)
    bad = np.flatnonzero(mapped == -2)
    if len(bad):
        i = int(np.flatnonzero(codes == bad[0])[0])
        raise ValueError(
            f"{name}[{i}] = {arr[i]!r} is not a pairwise label; use 0/1/2 or one of the spellings in "
            "hf_critic.meta_eval.agreement.LABEL_ALIASES (e.g. 'Assistant 1', 'response_2', 'tie')"
        )
    return mapped[codes]  # codes == -1 (NA) picks the appended UNPARSED


def _swap_codes(codes: np.ndarray) -> np.ndarray:
    """Vectorised :func:`hf_critic.schema.swap_label`: 0 <-> 1; 2 and -1 (unparsed) unchanged."""
    return np.where(
        codes == RESPONSE_1_WINS, RESPONSE_2_WINS, np.where(codes == RESPONSE_2_WINS, RESPONSE_1_WINS, codes)
    )


def _macro_prf(pred: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """Accuracy and macro precision / recall / F1 over the classes present in ``ref`` or ``pred``.

    Unparsed predictions (-1) are wrong and count as a prediction of no class (they lower recall, not
    precision). A class never predicted has precision 0, one with P = R = 0 has F1 0 (as scikit-learn's
    ``precision_recall_fscore_support(average="macro", zero_division=0)``).
    """
    classes = np.union1d(ref, pred[pred >= 0])
    k = 3
    tp = np.bincount(ref[pred == ref], minlength=k)[classes]
    n_pred = np.bincount(pred[pred >= 0], minlength=k)[classes]
    n_true = np.bincount(ref, minlength=k)[classes]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 0.0)
        recall = np.where(n_true > 0, tp / np.maximum(n_true, 1), 0.0)
        denom = precision + recall
        f1 = np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1), 0.0)
    return {
        "accuracy": float((pred == ref).mean()),
        "macro_precision": float(precision.mean()),
        "macro_recall": float(recall.mean()),
        "macro_f1": float(f1.mean()),
    }


def pairwise_agreement(
    predictions: Sequence[Any] | np.ndarray,
    references: Sequence[Any] | np.ndarray,
    swapped_predictions: Sequence[Any] | np.ndarray | None = None,
    *,
    swapped_mapped_back: bool = True,
    groups: Sequence[Hashable] | np.ndarray | None = None,
    digits: Literal["label", "position"] = "label",
) -> dict[str, Any]:
    """Agreement and consistency of pairwise verdicts with human labels under order swap.

    CritiqueLLM v2 §4.4.2 (Table 3), following Auto-J's Eval-P protocol (Li et al., ICLR 2024, and its
    ``codes/leaderboard/pairwise_eval.py``): the critic judges each pair twice, once in the original
    order and once with the two responses swapped.

    * ``agreement``: share of pairs where **both** verdicts (the swapped one mapped back) equal the
      human label;
    * ``consistency``: share of pairs where the two verdicts are equal (whatever the human label);
    * ``first_order_agreement``: share of pairs where the original-order verdict equals the label;
    * ``accuracy``, ``macro_precision``, ``macro_recall``, ``macro_f1``: of the original-order
      verdicts over the classes {response 1 wins, response 2 wins, tie} (see :func:`_macro_prf`).

    Unparsed verdicts (None / NaN) are kept in the denominators and count as wrong and as inconsistent
    (never silently a tie); ``n_unparsed`` / ``n_unparsed_swapped`` report them. Pairs without a human
    label are dropped and counted in ``n_missing_references``.

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
            appearance.
        digits: how digit strings are read, see :func:`normalize_labels`.

    Returns:
        dict of floats in [0, 1] (fractions, not percentages) and ints ``n``, ``n_unparsed``,
        ``n_unparsed_swapped``, ``n_missing_references``; plus ``per_group`` when ``groups`` is given.
        Values are NaN when no pair has a human label.

    Raises:
        ValueError: on mismatched lengths or an unknown label (naming the value and its index).
    """
    pred = normalize_labels(predictions, name="predictions", digits=digits)
    ref = normalize_labels(references, name="references", digits=digits)
    n_all = len(pred)
    if len(ref) != n_all:
        raise ValueError(f"predictions and references differ in length: {n_all} != {len(ref)}")
    swapped = None
    if swapped_predictions is not None:
        swapped = normalize_labels(swapped_predictions, name="swapped_predictions", digits=digits)
        if len(swapped) != n_all:
            raise ValueError(f"predictions and swapped_predictions differ in length: {n_all} != {len(swapped)}")
        if not swapped_mapped_back:
            swapped = _swap_codes(swapped)
    gid = uniques = None
    if groups is not None:
        gid, uniques = _factorize(groups, "groups", n_all)

    has_ref = ref >= 0
    n_missing = int((~has_ref).sum())
    pred, ref = pred[has_ref], ref[has_ref]
    n = len(ref)
    out: dict[str, Any] = {}
    first_ok = pred == ref
    if swapped is not None:
        swapped = swapped[has_ref]
        consistent = (pred == swapped) & (pred >= 0)
        agree = first_ok & consistent
        out["agreement"] = float(agree.mean()) if n else math.nan
        out["consistency"] = float(consistent.mean()) if n else math.nan
    out["first_order_agreement"] = float(first_ok.mean()) if n else math.nan
    if n:
        out.update(_macro_prf(pred, ref))
    else:
        out.update(accuracy=math.nan, macro_precision=math.nan, macro_recall=math.nan, macro_f1=math.nan)
    out["n"] = n
    out["n_unparsed"] = int((pred < 0).sum())
    if swapped is not None:
        out["n_unparsed_swapped"] = int((swapped < 0).sum())
    out["n_missing_references"] = n_missing
    if gid is not None:
        g = gid[has_ref]
        m = len(uniques)
        size = np.bincount(g, minlength=m)
        with np.errstate(invalid="ignore", divide="ignore"):
            first_g = np.bincount(g, weights=first_ok, minlength=m) / size
            if swapped is not None:
                agree_g = np.bincount(g, weights=agree, minlength=m) / size
                cons_g = np.bincount(g, weights=consistent, minlength=m) / size
        per_group: dict[Hashable, dict[str, float]] = {}
        for k, key in enumerate(uniques.tolist()):  # one entry per group, not per row
            entry: dict[str, float] = {}
            if swapped is not None:
                entry["agreement"] = float(agree_g[k])
                entry["consistency"] = float(cons_g[k])
            entry["first_order_agreement"] = float(first_g[k])
            entry["n"] = int(size[k])
            per_group[key] = entry
        out["per_group"] = per_group
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
                raise ValueError(f"{member!r} is in two groups: {inverse[member]!r} and {group!r}")
            inverse[member] = group
    codes, uniques = _factorize(values, "values", len(values))
    missing = [u for u in uniques.tolist() if u not in inverse]
    if missing:
        i = int(np.flatnonzero(uniques[codes] == missing[0])[0])
        raise ValueError(f"values[{i}] = {missing[0]!r} is in no group of the mapping")
    return np.asarray([inverse[u] for u in uniques.tolist()], dtype=object)[codes].tolist()
