"""Every engine on every job of a critic, in one run: what ``--engine auto`` chooses from.

On the first A and B pairs of Auto-J Eval-P (``--pairs A,B``, default 24,240; ``../shared/data`` or
``$HF_CRITIC_SHARED_DATA``), one order (``compare`` without ``swap``), each job through each engine
(``--engines``), as a user runs it from the Python API with the engine's defaults here:

- ``text``: greedy text critiques of the embedded critic (``--verdict text``, ``--max-new-tokens``, default 64);
- ``readout``: the embedded critic's probability read-out right after the prompt (``--verdict probability
  --explanation none``);
- ``reward``: the shipped reward critic ``smollm2-135m-critic`` (both responses of every pair).

Engines: ``transformers`` (``dtype="auto"``), ``llamacpp`` (the shipped GGUF, re-encoded as auto does; text and
read-out only), ``vllm`` (the offline engine in its worker, float32) and ``served`` (a vLLM server from the same
virtualenv, started for the job; the critic talks to it over HTTP). Each figure is the whole job **with the engine's
start** (model load, vLLM's engine start, a server's start), and apart: the start and the judging, in seconds; pairs/s;
and the ratio against transformers on the same job in the same run. Every vLLM process is stopped before the next one
starts (one at a time). The CPU, its flags and the load average at the start and after every job are printed: a busy
machine lowers every figure. ``--json FILE`` writes the figures as
``hf_critic.backends.measurements.ENGINE_MEASUREMENTS`` keeps them (``{job: {pairs: {engine: pairs/s}}}``).

    .venv/bin/python benchmarks/bench_engines.py [--pairs 24,240] [--jobs text,readout,reward]
        [--engines transformers,llamacpp,vllm,served] [--max-new-tokens 64] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench_real_inputs import eval_p_pairs
from roofline import load_line, machine_header

from hf_critic.critic.decoding import DecodingConfig

ROOT = Path(__file__).resolve().parents[1]
JOBS, ENGINES = "text,readout,reward", "transformers,llamacpp,vllm,served"
CRITIC = "smollm2-135m-critic"


def critic_options(job: str, max_new_tokens: int) -> dict:
    """The Critic options of a job (no cache: every run generates)."""
    if job == "text":
        return {"verdict": "text", "decoding": DecodingConfig(max_new_tokens=max_new_tokens), "cache_path": None}
    readout = {"verdict": "probability", "explanation": "none", "cache_path": None}
    return readout if job == "readout" else {"cache_path": None}


def local_critic(job: str, engine: str, args):
    """The critic of ``job`` on an in-process engine (the embedded critic, or the shipped reward critic)."""
    from hf_critic.critic import Critic

    model = CRITIC if job == "reward" else None
    return Critic.from_pretrained(
        model, engine=engine, batch_size=args.batch, progress=False, **critic_options(job, args.max_new_tokens)
    )


def served_critic(job: str, args, stack):
    """The critic of ``job`` on a vLLM server started for it (``stack`` collects what to stop)."""
    from hf_critic.backends.models import default_model_dir
    from hf_critic.backends.serving import VllmServerProcess, export_critic
    from hf_critic.critic import Critic, RewardCritic

    log = Path(tempfile.gettempdir()) / f"bench-engines-{job}.log"
    if job == "reward":
        from hf_critic.backends.pooling import PoolingRewardClient
        from hf_critic.critic.rewards import ServedRewardModel

        exported = export_critic(CRITIC, Path(tempfile.mkdtemp()) / CRITIC)
        server = VllmServerProcess(exported.folder, CRITIC, pooling=True, log=log)
        stack.append(server.start().wait())
        client = PoolingRewardClient(server.url, CRITIC, batch_size=args.batch)
        client.check()
        return RewardCritic(ServedRewardModel.for_client(client), cache_path=None)
    from hf_critic.backends.openai import OpenAIBackend

    server = VllmServerProcess(default_model_dir(), log=log)
    stack.append(server.start().wait())
    backend = OpenAIBackend.connect(server.url, server.folder, concurrency=args.batch, progress=False)
    return Critic(backend, **critic_options(job, args.max_new_tokens))


def run_one(job: str, engine: str, pairs: list[dict], args) -> tuple[float, float] | None:
    """``(start s, judge s)`` of one job on one engine; None where the engine does not run the job."""
    from hf_critic.backends import vllm

    if engine == "llamacpp" and job == "reward":
        return None
    stack: list = []
    started = time.perf_counter()
    try:
        critic = served_critic(job, args, stack) if engine == "served" else local_critic(job, engine, args)
        ready = time.perf_counter()
        critic.compare(pairs)
        done = time.perf_counter()
    finally:
        for server in stack:
            server.stop()
        vllm.stop_workers()
        close = getattr(getattr(locals().get("critic"), "backend", None), "close", None)
        if close is not None:
            close()
    return ready - started, done - ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="24,240", help="comma-separated run sizes (default 24,240)")
    parser.add_argument("--jobs", default=JOBS, help=f"comma-separated, of: {JOBS}")
    parser.add_argument("--engines", default=ENGINES, help=f"comma-separated, of: {ENGINES} (transformers first)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="text critiques' budget (default 64)")
    parser.add_argument("--batch", type=int, default=8, help="--batch-size of every critic (default 8, as the CLI)")
    parser.add_argument("--json", help="write {job: {pairs: {engine: pairs/s}}} here")
    args = parser.parse_args()
    print(machine_header())
    engines, jobs = args.engines.split(","), args.jobs.split(",")
    sizes = [int(n) for n in args.pairs.split(",")]
    all_pairs = eval_p_pairs(max(sizes))
    figures: dict[str, dict[int, dict[str, float]]] = {}
    print("| pairs | job | engine | start s | judge s | total s | pairs/s | vs transformers | load average after |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for job in jobs:
            for engine in engines:
                timing = run_one(job, engine, all_pairs[:n], args)
                if timing is None:
                    continue
                start, judge = timing
                rate = n / (start + judge)
                figures.setdefault(job, {}).setdefault(n, {})[engine] = round(rate, 4)
                base = figures[job][n].get("transformers")
                ratio = f"{rate / base:.2f}x" if base else "n/a"
                loads = " / ".join(f"{x:.2f}" for x in os.getloadavg())
                row = f"| {n} | {job} | {engine} | {start:.1f} | {judge:.1f} | {start + judge:.1f} | {rate:.3f}"
                print(f"{row} | {ratio} | {loads} |", flush=True)
    print(f"\nend: {load_line()}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
