"""Every kind of critic behind one protocol: :mod:`~hf_critic.critics.protocol` (what a critic is asked:
``judge(records, swap=...) -> Critiques`` and its identity) and :mod:`~hf_critic.critics.registry` (the one place that
maps a kind's name, as cascade files spell it, to its class); the kinds besides the generative
:class:`hf_critic.critic.Critic` (reward models, juries and "longer wins"). The folders beside them hold the data of
the trained critics the package ships (:data:`hf_critic.backends.models.TRAINED_CRITICS`)."""
