"""Critics besides the generative :class:`hf_critic.critic.Critic`: reward models and juries, and the project's own
shipped critic (package data in ``smollm2_135m_critic/``)."""
