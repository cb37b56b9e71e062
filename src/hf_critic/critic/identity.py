"""What a critic's verdicts depend on, and nothing else: the parts of a calibration's fingerprint.

A calibration (:mod:`hf_critic.selective.calibration`) holds for the critic it was made with. Its fingerprint
(:func:`hf_critic.selective.cascade.critic_fingerprint`) must change with every option that changes a verdict, or a cascade would
apply thresholds to a critic they were not chosen for, and must not change with an option that changes nothing, or a
harmless rerun is refused. :func:`verdict_options` lists those options for a generative critic, :func:`reward_options`
for a reward critic:

* the model, by content and never by path: a backend's or reward model's ``identity`` (the digest of the files that
  decide its outputs, :func:`hf_critic.backends.weights.weights_digest`: weights, configuration, tokenizer, chat template and a
  reward critic's calibration file; the chat template in use, the dtype and engine; a reward critic's context and
  calibration; base URL, model and what the server reports for served ones);
* the template (name and version), the verdict source and explanation mode, the rubric and score range;
* decoding, only the fields the strategy reads (a temperature under greedy decoding changes nothing);
* ``min_verdict_mass`` (a probability read-out's unparsed cut), ``truncate`` (what an over-long input becomes),
  ``constrain_verdict`` (where critiques are generated);
* a reward critic's tie margin (its pairwise tie band).
"""

from __future__ import annotations

import hashlib
import json

__all__ = ["decoding_identity", "reward_options", "verdict_options"]

#: The decoding fields each strategy reads (besides ``strategy`` and ``max_new_tokens``).
_STRATEGY_FIELDS = {
    "greedy": (),
    "beam": ("num_beams",),
    "sampling": ("temperature", "top_p", "seed"),
    "self_consistency": ("temperature", "top_p", "seed", "num_samples"),
}


def decoding_identity(decoding, generates: bool = True) -> dict:
    """The decoding fields that change a verdict under ``decoding``'s strategy.

    Args:
        decoding: a :class:`~hf_critic.critic.decoding.DecodingConfig`.
        generates: the critic generates text (False: a read-out right after the prompt, which decodes nothing).

    Returns:
        ``{"strategy", "max_new_tokens", ...the strategy's own fields}``; ``{}`` when nothing is generated.
    """
    if not generates:
        return {}
    fields = ("strategy", "max_new_tokens", *_STRATEGY_FIELDS.get(decoding.strategy, ()))
    return {name: getattr(decoding, name) for name in fields}


def _rubric_digest(rubric) -> str | None:
    if rubric is None:
        return None
    blob = json.dumps(getattr(rubric, "__dict__", repr(rubric)), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def reward_options(scorer, truncate: str) -> list[str]:
    """The options of a reward critic that change its verdicts (in every setting): the scorer by content, the input
    cut and the tie band, as strings (fingerprint parts).

    Args:
        scorer: its :class:`~hf_critic.critic.rewards.RewardScorer` (``identity``, ``calibration.tie_margin``).
        truncate: its truncation policy.

    Returns:
        ``["model=...", "verdict=reward", "truncate=...", "tie_margin=..."]``, in that order.
    """
    tie = getattr(scorer.calibration, "tie_margin", None)
    return [f"model={scorer.identity}", "verdict=reward", f"truncate={truncate}", f"tie_margin={tie}"]


def verdict_options(critic, setting) -> list[str]:
    """The options of a generative critic that change its verdicts in ``setting``, as strings (fingerprint parts).

    Args:
        critic: a :class:`~hf_critic.critic.Critic`.
        setting: the :class:`~hf_critic.core.schema.Setting` judged.

    Returns:
        ``["model=...", "template=...", ...]``: one ``key=value`` per option, in a fixed order.
    """
    template = critic.template_for(setting)
    plan = critic.plan
    parts = {
        "model": critic.backend.identity,
        "template": f"{template.name}@{template.version}",
        "verdict": critic.verdict,
        "explanation": critic.explanation,
        "decoding": json.dumps(decoding_identity(critic.decoding, plan.generates), sort_keys=True),
        "truncate": critic.truncate,
        "constrain_verdict": critic.constrain_verdict and plan.generates,
        "min_verdict_mass": critic.min_verdict_mass if plan.reads_probabilities else None,
        "rubric": _rubric_digest(critic.rubric),
        "score_range": critic.score_range,
    }
    return [f"{key}={value}" for key, value in parts.items()]
