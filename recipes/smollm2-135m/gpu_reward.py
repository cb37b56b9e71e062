"""Train the reward critic on one GPU in minutes (issue 40 item 6): LoRA on every layer, 1,024 tokens, all pairs,
several configurations side by side, each judged on the dev and test halves.

It runs where only torch, transformers and PEFT are installed (no TRL, no datasets): the bundle that
``gpu_bundle.py pack`` writes holds the base model (the embedded SmolLM2-135M-Instruct GGUF, in parts), its tokenizer,
hf-critic's sources (the input cut of :func:`hf_critic.critics.reward.fit_ids`, the calibration fits, and the losses of
:mod:`hf_critic.training.against_length`, imported from its file so TRL is never needed), the training pairs as text
and the held-out rows. The loss is the recipe's: Bradley-Terry (or soft labels) plus TRL's reward centring, ODIN's
losses with ``odin``; AdamW, cosine schedule with 5% warm-up (over the planned steps or the time budget, whichever ends first, so a
run cut by its budget still anneals), gradient clipping at 1.0, bfloat16 autocast.

Usage (on the GPU machine; gpu_bundle.py unpack reads what it writes):

python gpu_reward.py --bundle BUNDLE --out $OUT --configs plain,odin,balanced_soft --epochs 2 --budget-s 330

Per configuration it writes ``OUT/NAME.tar.gz``: the PEFT adapter (bfloat16 tensors, the quality head alone), its
``hf_critic_reward.json`` (tie band on 400 validation pairs, pointwise map on the 77 validation grades) and
``rewards.json`` (every held-out row's reward(s), in the bundle's row order).
"""

import argparse
import gzip
import importlib.util
import json
import lzma
import math
import os
import shutil
import subprocess
import sys
import tarfile
import time
from multiprocessing import Pool
from pathlib import Path

#: configuration -> recipe options (recipes/reward.py's names)
CONFIGS = {
    "plain": {},
    "odin": {"length_head": True},
    "balanced": {"length_balance": True},
    "soft": {"soft_labels": True},
    "balanced_soft": {"length_balance": True, "soft_labels": True},
    "odin_balanced_soft": {"length_head": True, "length_balance": True, "soft_labels": True},
}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
DEVICE = "cuda" if os.environ.get("GPU_REWARD_DEVICE", "cuda") == "cuda" else "cpu"  # cpu: the script's own check


def _read_pairs(path: Path) -> list[dict]:
    """gpu_bundle.py's training pairs (texts stored once) as rows of text."""
    with lzma.open(path, "rt", encoding="utf-8") as handle:
        blob = json.load(handle)
    texts = blob["texts"]
    return [
        {k: (texts[v] if k in ("question", "chosen", "rejected") else v) for k, v in r.items()} for r in blob["pairs"]
    ]


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _against_length(bundle: Path):
    """hf_critic.training.against_length loaded from its file (its package's __init__ imports TRL)."""
    path = bundle / "src" / "hf_critic" / "training" / "against_length.py"
    spec = importlib.util.spec_from_file_location("against_length", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_base(bundle: Path, work: Path) -> Path:
    """The base model folder: the GGUF parts joined and converted as hf-critic converts it (transformers' GGUF
    loader de-quantises Q4_1 / Q8_0 to float32), with the bundle's tokenizer files."""
    target = work / "base"
    if (target / "model.safetensors").is_file():
        return target
    from transformers import AutoModelForCausalLM

    parts = sorted(p for d in (bundle, Path("/tmp/stage")) if d.is_dir() for p in d.rglob("model.gguf.part*"))
    names = sorted({p.name for p in parts})
    if len(names) < 2:
        raise FileNotFoundError(f"GGUF parts missing: found {names} (part a travels in the first call)")
    gguf = work / "model.gguf"
    with open(gguf, "wb") as out:
        for name in names:
            out.write(next(p for p in parts if p.name == name).read_bytes())
    model = AutoModelForCausalLM.from_pretrained(work, gguf_file=gguf.name)
    model.hf_quantizer = None
    model.save_pretrained(target)
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(bundle / "base" / name, target / name)
    with gzip.open(bundle / "base" / "tokenizer.json.gz", "rb") as handle:
        (target / "tokenizer.json").write_bytes(handle.read())
    return target


_TOKENIZER = None


def _init(base: str):
    global _TOKENIZER
    from transformers import AutoTokenizer

    _TOKENIZER = AutoTokenizer.from_pretrained(base)


def _encode(job):
    from hf_critic.critics.reward import fit_ids

    question, response, limit = job
    return fit_ids(_TOKENIZER, question, response, limit, "middle")[0]


def tokenize(
    bundle: Path, base: Path, max_length: int, work: Path, limit: int | None = None, train_too: bool = True
) -> Path:
    """Every training / validation response and held-out row, cut as the critic cuts, in one pickled file;
    ``limit``: the first N rows of each file only (the script's CPU check); ``train_too=False``: no training pairs
    (an adapter judged, not trained)."""
    import torch

    out = work / f"tokens_{max_length}_{limit}_{train_too}.pt"
    if out.is_file():
        return out
    data = bundle / "data"
    train = _read_pairs(data / "train.json.xz")[:limit] if train_too else []
    validation = _read(data / "validation.jsonl.gz")[:limit]
    heldout = {p.name.split(".")[0]: _read(p) for p in sorted((data / "heldout").glob("*.jsonl.gz"))}
    grades = _read(data / "grades.jsonl.gz")[:limit]
    heldout = {key: rows[:limit] for key, rows in heldout.items()}
    jobs = [(r["question"], r[k], max_length) for r in train for k in ("chosen", "rejected")]
    jobs += [(r["question"], r[k], max_length) for r in validation for k in ("response_1", "response_2")]
    jobs += [(r["question"], r["response"], max_length) for r in grades]
    for rows in heldout.values():
        jobs += [
            (r["question"], r[k], max_length) for r in rows for k in ("response_1", "response_2", "response") if k in r
        ]
    with Pool(max(1, (os.cpu_count() or 2) - 2), initializer=_init, initargs=(str(base),)) as pool:
        ids = pool.map(_encode, jobs, chunksize=64)
    torch.save({"ids": ids, "train": train, "validation": validation, "grades": grades, "heldout": heldout}, out)
    return out


def _batches(order, lengths, batch: int, rng):
    """Batches of ``batch`` indices, bucketed by length (sorted within chunks of 50 batches) to cut padding."""
    chunk = batch * 50
    out = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
        out += [part[j : j + batch] for j in range(0, len(part), batch)]
    rng.shuffle(out)
    return out


def _pad(seqs, pad: int, device):
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, s in enumerate(seqs):
        ids[row, : len(s)] = torch.tensor(s)
        mask[row, : len(s)] = 1
    return ids.to(device), mask.to(device)


def rewards_of(model, seqs, pad: int, batch: int = 64) -> list[float]:
    """The quality reward (logit 0) of every sequence, longest first in batches; in the input order."""
    import torch

    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    out = [0.0] * len(seqs)
    model.eval()
    with torch.no_grad(), torch.autocast(DEVICE, dtype=torch.bfloat16):
        for start in range(0, len(order), batch):
            part = order[start : start + batch]
            ids, mask = _pad([seqs[i] for i in part], pad, DEVICE)
            logits = model(input_ids=ids, attention_mask=mask).logits.float()
            for row, i in enumerate(part):
                out[i] = float(logits[row, 0])
    model.train()
    return out


def _model(base: Path, heads: int, rank: int):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=heads, dtype=torch.float32)
    model.config.pad_token_id = pad
    lora = LoraConfig(task_type="SEQ_CLS", r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=TARGETS)
    return get_peft_model(model, lora).to(DEVICE), pad


def train_one(name: str, args) -> dict:
    """Train configuration ``name`` until its epochs or the time budget end; returns its log."""
    import numpy as np
    import torch

    bundle = Path(args.bundle)
    options, odin = CONFIGS[name], CONFIGS[name].get("length_head", False)
    al = _against_length(bundle)
    torch.manual_seed(args.seed)
    data = torch.load(Path(args.tokens), weights_only=False)
    ids, train = data["ids"], data["train"]
    n = len(train)
    chosen_ids, rejected_ids = ids[0 : 2 * n : 2], ids[1 : 2 * n : 2]
    c_len = np.array([r["chosen_length"] for r in train])
    r_len = np.array([r["rejected_length"] for r in train])
    prob = np.array([r["chosen_probability"] for r in train], dtype=np.float32)
    index = np.arange(n)
    if options.get("length_balance"):
        index = al.length_balanced_index(c_len, r_len, seed=args.seed)
    model, pad = _model(Path(args.base), 2 if odin else 1, args.lora_r)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)
    steps_per_epoch = math.ceil(len(index) / args.batch_pairs)
    total = steps_per_epoch * args.epochs
    warmup = max(1, int(0.05 * total))
    start = time.time()

    def progress(s: int) -> float:  # of the run: its steps or its time budget, whichever ends first
        return min(1.0, max(s / total, (time.time() - start) / args.budget_s))

    schedule = lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * progress(s)))  # noqa: E731
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    head = next(h for h in al.score_heads(model) if h.weight.requires_grad)
    rng, step, log = np.random.default_rng(args.seed), 0, {"config": name, "options": options}
    pair_len = [max(len(chosen_ids[i]), len(rejected_ids[i])) for i in range(n)]
    for epoch in range(args.epochs):
        for batch in _batches(list(index), pair_len, args.batch_pairs, rng):
            if time.time() - start > args.budget_s:
                break
            ids_, mask = _pad([chosen_ids[i] for i in batch] + [rejected_ids[i] for i in batch], pad, DEVICE)
            with torch.autocast(DEVICE, dtype=torch.bfloat16):
                rewards = model(input_ids=ids_, attention_mask=mask).logits.float()
            chosen, rejected = rewards.sum(-1).chunk(2)
            p = torch.tensor(prob[batch], device=DEVICE) if options.get("soft_labels") else None
            loss = al.preference_loss(chosen - rejected, p) + 0.01 * torch.mean((chosen + rejected) ** 2)
            if odin:
                lengths = torch.tensor(np.concatenate([c_len[batch], r_len[batch]]), device=DEVICE)
                extra, _ = al.disentangled_loss(
                    rewards, lengths, head.weight.float(), correlation_weight=1.0, orthogonality_weight=1.0
                )
                loss = loss + extra
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step(), scheduler.step(), optimizer.zero_grad(set_to_none=True)
            step += 1
            if step % 100 == 0:
                print(
                    f"[{name}] epoch {epoch} step {step}/{total} loss {loss.item():.4f} {time.time() - start:.0f}s",
                    flush=True,
                )
        log.setdefault("epochs", []).append(
            {
                "epoch": epoch,
                "step": step,
                "seconds": round(time.time() - start, 1),
                "validation_accuracy": _validation(model, data, pad),
            }
        )
        print(f"[{name}] {log['epochs'][-1]}", flush=True)
        if time.time() - start > args.budget_s:
            break
    log.update(steps=step, pairs_seen=step * args.batch_pairs, train_seconds=round(time.time() - start, 1))
    log["pairs_per_hour"] = round(log["pairs_seen"] / max(log["train_seconds"], 1) * 3600)
    al.keep_quality_head(model)
    return _save(name, model, data, pad, args, log)


def evaluate_one(name: str, adapter: Path, args) -> dict:
    """An existing reward adapter (the shipped critic) on the same rows, at the context of its calibration."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from hf_critic.critics.reward import RewardCalibration

    tokenizer = AutoTokenizer.from_pretrained(args.base)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model = AutoModelForSequenceClassification.from_pretrained(args.base, num_labels=1, dtype=torch.float32)
    model.config.pad_token_id = pad
    model = PeftModel.from_pretrained(model, adapter).to(DEVICE)
    data = torch.load(Path(args.tokens), weights_only=False)
    heldout, at = {}, 2 * len(data["train"]) + 2 * len(data["validation"]) + len(data["grades"])
    for key, part in data["heldout"].items():
        width = sum(1 for k in ("response_1", "response_2", "response") if k in part[0])
        heldout[key] = rewards_of(model, data["ids"][at : at + width * len(part)], pad)
        at += width * len(part)
    folder = Path(args.work) / name
    shutil.copytree(adapter, folder, dirs_exist_ok=True)
    RewardCalibration.load(adapter).save(folder)
    (folder / "rewards.json").write_text(json.dumps(heldout))
    with tarfile.open(Path(args.out) / f"{name}.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname=name)
    print(f"[{name}] evaluated {adapter}", flush=True)
    return {"config": name, "evaluated": str(adapter)}


def _validation(model, data, pad: int) -> float:
    """Within-question accuracy of the quality reward on the validation pairs with a winner (ties half)."""
    n, rows = len(data["train"]), data["validation"]
    ids = data["ids"][2 * n : 2 * n + 2 * len(rows)]
    rewards = rewards_of(model, ids, pad)
    right = [
        (0.5 if a == b else float((a > b) == (r["label"] == 0)))
        for r, a, b in zip(rows, rewards[0::2], rewards[1::2], strict=True)
        if r["label"] in (0, 1)
    ]
    return round(sum(right) / len(right), 4)


def _save(name: str, model, data, pad: int, args, log: dict) -> dict:
    """Adapter (bfloat16), calibration and held-out rewards of one configuration, as OUT/NAME.tar.gz."""
    import numpy as np
    import torch
    from safetensors.torch import load_file, save_file

    from hf_critic.critics.reward import fit_calibration, fit_tie_margin

    n, rows = len(data["train"]), data["validation"]
    ids = data["ids"]
    at = 2 * n
    validation = rewards_of(model, ids[at : at + 2 * len(rows)], pad)
    at += 2 * len(rows)
    grades = rewards_of(model, ids[at : at + len(data["grades"])], pad)
    at += len(data["grades"])
    heldout = {}
    for key, part in data["heldout"].items():
        width = sum(1 for k in ("response_1", "response_2", "response") if k in part[0])
        heldout[key] = rewards_of(model, ids[at : at + width * len(part)], pad)
        at += width * len(part)
    tau = fit_tie_margin(np.array(validation[0::2]) - np.array(validation[1::2]), np.array([r["label"] for r in rows]))
    calibration = fit_calibration(
        np.array(grades),
        np.array([r["score"] for r in data["grades"]], dtype=float),
        (1.0, 10.0),
        tie_margin=tau,
        max_length=args.max_length,
        source="Auto-J validation grades (GPU run)",
    )
    folder = Path(args.work) / name
    model.save_pretrained(folder)
    weights = folder / "adapter_model.safetensors"
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in load_file(weights).items()}, weights)
    config = json.loads((folder / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "smollm2-135m-instruct"
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    calibration.save(folder)
    (folder / "rewards.json").write_text(json.dumps(heldout))
    (folder / "training_log.json").write_text(json.dumps(log, indent=2))
    with tarfile.open(Path(args.out) / f"{name}.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname=name)
    print(f"[{name}] saved: {json.dumps(log)}", flush=True)
    return log


def main(argv=None) -> int:
    """Prepare (base, tokens) once, then train every configuration in its own process on the one GPU."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", default="/tmp/gpu_reward")
    parser.add_argument("--configs", default="plain,odin,balanced_soft")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--tokens", help=argparse.SUPPRESS)
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-pairs", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--budget-s", type=float, default=330, help="training seconds per configuration")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--evaluate",
        action="append",
        default=[],
        metavar="NAME=ADAPTER@MAX_LENGTH",
        help="also judge an existing adapter (e.g. the shipped critic) on the held-out rows",
    )
    parser.add_argument("--limit-pairs", type=int, help="the first N rows of every file only (the script's CPU check)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(args.bundle) / "src"))
    if args.one:
        name, _, adapter = args.one.partition("=")
        evaluate_one(name, Path(adapter), args) if adapter else train_one(name, args)
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    base = build_base(Path(args.bundle), work)
    tokens = tokenize(Path(args.bundle), base, args.max_length, work, args.limit_pairs)
    print(f"base and tokens ready in {time.time() - t0:.0f}s", flush=True)
    names = [c for c in args.configs.split(",") if c]
    unknown = set(names) - set(CONFIGS)
    if unknown:
        raise SystemExit(f"unknown configuration(s) {sorted(unknown)}; known: {sorted(CONFIGS)}")
    rest = list(argv if argv is not None else sys.argv[1:])
    jobs = [(name, tokens) for name in names]
    for spec in args.evaluate:  # the adapter's own context: its inputs cut as it was trained
        target, _, length = spec.partition("@")
        jobs.append((target, tokenize(Path(args.bundle), base, int(length or 256), work, args.limit_pairs, False)))
    procs = [
        subprocess.Popen([sys.executable, __file__, *rest, "--one", job, "--base", str(base), "--tokens", str(tok)])
        for job, tok in jobs
    ]
    return max(p.wait() for p in procs)


if __name__ == "__main__":
    sys.exit(main())
