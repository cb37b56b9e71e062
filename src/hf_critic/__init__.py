"""hf-critic: LLM-as-critic evaluation in the Hugging Face ecosystem.

``import hf_critic`` stays cheap (standard library only): every public name below is imported on first use, so
``from hf_critic import Critic`` works without loading torch and transformers for ``hf_critic.__version__``.
Everything else is reached through its package (e.g. :mod:`hf_critic.selective`).

Critics, every kind behind one protocol (``judge(records, swap=..., referenced=...) -> Critiques``):

* ``Critic``: :class:`~hf_critic.critic.core.Critic`, a generative critic (text critiques or the probability
  read-out, local or served); ``Critic.from_pretrained`` on a reward model gives a ``RewardCritic``;
* ``RewardCritic``: :class:`~hf_critic.critic.reward_critic.RewardCritic`, a reward model as a critic (order-free,
  verdicts from rewards, no text; local or behind a vLLM pooling server);
* ``RewardModel``: :class:`~hf_critic.critics.reward.RewardModel`; ``ServedRewardModel``:
  :class:`~hf_critic.critic.rewards.ServedRewardModel` (behind vLLM's pooling endpoint);
* ``RecordedVerdicts``: :class:`~hf_critic.selective.cascade.RecordedVerdicts`; ``Jury``:
  :class:`~hf_critic.critics.jury.Jury`; ``LongerWins`` and ``LabelPrior``: the baselines that need no model,
  :class:`~hf_critic.critics.baselines.LongerWins`, :class:`~hf_critic.critics.baselines.LabelPrior`;
* ``CriticKind`` and ``Critiques``: :class:`~hf_critic.critics.protocol.CriticKind` (the protocol),
  :class:`~hf_critic.critics.protocol.Critiques` (what a critic returns); ``register_critic``:
  :func:`~hf_critic.critics.registry.register` (a kind of your own, by name).

Selective judging: ``load_cascade`` (:func:`~hf_critic.critics.specs.load_cascade`), ``calibrate_cascade``
(:func:`~hf_critic.selective.calibration.calibrate_cascade`), ``CalibrationFile``
(:class:`~hf_critic.selective.calibration.CalibrationFile`), ``run_cascade``
(:func:`~hf_critic.selective.cascade.run_cascade`).

Meta-evaluation: ``evaluate_critiques`` (:func:`~hf_critic.meta_eval.critic_figures.evaluate_critiques`),
``critique_correlation`` (:func:`~hf_critic.meta_eval.correlation.critique_correlation`), ``pairwise_agreement``
(:func:`~hf_critic.meta_eval.agreement.pairwise_agreement`), ``metric_path`` and ``install_metrics``
(:func:`~hf_critic.meta_eval.modules.metric_path`, :func:`~hf_critic.reports.metric_modules.install_metrics`: the
``evaluate`` modules).

Data and feedback: ``load_benchmark`` (:func:`~hf_critic.loaders.load_benchmark`: published benchmark formats as
records), ``refine`` (:func:`~hf_critic.refine.refine`: critiques as feedback for a rewrite).

Errors: ``HfCriticError`` (:class:`~hf_critic.core.errors.HfCriticError`, the base of every error hf-critic raises on
purpose) and ``BadInputError`` (:class:`~hf_critic.core.errors.BadInputError`).
"""

from __future__ import annotations

import os

# OpenMP threads that spin while they wait starve a shared CPU: under a second busy process, a 1,000-token prefill at
# 2 threads took 5.4 s spinning and 3.9 s passive (2.0 s quiet either way; docs/performance.md). It must be set before
# torch loads its OpenMP runtime, hence here; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ._lazy import lazy_names
from ._version import __version__
from .meta_eval.modules import metric_path  # stdlib-only module: cheap to import

# Public names imported on first access (PEP 562): name -> module that defines it (``module:attribute`` where the
# public name differs).
_LAZY = {
    "Critic": ".critic",
    "RewardCritic": ".critic",
    "RewardModel": ".critics.reward",
    "ServedRewardModel": ".critic.rewards",
    "RecordedVerdicts": ".selective.cascade",
    "Jury": ".critics.jury",
    "LongerWins": ".critics.baselines",
    "LabelPrior": ".critics.baselines",
    "CriticKind": ".critics.protocol",
    "Critiques": ".critics.protocol",
    "register_critic": ".critics.registry:register",
    "load_cascade": ".critics.specs",
    "calibrate_cascade": ".selective.calibration",
    "CalibrationFile": ".selective.calibration",
    "run_cascade": ".selective.cascade",
    "evaluate_critiques": ".meta_eval",
    "critique_correlation": ".meta_eval.correlation",
    "pairwise_agreement": ".meta_eval.agreement",
    "install_metrics": ".reports.metric_modules",
    "load_benchmark": ".loaders",
    "refine": ".refine",
    "HfCriticError": ".core.errors",
    "BadInputError": ".core.errors",
}
__all__ = ["__version__", "metric_path", *_LAZY]
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
