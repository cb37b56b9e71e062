"""Tests of hf_critic.selective."""
