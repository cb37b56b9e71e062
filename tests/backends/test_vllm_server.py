"""The critic behind a real vLLM server against the same critic in-process (``make vllm`` installs vLLM's own
virtualenv; ``$HF_CRITIC_VLLM_VENV`` points elsewhere).

Two servers start on 127.0.0.1 from vLLM's virtualenv with the module form and CPU options
(:class:`hf_critic.backends.serving.VllmServerProcess`): a chat server on the embedded critic's converted folder as it is (it
has no GGUF ``quantization_config`` left), and a pooling server on the shipped reward critic exported by
``export-critic``. Parity with the in-process critic (float32, transformers) on the shipped examples and on 24 Auto-J
Eval-P pairs: greedy text critiques identical, read-out probabilities within 1e-3, rewards within 1e-3, labels equal.
Then each served-path bug, against the real server: the read-out's prefilled turn, a run of read-outs that miss the
verdicts, and a chat request to the pooling server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hf_critic.backends.serving import VllmServerProcess, export_critic
from tests.backends._vllm_parity import (
    EXAMPLES,
    PROBABILITY_TOLERANCE,
    SETS,
    assert_same_readouts,
    eval_p_pairs,
    examples,
    judge,
    vllm_python_or_skip,
)

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

PYTHON = vllm_python_or_skip()

CRITIC = "smollm2-135m-critic"
REWARD_TOLERANCE = PROBABILITY_TOLERANCE


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """``{"chat": server, "pooling": server}``, started together (each takes ~35 s on a quiet CPU) and stopped at
    the end of the module."""
    from hf_critic.backends.models import default_model_dir

    logs = tmp_path_factory.mktemp("vllm-logs")
    exported = export_critic(CRITIC, tmp_path_factory.mktemp("export") / CRITIC)
    cores = [str(i % (os.cpu_count() or 1)) for i in range(2)]  # vLLM's auto binding puts both on the first core
    started = {
        "chat": VllmServerProcess(default_model_dir(), python=PYTHON, log=logs / "chat.log", cores=cores[0]),
        "pooling": VllmServerProcess(
            exported.folder, CRITIC, pooling=True, python=PYTHON, log=logs / "pooling.log", cores=cores[1]
        ),
    }
    try:
        for server in started.values():
            server.start()
        for server in started.values():
            server.wait()
        yield started
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture(scope="module")
def local_backend():
    """The embedded critic in-process, float32 (vLLM serves it in float32)."""
    from hf_critic.backends import load_backend

    return load_backend(None, engine="transformers", dtype="float32", batch_size=8, progress=False)


def served_backend(server):
    """The critic on the chat server, named as vLLM names it: by the folder it loaded."""
    from hf_critic.backends.openai import OpenAIBackend

    return OpenAIBackend.connect(server.url, server.folder, progress=False)


@pytest.mark.parametrize("name", SETS)
def test_verdict_auto_reads_the_same_probabilities_through_vllm_as_in_process(servers, local_backend, name):
    """The embedded critic served by vLLM (named by its folder): --verdict auto is the probability read-out there too,
    the prefilled verdict prefix continued (continue_final_message), the distribution within 1e-3, labels equal."""
    from hf_critic.critic import Critic

    served_critic = Critic(served_backend(servers["chat"]), verdict="auto", cache_path=None)
    assert served_critic.plan == ("probability", "none")
    rows = examples(name)
    assert_same_readouts(judge(served_critic, rows), judge(Critic(local_backend, cache_path=None), rows))


def test_eval_p_read_out_through_vllm_equals_in_process(servers, local_backend):
    from hf_critic.critic import Critic

    rows = eval_p_pairs()
    served = Critic(served_backend(servers["chat"]), cache_path=None).compare(rows).to_list()
    local = Critic(local_backend, cache_path=None).compare(rows).to_list()
    assert_same_readouts(served, local)


def test_greedy_text_critiques_through_vllm_are_identical(servers, local_backend):
    """Greedy decoding, 64 new tokens, float32 on both sides: the same critique token for token on the referenced
    examples (8 graded rows, 4 compared pairs)."""
    from hf_critic.critic import Critic
    from hf_critic.critic.decoding import DecodingConfig

    options = {"verdict": "text", "decoding": DecodingConfig(max_new_tokens=64), "cache_path": None}
    served, local = Critic(served_backend(servers["chat"]), **options), Critic(local_backend, **options)
    for name in ("pointwise_referenced", "pairwise_referenced"):
        rows = examples(name)
        texts = [
            critic.grade(rows) if name.startswith("point") else critic.compare(rows) for critic in (served, local)
        ]
        assert texts[0]["critique_generation"] == texts[1]["critique_generation"], name


def reward_critics(servers):
    from hf_critic.backends.pooling import PoolingRewardClient
    from hf_critic.critic import Critic, RewardCritic
    from hf_critic.critic.rewards import ServedRewardModel

    client = PoolingRewardClient(servers["pooling"].url, CRITIC)
    client.check()
    served = RewardCritic(ServedRewardModel.for_client(client), cache_path=None)
    return served, Critic.from_pretrained(CRITIC, dtype="float32", cache_path=None, progress=False)


def assert_same_rewards(served: list[dict], local: list[dict]) -> None:
    for i, (s, loc) in enumerate(zip(served, local, strict=True)):
        for column in ("critique_reward", "critique_reward_2", "critique_score"):
            if column in s:
                assert abs(s[column] - loc[column]) < REWARD_TOLERANCE, (i, column, s[column], loc[column])
        assert s.get("critique_label") == loc.get("critique_label"), i


def test_the_served_reward_critic_judges_as_in_process_with_its_calibration_and_context(servers):
    """``--model smollm2-135m-critic --pooling`` on the exported critic: its fitted score map (scores equal, not the
    unfitted sigmoid), its 256-token context (long Eval-P pairs cut as in-process), rewards within 1e-3, labels equal."""
    served, local = reward_critics(servers)
    assert served.scorer.context_length == local.scorer.context_length == 256
    for name in ("pointwise_referenced", "pairwise_referenced"):
        rows = examples(name)
        assert_same_rewards(judge(served, rows), judge(local, rows))
    pairs = eval_p_pairs()
    served_rows, local_rows = served.compare(pairs).to_list(), local.compare(pairs).to_list()
    assert sum(r["critique_truncated"] for r in local_rows) > 0  # the context matters on these pairs
    assert_same_rewards(served_rows, local_rows)


def test_a_vllm_read_out_that_closes_the_prefilled_turn_is_an_error(servers):
    """Without continue_final_message (what a llama.cpp server needs), vLLM opens a new assistant turn and the verdict
    is read at the wrong position: most read-outs miss the verdicts, and the run stops instead of writing them."""
    from hf_critic.backends.retry import ServedReadoutError
    from hf_critic.critic import Critic

    backend = served_backend(servers["chat"])
    assert backend.kind == "vllm" and backend.prefill_params()
    backend.kind = "llama.cpp"  # the request a llama.cpp server needs, sent to vLLM
    with pytest.raises(ServedReadoutError, match=r"read-outs from .* server kind llama.cpp"):
        Critic(backend, cache_path=None).compare(examples("pairwise_referenced"), swap=True)


def test_a_chat_request_to_the_vllm_pooling_server_says_to_add_pooling(servers, tmp_path, capsys):
    from hf_critic.cli import main

    code = main(
        [
            "grade",
            "--data",
            str(EXAMPLES / "pointwise_referenced.jsonl"),
            "--output",
            str(tmp_path / "out.jsonl"),
            "--model",
            CRITIC,
            "--base-url",
            servers["pooling"].url,
            "--no-cache",
            "--no-progress",
        ]
    )
    assert code == 3
    assert f"serves '{CRITIC}' as a pooling model" in capsys.readouterr().err


def test_the_embedded_critic_folder_vllm_serves_has_no_gguf_quantization_config(servers):
    from hf_critic.backends.models import default_model_dir

    config = json.loads((Path(default_model_dir()) / "config.json").read_text(encoding="utf-8"))
    assert "quantization_config" not in config and servers["chat"].process.poll() is None
