"""Number formats and Markdown tables shared by the meta-evaluation reports (:mod:`~hf_critic.meta_eval.critic_markdown`,
:mod:`~hf_critic.meta_eval.comparison_markdown`)."""

from __future__ import annotations

import math
from typing import Any

from ..meta_eval.bootstrap import format_interval

__all__ = ["number", "table", "with_interval"]


def number(value: Any, digits: int = 3, percent: bool = False) -> str:
    """``value`` with ``digits`` decimals, or as a percentage with 2 decimals; "–" for None / NaN / infinity."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{100 * value:.2f}" if percent else f"{value:.{digits}f}"


def with_interval(values: dict[str, Any], key: str, percent: bool = False) -> str:
    """A figure with its bootstrap interval when there is one: ``54.96 [52.30, 57.61]``, and how many resamples the
    interval left out as undefined when any did: ``0.412 [0.20, 0.61] (12 resamples undefined)``."""
    text = number(values.get(key), percent=percent)
    interval = (values.get("ci") or {}).get(key)
    if text != "–":
        text += format_interval(interval, lambda bound: number(bound, percent=percent))
        dropped = (values.get("ci_dropped") or {}).get(key)
        if dropped:
            text += f" ({dropped} resamples undefined)"
    return text


def table(header: list[str], rows: list[list[str]], header2: list[str] | None = None) -> list[str]:
    """A Markdown table as lines; ``header2`` is a second header row (Markdown has no column spans)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    if header2:
        lines.append("| " + " | ".join(f"**{h}**" if h else "" for h in header2) + " |")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines
