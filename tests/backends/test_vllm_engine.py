"""``engine="vllm"``: vLLM's offline engine in its worker process (``make vllm``; ``$HF_CRITIC_VLLM_VENV`` points
elsewhere) against the same critic in-process on transformers in float32.

One worker per model for the whole module (a start takes a minute on a quiet CPU, several on a loaded one), never two
at once: the chat worker on the embedded critic's converted folder, stopped before the pooling worker on the shipped
reward critic starts. Parity on the shipped examples and on 24 Auto-J Eval-P pairs: greedy text critiques identical,
read-out probabilities within 1e-3 and labels equal, rewards within 1e-3 and labels equal; the statuses and the
identities as the transformers engine's plus the engine.
"""

from __future__ import annotations

import os

import pytest

from hf_critic.backends.vllm_venv import VLLM_VENV_ENV
from tests.backends._vllm_parity import SETS, assert_same_readouts, eval_p_pairs, examples, judge, vllm_python_or_skip

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

PYTHON = vllm_python_or_skip()

CRITIC = "smollm2-135m-critic"
TOLERANCE = 1e-3


@pytest.fixture(scope="module", autouse=True)
def vllm_venv():
    """The workers run with the tests' vLLM Python; every worker is stopped at the end of the module."""
    from hf_critic.backends import vllm

    previous = os.environ.get(VLLM_VENV_ENV)
    os.environ[VLLM_VENV_ENV] = str(PYTHON.parent.parent)
    yield
    vllm.stop_workers()
    if previous is None:
        os.environ.pop(VLLM_VENV_ENV, None)
    else:
        os.environ[VLLM_VENV_ENV] = previous


@pytest.fixture(scope="module")
def engines():
    """``(vllm, transformers)`` backends of the embedded critic, float32 both."""
    from hf_critic.backends import load_backend

    engine = load_backend(None, engine="vllm", batch_size=8, progress=False)
    local = load_backend(None, engine="transformers", dtype="float32", batch_size=8, progress=False)
    return engine, local


def test_the_engine_is_known_by_the_transformers_identity_plus_the_engine(engines):
    engine, local = engines
    assert engine.embedded and engine.keeps_text and engine.context_length == 4096
    assert engine.identity == f"{local.identity}|engine:vllm"


@pytest.mark.parametrize("name", SETS)
def test_verdict_auto_reads_the_same_probabilities_on_vllm_as_on_transformers(engines, name):
    from hf_critic.critic import Critic

    engine, local = engines
    ours = Critic(engine, verdict="auto", cache_path=None)
    assert ours.plan == ("probability", "none")
    rows = examples(name)
    assert_same_readouts(judge(ours, rows), judge(Critic(local, cache_path=None), rows))


def test_eval_p_read_out_on_vllm_equals_transformers(engines):
    from hf_critic.critic import Critic

    engine, local = engines
    rows = eval_p_pairs()
    ours = Critic(engine, cache_path=None).compare(rows).to_list()
    assert_same_readouts(ours, Critic(local, cache_path=None).compare(rows).to_list())


def test_greedy_text_critiques_on_vllm_are_identical(engines):
    """Greedy decoding, 64 new tokens, float32 on both sides: the same critique token for token, the same statuses,
    on the referenced examples (8 graded rows, 4 compared pairs in both orders)."""
    from hf_critic.critic import Critic
    from hf_critic.critic.decoding import DecodingConfig

    engine, local = engines
    options = {"verdict": "text", "decoding": DecodingConfig(max_new_tokens=64), "cache_path": None}
    for name in ("pointwise_referenced", "pairwise_referenced"):
        rows = examples(name)
        ours, theirs = (judge(Critic(backend, **options), rows) for backend in (engine, local))
        assert [r["critique_generation"] for r in ours] == [r["critique_generation"] for r in theirs], name
        assert [r["critique_status"] for r in ours] == [r["critique_status"] for r in theirs], name


def test_the_vllm_cache_key_is_its_own(engines, tmp_path):
    """A critique cached from vLLM is found again on vLLM (a second run generates nothing) and never on transformers."""
    from hf_critic.critic import Critic
    from hf_critic.critic.decoding import DecodingConfig

    engine, local = engines
    options = {"verdict": "text", "decoding": DecodingConfig(max_new_tokens=8), "cache_path": tmp_path / "c.sqlite"}
    rows = examples("pointwise_referenced")[:2]
    Critic(engine, **options).grade(rows)
    again = Critic(engine, **options).grade(rows, return_stats=True)
    assert again.stats.cached == 2
    assert Critic(local, **options).grade(rows, return_stats=True).stats.cached == 0


def reward_critics():
    """``(vllm, transformers)`` critics of the shipped reward critic; the chat worker is stopped first (one vLLM at a
    time on this CPU)."""
    from hf_critic.backends import vllm
    from hf_critic.critic import Critic

    vllm.stop_workers()
    options = {"dtype": "float32", "cache_path": None, "progress": False}
    return Critic.from_pretrained(CRITIC, engine="vllm", **options), Critic.from_pretrained(CRITIC, **options)


def assert_same_rewards(ours: list[dict], local: list[dict]) -> None:
    for i, (s, loc) in enumerate(zip(ours, local, strict=True)):
        assert s["critique_status"] == loc["critique_status"], i
        for column in ("critique_reward", "critique_reward_2", "critique_score"):
            if column in s:
                assert abs(s[column] - loc[column]) < TOLERANCE, (i, column, s[column], loc[column])
        assert s.get("critique_label") == loc.get("critique_label"), i


def test_the_reward_critic_on_vllm_judges_as_on_transformers_with_its_calibration_and_context():
    ours, local = reward_critics()
    assert ours.scorer.context_length == local.scorer.context_length == 256
    assert ours.scorer.identity.removesuffix("|engine:vllm") == local.scorer.identity
    for name in ("pointwise_referenced", "pairwise_referenced"):
        rows = examples(name)
        assert_same_rewards(judge(ours, rows), judge(local, rows))
    pairs = eval_p_pairs()
    ours_rows, local_rows = ours.compare(pairs).to_list(), local.compare(pairs).to_list()
    assert sum(r["critique_truncated"] for r in local_rows) > 0  # the context matters on these pairs
    assert_same_rewards(ours_rows, local_rows)
