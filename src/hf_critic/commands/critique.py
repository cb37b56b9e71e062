"""``hf-critic grade`` and ``hf-critic compare``: critiques for a file of LLM responses."""

from __future__ import annotations

import argparse
import time

from ..decoding import STRATEGIES

EPILOG = """\
The setting is chosen from the data: referenced when a `reference` column is present, reference-free
otherwise (force it with --referenced / --reference-free). Finished generations are cached (--cache), so a
killed run started again redoes no finished work, and a rerun of the same configuration makes no model call.
"""


def _common(parser: argparse.ArgumentParser) -> None:
    io = parser.add_argument_group("data")
    io.add_argument("--data", required=True, help="JSONL / JSON / CSV / parquet file, or a Hub dataset id")
    io.add_argument(
        "--output", required=True, help="where to write the rows plus critique columns (.jsonl or .parquet)"
    )
    io.add_argument("--columns", help="map your column names to the canonical ones: question=prompt,response=answer")
    io.add_argument(
        "--format",
        help="read --data with a benchmark loader instead: alignbench, autoj, fastchat (MT-Bench / Vicuna-Bench "
        "folder), prometheus (see hf_critic.datasets)",
    )
    io.add_argument("--split", default="train", help="split to read from a Hub dataset (default: train)")
    io.add_argument("--limit", type=int, help="only the first N rows")
    ref = io.add_mutually_exclusive_group()
    ref.add_argument(
        "--referenced", dest="referenced", action="store_const", const=True, help="force the referenced setting"
    )
    ref.add_argument(
        "--reference-free",
        dest="referenced",
        action="store_const",
        const=False,
        help="force the reference-free setting",
    )

    model = parser.add_argument_group("critic")
    model.add_argument("--model", help="local folder or Hub id (default: the embedded SmolLM2-135M-Instruct critic)")
    model.add_argument(
        "--trust-remote-code", action="store_true", help="run the model repository's own code (e.g. ChatGLM3)"
    )
    model.add_argument(
        "--template",
        default=None,
        help="template family (critiquellm_v2, critiquellm_v1, mtbench), a built-in template name, or your own "
        "YAML file (default: critiquellm_v2)",
    )
    model.add_argument(
        "--language", default="en", choices=["en", "zh"], help="language of the critiques (default: en)"
    )
    model.add_argument("--batch-size", type=int, default=8, help="inputs per generate call (default: 8)")
    model.add_argument("--threads", type=int, help="CPU threads for torch (default: one per physical core)")
    model.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="model dtype (default: auto = bfloat16 on CPUs with native bfloat16 such as AMX / AVX512-BF16, else "
        "float32; the checkpoint's dtype on GPU)",
    )
    model.add_argument(
        "--truncate",
        default="middle",
        choices=["middle", "skip", "error"],
        help="inputs longer than the context: cut the response(s) from the middle, skip the row, or stop (default: middle)",
    )
    model.add_argument(
        "--cache", help="SQLite file of finished generations (default: ~/.cache/hf_critic/generations.sqlite)"
    )
    model.add_argument("--no-cache", action="store_true", help="do not read or write the generation cache")
    model.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bars")

    dec = parser.add_argument_group("decoding (CritiqueLLM v1 §3.4, v2 §4.7)")
    dec.add_argument("--decoding", default="greedy", choices=STRATEGIES, help="decoding strategy (default: greedy)")
    dec.add_argument("--max-new-tokens", type=int, default=512, help="generation budget per critique (default: 512)")
    dec.add_argument("--num-beams", type=int, default=4, help="beams for --decoding beam (default: 4)")
    dec.add_argument("--temperature", type=float, default=0.9, help="for sampling / self_consistency (default: 0.9)")
    dec.add_argument("--top-p", type=float, default=0.9, help="nucleus mass for sampling (default: 0.9)")
    dec.add_argument("--num-samples", type=int, default=5, help="samples per input for self_consistency (default: 5)")
    dec.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")


def register(subparsers) -> None:
    """Add the ``grade`` and ``compare`` sub-commands."""
    grade = subparsers.add_parser(
        "grade",
        help="pointwise grading: a score and an explanation per response",
        description="Pointwise grading (CritiqueLLM v2 §3.1): needs question and response columns "
        "(and reference for the referenced setting).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(grade)
    grade.add_argument(
        "--human-score", help="column of human (or GPT-4) scores to correlate with (default: human_score if present)"
    )
    grade.set_defaults(func=run, task="grade")

    compare = subparsers.add_parser(
        "compare",
        help="pairwise comparison: which of two responses is better, and why",
        description="Pairwise comparison (CritiqueLLM v2 §3.1): needs question, response_1 and response_2 "
        "(and reference for the referenced setting). Labels: 0 = response 1 better, 1 = response 2, 2 = tie.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(compare)
    compare.add_argument("--swap", action="store_true", help="judge both orders and record whether the verdicts agree")
    compare.add_argument(
        "--human-label", help="column of human labels 0/1/2 to measure agreement (default: label if present)"
    )
    compare.set_defaults(func=run, task="compare")


def run(args: argparse.Namespace) -> int:
    """Load the data and the critic, write critiques, print the parse rate and agreement figures."""
    from ..critic import Critic
    from ..decoding import DecodingConfig
    from ..io import load_records, parse_columns, save_records
    from ..models import cache_dir
    from ..prompts import DEFAULT_FAMILY

    if args.format:
        from ..datasets import load_benchmark
        from ..io import rename_columns

        records = rename_columns(load_benchmark(args.format, args.data), parse_columns(args.columns), args.data)
        if args.limit is not None:
            records = records.select(range(min(args.limit, len(records))))
    else:
        records = load_records(args.data, parse_columns(args.columns), args.limit, split=args.split)
    decoding = DecodingConfig(
        strategy=args.decoding,
        max_new_tokens=args.max_new_tokens,
        num_beams=args.num_beams,
        temperature=args.temperature,
        top_p=args.top_p,
        num_samples=args.num_samples,
        seed=args.seed,
    )
    cache = None if args.no_cache else (args.cache or cache_dir() / "generations.sqlite")
    critic = Critic.from_pretrained(
        args.model,
        trust_remote_code=args.trust_remote_code,
        batch_size=args.batch_size,
        num_threads=args.threads,
        dtype=args.dtype,
        progress=args.progress,
        template=args.template or DEFAULT_FAMILY,
        language=args.language,
        decoding=decoding,
        truncate=args.truncate,
        cache_path=cache,
    )
    started = time.perf_counter()
    if args.task == "grade":
        result = critic.grade(records, referenced=args.referenced, source=args.data)
    else:
        result = critic.compare(records, referenced=args.referenced, swap=args.swap, source=args.data)
    elapsed = time.perf_counter() - started
    save_records(result, args.output)
    stats = critic.last_stats
    print(f"wrote {len(result)} rows to {args.output} in {elapsed:.1f} s")
    print(f"critiques: {stats.summary()}")
    for line in _figures(result, args):
        print(line)
    return 0


def _figures(result, args) -> list[str]:
    """Agreement with the human (or GPT-4) labels present in the data; nothing when there are none."""
    from .. import schema
    from ..metrics import critique_correlation, pairwise_agreement

    if args.task == "grade":
        column = args.human_score or ("human_score" if "human_score" in result.column_names else None)
        if not column:
            return []
        # All rows as one group: the pooled (sample-level) correlation. Per-query (text-level) and
        # per-system figures come from `hf-critic meta-eval`.
        r = critique_correlation(result[schema.CRITIQUE_SCORE], result[column])
        used = sum(
            p is not None and h is not None for p, h in zip(result[schema.CRITIQUE_SCORE], result[column], strict=True)
        )
        return [
            f"vs {column}: Pearson {r['text_pearson']:.3f}, Spearman {r['text_spearman']:.3f}, "
            f"Kendall {r['text_kendall']:.3f} over {used} rows "
            f"({r['n_unparsed']} unparsed and {r['n_missing_references']} without a {column} left out)"
        ]
    column = args.human_label or ("label" if "label" in result.column_names else None)
    if not column:
        return []
    swapped = result[schema.CRITIQUE_LABEL_SWAPPED] if args.swap else None
    r = pairwise_agreement(result[schema.CRITIQUE_LABEL], result[column], swapped_predictions=swapped)
    if swapped is None:
        return [f"vs {column}: agreement (one order) {100 * r['first_order_agreement']:.2f} over {len(result)} pairs"]
    return [
        f"vs {column}: agreement {100 * r['agreement']:.2f}, consistency {100 * r['consistency']:.2f}, "
        f"first-order-only agreement {100 * r['first_order_agreement']:.2f} over {len(result)} pairs"
    ]
