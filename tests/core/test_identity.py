"""Identity by content: served models by base URL, name and what the server reports; local weights by
the digest of their files; a calibration's fingerprint holds every option that changes a verdict and nothing else."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from hf_critic.core import schema
from hf_critic.critic import Critic, RewardCritic
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.selective.cascade import CascadeStage, RecordedVerdicts, critic_fingerprint
from hf_critic.testing.servers import StubOpenAIServer
from tests.critic.test_critic import ScriptedBackend

PAIRWISE = schema.Setting(schema.Task.PAIRWISE, False)


# --------------------------------------------------------------------------------------------------
# Served models
# --------------------------------------------------------------------------------------------------
def test_two_servers_serving_one_name_share_no_cached_critique(tmp_path, capsys):
    """The second server's run used to read the first one's verdicts back ("from cache 2")."""
    from hf_critic.cli import main

    data = tmp_path / "pairs.jsonl"
    data.write_text(
        "".join(json.dumps({"question": f"q{i}", "response_1": "a", "response_2": "b"}) + "\n" for i in range(2))
    )
    cache = tmp_path / "cache.sqlite"
    labels = []
    with (
        StubOpenAIServer(lambda body: "Judged. [[A]]") as first,
        StubOpenAIServer(lambda body: "Judged. [[B]]") as second,
    ):
        for k, server in enumerate((first, second)):
            out = tmp_path / f"out{k}.jsonl"
            argv = [
                "compare",
                "--data",
                str(data),
                "--base-url",
                server.url,
                "--model",
                "judge",
                "--template",
                "mtbench",
                "--verdict",
                "text",
                "--cache",
                str(cache),
                "--no-progress",
                "--output",
                str(out),
            ]
            assert main(argv) == 0
            labels.append([json.loads(line)["critique_label"] for line in out.read_text().splitlines()])
        assert second.requests == 2  # asked, not read from the first server's entries
    assert labels == [[0, 0], [1, 1]]
    assert "from cache 0" in capsys.readouterr().out.splitlines()[-1]


def test_what_the_server_reports_is_part_of_the_identity():
    from hf_critic.backends.chat import served_identity
    from hf_critic.backends.openai import OpenAIBackend
    from hf_critic.backends.openai_client import OpenAIClient

    entries = [{"id": "judge", "owned_by": "vllm", "root": "/models/a", "created": 1_000, "max_model_len": 4096}]
    assert served_identity(entries, "judge", now=2_000_000) == {
        "owned_by": "vllm",
        "root": "/models/a",
        "created": 1_000,
        "max_model_len": 4096,
    }
    # vLLM and llama.cpp put the answer's time in `created`: left out, or every run would miss the cache
    assert "created" not in served_identity(entries, "judge", now=1_010)
    assert served_identity(entries, "other") == {}
    client = OpenAIClient("http://127.0.0.1:1/v1", "judge")
    backend = OpenAIBackend(client)
    before = (backend.name, client.request_key(_request()))
    client.served = {"root": "/models/b"}  # the same name, other weights behind it
    assert backend.name != before[0] and client.request_key(_request()) != before[1]
    assert "127.0.0.1:1" in backend.name and "judge" in backend.name


def _request():
    from hf_critic.backends.chat import ChatRequest

    return ChatRequest("0", [{"role": "user", "content": "hi"}], {"temperature": 0.0})


# --------------------------------------------------------------------------------------------------
# Local weights
# --------------------------------------------------------------------------------------------------
def test_local_weights_are_known_by_their_bytes_and_hashed_once(tmp_path, monkeypatch):
    import hashlib

    from hf_critic.core import identity

    a, b = tmp_path / "a" / "critic", tmp_path / "b" / "critic"
    for folder, byte in ((a, b"\x01"), (b, b"\x02")):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(byte * 1024)
        (folder / "README.md").write_text(str(folder))  # not a weight file: no part of the digest
        for f in folder.iterdir():
            os.utime(f, ns=(1, 1))  # same names, sizes and modification times: only the bytes differ
    store = tmp_path / "digests.json"
    reads = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda f, name: reads.append(f.name) or real(f, name))
    assert identity.weights_digest(a, store) != identity.weights_digest(b, store)
    assert len(reads) == 4  # config.json and the weights of each folder
    identity._MEMORY.clear()  # a new process: the store answers, nothing is read again
    identity.weights_digest(a, store)
    assert len(reads) == 4 and len(json.loads(store.read_text())) == 4
    (a / "model.safetensors").write_bytes(b"\x03" * 1024)  # retrained in place: size kept, mtime moves
    first = identity.weights_digest(b, store)
    assert identity.weights_digest(a, store) != first and len(reads) == 5


def test_the_transformers_backend_name_holds_the_weights_digest(tmp_path):
    from hf_critic.backends.transformers import TransformersBackend
    from hf_critic.testing.tiny_models import build_tiny_model

    one = build_tiny_model(tmp_path / "one", seed=0)
    two = build_tiny_model(tmp_path / "two", seed=1)
    names = [TransformersBackend.from_pretrained(str(p), dtype="float32").name for p in (one, two)]
    assert all("|weights:" in n for n in names)
    assert names[0].split("|weights:")[1] != names[1].split("|weights:")[1]


# --------------------------------------------------------------------------------------------------
# A calibration's fingerprint
# --------------------------------------------------------------------------------------------------
class GrammarBackend(ScriptedBackend):
    supports_grammar = True


def _fingerprint(**options) -> str:
    swap = options.pop("swap", False)
    critic = Critic(GrammarBackend(lambda user, k: "[[A]]"), template="mtbench", **options)
    return critic_fingerprint(CascadeStage("c", critic, swap=swap), PAIRWISE)


def test_a_temperature_greedy_decoding_never_reads_leaves_the_fingerprint():
    """A changed temperature under greedy decoding used to refuse the calibration."""
    assert _fingerprint(decoding=DecodingConfig(temperature=0.3)) == _fingerprint(decoding=DecodingConfig())
    sampled = DecodingConfig(strategy="sampling")
    assert _fingerprint(decoding=sampled) != _fingerprint(
        decoding=DecodingConfig(strategy="sampling", temperature=0.3)
    )


@pytest.mark.parametrize(
    "changed",
    [
        {"truncate": "skip"},
        {"constrain_verdict": True},
        {"decoding": DecodingConfig(max_new_tokens=64)},
        {"swap": True},
    ],
    ids=lambda c: next(iter(c)),
)
def test_every_option_that_changes_a_text_verdict_changes_the_fingerprint(changed):
    assert _fingerprint(**changed) != _fingerprint()


def test_min_verdict_mass_changes_a_read_out_fingerprint():
    """Below the mass a read-out is unparsed: a changed mass keeps other rows (text verdicts refuse the option)."""
    read = {"verdict": "probability", "explanation": "none"}
    assert _fingerprint(**read, min_verdict_mass=0.9) != _fingerprint(**read, min_verdict_mass=0.5)
    # the read-out right after the prompt decodes nothing: its decoding options change no verdict
    assert _fingerprint(**read, decoding=DecodingConfig(max_new_tokens=64)) == _fingerprint(**read)


def test_a_reward_critics_tie_margin_changes_its_fingerprint():
    """A served reward critic calibrated at tie margin 0 used to be accepted at tie margin 3."""
    from hf_critic.backends.pooling import PoolingRewardClient
    from hf_critic.critic.rewards import ServedRewardModel

    def stage(margin):
        reward = ServedRewardModel(PoolingRewardClient("http://127.0.0.1:1/v1", "rm"))
        return CascadeStage("rm", RewardCritic(reward, tie_margin=margin))

    assert critic_fingerprint(stage(0.0), PAIRWISE) != critic_fingerprint(stage(3.0), PAIRWISE)
    assert critic_fingerprint(stage(0.0), PAIRWISE) == critic_fingerprint(stage(0.0), PAIRWISE)


def test_recorded_verdicts_are_known_by_their_files_field_label_map_and_benchmark_order(tmp_path):
    import datasets

    rows = [{"question": f"q{i}", "response_1": f"a{i}", "response_2": f"b{i}"} for i in range(3)]
    benchmark = datasets.Dataset.from_list(rows)
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps({"output": v, "pick": v}) + "\n" for v in (0, 1, 0)))

    def fingerprint(bench=benchmark, **kwargs):
        recorded = RecordedVerdicts.from_verdict_files("j", bench, str(verdicts), **kwargs)
        return critic_fingerprint(CascadeStage("j", recorded), PAIRWISE)

    base = fingerprint()
    assert fingerprint() == base
    assert fingerprint(field="pick") != base
    assert fingerprint(label_map={"0": 1, "1": 0}) != base
    assert fingerprint(bench=datasets.Dataset.from_list(rows[::-1])) != base  # the files now follow other rows


# --------------------------------------------------------------------------------------------------
# One identity, by content: what changes a reward critic's verdicts changes it; a copy elsewhere does not
# --------------------------------------------------------------------------------------------------
def _reward_fingerprint(folder) -> str:
    from hf_critic.core import identity
    from hf_critic.critics.reward import RewardModel

    identity._MEMORY.clear()  # a new process: only the store and the files themselves answer
    reward = RewardModel.from_pretrained(str(folder), dtype="float32", progress=False)
    return critic_fingerprint(CascadeStage("rm", RewardCritic(reward)), PAIRWISE)


@pytest.fixture(scope="module")
def reward_folder(tmp_path_factory):
    from hf_critic.testing.tiny_models import build_tiny_reward_model

    return build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "model")


def _copy(folder, to):
    import shutil

    return Path(shutil.copytree(folder, to))


def test_a_changed_chat_template_changes_a_reward_critics_identity(reward_folder, tmp_path, monkeypatch):
    """Calibrated under one chat template, the critic was still accepted under another: its inputs differ."""
    monkeypatch.setenv("HF_CRITIC_CACHE", str(tmp_path / "cache"))
    folder = _copy(reward_folder, tmp_path / "rm")
    before = _reward_fingerprint(folder)
    config = folder / "tokenizer_config.json"
    template = folder / "chat_template.jinja"
    if template.is_file():  # where transformers keeps the template: edit it there
        template.write_text(template.read_text().replace("<|im_start|>", "<|im_start|> "))
    else:
        data = json.loads(config.read_text())
        data["chat_template"] = data["chat_template"].replace("<|im_start|>", "<|im_start|> ")
        config.write_text(json.dumps(data))
    assert _reward_fingerprint(folder) != before


def test_a_changed_max_length_changes_a_reward_critics_identity(reward_folder, tmp_path, monkeypatch):
    """The context a reward critic cuts its inputs to (``max_length`` of its calibration file) decides its rewards."""
    from hf_critic.critics.reward import RewardCalibration

    monkeypatch.setenv("HF_CRITIC_CACHE", str(tmp_path / "cache"))
    folder = _copy(reward_folder, tmp_path / "rm")
    RewardCalibration(max_length=512).save(folder)
    before = _reward_fingerprint(folder)
    RewardCalibration(max_length=256).save(folder)
    assert _reward_fingerprint(folder) != before


def test_weights_changed_in_place_with_size_and_time_kept_change_the_identity(reward_folder, tmp_path, monkeypatch):
    """A file's digest was kept by path, size and modification time: bytes rewritten with both restored kept it."""
    monkeypatch.setenv("HF_CRITIC_CACHE", str(tmp_path / "cache"))
    folder = _copy(reward_folder, tmp_path / "rm")
    before = _reward_fingerprint(folder)
    weights_file = folder / "model.safetensors"
    stat = weights_file.stat()
    data = bytearray(weights_file.read_bytes())
    data[-1] ^= 0xFF  # the last byte of the last tensor: same size, other weights
    weights_file.write_bytes(bytes(data))
    os.utime(weights_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights_file.stat().st_size == stat.st_size and weights_file.stat().st_mtime_ns == stat.st_mtime_ns
    assert _reward_fingerprint(folder) != before


def test_a_byte_identical_copy_at_another_path_is_the_same_critic(reward_folder, tmp_path, monkeypatch):
    """Its path was part of the identity: a copied folder was refused as a different critic."""
    from hf_critic.backends.transformers import TransformersBackend
    from hf_critic.testing.tiny_models import build_tiny_model

    monkeypatch.setenv("HF_CRITIC_CACHE", str(tmp_path / "cache"))
    copy = _copy(reward_folder, tmp_path / "elsewhere" / "renamed")
    assert _reward_fingerprint(copy) == _reward_fingerprint(reward_folder)
    model = build_tiny_model(tmp_path / "lm")
    backends = [
        TransformersBackend.from_pretrained(str(p), dtype="float32") for p in (model, _copy(model, tmp_path / "b"))
    ]
    assert backends[0].name != backends[1].name  # messages still name the folder
    assert backends[0].identity == backends[1].identity


# --------------------------------------------------------------------------------------------------
# The one module's identity strings: the format earlier caches and calibration files were keyed by
# --------------------------------------------------------------------------------------------------
def test_identity_strings_keep_the_format_caches_and_calibrations_were_written_with(tmp_path):
    from hf_critic.core.identity import (
        identity_digest,
        jury_identity,
        model_identity,
        recorded_identity,
        value_digest,
    )

    chat, calibration = "{{ messages }}", {"tie_margin": 0.5}
    assert model_identity("abc", chat_template=chat) == f"abc|chat_template:{value_digest(chat)}"
    assert model_identity("reward|abc", context=256, chat_template=chat, calibration=calibration) == (
        f"reward|abc|context:256|chat_template:{value_digest(chat)}|calibration:{value_digest(calibration)}"
    )
    assert jury_identity("vote", [("a", "1"), ("b", "2")]) == "jury|vote|a=1,b=2"
    assert identity_digest(PAIRWISE, ["x", 1]) == hashlib.sha256(f"{PAIRWISE.name}|x|1".encode()).hexdigest()[:16]
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text('{"label": 0}\n')
    first = recorded_identity([verdicts], published=True, reading="field=label")
    assert first.startswith("recorded|published|") and first.endswith("|field=label")
    verdicts.write_text('{"label": 1}\n')  # edited in place: read again, never kept
    assert recorded_identity([verdicts], published=True, reading="field=label") != first
