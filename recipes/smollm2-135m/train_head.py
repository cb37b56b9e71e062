"""Train the reward head of ``smollm2-135m-critic`` on published judgments (route (b) of issue 20).

    python recipes/smollm2-135m/train_head.py --data outputs/judgment_data --output outputs/smollm2-135m-critic

Input: the folder written by ``recipes/smollm2-135m/build_judgment_data.py`` (configs ``pairwise_reference_free``
with ``question, response_1, response_2, preference`` and ``pointwise_reference_free`` with ``question, response,
score``; splits ``train`` / ``validation`` disjoint by question, benchmarks already excluded). Stages:

1. features of every response (one forward pass of the frozen SmolLM2-135M-Instruct each, cached in
   ``--features``: a killed run restarted recomputes nothing it finished), with examples/h printed;
2. Bradley-Terry heads for every ``--l2`` x ``--grade-weight`` (full-batch L-BFGS, seconds each), the one with the
   best validation within-question accuracy kept;
3. the Rao-Kupper tie band chosen on the validation pairs whose judge preference says tie;
4. the head written to ``--output`` (``head.safetensors``, ``head.json`` with data counts, figures, wall time,
   examples/h, peak RSS and load average). The model card (``README.md`` beside them) is written after the held-out
   evaluation, from those figures: see ``src/hf_critic/critics/smollm2_135m_critic/README.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import sys
import time
from pathlib import Path

import datasets
import numpy as np
from scipy.stats import pearsonr

from hf_critic.models import cache_dir, cpu_flags, default_num_threads, load_model
from hf_critic.reward_head import (
    FeatureStore,
    HeadSpec,
    feature_key,
    response_features,
    train_reward_head,
    within_question_accuracy,
)

BASE = "smollm2-135m-instruct"
PAIRS, GRADES = "pairwise_preference", "pointwise_reference_free"
WEIGHTED, REFERENCE = "alpacaeval_weighted_gpt4_turbo", "gpt4_1106_preview"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="folder written by build_judgment_data.py")
    parser.add_argument("--output", required=True, help="folder for head.safetensors and head.json")
    parser.add_argument(
        "--features", default=None,
        help="feature cache (SQLite, about 130 MB for all the data): a killed run restarted computes only what it "
        "lacks; default: $HF_CRITIC_CACHE/head_features.sqlite (~/.cache/hf_critic), never beside the head",
    )  # fmt: skip
    parser.add_argument("--l2", type=float, nargs="+", default=[0.01, 0.1, 0.3, 1.0, 3.0], help="weight decays to try")
    parser.add_argument("--grade-weight", type=float, nargs="+", default=[0.0, 0.3, 1.0], help="grade-term weights")
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per forward pass")
    parser.add_argument("--dtype", default="auto", help="feature dtype: auto (bfloat16 where the CPU has it), float32")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: physical cores)")
    parser.add_argument("--limit", type=int, default=None, help="at most N training pairs (smoke runs)")
    parser.add_argument("--generators", nargs="+", default=None, help="AlpacaEval generators to use (default: all)")
    parser.add_argument("--clip", type=float, default=8.0, help="clip of the strengths logit(P(beats the reference))")
    parser.add_argument("--temperature", type=float, default=2.0, help="Bradley-Terry temperature of derived pairs")
    return parser.parse_args(argv)


def _pairs(split: datasets.Dataset, args: argparse.Namespace) -> tuple[list, list]:
    """Pairs ``(question, response_a, response_b, P(b better))`` within one question: ``(derived, direct)``.

    AlpacaEval judged every generator against one reference output (GPT-4-turbo's, ``model_1``). Its soft preferences
    (``weighted``) give each response a strength relative to that reference, ``s = logit(P(response beats the
    reference))`` clipped to ``[-clip, clip]`` (the reference: 0); under Bradley-Terry any two responses to the same
    question then compare as ``sigmoid((s_b - s_a) / temperature)``. So every pair of the question's responses
    becomes a training pair, not only reference-vs-generator pairs (which would mostly teach the head to spot the
    reference's style). Hard verdicts (``cot``: 0 / 0.5 / 1) are used as they are, reference vs generator. Swapped
    copies are skipped: the Bradley-Terry loss is symmetric.
    """
    strengths: dict[str, dict[str, float]] = {}
    direct = []
    for row in split:
        if str(row["swapped"]) == "True" or (args.generators and row["model_2"] not in args.generators):
            continue
        question, preference = row["question"], float(row["preference"])
        if row["source"] == WEIGHTED and row["model_1"] == REFERENCE:
            p = min(max(preference, 1e-12), 1 - 1e-12)
            group = strengths.setdefault(question, {row["response_1"]: 0.0})
            group[row["response_2"]] = float(np.clip(np.log(p / (1 - p)), -args.clip, args.clip))
        else:
            direct.append((question, row["response_1"], row["response_2"], preference))
    derived = [
        (question, a, b, float(1 / (1 + np.exp(-(group[b] - group[a]) / args.temperature))))
        for question, group in strengths.items()
        for a, b in itertools.combinations(group, 2)
    ]
    return derived, direct


def _features(items, store: FeatureStore, model, tokenizer, spec: HeadSpec, batch_size: int) -> tuple[np.ndarray, int]:
    """Features of ``items`` from the store, computing (and storing, batch by batch) those missing; and how many
    were computed in this run."""
    keys = [feature_key(q, r, spec, BASE) for q, r in items]
    have = store.get_many(keys)
    todo = [i for i, k in enumerate(dict.fromkeys(keys)) if k not in have]
    unique = list(dict.fromkeys(keys))
    where = {k: i for i, k in enumerate(keys)}
    started, done = time.time(), 0
    for begin in range(0, len(todo), 64):
        part = [unique[i] for i in todo[begin : begin + 64]]
        vectors = response_features(model, tokenizer, [items[where[k]] for k in part], spec, batch_size=batch_size)
        store.put_many(dict(zip(part, vectors, strict=True)))
        have.update(zip(part, vectors, strict=True))
        done += len(part)
        rate = done / (time.time() - started) * 3600
        print(f"features {done}/{len(todo)} new ({rate:.0f} responses/h)", flush=True)
    return np.stack([have[k] for k in keys]), len(todo)


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.time()
    flags = cpu_flags()
    print("CPU flags:", ", ".join(f for f, on in flags.items() if on) or "none", flush=True)
    data = Path(args.data)
    try:
        pairs_dd = datasets.load_from_disk(str(data / PAIRS))
        grades_dd = datasets.load_from_disk(str(data / GRADES))
    except FileNotFoundError as err:
        print(f"error: {data}: {err}; build it with recipes/smollm2-135m/build_judgment_data.py", file=sys.stderr)
        return 2
    derived, direct = _pairs(pairs_dd["train"], args)
    train_pairs = derived + direct
    val_derived, val_direct = _pairs(pairs_dd["validation"], args)
    val_pairs = val_derived + val_direct
    if args.limit:
        train_pairs = train_pairs[: args.limit]
    train_grades = [(r["question"], r["response"], float(r["score"])) for r in grades_dd["train"]]
    val_grades = [(r["question"], r["response"], float(r["score"])) for r in grades_dd["validation"]]
    print(
        f"pairs: train {len(train_pairs)}, validation {len(val_pairs)}; grades: train {len(train_grades)}, "
        f"validation {len(val_grades)}",
        flush=True,
    )

    # ------------------------------------------------------------------ features (resumable)
    import torch

    torch.set_num_threads(args.threads or default_num_threads())
    dtype = "bfloat16" if args.dtype == "auto" and (flags["amx_bf16"] or flags["avx512_bf16"]) else args.dtype
    dtype = "float32" if dtype == "auto" else dtype
    model, tokenizer = load_model(None, dtype=dtype)
    spec = HeadSpec()
    store = FeatureStore(args.features or cache_dir() / "head_features.sqlite")
    items, index = [], {}

    def ix(question: str, response: str) -> int:
        key = (question, response)
        if key not in index:
            index[key] = len(items)
            items.append(key)
        return index[key]

    def pair_arrays(rows):
        return np.array([(ix(q, a), ix(q, b)) for q, a, b, _ in rows]), np.array([p for *_, p in rows])

    tp, tt = pair_arrays(train_pairs)
    tg = np.array([ix(q, r) for q, r, _ in train_grades], dtype=np.int64)
    trained = len(items)  # the training responses come first: standardisation sees only them
    vp, vt = pair_arrays(val_pairs)
    vg = np.array([ix(q, r) for q, r, _ in val_grades], dtype=np.int64)
    feature_started = time.time()
    features, computed = _features(items, store, model, tokenizer, spec, args.batch_size)
    feature_seconds = time.time() - feature_started

    # ------------------------------------------------------------------ heads, selected on validation
    grades_train = np.array([s for *_, s in train_grades])
    grades_val = np.array([s for *_, s in val_grades])
    runs = []
    for l2 in args.l2:
        for weight in args.grade_weight:
            head = train_reward_head(
                features[:trained], tp, tt, graded=tg, grades=grades_train, grade_weight=weight, l2=l2, spec=spec
            )
            rewards = head.reward(features)
            figures = {
                "l2": l2,
                "grade_weight": weight,
                "train_within_question_accuracy": within_question_accuracy(rewards, tp, tt),
                "validation_within_question_accuracy": within_question_accuracy(rewards, vp, vt),
                "validation_grade_pearson": float(pearsonr(head.score(rewards[vg]), grades_val)[0])
                if len(vg) > 2
                else float("nan"),
            }
            runs.append((figures, head))
            print(json.dumps(figures), flush=True)
    figures, head = max(runs, key=lambda run: (run[0]["validation_within_question_accuracy"], -run[0]["l2"]))

    # ------------------------------------------------------------------ tie band from the judge's own ties
    # Only the validation pairs with a hard verdict (win / tie / loss) say what a tie is; derived pairs of two
    # responses that both lost clearly to the reference sit at 0.5 without being ties.
    rewards = head.reward(features)
    direct_ix = vp[len(val_derived) :]
    diffs = rewards[direct_ix[:, 0]] - rewards[direct_ix[:, 1]]
    targets = vt[len(val_derived) :]
    gold = np.where(targets == 0.5, 2, np.where(targets < 0.5, 0, 1))
    best_tau, best_acc = 0.0, -1.0
    for tau in np.linspace(0, 3, 61):
        p1 = 1 / (1 + np.exp(-(diffs - tau)))
        p2 = 1 / (1 + np.exp(-(-diffs - tau)))
        acc = float(np.mean(np.argmax(np.stack([p1, p2, 1 - p1 - p2], 1), 1) == gold)) if len(gold) else 0.0
        if acc > best_acc:
            best_tau, best_acc = float(tau), acc
    head.tie_band = best_tau
    figures.update(
        {"tie_band": best_tau, "validation_three_way_accuracy": best_acc, "validation_three_way_pairs": len(gold)}
    )

    # ------------------------------------------------------------------ save
    usage = resource.getrusage(resource.RUSAGE_SELF)
    head.info = {
        "id": f"smollm2-135m-critic@{time.strftime('%Y-%m-%d')}",
        "figures": figures,
        "data": {"train_pairs": len(train_pairs), "validation_pairs": len(val_pairs), "train_grades": len(tg)},
        "responses_encoded": len(items),
        "responses_encoded_in_this_run": computed,  # the rest came from the feature cache
        "feature_seconds": round(feature_seconds, 1),
        "feature_responses_per_hour": round(computed / feature_seconds * 3600) if computed else None,
        "wall_seconds": round(time.time() - started, 1),
        "examples_per_hour": round(len(train_pairs) / max(time.time() - started, 1e-9) * 3600),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "cpu_flags": [f for f, on in flags.items() if on],
        "dtype": dtype,
        "command": " ".join(["python", "recipes/smollm2-135m/train_head.py", *(argv or sys.argv[1:])]),
    }
    out = head.save(args.output)
    print(json.dumps({k: v for k, v in head.info.items() if k != "command"}, indent=1))
    print(f"head written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
