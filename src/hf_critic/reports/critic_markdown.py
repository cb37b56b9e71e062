"""The Markdown of a meta-evaluation report (:func:`render_markdown`): the papers' table layouts, several critics side
by side (see :mod:`hf_critic.meta_eval.critic_report` for what each table shows)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core import schema
from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE
from ..meta_eval.run_result import LABEL_SHORT, RunResult
from .comparison_markdown import comparison_sections
from .markdown_tables import number as _f
from .markdown_tables import table as _table
from .markdown_tables import with_interval as _fci

__all__ = ["render_markdown"]


def _setting(result: RunResult) -> str:
    return "referenced" if result.referenced else "reference-free"


def _datasets(results: Sequence[RunResult], task: str) -> list[tuple[str, bool]]:
    return list(dict.fromkeys((r.dataset, r.referenced) for r in results if r.task == task))


def _critics(results: Sequence[RunResult]) -> list[str]:
    return list(dict.fromkeys(r.critic for r in results))


def render_markdown(
    results: Sequence[RunResult],
    title: str = "Meta-evaluation",
    plots: Sequence[str] = (),
    paired: Sequence[dict] = (),
) -> str:
    """The report as Markdown: how figures were counted, Table 2 and Table 3 layouts, accuracy and macro P / R / F1
    with per-class counts, win / tie / lose, per-system means and ranks, the human ceiling, parse failures,
    per-category tables, plot links. Every headline figure carries its bootstrap interval when one was computed.

    Args:
        results: one :class:`RunResult` per (critic, dataset).
        title: the first heading.
        plots: relative paths of PNG files to link at the end.
        paired: the paired comparisons of :func:`~hf_critic.meta_eval.critic_extras.compare_critics`; with the runs'
            baselines, agreement beyond chance, length and position and PPI figures they fill the sections of
            :func:`~hf_critic.meta_eval.comparison_markdown.comparison_sections`.

    Returns:
        The Markdown text.
    """
    out = [f"# {title}", ""]
    out += _policy_section(results)
    out += _pointwise_section(results)
    out += _pairwise_section(results)
    out += comparison_sections(results, paired)
    out += _classes_section(results)
    out += _win_tie_lose_section(results)
    out += _systems_section(results)
    out += _ceiling_section(results)
    out += _parse_failures_section(results)
    out += _category_sections(results)
    if plots:
        out += ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in plots] + [""]
    return "\n".join(out)


def _policy_section(results: Sequence[RunResult]) -> list[str]:
    """How the figures were counted, stated up front so they can be compared with a paper's."""
    policies = sorted({r.unparsed for r in results if r.task == "pairwise"})
    meaning = {
        "wrong": "count as wrong (and as inconsistent), kept in every denominator",
        "tie": "count as a tie, as papers that map failures to tie do",
        "drop": "are dropped: the pair leaves every denominator",
    }
    lines = []
    for policy in policies:
        lines.append(f"- Unparsed pairwise verdicts {meaning[policy]} (`--unparsed {policy}`).")
    if any(r.n_abstained for r in results):
        lines.append(
            "- Abstained rows (a cascade's rows no critic was confident enough to keep) are neither unparsed "
            "nor wrong: every figure is of the decided rows, with the coverage beside it."
        )
    if any(r.task == "pointwise" for r in results):
        lines.append("- Unparsed pointwise scores are left out of the correlations and counted (Parse failures).")
        lines.append(
            "- Within-question accuracy: every pair of one question's responses with different human scores, "
            "ordered by the critic's scores; a tie in the critic's scores counts as half, a pair with an unparsed "
            "score is left out and counted."
        )
    if any("two_way_accuracy" in r.metrics for r in results if r.task == "pairwise"):
        lines.append(
            "- Two-way accuracy (on by default where the human labels have no tie; `--two-way auto|on|off`): the "
            "critic's choice between response 1 and response 2 alone. From a verdict distribution, P(response 1 "
            "better) against P(response 2 better), renormalised without the tie; from text verdicts, a tie counts "
            "as half. Pairs with a tie as gold label are left out of it."
        )
    resamples = sorted({r.bootstrap for r in results if r.bootstrap})
    if resamples:
        lines.append(
            f"- In brackets: 95% percentile bootstrap intervals over {', '.join(map(str, resamples))} resamples "
            "of the pairs (of the queries for correlations and the within-question accuracy; `--bootstrap`)."
        )
    return lines + [""] if lines else []


def _pointwise_section(results: Sequence[RunResult]) -> list[str]:
    by_key = {(r.critic, r.dataset): r for r in results}
    pointwise = _datasets(results, "pointwise")
    if not pointwise:
        return []
    out = ["## Pointwise grading: correlation with human scores (CritiqueLLM Table 2 layout)", ""]
    header = ["Critic"]
    sub = [""]
    for level in ("Text", "System"):
        for dataset, referenced in pointwise:
            header += [f"{level}-level: {dataset} ({'ref.' if referenced else 'ref.-free'})", "", ""]
            sub += ["r", "ρ", "τ"]
    rows = []
    for critic in _critics(results):
        row = [critic]
        for level in ("text", "system"):
            for dataset, _ in pointwise:
                r = by_key.get((critic, dataset))
                row += [_fci(r.metrics, f"{level}_{k}") if r else "" for k in ("pearson", "spearman", "kendall")]
        rows.append(row)
    out += _table(header, rows, sub)
    out += [
        "",
        "Text-level: per-query correlation averaged over queries; system-level: correlation of per-system mean "
        "scores (– when the data has no system ids or fewer than two systems). Queries used / skipped "
        "(fewer than two graded responses or constant scores):",
        "",
    ]
    for critic in _critics(results):
        for dataset, _ in pointwise:
            r = by_key.get((critic, dataset))
            if r:
                m = r.metrics
                out.append(
                    f"- {critic} on {dataset}: {m['n_queries_used']} / {m['n_queries_skipped']} queries, "
                    f"{m.get('n_systems', 0)} systems, {m['n_rows']} responses"
                )
    return out + [""] + _better_worse_section(results)


def _better_worse_section(results: Sequence[RunResult]) -> list[str]:
    """Within-question pairwise accuracy of every pointwise run, beside its text-level and row-level (pooled)
    correlation."""
    runs = [r for r in results if r.task == "pointwise"]
    if not runs:
        return []
    rows = [
        [
            r.critic,
            r.dataset,
            _fci(r.metrics, "within_question_accuracy", percent=True),
            str(r.metrics.get("within_question_pairs", "")),
            str(r.metrics.get("within_question_ties", "")),
            str(r.metrics.get("within_question_pairs_unparsed", "")),
            _fci(r.metrics, "text_pearson"),
            _fci(r.metrics, "pooled_pearson"),
            _f(r.metrics.get("pooled_spearman")),
            _f(r.metrics.get("pooled_kendall")),
        ]
        for r in runs
    ]
    header = [
        "Critic",
        "Dataset",
        "Within-question acc. (%)",
        "Pairs",
        "Critic ties",
        "Unparsed pairs",
        "Text-level r",
        "Row-level r",
        "Row-level ρ",
        "Row-level τ",
    ]
    out = ["## Pointwise grading: the better response of a question above the worse", ""]
    out += _table(header, rows)
    return out + [
        "",
        "Within-question accuracy: share of the pairs of one question's responses with different human scores that "
        "the critic's scores order the same way (a critic tie counts as half; pairs with an unparsed critic score "
        "left out). Row-level: one correlation over all responses pooled, whatever their question.",
        "",
    ]


def _pairwise_section(results: Sequence[RunResult]) -> list[str]:
    by_key = {(r.critic, r.dataset): r for r in results}
    pairwise = _datasets(results, "pairwise")
    if not pairwise:
        return []
    out = ["## Pairwise comparison: agreement and consistency (CritiqueLLM Table 3 layout)", ""]
    header, sub = ["Critic"], [""]
    keys_of = {}
    for dataset, referenced in pairwise:
        keys = ["agreement", "consistency", "first_order_agreement"]
        names = ["Agr.", "Cons.", "First-order"]
        if any(r.n_abstained for r in results if r.dataset == dataset and r.task == "pairwise"):
            keys, names = [*keys, "coverage"], [*names, "Coverage (decided rows)"]
        if any("two_way_accuracy" in r.metrics for r in results if r.dataset == dataset and r.task == "pairwise"):
            keys += ["two_way_accuracy", "two_way_accuracy_combined"]
            names += ["2-way", "2-way comb."]
        keys_of[dataset] = keys
        header += [f"{dataset} ({'ref.' if referenced else 'ref.-free'})"] + [""] * (len(keys) - 1)
        sub += names
    rows = []
    for critic in _critics(results):
        row = [critic]
        for dataset, _ in pairwise:
            r = by_key.get((critic, dataset))
            keys = keys_of[dataset]
            order_free = r is not None and (r.verdicts or {}).get("verdict_source") == "reward"
            cells = (
                [_fci({**r.metrics, "coverage": r.coverage}, k, percent=True) for k in keys] if r else [""] * len(keys)
            )
            if order_free:  # a reward critic judges once: consistency under swap is true by construction, not measured
                cells = ["n/a (order-free)" if k == "consistency" else c for k, c in zip(keys, cells, strict=True)]
            row += cells
        rows.append(row)
    out += _table(header, rows, sub)
    out += [
        "",
        "Percentages. Agreement: both orders match the human label; consistency: the two orders agree; "
        "first-order: the original order alone (– without swapped verdicts).",
    ]
    if any(len(keys) > 3 for keys in keys_of.values()):
        out.append(
            "Two-way (where the human labels have no tie, or with `--two-way on`): which of the two responses the "
            "critic prefers, the tie option dropped: from the verdict distribution, P(response 1 better) against "
            "P(response 2 better), renormalised; from text verdicts, a tie counts as half. 2-way: the original "
            "order alone; 2-way comb.: both orders together (the averaged distributions, or both text verdicts "
            "added: opposite choices count as half)."
        )
    return out + [""]


def _classes_section(results: Sequence[RunResult]) -> list[str]:
    """Accuracy and macro precision / recall / F1 of the original-order verdicts, then counts per class."""
    runs = [r for r in results if r.task == "pairwise"]
    if not runs:
        return []
    keys = ("accuracy", "macro_precision", "macro_recall", "macro_f1")
    rows = [[r.critic, r.dataset, *(_fci(r.metrics, k, percent=True) for k in keys)] for r in runs]
    out = ["## Pairwise comparison: accuracy and macro precision / recall / F1", ""]
    out += _table(["Critic", "Dataset", "Accuracy", "Macro P", "Macro R", "Macro F1"], rows)
    out += ["", "Percentages, original-order verdicts; macro averages over the classes present. Per class:", ""]
    rows = [
        [
            r.critic,
            r.dataset,
            cls,
            str(v["n_gold"]),
            str(v["n_predicted"]),
            str(v["n_correct"]),
            _f(v["precision"], percent=True),
            _f(v["recall"], percent=True),
            _f(v["f1"], percent=True),
        ]
        for r in runs
        for cls, v in r.metrics.get("per_class", {}).items()
    ]
    out += _table(["Critic", "Dataset", "Class", "Gold", "Predicted", "Correct", "P", "R", "F1"], rows)
    return out + [""]


def _win_tie_lose_section(results: Sequence[RunResult]) -> list[str]:
    """Win / tie / lose of response 1's system against response 2's, by the critic and by the humans (Auto-J
    Eval-C style)."""
    runs = [r for r in results if r.task == "pairwise"]
    if not runs:
        return []
    rows = []
    for r in runs:
        m, human = r.metrics, _human_rates(r)
        rest = 1 - sum(m.get(k, math.nan) for k in ("win_rate", "tie_rate", "lose_rate"))
        rows.append(
            [
                r.critic,
                r.dataset,
                *(_fci(m, k, percent=True) for k in ("win_rate", "tie_rate", "lose_rate")),
                _f(rest, percent=True),
                " / ".join(_f(human.get(k), percent=True) for k in ("win_rate", "tie_rate", "lose_rate")),
            ]
        )
    out = ["## Win / tie / lose (response 1 against response 2)", ""]
    out += _table(["Critic", "Dataset", "Win", "Tie", "Lose", "Unparsed", "Humans (win / tie / lose)"], rows)
    return out + [
        "",
        "Percentages of pairs. With both orders judged, a pair whose two verdicts conflict is a tie.",
        "",
    ]


def _human_rates(result: RunResult) -> dict[str, float]:
    """Share of gold labels preferring response 1, tie, response 2: the confusion matrix's row sums."""
    counts = np.asarray(result.confusion.get("counts", [[]]), dtype=float).sum(axis=1)
    rows = dict(zip(result.confusion.get("rows", []), counts, strict=True)) if result.confusion else {}
    total = sum(rows.values()) or math.nan
    names = {"win_rate": RESPONSE_1_WINS, "tie_rate": TIE, "lose_rate": RESPONSE_2_WINS}
    return {k: rows.get(LABEL_SHORT[code], 0) / total for k, code in names.items()}


def _systems_section(results: Sequence[RunResult]) -> list[str]:
    """Per-system mean scores and ranks, the table behind system-level correlation."""
    out = []
    for r in results:
        table = r.metrics.get("per_system") if r.task == "pointwise" else None
        if not table:
            continue
        rows = [
            [
                str(system),
                str(v["n"]),
                _f(v["human_mean"]),
                _f(v["human_rank"], 1),
                _f(v["critic_mean"]),
                _f(v["critic_rank"], 1),
            ]
            for system, v in table.items()
        ]
        out += [f"## Per system: {r.critic} on {r.dataset} (mean scores and ranks)", ""]
        out += _table(["System", "Responses", "Human mean", "Human rank", "Critic mean", "Critic rank"], rows)
        out += ["", "Rank 1 = highest mean; only responses with a parsed critic score and a human score count.", ""]
    return out


def _ceiling_section(results: Sequence[RunResult]) -> list[str]:
    """Each annotator's agreement with the aggregate gold label, next to the critic's."""
    out = []
    for r in results:
        if not r.ceiling:
            continue
        pairwise = r.task == "pairwise"
        key = "agreement" if pairwise else "text_pearson"
        rows = [[name, _f(v.get(key), percent=pairwise), str(v.get("n", ""))] for name, v in r.ceiling.items()]
        critic = _fci(r.metrics, "first_order_agreement" if pairwise else "text_pearson", percent=pairwise)
        rows.append([f"critic: {r.critic}", critic, str(r.metrics.get("n", r.metrics.get("n_queries_used", "")))])
        what = "agreement with the majority (%)" if pairwise else "text-level Pearson r with the mean score"
        out += [f"## Human ceiling: {r.dataset} ({what})", ""]
        out += _table(["Annotator", "Value", "Pairs" if pairwise else "Queries"], rows)
        out += [
            "",
            "Each annotator against the aggregate of all annotators (their own vote included, as the papers count "
            "it); the critic's first-order figure against the same aggregate for comparison.",
            "",
        ]
    return out


def _parse_failures_section(results: Sequence[RunResult]) -> list[str]:
    abstained = any(r.n_abstained for r in results)
    out = ["## Parse failures and abstentions" if abstained else "## Parse failures", ""]
    rows = [
        [
            r.critic,
            r.dataset,
            r.task,
            _setting(r),
            str(r.n_rows),
            f"{r.n_unparsed} / {r.n_critiques}",
            _f(r.parse_failure_rate, percent=True),
        ]
        + ([str(r.n_abstained), _f(r.coverage, percent=True)] if abstained else [])
        for r in results
    ]
    header = ["Critic", "Dataset", "Task", "Setting", "Rows", "Unparsed", "Rate (%)"]
    out += _table(header + (["Abstained", "Coverage (%)"] if abstained else []), rows)
    if abstained:
        out += [
            "",
            "Rows: the decided rows every figure is of. Abstained: a cascade's rows no critic was confident "
            "enough to keep; they are neither unparsed nor wrong. Coverage: decided rows / all rows.",
        ]
    return out + [""]


def _category_sections(results: Sequence[RunResult]) -> list[str]:
    out = []
    for dataset in dict.fromkeys(r.dataset for r in results):
        runs = [r for r in results if r.dataset == dataset and r.per_category]
        if not runs:
            continue
        task = runs[0].task
        if task == "pointwise":
            key, label = "text_pearson", "text-level Pearson r"
        else:
            key, label = (
                "agreement",
                "agreement / consistency (%)" if "consistency" in runs[0].metrics else "agreement (%)",
            )
            if "consistency" not in runs[0].metrics:
                key = "first_order_agreement"
        out += [f"## Per category: {dataset} ({label})", ""]
        cats = list(dict.fromkeys(c for r in runs for c in r.per_category))
        rows = []
        for cat in cats:
            row = [f"{cat} ({english})" if (english := schema.normalize_category(cat)) and english != cat else cat]
            for r in runs:
                v = r.per_category.get(cat, {})
                count = v.get("n_queries_used", v.get("n"))
                value = _fci(v, key, percent=task == "pairwise")
                if task == "pairwise" and "consistency" in v:
                    value += f" / {_fci(v, 'consistency', percent=True)}"
                row.append(f"{value} ({count})" if v else "")
            rows.append(row)
        count_name = "queries used" if task == "pointwise" else "pairs"
        out += _table(["Category"] + [r.critic for r in runs], rows)
        out += ["", f"In parentheses: {count_name}.", ""]

    return out + _verdict_sources(results)


def _verdict_sources(results: Sequence[RunResult]) -> list[str]:
    """The verdict sources of runs with probability read-outs, one table per task (see :mod:`.verdicts`)."""
    out = []
    pointwise = [r for r in results if r.verdicts and r.task == "pointwise"]
    if pointwise:
        out += ["## Verdict sources: pointwise (pooled correlation with the human scores)", ""]
        rows = [
            [
                r.critic,
                r.dataset,
                source,
                _f(f["pearson"]),
                _f(f["spearman"]),
                _f(f["kendall"]),
                str(f["n"]),
                str(f["n_without_verdict"]),
                _f(f.get("within_question_accuracy"), percent=True),
                str(f.get("within_question_pairs", "")),
                _f(f.get("mode_accuracy"), percent=True),
            ]
            for r in pointwise
            for source, f in r.verdicts.items()
        ]
        header = [
            "Critic",
            "Dataset",
            "Verdict",
            "Pearson",
            "Spearman",
            "Kendall",
            "Rows",
            "No verdict",
            "Within-question acc. (%)",
            "Pairs",
            "Mode = human (%)",
        ]
        out += _table(header, rows) + [""]
    pairwise = [r for r in results if r.verdicts and r.task == "pairwise"]
    if pairwise:
        out += ["## Verdict sources: pairwise (%, with baselines on the same pairs)", ""]
        names = {
            "text": "text",
            "probability_first_order": "probability, first order",
            "combined": "probability, both orders combined",
            "always_response_1": "always 'response 1'",
            "label_prior": "label prior",
        }
        two_way = any("two_way_n" in r.verdicts for r in pairwise)
        rows = []
        for r in pairwise:
            for key, name in names.items():
                f = r.verdicts.get(key)
                if f is not None:
                    reward = r.verdicts.get("verdict_source") == "reward" and key == "probability_first_order"
                    name = "reward, order-free" if reward else name
                    consistency = "n/a (order-free)" if reward else _f(f.get("consistency"), percent=True)
                    row = [
                        r.critic,
                        r.dataset,
                        name,
                        _f(f.get("agreement"), percent=True),
                        consistency,
                        _f(f.get("first_order_agreement"), percent=True),
                    ]
                    if two_way:
                        row += [_f(f.get(k), percent=True) for k in ("two_way_accuracy", "two_way_accuracy_combined")]
                    rows.append(row)
        header = ["Critic", "Dataset", "Verdict", "Agreement", "Consistency", "First-order"]
        out += _table(header + (["2-way", "2-way comb."] if two_way else []), rows) + [""]
        for r in pairwise:
            c = r.verdicts.get("calibration")
            if c:
                out.append(f"- {r.critic} on {r.dataset}: ECE {_f(c['ece'])} of the decided label over {c['n']} pairs")
        out += [
            "",
            "The combined decision averages both orders' distributions, so it has no order to disagree with; the "
            "baselines answer 'response 1' always, or the most frequent human label (first-order agreement).",
            "",
        ]
    return out


# --------------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------------
