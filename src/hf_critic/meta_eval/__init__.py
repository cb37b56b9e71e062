"""Meta-evaluation: how well a critic agrees with humans (CritiqueLLM v2 §4.4).

* :mod:`~hf_critic.meta_eval.correlation`: pointwise grading, text-level, system-level and row-level (pooled)
  Pearson / Spearman / Kendall (Table 2), and the within-question pairwise accuracy (does the critic score a
  question's better answer above its worse one?);
* :mod:`~hf_critic.meta_eval.agreement`: pairwise comparison, agreement and consistency under order swap
  (Table 3), the two-way accuracy where the human labels have no tie (response 1 or 2, the tie option dropped),
  and the label normalisation both use;
* :mod:`~hf_critic.meta_eval.critic_report`: the meta-evaluation report of one or more critics (Markdown, JSON, plots),
  behind ``hf-critic meta-eval``; not to be confused with :mod:`hf_critic.eval_instruct.stage_report`, the per-stage run report
  of the Eval-Instruct pipeline;
* :mod:`~hf_critic.meta_eval.modules`: the ``evaluate`` modules wrapping the maths (``metrics/`` of the
  checkout, shipped as ``hf_critic._metrics``): their path and their offline install;
* :mod:`~hf_critic.criticbench.scoring` and :mod:`~hf_critic.criticbench.report`: CriticBench
  (Lan et al., 2024): verdict parsers, objective scores, and the runs and report behind
  ``hf-critic meta-eval --benchmark criticbench:PATH``.

Nothing is imported here, so ``import hf_critic`` stays cheap (the maths needs numpy, pandas and scipy).
"""
