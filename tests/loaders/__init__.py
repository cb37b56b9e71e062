"""Tests of hf_critic.loaders."""
