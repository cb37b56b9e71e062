"""What the meta-evaluation of one critic on one dataset found (:class:`RunResult`), the record that
:func:`~hf_critic.meta_eval.critic_report.evaluate_critiques` fills and the report's Markdown
(:mod:`~hf_critic.meta_eval.critic_markdown`), plots (:mod:`~hf_critic.meta_eval.critic_plots`) and JSON
(:func:`~hf_critic.meta_eval.critic_report.write_report`) read."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS, TIE

__all__ = ["LABEL_SHORT", "RunResult"]

#: Short names of the pairwise labels in the confusion tables (rows and columns).
LABEL_SHORT = {RESPONSE_1_WINS: "resp. 1", RESPONSE_2_WINS: "resp. 2", TIE: "tie"}


@dataclass
class RunResult:
    """The meta-evaluation of one critic on one dataset.

    Attributes:
        critic: the critic's name (column of the side-by-side tables).
        dataset: the dataset's name.
        task: ``"pointwise"`` or ``"pairwise"``.
        referenced: whether the critic saw a reference answer (a ``reference`` column was present).
        n_rows: rows (responses or pairs) evaluated.
        n_critiques: critiques generated (pairs × 2 when both orders were judged).
        n_unparsed: critiques without a score / label; ``parse_failure_rate = n_unparsed / n_critiques``.
        metrics: :func:`hf_critic.meta_eval.correlation.critique_correlation` (pointwise) or
            :func:`hf_critic.meta_eval.agreement.pairwise_agreement` (pairwise) output, without ``per_group``.
        per_category: ``{category: {...}}``: text-level r / ρ / τ and query counts, or agreement / consistency / n.
        confusion: ``{"rows", "columns", "counts", "row_title", "column_title"}`` for the heat map.
        unparsed: the ``--unparsed`` policy the pairwise figures follow (``wrong``, ``tie`` or ``drop``).
        bootstrap: bootstrap resamples behind the confidence intervals in ``metrics["ci"]`` (0: none).
        ceiling: several annotators' agreement with their aggregate (the human ceiling), ``{annotator:
            {"agreement" or "text_pearson", "n"}}`` plus ``"mean"``; empty with one gold column.
        verdicts: for critique files with probability read-outs (``--verdict probability`` / ``both``): the verdict
            sources side by side, :func:`hf_critic.meta_eval.verdict_sources.pointwise_verdict_figures` /
            :func:`~hf_critic.meta_eval.verdict_sources.pairwise_verdict_figures` (baselines and calibration included);
            empty otherwise.
        baselines: verdicts that need no critic on the same rows: "always response 1", the label prior, "longer wins",
            "shorter wins" (pairwise), the length as the score (pointwise); see :mod:`~hf_critic.meta_eval.length`.
        chance: agreement beyond chance: Krippendorff's alpha among the annotators with and without the critic
            (Cohen's kappa is in ``metrics``: ``cohen_kappa``, ``quadratic_weighted_kappa``).
        length: pairwise: agreement within terciles of the length ratio, the length-controlled agreement, the
            positional preference.
        ppi: with ``--ppi``, the prediction-powered estimates beside the human-only ones
            (:func:`~hf_critic.meta_eval.critic_extras.ppi_figures`).
        n_abstained: rows a cascade abstained on (no critic confident enough: no verdict); left out of every figure,
            neither unparsed nor wrong; ``coverage = n_rows / (n_rows + n_abstained)``.
        risk_coverage: pairwise: the critic's risk-coverage block (AURC with its interval over questions, agreement
            at coverage, coverage at agreement; :func:`~hf_critic.meta_eval.risk_coverage.risk_coverage_block`) with
            ``"baselines"``: ``longer-wins`` and ``label-prior``'s blocks on the same rows; empty for pointwise runs.
        risk_curves: the risk-coverage curves behind ``risk_coverage.png``; not written to report.json.
        rows: per-row values for the paired comparisons (:func:`~hf_critic.meta_eval.critic_extras.compare_critics`);
            not written to report.json.
    """

    critic: str
    dataset: str
    task: str
    referenced: bool
    n_rows: int
    n_critiques: int
    n_unparsed: int
    metrics: dict[str, Any]
    per_category: dict[str, dict[str, Any]] = field(default_factory=dict)
    confusion: dict[str, Any] = field(default_factory=dict)
    unparsed: str = "wrong"
    bootstrap: int = 0
    ceiling: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdicts: dict[str, Any] = field(default_factory=dict)
    baselines: dict[str, Any] = field(default_factory=dict)
    chance: dict[str, Any] = field(default_factory=dict)
    length: dict[str, Any] = field(default_factory=dict)
    ppi: dict[str, Any] = field(default_factory=dict)
    n_abstained: int = 0
    risk_coverage: dict[str, Any] = field(default_factory=dict)
    risk_curves: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, metadata={"json": False})
    rows: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, metadata={"json": False})

    @property
    def coverage(self) -> float:
        """Share of the rows with a decided verdict (not abstained), in [0, 1] (NaN without rows)."""
        total = self.n_rows + self.n_abstained
        return self.n_rows / total if total else math.nan

    @property
    def parse_failure_rate(self) -> float:
        """Share of critiques without a score / label, in [0, 1] (NaN when there are none)."""
        return self.n_unparsed / self.n_critiques if self.n_critiques else math.nan
