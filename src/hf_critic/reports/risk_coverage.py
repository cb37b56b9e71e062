"""Risk-coverage in the reports, as Markdown tables and PNG plots: each critic's AURC with its interval, its agreement
at fixed coverages and its coverage at fixed agreements (:func:`risk_coverage_markdown`), the risk-coverage curves
(:func:`plot_risk_coverage`) and the agreement-coverage curves with a cascade's operating points (:func:`plot_curves`).

The figures are computed in :mod:`hf_critic.meta_eval.risk_coverage` (blocks with a bootstrap over questions and the
baselines) on the maths of :mod:`hf_critic.selective.risk_coverage` (Geifman and El-Yaniv, 2017); ``hf-critic
meta-eval`` and ``hf-critic calibrate --report-dir`` write them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..core.errors import BadInputError
from ..selective.risk_coverage import AGREEMENT_LEVELS, COVERAGE_LEVELS

__all__ = ["plot_curves", "plot_risk_coverage", "risk_coverage_markdown"]


def _interval(block: dict) -> str:
    interval = block.get("interval")
    if interval is None:
        return ""
    if isinstance(interval, str):
        return f" [{interval}]"
    return f" [{interval[0]:.3f}, {interval[1]:.3f}]"


def risk_coverage_markdown(sections: Mapping[str, Mapping[str, dict]]) -> str:
    """The risk-coverage tables: one per section (a dataset), one row per critic, baselines last.

    Args:
        sections: ``{title: {critic: block}}`` (:func:`risk_coverage_report`'s blocks).

    Returns:
        Markdown, with a heading and a line on how to read it; "" without sections.
    """
    if not sections:
        return ""
    cov = " | ".join(f"agreement @ {100 * c:.0f}% coverage" for c in COVERAGE_LEVELS)
    agr = " | ".join(f"coverage @ {100 * a:.0f}% agreement" for a in AGREEMENT_LEVELS)
    lines = [
        "## Risk-coverage",
        "",
        "Rows ranked by the critic's confidence, most confident first (ties in random order, in expectation; rows "
        "without a verdict last, as misses). AURC: the share of kept rows that disagree with humans, averaged over "
        "every coverage (lower is better; a constant confidence scores its error rate). Interval: 95% bootstrap "
        "over questions. Agreement and coverage in %.",
        "",
    ]
    for title, blocks in sections.items():
        lines += [
            f"### {title}",
            "",
            f"| critic | AURC | {cov} | {agr} |",
            "|---|---:|" + "---:|" * (len(COVERAGE_LEVELS) + len(AGREEMENT_LEVELS)),
        ]
        for name, b in blocks.items():
            label = f"{name} (baseline)" if b.get("baseline") else name
            cells = [f"{100 * b['agreement_at_coverage'][c]:.1f}" for c in COVERAGE_LEVELS]
            cells += [f"{100 * b['coverage_at_agreement'][a]:.1f}" for a in AGREEMENT_LEVELS]
            lines.append(f"| {label} | {b['aurc']:.3f}{_interval(b)} | {' | '.join(cells)} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def plot_risk_coverage(panels: dict[str, dict[str, tuple]], path: str | Path) -> Path:
    """Write risk-coverage curves as a PNG: one panel per dataset, one line per critic (baselines dashed).

    Args:
        panels: ``{panel title: {critic: (coverage, risk)}}`` (:func:`risk_coverage_curve`); a critic whose name
            starts with ``"baseline:"`` is drawn dashed, without the prefix in the legend.
        path: the PNG to write.

    Returns:
        ``path`` as a Path.

    Raises:
        ValueError: no panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not panels:
        raise BadInputError("plot_risk_coverage needs at least one panel")
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels.items(), strict=True):
        for name, (cov, risk) in curves.items():
            baseline = name.startswith("baseline:")
            ax.plot(cov, risk, linestyle="--" if baseline else "-", label=name.removeprefix("baseline:"))
        ax.set_title(title, fontsize=9)
        ax.set_ylim(0, 1.02)
        coverage_axes(
            ax,
            "coverage (share of rows kept, most confident first)",
            "risk (1 - agreement with humans on kept rows)",
            "upper left",
        )
    save_figure(fig, path)
    return Path(path)


def plot_curves(curves: dict[str, tuple[list, list]], points: dict[str, tuple[float, float]], path: str | Path):
    """Write the agreement-coverage curves (one line per critic) and the cascade's operating points as a PNG.

    Args:
        curves: ``{critic: (coverages, agreements)}`` (:func:`agreement_coverage_curve`).
        points: ``{label: (coverage, agreement)}``, e.g. the cascade at each target level.
        path: the PNG to write.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, (cov, agr) in curves.items():  # a critic with few confidence levels: its few operating points
        ax.plot(cov, agr, marker="o" if len(cov) < 20 else None, markersize=4, label=name)
    for label, (cov, agr) in points.items():
        ax.scatter([cov], [agr], marker="o", zorder=3)
        ax.annotate(label, (cov, agr), textcoords="offset points", xytext=(4, 4), fontsize=8)
    coverage_axes(ax, "coverage (share of rows kept)", "agreement with humans on kept rows", "lower left")
    save_figure(fig, path)


def coverage_axes(ax, xlabel: str, ylabel: str, legend: str) -> None:
    """Label a coverage plot's axes (coverage from 0 to 1 on x), grid it and place its legend at ``legend``."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xlim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc=legend)


def save_figure(fig, path: str | Path) -> None:
    """Write a matplotlib figure as a PNG (tight layout, 120 dpi) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
