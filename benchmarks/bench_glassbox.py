"""Glass-box self-evaluation throughput: responses per second with the embedded default critic.

Prints, in one run: the basic features (SentProb, Softmax-Ent, Softmax-Var; one teacher-forced forward pass
per response) at batch 1 and batch 8 with the ratio between them, and the cost of the attention features
(AttnEnt per head/layer, -Min, -Avg: eager attention with ``output_attentions``) as a ratio against the basic
features at the same batch size.

    python benchmarks/bench_glassbox.py [--n 16] [--threads 1] [--max-response-tokens 256]

The responses are the first ``--n`` answers GPT-4 graded in the shared SelfEval files (real lengths) when
``../shared/data/selfeval`` exists (``$HF_CRITIC_SHARED_DATA`` overrides), synthetic ones otherwise; the
script says which. Each configuration is timed after a warm-up batch, best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]


def _records(n: int, max_chars: int) -> tuple[list[dict], str]:
    data = Path(os.environ.get("HF_CRITIC_SHARED_DATA", ROOT.parent / "shared" / "data")) / "selfeval"
    if data.is_dir():
        from hf_critic.loaders.selfeval import judged_records

        recs = judged_records(data, ["vicuna_bench"])[:n]
        out = []
        for r in recs:
            q, a = r["messages"][0]["content"], r["messages"][1]["content"][:max_chars]
            out.append({"question": q, "response": a})
        return out, f"{len(out)} GPT-4-graded Vicuna-Bench answers from {data} (cut to {max_chars} characters)"
    base = "The quick brown fox jumps over the lazy dog while the model explains its answer in detail. "
    out = [
        {"question": f"Question {i}: explain topic {i} in a few paragraphs.", "response": base * (2 + i % 7)}
        for i in range(n)
    ]
    return out, f"{n} synthetic responses (shared data not found)"


def _time(evaluator, records, features, repeat: int) -> float:
    evaluator.score(records[: evaluator.batch_size], features=features)  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        evaluator.score(records, features=features)
        best = min(best, time.perf_counter() - start)
    return len(records) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16, help="responses per measurement (default: 16)")
    parser.add_argument(
        "--threads", type=int, help="torch threads (default: hf_critic.backends.threads.default_num_threads)"
    )
    parser.add_argument("--max-chars", type=int, default=1200, help="cut each response to this many characters")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per configuration; the best counts")
    args = parser.parse_args()

    import torch

    from hf_critic.backends.models import load_model
    from hf_critic.backends.threads import default_num_threads
    from hf_critic.glassbox import GlassBoxEvaluator, encode_turn

    model, tokenizer = load_model(None, dtype="float32")
    threads = args.threads or default_num_threads()
    torch.set_num_threads(threads)
    records, source = _records(args.n, args.max_chars)
    lengths = [
        len(encode_turn(tokenizer, [{"role": "user", "content": r["question"]}], r["response"]).input_ids)
        for r in records
    ]
    print(f"model: SmolLM2-135M-Instruct (embedded default), fp32, {threads} torch thread(s), device {model.device}")
    print(
        f"data: {source}; sequence tokens min/mean/max {min(lengths)}/{sum(lengths) / len(lengths):.0f}/{max(lengths)}"
    )

    basic = ["sent_prob", "softmax_ent", "softmax_var"]
    attention = basic + ["attn_ent_min", "attn_ent_avg"]
    results = {}
    for batch in (1, 8):
        ev = GlassBoxEvaluator(model, tokenizer=tokenizer, batch_size=batch)
        results[("basic", batch)] = _time(ev, records, basic, args.repeat)
        results[("attention", batch)] = _time(ev, records, attention, args.repeat)

    print()
    print(f"{'features':<34}{'batch':>6}{'responses/s':>14}{'ratio':>10}  baseline")
    b1 = results[("basic", 1)]
    print(f"{'basic (SentProb, Ent, Var)':<34}{1:>6}{b1:>14.2f}{1.0:>10.2f}  itself")
    b8 = results[("basic", 8)]
    print(f"{'basic (SentProb, Ent, Var)':<34}{8:>6}{b8:>14.2f}{b8 / b1:>10.2f}  basic, batch 1")
    for batch in (1, 8):
        a = results[("attention", batch)]
        base = results[("basic", batch)]
        print(f"{'basic + AttnEnt-Min/Avg':<34}{batch:>6}{a:>14.2f}{a / base:>10.2f}  basic, batch {batch}")
    print()
    print(
        f"attention features cost {results[('basic', 8)] / results[('attention', 8)]:.2f}x the time of the basic "
        f"features at batch 8 ({results[('basic', 1)] / results[('attention', 1)]:.2f}x at batch 1); "
        f"batch 8 is {b8 / b1:.2f}x batch 1 for the basic features"
    )


if __name__ == "__main__":
    main()
