"""The ground every part of hf-critic stands on: vocabulary and plumbing with no other hf_critic import."""
