"""Shared fixtures. Tests never download: HF_HUB_OFFLINE=1 is forced here as well as in CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The read-only real data folder: $HF_CRITIC_SHARED_DATA, else ../shared/data beside the checkout."""
    return Path(os.environ.get("HF_CRITIC_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ../shared/data; skips the test with a clear reason when the folder is absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real benchmark data not found at {path} (set HF_CRITIC_SHARED_DATA to its location)")
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """Folder of a tiny random causal LM loadable by ``from_pretrained`` (built once per session).

    The model and tokenizer come from :func:`hf_critic.testing.tiny_models.build_tiny_model`, the one tiny-model factory.
    """
    from hf_critic.testing.tiny_models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
