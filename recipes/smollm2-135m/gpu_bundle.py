"""Pack what gpu_reward.py needs on a GPU machine, and unpack what it brings back (issue 40 item 6).

Usage:

# 1. pack: two folders under 64 MiB each (the GGUF base does not fit in one): part a, then part b with the rest
python recipes/smollm2-135m/gpu_bundle.py pack --data-dir ../shared/data --output-dir .gpu40
# 2. on the GPU machine, in two calls: the first carries .gpu40/a (copied to /tmp/stage), the second .gpu40/b and runs
#    python .gpu40/b/gpu_reward.py --bundle .gpu40/b --out $OUT
# 3. unpack: adapters to outputs/gpu_runs/NAME, their held-out critique files to outputs/{dev,test}/gpu_NAME (with
#    half.txt, for select_critic.py and the report)
python recipes/smollm2-135m/gpu_bundle.py unpack RESULT_DIR

The training pairs are recipes/reward.py's (outputs/judgment_data, pairwise_preference: ties and swapped copies
dropped, shuffled with seed 0), the validation pairs its 200, the grades its pointwise-map grades, the held-out rows
each half's (HHH, Eval-P 200 sampled with seed 0 as `--sample 200` does, MT-Bench and Vicuna-Bench turn 1).

exit status: 0 done; 2 missing inputs.
"""

import argparse
import gzip
import json
import lzma
import os
import shutil
import sys
import tarfile
from pathlib import Path

from hf_critic.backends.models import default_gguf_file, default_model_dir
from hf_critic.core.labels import RESPONSE_1_WINS, RESPONSE_2_WINS
from hf_critic.critics.reward import RewardCalibration, pairwise_verdict
from hf_critic.loaders import load_benchmark
from hf_critic.meta_eval.halves import BENCHMARKS, HALF_FILE, HALVES

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
PART_A_BYTES = 50 * 2**20
#: critique file of evaluate_heldout.sh -> benchmark of the halves
FILES = {"hhh": "hhh", "autoj": "autoj_eval_p", "mt_bench": "mt_bench", "vicuna_bench": "vicuna_bench"}


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _write_pairs(path: Path, pairs: list[dict]) -> None:
    """The training pairs with their texts stored once (AlpacaEval's baseline answers repeat across generators):
    ``{"texts": [...], "pairs": [{"question": i, "chosen": j, "rejected": k, ...}]}``, xz-compressed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    texts: dict[str, int] = {}
    rows = [{k: (texts.setdefault(v, len(texts)) if isinstance(v, str) else v) for k, v in r.items()} for r in pairs]
    with lzma.open(path, "wt", encoding="utf-8") as handle:
        json.dump({"texts": list(texts), "pairs": rows}, handle, ensure_ascii=False)


def heldout_rows(half: str, file: str) -> list[dict]:
    """A half's rows as evaluate_heldout.sh judges them (written by heldout_halves.py to outputs/heldout_halves)."""
    fmt, rel = BENCHMARKS[FILES[file]]
    rows = load_benchmark(fmt, REPO_ROOT / "outputs" / "heldout_halves" / half / rel)
    if file == "autoj":
        rows = rows.shuffle(seed=0).select(range(min(200, len(rows))))
    return rows.to_list()


def _training_rows() -> tuple[list[dict], list[dict]]:
    from hf_critic.training.reward import RewardScriptArguments, load_pairs

    script = RewardScriptArguments(max_eval_pairs=200)
    data = load_pairs(script, seed=0)
    train = []
    for r in data["train"]:
        if r["label"] not in (RESPONSE_1_WINS, RESPONSE_2_WINS) or r.get("swapped"):
            continue
        first = r["label"] == RESPONSE_1_WINS
        chosen, rejected = (r["response_1"], r["response_2"]) if first else (r["response_2"], r["response_1"])
        pref = r.get("preference")
        probability = 1.0 if pref is None else (1.0 - pref if first else pref)
        train.append(
            {
                "question": r["question"],
                "chosen": chosen,
                "rejected": rejected,
                "chosen_length": len(chosen),
                "rejected_length": len(rejected),
                "chosen_probability": float(probability),
            }
        )
    validation = [{k: r[k] for k in ("question", "response_1", "response_2", "label")} for r in data["validation"]]
    return train, validation


def pack(output_dir: Path) -> None:
    """Write ``output_dir/a`` (the GGUF's first 50 MiB) and ``output_dir/b`` (the rest of it, the tokenizer, the
    sources, the script, the gguf wheel if one is in ``/tmp/w40/whl``, the data)."""
    a, b = output_dir / "a", output_dir / "b"
    shutil.rmtree(output_dir, ignore_errors=True)
    a.mkdir(parents=True), (b / "base").mkdir(parents=True)
    blob = default_gguf_file().read_bytes()
    (a / "model.gguf.part_a").write_bytes(blob[:PART_A_BYTES])
    (b / "model.gguf.part_b").write_bytes(blob[PART_A_BYTES:])
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(default_model_dir() / name, b / "base" / name)
    with gzip.open(b / "base" / "tokenizer.json.gz", "wb") as handle:
        handle.write((default_model_dir() / "tokenizer.json").read_bytes())
    shutil.copytree(
        REPO_ROOT / "src" / "hf_critic",
        b / "src" / "hf_critic",
        ignore=shutil.ignore_patterns("critics", "__pycache__"),
    )
    shutil.copy(HERE / "gpu_reward.py", b / "gpu_reward.py")
    wheels = Path(os.environ.get("GPU_BUNDLE_WHEELS", "/tmp/w40/whl"))
    for wheel in sorted(wheels.glob("*.whl")) if wheels.is_dir() else []:
        (b / "whl").mkdir(exist_ok=True)
        shutil.copy(wheel, b / "whl" / wheel.name)
    train, validation = _training_rows()
    _write_pairs(b / "data" / "train.json.xz", train)
    _write(b / "data" / "validation.jsonl.gz", validation)
    grades = REPO_ROOT / "outputs" / "judgment_data" / "validation_pointwise_reference_free.jsonl"
    _write(
        b / "data" / "grades.jsonl.gz",
        [
            {k: r[k] for k in ("question", "response", "score")}
            for r in map(json.loads, grades.read_text(encoding="utf-8").splitlines())
        ],
    )
    for half in HALVES:
        for file in FILES:
            rows = heldout_rows(half, file)
            keep = [k for k in ("question", "response_1", "response_2", "response") if k in rows[0]]
            _write(b / "data" / "heldout" / f"{half}_{file}.jsonl.gz", [{k: r[k] for k in keep} for r in rows])
    for part in (a, b):
        size = sum(p.stat().st_size for p in part.rglob("*") if p.is_file())
        print(f"{part}: {size / 2**20:.1f} MiB")
    print(f"train pairs {len(train)}, validation pairs {len(validation)}")


def unpack(result_dir: Path) -> None:
    """Each ``NAME.tar.gz`` to ``outputs/gpu_runs/NAME`` and its held-out critique files to
    ``outputs/{dev,test}/gpu_NAME`` (pairwise: the reward verdict with the fitted tie band; graded: the pointwise
    map's score), as ``hf-critic compare|grade`` would write them."""
    for archive in sorted(result_dir.glob("*.tar.gz")):
        with tarfile.open(archive) as tar:
            tar.extractall(REPO_ROOT / "outputs" / "gpu_runs", filter="data")
        name = archive.name.removesuffix(".tar.gz")
        folder = REPO_ROOT / "outputs" / "gpu_runs" / name
        calibration = RewardCalibration.load(folder)
        rewards = json.loads((folder / "rewards.json").read_text())
        for half in HALVES:
            out = REPO_ROOT / "outputs" / half / f"gpu_{name}"
            out.mkdir(parents=True, exist_ok=True)
            for file in FILES:
                rows, values = heldout_rows(half, file), rewards[f"{half}_{file}"]
                if "response" in rows[0]:
                    for row, value in zip(rows, values, strict=True):
                        row.update(critique_reward=value, critique_score=calibration.score(value, (1.0, 10.0)))
                else:
                    for row, r1, r2 in zip(rows, values[0::2], values[1::2], strict=True):
                        row.update(critique_label=pairwise_verdict(r1, r2, calibration.tie_margin)[0])
                (out / f"{file}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            graded = [(out / f).read_text() for f in ("mt_bench.jsonl", "vicuna_bench.jsonl")]
            (out / "mt_vicuna.jsonl").write_text("".join(graded))
            (out / HALF_FILE).write_text(half + "\n")
        print(f"{name}: {folder}, outputs/dev/gpu_{name}, outputs/test/gpu_{name}")


def main(argv=None) -> int:
    """``pack`` or ``unpack``; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("action", choices=["pack", "unpack"])
    parser.add_argument("path", nargs="?", help="unpack: the folder of NAME.tar.gz files")
    parser.add_argument("--output-dir", default=".gpu40", help="pack: where parts a and b go")
    args = parser.parse_args(argv)
    try:
        if args.action == "pack":
            pack(Path(args.output_dir))
        else:
            unpack(Path(args.path))
    except (FileNotFoundError, KeyError) as err:
        print(f"gpu_bundle.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
