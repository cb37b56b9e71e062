"""Meta-evaluation: how well a critic agrees with humans (CritiqueLLM v2 §4.4).

* :mod:`~hf_critic.meta_eval.correlation`: pointwise grading, text-level, system-level and row-level (pooled)
  Pearson / Spearman / Kendall (Table 2), on the vectorised per-group coefficients of
  :mod:`~hf_critic.meta_eval.grouped`; :mod:`~hf_critic.meta_eval.within_question`: the within-question pairwise
  accuracy (does the critic score a question's better answer above its worse one?);
* :mod:`~hf_critic.meta_eval.agreement`: pairwise comparison, agreement and consistency under order swap
  (Table 3) and the two-way accuracy where the human labels have no tie (response 1 or 2, the tie option dropped);
  the label spellings both read are in :mod:`hf_critic.core.labels`;
* :mod:`~hf_critic.meta_eval.verdict_sources`: one critique file's verdicts compared by source (text, probability,
  both orders combined), with baselines and calibration, for the command line and the report;
* :mod:`~hf_critic.meta_eval.chance`: agreement beyond chance, Cohen's kappa (weighted for scores binned to the gold's
  scale) and Krippendorff's alpha among annotators, with and without the critic;
* :mod:`~hf_critic.meta_eval.length`: the baselines a critic must beat (always "response 1", label prior, longer /
  shorter wins, length as score), agreement by length-ratio tercile, the length-controlled agreement (AlpacaEval's
  recipe), positional preference;
* :mod:`~hf_critic.meta_eval.paired`: is critic A better than critic B? paired bootstrap over questions, exact McNemar
  and paired permutation tests, one plain line per pair;
* :mod:`~hf_critic.meta_eval.ppi`: prediction-powered inference (Angelopoulos et al., Science 2023) and PPI++: human
  win rates and mean scores from a few human labels and the critic's verdicts on all rows;
* :mod:`~hf_critic.meta_eval.critic_extras`: those figures per run and the paired comparisons across runs;
* :mod:`~hf_critic.meta_eval.critic_figures` (:func:`~hf_critic.meta_eval.critic_figures.evaluate_critiques`) and :mod:`~hf_critic.meta_eval.run_result`
  (one run's figures): what ``hf-critic meta-eval`` reports for one or more critics;
* :mod:`~hf_critic.meta_eval.risk_coverage`: each critic's risk-coverage block beside the baselines;
* :mod:`~hf_critic.meta_eval.selfeval`: the glass-box paper's correlation tables on the SelfEval release;
* :mod:`~hf_critic.meta_eval.halves`: the dev / test halves of the held-out benchmarks and the declared dev score;
* :mod:`~hf_critic.meta_eval.modules`: where the ``evaluate`` modules wrapping the maths live (``metrics/`` of the
  checkout, shipped as ``hf_critic._metrics``).

This package computes and writes no file: the Markdown, JSON and PNG of the reports, the halves' files and the
metric modules' install are :mod:`hf_critic.reports`. CriticBench (Lan et al., 2024) has its own subpackage,
:mod:`hf_critic.criticbench`. The public names below are imported on first use (PEP 562), so ``import hf_critic``
stays cheap (the maths needs numpy, pandas and scipy).
"""

from __future__ import annotations

from .._lazy import lazy_names

#: The public statistics, name -> the module that defines it (imported on first access).
_LAZY = {
    "evaluate_critiques": ".critic_figures",
    "RunResult": ".run_result",
    "PPISpec": ".critic_extras",
    "compare_critics": ".critic_extras",
    "critique_correlation": ".correlation",
    "system_level_correlation": ".correlation",
    "text_level_correlation": ".correlation",
    "within_question_accuracy": ".within_question",
    "pairwise_agreement": ".agreement",
    "two_way_decisions": ".agreement",
    "expected_calibration_error": ".verdict_sources",
    "pairwise_verdict_figures": ".verdict_sources",
    "pointwise_verdict_figures": ".verdict_sources",
    "alpha_with_critic": ".chance",
    "binned_weighted_kappa": ".chance",
    "cohen_kappa": ".chance",
    "krippendorff_alpha": ".chance",
    "length_controlled_agreement": ".length",
    "length_tercile_agreement": ".length",
    "pairwise_baselines": ".length",
    "positional_preference": ".length",
    "compare_pairwise": ".paired",
    "compare_pointwise": ".paired",
    "classical_mean_interval": ".ppi",
    "ppi_comparison": ".ppi",
    "ppi_mean_interval": ".ppi",
    "bootstrap_intervals": ".bootstrap",
    "risk_coverage_report": ".risk_coverage",
    "pairwise_robustness": ".attacks",
    "pointwise_shift": ".attacks",
    "dev_score": ".halves",
    "heldout_figures": ".halves",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
