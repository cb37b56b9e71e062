"""Glass-box features vs GPT-4 grades on the shared SelfEval files, next to the paper's Table 1.

Two parts, printed as markdown tables:

1. The feature files released with the paper (``model_answer/<model>-<feature>.jsonl``), correlated with
   GPT-4's grades of the same model's answers (all graded turns pooled, as in Table 1) through
   :func:`hf_critic.meta_eval.correlation.text_level_correlation`, next to the paper's numbers.
2. ``--model`` (default: the embedded SmolLM2-135M-Instruct) scoring the very answers GPT-4 graded (the text is
   taken from the judge prompts) with :class:`hf_critic.glassbox.GlassBoxEvaluator`. This is NOT
   self-evaluation: the answers were written by LLaMA2-7B-Chat and Vicuna-7B, not by the scoring model.

    python scripts/selfeval_report.py --data ../shared/data/selfeval --features basic softmax_combo
    python scripts/selfeval_report.py --features attn_ent_min attn_ent_avg prm_ensemble_exp prm_ensemble_var \\
        --questions 20 --skip-precomputed
    python scripts/selfeval_report.py --features sent_prob softmax_ent softmax_var --reference-only \\
        --illustration --calibrate --skip-precomputed

Scores are cached in ``--scores`` (JSONL, default under ``outputs/``); a rerun with the same options reuses them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


def _fmt(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4f}"


def precomputed_markdown(data: Path) -> str:
    from hf_critic.meta_eval.selfeval import precomputed_table

    table = precomputed_table(data)
    lines = [
        "| bench | model | feature (file) | n | ours P / K / S | paper P / K / S | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples(index=False):
        notes = []
        if r.n_unparsed:
            notes.append(f"{r.n_unparsed} GPT-4 grades of -1 dropped")
        if r.duplicates:
            notes.append(f"{r.duplicates} duplicate rows dropped")
        if r.n_nan:
            notes.append(f"{r.n_nan} NaN dropped")
        if r.n_matched < r.n + r.n_unparsed + r.n_nan:
            notes.append(f"graded answer = file answer in {r.n_matched}/{r.n + r.n_unparsed + r.n_nan} rows")
        lines.append(
            f"| {r.bench} | {r.model} | {r.feature} (`{r.file}`) | {r.n} | "
            f"{_fmt(r.pearson)} / {_fmt(r.kendall)} / {_fmt(r.spearman)} | "
            f"{_fmt(r.paper_pearson)} / {_fmt(r.paper_kendall)} / {_fmt(r.paper_spearman)} | {'; '.join(notes)} |"
        )
    return "\n".join(lines)


_PAPER_ROW = {
    "sent_prob": "SentProb",
    "softmax_ent": "Softmax-Ent",
    "softmax_var_vocab": "Softmax-Var",
    "softmax_combo": "Softmax-combo",
    "prm_ensemble_exp": "PrmEnsem-Exp",
    "prm_ensemble_var": "PrmEnsem-Var",
    "dec_ensemble_exp": "DecEnsem-Exp",
    "dec_ensemble_var": "DecEnsem-Var",
    "attn_ent_min": "AttnEnt-Min",
    "attn_ent_avg": "AttnEnt-Avg",
}


def model_scores(args, records: list[dict]):
    """Score ``records`` (or reuse the cache) and return the dataset with glassbox_* columns."""
    import datasets

    key = json.dumps(
        {
            "model": args.model,
            "features": sorted(args.features),
            "questions": args.questions,
            "benches": sorted(args.benches),
            "turns": sorted(args.turns),
            "reference_only": args.reference_only,
            "illustration": args.illustration,
            "calibrate": args.calibrate,
            "ensemble_size": args.ensemble_size,
            "max_new_tokens": args.max_new_tokens,
        },
        sort_keys=True,
    )
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    path = Path(args.scores or ROOT / "outputs" / f"selfeval_glassbox_{digest}.jsonl")
    if path.is_file():
        print(f"reusing {path}", file=sys.stderr)
        scored = datasets.load_dataset("json", data_files=str(path), split="train")
        meta = path.with_suffix(".json")
        seconds = json.loads(meta.read_text())["seconds"] if meta.is_file() else None
        needed = {"glassbox_softmax_combo", "glassbox_softmax_ent", "glassbox_softmax_var_vocab"}
        if needed <= set(scored.column_names):  # combo post-processes cached columns: refit with today's defaults
            from hf_critic.glassbox import ComboNormalization

            norm = ComboNormalization.fit(scored["glassbox_softmax_ent"], scored["glassbox_softmax_var_vocab"])
            combo = norm.apply(scored["glassbox_softmax_ent"], scored["glassbox_softmax_var_vocab"])
            scored = scored.remove_columns("glassbox_softmax_combo").add_column("glassbox_softmax_combo", list(combo))
        return scored, path, seconds

    import torch

    from hf_critic.backends.models import load_model
    from hf_critic.backends.threads import default_num_threads
    from hf_critic.glassbox import GlassBoxEvaluator

    model, tokenizer = load_model(args.model)
    torch.set_num_threads(args.threads or default_num_threads(model.num_parameters()))
    evaluator = GlassBoxEvaluator(
        model,
        tokenizer=tokenizer,
        batch_size=args.batch_size,
        ensemble_size=args.ensemble_size,
        max_new_tokens=args.max_new_tokens,
        progress=True,
    )
    start = time.perf_counter()
    scored = evaluator.score(records, features=args.features, illustration=args.illustration, calibrate=args.calibrate)
    seconds = time.perf_counter() - start
    path.parent.mkdir(parents=True, exist_ok=True)
    scored.to_json(path, lines=True)
    path.with_suffix(".json").write_text(json.dumps({"options": json.loads(key), "seconds": seconds}) + "\n")
    return scored, path, seconds


def model_markdown(scored, features_cols: list[str]) -> str:
    import numpy as np

    from hf_critic.glassbox import FEATURES
    from hf_critic.meta_eval.selfeval import PAPER_TABLE1, correlations

    bench = np.array(scored["bench"])
    model = np.array(scored["model"])
    score = np.array(scored["score"], dtype=float)
    lines = [
        "| bench | answers by | feature | paper direction | n | SmolLM2-135M P / K / S | paper (self-eval, 7B) P / K / S |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in ("mt_bench", "vicuna_bench"):
        for m in ("llama2-7b-chat", "vicuna-7b"):
            sel = (bench == b) & (model == m)
            if not sel.any():
                continue
            for col in features_cols:
                name = col.removeprefix("glassbox_")
                base = name.replace("_calibrated", "").replace("_ref", "")
                vals = np.array([np.nan if v is None else v for v in scored[col]], dtype=float)
                res = correlations(vals[sel], score[sel])
                info = FEATURES.get(base)
                paper_dir = {True: "+", False: "−", None: "?"}[info.higher_is_better if info else None]
                direction = f"paper {paper_dir}"
                paper = PAPER_TABLE1.get((m, b, _PAPER_ROW.get(name, "")), (math.nan,) * 3)
                lines.append(
                    f"| {b} | {m} | `{name}` | {direction} | {res['n']} | "
                    f"{_fmt(res['pearson'])} / {_fmt(res['kendall'])} / {_fmt(res['spearman'])} | "
                    f"{' / '.join(_fmt(x) for x in paper)} |"
                )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", default=str(ROOT.parent / "shared" / "data" / "selfeval"), help="the selfeval folder"
    )
    parser.add_argument("--model", default=None, help="scoring model (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--features", nargs="+", default=["basic", "softmax_combo"], help="glass-box features")
    parser.add_argument("--benches", nargs="+", default=["mt_bench", "vicuna_bench"], help="benchmarks to score")
    parser.add_argument("--turns", nargs="+", type=int, default=[1, 2], help="graded turns to score (default: 1 2)")
    parser.add_argument("--questions", type=int, help="only the first N question ids of each benchmark (a subset)")
    parser.add_argument("--reference-only", action="store_true", help="only answers whose question has a reference")
    parser.add_argument("--illustration", action="store_true", help="in-context illustration (§3.1)")
    parser.add_argument("--calibrate", action="store_true", help="probability calibration (§3.2)")
    parser.add_argument("--ensemble-size", type=int, default=10, help="decoding-ensemble passes (default: 10)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="decoding-ensemble sample length")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--threads", type=int)
    parser.add_argument(
        "--scores", help="cache file of the scored answers (default: outputs/selfeval_glassbox_<hash>.jsonl)"
    )
    parser.add_argument("--skip-precomputed", action="store_true", help="do not print part 1")
    parser.add_argument("--skip-model", action="store_true", help="do not run part 2")
    args = parser.parse_args()

    from hf_critic.glassbox import resolve_features

    data = Path(args.data)
    if not data.is_dir():
        print(f"SelfEval data not found at {data}", file=sys.stderr)
        return 2
    args.features = list(resolve_features(args.features))
    if not args.skip_precomputed:
        print("## Released feature files vs GPT-4 grades (Table 1 protocol)\n")
        print(precomputed_markdown(data))
        print()
    if args.skip_model:
        return 0

    from hf_critic.loaders.selfeval import judged_records

    records = [r for r in judged_records(data, args.benches) if r["turn"] in args.turns]
    if args.questions:
        keep = {}
        for bench in ("mt_bench", "vicuna_bench"):
            ids = sorted({r["question_id"] for r in records if r["bench"] == bench})
            keep[bench] = set(ids[: args.questions])
        records = [r for r in records if r["question_id"] in keep[r["bench"]]]
    if args.reference_only or args.illustration or args.calibrate:
        refs = {}
        for bench in ("mt_bench", "vicuna_bench"):
            path = data / bench / "reference_answer" / "gpt-4.jsonl"
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                refs[(bench, row["question_id"])] = row["choices"][0]["turns"]
        kept = []
        for r in records:
            ref = refs.get((r["bench"], r["question_id"]))
            if ref is None:
                if args.reference_only:
                    continue
                ref = [None] * r["turn"]
            kept.append(dict(r, reference=list(ref[: r["turn"]])))
        records = kept
    scored, path, seconds = model_scores(args, records)
    cols = [
        c for c in scored.column_names if c.startswith("glassbox_") and c.removeprefix("glassbox_") in args.features
    ]
    cols += [c for c in scored.column_names if c.endswith("_calibrated")]
    timing = f", {seconds:.0f} s" if seconds else ""
    print(
        f"## {args.model or 'SmolLM2-135M-Instruct (embedded default)'} on the graded answers "
        f"({len(scored)} answers{timing}; scores in `{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}`)\n"
    )
    print(model_markdown(scored, cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
