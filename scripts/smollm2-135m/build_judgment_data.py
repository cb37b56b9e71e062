# Copyright 2024 The hf-critic Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""
Build critic training data from published judgments (AlpacaEval GPT-4-turbo, Auto-J GPT-4; see hf_critic.judgments),
decontaminated against the evaluation benchmarks and split by question into train / validation.

Usage:

python scripts/smollm2-135m/build_judgment_data.py --data-dir ../shared/data --output-dir outputs/judgment_data

Without --exclude, every example whose question is in a held-out benchmark is dropped: Auto-J Eval-P
(autoj/test/testdata_pairwise.jsonl), HHH (prometheus/hhh_alignment_eval.json), MT-Bench and Vicuna-Bench
(selfeval/mt_bench, selfeval/vicuna_bench; every turn) and the demo examples (examples/*.jsonl). --exclude
[NAME=]FORMAT:PATH ... replaces that list (FORMAT: a `hf-critic meta-eval` format, or `questions` for any file with
a question column); --exclude with no value decontaminates against nothing.

Writes <output-dir>/<config>/ (save_to_disk DatasetDicts with train / validation: pointwise_reference_free,
pairwise_reference_free, pairwise_preference), <output-dir>/hub/ (parquet per config and split, and the dataset card
README.md), <output-dir>/build_report.json and <output-dir>/validation_{pointwise,pairwise}_reference_free.jsonl.
Keep the output out of version control (outputs/ is git-ignored): AlpacaEval's data is CC BY-NC 4.0 and Auto-J's
states no licence.

exit status: 0 done; 2 bad arguments or data (--validation-fraction outside (0, 1), nothing kept, a config with an
empty train or validation split), an existing output without --overwrite, or a --push-to-hub that could not be done
(the data is saved first: push the hub/ folder later).
"""

import argparse
import os
import sys
from pathlib import Path

from hf_critic.core.errors import command_line_message
from hf_critic.io import OutputError, RecordError, check_output_dir
from hf_critic.judgments import (
    PUBLISHED_SOURCES,
    build_published_judgment_data,
    heldout_excludes,
    published_outputs,
    push_published_judgment_data,
    render_published_card,
    save_published_judgment_data,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _empty(configs, report) -> str | None:
    """What is empty, in words: no example kept, or a config's train or validation split; None when nothing is."""
    if not configs:
        kept = "; ".join(f"{source}: read {s['read']}, kept {s['kept']}" for source, s in report.sources.items())
        return f"no example kept ({kept})"
    for config, parts in configs.items():
        for split, rows in parts.items():
            if not len(rows):
                sizes = ", ".join(f"{name} {len(part)}" for name, part in parts.items())
                return f"config {config}: split {split!r} is empty ({sizes}); change --validation-fraction or add data"
    return None


def main(argv=None) -> int:
    """Build, save and (optionally) push; print per-source counts, decontamination counts and split sizes.

    Returns:
        The exit status (0, or 2 for bad input or a push that could not be done).
    """
    parser = argparse.ArgumentParser(
        description=__doc__.strip().split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_data = os.environ.get("HF_CRITIC_SHARED_DATA", str(REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--data-dir", default=default_data, help=f"real-data folder (default: {default_data})")
    parser.add_argument("--output-dir", default="outputs/judgment_data", help="where to write (default: %(default)s)")
    parser.add_argument(
        "--exclude",
        nargs="*",
        metavar="[NAME=]FORMAT:PATH",
        help="benchmarks whose questions are removed (default: Eval-P, HHH, MT-Bench, Vicuna-Bench, examples/*.jsonl)",
    )
    parser.add_argument("--sources", nargs="+", default=list(PUBLISHED_SOURCES), choices=list(PUBLISHED_SOURCES))
    parser.add_argument("--validation-fraction", type=float, default=0.1, help="share of questions for validation")
    parser.add_argument("--seed", type=int, default=0, help="question split seed")
    parser.add_argument("--no-swap", action="store_true", help="do not add the swapped order of each pair")
    parser.add_argument(
        "--pairwise-template", default="autoj", help="template family of the pairwise prompts (default: %(default)s)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="also upload hub/ to this Hub dataset (online only)")
    parser.add_argument("--public", action="store_true", help="create the Hub repository public (default: private)")
    args = parser.parse_args(argv)
    prog = Path(sys.argv[0]).name
    excludes = (
        heldout_excludes(args.data_dir, REPO_ROOT / "examples" / "*.jsonl") if args.exclude is None else args.exclude
    )

    try:
        if not 0 < args.validation_fraction < 1:  # the head and its tie band are chosen on the validation split
            raise ValueError(f"--validation-fraction {args.validation_fraction}: must be in (0, 1)")
        check_output_dir(args.output_dir, outputs=published_outputs(), overwrite=args.overwrite)
        configs, report = build_published_judgment_data(
            args.data_dir,
            sources=args.sources,
            exclude=excludes,
            validation_fraction=args.validation_fraction,
            seed=args.seed,
            swap=not args.no_swap,
            pairwise_family=args.pairwise_template,
        )
        card = render_published_card(configs, report, repo_id=args.push_to_hub)
    except (OutputError, RecordError, ValueError, FileNotFoundError) as err:
        print(f"{prog}: error: {command_line_message(err, parser)}", file=sys.stderr)
        return 2
    print(report.summary())
    empty = _empty(configs, report)
    if empty:
        print(f"{prog}: error: {empty}; nothing written", file=sys.stderr)
        return 2
    written = save_published_judgment_data(configs, report, args.output_dir, card=card)
    for path in written.values():
        print(f"wrote {path}")
    if args.push_to_hub:
        try:
            url = push_published_judgment_data(args.output_dir, args.push_to_hub, private=not args.public)
        except Exception as err:  # offline, no token, network: one line, the data stays saved
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            if isinstance(err, OSError) or "connect" in type(err).__name__.lower():
                reason = f"cannot reach the Hugging Face Hub ({reason})"
            print(
                f"{prog}: error: not pushed to {args.push_to_hub}: {reason}; the data is saved in "
                f"{written['hub']} (rerun with --push-to-hub when online, or upload that folder)",
                file=sys.stderr,
            )
            return 2
        print(f"pushed to {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
