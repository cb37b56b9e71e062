"""Every local path reads what it must, once: counted, not timed.

The read-out makes one forward pass a prompt (its verdict trie in the same pass), prefills a prefix shared by all
rows or by a family of rows (the two orders of a pair, the responses to one question) once, and pads no row beyond
its batch's longest; the reward critic reads each question once per pair. Outputs equal the plain passes'.
"""

from __future__ import annotations

import functools

import pytest

from hf_critic.backends import prefill
from hf_critic.backends.prefill import plan_batches, prefix_groups, shared_prefix
from hf_critic.backends.transformers import TransformersBackend
from hf_critic.critics.reward import RewardModel
from hf_critic.testing.tiny_models import build_tiny_reward_model

JUDGE = "You are a careful judge. Compare the two answers below and say which is better, A or B. " * 2
QUESTIONS = ["What is the capital of France, and why is it the capital? " * 3, "How do I boil an egg well? " * 5]
ANSWERS = [("Paris.", "It is Lyon, because of its history. " * 4), ("Boil it ten minutes.", "Eggs " * 30)]


def _pairs_both_orders() -> list[list[dict]]:
    """Two pairs, each in both orders: rows 0/2 and 1/3 share the judge text and the question."""
    rows = []
    for swap in (False, True):
        for q, (a, b) in zip(QUESTIONS, ANSWERS, strict=True):
            first, second = (b, a) if swap else (a, b)
            rows.append([{"role": "user", "content": f"{JUDGE}\n[Question]\n{q}\n[A]\n{first}\n[B]\n{second}"}])
    return rows


# ------------------------------------------------------------------------------------------------ planning
def test_families_share_more_than_the_call_prefix():
    base = [7] * 40
    encoded = [base + [1] * 50 + [2, 3], base + [5, 6], base + [1] * 50 + [4], base + [1] * 50 + [2, 9, 9]]
    assert shared_prefix(encoded) == base
    groups = prefix_groups(encoded, len(base))
    assert sorted(map(sorted, (rows for _, rows in groups))) == [[0, 2, 3], [1]]
    assert {tuple(sorted(rows)): shared for shared, rows in groups}[(0, 2, 3)] == 90
    batches = plan_batches(encoded, 8, None)
    assert sorted(i for b in batches for i in b.rows) == [0, 1, 2, 3]  # every row once
    assert {tuple(sorted(b.rows)): b.prefix for b in batches} == {(1,): 40, (0, 2, 3): 90}
    # no sharing: one plain batch, no prefix
    assert [(sorted(b.rows), b.prefix) for b in plan_batches(encoded, 8, None, share=False)] == [([0, 1, 2, 3], 0)]


def test_budget_counts_the_tokens_beyond_the_prefix():
    encoded = [[1] * 500 + [2] * 300, [1] * 500 + [3] * 300, [1] * 500 + [4] * 300]
    # 300 own tokens a row: three fit in 1,024 padded tokens, which 800-token rows would not
    assert [b.rows for b in plan_batches(encoded, 8, 1024)] == [[0, 1, 2]]
    assert [len(b.rows) for b in plan_batches(encoded, 8, 1024, share=False)] == [1, 1, 1]


# ------------------------------------------------------------------------------------------------ the read-out
@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    return TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", batch_size=8, progress=False)


def _counting(monkeypatch, model) -> list[tuple[int, int]]:
    calls, forward = [], model.forward

    @functools.wraps(forward)  # keeps the signature the engine inspects
    def counting(*args, **kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", counting)
    return calls


def test_readout_is_one_pass_a_prompt_and_reads_each_shared_prefix_once(backend, monkeypatch):
    conversations = _pairs_both_orders()
    verdicts = [str(v) for v in range(1, 11)]  # "10" is two tokens in the tiny tokenizer: a trie step
    calls = _counting(monkeypatch, backend.model)
    shared = backend.verdict_probabilities(conversations, ["Rating: [["] * 4, verdicts)
    counts = backend.last_readout
    assert len(calls) == counts.passes + counts.prefills  # no second pass for the verdict trie
    assert counts.passes <= counts.rows and counts.passes_per_row <= 1.0
    assert counts.prefills == 3  # the judge text once, then each pair's question once
    assert counts.padding_share < 0.25
    encoded = backend._encode([backend._prompt_text(c) + "Rating: [[" for c in conversations])
    assert counts.read < sum(map(len, encoded))  # fewer tokens than the prompts hold

    monkeypatch.setattr(prefill, "MIN_SHARED_PREFIX", 10**9)  # plain passes: same probabilities
    plain = backend.verdict_probabilities(conversations, ["Rating: [["] * 4, verdicts)
    assert backend.last_readout.prefills == 0 and backend.last_readout.read > counts.read + 100
    for a, b in zip(shared, plain, strict=True):
        assert a.unseen == b.unseen
        assert max(abs(a.probabilities[v] - b.probabilities[v]) for v in verdicts) < 1e-5


# ------------------------------------------------------------------------------------------------ the reward critic
def test_reward_critic_reads_each_question_once_per_pair(tmp_path, monkeypatch):
    model = RewardModel.from_pretrained(str(build_tiny_reward_model(tmp_path / "rm")), dtype="float32", progress=False)
    encoded = [model.fit(q, r, "error")[0] for q, pair in zip(QUESTIONS, ANSWERS, strict=True) for r in pair]
    calls = _counting(monkeypatch, model.model)
    shared = model.rewards_of_ids(encoded)
    counts = model.last_readout
    assert len(calls) == counts.passes + counts.prefills and counts.prefills >= 2
    assert counts.read < sum(map(len, encoded))
    monkeypatch.setattr(prefill, "MIN_SHARED_PREFIX", 10**9)
    plain = model.rewards_of_ids(encoded)
    assert model.last_readout.read == sum(map(len, encoded)) and model.last_readout.padding_share < 0.5
    assert shared == pytest.approx(plain, abs=1e-4)


# ------------------------------------------------------------------------------------------------ threads
def test_threads_never_exceed_the_cpus_this_process_may_use(tmp_path):
    import os
    import subprocess
    import sys

    from hf_critic.backends.threads import usable_cpus

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))});"
        "from hf_critic.backends.threads import default_num_threads, usable_cpus;"
        "print(usable_cpus(), default_num_threads(), default_num_threads(cores=64), os.environ['OMP_WAIT_POLICY'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # the per-core default, not a user's count
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    assert out == ["1", "1", "1", "PASSIVE"]  # one CPU allowed: one thread, whatever the machine's core count
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # a cgroup quota of 1.5 CPUs: 2 threads at most
    assert usable_cpus(tmp_path) == min(2, len(os.sched_getaffinity(0)))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(tmp_path) == len(os.sched_getaffinity(0))
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("50000")  # cgroup v1: half a CPU
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000")
    assert usable_cpus(tmp_path) == 1


# ------------------------------------------------------------------------------------------------ progress
def test_one_bar_for_the_whole_chunked_run_with_tokens_per_second(tiny_model_dir, tmp_path, capsys):
    from hf_critic.backends.cache import GenerationCache
    from hf_critic.critic.readout import cached_readouts

    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), dtype="float32", batch_size=1, progress=True)
    conversations = _pairs_both_orders() * 2  # 8 rows in chunks of 4 (batch_size x 4)
    continuations = [f"Rating {i}: [[" for i in range(8)]
    cached_readouts(backend, GenerationCache(tmp_path / "c.sqlite"), conversations, continuations, ["A", "B"])
    err = capsys.readouterr().err
    assert "8/8" in err and "tok_s=" in err  # one bar over all 8 rows, with the tokens read per second
    assert "4/4" not in err  # no bar per chunk
    assert backend.progress  # the engine's own bar is back on after the run
