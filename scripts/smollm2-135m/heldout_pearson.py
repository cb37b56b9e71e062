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
Pearson / Spearman / Kendall between a critic's grades and GPT-4's, per `hf-critic grade` output file and pooled.

Usage:

python scripts/smollm2-135m/heldout_pearson.py outputs/smollm2_eval/after_*.jsonl

All rows of a file (and of all files, "pooled") form one group: the sample-level correlation. The held-out split has
two graded answers per question and two systems, too few for CritiqueLLM's text-level (per question) or system-level
correlations. Unparsed critiques (no [[rating]]) are left out and counted, never given a score.
"""

import argparse
import json
from pathlib import Path

import evaluate

from hf_critic.meta_eval.modules import metric_path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("files", nargs="+", help="outputs of `hf-critic grade` with a gold score column")
    parser.add_argument("--gold", default="score", help="gold score column (default: %(default)s)")
    args = parser.parse_args(argv)
    missing = [f for f in args.files if not Path(f).is_file()]
    if missing:  # e.g. an unmatched glob passed through by the shell
        parser.error(f"{missing[0]}: no such file (run the grade commands of step 4 first)")

    metric = evaluate.load(metric_path("critique_correlation"))
    pooled_pred, pooled_gold = [], []
    print(f"{'file':<60}{'rows':>6}{'parsed':>8}{'Pearson':>9}{'Spearman':>10}{'Kendall':>9}")
    for path in [*args.files, "pooled"]:
        if path == "pooled":
            pred, gold = pooled_pred, pooled_gold
        else:
            rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
            if any(args.gold not in r for r in rows):
                parser.error(f"{path}: a row has no {args.gold!r} column (--gold names the gold score column)")
            pred = [r["critique_score"] for r in rows]
            gold = [float(r[args.gold]) for r in rows]
            pooled_pred += pred
            pooled_gold += gold
        r = metric.compute(predictions=pred, references=gold)
        parsed = r["n_rows"] - r["n_unparsed"]
        print(
            f"{path:<60}{r['n_rows']:>6}{parsed:>8}{r['text_pearson']:>9.3f}{r['text_spearman']:>10.3f}"
            f"{r['text_kendall']:>9.3f}"
        )


if __name__ == "__main__":
    main()
