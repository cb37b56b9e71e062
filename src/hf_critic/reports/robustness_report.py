"""The judge-attack robustness report of ``hf-critic meta-eval --attacks``: ``attacks.md`` (a Markdown table) and
``attacks.json`` (every row's figures), from the figures :mod:`hf_critic.meta_eval.attacks` computes (pairwise accuracy drop and flip rate, pointwise score shift of a
content-free answer; Zhao et al. 2025)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

__all__ = ["robustness_markdown", "write_robustness_report"]


def _pct(p: dict) -> str:
    if not p["n"]:
        return "–"
    return f"{100 * p['rate']:.1f} [{100 * p['ci'][0]:.1f}, {100 * p['ci'][1]:.1f}] ({p['k']}/{p['n']})"


def _orders_line(pairwise: Sequence[dict]) -> str:
    """Which orders the pairs were judged in (the main run's ``--swap``), from the rows' ``orders`` field."""
    orders = {r.get("orders", "one") for r in pairwise}
    if orders == {"both"}:
        return (
            "Orders judged: both, as in the main run (--swap): each pair, clean and attacked, in the given and the "
            "swapped order; a verdict counts when the two orders agree, a conflict is a tie (so the position swap "
            "moves nothing here)."
        )
    if orders == {"one"}:
        return (
            "Orders judged: the given order only, as in the main run (--no-swap); the position-swap attack "
            "judges the swapped order."
        )
    return "Orders judged: per row's `orders` field in attacks.json (runs with and without --swap)."


def robustness_markdown(results: Sequence[dict]) -> str:
    """A Markdown robustness table from rows ``{"critic", "dataset", "attack", "task", "orders", **figures}`` of
    :func:`~hf_critic.meta_eval.attacks.pairwise_robustness` (pairwise) or
    :func:`~hf_critic.meta_eval.attacks.pointwise_shift` (pointwise); ``orders`` (``"both"`` or
    ``"one"``) says which orders the pairs were judged in, and a line under the pairwise table says it."""
    lines = ["# Robustness to judge attacks", ""]
    pairwise = [r for r in results if r["task"] == "pairwise"]
    if pairwise:
        lines += [
            "| Critic | Dataset | Attack | Accuracy (%) | Attacked accuracy (%) | Drop (points) | Flip rate (%) |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for r in pairwise:
            ci = r["accuracy_drop_ci"]
            ci = ci if isinstance(ci, str) else ", ".join(f"{100 * x:.1f}" for x in ci)
            lines.append(
                f"| {r['critic']} | {r['dataset']} | {r['attack']} | {_pct(r['clean_accuracy'])} | "
                f"{_pct(r['attacked_accuracy'])} | {100 * r['accuracy_drop']:.1f} [{ci}] | "
                f"{_pct(r['flip_rate'])} |"
            )
        lines += [
            "",
            "The worse answer of each pair is attacked. Flip rate: of the pairs the critic judged right unattacked, "
            "the share whose verdict now names the attacked answer (Clopper-Pearson interval). Drop: accuracy "
            "unattacked minus attacked (paired bootstrap interval); a tie or an unparsed verdict is never right.",
            "",
            _orders_line(pairwise),
            "",
        ]
    pointwise = [r for r in results if r["task"] == "pointwise"]
    if pointwise:
        lines += [
            "| Critic | Dataset | Content-free answer | Score shift vs reference | At least the reference's score (%) |",
            "|---|---|---|---:|---:|",
        ]
        for r in pointwise:
            low, high = r["mean_shift_ci"]
            lines.append(
                f"| {r['critic']} | {r['dataset']} | {r['attack']} | {r['mean_shift']:+.2f} [{low:+.2f}, {high:+.2f}] "
                f"(n={r['n']}) | {_pct(r['false_positive'])} |"
            )
        lines += ["", "Zhao et al. 2025: a robust critic scores a content-free answer far below the reference.", ""]
    return "\n".join(lines)


def write_robustness_report(results: Sequence[dict], output_dir: str | Path) -> str:
    """Write ``attacks.md`` (:func:`robustness_markdown`) and ``attacks.json`` (``results`` as they are) into the
    existing folder ``output_dir``.

    Returns:
        The Markdown table (without the final newline the file ends with).
    """
    text = robustness_markdown(results)
    (Path(output_dir) / "attacks.md").write_text(text + "\n", encoding="utf-8")
    (Path(output_dir) / "attacks.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return text
