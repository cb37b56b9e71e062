"""Tests of hf_critic.formats."""
