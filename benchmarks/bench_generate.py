"""Critiques per second of the default critic: engine x dtype x batch size, against a one-record-at-a-time loop.

The baseline is the plain transformers loop a user would write (chat template, `generate`, decode, one record at a
time) on the model as `from_pretrained` loads it by default (float32), timed in the same run with the same threads,
records and decoding settings. Then, for each batch size (1, 4, 8, 16):

- `transformers <dtype>`: hf-critic's transformers engine (length-sorted, left-padded batches) in float32 and
  bfloat16;
- `transformers-cb <dtype>` (with `--continuous-batching`): transformers' own continuous batching
  (`generate_batch`, paged attention) with the batch size as its slot budget;
- `llamacpp`: the shipped Q4_1 GGUF through llama.cpp, as `--gguf-recode auto` runs it (Q8_0), with that many
  parallel slots;
- `auto`, last: the configuration `--engine auto --dtype auto` runs for the default critic at that batch size
  (`hf_critic.backends.models.resolve_engine`, `auto_dtype`), one of the rows above, and whether it is at least as fast as
  transformers in float32 at the same batch size.

With `--verdict-modes` it times the verdict modes instead, in one run, on the transformers engine at batch 8
in the dtype `auto` picks: a text critique of `--max-new-tokens` tokens (default there: 192) parsed for its verdict
(`--verdict text`), against the probability read-out with no explanation (`--verdict probability --explanation
none`: the template's verdict prefix after the prompt, one prefill, no decoding; `hf_critic.critic.verdicts`). The ratio
is read-outs/s over text critiques/s.

It prints the CPU model, its flags that matter (AMX, AVX-512 BF16, AVX2), the thread count and the machine load
(`os.getloadavg`), since other work on the machine changes every figure.

    .venv/bin/python benchmarks/bench_generate.py [--records 16] [--max-new-tokens 64] [--engines transformers,llamacpp]
    .venv/bin/python benchmarks/bench_generate.py --verdict-modes [--records 16]
    .venv/bin/python benchmarks/bench_generate.py --prefix-sharing [--records 16]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from hf_critic.backends.models import auto_dtype, cpu_flags, load_model, resolve_engine
from hf_critic.core.schema import Setting, Task
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.prompts import get_template

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "pointwise_reference_free.jsonl"


def records(n: int) -> list[dict]:
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    return [rows[i % len(rows)] | {"question": f"{rows[i % len(rows)]['question']} (#{i})"} for i in range(n)]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def baseline(model, tokenizer, conversations, max_new_tokens: int) -> float:
    """One record at a time, no batching: the loop hf-critic's batching is measured against."""
    started = time.perf_counter()
    for conversation in conversations:
        ids = tokenizer.apply_chat_template(
            conversation, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.inference_mode():
            out = model.generate(
                **ids, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    return time.perf_counter() - started


def continuous_batching(model, tokenizer, conversations, max_new_tokens: int, slots: int) -> float:
    """transformers' continuous batching (``generate_batch``: paged KV cache, requests join as others finish)."""
    from transformers import GenerationConfig

    ids = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=True) for c in conversations]
    ids = [x["input_ids"] if hasattr(x, "keys") else x for x in ids]
    config = GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        max_batch_tokens=slots * max(len(x) for x in ids),
    )
    started = time.perf_counter()
    out = model.generate_batch(inputs=ids, generation_config=config, progress_bar=False)  # not under inference_mode
    if len(out) != len(ids) or any(not r.generated_tokens for r in out.values()):
        raise RuntimeError(f"generate_batch answered {len(out)} of {len(ids)} requests")
    return time.perf_counter() - started


def timed(generate, conversations, decoding) -> float:
    started = time.perf_counter()
    generate(conversations, decoding)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, help="generation budget (default: 64; 192 with --verdict-modes)")
    parser.add_argument("--template", default="mtbench")
    parser.add_argument("--engines", default="transformers,llamacpp", help="comma-separated: transformers,llamacpp")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="transformers dtypes besides auto")
    parser.add_argument("--batches", default="1,4,8,16", help="batch sizes (llama.cpp: parallel slots)")
    parser.add_argument("--continuous-batching", action="store_true", help="also time transformers' generate_batch")
    parser.add_argument("--threads", type=int, help="threads (default: one per physical core, as the CLI)")
    parser.add_argument(
        "--verdict-modes",
        action="store_true",
        help="time --verdict probability --explanation none against a text critique (batch 8, auto dtype) instead",
    )
    parser.add_argument(
        "--prefix-sharing",
        action="store_true",
        help="time the shared-prefix prefill against plain batches (text critiques and verdict read-out) instead",
    )
    args = parser.parse_args()
    if args.max_new_tokens is None:
        args.max_new_tokens = 192 if args.verdict_modes else 64

    from hf_critic.backends.threads import default_num_threads
    from hf_critic.backends.transformers import TransformersBackend

    threads = args.threads or default_num_threads()
    torch.set_num_threads(threads)
    engines, batches = args.engines.split(","), [int(b) for b in args.batches.split(",")]
    decoding = DecodingConfig(max_new_tokens=args.max_new_tokens)
    setting = Setting(Task.POINTWISE, referenced=False)
    conversations = [get_template(args.template, setting, "en").render(r) for r in records(args.records)]
    flags = cpu_flags()
    print(f"CPU: {cpu_model()}; flags: {' '.join(sorted(f for f, on in flags.items() if on)) or 'none of interest'}")
    print(
        f"threads {threads}, load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min); "
        f"{args.records} records, greedy, max_new_tokens={args.max_new_tokens}, {setting.name}, torch {torch.__version__}"
    )

    def row(label: str, elapsed: float) -> None:
        print(
            f"{label:<34} {args.records / elapsed:6.2f} critiques/s ({elapsed:6.1f} s)  {base / elapsed:5.2f}x",
            flush=True,
        )

    if args.verdict_modes:
        verdict_modes(args, conversations, decoding)
        return
    if args.prefix_sharing:
        prefix_sharing(conversations, decoding)
        return
    model, tokenizer = load_model(None, dtype="float32")
    base = baseline(model, tokenizer, conversations, args.max_new_tokens)
    row("baseline loop float32, batch 1", base)
    times: dict[tuple[str, int], float] = {}  # (configuration, batch) -> seconds
    loaded = {torch.float32: model}
    if "transformers" in engines:
        for batch in batches:
            for name in args.dtypes.split(","):
                dtype = getattr(torch, name)
                if dtype not in loaded:
                    loaded[dtype] = load_model(None, dtype=name)[0]
                backend = TransformersBackend(loaded[dtype], tokenizer, name="bench", batch_size=batch, progress=False)
                times[f"transformers {name}", batch] = timed(backend.generate, conversations, decoding)
                row(f"transformers {name}, batch {batch}", times[f"transformers {name}", batch])
                if args.continuous_batching:
                    elapsed = continuous_batching(loaded[dtype], tokenizer, conversations, args.max_new_tokens, batch)
                    row(f"transformers-cb {name}, batch {batch}", elapsed)
    del loaded
    if "llamacpp" in engines:
        from hf_critic.backends.llamacpp import LlamaCppBackend
        from hf_critic.backends.models import default_gguf_file

        for batch in batches:
            backend = LlamaCppBackend(default_gguf_file(), parallel=batch, threads=threads, progress=False)
            times["llamacpp", batch] = timed(backend.generate, conversations, decoding)
            row(f"llamacpp {backend.quantization}, {batch} slot(s)", times["llamacpp", batch])
            backend.close()
    print("\nauto: what --engine auto --dtype auto runs for the default critic at each batch size, timed above")
    for batch in batches:
        engine = resolve_engine("auto", None, batch)
        chosen = (
            "llamacpp" if engine == "llamacpp" else f"transformers {str(auto_dtype(batch)).removeprefix('torch.')}"
        )
        if (chosen, batch) in times and ("transformers float32", batch) in times:
            verdict = ">=" if times[chosen, batch] <= times["transformers float32", batch] else "<"
            row(f"auto = {chosen}, batch {batch}", times[chosen, batch])
            print(f"{'':<34} {verdict} transformers float32 at batch {batch}")
    print(f"load average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


def verdict_modes(args, conversations, decoding, batch: int = 8) -> None:
    """Text critique (generate + parse) vs probability read-out (one prefill), same model, batch and records."""
    from hf_critic.backends.transformers import TransformersBackend
    from hf_critic.parsing import parse

    template = get_template(args.template, Setting(Task.POINTWISE, referenced=False), "en")
    dtype = str(auto_dtype(batch)).removeprefix("torch.")
    model, tokenizer = load_model(None, dtype=dtype)
    backend = TransformersBackend(model, tokenizer, name="bench", batch_size=batch, progress=False)
    values = template.output.verdict_values()
    started = time.perf_counter()
    texts = backend.generate(conversations, decoding)
    parsed = [parse(t[0], "score", template.output.score_range) for t in texts]
    text_s = time.perf_counter() - started
    started = time.perf_counter()
    readouts = backend.verdict_probabilities(
        conversations, [template.output.verdict_prefix] * len(conversations), list(values)
    )
    read_s = time.perf_counter() - started
    n = len(conversations)
    ok = sum(p.status.value == "ok" for p in parsed)
    print(f"batch {batch}, dtype {dtype}")
    print(
        f"{'text critique, ' + str(args.max_new_tokens) + ' tokens':<40} {n / text_s:6.2f} critiques/s ({text_s:6.1f} s)  1.00x  verdicts {ok}/{n}"
    )
    print(
        f"{'probability, --explanation none':<40} {n / read_s:6.2f} critiques/s ({read_s:6.1f} s)  {text_s / read_s:5.2f}x  verdicts {sum(r.mass > 0 for r in readouts)}/{n}"
    )
    print(f"load average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


def prefix_sharing(conversations, decoding, batch: int = 8) -> None:
    """The prompts' shared token prefix prefilled once per call, against plain left-padded batches (same run, same
    model in the dtype ``auto`` picks at ``batch``): text critiques and the probability read-out, twice each."""
    from hf_critic.backends import prefill
    from hf_critic.backends import transformers as engine

    template = get_template("mtbench", Setting(Task.POINTWISE, referenced=False), "en")
    dtype = str(auto_dtype(batch)).removeprefix("torch.")
    backend = engine.TransformersBackend.from_pretrained(None, dtype=dtype, batch_size=batch, progress=False)
    shared = len(
        backend._shared_prefix(
            [backend.tokenizer(backend._prompt_text(c), add_special_tokens=False)["input_ids"] for c in conversations]
        )
    )
    print(f"batch {batch}, dtype {dtype}, shared prefix {shared} tokens")
    jobs = {
        "text critique": lambda: backend.generate(conversations, decoding),
        "verdict read-out": lambda: backend.verdict_probabilities(
            conversations, [template.output.verdict_prefix] * len(conversations), template.output.verdict_values()
        ),
    }
    default = prefill.MIN_SHARED_PREFIX
    for name, job in jobs.items():
        times = {"plain": [], "shared prefix": []}
        for _ in range(2):
            for mode in times:
                prefill.MIN_SHARED_PREFIX = default if mode == "shared prefix" else 10**9
                started = time.perf_counter()
                job()
                times[mode].append(time.perf_counter() - started)
        prefill.MIN_SHARED_PREFIX = default
        plain, ours = min(times["plain"]), min(times["shared prefix"])
        for mode, best in (("plain", plain), ("shared prefix", ours)):
            print(
                f"{name + ', ' + mode:<34} {len(conversations) / best:6.2f} /s ({best:6.1f} s, best of 2)  {plain / best:5.2f}x"
            )
    print(f"load average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
