"""Tests of hf_critic.meta_eval."""
