"""Teacher-client throughput: N requests at concurrency C against a server that answers after a fixed delay.

Eval-Instruct (CritiqueLLM v2 §3.2) makes tens of thousands of teacher calls; what bounds a run is how many can
wait on the server at once. The server here (``python -m hf_critic.testing.servers``, a separate process on 127.0.0.1)
answers every request after exactly ``--delay`` seconds, so the ideal rate is ``C / delay`` (16 / 0.2 s = 80
requests/s). The baseline, timed in the same run, is the sequential loop a user would write with the plain
``openai`` client (one request at a time, ideal ``1 / delay`` = 5 requests/s). Targets: the concurrent client
reaches >= 80% of the ideal, and a second run of the same configuration (same cache file) sends zero requests.

    .venv/bin/python benchmarks/bench_teacher.py [--requests 200] [--concurrency 16] [--delay 0.2]

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import openai
import tqdm.auto  # noqa: F401  (imported here so that the timed runs do not pay for it)

from hf_critic.backends.cache import GenerationCache
from hf_critic.backends.chat import ChatRequest
from hf_critic.backends.openai import OpenAIClient


def server_stats(url: str) -> dict:
    """The stub server's ``/stats``: ``{"requests": n, "max_in_flight": m}``."""
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=5) as response:
        return json.loads(response.read())


def start_server(delay: float) -> tuple[subprocess.Popen, str]:
    """The stub server in its own process, so that its work does not share the client's interpreter."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hf_critic.testing.servers", "--delay", str(delay)], stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"stub server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def requests_for(n: int) -> list[ChatRequest]:
    """``n`` distinct one-turn requests (the same ``n`` in every run, so a second run can hit the cache)."""
    return [ChatRequest(f"r{i}", [{"role": "user", "content": f"Grade answer #{i}: 4."}]) for i in range(n)]


def sequential(url: str, n: int) -> float:
    """The baseline: one request at a time with the plain openai client; returns seconds."""
    client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0)
    started = time.perf_counter()
    for request in requests_for(n):
        client.chat.completions.create(model="stub", messages=request.messages, max_tokens=16)
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def concurrent(url: str, n: int, concurrency: int, cache: Path) -> tuple[float, float, OpenAIClient]:
    """hf-critic's teacher client with a fresh or warm cache; returns (seconds, client CPU seconds, client)."""
    client = OpenAIClient(
        url, "stub", params={"max_tokens": 16}, concurrency=concurrency, cache=GenerationCache(cache)
    )
    started, cpu = time.perf_counter(), time.process_time()
    results = client.complete_many(requests_for(n), stage="bench", progress=False)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if not all(r.ok for r in results):
        raise RuntimeError(f"{sum(not r.ok for r in results)} request(s) failed")
    return elapsed, cpu, client


def main() -> int:
    """Run the baseline, the concurrent client, and the cached rerun; print the figures; 0 when targets are met."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2, help="server answer delay in seconds")
    parser.add_argument(
        "--sequential-requests", type=int, help="requests for the sequential baseline (default: --requests)"
    )
    args = parser.parse_args()
    n_seq = args.sequential_requests or args.requests
    ideal = args.concurrency / args.delay
    proc, url = start_server(args.delay)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "teacher.sqlite"
            t_seq = sequential(url, n_seq)
            t_con, cpu_con, _ = concurrent(url, args.requests, args.concurrency, cache)
            before = server_stats(url)["requests"]
            t_again, _, client = concurrent(url, args.requests, args.concurrency, cache)
            again = server_stats(url)["requests"] - before
            usage = client.ledger.stage("bench")
        rate_seq, rate_con = n_seq / t_seq, args.requests / t_con
        share = rate_con / ideal
        print(f"server: answers after {args.delay * 1000:.0f} ms, separate process; ideal {ideal:.1f} req/s")
        print(
            f"sequential loop (openai.OpenAI, 1 at a time): {n_seq} requests in {t_seq:6.2f} s = {rate_seq:6.2f} req/s"
        )
        print(
            f"OpenAIClient, concurrency {args.concurrency:<3}:              {args.requests} requests in {t_con:6.2f} s "
            f"= {rate_con:6.2f} req/s"
        )
        print(f"ratio concurrent / sequential: {rate_con / rate_seq:.1f}x")
        load = os.getloadavg()[0]
        print(
            f"client CPU: {1000 * cpu_con / args.requests:.1f} ms per request; machine load average {load:.1f} on "
            f"{os.cpu_count()} CPU(s)"
        )
        print(f"share of the ideal {ideal:.0f} req/s: {100 * share:.1f}% (target >= 80%)")
        print(
            f"second run, same config and cache: {again} request(s) sent to the server, {usage.cache_hits} cache hits, "
            f"{t_again:.3f} s (target: 0 requests)"
        )
        ok = share >= 0.8 and again == 0
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
