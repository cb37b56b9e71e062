"""Tests of hf_critic.backends."""
