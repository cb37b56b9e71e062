"""``hf-critic self-eval``: glass-box features (SentProb, Softmax-Ent, Softmax-Var, …) for a file of responses."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ..core.errors import BadInputError
from ..critic.config import option_field
from ..glassbox.features import epilog
from .arguments import add_dataclass_args
from .exit_status import DONE
from .options import add_data_args, add_decoding_args, add_model_args

EPILOG = (
    epilog()
    + """
Example:
  hf-critic self-eval --data answers.jsonl --output scored.jsonl --features sent_prob softmax_ent softmax_var
"""
)


@dataclass
class FeatureOptions:
    """The glass-box features and how they are scored (glass-box self-evaluation, §2-§3): ``--features``,
    ``--turn``, ``--illustration``, ``--calibrate``, ``--combo-normalization``, ``--combo-var``, ``--combo-ent-sign``,
    ``--no-end-token``."""

    features: list[str] | None = option_field(
        "feature names, space- or comma-separated (default: sent_prob softmax_ent softmax_var)", None, nargs="+"
    )
    turn: str = option_field(
        "assistant turn(s) to score: last, all (one value per turn) or a 1-based number (default: last)", "last"
    )
    illustration: bool = option_field(
        "prepend the question and its reference as a prior exchange (§3.1, Appendix A.2)", False, action="store_true"
    )
    calibrate: bool = option_field(
        "also score the reference and add <feature>_calibrated = feature(response) - feature(reference) (§3.2)",
        False,
        action="store_true",
    )
    combo_normalization: str | None = option_field(
        "JSON file with a Softmax-combo normalisation to apply (default: fit min-max on this data; the "
        "fitted one is written to OUTPUT.combo.json)",
        None,
    )
    combo_var: str = option_field(
        "Softmax-Var variant inside Softmax-combo when fitting (default: softmax_var_vocab, as behind Table 1)",
        "softmax_var_vocab",
    )
    combo_ent_sign: int = option_field(
        "sign of Softmax-Ent inside Softmax-combo: 1 = the paper's plain sum (default), -1 = low entropy scores high",
        1,
        choices=[1, -1],
    )
    no_end_token: bool = option_field(
        "score the response text only, not the end-of-turn token that follows it", False, action="store_true"
    )


@dataclass
class EnsembleOptions:
    """The uncertainty ensembles (glass-box self-evaluation, §2.2): ``--ensemble-size``, ``--prompt-ensemble-size``,
    ``--top-k``."""

    ensemble_size: int = option_field("sampled passes of the decoding ensemble (default: 10)", 10)
    prompt_ensemble_size: int | None = option_field(
        "prompts drawn at random for the prompt ensemble (default: each of the 7 pool prompts once)", None
    )
    top_k: int = option_field("top-k of the decoding ensemble (default: 50)", 50)


def register(subparsers) -> None:
    """Add the ``self-eval`` sub-command."""
    parser = subparsers.add_parser(
        "self-eval",
        help="glass-box self-evaluation: softmax, uncertainty and attention features of each response",
        description="Score responses with glass-box features of a causal LM (Huang et al., §2-3): one "
        "teacher-forced forward pass per response, batched; feature columns are added to the rows.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_data_args(parser, output="feature columns")

    feats = parser.add_argument_group("features")
    add_dataclass_args(feats, FeatureOptions)

    ens = add_decoding_args(
        parser,
        title="uncertainty ensembles (§2.2)",
        only=("max_new_tokens", "temperature", "seed"),
        defaults={"max_new_tokens": 256, "temperature": 0.7},
    )
    add_dataclass_args(ens, EnsembleOptions)

    add_model_args(parser, dtype=False)  # features are computed in float32 (see run)
    parser.set_defaults(func=run)


def _turn(value: str) -> str | int:
    if value in ("last", "all"):
        return value
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise BadInputError(f"--turn must be last, all or a turn number >= 1, got {value!r}")
    return number


def run(args: argparse.Namespace) -> int:
    """Load the data and the model, add the feature columns, write the output; returns 0."""
    import json
    import sys

    import torch

    from ..backends.models import load_model
    from ..backends.threads import num_threads_or_default
    from ..glassbox import ComboNormalization, GlassBoxEvaluator, resolve_features
    from ..glassbox.encoding import conversation_from_record
    from ..io import RecordError, check_output, load_records, parse_columns, read_json, save_records, write_text

    if args.engine == "llamacpp":
        raise BadInputError(
            "self-eval reads the full softmax distribution (and attentions) at every position, which the llama.cpp "
            "engine does not expose: use --engine transformers (auto) with a model folder or Hub id"
        )
    check_output(args.output, inputs=[args.data, args.combo_normalization], overwrite=args.overwrite)
    features = resolve_features(args.features)
    turn = _turn(args.turn)
    combo = None
    if args.combo_normalization:
        combo = ComboNormalization.from_dict(read_json(args.combo_normalization))
    records = load_records(args.data, parse_columns(args.columns), args.limit, split=args.split)
    for row, record in enumerate(records):  # bad rows are named with the file, before the model loads
        try:
            conversation_from_record(record, row)
        except RecordError as err:
            raise RecordError(f"{args.data}: {err}") from None
    # float32: the features are log-probabilities, entropies and variances (bfloat16 keeps ~3 digits)
    lm, tokenizer = load_model(args.model, trust_remote_code=args.trust_remote_code, dtype="float32")
    if lm.device.type == "cpu":
        torch.set_num_threads(num_threads_or_default(args.threads))
    evaluator = GlassBoxEvaluator(
        lm,
        tokenizer=tokenizer,
        batch_size=args.batch_size,
        include_end_token=not args.no_end_token,
        ensemble_size=args.ensemble_size,
        prompt_ensemble_size=args.prompt_ensemble_size,
        top_k=args.top_k,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        progress=args.progress,
    )
    scored = evaluator.score(
        records,
        features,
        turn=turn,
        illustration=args.illustration,
        calibrate=args.calibrate,
        combo_normalization=combo,
        combo_var_feature=args.combo_var,
        combo_ent_sign=args.combo_ent_sign,
    )
    path = save_records(scored, args.output)
    if evaluator.combo_normalization_ is not None and combo is None:
        combo_path = write_text(
            f"{path}.combo.json", json.dumps(evaluator.combo_normalization_.to_dict(), indent=2) + "\n"
        )
        print(f"Softmax-combo normalisation fitted on this data: {combo_path}", file=sys.stderr)
    print(f"wrote {len(scored)} rows with {', '.join('glassbox_' + f for f in features)} to {path}", file=sys.stderr)
    return DONE
