"""Cascades of critics on the command line: the cascade file (YAML), ``compare --cascade FILE --calibration FILE``.

A cascade file lists the critics, cheapest first; each is either computed, with the options ``hf-critic compare``
would take for it, or recorded (verdicts read from files)::

    critics:
      - name: smollm2-135m-critic
        options: {model: smollm2-135m-critic}
      - name: default-critic
        options: {template: mtbench, verdict: probability, explanation: none, swap: true}
      - name: auto-j-13b
        recorded:
          benchmark: autoj:../shared/data/autoj/test/testdata_pairwise.jsonl   # the rows the files follow
          verdicts: ../shared/data/autoj/outputs/pairwise_example_output.jsonl
          swapped: ../shared/data/autoj/outputs/pairwise_exchange_example_output.jsonl
        price_per_call: 0.002   # optional: the summary's money
        delta_share: 0.8        # optional: this critic's share of delta (the others split the rest equally)

Recorded critics may instead name ``critiques: FILE``, the output of an earlier ``hf-critic compare`` run. A
``generic:`` benchmark is read as ``meta-eval`` reads it with flags: ``columns:`` (a mapping or ``"a=b,c=d"``),
``gold_label_map:``, ``label_columns:``, ``aggregate:``, ``coerce_text:`` (``label_map:`` is the verdict files'
convention). Paths are read from the working directory, as every other path of the command line.

A critic may also be ``baseline: longer-wins`` (the longer response wins, with a confidence; the bare string
``longer-wins`` is short for ``{name: longer-wins, baseline: longer-wins}``), or a jury of critics judged as one
(:mod:`hf_critic.critics.jury`)::

      - name: local-jury
        jury:
          aggregate: fitted      # vote | mean | fitted (fitted by `hf-critic calibrate` on its calibration rows)
          fit_share: 0.5         # fitted: the share of calibration questions that fit it (the rest set thresholds)
          members:               # any critics above (not a jury), each with its own name
            - name: smollm2-135m-critic
              options: {model: smollm2-135m-critic}
            - longer-wins

A critic may also be of a kind registered in the running process (:func:`hf_critic.critics.registry.register`):
``kind: NAME`` with its ``options:``, built by the kind's ``from_spec(options, where)``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..core.errors import BadInputError
from ..core.keys import check_keys
from .exit_status import DONE

#: A recorded critic's options for reading a ``generic:`` benchmark, as ``meta-eval`` takes them by flags
#: (``--columns``, ``--label-map``, ``--label-columns``, ``--aggregate``, ``--coerce-text``): {key: loader argument}.
BENCHMARK_OPTIONS = {
    "columns": "columns",
    "gold_label_map": "label_map",
    "label_columns": "label_columns",
    "aggregate": "aggregate",
    "coerce_text": "coerce_text",
}

#: The keys of a cascade file, of one of its critics, and of a recorded critic's ``recorded:`` mapping.
FILE_KEYS = ("critics",)
CRITIC_KEYS = ("name", "kind", "options", "recorded", "jury", "baseline", "price_per_call", "delta_share")
JURY_KEYS = ("members", "aggregate", "fit_share")
RECORDED_KEYS = ("benchmark", "verdicts", "swapped", "field", "label_map", "critiques", *BENCHMARK_OPTIONS)
#: Options that belong to the command (its data, gold labels and output), not to one critic of the cascade.
COMMAND_OPTIONS = frozenset(
    {
        "data",
        "output",
        "overwrite",
        "columns",
        "format",
        "split",
        "limit",
        "sample",
        "sample_seed",
        "referenced",
        "label_map",
        "label_columns",
        "aggregate",
        "coerce_text",
        "human_label",
        "two_way",
        "cascade",
        "calibration",
    }
)


def add_cascade_args(parser: argparse.ArgumentParser) -> None:
    """``--cascade FILE`` and ``--calibration FILE`` (``compare``)."""
    group = parser.add_argument_group("selective judging (a cascade of critics)")
    group.add_argument(
        "--cascade",
        metavar="FILE",
        help="a cascade file (YAML: critics cheapest first, computed with their own options or recorded); each row "
        "goes to the next critic only when the previous was not confident enough, and rows no critic keeps are "
        "abstained; needs --calibration; the critic options above then belong in the file",
    )
    group.add_argument(
        "--calibration", metavar="FILE", help="the cascade's thresholds, written by `hf-critic calibrate`"
    )


def _argv(options: dict, where: str, known: dict[str, argparse.Action]) -> list[str]:
    """``{option: value}`` as ``compare``'s argv; an option ``compare`` lacks, or one of the command's, is refused."""
    argv = []
    for key, value in options.items():
        dest = str(key).replace("-", "_")
        if dest in COMMAND_OPTIONS:
            raise BadInputError(f"{where}: option {key!r} belongs to the command line, not to one critic")
        if dest not in known:
            import difflib

            close = difflib.get_close_matches(dest, [k for k in known if k not in COMMAND_OPTIONS], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise BadInputError(f"{where}: option {key!r} is no option of compare{hint}")
        strings = known[dest].option_strings  # a BooleanOptionalAction's: ["--progress", "--no-progress"]
        if isinstance(value, bool):
            if value:
                argv.append(strings[0])
            elif isinstance(known[dest], argparse.BooleanOptionalAction):
                argv.append(strings[-1])
        else:
            argv += [strings[0], str(value)]
    return argv


def critic_namespace(options: dict, where: str, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed ``compare`` options of one computed critic of a cascade file (``parser``: compare's, a fresh one:
    :func:`hf_critic.commands.critique.compare_parser`).

    Raises:
        ValueError: an unknown option, a command-level one, or a value ``compare`` rejects (names ``where``).
    """
    known = {a.dest: a for a in parser._actions if a.option_strings}
    argv = ["--data", "-", "--output", "-", *_argv(options, where, known)]

    def refuse(message: str):
        raise BadInputError(f"{where}: {message} (the options of `hf-critic compare`)")

    parser.error = refuse  # one line naming the file and critic, not compare's usage
    return parser.parse_args(argv)


def _price(entry: dict, where: str) -> float | None:
    price = entry.get("price_per_call")
    if price is None:
        return None
    if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price) or price < 0:
        raise BadInputError(f"{where}: price_per_call must be a finite number >= 0, got {price!r}")
    return float(price)


def _recorded(name: str, spec: dict, where: str):
    from ..critics.registry import critic_class

    RecordedVerdicts = critic_class("recorded")
    if not isinstance(spec, dict):
        raise BadInputError(f"{where}: recorded must be a mapping (benchmark + verdicts [+ swapped], or critiques)")
    check_keys(spec, RECORDED_KEYS, f"{where}: recorded", "recorded verdicts")
    if "critiques" in spec and ({"benchmark", "verdicts", "swapped", "field", "label_map"} & set(spec)):
        raise BadInputError(
            f"{where}: recorded: critiques: FILE stands alone (an earlier run's output); benchmark, "
            "verdicts, swapped, field and label_map describe a published judge's files instead"
        )
    if "critiques" in spec:
        return RecordedVerdicts.from_critiques(name, str(spec["critiques"]))
    if "benchmark" not in spec or "verdicts" not in spec:
        raise BadInputError(
            f"{where}: recorded verdicts need benchmark: FORMAT:PATH (the rows the files follow) and "
            "verdicts: FILE (and swapped: FILE for the other order), or critiques: FILE"
        )
    from ..loaders import load_benchmark
    from .meta_eval import parse_benchmark

    _, fmt, path = parse_benchmark(str(spec["benchmark"]))
    benchmark = load_benchmark(fmt, path, **_benchmark_options(spec, fmt, where))
    return RecordedVerdicts.from_verdict_files(
        name,
        benchmark,
        str(spec["verdicts"]),
        spec.get("swapped"),
        spec.get("field"),
        spec.get("label_map"),
    )


def _benchmark_options(spec: dict, fmt: str, where: str) -> dict:
    """The loader arguments of a recorded critic's ``benchmark:``: for ``generic``, the pairwise task and the
    column map and gold options of :data:`BENCHMARK_OPTIONS` (``columns`` as a mapping or ``"a=b,c=d"``).

    Raises:
        ValueError: such an option for another format (its loader knows its own columns), or a malformed column map.
    """
    from ..io import parse_columns

    given = {key: spec[key] for key in BENCHMARK_OPTIONS if spec.get(key) is not None}
    if fmt != "generic":
        if given:
            raise BadInputError(f"{where}: {', '.join(given)} read a generic: benchmark's own columns, not {fmt}:")
        return {}
    options = {"task": "pairwise"}
    for key, value in given.items():
        if key == "columns" and isinstance(value, dict):
            value = {str(k): str(v) for k, v in value.items()}
        elif key == "columns":
            value = parse_columns(str(value))
        options[BENCHMARK_OPTIONS[key]] = value
    return options


def load_cascade(path: str, parser: argparse.ArgumentParser, rows: int | None = None) -> list:
    """The critics of a cascade file, cheapest first, as :class:`~hf_critic.selective.cascade.CascadeStage`.

    Args:
        path: the YAML file (module docstring).
        parser: ``compare``'s parser, which reads each computed critic's options
            (:func:`hf_critic.commands.critique.compare_parser`).
        rows: the rows the cascade will judge (caps the batch sizes of local critics), or None.

    Raises:
        ValueError: a missing or malformed file, a critic without a name (or a repeated one), options ``compare``
            rejects, or recorded verdicts that cannot be read (each names the file and the critic).
    """
    import yaml

    try:
        spec = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError(f"--cascade {path}: no such file") from None
    except yaml.YAMLError as err:
        raise BadInputError(f"--cascade {path}: not YAML ({err})") from None
    critics = spec.get("critics") if isinstance(spec, dict) else None
    if isinstance(spec, dict):  # `thresholds:` or `target:` would be ignored: thresholds come from --calibration
        check_keys(spec, FILE_KEYS, f"--cascade {path}", "a cascade file (thresholds come from --calibration)")
    if not isinstance(critics, list) or not critics:
        raise BadInputError(f"--cascade {path}: expected a mapping with a non-empty list `critics:`")
    stages = _stages(critics, f"{path}: critics", parser, rows)
    for i, (entry, stage) in enumerate(zip(critics, stages, strict=True)):
        stage.delta_share = _delta_share(entry, f"{path}: critics[{i}] ({stage.name})")
    from ..selective.cascade import delta_shares

    delta_shares(stages, f"--cascade {path}")  # the shares must leave every critic some of delta
    return stages


def _delta_share(entry, where: str) -> float | None:
    share = entry.get("delta_share") if isinstance(entry, dict) else None
    if share is None:
        return None
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise BadInputError(
            f"{where}: delta_share must be a number in (0, 1] (this critic's share of the cascade's "
            f"delta), got {share!r}"
        )
    return float(share)


def _fit_share(share, where: str) -> float:
    """A jury's ``fit_share:``, a number in (0, 1).

    Raises:
        ValueError: anything else, naming ``where`` and the value.
    """
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise BadInputError(
            f"{where}: jury fit_share must be a number in (0, 1) (the share of calibration questions that fit the "
            f"jury; the rest set the thresholds), got {share!r}"
        )
    return float(share)


def _stages(entries: list, where: str, parser: argparse.ArgumentParser, rows: int | None, jury: bool = True) -> list:
    """The stages of a list of critic entries (a cascade's critics, or a jury's members: ``jury=False``)."""
    stages, names = [], set()
    for i, entry in enumerate(entries):
        if not jury and isinstance(entry, dict) and "delta_share" in entry:
            raise BadInputError(f"{where}[{i}]: delta_share belongs to a critic of the cascade, not to a jury member")
        stage = _stage(entry, f"{where}[{i}]", parser, rows, jury)
        if stage.name in names:
            raise BadInputError(f"{where}[{i}]: the name {stage.name!r} is used twice")
        names.add(stage.name)
        stages.append(stage)
    return stages


#: The keys that say what kind of critic an entry is; an entry has at most one (none: computed with no options),
#: except ``kind:`` (a kind of :mod:`hf_critic.critics.registry`), which takes its ``options:``.
_KINDS = ("options", "recorded", "jury", "baseline")


def _stage(entry, where: str, parser: argparse.ArgumentParser, rows: int | None, jury: bool):
    """One critic entry as a :class:`~hf_critic.selective.cascade.CascadeStage`: computed (``options``), ``recorded``, a
    ``jury`` (not inside a jury), or ``baseline: longer-wins`` (also written as the bare string ``longer-wins``)."""
    from ..critics.jury import LONGER_WINS
    from ..critics.registry import critic_class
    from ..selective.cascade import CascadeStage
    from ..selective.jury import FIT_SHARE
    from .options import critic_from_args

    if entry == LONGER_WINS:
        entry = {"name": LONGER_WINS, "baseline": LONGER_WINS}
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
        raise BadInputError(f"{where}: each critic needs a name")
    name, price = entry["name"].strip(), _price(entry, where)
    # `threshold:`, `weight:` or a typo (`option:`, `recroded:`) would otherwise leave the embedded default critic
    check_keys(entry, CRITIC_KEYS, f"{where} ({name})", "a critic")
    kinds = [k for k in _KINDS if k in entry and not (k == "options" and "kind" in entry)]
    if "kind" in entry and kinds:
        raise BadInputError(f"{where}: a critic of kind: {entry['kind']!r} takes options:, not {' and '.join(kinds)}")
    if "kind" in entry:
        critic = critic_class(str(entry["kind"]), f"{where} ({name})").from_spec(entry.get("options") or {}, where)
        return CascadeStage(name, critic, price_per_call=price)
    if len(kinds) > 1:
        raise BadInputError(
            f"{where}: a critic is one of computed (options), recorded, jury or baseline, not {' and '.join(kinds)}"
        )
    if "recorded" in entry:
        return CascadeStage(name, _recorded(name, entry["recorded"], where), price_per_call=price)
    if "baseline" in entry:
        if entry["baseline"] != LONGER_WINS:
            raise BadInputError(f"{where}: baseline must be {LONGER_WINS!r}, got {entry['baseline']!r}")
        return CascadeStage(name, critic_class(LONGER_WINS).from_spec({}, where), price_per_call=price)
    if "jury" in entry:
        spec = entry["jury"]
        if not jury:
            raise BadInputError(f"{where}: a jury member cannot be a jury itself")
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("members"), list)
            or not spec["members"]
            or ("aggregate" not in spec)
        ):
            raise BadInputError(f"{where}: jury needs a non-empty list members: and aggregate: vote | mean | fitted")
        check_keys(spec, JURY_KEYS, f"{where} ({name}): jury", "a jury")
        members = _stages(spec["members"], f"{where}: jury members", parser, rows, jury=False)
        share = _fit_share(spec.get("fit_share", FIT_SHARE), f"{where} ({name})")
        return CascadeStage(
            name,
            critic_class("jury")(members, spec["aggregate"], where=f"jury {name!r}", fit_share=share),
            price_per_call=price,
        )
    args = critic_namespace(entry.get("options") or {}, where, parser)
    critic = critic_from_args(args, args.model, inputs=rows)
    return CascadeStage(name, critic, swap=args.swap, price_per_call=price)


def refuse_critic_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """With ``--cascade``, the critic options of the command line would be ignored: refuse any that was set
    (``parser``: compare's).

    Raises:
        ValueError: naming the options given.
    """
    given = [
        a.option_strings[-1]
        for a in parser._actions
        if a.option_strings
        and a.dest not in COMMAND_OPTIONS
        and a.dest != "help"
        and getattr(args, a.dest, a.default) != a.default
    ]
    if given:
        raise BadInputError(f"{', '.join(given)} with --cascade: each critic's options belong in the cascade file")


def run_cascade_command(args: argparse.Namespace, records, parser: argparse.ArgumentParser) -> int:
    """``compare --cascade FILE --calibration FILE``: judge, write the critiques, print the summary and the
    agreement of the decided rows (``parser``: compare's, for the critics' options)."""
    from ..core import schema
    from ..io import save_records
    from ..selective import load_calibration
    from ..selective.cascade import check_calibration, run_cascade
    from .cascade_probes import recheck_served

    if args.task != "compare":
        raise BadInputError(
            "--cascade: pointwise grading has no human-agreement guarantee here; cascades compare pairs"
        )
    if not args.calibration:
        raise BadInputError("--cascade needs --calibration FILE (write one with `hf-critic calibrate`)")
    refuse_critic_options(args, parser)
    calibration = load_calibration(args.calibration)  # before any model loads: every threshold re-derived
    stages = load_cascade(args.cascade, parser, rows=len(records))
    checked = []
    if schema.RESPONSE_1 in records.column_names:  # else run_cascade says the rows are no pairs
        setting = schema.Setting(schema.Task.PAIRWISE, schema.REFERENCE in records.column_names)
        check_calibration(calibration, stages, setting, args.calibration)
        checked = recheck_served(stages, calibration, args.calibration, args.data)  # before the rows are judged
    result = run_cascade(stages, records, calibration, source=args.data, calibration_path=args.calibration)
    save_records(result.critiques, args.output)
    print(f"wrote {len(result.critiques)} rows to {args.output}")
    for line in [*result.summary_lines(), *checked]:
        print(line)
    gold = args.human_label or ("label" if "label" in result.critiques.column_names else None)
    if gold:
        from ..core.labels import normalize_labels

        human = normalize_labels(result.critiques[gold], name=gold)
        decided = [
            (lab, h) for lab, h in zip(result.critiques[schema.CRITIQUE_LABEL], human, strict=True) if lab is not None
        ]
        if decided:
            agree = sum(lab == h for lab, h in decided) / len(decided)
            rows = len(result.critiques)
            print(
                f"vs {gold}: agreement {100 * agree:.2f} on the {len(decided)} decided rows, coverage "
                f"{100 * len(decided) / rows:.1f}% ({rows - len(decided)} abstained, neither unparsed nor wrong; "
                f"target {100 * (1 - calibration.alpha):.4g}, guaranteed with probability "
                f"{1 - calibration.delta:.4g} on data like the calibration's)"
            )
    return DONE
