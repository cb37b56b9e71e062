"""Tests of hf_critic.criticbench."""
