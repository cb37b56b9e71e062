"""The PNG plots of a meta-evaluation report (matplotlib): per-category bars, confusion heat maps, reliability
diagrams (see :mod:`hf_critic.meta_eval.critic_report`)."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core import schema
from ..meta_eval.run_result import RunResult

__all__ = ["plot_confusions", "plot_per_category", "plot_reliability"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "run"


def plot_per_category(results: Sequence[RunResult], out_dir: str | Path) -> list[Path]:
    """One grouped bar chart per dataset: the per-category value of every critic (``per_category_<dataset>.png``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    written = []
    for dataset in dict.fromkeys(r.dataset for r in results):
        runs = [r for r in results if r.dataset == dataset and r.per_category]
        if not runs:
            continue
        pointwise = runs[0].task == "pointwise"
        key = "text_pearson" if pointwise else "agreement"
        cats = list(dict.fromkeys(c for r in runs for c in r.per_category))
        x = np.arange(len(cats))
        width = 0.8 / len(runs)
        fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(cats) + 2), 4.0))
        for i, r in enumerate(runs):
            values = [r.per_category.get(c, {}).get(key, math.nan) for c in cats]
            values = [100 * v if not pointwise else v for v in values]
            ax.bar(x + (i - (len(runs) - 1) / 2) * width, np.nan_to_num(values, nan=0.0), width, label=r.critic)
        # English names for AlignBench's categories: the default font has no CJK glyphs.
        ax.set_xticks(x, [schema.normalize_category(c) or c for c in cats], rotation=30, ha="right")
        ax.set_ylabel("text-level Pearson r" if pointwise else "agreement (%)")
        ax.set_title(f"{dataset}: per category")
        ax.axhline(0, color="black", linewidth=0.5)
        ax.legend(fontsize="small")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.tight_layout()
        path = out_dir / f"per_category_{_slug(dataset)}.png"
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def plot_confusions(results: Sequence[RunResult], out_dir: str | Path) -> list[Path]:
    """One heat map per run (``confusion_<critic>_<dataset>.png``): human score or label against the critic's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    written = []
    for r in results:
        conf = r.confusion
        if not conf or not conf["rows"]:
            continue
        counts = np.asarray(conf["counts"])
        fig, ax = plt.subplots(figsize=(1.0 + 0.55 * counts.shape[1] + 1.5, 1.0 + 0.45 * counts.shape[0] + 1.0))
        image = ax.imshow(counts, cmap="Blues", aspect="auto")
        ax.set_xticks(range(counts.shape[1]), conf["columns"], rotation=45, ha="right")
        ax.set_yticks(range(counts.shape[0]), conf["rows"])
        ax.set_xlabel(conf["column_title"])
        ax.set_ylabel(conf["row_title"])
        threshold = counts.max() / 2 if counts.size else 0
        for (i, j), value in np.ndenumerate(counts):
            if value:
                ax.text(
                    j,
                    i,
                    str(value),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if value > threshold else "black",
                )
        ax.set_title(f"{r.critic} on {r.dataset}", fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.046)
        path = out_dir / f"confusion_{_slug(r.critic)}_{_slug(r.dataset)}.png"
        with warnings.catch_warnings():  # names in scripts the default font lacks still render as boxes
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.tight_layout()
            fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def plot_reliability(results: Sequence[RunResult], out_dir: str | Path) -> list[Path]:
    """One reliability diagram per pairwise run with probability read-outs (``reliability_<critic>_<dataset>.png``):
    accuracy of the decided label against its probability, per confidence bin, with the diagonal of perfect
    calibration and the ECE in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for r in results:
        c = r.verdicts.get("calibration") if r.verdicts else None
        if not c or not c["n"]:
            continue
        bins = [b for b in c["bins"] if b["count"]]
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
        width = c["bins"][0]["high"] - c["bins"][0]["low"]
        ax.bar(
            [b["low"] for b in bins],
            [b["accuracy"] for b in bins],
            width=width,
            align="edge",
            alpha=0.7,
            edgecolor="black",
            label="accuracy",
        )
        ax.plot(
            [b["confidence"] for b in bins],
            [b["accuracy"] for b in bins],
            "o",
            color="tab:red",
            label="mean confidence",
        )
        for b in bins:
            ax.text(b["low"] + width / 2, min(b["accuracy"] + 0.02, 0.97), str(b["count"]), ha="center", fontsize=7)
        ax.plot([0, 1], [0, 1], "--", color="gray", label="perfect calibration")
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="probability of the decided label", ylabel="accuracy")
        ax.set_title(f"{r.critic} on {r.dataset}\nECE {c['ece']:.3f} (n={c['n']})", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        path = Path(out_dir) / f"reliability_{_slug(r.critic)}_{_slug(r.dataset)}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written
