"""Served critics that mean what the local ones mean, against loopback stubs (no vLLM needed): what a read-out sends to
each server kind, a run whose read-outs miss the verdicts, ``--verdict auto`` by model on every path, a served reward
critic's own files, a chat request to a pooling server, and the embedded critic's folder as a plain checkpoint. The
same behaviours against a real vLLM server are in ``tests/backends/test_vllm_server.py``."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from hf_critic.backends import models
from hf_critic.backends.chat import server_kind
from hf_critic.backends.openai import CONTINUE_FINAL_MESSAGE, OpenAIBackend
from hf_critic.backends.openai_client import OpenAIClient
from hf_critic.backends.retry import FatalAPIError, RetryPolicy
from hf_critic.cli import main
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.critic.verdicts import resolve_verdict
from hf_critic.testing.servers import StubOpenAIServer
from tests.backends.test_pooling_server import StubPoolingServer, pooling_response

VLLM_ENTRY = {"root": "/models/critic", "max_model_len": 4096}
LLAMACPP_ENTRY = {"meta": {"n_params": 134515008, "n_ctx_train": 8192}}


def readout_body(tokens: dict[str, float]) -> bytes:
    """A one-token chat.completion whose first token's alternatives are ``tokens`` (text -> log-probability)."""
    top = [{"token": t, "logprob": lp, "bytes": None} for t, lp in tokens.items()]
    choice = {
        "index": 0,
        "finish_reason": "length",
        "message": {"role": "assistant", "content": next(iter(tokens))},
        "logprobs": {"content": [{"token": next(iter(tokens)), "logprob": 0.0, "top_logprobs": top}]},
    }
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]}).encode()


def backend_on(url: str, served: dict, model: str = "critic") -> OpenAIBackend:
    client = OpenAIClient(url, model, retry=RetryPolicy(max_retries=0))
    client.served = dict(served)
    return OpenAIBackend(client, progress=False)


@pytest.mark.parametrize(
    "served,kind,sent",
    [
        (VLLM_ENTRY, "vllm", CONTINUE_FINAL_MESSAGE),
        (LLAMACPP_ENTRY, "llama.cpp", {}),
        ({}, None, CONTINUE_FINAL_MESSAGE),
    ],
)
def test_the_readout_sends_what_each_server_kind_needs_to_continue_the_prefilled_turn(served, kind, sent, caplog):
    """vLLM closes a prefilled assistant turn unless told to continue it (its defaults read the verdict at the wrong
    position); llama.cpp continues it by itself; an unknown server gets vLLM's fields, and a warning says so."""
    answer = readout_body({"A": math.log(0.6), "B": math.log(0.3), "C": math.log(0.1)})
    with StubOpenAIServer(respond=lambda body, headers: (200, {}, answer)) as server:
        backend = backend_on(server.url, served)
        (readout,) = backend.verdict_probabilities([[{"role": "user", "content": "q"}]], ["[["], ["A", "B", "C"])
        body = server.bodies[0]
    assert backend.kind == kind == server_kind(served)
    assert {k: body[k] for k in CONTINUE_FINAL_MESSAGE if k in body} == sent
    assert body["messages"][-1] == {"role": "assistant", "content": "[["}
    assert readout.probabilities == pytest.approx({"A": 0.6, "B": 0.3, "C": 0.1})
    assert ("does not say which server this is" in caplog.text) == (kind is None)


def write_pairs(path: Path, n: int = 3) -> Path:
    rows = [{"question": f"q{i}", "response_1": f"a{i}", "response_2": f"b{i}"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_served_run_whose_readouts_miss_the_verdicts_is_an_error_not_a_file_of_low_mass_rows(tmp_path, capsys):
    """What a server that closes the prefilled turn gives: the next token is the start of a new answer, not a verdict.
    Every row low_mass used to end with exit 0; now exit 3 (a server failure) with one line saying what happened."""
    off_format = readout_body({"Sure": -0.1, "The": -2.5, "I": -3.0})
    with StubOpenAIServer(respond=lambda body, headers: (200, {}, off_format)) as server:
        code = main(
            [
                "compare",
                "--data",
                str(write_pairs(tmp_path / "pairs.jsonl")),
                "--output",
                str(tmp_path / "out.jsonl"),
                "--base-url",
                server.url,
                "--model",
                "critic",
                "--verdict",
                "probability",
                "--explanation",
                "none",
                "--no-cache",
                "--no-progress",
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3 and not (tmp_path / "out.jsonl").exists()
    assert "3 of 3 verdict read-outs from http://127.0.0.1" in err and "outside the server's top-20" in err
    assert "use --verdict text" in err


def test_verdict_auto_decides_by_the_model_on_every_path(tmp_path, monkeypatch):
    """The embedded critic reached by name, by its converted folder, or behind a server that loaded that folder (vLLM's
    root) is read as the embedded critic in-process is: probabilities, no explanation. Any other model: text."""
    monkeypatch.setenv("HF_CRITIC_CACHE", str(tmp_path))
    folder = tmp_path / "models" / models.DEFAULT_MODEL_NAME
    for given in (None, models.DEFAULT_MODEL_NAME, str(folder), "/elsewhere/smollm2-135m-instruct"):
        assert models.is_embedded_critic(given), given
    assert models.is_embedded_critic("served-name", {"root": str(folder)})
    assert not models.is_embedded_critic("/models/another-critic", {"root": "/models/another-critic"})
    embedded = backend_on("http://127.0.0.1:1/v1", {"root": str(folder), "max_model_len": 4096}, model=str(folder))
    other = backend_on("http://127.0.0.1:1/v1", VLLM_ENTRY)
    assert resolve_verdict("auto", None, embedded=embedded.embedded) == ("probability", "none")
    assert resolve_verdict("auto", None, embedded=other.embedded) == ("text", "first")


def test_a_chat_request_to_a_pooling_server_says_to_use_pooling():
    """vLLM's pooling runner has no chat route (404 on /v1/chat/completions for a model it serves): the fix is
    --pooling, not the model name or the key."""
    not_found = (404, {}, b'{"detail": "Not Found"}')
    with StubOpenAIServer(respond=lambda body, headers: not_found) as server:
        backend = backend_on(server.url, VLLM_ENTRY)
        with pytest.raises(FatalAPIError, match=r"serves 'critic' as a pooling model .*add --pooling"):
            backend.generate([[{"role": "user", "content": "q"}]], DecodingConfig())


def test_a_served_reward_critic_named_by_its_name_takes_its_calibration_tie_band_and_context(tmp_path, capsys):
    """``--model smollm2-135m-critic --pooling``: the shipped critic's fitted score map and 256-token context, its
    inputs encoded with its tokenizer and cut as in-process (sent as token ids), said on stderr."""
    from hf_critic.backends.pooling import PoolingRewardClient
    from hf_critic.critic.rewards import ServedRewardModel
    from hf_critic.critics.reward import RewardCalibration, critic_tokenizer, fit_ids

    shipped = RewardCalibration.load(models.TRAINED_CRITICS["smollm2-135m-critic"].folder)
    with StubPoolingServer(
        models=("smollm2-135m-critic",), respond=lambda b, h: (200, {}, pooling_response(b["model"], [0.5]))
    ) as server:
        client = PoolingRewardClient(server.url, "smollm2-135m-critic")
        client.check()
        scorer = ServedRewardModel.for_client(client)
        ids, cut = scorer.fit("question " * 10, "a long answer " * 200, "middle")
        assert scorer.score([ids]) == [0.5]
        sent = server.bodies[-1]
    assert scorer.calibration == shipped and shipped.slope is not None and scorer.context_length == 256
    local = fit_ids(
        critic_tokenizer(models.default_model_dir()), "question " * 10, "a long answer " * 200, 256, "middle"
    )
    assert cut and ids == local[0] and len(ids) <= 256 and sent["input"] == ids and "messages" not in sent
    assert "calibration, tie band 0 and 256-token context from" in capsys.readouterr().err
    with StubPoolingServer(models=("my-rm",)) as server:  # a name and a server that say nothing of the critic's files
        client = PoolingRewardClient(server.url, "my-rm")
        client.check()
        unnamed = ServedRewardModel.for_client(client)
    assert unnamed.tokenizer is None and not unnamed.calibration.fitted
    assert "no critic files found" in capsys.readouterr().err


def test_the_embedded_critic_folder_is_a_plain_checkpoint_once_used(tiny_model_dir, tmp_path, monkeypatch):
    """A folder converted from GGUF by an older version keeps quantization_config {quant_method: gguf}, which vLLM
    refuses; using it drops the entry from config.json (nothing else changes)."""
    monkeypatch.setenv("HF_CRITIC_CACHE", str(tmp_path))
    folder = tmp_path / "models" / models.DEFAULT_MODEL_NAME
    shutil.copytree(tiny_model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    stale = {**config, "quantization_config": {"quant_method": "gguf", "gguf_file": "x.gguf"}}
    (folder / "config.json").write_text(json.dumps(stale))
    assert models.default_model_dir() == folder
    assert json.loads((folder / "config.json").read_text()) == config
    assert not models.drop_gguf_quantization(folder)  # nothing left to drop


def test_export_critic_prints_the_serving_lines_and_refuses_what_it_cannot_export(tiny_model_dir, tmp_path, capsys):
    """The embedded critic's folder is served as it is (nothing written); a text critic folder is not an adapter
    critic to merge, and an existing --output needs --overwrite: one-line errors, exit 2."""
    assert main(["export-critic", models.DEFAULT_MODEL_NAME, "--port", "8123"]) == 0
    out = capsys.readouterr().out
    folder = models.default_model_dir()
    assert f"smollm2-135m-instruct: text critic in {folder}" in out
    assert f"vllm serve {folder} --served-model-name smollm2-135m-instruct --host 127.0.0.1 --port 8123\n" in out
    assert "python -m vllm.entrypoints.openai.api_server --model" in out and "--runner pooling" not in out

    assert main(["export-critic", str(tiny_model_dir), "--output", str(tmp_path / "out")]) == 2
    assert "not a reward critic" in capsys.readouterr().err and not (tmp_path / "out").exists()
    (tmp_path / "taken").mkdir()
    assert main(["export-critic", "smollm2-135m-critic", "--output", str(tmp_path / "taken")]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
