"""Critics of every kind, and critics built from specs: :mod:`hf_critic.critics.options` (the options of one computed
critic, declared once), :mod:`hf_critic.critics.computed` (a computed critic built from them: the command line's and a
spec's one builder) and :mod:`hf_critic.critics.specs` (a critic spec, as a cascade file holds it, built into a critic
without the command line; :func:`~hf_critic.critics.specs.load_cascade`)."""
