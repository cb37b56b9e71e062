"""Tests of hf_critic.parsing."""
