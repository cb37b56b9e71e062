"""Choose a critic on the dev halves: every candidate's figures beside "the longer answer wins" and the declared dev
score (the mean of the figures' margins over length, hf_critic.meta_eval.halves.dev_score), best first.

Usage:

python scripts/smollm2-135m/select_critic.py outputs/dev/shipped outputs/dev/untrained outputs/dev/odin ...

Each FOLDER is the output of `bash scripts/smollm2-135m/evaluate_heldout.sh MODEL FOLDER dev`. This is the one
choice-making script of the protocol: it reads dev folders only and refuses any other (a test half, or a run on the
whole benchmarks), so no choice can see a test half. A folder judged with `--verdict both` gives two candidates:
its run's verdict (the probability read-out) and its written critiques' parsed verdict (NAME [text]).
`--json FILE` also writes the table.

exit status: 0 done (the winner is the first row); 2 a folder that is not a dev half, or a missing critique file.
"""

import argparse
import json
import sys
from pathlib import Path

from hf_critic.io import RecordError
from hf_critic.meta_eval.halves import FIGURES, candidates, dev_score, half_of, training_facts


def dev_table(folders: list[str]) -> list[dict]:
    """``[{"critic", "dev_score", figure: {...}, "training"}]`` for dev folders, one row per verdict a folder holds
    (:func:`~hf_critic.meta_eval.halves.candidates`; the text verdict's named ``NAME [text]``), best dev score first.

    Raises:
        RecordError: a folder that is not a dev half (``half.txt``), or a missing critique file.
    """
    rows = []
    for folder in folders:
        half = half_of(folder)
        if half != "dev":
            raise RecordError(f"{folder}: a {half} half; choices are made on dev halves only")
        training = training_facts(folder)
        for name, figures in candidates(folder):
            rows.append({"critic": name, "dev_score": dev_score(figures), **figures, "training": training})
    return sorted(rows, key=lambda r: -r["dev_score"] if r["dev_score"] == r["dev_score"] else float("inf"))


def main(argv=None) -> int:
    """Print the dev table (Markdown), best first; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("folders", nargs="+", metavar="FOLDER", help="evaluate_heldout.sh output folders (dev)")
    parser.add_argument("--json", help="also write the table here")
    args = parser.parse_args(argv)
    try:
        rows = dev_table(args.folders)
    except RecordError as err:
        print(f"select_critic.py: error: {err}", file=sys.stderr)
        return 2
    names = [name for name, _, _ in FIGURES]
    print("| critic | dev score | " + " | ".join(names) + " | trained on | training wall | per hour |")
    print("|---|---:|" + "---:|" * (len(names) + 3))
    for row in rows:
        cells = [f"{row[n]['critic']:.1f} ({row[n]['length']:.1f}, n={row[n]['n']})" for n in names]
        cost = row["training"]
        cells += (
            [f"{cost['seen']:,}", f"{cost['wall_s'] / 60:.0f} min", f"{cost['per_hour']:,.0f}"]
            if cost
            else ["", "", ""]
        )
        print(f"| {row['critic']} | {row['dev_score']:+.2f} | " + " | ".join(cells) + " |")
    print(
        f"chosen on dev: {rows[0]['critic']} (dev score {rows[0]['dev_score']:+.2f}; cells: critic (longer wins, n); "
        "trained on: examples or pairs, from the model folder's trainer_state.json)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
