"""What the vLLM tests share: the shipped examples, 24 Auto-J Eval-P pairs, and the parity checks of a critic's
read-outs against the in-process critic's (``tests/backends/test_vllm_server.py``, ``tests/backends/test_vllm_engine.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hf_critic.backends.vllm_venv import VLLM_VENV_ENV, vllm_python
from tests.conftest import REPO_ROOT, shared_data_dir

EXAMPLES = REPO_ROOT / "examples"
EVAL_P_PAIRS = 24
PROBABILITY_TOLERANCE = 1e-3


def vllm_python_or_skip() -> Path:
    """vLLM's Python for the tests (``$HF_CRITIC_VLLM_VENV``, else ``.venv-vllm`` in the checkout); skips the whole
    module with the reason when there is none."""
    python = vllm_python(os.environ.get(VLLM_VENV_ENV) or REPO_ROOT / ".venv-vllm")
    if not python.is_file():
        pytest.skip(
            f"no vLLM virtualenv at {python.parent.parent} (run `make vllm`, or set ${VLLM_VENV_ENV} to one)",
            allow_module_level=True,
        )
    return python


SETS = ["pointwise_referenced", "pointwise_reference_free", "pairwise_referenced", "pairwise_reference_free"]


def eval_p_pairs() -> list[dict]:
    """The first 24 Auto-J Eval-P pairs (skips when the shared data is absent)."""
    path = shared_data_dir() / "autoj" / "test" / "testdata_pairwise.jsonl"
    if not path.is_file():
        pytest.skip(f"Auto-J Eval-P not found at {path} (set HF_CRITIC_SHARED_DATA to its folder)")
    from hf_critic.loaders import load_autoj_eval_p

    return load_autoj_eval_p(path).select(range(EVAL_P_PAIRS)).to_list()


def examples(name: str) -> list[dict]:
    return [json.loads(line) for line in (EXAMPLES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


def judge(critic, rows: list[dict]) -> list[dict]:
    """Grade pointwise rows, compare pairwise rows (both orders); the critiques as dicts."""
    if "response_1" in rows[0]:
        return critic.compare(rows, swap=True).to_list()
    return critic.grade(rows).to_list()


def assert_same_readouts(ours: list[dict], local: list[dict]) -> None:
    """Every row's read-out distribution within 1e-3 and the same label; scores within 1e-3 x the scale."""
    for i, (s, loc) in enumerate(zip(ours, local, strict=True)):
        assert s["critique_status"] == loc["critique_status"] == "ok", i
        p, q = json.loads(s["critique_distribution"]), json.loads(loc["critique_distribution"])
        assert p.keys() == q.keys() and max(abs(p[k] - q[k]) for k in p) < PROBABILITY_TOLERANCE, (i, p, q)
        if "critique_label" in s:
            assert s["critique_label"] == loc["critique_label"], i
        else:
            assert s["critique_score"] == pytest.approx(loc["critique_score"], abs=10 * PROBABILITY_TOLERANCE), i
