"""What each Eval-Instruct stage did: items in and out, rejections by reason, failures, requests, tokens, cost.

The run report of the data pipeline (``report.json``); the meta-evaluation report of a critic against humans
is :mod:`hf_critic.meta_eval.critic_report`.

Every stage of :mod:`hf_critic.eval_instruct.stages` fills a :class:`StageReport`; the pipeline adds the stage's usage from
the :class:`~hf_critic.backends.chat.UsageLedger` and prints :meth:`PipelineReport.table` at the end. For stages that
map items one to one (``conserved``), ``items_in == items_out + rejected + failed`` always holds: no item is lost
without a reason. Every failed and every rejected item is also named, with its stage and reason
(:meth:`PipelineReport.named_losses`: the run's ``failures.jsonl``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..backends.chat import StageUsage
from ..core.errors import ShortfallError  # raised with PipelineReport.shortfall's line; importable from here

__all__ = ["Failure", "PipelineReport", "Rejection", "ShortfallError", "StageReport"]


# Rejection reasons that are choices of the recipe, not losses (see hf_critic.eval_instruct.filters.REASONS).
_BY_DESIGN = frozenset({"balance", "reference_generator"})


@dataclass(frozen=True)
class Failure:
    """One item given up on: its request failed after bounded retries (or with a non-retryable error).

    Attributes:
        stage: the stage name.
        id: the item id (query, response, pair ...).
        error: the last error (``"500: ... (after 7 attempts)"``).
    """

    stage: str
    id: str
    error: str


@dataclass(frozen=True)
class Rejection:
    """One item a stage's rules turned away (a filter, cross validation, balancing ...).

    Attributes:
        stage: the stage name.
        id: the item id (query, response, pair, a generation round ...).
        reason: the rejection reason (a key of :data:`hf_critic.eval_instruct.filters.REASONS`, ``"balance"``, ...).
    """

    stage: str
    id: str
    reason: str


@dataclass
class StageReport:
    """Counts of one stage run.

    Attributes:
        name: stage name (also the usage-ledger key).
        unit: what is counted (``"queries"``, ``"responses"``, ``"pairs"``, ``"rounds"``, ...).
        items_in / items_out: items received and produced.
        rejected: rule-based rejections by reason (keys of :data:`hf_critic.eval_instruct.filters.REASONS`).
        rejected_items: the rejected items by name (every stage names each item it rejects).
        failures: items whose teacher / generator request failed.
        conserved: True when items map one to one, so ``items_in == items_out + rejected + failed``.
        notes: stage-specific figures (e.g. ``filtered_share`` of cross validation).
        usage: requests, cache hits, tokens and cost booked under this stage.
        seconds: wall time.
    """

    name: str
    unit: str = "items"
    items_in: int = 0
    items_out: int = 0
    rejected: Counter = field(default_factory=Counter)
    rejected_items: list[Rejection] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    conserved: bool = True
    notes: dict[str, Any] = field(default_factory=dict)
    usage: StageUsage = field(default_factory=StageUsage)
    seconds: float = 0.0

    def reject(self, reason: str, *item_ids: str, count: int | None = None) -> None:
        """Count items rejected for ``reason``, naming each of ``item_ids`` (stage, id, reason: see
        :attr:`rejected_items`); ``count`` (default: the number of ids, else 1) is for items that have no name."""
        for item_id in item_ids:
            self.rejected_items.append(Rejection(self.name, item_id, reason))
        self.rejected[reason] += (len(item_ids) or 1) if count is None else count

    def fail(self, item_id: str, error: str) -> None:
        """Record one failed item."""
        self.failures.append(Failure(self.name, item_id, error))

    @property
    def failed(self) -> int:
        """Number of failed items."""
        return len(self.failures)

    def losses(self) -> Counter:
        """Items lost by reason: filter rejections by their reason, failures by their error without the attempt count
        (``"answer rejected: unparseable"``, ``"500: overloaded"``), prefixed ``failed: ``. Items left out by design
        (not drawn when balancing, the reference generator's own responses) are no loss."""
        lost = Counter({k: v for k, v in self.rejected.items() if k not in _BY_DESIGN})
        lost.update("failed: " + f.error.split(" (after ", 1)[0] for f in self.failures)
        return lost

    @property
    def balanced(self) -> bool:
        """For conserved stages: ``items_in == items_out + sum(rejected) + failed`` (always True otherwise)."""
        return not self.conserved or self.items_in == self.items_out + sum(self.rejected.values()) + self.failed

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (usage included)."""
        return {
            "name": self.name,
            "unit": self.unit,
            "items_in": self.items_in,
            "items_out": self.items_out,
            "rejected": dict(self.rejected),
            "failed": self.failed,
            # why items failed (after their bounded retries), apart from the filters' rejections above
            "failed_by_reason": {
                k[len("failed: ") :]: v for k, v in self.losses().items() if k.startswith("failed: ")
            },
            "failures": [f.__dict__ for f in self.failures],
            "conserved": self.conserved,
            "balanced": self.balanced,
            "notes": self.notes,
            "usage": self.usage.to_dict(),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class PipelineReport:
    """All stage reports of a run, plus run-level facts (teacher, prompt versions, configuration hash).

    Attributes:
        stages: in run order.
        info: run facts written to ``report.json`` and the dataset card.
        counts: rows per output config.
    """

    stages: list[StageReport] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def stage(self, name: str) -> StageReport:
        """The report of stage ``name``.

        Raises:
            KeyError: no stage of that name ran.
        """
        for report in self.stages:
            if report.name == name:
                return report
        raise KeyError(name)

    @property
    def failures(self) -> list[Failure]:
        """Every failed item of every stage."""
        return [f for s in self.stages for f in s.failures]

    def named_losses(self) -> list[dict[str, str]]:
        """Every item a stage did not pass on, by name, in stage order: the lines of ``failures.jsonl``.

        Each is ``{"stage", "id", "kind", "reason"}``: ``kind`` is ``"failed"`` (its request failed after the bounded
        retries; ``reason`` = ``error`` = the last error, and a rerun asks again), ``"rejected"`` (a rule turned it
        away) or ``"left_out"`` (not drawn by design: balancing, the reference generator's own responses).
        """
        out = []
        for s in self.stages:
            out += [
                {"stage": f.stage, "id": f.id, "kind": "failed", "reason": f.error, "error": f.error}
                for f in s.failures
            ]
            out += [
                {
                    "stage": r.stage,
                    "id": r.id,
                    "kind": "left_out" if r.reason in _BY_DESIGN else "rejected",
                    "reason": r.reason,
                }
                for r in s.rejected_items
            ]
        return out

    def reasked(self) -> dict[str, int]:
        """Per stage, the cached answers that no longer passed the stage's check and were asked again (a rerun after
        a run that cached bad answers, or after a stricter check); stages with none are absent."""
        out = {}
        for s in self.stages:
            n = s.usage.errors.get("rejected_from_cache", 0)
            if n:
                out[s.name] = n
        return out

    def rejections(self) -> Counter:
        """Rejections by reason, all stages together."""
        total: Counter = Counter()
        for s in self.stages:
            total.update(s.rejected)
        return total

    def shortfall(self, max_loss_share: float | None = None) -> str | None:
        """One line saying why the run's output is not worth keeping, or None when it is.

        The output is not worth keeping when no config has a row, or when a conserved stage lost (rejected or failed)
        more than ``max_loss_share`` of its items. The line names the stage (for an empty output, the first that kept
        nothing of a non-empty input) and its main loss reason with its count.

        Args:
            max_loss_share: largest allowed share in [0, 1] of a stage's items lost; None: only an empty output counts.
        """
        culprit, what = None, ""
        if not sum(self.counts.values()):
            fed = [s for s in self.stages if s.items_in and s.conserved]  # augmentation passes its seeds on
            culprit = next((s for s in fed if not s.items_out), fed[-1] if fed else None)
            what = "no rows in any config"
        elif max_loss_share is not None:
            for s in self.stages:
                lost = sum(s.losses().values())
                if s.conserved and s.items_in and lost / s.items_in > max_loss_share:
                    culprit, what = s, f"more than {max_loss_share:.0%} of a stage's items lost"
                    break
        if culprit is None:
            return None if what == "" else f"{what}: no stage had any input (no seed queries?)"
        reason, count = next(iter(culprit.losses().most_common(1)), ("no reason recorded", 0))
        return (
            f"{what}: stage {culprit.name} kept {culprit.items_out} of {culprit.items_in} {culprit.unit}; "
            f"main reason: {reason} ({count})"
        )

    def total_usage(self) -> StageUsage:
        """Usage of all stages together."""
        out = StageUsage()
        for s in self.stages:
            out.merge(s.usage)
        return out

    def table(self) -> str:
        """The end-of-run summary: one line per stage, then totals.

        Columns: stage, items in, out, failed, rejected (by reason), HTTP requests, cache hits, prompt / completion
        tokens of fresh calls, cost.
        """
        header = ("stage", "in", "out", "failed", "rejected", "requests", "cache hits", "tokens in/out", "cost")
        rows = []
        for s in self.stages:
            reasons = ", ".join(f"{k}={v}" for k, v in sorted(s.rejected.items())) or "-"
            u = s.usage
            rows.append(
                (
                    s.name,
                    f"{s.items_in} {s.unit}" if s.unit != "items" else str(s.items_in),
                    str(s.items_out),
                    str(s.failed),
                    reasons,
                    str(u.requests),
                    str(u.cache_hits),
                    f"{u.prompt_tokens}/{u.completion_tokens}",
                    f"{u.cost:.4f}",
                )
            )
        t = self.total_usage()
        rows.append(
            (
                "total",
                "",
                "",
                str(len(self.failures)),
                str(sum(self.rejections().values())),
                str(t.requests),
                str(t.cache_hits),
                f"{t.prompt_tokens}/{t.completion_tokens}",
                f"{t.cost:.4f}",
            )
        )
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        widths[4] = min(widths[4], 60)

        def line(r):
            return "  ".join(
                c.ljust(w) if i in (0, 4) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )

        out = [line(header), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in rows[:-1]]
        out += ["  ".join("-" * w for w in widths), line(rows[-1])]
        if self.counts:
            out.append("rows per config: " + ", ".join(f"{k}={v}" for k, v in self.counts.items()))
        reasked = self.reasked()
        if reasked:
            per_stage = ", ".join(f"{k}={v}" for k, v in reasked.items())
            out.append(
                f"re-asked {sum(reasked.values())} cached answer(s) that did not pass their stage's check: {per_stage}"
            )
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict: info, counts, stages, totals."""
        return {
            "info": self.info,
            "counts": self.counts,
            "stages": [s.to_dict() for s in self.stages],
            "rejections": dict(self.rejections()),
            "failed": len(self.failures),
            "reasked_from_cache": self.reasked(),
            "usage": self.total_usage().to_dict(),
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON (UTF-8 text)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2, default=str)
