"""Critiques per second of the default critic at batch sizes 1, 4 and 8, against a one-record-at-a-time loop.

The baseline is the plain transformers loop a user would write (chat template, `generate`, decode, one
record at a time) on the model as `from_pretrained` loads it by default (float32; `--baseline-dtype`), timed
in the same run with the same threads, records and decoding settings. hf-critic runs with its defaults
(`--dtype auto`: bfloat16 on CPUs with native bfloat16), so the ratio counts both what batching and what
the dtype choice buy; run `--dtype float32` to see batching alone. Target: >= 3x at batch 8.

    .venv/bin/python benchmarks/bench_generate.py [--records 16] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from hf_critic.critic import Critic
from hf_critic.decoding import DecodingConfig
from hf_critic.models import load_model
from hf_critic.schema import Setting, Task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "pointwise_reference_free.jsonl"


def records(n: int) -> list[dict]:
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    return [rows[i % len(rows)] | {"question": f"{rows[i % len(rows)]['question']} (#{i})"} for i in range(n)]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--template", default="mtbench")
    parser.add_argument("--dtype", default="auto", help="hf-critic's model dtype (default: auto, as the CLI)")
    parser.add_argument(
        "--baseline-dtype", default="float32", help="the loop's dtype (default: float32, as transformers)"
    )
    parser.add_argument("--threads", type=int, help="torch threads (default: one per physical core, as the CLI)")
    args = parser.parse_args()

    critic = Critic.from_pretrained(
        None,
        template=args.template,
        progress=False,
        decoding=DecodingConfig(max_new_tokens=args.max_new_tokens),
        dtype=args.dtype,
        num_threads=args.threads,
    )
    backend = critic.backend
    rows = records(args.records)
    setting = Setting(Task.POINTWISE, referenced=False)
    template = critic.template_for(setting)
    conversations = [template.render(r) for r in rows]
    print(
        f"default critic, {args.records} records, greedy, max_new_tokens={args.max_new_tokens}, "
        f"hf-critic dtype={backend.model.dtype}, torch threads={torch.get_num_threads()}, setting={setting.name}"
    )

    plain, tokenizer = load_model(None, dtype=args.baseline_dtype)
    base = baseline(plain, tokenizer, conversations, args.max_new_tokens)
    del plain
    print(
        f"baseline (one record at a time, {args.baseline_dtype}): {args.records / base:.2f} critiques/s ({base:.1f} s)"
    )
    for batch_size in (1, 4, 8):
        backend.batch_size = batch_size
        started = time.perf_counter()
        backend.generate(conversations, critic.decoding)
        elapsed = time.perf_counter() - started
        print(
            f"hf-critic batch {batch_size}: {args.records / elapsed:.2f} critiques/s ({elapsed:.1f} s), "
            f"{base / elapsed:.2f}x the baseline"
        )


if __name__ == "__main__":
    main()
