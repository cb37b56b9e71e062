"""Tests of hf_critic.training."""
