"""Reward-head training throughput: responses encoded per hour, length-sorted batches vs the padded baseline, one run.

Run: ``python benchmarks/bench_head.py`` (the embedded critic SmolLM2-135M-Instruct, the base of
``smollm2-135m-critic``). Training the head (``recipes/smollm2-135m/train_head.py``) is dominated by one forward pass
per response through the frozen base (:func:`hf_critic.reward_head.response_features`); the Bradley-Terry fit on the
cached features takes seconds. Responses are AlpacaEval outputs when the real-data folder (``$HF_CRITIC_SHARED_DATA``
or ``../shared/data``) is present, else the shipped ``examples/``.

Modes, on the same responses, taking turns round by round (a warm-up round first, not timed) so a change of load on
a shared machine hits both alike:

* ``padded`` (the baseline): batches in the data's order, each padded to its longest response;
* ``sorted``: batches in order of length (what the recipe does), so little compute goes to padding.

Prints the CPU flags, dtype and threads, then examples/h over wall-clock and CPU time and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

import torch

from hf_critic.models import cpu_flags, default_num_threads, load_model
from hf_critic.reward_head import HeadSpec, response_features

REPO = Path(__file__).resolve().parents[1]


def load_items(n: int, seed: int) -> tuple[list[tuple[str, str]], str]:
    """``n`` (question, response) pairs: AlpacaEval outputs when the real data is present, else the demo examples."""
    data = Path(os.environ.get("HF_CRITIC_SHARED_DATA", REPO.parent / "shared" / "data"))
    files = sorted((data / "alpacaeval" / "weighted_gpt4_turbo").glob("*.json"))
    if files:
        rows = [r for f in files[:3] for r in json.loads(f.read_text())]
        items = [(r["instruction"], r["output_2"]) for r in rows if r.get("output_2")]
        return random.Random(seed).sample(items, n), f"AlpacaEval outputs ({data})"
    rows = [json.loads(line) for line in (REPO / "examples" / "pointwise_reference_free.jsonl").open()]
    items = [(r["question"], r["response"]) for r in rows]
    return (items * (n // len(items) + 1))[:n], "the demo examples (no real data found)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=32, help="responses per mode and round")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds (after one warm-up round)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--dtype", default="auto", help="auto (bfloat16 where the CPU has it), float32, bfloat16")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: physical cores)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    flags = cpu_flags()
    torch.set_num_threads(args.threads or default_num_threads())
    dtype = args.dtype
    if dtype == "auto":
        dtype = "bfloat16" if flags["amx_bf16"] or flags["avx512_bf16"] else "float32"
    model, tokenizer = load_model(None, dtype=dtype)
    items, source = load_items(args.examples * (args.rounds + 1), args.seed)
    spec = HeadSpec()
    print(f"CPU flags: {' '.join(f for f, on in flags.items() if on) or 'none'}; dtype {dtype}; "
          f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"responses: {source}; {args.examples} per mode and round, batch {args.batch_size}, {args.rounds} rounds")
    totals = {"padded": [0.0, 0.0], "sorted": [0.0, 0.0]}
    for round_index in range(args.rounds + 1):
        part = items[round_index * args.examples : (round_index + 1) * args.examples]
        for mode in ("padded", "sorted") if round_index % 2 else ("sorted", "padded"):
            wall, cpu = time.perf_counter(), time.process_time()
            response_features(model, tokenizer, part, spec, batch_size=args.batch_size, sort=mode == "sorted")
            if round_index:  # round 0 warms up
                totals[mode][0] += time.perf_counter() - wall
                totals[mode][1] += time.process_time() - cpu
    n = args.examples * args.rounds
    base_wall, base_cpu = n / totals["padded"][0], n / totals["padded"][1]
    print(
        f"\n{'mode':<8}{'wall s':>8}{'examples/h':>12}{'vs padded':>11}{'CPU s':>8}{'examples/CPU-h':>16}{'vs padded':>11}"
    )
    for mode, (wall, cpu) in totals.items():
        print(f"{mode:<8}{wall:>8.1f}{n / wall * 3600:>12.0f}{n / wall / base_wall:>10.2f}x{cpu:>8.1f}"
              f"{n / cpu * 3600:>16.0f}{n / cpu / base_cpu:>10.2f}x")  # fmt: skip
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
