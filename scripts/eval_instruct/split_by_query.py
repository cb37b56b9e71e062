"""Hold out validation (and test) queries of an Eval-Instruct output, for the SFT recipes.

Eval-Instruct (``hf-critic eval-instruct``) writes ``<output_dir>/dataset``: one ``DatasetDict`` keyed by the four
configs, each a single split of training rows. The SFT recipes (``recipes/*/sft/*.yaml``) read ``data/eval_instruct``
with a ``train`` and a ``validation`` split per config: the eval loss and the best-checkpoint Pearson (CritiqueLLM v1
§4.3) are computed on the validation rows. This script makes that folder. Queries, not rows, are split (seeded, with
:func:`hf_critic.judgments.split_by_question`), so no query, nor its responses, critiques or swapped pairs, is in two
splits of any config.

Usage:
    python scripts/eval_instruct/split_by_query.py outputs/eval_instruct/paper_v2/dataset data/eval_instruct

Writes ``<output>/<config>/`` (``save_to_disk``, splits ``train`` / ``validation`` and ``test`` when
``--test-fraction`` > 0) and prints the rows per config and split. A config folder that exists already needs
``--overwrite``; the output may not be the input, nor inside it. Exit status 2 with one line on bad input: a row
without a ``query_id``, a config without rows, or a split that would be empty (too few queries for the fractions).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import datasets

from hf_critic.core.errors import command_line_message
from hf_critic.io import OutputError, RecordError, check_output_dir, load_saved
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
        ValueError: a config without ``query_id`` or without rows, a row whose ``query_id`` is null, fractions out
            of range, or a split that would be empty (too few queries for the fractions), naming config and row.
    """
    keys = set()
    for config, rows in dataset.items():
        if "query_id" not in rows.column_names:
            raise ValueError(f"config {config!r}: no column 'query_id'; is this Eval-Instruct's output?")
        if not len(rows):
            raise ValueError(f"config {config!r}: no rows to split")
        ids = list(rows["query_id"])
        if None in ids:
            raise ValueError(
                f"config {config!r}, row {ids.index(None)}: field 'query_id' is null; every row needs one"
            )
        keys.update(("eval_instruct", q) for q in ids)
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
        empty = [name for name, part in out[config].items() if not len(part)]
        if empty:
            sizes = ", ".join(f"{name} {len(part)}" for name, part in out[config].items())
            raise ValueError(
                f"config {config!r}: split {empty[0]!r} would be empty ({sizes}; {len(keys)} queries, validation "
                f"{validation_fraction}, test {test_fraction}); change the fractions"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``split_by_query.py DATASET OUTPUT [--validation-fraction F] [--test-fraction F] [--seed N]
    [--overwrite]``; returns the exit status (2 with one line on bad input or output)."""
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
    parser.add_argument("--overwrite", action="store_true", help="replace config folders the output already holds")
    args = parser.parse_args(argv)
    datasets.disable_progress_bars()
    try:
        dataset = load_saved(args.dataset)
        if not isinstance(dataset, datasets.DatasetDict):
            raise ValueError("holds one Dataset, not Eval-Instruct's DatasetDict of configs")
        check_output_dir(
            args.output, outputs=list(dataset), overwrite=args.overwrite, what="output", inputs=[args.dataset]
        )
        splits = split_configs(
            dataset, validation_fraction=args.validation_fraction, test_fraction=args.test_fraction, seed=args.seed
        )
    except (OutputError, RecordError) as err:  # names the output, or the input (its arguments written as flags)
        print(command_line_message(err, parser), file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"{args.dataset}: {command_line_message(err, parser)}", file=sys.stderr)
        return 2
    for config, parts in splits.items():
        target = Path(args.output) / config
        if target.exists():  # --overwrite: checked above; no split of the earlier run is left behind
            shutil.rmtree(target)
        parts.save_to_disk(str(target))
        sizes = ", ".join(f"{name} {len(rows)}" for name, rows in parts.items())
        print(f"{config}: {sizes}")
    print(f"wrote {args.output}/<config> ({len(dataset)} configs, queries split with seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
