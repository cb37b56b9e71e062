"""The report's sections on which critic is better and how sure: paired comparisons, baselines on the same rows,
agreement beyond chance, length and position, human-corrected (prediction-powered) estimates.

Rendered by :func:`~hf_critic.meta_eval.critic_markdown.render_markdown` from the fields
:func:`~hf_critic.meta_eval.critic_report.evaluate_critiques` fills (``baselines``, ``chance``, ``length``, ``ppi``)
and from :func:`~hf_critic.meta_eval.critic_extras.compare_critics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..meta_eval.bootstrap import format_interval
from ..meta_eval.paired import FIGURE_NAMES
from .markdown_tables import number, table, with_interval

__all__ = ["comparison_sections"]


#: Which Cohen's kappa each table gives: the two implementations differ on unparsed verdicts.
PAIRWISE_KAPPA_NOTE = (
    "Pairwise κ: Cohen's kappa (1960), unweighted, over all pairs with a gold label, an unparsed verdict counting as "
    "a category of its own (hf_critic.meta_eval.agreement; chance.cohen_kappa would leave those pairs out)."
)
POINTWISE_KAPPA_NOTE = (
    "Pointwise κ: quadratic-weighted (Cohen, 1968), the critic's scores binned to the gold's scale, unparsed scores "
    "left out (hf_critic.meta_eval.chance.binned_weighted_kappa)."
)


def comparison_sections(results: Sequence, paired: Sequence[dict] = ()) -> list[str]:
    """Markdown lines of the sections, in order: paired comparisons, baselines, agreement beyond chance, length and
    position, PPI; a section with nothing to show is left out.

    Args:
        results: the :class:`~hf_critic.meta_eval.critic_report.RunResult` objects.
        paired: :func:`~hf_critic.meta_eval.critic_extras.compare_critics` output.
    """
    return (
        _paired_section(paired)
        + _baselines_section(results)
        + _chance_section(results)
        + _length_section(results)
        + _ppi_section(results)
    )


def _p(p: Any) -> str:
    if p is None or not math.isfinite(p):
        return "–"
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def _paired_section(paired: Sequence[dict]) -> list[str]:
    if not paired:
        return []
    out = ["## Which critic is better? Paired comparisons on the same rows", ""]
    rows = []
    for c in paired:
        for name, f in c["figures"].items():
            pct = "pearson" not in name
            d, ci = f["difference"], f["ci"]
            diff = number(d, percent=pct) + (format_interval(ci, lambda x, p=pct: number(x, percent=p)) or " [–, –]")
            rows.append(
                [
                    c["dataset"],
                    c["a"],
                    c["b"],
                    FIGURE_NAMES.get(name, name),
                    number(f["a"], percent=pct),
                    number(f["b"], percent=pct),
                    diff,
                    _p(f["p_value"]),
                    f["test"],
                    str(f["n"]),
                ]
            )
    out += table(["Dataset", "A", "B", "Figure", "Value of A", "Value of B", "A - B [95% CI]", "p", "Test", "n"], rows)
    out += ["", "In one line each:", ""] + [f"- {c['dataset']}: {c['line']}" for c in paired]
    return out + [
        "",
        "Accuracies in percent (differences in points), correlations as numbers. Intervals: paired bootstrap over "
        "the questions (a question's rows move together). p: exact McNemar test on the pairs where the two "
        "credits differ (agreement figures), paired permutation test swapping the two critics' scores within "
        "questions (correlations, within-question accuracy). 'Better' means p < 0.05; only rows both critics count "
        "are compared.",
        "",
    ]


def _baselines_section(results: Sequence) -> list[str]:
    out = []
    pairwise = [r for r in results if r.task == "pairwise" and r.baselines]
    if pairwise:
        names = {
            "always_response_1": "always 'response 1'",
            "label_prior": "label prior",
            "longer_wins": "longer wins",
            "shorter_wins": "shorter wins",
        }
        two_way = any("two_way_accuracy" in r.metrics for r in pairwise)
        rows = []
        for r in pairwise:
            entries = [(f"critic: {r.critic}", r.metrics)]
            entries += [
                (f"{name} ('{b['label']}')" if "label" in b else name, b)
                for key, name in names.items()
                if (b := r.baselines.get(key))
            ]
            for name, f in entries:
                row = [
                    r.dataset,
                    name,
                    number(f.get("first_order_agreement"), percent=True),
                    number(f.get("cohen_kappa")),
                ]
                rows.append(row + ([number(f.get("two_way_accuracy"), percent=True)] if two_way else []))
        out += ["## Baselines on the same pairs", ""]
        header = ["Dataset", "Verdict", "First-order (%)", "Cohen's κ"] + (["Two-way (%)"] if two_way else [])
        out += table(header, rows)
        out += [
            "",
            "Longer / shorter wins: the response with more / fewer words; a tie on equal lengths. "
            f"{PAIRWISE_KAPPA_NOTE}",
            "",
        ]
    pointwise = [r for r in results if r.task == "pointwise" and r.baselines.get("length_as_score")]
    if pointwise:
        keys = ("text_pearson", "pooled_pearson", "within_question_accuracy")
        rows = []
        for r in pointwise:
            for name, f in ((f"critic: {r.critic}", r.metrics), ("length as score", r.baselines["length_as_score"])):
                rows.append(
                    [
                        r.dataset,
                        name,
                        number(f.get(keys[0])),
                        number(f.get(keys[1])),
                        number(f.get(keys[2]), percent=True),
                        number(f.get("quadratic_weighted_kappa")),
                    ]
                )
        out += ["## Baselines on the same responses", ""]
        out += table(
            ["Dataset", "Score", "Text-level r", "Row-level r", "Within-question acc. (%)", "Weighted κ"], rows
        )
        out += ["", f"Length as score: the answer's number of words. {POINTWISE_KAPPA_NOTE}", ""]
    return out


def _chance_section(results: Sequence) -> list[str]:
    runs = [r for r in results if r.chance.get("alpha")]
    if not runs:
        return []
    rows = []
    for r in runs:
        a = r.chance["alpha"]
        kappa = r.metrics.get("cohen_kappa", r.metrics.get("quadratic_weighted_kappa"))
        rows.append(
            [
                r.critic,
                r.dataset,
                a["level"],
                str(a["n_annotators"]),
                number(a["alpha_annotators"]),
                number(a.get("alpha_with_critic")),
                number(kappa),
            ]
        )
    out = ["## Agreement beyond chance: Krippendorff's α among the annotators", ""]
    out += table(
        ["Critic", "Dataset", "Level", "Annotators", "α annotators", "α with the critic", "κ critic vs gold"], rows
    )
    return out + [
        "",
        "α (Krippendorff, 2011): 1 = perfect, 0 = chance; with the critic as one more annotator, an α as high as the "
        f"annotators' own says the critic fits in with them. {PAIRWISE_KAPPA_NOTE} {POINTWISE_KAPPA_NOTE}",
        "",
    ]


def _length_section(results: Sequence) -> list[str]:
    runs = [r for r in results if r.task == "pairwise" and r.length]
    if not runs:
        return []
    out = ["## Length and position", ""]
    rows = []
    for r in runs:
        for t in r.length.get("terciles", []):
            key = "two_way_accuracy" if "two_way_accuracy" in t else "first_order_agreement"
            rows.append(
                [
                    r.critic,
                    r.dataset,
                    f"{t['low']:.2f}-{t['high']:.2f}",
                    str(t["n"]),
                    number(t.get(key), percent=True),
                    number(t.get("baseline", {}).get(key), percent=True),
                ]
            )
    if rows:
        out += table(["Critic", "Dataset", "Length ratio", "Pairs", "Critic (%)", "Longer wins (%)"], rows)
        out += [
            "",
            "Terciles of the ratio longer / shorter answer (words + 1); two-way accuracy where the gold has "
            "no tie, else first-order agreement.",
            "",
        ]
    rows = []
    for r in runs:
        lc = r.length.get("length_controlled")
        if lc:
            rows.append(
                [
                    r.critic,
                    r.dataset,
                    f"{number(lc['critic_coefficient'], 2)} ± {number(lc['critic_se'], 2)}",
                    _p(lc["critic_p"]),
                    number(lc["critic_coefficient_without_length"], 2),
                    number(lc["length_coefficient"], 2),
                    number(lc["two_way_accuracy"], percent=True),
                    number(lc["length_controlled_agreement"], percent=True),
                    str(lc["n"]),
                ]
            )
    if rows:
        out += table(
            [
                "Critic",
                "Dataset",
                "Critic coef. ± SE",
                "p",
                "Without length",
                "Length coef.",
                "Uncontrolled (%)",
                "Length-controlled (%)",
                "Pairs",
            ],
            rows,
        )
        out += [
            "",
            "Logistic regression of the human preference on the critic's decision (+1 / 0 / -1) and "
            "tanh(length difference / sd) on the pairs whose gold is no tie, as AlpacaEval's length-controlled win "
            "rate; uncontrolled: the critic's two-way accuracy on those pairs; length-controlled: the model's agreement "
            "with the critic with the length term set to zero.",
            "",
        ]
    rows = []
    for r in runs:
        p = r.length.get("positional", {})
        rows.append(
            [
                r.critic,
                r.dataset,
                number(p.get("first_shown_original"), percent=True),
                number(p.get("first_shown_swapped"), percent=True),
                number(p.get("human_response_1"), percent=True),
            ]
        )
    out += table(
        [
            "Critic",
            "Dataset",
            "First shown, original order (%)",
            "First shown, swapped order (%)",
            "Humans: response 1 (%)",
        ],
        rows,
    )
    return out + ["", "Share of parsed verdicts naming the response shown first (a tie names neither).", ""]


def _ppi_section(results: Sequence) -> list[str]:
    runs = [r for r in results if r.ppi]
    if not runs:
        return []
    out = ["## Human-corrected estimates (prediction-powered inference)", ""]
    rows = []
    for r in runs:
        for group, e in r.ppi["estimates"].items():
            human = e["ppi"]["human_only"]
            for name, key in (("PPI", "ppi"), ("PPI++", "ppi_tuned")):
                c = e[key]
                rows.append(
                    [
                        r.critic,
                        r.dataset,
                        group,
                        name,
                        _interval(c["ppi"]),
                        _interval(human),
                        number(c["width_ratio"], 2),
                        number(c["labels_saved"], 0),
                        str(e["n_labelled"]),
                        str(e["n"]),
                        number(e["all_rows"]),
                    ]
                )
    out += table(
        [
            "Critic",
            "Dataset",
            "Rows",
            "Estimator",
            "Estimate [95% CI]",
            "Human only",
            "Width ratio",
            "Labels saved",
            "Human-labelled",
            "Rows in all",
            "All rows' gold",
        ],
        rows,
    )
    for r in runs:
        out.append(f"- {r.critic} on {r.dataset}: {r.ppi['target']}; {r.ppi['source']}")
    return out + [
        "",
        "PPI (Angelopoulos et al., Science 2023): the critic's mean on all rows, corrected by its mean error on the "
        "human-labelled rows; PPI++ tunes the critic's weight (lambda). Labels saved: the human labels a human-only "
        "estimate would need to be as narrow, minus those used. All rows' gold: the value the intervals should "
        "cover in a simulation.",
        "",
    ]


def _interval(c: dict) -> str:
    return with_interval({"x": c["estimate"], "ci": {"x": c["ci"]}}, "x")
