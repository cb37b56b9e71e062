"""Tests of hf_critic.core."""
