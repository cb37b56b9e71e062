"""Tests of hf_critic.commands."""
