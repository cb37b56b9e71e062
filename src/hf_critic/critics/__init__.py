"""Every kind of critic behind one protocol, and critics built from specs.

* :mod:`~hf_critic.critics.protocol`: what a critic is asked (``judge(records, swap=..., referenced=...) -> Critiques``) and its
  identity; :mod:`~hf_critic.critics.registry`: the one place that maps a kind's name, as cascade files spell it, to
  its class;
* the kinds besides the generative :class:`hf_critic.critic.Critic` and the reward critic
  :class:`hf_critic.critic.RewardCritic`: reward models' loading and calibration (:mod:`.reward`), juries
  (:mod:`.jury`), and the baselines that need no model, "longer wins" and the label prior (:mod:`.baselines`);
* :mod:`.options` (the options of one computed critic, declared once), :mod:`.computed` (a computed critic built from
  them: the command line's and a spec's one builder) and :mod:`.specs` (a critic spec, as a cascade file holds it,
  built into a critic without the command line; :func:`~hf_critic.critics.specs.load_cascade`).

The folders beside them hold the data of the trained critics the package ships
(:data:`hf_critic.backends.models.TRAINED_CRITICS`).
"""
