"""Real-length inputs at the machine's limit: Auto-J Eval-P pairs through every local path, in one run.

On the first A and B pairs of Auto-J Eval-P (``--pairs A,B``, default 24,240; ``../shared/data`` or
``$HF_CRITIC_SHARED_DATA``), both orders unless ``--one-order``:

- the default critic's **probability read-out** right after the prompt (``--template mtbench --verdict probability
  --explanation none``) on transformers, float32 and the dtype ``--dtype auto`` picks here, each as hf-critic runs it
  (prefixes shared by all rows and by each pair prefilled once, the verdict read in the prompt's pass) and as plain
  passes (every prompt read whole: the baseline, same run, same rows);
- the same read-out on **llama.cpp** (the shipped GGUF), quiet and beside a second process that keeps one core busy
  (the slowdown, goal <= 2.5x);
- the **reward critic** ``smollm2-135m-critic`` on both responses of every pair, as hf-critic runs it (the question read
  once per pair) and plain.

Each row gives the passes and tokens the engine read (counted, :class:`hf_critic.backends.prefill.ReadoutCounts`), rows/s,
tokens/s, and the share of this machine's peak: tokens read x 2 x non-embedding parameters / seconds / the matmul peak
of the dtype at the model's shapes, measured in this run (``benchmarks/roofline.py``). Last, the B-pair run's time over
the A-pair run's (goal <= 12x for B = 10 A). The CPU, its flags, the threads and the load average (start and end) are
printed: a busy machine lowers every figure.

    .venv/bin/python benchmarks/bench_real_inputs.py [--pairs 24,240] [--one-order] [--paths readout,reward,llamacpp]
        [--baseline-pairs 24]   # the plain baseline on the 24-pair run only (it reads every prompt whole: slow)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from roofline import linear_shapes, load_line, machine_header, matmul_peak

from hf_critic.backends import prefill
from hf_critic.backends.models import auto_dtype, default_gguf_file, load_model
from hf_critic.backends.threads import default_num_threads
from hf_critic.core.schema import Setting, Task
from hf_critic.prompts import get_template

ROOT = Path(__file__).resolve().parents[1]
PATHS = "readout,reward,llamacpp"


def eval_p_pairs(n: int) -> list[dict]:
    """The first ``n`` Auto-J Eval-P pairs (records: question, response_1, response_2)."""
    from hf_critic.loaders.autoj import load_autoj_eval_p

    data = Path(os.environ.get("HF_CRITIC_SHARED_DATA", ROOT.parent / "shared" / "data"))
    path = data / "autoj" / "test" / "testdata_pairwise.jsonl"
    if not path.is_file():
        sys.exit(f"bench_real_inputs.py: no Auto-J Eval-P at {path} (set HF_CRITIC_SHARED_DATA)")
    return [dict(r) for r in load_autoj_eval_p(path).select(range(n))]


def non_embedding_flops_per_token(model) -> float:
    """2 x the parameters of the model's linear layers (head excluded): the FLOPs of one token through them."""
    return sum(2.0 * i * o * n for (i, o), n in linear_shapes(model).items())


def line(label: str, rows: int, seconds: float, counts, per_token: float, peak: float, peak_name: str) -> str:
    """One figure: passes, tokens read, rows/s, tokens/s and the share of ``peak``."""
    read = counts.read if counts is not None else None
    share = f"{100 * read * per_token / seconds / peak:5.1f}% of the {peak_name} peak" if read else "n/a"
    passes = (
        f"{counts.passes + counts.prefills:5d} passes, padding {100 * counts.padding_share:4.1f}%" if counts else ""
    )
    tokens = f"{read:8d} tokens, {read / seconds:6.0f} tok/s" if read else f"{'':>29}"
    return f"{label:<44} {rows / seconds:6.2f} rows/s ({seconds:7.1f} s)  {tokens}  {passes}  {share}"


def timed(job):
    started = time.perf_counter()
    out = job()
    return time.perf_counter() - started, out


def modes(args, n: int) -> tuple[str, ...]:
    """hf-critic's passes, and the plain baseline where ``--baseline-pairs`` allows it for ``n`` pairs."""
    return ("hf-critic", "plain") if args.baseline_pairs is None or n <= args.baseline_pairs else ("hf-critic",)


def readout_rows(args, pairs, template, roof, per_token, model, tokenizer) -> dict[str, float]:
    """The transformers read-out, ours and plain, in float32 and the auto dtype; returns {label: seconds}."""
    from hf_critic.backends.transformers import TransformersBackend

    conversations = [template.render(p) for p in pairs]
    if not args.one_order:
        conversations += [
            template.render({**p, "response_1": p["response_2"], "response_2": p["response_1"]}) for p in pairs
        ]
    prefix, values = template.output.verdict_prefix, list(template.output.verdict_values())
    auto = str(auto_dtype(args.batch)).removeprefix("torch.")
    out = {}
    for dtype in dict.fromkeys(("float32", auto)):
        lm = model if dtype == "float32" else load_model(None, dtype=dtype)[0]
        backend = TransformersBackend(lm, tokenizer, name="bench", batch_size=args.batch, progress=False)
        for mode in modes(args, len(pairs)):
            default = prefill.MIN_SHARED_PREFIX
            prefill.MIN_SHARED_PREFIX = default if mode == "hf-critic" else 10**9
            try:
                seconds, _ = timed(
                    lambda b=backend: b.verdict_probabilities(conversations, [prefix] * len(conversations), values)
                )
            finally:
                prefill.MIN_SHARED_PREFIX = default
            label = f"read-out {dtype}{' (auto)' if dtype == auto else ''}, {mode}"
            print(
                line(label, len(conversations), seconds, backend.last_readout, per_token, roof[dtype], dtype),
                flush=True,
            )
            out[label] = seconds
    return out


def reward_rows(args, pairs, roof, per_token) -> dict[str, float]:
    """The reward critic on both responses of every pair, ours and plain; returns {label: seconds}."""
    from hf_critic import Critic

    critic = Critic.from_pretrained("smollm2-135m-critic", batch_size=args.batch, progress=False)
    scorer = critic.scorer
    encoded = [scorer.fit(p["question"], p[r], "middle")[0] for p in pairs for r in ("response_1", "response_2")]
    dtype = str(next(scorer.model.parameters()).dtype).removeprefix("torch.")
    out = {}
    for mode in modes(args, len(pairs)):
        default = prefill.MIN_SHARED_PREFIX
        prefill.MIN_SHARED_PREFIX = default if mode == "hf-critic" else 10**9
        try:
            seconds, _ = timed(lambda: scorer.rewards_of_ids(encoded))
        finally:
            prefill.MIN_SHARED_PREFIX = default
        label = f"reward critic {dtype}, {mode}"
        print(line(label, len(encoded), seconds, scorer.last_readout, per_token, roof[dtype], dtype), flush=True)
        out[label] = seconds
    return out


def llamacpp_rows(args, pairs, template) -> dict[str, float]:
    """The llama.cpp read-out quiet and beside a process that keeps one core busy; returns {label: seconds}."""
    from hf_critic.backends.llamacpp import LlamaCppBackend

    conversations = [template.render(p) for p in pairs]
    prefix, values = template.output.verdict_prefix, list(template.output.verdict_values())
    out = {}
    for busy in (False, True):
        backend = LlamaCppBackend(default_gguf_file(), parallel=args.slots, threads=args.threads, progress=False)
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            seconds, _ = timed(
                lambda b=backend: b.verdict_probabilities(conversations, [prefix] * len(conversations), values)
            )
        finally:
            if hog is not None:
                hog.kill()
            backend.close()
        label = f"llama.cpp read-out, {'one core busy' if busy else 'quiet'}"
        print(line(label, len(conversations), seconds, None, 0, 1, ""), flush=True)
        out[label] = seconds
    quiet, loaded = out["llama.cpp read-out, quiet"], out["llama.cpp read-out, one core busy"]
    print(f"llama.cpp slowdown with one core busy: {loaded / quiet:.2f}x (goal <= 2.5x)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="24,240", help="A,B: pairs of the two runs (default 24,240)")
    parser.add_argument("--one-order", action="store_true", help="judge the first order only (default: both)")
    parser.add_argument("--paths", default=PATHS, help=f"comma-separated, of: {PATHS}")
    parser.add_argument("--baseline-pairs", type=int, help="run the plain baseline only up to this many pairs")
    parser.add_argument("--batch", type=int, default=8, help="rows per pass at most (default 8, as the CLI)")
    parser.add_argument("--slots", type=int, default=4, help="llama.cpp slots (default 4)")
    parser.add_argument("--threads", type=int, help="threads (default: as the CLI, one per usable core)")
    args = parser.parse_args()
    args.threads = args.threads or default_num_threads()
    print(machine_header(args.threads))
    model, tokenizer = load_model(None, dtype="float32")
    per_token = non_embedding_flops_per_token(model)
    shapes = linear_shapes(model)
    roof = {d: matmul_peak(shapes, getattr(torch, d), 1024) for d in ("float32", "bfloat16")}
    print(
        "peak: matmul at the model's shapes, 1,024 tokens: "
        + ", ".join(f"{d} {f / 1e9:.0f} GFLOP/s" for d, f in roof.items())
        + f"; {per_token / 2e6:.1f} M non-embedding parameters"
    )
    template = get_template("mtbench", Setting(Task.PAIRWISE, referenced=False), "en")
    paths = set(args.paths.split(","))
    sizes = [int(n) for n in args.pairs.split(",")]
    all_pairs = eval_p_pairs(max(sizes))
    totals = {}
    for n in sizes:
        pairs = all_pairs[:n]
        print(f"\n{n} Eval-P pairs, {'first order' if args.one_order else 'both orders'} ({load_line()})")
        results = {}
        if "readout" in paths:
            results.update(readout_rows(args, pairs, template, roof, per_token, model, tokenizer))
        if "reward" in paths:
            results.update(reward_rows(args, pairs, roof, per_token))
        if "llamacpp" in paths and n == sizes[0]:
            results.update(llamacpp_rows(args, pairs, template))
        totals[n] = results
    if len(sizes) == 2:
        a, b = sizes
        print(f"\n{b} pairs against {a} (goal <= {12 * b / a / 10:.0f}x for {b / a:.0f}x the pairs):")
        for label, seconds in totals[b].items():
            if label in totals[a]:
                print(f"  {label:<44} {seconds / totals[a][label]:5.1f}x")
    print(f"\nend: {load_line()}")


if __name__ == "__main__":
    main()
