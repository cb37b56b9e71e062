"""The dev / test halves of the held-out benchmarks (hf_critic.meta_eval.halves).

Usage:

# once: split every benchmark by question (seed 0) and commit the id files (scripts/smollm2-135m/splits/*.json)
python scripts/smollm2-135m/heldout_halves.py make --data-dir ../shared/data
# write a half in the benchmarks' own formats (evaluate_heldout.sh MODEL OUT dev|test does this itself)
python scripts/smollm2-135m/heldout_halves.py write dev --data-dir ../shared/data --output-dir outputs/heldout_halves/dev

exit status: 0 done; 2 bad data or a split file that is missing or broken.
"""

import argparse
import os
import sys
from pathlib import Path

from hf_critic.io import RecordError
from hf_critic.meta_eval.halves import HALVES, load_split, make_split
from hf_critic.reports.heldout_halves import save_split, write_half

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
SPLITS = HERE / "splits"


def main(argv=None) -> int:
    """Make the split (``make``) or write one half (``write dev|test``); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    default_data = os.environ.get("HF_CRITIC_SHARED_DATA", str(REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("action", choices=["make", "write"])
    parser.add_argument("half", nargs="?", choices=HALVES, help="write: the half to write")
    parser.add_argument("--data-dir", default=default_data, help="real-data folder (default: %(default)s)")
    parser.add_argument("--splits", default=str(SPLITS), help="the id files' folder (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="make: the split's seed (default: 0)")
    parser.add_argument("--output-dir", help="write: where the half goes (default: outputs/heldout_halves/HALF)")
    args = parser.parse_args(argv)
    try:
        if args.action == "make":
            for path in save_split(make_split(args.data_dir, seed=args.seed), args.splits):
                print(f"wrote {path}")
            return 0
        if args.half is None:
            parser.error("write needs the half: dev or test")
        out = args.output_dir or f"outputs/heldout_halves/{args.half}"
        counts = write_half(args.data_dir, load_split(args.splits), args.half, out)
    except (RecordError, ValueError, FileNotFoundError) as err:
        print(f"heldout_halves.py: error: {err}", file=sys.stderr)
        return 2
    print(f"{args.half} half in {out}: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
