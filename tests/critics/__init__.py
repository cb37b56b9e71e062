"""Tests of hf_critic.critics."""
