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
* :mod:`~hf_critic.meta_eval.critic_extras` (those figures per run and across runs),
  :mod:`~hf_critic.meta_eval.comparison_markdown` (their report sections), :mod:`~hf_critic.meta_eval.markdown_tables`;
* :mod:`~hf_critic.meta_eval.critic_report` (figures, JSON), :mod:`~hf_critic.meta_eval.run_result` (one run's
  figures), :mod:`~hf_critic.meta_eval.critic_markdown` and :mod:`~hf_critic.meta_eval.critic_plots`: the report of
  one or more critics behind ``hf-critic meta-eval`` (not to be confused with
  :mod:`hf_critic.eval_instruct.stage_report`, the per-stage report of an Eval-Instruct run);
* :mod:`~hf_critic.meta_eval.selfeval`: the glass-box paper's correlation tables on the SelfEval release;
* :mod:`~hf_critic.meta_eval.modules`: the ``evaluate`` modules wrapping the maths (``metrics/`` of the
  checkout, shipped as ``hf_critic._metrics``): their path and their offline install.

CriticBench (Lan et al., 2024) has its own subpackage, :mod:`hf_critic.criticbench`. Nothing is imported here, so
``import hf_critic`` stays cheap (the maths needs numpy, pandas and scipy).
"""
