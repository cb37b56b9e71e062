"""Tests of hf_critic.eval_instruct."""
