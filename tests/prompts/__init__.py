"""Tests of hf_critic.prompts."""
