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
Build critique SFT data from published GPT-4 judgments (see hf_critic.judgments), split by question.

Usage:

python scripts/smollm2-135m/build_mtbench_data.py --data-dir ../shared/data --output-dir outputs/mtbench_critiques

Writes <output-dir>/<config>/ (save_to_disk DatasetDicts with train / validation / test) for the recipe's
dataset_mixture, and <output-dir>/{validation,test}_pointwise_{referenced,reference_free}.jsonl for `hf-critic grade`.
Keep the output out of version control (outputs/ is git-ignored): the source files carry no licence to redistribute.
"""

import argparse
import os
import sys
from pathlib import Path

from hf_critic.core.errors import HfCriticError, command_line_message
from hf_critic.judgments import BENCHMARKS, build_judgment_sft_data, save_judgment_sft_data


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_data = os.environ.get(
        "HF_CRITIC_SHARED_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data")
    )
    parser.add_argument("--data-dir", default=default_data, help=f"real-data folder (default: {default_data})")
    parser.add_argument(
        "--output-dir", default="outputs/mtbench_critiques", help="where to write (default: %(default)s)"
    )
    parser.add_argument("--benchmarks", nargs="+", default=list(BENCHMARKS), choices=BENCHMARKS)
    parser.add_argument("--no-prometheus", action="store_true", help="leave out the Prometheus feedback")
    parser.add_argument("--test-fraction", type=float, default=0.2, help="share of questions held out for test")
    parser.add_argument("--validation-fraction", type=float, default=0.1, help="share of questions for validation")
    parser.add_argument("--seed", type=int, default=0, help="question split seed")
    args = parser.parse_args(argv)

    try:  # bad input (a missing or malformed file, named with its line): one line and exit 2, never a traceback
        configs, report = build_judgment_sft_data(
            args.data_dir,
            benchmarks=args.benchmarks,
            prometheus=not args.no_prometheus,
            test_fraction=args.test_fraction,
            validation_fraction=args.validation_fraction,
            seed=args.seed,
        )
    except HfCriticError as err:
        print(f"{Path(sys.argv[0]).name}: error: {command_line_message(err, parser)}", file=sys.stderr)
        return 2
    print(report.summary())
    for path in save_judgment_sft_data(configs, args.output_dir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
