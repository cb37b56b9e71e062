"""Report critics' held-out figures on either half, beside "the longer answer wins" (hf_critic.meta_eval.halves).

Usage:

python scripts/smollm2-135m/report_halves.py outputs/test/shipped outputs/test/untrained

It makes no choice (select_critic.py does, on dev folders only): it prints each folder's half, figures and the mean
margin over length, in the order given (a `--verdict both` folder twice: its run's verdict, then its written
critiques' parsed verdict as FOLDER [text]). exit status: 0 done; 2 a missing critique file or half.txt.
"""

import argparse
import sys
from pathlib import Path

from hf_critic.io import RecordError
from hf_critic.meta_eval.halves import FIGURES, candidates, dev_score, half_of


def main(argv=None) -> int:
    """Print one Markdown row per folder; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", metavar="FOLDER", help="a critic's critique folder (half.txt inside)")
    folders = parser.parse_args(sys.argv[1:] if argv is None else argv).folders
    names = [name for name, _, _ in FIGURES]
    print("| critic | half | mean margin over length | " + " | ".join(names) + " |")
    print("|---|---|---:|" + "---:|" * len(names))
    try:
        for folder in folders:
            for name, figures in candidates(folder):
                cells = [
                    f"{figures[n]['critic']:.1f} ({figures[n]['length']:.1f}, n={figures[n]['n']})" for n in names
                ]
                shown = str(Path(folder).parent / name)  # the folder as given, with " [text]" for written critiques
                print(f"| {shown} | {half_of(folder)} | {dev_score(figures):+.2f} | " + " | ".join(cells) + " |")
    except RecordError as err:
        print(f"report_halves.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
