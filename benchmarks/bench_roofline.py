"""Each engine's share of the machine's roofline, measured in one run (issue 28).

In the same run: the matmul peak at the default critic's own linear shapes in float32 and bfloat16, and the memory
bandwidth (``benchmarks/roofline.py``); then, on MT-Bench turn-1 rows (``../shared/data/selfeval/mt_bench``, or
``$HF_CRITIC_SHARED_DATA``; the shipped examples when absent) rendered with the ``mtbench`` pointwise template:

- **prefill-bound** work against the compute peak of its dtype: the probability read-out (``--verdict
  probability --explanation none``: prompt + verdict prefix, next-token distribution) on transformers in float32 and
  bfloat16 at batch ``--batch``, and on llama.cpp (the shipped Q4_1 GGUF, ``--slots`` slots); the work is a plain
  prefill of every row's real token count (:func:`roofline.prefill_flops`);
- **decoding** against the bandwidth bound at its batch size: text critiques of ``--max-new-tokens`` tokens (greedy)
  on transformers bfloat16 at batch ``--batch`` (weights: the model's parameters in bfloat16) and on llama.cpp with
  as many slots (weights: the GGUF file); new tokens counted from the critiques.

It prints the CPU model, the flags that matter, the threads, the load average (start and end) and the peak RSS: other
work on a shared machine lowers every figure, and the roofline measured beside it moves with it. ``--rows-flat A,B``
times the llama.cpp and transformers float32 read-outs on the first A and B rows instead (cost per row over a run).

    .venv/bin/python benchmarks/bench_roofline.py [--rows 24] [--batch 8] [--slots 4] [--engines ...]
    .venv/bin/python benchmarks/bench_roofline.py --rows-flat 20,160
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
from roofline import (
    Roofline,
    cpu_model,
    decode_bound,
    load_line,
    measure_roofline,
    peak_rss_gb,
    prefill_flops,
    weight_bytes,
)

from hf_critic.critic.decoding import DecodingConfig
from hf_critic.models import cpu_flags, default_gguf_file, default_num_threads, load_model
from hf_critic.prompts import get_template
from hf_critic.schema import Setting, Task

ROOT = Path(__file__).resolve().parents[1]
ENGINES = "transformers-float32,transformers-bfloat16,llamacpp,text-bfloat16,text-llamacpp"


def mt_bench_rows(n: int) -> tuple[list[dict], str]:
    """The first ``n`` MT-Bench turn-1 rows (GPT-4-graded answers) and where they came from; the shipped examples,
    repeated, where the shared data folder is absent."""
    data = Path(os.environ.get("HF_CRITIC_SHARED_DATA", ROOT.parent / "shared" / "data")) / "selfeval" / "mt_bench"
    if data.is_dir():
        from hf_critic.loaders import load_fastchat

        rows = [dict(r) for r in load_fastchat(data)]
        return rows[:n], f"MT-Bench turn 1 ({data})"
    lines = (ROOT / "examples" / "pointwise_reference_free.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    return [rows[i % len(rows)] for i in range(n)], "examples/pointwise_reference_free.jsonl (no shared data)"


def timed(job) -> tuple[float, object]:
    """``(seconds, result)`` of ``job()``."""
    started = time.perf_counter()
    result = job()
    return time.perf_counter() - started, result


def share_line(label: str, rows: int, seconds: float, work: float, peak: float, peak_name: str) -> str:
    """One prefill figure: rows/s, achieved GFLOP/s and its share of ``peak``."""
    achieved = work / seconds
    return (
        f"{label:<36} {rows / seconds:6.2f} rows/s ({seconds:6.1f} s)  {achieved / 1e9:7.1f} GFLOP/s = "
        f"{100 * achieved / peak:5.1f}% of the {peak_name} peak"
    )


def readouts(args, model, tokenizer, conversations, template, roof: Roofline) -> None:
    """The probability read-out on each engine, against the compute peak of the dtype it computes in."""
    from hf_critic.backends.transformers import TransformersBackend

    prefix, values = template.output.verdict_prefix, list(template.output.verdict_values())
    probe = TransformersBackend(model, tokenizer, name="bench", batch_size=args.batch, progress=False)
    lengths = [
        len(tokenizer(probe._prompt_text(c) + prefix, add_special_tokens=False)["input_ids"]) for c in conversations
    ]
    work = prefill_flops(model, lengths)
    print(
        f"\nprobability read-out, {len(conversations)} rows, {sum(lengths)} prompt tokens "
        f"(mean {sum(lengths) / len(lengths):.0f}, max {max(lengths)}), {work / 1e9:.1f} GFLOP as a plain prefill"
    )
    engines = args.engines.split(",")
    for dtype in ("float32", "bfloat16"):
        if f"transformers-{dtype}" not in engines:
            continue
        lm = model if dtype == "float32" else load_model(None, dtype=dtype)[0]
        backend = TransformersBackend(lm, tokenizer, name="bench", batch_size=args.batch, progress=False)
        seconds, _ = timed(
            lambda b=backend: b.verdict_probabilities(conversations, [prefix] * len(conversations), values)
        )
        print(
            share_line(
                f"transformers {dtype}, batch {args.batch}",
                len(conversations),
                seconds,
                work,
                roof.peaks[dtype],
                dtype,
            )
        )
    if "llamacpp" in engines:
        backend = llamacpp_backend(args)
        seconds, _ = timed(lambda: backend.verdict_probabilities(conversations, [prefix] * len(conversations), values))
        label = f"llama.cpp {backend.quantization}, {args.slots} slots"
        print(share_line(label, len(conversations), seconds, work, roof.peaks["float32"], "float32"))
        backend.close()


def llamacpp_backend(args, slots: int | None = None):
    """The shipped GGUF on llama.cpp with ``slots`` (default ``--slots``) slots and the run's threads."""
    from hf_critic.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(default_gguf_file(), parallel=slots or args.slots, threads=args.threads, progress=False)


def decoding(args, tokenizer, conversations, roof: Roofline) -> None:
    """Text critiques against the bandwidth bound at their batch size (new tokens counted from the critiques).

    The decoding time is the generation's minus that of the same call with one new token (the prompts' prefill),
    measured just before it; the whole call's new tokens/s is printed too.
    """
    from hf_critic.backends.transformers import TransformersBackend

    subset = conversations[: args.critiques]
    batch = min(args.batch, len(subset))
    engines = args.engines.split(",")
    print(f"\ntext critiques, {len(subset)} rows, greedy, max_new_tokens={args.max_new_tokens}, batch {batch}")
    jobs = []  # (label, a fresh backend, weight bytes read per step)
    if "text-bfloat16" in engines:
        lm = load_model(None, dtype="bfloat16")[0]
        make = lambda: TransformersBackend(lm, tokenizer, name="bench", batch_size=batch, progress=False)  # noqa: E731
        jobs.append((f"transformers bfloat16, batch {batch}", make, weight_bytes(lm)))
    if "text-llamacpp" in engines:
        # a fresh server per call: llama.cpp would otherwise find the prompts of the prefill call in its slots
        jobs.append((f"llama.cpp Q4_1, {batch} slots", lambda: llamacpp_backend(args, slots=batch), gguf_bytes()))
    for label, make, nbytes in jobs:
        prefill, _ = on_fresh(make, lambda b: b.generate(subset, DecodingConfig(max_new_tokens=1)))
        config = DecodingConfig(max_new_tokens=args.max_new_tokens)
        seconds, texts = on_fresh(make, lambda b, c=config: b.generate(subset, c))
        tokens = sum(len(tokenizer(t[0], add_special_tokens=False)["input_ids"]) for t in texts)
        decode_rate = (tokens - len(subset)) / max(seconds - prefill, 1e-9)
        bound = decode_bound(roof.bandwidth, nbytes, batch)
        print(
            f"{label:<36} {len(subset) / seconds:6.2f} critiques/s ({seconds:6.1f} s, prefill {prefill:5.1f} s)  "
            f"{tokens / seconds:6.1f} new tokens/s; decoding {decode_rate:6.1f} tokens/s = "
            f"{100 * decode_rate / bound:5.1f}% of the bound {bound:5.0f} ({nbytes / 1e6:.0f} MB/step)"
        )


def gguf_bytes() -> int:
    """Bytes of the shipped GGUF file: the weights llama.cpp reads per decoding step."""
    return default_gguf_file().stat().st_size


def on_fresh(make, job) -> tuple[float, object]:
    """``(seconds, result)`` of ``job(backend)`` on a backend from ``make()`` (its start not timed), which is closed
    after where it holds a server (llama.cpp)."""
    backend = make()
    try:
        return timed(lambda: job(backend))
    finally:
        if hasattr(backend, "server"):
            backend.close()


def flatness(args, model, tokenizer, template, sizes: list[int]) -> None:
    """Seconds per row of the read-out on the first A, B, ... rows, llama.cpp and transformers float32, each size on
    a fresh backend (llama.cpp would find the earlier rows' prompts in its caches)."""
    from hf_critic.backends.transformers import TransformersBackend

    rows, source = mt_bench_rows(max(sizes))
    conversations = [template.render(r) for r in rows]
    prefix, values = template.output.verdict_prefix, list(template.output.verdict_values())
    print(f"read-out cost per row over a run, {source}")
    engines = {
        "transformers float32": lambda: TransformersBackend(
            model, tokenizer, name="bench", batch_size=args.batch, progress=False
        ),
        "llama.cpp": lambda: llamacpp_backend(args),
    }
    for name, make in engines.items():
        per_row = []
        for n in sizes:
            seconds, _ = on_fresh(
                make, lambda b, n=n: b.verdict_probabilities(conversations[:n], [prefix] * n, values)
            )
            per_row.append(seconds / n)
            print(f"{name:<22} {n:4d} rows {seconds:7.1f} s  {n / seconds:6.2f} rows/s  {load_line()}", flush=True)
        ratio = per_row[-1] * sizes[-1] / (per_row[0] * sizes[0])
        print(f"{name:<22} {sizes[-1]} rows took {ratio:.1f}x the time of {sizes[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=24, help="read-out rows (default 24)")
    parser.add_argument("--critiques", type=int, default=8, help="text critiques (default 8)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8, help="transformers batch size; llama.cpp slots for text")
    parser.add_argument("--slots", type=int, default=4, help="llama.cpp slots for the read-out")
    parser.add_argument("--threads", type=int, help="threads (default: one per physical core, as the CLI)")
    parser.add_argument("--engines", default=ENGINES, help=f"comma-separated, of: {ENGINES}")
    parser.add_argument("--rows-flat", help="A,B: time the read-out on the first A and B rows instead")
    args = parser.parse_args()
    args.threads = args.threads or default_num_threads()
    torch.set_num_threads(args.threads)
    flags = cpu_flags()
    print(f"CPU: {cpu_model()}; flags: {' '.join(sorted(f for f, on in flags.items() if on)) or 'none of interest'}")
    print(f"threads {args.threads}, torch {torch.__version__}, {load_line()}")
    template = get_template("mtbench", Setting(Task.POINTWISE, referenced=False), "en")
    model, tokenizer = load_model(None, dtype="float32")
    if args.rows_flat:
        flatness(args, model, tokenizer, template, [int(n) for n in args.rows_flat.split(",")])
        print(f"{load_line()}; peak RSS {peak_rss_gb():.2f} GB")
        return
    roof = measure_roofline(model, ("float32", "bfloat16"))
    peaks = ", ".join(f"{name} {flops / 1e9:.0f} GFLOP/s" for name, flops in roof.peaks.items())
    print(
        f"roofline: matmul peak at the model's shapes (512 tokens): {peaks}; memory read {roof.bandwidth / 1e9:.1f} GB/s"
    )
    rows, source = mt_bench_rows(max(args.rows, args.critiques))
    print(f"rows: {source}")
    conversations = [template.render(r) for r in rows]
    readouts(args, model, tokenizer, conversations[: args.rows], template, roof)
    decoding(args, tokenizer, conversations, roof)
    after = measure_roofline(model, ("float32", "bfloat16"))
    peaks = ", ".join(f"{name} {flops / 1e9:.0f} GFLOP/s" for name, flops in after.peaks.items())
    print(f"\nroofline again at the end: {peaks}; memory read {after.bandwidth / 1e9:.1f} GB/s")
    print(f"{load_line()}; peak RSS {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
