"""What ``hf-critic meta-eval`` adds to each run beside the papers' tables, and the paired comparisons across runs.

Per run (:func:`pairwise_extras`, :func:`pointwise_extras`), on the same rows as the critic's own figures:

* ``baselines``: "always response 1", the label prior, "longer wins", "shorter wins" (pairwise), the answer's length
  as its score (pointwise), see :mod:`~hf_critic.meta_eval.length`;
* ``chance``: Cohen's kappa critic vs gold (quadratic-weighted for scores binned to the gold's scale) and
  Krippendorff's alpha among the annotators of ``--label-columns``, with and without the critic
  (:mod:`~hf_critic.meta_eval.chance`);
* ``length``: agreement within terciles of the length ratio, the length-controlled agreement, the positional
  preference (pairwise, :mod:`~hf_critic.meta_eval.length`);
* ``ppi``: with ``--ppi``, the prediction-powered estimate of the human win rate of response 1 or of the mean human
  score (per system), beside the human-only one (:mod:`~hf_critic.meta_eval.ppi`);
* ``rows``: the per-row values a paired comparison needs (not written to report.json).

Across runs, :func:`compare_critics` compares every two critics judged on the same rows of one dataset, and each
critic with the length baseline, figure by figure (:mod:`~hf_critic.meta_eval.paired`).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import schema
from ..core.errors import BadInputError
from ..core.labels import normalize_labels
from ..core.matching import id_conflicts, name_rows, text_identity
from .agreement import pairwise_credits, two_way_decisions
from .chance import annotator_alpha, bin_to_scale
from .length import (
    length_controlled_agreement,
    length_credits,
    length_tercile_agreement,
    pairwise_baselines,
    pointwise_length_baseline,
    positional_preference,
    response_lengths,
)
from .paired import compare_pairwise, compare_pointwise, verdict_line
from .ppi import draw_human_subset, ppi_comparison, win_predictions, win_values

__all__ = [
    "LENGTH_CRITIC",
    "ROW_ID",
    "PPISpec",
    "check_ids",
    "compare_critics",
    "match_rows",
    "pairwise_extras",
    "pointwise_extras",
    "ppi_figures",
    "row_keys",
]
logger = logging.getLogger(__name__)

#: The name of the length baseline when it is compared with the critics.
LENGTH_CRITIC = {"pairwise": "longer wins", "pointwise": "length as score"}


@dataclass(frozen=True)
class PPISpec:
    """Which rows count as human-labelled for prediction-powered inference (``--ppi``).

    Attributes:
        fraction: a seeded random share of the rows (a simulation on a fully labelled benchmark: the other rows' gold
            is hidden from the estimate and shown as the value to cover).
        column: a column holding human labels (pairwise) or scores (pointwise) on some rows only; rows without one
            are unlabelled. Used instead of ``fraction`` when given.
        seed: the seed of the drawn subset.
        confidence: the intervals' coverage.
    """

    fraction: float | None = None
    column: str | None = None
    seed: int = 0
    confidence: float = 0.95


def _column(dataset, name: str | None):
    return dataset[name] if name and name in dataset.column_names else None


def ppi_figures(
    gold: np.ndarray, predictions: np.ndarray, labelled: np.ndarray, groups: Sequence | None = None, confidence=0.95
) -> dict[str, dict[str, Any]]:
    """PPI (lambda = 1) and PPI++ (tuned lambda) beside the human-only interval, over all rows and per group.

    Args:
        gold: the human value of every row ``(n,)`` (NaN where there is none); only ``labelled`` rows are shown to the
            estimates, the mean over all rows is reported as ``all_rows`` (what a simulation's intervals should
            cover).
        predictions: the critic's prediction on every row ``(n,)``.
        labelled: bool ``(n,)``, the human-labelled rows.
        groups: a group per row (systems) for per-group estimates, or None.
        confidence: the intervals' coverage.

    Returns:
        ``{"all" | group: {"ppi", "ppi_tuned": ppi_comparison(...) (each with "ppi", "human_only", "labels_saved",
        ...), "all_rows": mean gold over the group's rows, "n_labelled", "n"}}``.
    """
    y = np.where(labelled, gold, np.nan)
    parts = {"all": np.ones(len(gold), dtype=bool)}
    if groups is not None:
        arr = np.asarray(groups, dtype=object)
        parts.update({str(g): arr == g for g in dict.fromkeys(arr.tolist())})
    out = {}
    for name, m in parts.items():
        finite = gold[m][np.isfinite(gold[m])]
        out[name] = {
            "ppi": ppi_comparison(y[m], predictions[m], confidence),
            "ppi_tuned": ppi_comparison(y[m], predictions[m], confidence, power_tuning=True),
            "all_rows": float(finite.mean()) if len(finite) else math.nan,
            "n_labelled": int(np.isfinite(y[m]).sum()),
            "n": int(m.sum()),
        }
    return out


def _ppi_rows(dataset, gold: np.ndarray, spec: PPISpec, values) -> tuple[np.ndarray, np.ndarray, str]:
    """``(gold to report, labelled mask, what the labelled rows are)`` for a :class:`PPISpec`."""
    if spec.column:
        if spec.column not in dataset.column_names:
            raise BadInputError(f"column={spec.column!r}: no such column (have {dataset.column_names})")
        column = values(dataset[spec.column])
        return column, np.isfinite(column), f"human labels of column {spec.column!r}"
    if spec.fraction is None:
        raise BadInputError(
            "a PPISpec needs the human-labelled rows: fraction= (a share drawn at random) or column= (human labels)"
        )
    labelled = draw_human_subset(len(gold), spec.fraction, spec.seed) & np.isfinite(gold)
    return gold, labelled, f"simulation: {spec.fraction:g} of the rows drawn as human-labelled (seed {spec.seed})"


def pairwise_extras(
    dataset,
    *,
    label: str,
    first,
    swapped,
    unparsed: str,
    two_way: str,
    distributions,
    combined,
    annotators: Sequence[str] = (),
    ppi: PPISpec | None = None,
) -> dict[str, Any]:
    """Baselines, chance-corrected agreement, length and position, PPI and per-row credits of a pairwise run.

    Args:
        dataset: the critique dataset (``response_1`` / ``response_2`` texts for the length figures).
        label: the human label column.
        first: the original-order verdicts ``(n,)``; swapped: the swapped order's, mapped back, or None.
        unparsed, two_way: the policies of :func:`~hf_critic.meta_eval.agreement.pairwise_agreement`.
        distributions, combined: the verdict distributions of the first order and of both orders, or None.
        annotators: the ``--label-columns`` present in the dataset.
        ppi: the PPI rows, or None for no PPI.

    Returns:
        ``{"baselines", "chance", "length", "ppi", "rows"}`` (see the module docstring); ``length`` is empty without
        the response texts.
    """
    # Each column read once, as a list (a datasets Column iterates row by row) and the labels coded once.
    gold = _codes(dataset[label], label)
    first = _codes(first, "critique_label")
    swapped = _codes(swapped, "critique_label_swapped") if swapped is not None else None
    distributions, combined = _values(distributions), _values(combined)
    figures = {"unparsed": unparsed, "two_way": two_way, "distributions": distributions}
    credits = pairwise_credits(first, gold, swapped, combined_distributions=combined, **figures)
    counted = np.isfinite(credits["first_order_agreement"])
    texts = [_column(dataset, c) for c in (schema.RESPONSE_1, schema.RESPONSE_2)]
    has_texts = all(t is not None for t in texts)
    lengths = [response_lengths(_values(t)) for t in texts] if has_texts else [None, None]
    baselines = pairwise_baselines(np.where(counted, gold, np.nan), *lengths, two_way=two_way)
    out: dict[str, Any] = {"baselines": baselines, "length": {}, "ppi": {}}
    humans = {a: _codes(dataset[a], a) for a in annotators}
    out["chance"] = {"alpha": annotator_alpha(humans, first, "nominal")} if len(humans) >= 2 else {}
    length = length_credits(gold, *lengths, two_way=two_way) if has_texts else None
    if has_texts:  # the length-controlled fit is over the pairs whose gold is no tie
        out["length"] = {
            "terciles": length_tercile_agreement(credits, *lengths, length),
            "length_controlled": length_controlled_agreement(two_way_decisions(first, distributions), gold, *lengths),
        }
    out["length"]["positional"] = positional_preference(first, swapped, gold)
    if ppi is not None:
        values, labelled, source = _ppi_rows(dataset, win_values(gold), ppi, lambda v: win_values(_values(v)))
        prediction = win_predictions(first, swapped, combined if combined is not None else distributions)
        out["ppi"] = {
            "target": "win rate of response 1 (a tie counts half)",
            "source": source,
            "estimates": ppi_figures(values, prediction, labelled, None, ppi.confidence),
        }
    out["rows"] = {
        "groups": _questions(dataset),
        "references": gold,
        "credits": credits,
        "baseline": length,
        **row_keys(dataset),
    }
    return out


def _codes(values, name: str) -> np.ndarray:
    """Pairwise labels as float codes 0 / 1 / 2, NaN where unparsed: read once, then fast for every function here."""
    codes = normalize_labels(_values(values), name=name)
    return np.where(codes >= 0, codes, np.nan)


def _values(values):
    """A column as a list (``datasets``' Column slices fast, iterates slowly); None and arrays stay as they are."""
    if values is None or isinstance(values, (list, np.ndarray)):
        return values
    return values[:] if hasattr(values, "__getitem__") else list(values)


def _questions(dataset) -> np.ndarray:
    """The question of each row: the ``query_id`` column, else the question text's id."""
    ids = _column(dataset, "query_id")
    ids = _values(ids) if ids is not None else [schema.query_id(q) for q in _values(dataset[schema.QUESTION])]
    return np.asarray(ids, dtype=object)


def pointwise_extras(
    dataset,
    pred: np.ndarray,
    human: np.ndarray,
    queries: Sequence,
    systems: Sequence | None,
    *,
    annotators: Sequence[str] = (),
    ppi: PPISpec | None = None,
) -> dict[str, Any]:
    """Length baseline, chance-corrected agreement, PPI and per-row scores of a pointwise run.

    Args:
        dataset: the critique dataset (``response`` texts for the length baseline).
        pred: critic scores ``(n,)`` (NaN = unparsed); human: gold scores ``(n,)``.
        queries: the question of each row; systems: the system of each row, or None.
        annotators: the ``--label-columns`` present in the dataset (scores).
        ppi: the PPI rows, or None.

    Returns:
        ``{"baselines", "chance", "length": {}, "ppi", "rows"}``.
    """
    queries, systems = _values(queries), _values(systems)
    responses = _column(dataset, schema.RESPONSE)
    lengths = response_lengths(_values(responses)) if responses is not None else None
    out: dict[str, Any] = {"length": {}, "ppi": {}, "chance": {}, "baselines": {}}
    if lengths is not None:
        out["baselines"]["length_as_score"] = pointwise_length_baseline(lengths, human, queries, systems)
    if len(annotators) >= 2:
        binned = bin_to_scale(pred, human[np.isfinite(human)]) if np.isfinite(human).any() else pred
        humans = {a: np.asarray(_values(dataset[a]), dtype=float) for a in annotators}
        out["chance"]["alpha"] = annotator_alpha(humans, binned, "interval")
    if ppi is not None:
        to_float = lambda v: np.asarray([np.nan if x is None else x for x in _values(v)], dtype=float)  # noqa: E731
        values, labelled, source = _ppi_rows(dataset, human, ppi, to_float)
        parsed = pred[np.isfinite(pred)]
        filled = np.where(np.isfinite(pred), pred, parsed.mean() if len(parsed) else 0.0)
        out["ppi"] = {
            "target": "mean human score",
            "source": source,
            "estimates": ppi_figures(values, filled, labelled, systems, ppi.confidence),
        }
    out["rows"] = {
        "groups": np.asarray(queries, dtype=object),
        "references": human,
        "scores": pred,
        "baseline": lengths,
        **row_keys(dataset),
    }
    return out


#: The column naming a row, by which two critics' rows are matched (else their question and responses).
ROW_ID = "id"


def row_keys(dataset) -> dict[str, np.ndarray | None]:
    """What identifies each row for pairing two critics' runs: by identity, never by position.

    Returns:
        ``{"ids": the ``id`` column as text (None when absent or null somewhere), "contents": the identity of the
        question, reference and responses (:func:`hf_critic.core.matching.text_identity`: whitespace normalised, nothing
        folded)}``, each ``(n,)``.
    """
    ids = _column(dataset, ROW_ID)
    if ids is not None:
        ids = [None if v is None else str(v) for v in _values(ids)]
        ids = np.asarray(ids, dtype=object) if None not in ids else None
    fields = [
        c
        for c in (schema.QUESTION, schema.REFERENCE, schema.RESPONSE, schema.RESPONSE_1, schema.RESPONSE_2)
        if c in dataset.column_names
    ]
    columns = [_values(dataset[c]) for c in fields]
    contents = [text_identity(*row) for row in zip(*columns, strict=True)]
    return {"ids": ids, "contents": np.asarray(contents if fields else [""] * len(dataset), dtype=object)}


def match_rows(a: dict, b: dict) -> tuple[np.ndarray, np.ndarray, str]:
    """The rows of two runs that are the same rows, whatever their order.

    By the ``id`` column when both runs have one, else by question, reference and responses, and always by the gold
    (a row whose gold differs between the runs is not the same row); rows with one key (a benchmark judged by several
    annotators repeats its pairs) are paired in their order of appearance. Rows paired by id may hold different texts:
    :func:`compare_critics` refuses them (:func:`check_ids`).

    Returns:
        ``(indices into a, indices into b, "id" | "content")``, in a's order.
    """
    how = "id" if a.get("ids") is not None and b.get("ids") is not None else "content"
    keys_a = _occurrences(a["ids"] if how == "id" else a["contents"], a["references"])
    keys_b = _occurrences(b["ids"] if how == "id" else b["contents"], b["references"])
    where = {k: j for j, k in enumerate(keys_b)}
    pairs = [(i, where[k]) for i, k in enumerate(keys_a) if k in where]
    return np.asarray([i for i, _ in pairs], dtype=int), np.asarray([j for _, j in pairs], dtype=int), how


def _occurrences(keys: np.ndarray, gold) -> list[tuple]:
    """Each row's ``(key, gold, how many earlier rows had both)``: unique, and equal across runs for the same row."""
    seen: Counter = Counter()
    out = []
    for key, value in zip(keys.tolist(), np.asarray(gold, dtype=float).tolist(), strict=True):
        tag = (key, "nan" if math.isnan(value) else value)
        out.append((*tag, seen[tag]))
        seen[tag] += 1
    return out


def _take(rows: dict, index: np.ndarray) -> dict:
    """A run's per-row values on the rows ``index``."""

    def pick(value):
        if isinstance(value, dict):
            return {k: pick(v) for k, v in value.items()}
        return None if value is None else np.asarray(value)[index]

    return {k: pick(v) for k, v in rows.items()}


def compare_critics(results: Sequence, *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> list:
    """Paired comparisons of every two runs on the same rows of one dataset, and of each run with length.

    Args:
        results: :class:`~hf_critic.meta_eval.critic_report.RunResult` objects with their ``rows``.
        resamples: bootstrap resamples of the questions and random swap patterns of the permutation tests.
        seed: seed of both.
        confidence: the intervals' coverage and the tests' level.

    Returns:
        ``[{"dataset", "task", "a", "b", "figures": {figure: {"a", "b", "difference", "ci", "p_value", "test", "n",
        ...}}, "rows": rows compared, "matched_by": "id" | "content", "unmatched": [A's, B's], "line": the plain line
        with the rows compared}]``. Rows are paired by identity (:func:`match_rows`), whatever their order; rows of one
        run that the other lacks are left out, with a warning; two runs with no row in common are not compared.
    """
    out = []
    runs = [r for r in results if r.rows]
    for i, a in enumerate(runs):
        pairs = [(b.critic, b.rows) for b in runs[i + 1 :] if b.dataset == a.dataset and b.task == a.task]
        if a.rows.get("baseline") is not None:  # every run against length
            pairs.append((LENGTH_CRITIC[a.task], _baseline_rows(a)))
        for name_b, rows_b in pairs:
            if rows_b.get("contents") is a.rows["contents"]:  # the run's own length baseline: its very rows
                index_a = index_b = np.arange(len(a.rows["contents"]))
                how = "position (the run's own rows)"
            else:
                index_a, index_b, how = match_rows(a.rows, rows_b)
                if how == "id":
                    check_ids(a.rows, rows_b, index_a, index_b, f"{a.dataset}: {a.critic} vs {name_b}")
            n_a, n_b, n = len(a.rows["contents"]), len(rows_b["contents"]), len(index_a)
            if n < max(n_a, n_b):
                logger.warning(
                    "%s: %s vs %s: %d of %d and %d of %d rows match by %s; compared on the %d that do",
                    a.dataset,
                    a.critic,
                    name_b,
                    n,
                    n_a,
                    n,
                    n_b,
                    how,
                    n,
                )
            if not n:
                continue
            unmatched = _unmatched(a.rows, rows_b, index_a, index_b) if n < max(n_a, n_b) else ""
            rows_a, rows_b = _take(a.rows, index_a), _take(rows_b, index_b)
            figures = _compare(a.task, rows_a, rows_b, resamples, seed, confidence)
            line = f"{verdict_line(a.critic, name_b, figures, confidence)} [{n} rows matched by {how}{unmatched}]"
            out.append(
                {
                    "dataset": a.dataset,
                    "task": a.task,
                    "a": a.critic,
                    "b": name_b,
                    "figures": figures,
                    "rows": n,
                    "matched_by": how,
                    "unmatched": [n_a - n, n_b - n],
                    "line": line,
                }
            )
    return out


def check_ids(a: dict, b: dict, index_a: np.ndarray, index_b: np.ndarray, where: str) -> None:
    """Refuse rows paired by id whose texts differ: the two files' ids then name other rows, and no row paired by
    them can be trusted.

    Args:
        a, b: the runs' rows (:func:`row_keys`); index_a, index_b: the rows paired (:func:`match_rows`); where: the
            message's lead (dataset and critics).

    Raises:
        ValueError: one line counting the conflicting rows and naming the first ids.
    """
    pairs = list(zip(index_a.tolist(), index_b.tolist(), strict=True))
    wrong = [pairs[k][0] for k in id_conflicts(pairs, a["contents"], b["contents"])]
    if wrong:
        raise BadInputError(
            f"{where}: {len(wrong)} of the {len(pairs)} rows paired by id hold another question or other "
            f"responses in each file ({name_rows(wrong, a['ids'])}): the files' ids name other rows; give "
            "both files the same rows' ids, or drop one file's id column to pair rows by their text"
        )


def _unmatched(a: dict, b: dict, index_a: np.ndarray, index_b: np.ndarray) -> str:
    """The rows left out, counted and named: ``"; 3 of A's and 2 of B's rows unmatched (A: ids 'x', ...; B: rows 4)"``."""
    left_a = sorted(set(range(len(a["contents"]))) - set(index_a.tolist()))
    left_b = sorted(set(range(len(b["contents"]))) - set(index_b.tolist()))
    named = "; ".join(
        f"{side}: {name_rows(left, rows.get('ids'))}"
        for side, left, rows in (("A", left_a, a), ("B", left_b, b))
        if left
    )
    return f"; {len(left_a)} of A's and {len(left_b)} of B's rows unmatched ({named})"


def _baseline_rows(run) -> dict:
    """The length baseline's rows in the place of a critic's."""
    rows = dict(run.rows)
    if run.task == "pairwise":
        rows["credits"] = run.rows["baseline"]
    else:
        rows["scores"] = run.rows["baseline"]
    return rows


def _compare(task: str, a: dict, b: dict, resamples: int, seed: int, confidence: float) -> dict:
    kwargs = {"resamples": resamples, "seed": seed, "confidence": confidence}
    if task == "pairwise":
        return compare_pairwise(a["credits"], b["credits"], a["groups"], **kwargs)
    return compare_pointwise(a["scores"], b["scores"], a["references"], a["groups"], **kwargs)
