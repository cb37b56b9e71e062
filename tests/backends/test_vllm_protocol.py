"""The vLLM engine without vLLM: the worker's protocol and loop, its file-only import in vLLM's venv, the backend's
bookkeeping against a worker stand-in backed by a tiny transformers model (the read-out's trie requests, greedy
decoding), the refusal where vLLM is not installed, and ``engine="auto"``'s choice from the measured table."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys

import pytest
import torch

from hf_critic.backends import measurements, models, vllm_protocol, vllm_worker
from hf_critic.backends.vllm import VllmBackend, engine_llm_args, sampling_params
from hf_critic.core.errors import MissingExtraError
from hf_critic.critic.decoding import DecodingConfig


# ------------------------------------------------------------------------------------------------ protocol
def test_a_message_round_trips_as_one_json_line():
    stream = io.StringIO()
    vllm_protocol.write_message(stream, vllm_protocol.request("logprobs", prompts=[[1, 2]], token_ids=[[3]]))
    assert stream.getvalue().count("\n") == 1
    stream.seek(0)
    assert vllm_protocol.read_message(stream) == {"op": "logprobs", "prompts": [[1, 2]], "token_ids": [[3]]}
    assert vllm_protocol.read_message(stream) is None  # the end of the stream


def test_bad_lines_and_ops_are_errors_and_a_failure_is_one_line():
    with pytest.raises(ValueError, match="unknown op 'embed'"):
        vllm_protocol.request("embed")
    with pytest.raises(ValueError, match="not a JSON line"):
        vllm_protocol.read_message(io.StringIO("{oops\n"))
    with pytest.raises(ValueError, match="not a JSON object"):
        vllm_protocol.read_message(io.StringIO("[1]\n"))
    assert vllm_protocol.failure(RuntimeError("a\nb")) == {"ok": False, "error": "RuntimeError: a b"}


def test_the_worker_answers_each_request_keeps_serving_after_a_failure_and_stops(monkeypatch):
    def generate(llm, message):
        return {"outputs": [[ids[::-1]] for ids in message["prompts"]]}

    def reward(llm, message):
        raise RuntimeError("the pooling runner is off")

    monkeypatch.setattr(vllm_worker, "HANDLERS", {"generate": generate, "reward": reward})
    lines = [
        {"op": "generate", "prompts": [[1, 2, 3]], "params": {}},
        {"op": "reward", "prompts": [[1]]},
        {"op": "bogus"},
        {"op": "stop"},
        {"op": "generate", "prompts": [[9]], "params": {}},  # after stop: never read
    ]
    requests = io.StringIO("".join(json.dumps(m) + "\n" for m in lines) + "not json\n")
    out = io.StringIO()
    vllm_worker.serve(None, requests, out, vllm_protocol)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answers[0] == {"ok": True, "outputs": [[[3, 2, 1]]]}
    assert answers[1] == {"ok": False, "error": "RuntimeError: the pooling runner is off"}
    assert answers[2]["ok"] is False and "unknown op 'bogus'" in answers[2]["error"]
    assert answers[3] == {"ok": True, "stopped": True} and len(answers) == 4


def test_the_worker_file_loads_its_protocol_by_file_with_nothing_of_hf_critic():
    """vLLM's venv has none of hf-critic's dependencies: run isolated (``-I``: no PYTHONPATH, not the script's
    folder), the worker's protocol still loads, and no hf_critic module is imported."""
    code = (
        "import runpy, sys; ns = runpy.run_path(sys.argv[1], run_name='worker'); p = ns['_protocol']();"
        "print(p.OPS, any(m.startswith('hf_critic') for m in sys.modules), 'transformers' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code, vllm_worker.__file__], capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[0] == "('generate', 'logprobs', 'reward', 'stop') False False"


# ------------------------------------------------------------------------------------------------ the backend
class TinyWorker:
    """A worker stand-in that answers from a transformers model: the exact next-token log-probabilities of the
    requested ids, and greedy completions."""

    def __init__(self, model):
        self.model, self.calls, self.info = model, [], {"max_model_len": 256}

    @torch.inference_mode()
    def call(self, op, **fields):
        self.calls.append((op, fields))
        if op == "logprobs":
            found = []
            for ids, wanted in zip(fields["prompts"], fields["token_ids"], strict=True):
                logits = self.model(torch.tensor([ids])).logits[0, -1].double()
                found.append(torch.log_softmax(logits, -1)[wanted].tolist())
            return {"ok": True, "logprobs": found}
        params, outputs = fields["params"], []
        for ids in fields["prompts"]:
            out = self.model.generate(torch.tensor([ids]), max_new_tokens=params["max_tokens"], do_sample=False)
            outputs.append([out[0, len(ids) :].tolist()])
        return {"ok": True, "outputs": outputs}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from hf_critic.backends.transformers import TransformersBackend

    local = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", progress=False)
    engine = VllmBackend(
        TinyWorker(local.model), local.tokenizer, name="tiny|vllm", identity="transformers|tiny", progress=False
    )
    return local, engine


CHATS = [
    [{"role": "user", "content": "Rate the response. The capital of France is Paris."}],
    [{"role": "user", "content": "Rate it: Assistant 1 <|im_end|> Tie"}],  # a control-token string stays text
]


def test_the_read_out_asks_one_request_per_row_and_trie_node_and_equals_transformers(tiny):
    local, engine = tiny
    verdicts = [str(v) for v in range(1, 11)]
    continuations = ["Rating: [["] * len(CHATS)
    expected = local.verdict_probabilities(CHATS, continuations, verdicts)
    got = engine.verdict_probabilities(CHATS, continuations, verdicts)
    for g, e in zip(got, expected, strict=True):
        assert g.probabilities.keys() == e.probabilities.keys()
        assert max(abs(g.probabilities[k] - e.probabilities[k]) for k in e.probabilities) < 1e-9
    op, fields = engine.worker.calls[-1]
    trie = engine._verdict_trie(continuations, verdicts)
    assert op == "logprobs" and len(fields["prompts"]) == len(CHATS) * (1 + len(trie.fed))


def test_greedy_critiques_equal_transformers_and_prompts_keep_control_strings_as_text(tiny):
    local, engine = tiny
    config = DecodingConfig(strategy="greedy", max_new_tokens=8)
    assert engine.generate(CHATS, config) == local.generate(CHATS, config)
    sent = engine.worker.calls[-1][1]["prompts"]
    assert sent == local._encode([local._prompt_text(c) for c in CHATS])
    assert engine.prompt_tokens(CHATS[1]) == local.prompt_tokens(CHATS[1])


def test_identity_is_the_transformers_content_plus_the_engine(tiny):
    _, engine = tiny
    assert engine.identity.startswith("transformers|tiny|chat_template:") and engine.identity.endswith("|engine:vllm")


def test_decoding_maps_onto_sampling_params_and_beam_search_is_refused():
    assert sampling_params(DecodingConfig(strategy="greedy", max_new_tokens=7)) == {
        "max_tokens": 7,
        "n": 1,
        "detokenize": False,
        "temperature": 0.0,
    }
    sampled = sampling_params(DecodingConfig(strategy="self_consistency", num_samples=3, seed=5))
    assert (sampled["n"], sampled["top_k"], sampled["seed"], sampled["top_p"]) == (3, 0, 5, 0.9)
    with pytest.raises(ValueError, match="decoding=beam"):
        sampling_params(DecodingConfig(strategy="beam"))


def test_vllms_parallelism_passes_through_and_is_refused_elsewhere():
    args = engine_llm_args("auto", tensor_parallel_size=2, data_parallel_size=3, llm_args={"max_model_len": 2048})
    assert args == {
        "dtype": "float32",
        "enforce_eager": True,
        "max_model_len": 2048,
        "tensor_parallel_size": 2,
        "data_parallel_size": 3,
    }
    with pytest.raises(ValueError, match="tensor_parallel_size=0"):
        engine_llm_args(tensor_parallel_size=0)
    from hf_critic.backends import load_backend

    with pytest.raises(ValueError, match="tensor_parallel_size=2, data_parallel_size=1: vLLM's parallelism"):
        load_backend(None, engine="transformers", tensor_parallel_size=2)


# ------------------------------------------------------------------------------------------------ not installed
def test_engine_vllm_without_vllm_is_refused_naming_make_vllm(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_CRITIC_VLLM_VENV", str(tmp_path / "no-venv"))
    with pytest.raises(MissingExtraError, match=r"no-venv.*`make vllm`.*HF_CRITIC_VLLM_VENV") as caught:
        models.resolve_engine("vllm", None)
    assert caught.value.extra == "vllm" and "pip install" not in str(caught.value)
    from hf_critic.critic import Critic

    with pytest.raises(MissingExtraError, match="make vllm"):
        Critic.from_pretrained("smollm2-135m-critic", engine="vllm", cache_path=None)
    with pytest.raises(ValueError, match="runs on engine=llamacpp"):
        models.resolve_engine("vllm", "critic.gguf")
    assert "vllm" not in models.installed_engines()


# ------------------------------------------------------------------------------------------------ auto
TABLE = {
    "text": {
        24: {"transformers": 0.2, "llamacpp": 0.5, "vllm": 0.4, "served": 0.9},
        240: {"transformers": 0.2, "vllm": 1.1},
    },
    "reward": {24: {"transformers": 3.0, "vllm": 1.0}},
}


def test_fastest_engine_takes_the_fastest_installed_at_the_largest_measured_size_not_above_the_run():
    pick = measurements.fastest_engine
    assert pick(TABLE, "text", {"transformers", "llamacpp", "vllm"}, rows=24) == "llamacpp"
    assert pick(TABLE, "text", {"transformers", "vllm"}, rows=100) == "vllm"  # measured at 24 pairs
    assert pick(TABLE, "text", {"transformers", "llamacpp", "vllm"}, rows=400) == "vllm"  # at 240 pairs
    assert pick(TABLE, "text", {"transformers"}, rows=400) == "transformers"
    assert pick(TABLE, "reward", {"transformers", "vllm"}, rows=24) == "transformers"
    assert pick(TABLE, "readout", {"transformers", "vllm"}, rows=24) is None  # not measured: the caller's default
    assert pick({"text": {24: {"served": 9.0}}}, "text", {"transformers"}, rows=24) is None  # never a server
    # a shorter run than any measurement, or one of unknown length: no figure carried down (vLLM's start weighs more)
    assert pick(TABLE, "text", {"transformers", "vllm"}, rows=8) is None
    assert pick(TABLE, "text", {"transformers", "vllm"}) is None


def test_auto_never_picks_a_slower_measured_engine(monkeypatch):
    """Every committed figure: for each CPU class, job, size and set of installed engines, the engine auto picks is
    at least as fast as every other installed engine measured there."""
    classes = {"amx": {"amx_bf16": True}, "avx512_bf16": {"avx512_bf16": True}, "other": {}}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for cpu, table in measurements.ENGINE_MEASUREMENTS.items():
        monkeypatch.setattr(models, "cpu_flags", lambda cpu=cpu: classes[cpu])
        for job, sizes in table.items():
            for size, figures in sizes.items():
                engines = [e for e in figures if e in measurements.CHOOSABLE]
                for n in range(1, len(engines) + 1):
                    for installed in itertools.combinations(engines, n):
                        monkeypatch.setattr(models, "installed_engines", lambda i=installed: {"transformers", *i})
                        chosen = models.resolve_engine("auto", None, job=job, rows=size)
                        assert chosen in {"transformers", *installed}, (cpu, job, size, installed)
                        rivals = [figures[e] for e in installed if e in figures]
                        assert figures.get(chosen, 0.0) >= max(rivals), (cpu, job, size, installed, chosen)


def test_auto_keeps_transformers_for_an_unmeasured_model_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "installed_engines", lambda: {"transformers", "llamacpp", "vllm"})
    assert models.resolve_engine("auto", str(tmp_path), job="text") == "transformers"
