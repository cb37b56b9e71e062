"""Add HH-RLHF harmlessness pairs and Auto-J within-query pairs to the reward pairs
(hf_critic.judgments.extra_pairs), decontaminated against the evaluation sets as build_judgment_data.py does.

Usage:

python scripts/smollm2-135m/build_judgment_data.py --data-dir ../shared/data --output-dir outputs/judgment_data
python scripts/smollm2-135m/build_extra_pairs.py --data-dir ../shared/data --judgment-data outputs/judgment_data
# then train on them: recipes/reward.py ... --dataset_config pairwise_preference_plus

Writes <judgment-data>/pairwise_preference_plus: the pairwise_preference training pairs plus the new ones (train
only: the HH-RLHF pairs and the within-query pairs of Auto-J's training questions); validation unchanged (AlpacaEval's,
so validation figures stay comparable). HH-RLHF is MIT; Auto-J's grades state no licence.

exit status: 0 done; 2 missing inputs or bad rows.
"""

import argparse
import os
import sys
from pathlib import Path

import datasets

from hf_critic.io import RecordError
from hf_critic.judgments import benchmark_questions, decontaminate, heldout_excludes, parse_exclude
from hf_critic.judgments.extra_pairs import first_human_turn, hh_rlhf_pairs, within_query_pairs

HERE = Path(__file__).resolve().parent
COLUMNS = ["query_id", "question", "response_1", "response_2", "label", "preference", "swapped", "source"]


def main(argv=None) -> int:
    """Build and save ``pairwise_preference_plus``; print the counts. Returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    default_data = os.environ.get("HF_CRITIC_SHARED_DATA", str(HERE.parents[1].parent / "shared" / "data"))
    parser.add_argument("--data-dir", default=default_data)
    parser.add_argument("--judgment-data", default="outputs/judgment_data")
    args = parser.parse_args(argv)
    folder = Path(args.judgment_data)
    try:
        base = datasets.load_from_disk(str(folder / "pairwise_preference"))
        graded = datasets.load_from_disk(str(folder / "pointwise_reference_free"))["train"]
        hh, counts = hh_rlhf_pairs(Path(args.data_dir) / "hh_rlhf" / "harmless-base-test.jsonl.gz")
        benchmarks = {}
        for spec in heldout_excludes(args.data_dir, HERE.parents[1] / "examples" / "*.jsonl"):
            name, fmt, path = parse_exclude(spec)
            benchmarks[name] = benchmark_questions(fmt, path)
        kept_dialogue, by_dialogue = decontaminate(hh, benchmarks)
        firsts = [{**r, "question": first_human_turn(r["question"])} for r in hh]  # the opening request, too
        kept_first, by_first = decontaminate(firsts, benchmarks)
        keep, keep_first = {id(r) for r in kept_dialogue}, {id(r) for r in kept_first}
        hh = [r for r, f in zip(hh, firsts, strict=True) if id(r) in keep and id(f) in keep_first]
    except (FileNotFoundError, RecordError, ValueError) as err:
        print(f"build_extra_pairs.py: error: {err}", file=sys.stderr)
        return 2
    within = within_query_pairs(graded)
    dropped = {name: (by_dialogue[name]["dropped"], by_first[name]["dropped"]) for name in benchmarks}
    print(f"hh_rlhf: {counts}; decontamination (dialogue, first human turn) dropped {dropped}; kept {len(hh)}")
    print(f"Auto-J within-query pairs (training questions, grades differ): {len(within)}")
    features = base["train"].select_columns(COLUMNS).features
    extra = datasets.Dataset.from_list([dict(r) for r in hh + within], features=features)
    train = datasets.concatenate_datasets([base["train"].select_columns(COLUMNS), extra])
    out = datasets.DatasetDict({"train": train, "validation": base["validation"].select_columns(COLUMNS)})
    out.save_to_disk(str(folder / "pairwise_preference_plus"))
    print(
        f"wrote {folder / 'pairwise_preference_plus'}: train {len(train)} rows ({len(extra)} new), validation "
        f"{len(out['validation'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
