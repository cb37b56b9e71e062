"""Hold out validation (and test) queries of an Eval-Instruct output, for the SFT recipes.

Eval-Instruct (``hf-critic eval-instruct``) writes ``<output_dir>/dataset``: one ``DatasetDict`` keyed by the four
configs, each a single split of training rows. The SFT recipes (``recipes/*/sft/*.yaml``) read ``data/eval_instruct``
with a ``train`` and a ``validation`` split per config: the eval loss and the best-checkpoint Pearson (CritiqueLLM v1
§4.3) are computed on the validation rows. This script makes that folder. Queries, not rows, are split (seeded, with
:func:`hf_critic.judgments.split_by_question`), so no query, nor its responses, critiques or swapped pairs, is in two
splits of any config.

Usage:
    python recipes/eval_instruct/split_by_query.py outputs/eval_instruct/paper_v2/dataset data/eval_instruct

Writes ``<output>/<config>/`` (``save_to_disk``, splits ``train`` / ``validation`` and ``test`` when
``--test-fraction`` > 0) and prints the rows per config and split. Exit status 2 with one line on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import datasets

from hf_critic.judgments import split_by_question


def split_configs(
    dataset: datasets.DatasetDict, *, validation_fraction: float, test_fraction: float, seed: int
) -> dict[str, datasets.DatasetDict]:
    """Split every config of an Eval-Instruct ``DatasetDict`` by query, for the held-out validation set on which
    CritiqueLLM picks its checkpoint (v1 §4.3); a query lands in the same split in every config.

    Args:
        dataset: ``{config: Dataset}`` with a ``query_id`` column (Eval-Instruct's output).
        validation_fraction: share of the queries held out for validation, in (0, 1).
        test_fraction: share held out for test, in [0, 1); the two sum to less than 1.
        seed: the shuffling seed.

    Returns:
        ``{config: DatasetDict}`` with ``train`` and ``validation`` (and ``test`` when ``test_fraction`` > 0).

    Raises:
        ValueError: a config without ``query_id``, fractions out of range, or too few queries for one to be held
            out for validation.
    """
    keys = set()
    for config, rows in dataset.items():
        if "query_id" not in rows.column_names:
            raise ValueError(f"config {config!r}: no column 'query_id'; is this Eval-Instruct's output?")
        keys.update(("eval_instruct", q) for q in rows["query_id"])
    # one assignment for all configs: a query is in the same split everywhere
    assignment = split_by_question(
        keys, test_fraction=test_fraction, validation_fraction=validation_fraction, seed=seed
    )
    if "validation" not in assignment.values():
        raise ValueError(f"{len(keys)} queries: too few to hold out a share of {validation_fraction} for validation")
    names = ["train", "validation"] + (["test"] if test_fraction > 0 else [])
    out = {}
    for config, rows in dataset.items():
        split_of = [assignment["eval_instruct", q] for q in rows["query_id"]]
        out[config] = datasets.DatasetDict(
            {name: rows.select([i for i, s in enumerate(split_of) if s == name]) for name in names}
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``split_by_query.py DATASET OUTPUT [--validation-fraction F] [--test-fraction F] [--seed N]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", help="Eval-Instruct's <output_dir>/dataset folder")
    parser.add_argument(
        "output", help="folder to write, one save_to_disk DatasetDict per config (e.g. data/eval_instruct)"
    )
    parser.add_argument("--validation-fraction", type=float, default=0.05, help="share of queries (default 0.05)")
    parser.add_argument(
        "--test-fraction", type=float, default=0.0, help="share of queries for a test split (default 0)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    datasets.disable_progress_bars()
    try:
        dataset = datasets.load_from_disk(args.dataset)
        if not isinstance(dataset, datasets.DatasetDict):
            raise ValueError("holds one Dataset, not Eval-Instruct's DatasetDict of configs")
        splits = split_configs(
            dataset, validation_fraction=args.validation_fraction, test_fraction=args.test_fraction, seed=args.seed
        )
    except (FileNotFoundError, ValueError) as err:
        print(f"{args.dataset}: {err}", file=sys.stderr)
        return 2
    for config, parts in splits.items():
        # an empty split saved with the default sharding cannot be loaded back: give it one shard
        parts.save_to_disk(
            str(Path(args.output) / config), num_shards={n: 1 for n, rows in parts.items() if not len(rows)}
        )
        sizes = ", ".join(f"{name} {len(rows)}" for name, rows in parts.items())
        print(f"{config}: {sizes}")
    print(f"wrote {args.output}/<config> ({len(dataset)} configs, queries split with seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
