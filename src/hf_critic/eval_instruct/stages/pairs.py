"""The pair stages of Eval-Instruct (CritiqueLLM v2 §3.2.2-§3.3): pairs of responses, Path#2's inputs, cross
validation and swap augmentation."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

import datasets

from ...core.errors import BadInputError
from ...core.labels import swap_critique, swap_label
from ...core.schema import (
    ParseStatus,
)
from ...parsing import parse_label
from ..stage_report import StageReport
from ._common import PAIR_COLUMNS, _dataset, _report


def make_pairs(
    graded: datasets.Dataset,
    *,
    per_query: int | None = None,
    seed: int = 0,
    stage: str = "make_pairs",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Pairs of graded responses to the same query: the inputs of pointwise-to-pairwise prompting (CritiqueLLM v2
    §3.2.2, Eq. 1: "q_i, r_i, g_i^(1), g_i^(2)").

    Every pair of distinct generators of a query is formed (or ``per_query`` of them drawn at random); which
    response is shown first is drawn at random per pair, seeded by the pair itself, so position carries no signal
    and reruns give the same order.

    Args:
        graded: rows from :func:`grade_pointwise_referenced` (``id``, ``query_id``, ``generator``, ``response``,
            ``critique``, ``score``, ``reference`` ...).
        per_query: at most this many pairs per query (None: all).
        seed: seed of the draws.
        stage / report: as in :func:`augment_queries`.

    Returns:
        One row per pair: ``pair_id`` (``"<query_id>/<generator_1>~<generator_2>"``), the query's columns,
        ``generator_1/2``, ``response_id_1/2``, ``response_1/2`` and the two pointwise critiques ``critique_1/2``
        with their scores ``score_1/2``. ``conserved`` is False (responses become pairs).
    """
    report = _report(report, stage, "responses", conserved=False)
    rows = list(graded)
    report.items_in = len(rows)
    by_query: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_query[row["query_id"]].append(row)
    out = []
    for qid in sorted(by_query):
        group = sorted(by_query[qid], key=lambda r: r["generator"])
        combos = list(itertools.combinations(group, 2))
        if per_query is not None and len(combos) > per_query:
            rng = random.Random(f"{seed}:{qid}")
            combos = sorted(rng.sample(combos, per_query), key=lambda c: (c[0]["generator"], c[1]["generator"]))
        for a, b in combos:
            if random.Random(f"{seed}:{a['id']}:{b['id']}").random() < 0.5:
                a, b = b, a
            out.append(
                {
                    "pair_id": f"{qid}/{a['generator']}~{b['generator']}",
                    "query_id": qid,
                    "question": a["question"],
                    "category": a.get("category"),
                    "difficulty": a.get("difficulty"),
                    "reference": a.get("reference"),
                    "generator_1": a["generator"],
                    "generator_2": b["generator"],
                    "response_id_1": a["id"],
                    "response_id_2": b["id"],
                    "response_1": a["response"],
                    "response_2": b["response"],
                    "critique_1": a["critique"],
                    "critique_2": b["critique"],
                    "score_1": a["score"],
                    "score_2": b["score"],
                }
            )
    report.items_out = len(out)
    return _dataset(out, PAIR_COLUMNS)


def attach_pointwise_critiques(
    pairs: datasets.Dataset,
    pointwise: datasets.Dataset,
    *,
    stage: str = "path2_pairs",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Give each pair the reference-free pointwise critiques of its two responses (the input of Path#2 step 2,
    CritiqueLLM v2 Eq. 4).

    Args:
        pairs: rows from :func:`make_pairs`.
        pointwise: reference-free pointwise critiques (Path#2 step 1) with ``id``, ``critique`` and ``score``.
        stage / report: as in :func:`augment_queries`.

    Returns:
        The pairs whose two responses both have one, with ``critique_1/2`` and ``score_1/2`` replaced; the others
        are rejected (``missing_input``: a critique was rejected or failed in step 1).
    """
    report = _report(report, stage, "pairs")
    index = {row["id"]: row for row in pointwise}
    rows = list(pairs)
    report.items_in = len(rows)
    out = []
    for row in rows:
        a, b = index.get(row["response_id_1"]), index.get(row["response_id_2"])
        if a is None or b is None:
            report.reject("missing_input", row["pair_id"])
            continue
        out.append(
            {
                **row,
                "critique_1": a["critique"],
                "critique_2": b["critique"],
                "score_1": a["score"],
                "score_2": b["score"],
            }
        )
    report.items_out = len(out)
    return _dataset(out, pairs.column_names)


# ------------------------------------------------------------------------------------------------ 9. cross validation
def cross_validate(
    path1: datasets.Dataset,
    path2: datasets.Dataset,
    *,
    stage: str = "cross_validation",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Cross validation of the two paths' reference-free pairwise critiques (CritiqueLLM v2 §3.2.3): "only contains
    the data whose comparison labels from two paths are consistent. In this case, the critiques from both of the two
    paths are added ... The other data with contradictory comparison labels are strictly filtered" (the paper: 7.7%
    filtered).

    Args:
        path1: Path#1 reference-free pairwise critiques (``pair_id``, ``label``, ...).
        path2: Path#2 reference-free pairwise critiques.
        stage / report: as in :func:`augment_queries`.

    Returns:
        Two rows per agreeing pair (Path#1's then Path#2's, ``id`` = ``"<pair_id>/path1"`` / ``"/path2"``), pairs in
        Path#1 order then Path#2-only ones. The report counts pairs: in = pairs seen in either path, out = pairs
        kept, rejected ``label_mismatch`` (contradictory) and ``missing_path`` (only one path reached this step);
        ``notes["filtered_share"]`` = mismatches / pairs present in both paths.

    Raises:
        ValueError: a pair id twice in one path.
    """
    report = _report(report, stage, "pairs")
    first, second = {}, {}
    for rows, index, name in ((path1, first, "path1"), (path2, second, "path2")):
        for row in rows:
            if row["pair_id"] in index:
                raise BadInputError(f"cross_validate: pair {row['pair_id']!r} twice in {name}")
            index[row["pair_id"]] = row
    order = list(first) + [p for p in second if p not in first]
    report.items_in = len(order)
    out, both, mismatched = [], 0, 0
    for pair_id in order:
        a, b = first.get(pair_id), second.get(pair_id)
        if a is None or b is None:
            report.reject("missing_path", pair_id)
            continue
        both += 1
        if a["label"] != b["label"]:
            mismatched += 1
            report.reject("label_mismatch", pair_id)
            continue
        out.append({**a, "id": f"{pair_id}/path1", "path": "path1"})
        out.append({**b, "id": f"{pair_id}/path2", "path": "path2"})
    report.items_out = len(out) // 2
    report.notes.update(pairs_in_both_paths=both, filtered_share=(mismatched / both) if both else None)
    columns = dict.fromkeys([*path1.column_names, *path2.column_names, "id", "path"])
    return _dataset(out, columns)


# ------------------------------------------------------------------------------------------------ 10. swap augmentation
_SWAP_FIELDS = (
    ("response_1", "response_2"),
    ("generator_1", "generator_2"),
    ("response_id_1", "response_id_2"),
    ("critique_1", "critique_2"),
    ("score_1", "score_2"),
)


def swap_augment(
    pairwise: datasets.Dataset,
    *,
    stage: str = "swap_augmentation",
    report: StageReport | None = None,
) -> datasets.Dataset:
    """Add an order-swapped copy of every pairwise critique (CritiqueLLM v2 §3.3, following Auto-J, Li et al. 2024).

    The copy swaps ``response_1`` / ``response_2`` (and generators, ids, input critiques and scores), maps the label
    with :func:`~hf_critic.core.labels.swap_label` and exchanges the names in the critique with :func:`swap_critique`;
    it gets ``id + "/swap"`` and ``swapped=True``. A copy whose critique does not parse back to the swapped label is
    dropped (``swap_unparseable``; the original stays).

    Args:
        pairwise: rows with ``id``, ``response_1/2``, ``critique``, ``label``.
        stage / report: as in :func:`augment_queries`.

    Returns:
        Originals (``swapped=False``) each followed by its copy. The report counts items in, rows out (originals and
        copies; ``conserved`` is False) and rejected copies.
    """
    report = _report(report, stage, "rows", conserved=False)
    rows = list(pairwise)
    report.items_in = len(rows)
    out = []
    for row in rows:
        out.append({**row, "swapped": False})
        critique = swap_critique(row["critique"])
        expected = swap_label(row["label"])
        parsed = parse_label(critique)
        if parsed.status is not ParseStatus.OK or parsed.label != expected:
            report.reject("swap_unparseable", f"{row['id']}/swap")
            continue
        copy = {**row, "id": f"{row['id']}/swap", "swapped": True, "critique": critique, "label": expected}
        copy["explanation"] = parsed.explanation
        if "label_referenced" in row and row.get("label_referenced") is not None:
            copy["label_referenced"] = swap_label(row["label_referenced"])
        if row.get("critique_referenced"):
            copy["critique_referenced"] = swap_critique(row["critique_referenced"])
        for a, b in _SWAP_FIELDS:
            if a in row:
                copy[a], copy[b] = row[b], row[a]
        out.append(copy)
    report.items_out = len(out)
    return _dataset(out, (*pairwise.column_names, "swapped"))
