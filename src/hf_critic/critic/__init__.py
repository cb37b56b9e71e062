"""The critic, one package whose layout shows its parts, from the ground up:

- :mod:`~hf_critic.critic.verdicts`: the probability read-out of a verdict (modes, plan, aggregation, entropy);
- :mod:`~hf_critic.critic.decoding`: decoding strategies and the aggregation of sampled critiques;
- :mod:`~hf_critic.critic.output`: run statistics and the critique columns a run adds;
- :mod:`~hf_critic.critic.grammars`: GBNF grammars that force a verdict in a template's syntax;
- :mod:`~hf_critic.critic.config`: the critic's options, as the dataclass the command line is generated from;
- :mod:`~hf_critic.critic.rewards`: critiques from rewards (reward models, local or served);
- :mod:`~hf_critic.critic.inputs`: records rendered into prompts that fit the context (truncation policies);
- :mod:`~hf_critic.critic.readout`: the engines' read-outs of a verdict through the cache (probabilities, verdicts
  forced under a grammar);
- :mod:`~hf_critic.critic.base`: what the computed critics share: grading, comparison and the protocol's judging,
  the template of a setting, the end of every run (confidences, run statistics);
- :mod:`~hf_critic.critic.reward_critic`: :class:`RewardCritic`, a reward model as a critic (order-free, no text);
- :mod:`~hf_critic.critic.core`: :class:`Critic` itself, the generative critic: grading and comparison in the four
  settings.

The critic formats live in :mod:`hf_critic.formats`, the engines in :mod:`hf_critic.backends`.

Importing a submodule loads that submodule only: the backends (a lower floor) import
:mod:`~hf_critic.critic.decoding` and :mod:`~hf_critic.critic.verdicts`, and :mod:`~hf_critic.critic.core` imports
the backends, so this package's names (``from hf_critic.critic import Critic``) are imported on first use (PEP 562).
"""

from __future__ import annotations

from .._lazy import lazy_names

__all__ = ["TRUNCATE_POLICIES", "ContextLengthError", "Critic", "RewardCritic"]

# Public names imported on first access (PEP 562): name -> submodule that defines it.
_LAZY = {
    "Critic": ".core",
    "RewardCritic": ".reward_critic",
    "ContextLengthError": ".inputs",
    "TRUNCATE_POLICIES": ".inputs",
}
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
