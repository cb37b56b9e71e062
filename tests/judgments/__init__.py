"""Tests of hf_critic.judgments."""
