"""Tests of hf_critic.glassbox."""
