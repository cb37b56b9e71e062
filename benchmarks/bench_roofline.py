"""Each engine's share of the machine's roofline, measured in one run.

In the same run: the matmul peak at the default critic's own linear shapes in float32 and bfloat16, and the memory
bandwidth (``benchmarks/roofline.py``); then, on MT-Bench turn-1 rows (``../shared/data/selfeval/mt_bench``, or
``$HF_CRITIC_SHARED_DATA``; the shipped examples when absent) rendered with the ``mtbench`` pointwise template:

- **prefill-bound** work against the compute peak of its dtype: the probability read-out (``--verdict
  probability --explanation none``: prompt + verdict prefix, next-token distribution) on transformers in float32 and
  bfloat16 at batch ``--batch``, and on llama.cpp (the shipped Q4_1 GGUF, ``--slots`` slots); the work is a plain
  prefill of every row's real token count (:func:`roofline.prefill_flops`);
- **reward-model scoring** (the shipped ``smollm2-135m-critic``) against the compute peak of its dtype, as a
  plain prefill of each (question, response) as the reward model reads it;
- **decoding** against the bandwidth bound at its batch size: text critiques of ``--max-new-tokens`` tokens (greedy)
  on transformers bfloat16 at batch ``--batch`` (weights: the model's parameters in bfloat16) and on llama.cpp with
  as many slots (weights: the GGUF file it runs); new tokens counted from the critiques. For transformers also the
  step's whole roofline: weights and the batch's KV cache read at the bandwidth, against the step's FLOPs at the
  matmul throughput of ``--batch``-row products (:func:`roofline.decode_roofline`).

llama.cpp runs the shipped Q4_1 file as ``--gguf-recode auto`` does (re-encoded as Q8_0); the read-out also runs the
file as it is. The build's CPU feature line is printed (the prebuilt wheel: AVX2; ``make llamacpp-native``).

It prints the CPU model, the flags that matter, the threads, the load average (start and end) and the peak RSS: other
work on a shared machine lowers every figure, and the roofline measured beside it moves with it. Last, the long run
(``--long-run A,B``, default 8,32): the transformers read-out in the default critic's dtype on A rows and on them
repeated to B, rows/s and resident memory of each (1,000 rows flat within 20% of 100). ``--rows-flat A,B``
times the llama.cpp and transformers float32 read-outs on the first A and B rows instead (cost per row over a run).

    .venv/bin/python benchmarks/bench_roofline.py [--rows 24] [--batch 8] [--slots 4] [--engines ...]
    .venv/bin/python benchmarks/bench_roofline.py --engines none --long-run 100,1000
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
    RssWatch,
    attention_flops,
    decode_bound,
    decode_roofline,
    kv_bytes_per_token,
    linear_shapes,
    load_line,
    machine_header,
    matmul_peak,
    measure_roofline,
    peak_rss_gb,
    prefill_flops,
    weight_bytes,
)

from hf_critic.backends.models import default_gguf_file, load_model
from hf_critic.backends.threads import default_num_threads
from hf_critic.core.schema import Setting, Task
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.prompts import get_template

ROOT = Path(__file__).resolve().parents[1]
ENGINES = "transformers-float32,transformers-bfloat16,llamacpp,reward,text-bfloat16,text-llamacpp"


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
        print(f"llama.cpp build: {llamacpp_build()}")
        for recode in ("off", "auto"):  # the file as it is, and as --gguf-recode auto runs it
            backend = llamacpp_backend(args, recode=recode)
            seconds, _ = timed(
                lambda b=backend: b.verdict_probabilities(conversations, [prefix] * len(conversations), values)
            )
            label = f"llama.cpp {backend.quantization}, {args.slots} slots"
            print(share_line(label, len(conversations), seconds, work, roof.peaks["float32"], "float32"))
            backend.close()


def reward_scoring(args, rows: list[dict], roof: Roofline) -> None:
    """The shipped reward-model critic (``smollm2-135m-critic``: a sequence-classification LoRA adapter on the
    embedded model) grading the rows through :meth:`Critic.grade`, against the compute peak of its dtype.

    Its work is a plain prefill of each (question, response) as the reward model reads it (its chat template, cut to
    its context as the critic cuts it, :meth:`RewardModel.fit`), the adapter's low-rank layers and the one-label
    score head on every token included (:func:`roofline.prefill_flops` counts every ``nn.Linear``)."""
    from hf_critic import Critic

    critic = Critic.from_pretrained("smollm2-135m-critic", batch_size=args.batch, progress=False)
    scorer = critic.scorer
    lengths = [len(scorer.fit(r["question"], r["response"], critic.truncate)[0]) for r in rows]
    work = prefill_flops(scorer.model, lengths, outputs_per_row=0)
    dtype = str(next(scorer.model.parameters()).dtype).removeprefix("torch.")
    print(
        f"\nreward-model scoring (smollm2-135m-critic, {dtype}), {len(rows)} rows, {sum(lengths)} tokens "
        f"(mean {sum(lengths) / len(lengths):.0f}, max {max(lengths)}), {work / 1e9:.1f} GFLOP as a plain prefill"
    )
    seconds, _ = timed(lambda: critic.grade(rows))
    label = f"reward model {dtype}, batch {args.batch}"
    print(share_line(label, len(rows), seconds, work, roof.peaks[dtype], dtype))


def llamacpp_backend(args, slots: int | None = None, recode: str = "auto"):
    """The shipped GGUF on llama.cpp with ``slots`` (default ``--slots``) slots and the run's threads, re-encoded as
    ``--gguf-recode recode`` says (``auto``: Q4_1 as Q8_0)."""
    from hf_critic.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(
        default_gguf_file(), parallel=slots or args.slots, threads=args.threads, progress=False, recode=recode
    )


def llamacpp_build() -> str:
    """llama.cpp's own CPU feature line (``AVX2 = 1 | AVX512 = 1 | ...``): which kernels this build has (the prebuilt
    wheel: AVX2; ``make llamacpp-native``: this CPU's)."""
    import xllamacpp

    return " ".join(xllamacpp.get_system_info().split())


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
    lm = None
    if "text-bfloat16" in engines:
        lm = load_model(None, dtype="bfloat16")[0]
        make = lambda: TransformersBackend(lm, tokenizer, name="bench", batch_size=batch, progress=False)  # noqa: E731
        jobs.append((f"transformers bfloat16, batch {batch}", make, weight_bytes(lm)))
    if "text-llamacpp" in engines:
        # a fresh server per call: llama.cpp would otherwise find the prompts of the prefill call in its slots
        label = f"llama.cpp {gguf_run_type()}, {batch} slots"
        jobs.append((label, lambda: llamacpp_backend(args, slots=batch), gguf_bytes()))
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
        if label.startswith("transformers"):
            full_roofline(lm, tokenizer, subset, tokens / len(subset), batch, decode_rate, roof)


def full_roofline(lm, tokenizer, subset, new_per_row: float, batch: int, decode_rate: float, roof: Roofline) -> None:
    """The decoding step's whole roofline (:func:`roofline.decode_roofline`): the weights and the batch's KV cache
    read (each row's prompt plus half its new tokens, bfloat16), and the step's FLOPs at the matmul throughput of
    ``batch``-row products at the model's shapes, measured now."""
    from hf_critic.backends.transformers import TransformersBackend

    probe = TransformersBackend(lm, tokenizer, name="bench", batch_size=batch, progress=False)
    contexts = [probe.prompt_tokens(c) + new_per_row / 2 for c in subset[:batch]]
    kv = sum(contexts) * kv_bytes_per_token(lm.config, 2)
    shapes = linear_shapes(lm)
    head = lm.get_output_embeddings()
    shapes[(head.in_features, head.out_features)] += 1
    per_token = sum(2.0 * i * o * n for (i, o), n in shapes.items())
    flops = sum(per_token + attention_flops(lm.config, 1) * c for c in contexts)  # 4 x layers x heads x head_dim a key
    peak = matmul_peak(shapes, torch.bfloat16, tokens=batch)
    bound, binding = decode_roofline(roof.bandwidth, weight_bytes(lm), kv, flops, peak, batch)
    print(
        f"{'':<36} whole roofline at batch {batch}: weights + KV cache {kv / 1e6:.0f} MB/step, {flops / 1e9:.2f} "
        f"GFLOP/step at {peak / 1e9:.0f} GFLOP/s ({batch}-row products): {bound:5.0f} tokens/s, {binding}-bound; "
        f"decoding at {100 * decode_rate / bound:5.1f}% of it"
    )


def gguf_bytes() -> int:
    """Bytes of the GGUF llama.cpp runs for the shipped critic (``--gguf-recode auto``): the weights it reads per
    decoding step."""
    from hf_critic.backends.gguf_files import recoded_gguf

    return recoded_gguf(default_gguf_file()).stat().st_size


def gguf_run_type() -> str:
    """The weight type llama.cpp runs the shipped critic in (``--gguf-recode auto``), e.g. ``"Q4_1 as Q8_0"``."""
    from hf_critic.backends.gguf_files import file_type, recoded_gguf

    source = default_gguf_file()
    run = recoded_gguf(source)
    return file_type(source) if run == source else f"{file_type(source)} as {file_type(run)}"


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


def long_run(args, model, tokenizer, template, roof: Roofline, sizes: list[int]) -> None:
    """The read-out's rows/s and memory over a short and a long run (flat within 20%).

    The transformers engine in the dtype the default critic picks at ``--batch`` (``--dtype auto``), on the first
    ``A`` MT-Bench turn-1 rows and on those rows repeated to ``B`` (MT-Bench has 160 turn-1 rows; repeating the same
    ``A`` keeps the mix of lengths, hence the work per row, equal in both runs), each on one call as the critic makes
    it (no cache: one :meth:`verdict_probabilities` call for all rows). Order: ``A`` untimed (warm-up), then ``A``,
    ``B``, ``A`` again, so a change of load during the run shows. Each run prints its resident memory at the start,
    its highest and at the end (:class:`roofline.RssWatch`); the long run's read-outs are checked against the short
    run's row by row.
    """
    from hf_critic.backends.models import inference_dtype
    from hf_critic.backends.transformers import TransformersBackend

    small, large = sizes
    rows, source = mt_bench_rows(small)
    distinct = [template.render(r) for r in rows]
    prefix, values = template.output.verdict_prefix, list(template.output.verdict_values())
    dtype = str(inference_dtype("auto", args.batch)).removeprefix("torch.")
    lm = model if dtype == "float32" else load_model(None, dtype=dtype)[0]
    if args.long_run_tiny:
        lm = tiny_twin(model).to(getattr(torch, dtype))
    backend = TransformersBackend(lm, tokenizer, name="bench", batch_size=args.batch, progress=False)
    lengths = [
        len(tokenizer(backend._prompt_text(c) + prefix, add_special_tokens=False)["input_ids"]) for c in distinct
    ]
    what = (
        "a 2-layer, 64-wide random twin of the default critic (its tokenizer and vocabulary)"
        if args.long_run_tiny
        else "the default critic"
    )
    print(
        f"\nlong run: read-out, transformers {dtype} (--dtype auto at batch {args.batch}), {what}, {source}: the first "
        f"{small} rows, and those rows repeated to {large} ({sum(lengths)} prompt tokens per {small} rows)"
    )
    # warm-up, not timed: the first call with a batch shape pays one-time costs (float32 on the twin: 14.9 s for 50
    # rows, then 1.4 s for the same rows again)
    backend.verdict_probabilities(distinct, [prefix] * small, values)
    rates, cpu_rates, outputs = [], [], {}
    for n in (small, large, small):
        conversations = [distinct[i % small] for i in range(n)]
        work = prefill_flops(lm, [lengths[i % small] for i in range(n)])
        cpu = os.times()
        with RssWatch() as rss:
            seconds, out = timed(lambda c=conversations: backend.verdict_probabilities(c, [prefix] * len(c), values))
        cpu_seconds = sum(os.times()[:2]) - sum(cpu[:2])
        rates.append(n / seconds)
        cpu_rates.append(n / cpu_seconds)
        outputs.setdefault(n, out)
        line = share_line(f"{n} rows", n, seconds, work, roof.peaks[dtype], dtype)
        if args.long_run_tiny:  # the peak was measured at the real model's shapes: no share for the twin
            line = f"{n} rows{'':<29} {n / seconds:6.2f} rows/s ({seconds:6.1f} s)"
        print(
            line
            + f"; {n / cpu_seconds:.3f} rows per CPU-second ({cpu_seconds:.0f} s)"
            + f"  RSS {rss.start:.2f} GB at the start, {rss.peak:.2f} peak, {rss.end:.2f} at the end; {load_line()}",
            flush=True,
        )
    short, long = outputs[small], outputs[large]
    drift = max(
        abs(long[i].probabilities[v] - short[i % small].probabilities[v]) for i in range(large) for v in values
    )
    mean_short = (rates[0] + rates[2]) / 2
    cpu_short = (cpu_rates[0] + cpu_rates[2]) / 2
    print(
        f"{large} rows at {100 * rates[1] / mean_short:.1f}% of the rows/s of {small} (mean of the two {small}-row runs; "
        f"{100 * rates[1] / rates[0]:.1f}% of the first, {100 * rates[1] / rates[2]:.1f}% of the second); a repeated "
        f"row's probabilities within {drift:.1e} of its first read-out"
    )
    print(
        f"per CPU-second (what a loaded machine's other jobs disturb less): {large} rows at "
        f"{100 * cpu_rates[1] / cpu_short:.1f}% of {small} ({100 * cpu_rates[1] / cpu_rates[0]:.1f}% of the first, "
        f"{100 * cpu_rates[1] / cpu_rates[2]:.1f}% of the second)"
    )


def tiny_twin(model):
    """A randomly initialised 2-layer, 64-wide Llama with ``model``'s vocabulary and context: the read-out's work
    outside the transformer layers (tokenising, batching, the shared prefix's cache copies, the verdict trie, the
    float64 softmax over the whole vocabulary) at its real size, the layers' compute almost gone."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=model.config.vocab_size,
        max_position_embeddings=model.config.max_position_embeddings,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=24, help="read-out rows (default 24)")
    parser.add_argument("--critiques", type=int, default=8, help="text critiques (default 8)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8, help="transformers batch size; llama.cpp slots for text")
    parser.add_argument("--slots", type=int, default=4, help="llama.cpp slots for the read-out")
    parser.add_argument("--threads", type=int, help="threads (default: one per physical core, as the CLI)")
    parser.add_argument("--engines", default=ENGINES, help=f"comma-separated, of: {ENGINES}; none: only the long run")
    parser.add_argument("--rows-flat", help="A,B: time the read-out on the first A and B rows instead")
    parser.add_argument(
        "--long-run",
        default="8,32",
        help="A,B: the transformers read-out (--dtype auto) on A rows and on them repeated to B, rows/s and memory "
        "(default 8,32; the flatness check: 100,1000); 0 skips it",
    )
    parser.add_argument(
        "--long-run-tiny",
        action="store_true",
        help="the long run on a 2-layer random twin of the default critic (same tokenizer and vocabulary): the "
        "pipeline's cost per row without the model's compute",
    )
    args = parser.parse_args()
    args.threads = args.threads or default_num_threads()
    print(machine_header(args.threads))
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
    engines = set(args.engines.split(","))
    if engines & {"transformers-float32", "transformers-bfloat16", "llamacpp"}:
        readouts(args, model, tokenizer, conversations[: args.rows], template, roof)
    if "reward" in engines:
        reward_scoring(args, rows[: args.rows], roof)
    if engines & {"text-bfloat16", "text-llamacpp"}:
        decoding(args, tokenizer, conversations, roof)
    if args.long_run != "0":
        long_run(args, model, tokenizer, template, roof, [int(n) for n in args.long_run.split(",")])
    after = measure_roofline(model, ("float32", "bfloat16"))
    peaks = ", ".join(f"{name} {flops / 1e9:.0f} GFLOP/s" for name, flops in after.peaks.items())
    print(f"\nroofline again at the end: {peaks}; memory read {after.bandwidth / 1e9:.1f} GB/s")
    print(f"{load_line()}; peak RSS {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
