"""Tests of hf_critic.reports."""
