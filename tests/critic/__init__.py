"""Tests of hf_critic.critic."""
