"""``hf-critic view``: a run you can look at: one HTML page of its rows and figures, and the run as a Hub dataset."""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError
from ..critic.config import OptionValueError, option_field
from .arguments import add_dataclass_args, add_option
from .exit_status import DONE
from .option_groups import DataOptions, FigureOptions, ReportOptions

EPILOG = """\
RUN is any output of hf-critic, each optionally named [CRITIC/DATASET=]PATH (as meta-eval --critiques):
  a critiques file of grade / compare (with --swap or --cascade): outputs/compared.jsonl
  a meta-eval --output-dir folder (its plots, report.md and critiques/<critic>/<dataset>.jsonl)
  a calibrate --report-dir folder (its plots and critiques/<critic>.jsonl) and its calibration file (--output)
Examples:
  hf-critic view outputs/compared.jsonl --output outputs/compared.html
  hf-critic view small=outputs/small.jsonl big=outputs/big.jsonl --output outputs/small_vs_big.html
  hf-critic view outputs/selective outputs/calibration.json --output outputs/selective.html
  hf-critic view outputs/compared.jsonl --license cc-by-4.0 --card-option model=MODEL --push-to-hub ORG/NAME
The page is one file that opens offline: figures (agreement with its interval, calibration of the confidence, the
run's plots), then every row with filters (outcome: right / wrong / abstained / no verdict; category; low
confidence), sorting by confidence and search; "Most confident wrong verdicts" shows the critic's surest mistakes
first. Critics judged on the same rows are shown side by side where their verdicts differ. Judged text is shown as
text, never run as HTML. A link to page.html#outcome=wrong&sort=conf-desc opens it filtered.
"""


def _option(text: str) -> tuple[str, str]:
    """``--card-option``: ``KEY=VALUE`` as ``(key, value)``.

    Raises:
        OptionValueError: no ``=`` or an empty key.
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise OptionValueError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _non_negative(text: str) -> float:
    """``--tolerance``: a number >= 0.

    Raises:
        OptionValueError: a negative number or NaN (ValueError: not a number).
    """
    value = float(text)
    if not value >= 0:
        raise OptionValueError(f"expected a number >= 0, got {text}")
    return value


@dataclass
class ViewOptions:
    """The page's and the Hub upload's own options: ``--tolerance``, ``--save-hub-folder``, ``--license``,
    ``--card-option``, ``--public``."""

    tolerance: float = option_field(
        "pointwise: a score at most this far from the human score is right (default 1.0)", 1.0, type=_non_negative
    )
    save_hub_folder: str | None = option_field(
        "write the folder the upload sends (README.md card, data/<config>/*.parquet, report/) here; load it with "
        "datasets.load_dataset(DIR, CONFIG)",
        None,
        metavar="DIR",
    )
    license: str = option_field(
        "licence of the judged data, for the card (a Hub licence id such as cc-by-4.0; default: unknown)", "unknown"
    )
    card_option: list[tuple[str, str]] = option_field(
        "an option of the run to record in the card (critic model, template, decoding); repeatable",
        [],
        action="append",
        type=_option,
        metavar="KEY=VALUE",
    )
    public: bool = option_field("create the Hub repository public (default: private)", False, action="store_true")


def register(subparsers) -> None:
    """Add the ``view`` sub-command."""
    parser = subparsers.add_parser(
        "view",
        help="a run you can look at: one offline HTML page of its rows and figures; the run as a Hub dataset",
        description="One self-contained HTML page of a run (critiques files, meta-eval or calibrate folders, "
        "calibration files): its figures above every row, with filters, sorting by confidence and search; "
        "with --push-to-hub, its rows (parquet, one config per critic and benchmark), report and card on the Hub.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="[CRITIC/DATASET=]PATH: a critiques file or an output "
        "folder of meta-eval / calibrate, or a calibration file",
    )
    page = parser.add_argument_group("the page")
    output = {"required": False, "default": None, "metavar": "FILE.html", "help": "where to write the page (.html)"}
    add_option(page, DataOptions, "output", **output)
    add_option(page, DataOptions, "overwrite", help="replace an existing --output / --save-hub-folder")
    title = "the page's and the card's title (default: hf-critic run)"
    add_option(page, ReportOptions, "title", default="hf-critic run", help=title)
    resamples = "bootstrap resamples of the intervals of critique files measured here (0: none; else at least 100; default 200)"
    add_option(page, FigureOptions, "bootstrap", default=200, metavar=None, help=resamples)
    plots = "draw no plot for critique files (no matplotlib needed); a folder's PNGs are shown all the same"
    add_option(page, ReportOptions, "no_plots", help=plots)
    add_option(page, ViewOptions, "tolerance")
    hub = parser.add_argument_group("the run on the Hub")
    push = "upload the rows, report and card to this dataset repository (created private unless --public)"
    add_option(hub, ReportOptions, "push_to_hub", help=push)
    add_dataclass_args(hub, ViewOptions, only=["save_hub_folder", "license", "card_option", "public"])
    parser.set_defaults(func=run_view)


def _check(args) -> None:
    """Every output and option checked before any work.

    Raises:
        ValueError: no output asked for, a bad --bootstrap, an --output or --save-hub-folder that cannot be written,
            or matplotlib missing for the plots.
    """
    from ..io import check_output, check_output_dir
    from ..meta_eval.bootstrap import check_resamples
    from .options import require_extra

    if not (args.output or args.push_to_hub or args.save_hub_folder):
        raise BadInputError(
            "nothing to write: give --output FILE.html, --save-hub-folder DIR and/or --push-to-hub REPO"
        )
    check_resamples(args.bootstrap, "--bootstrap")
    if args.output:
        check_output(args.output, inputs=args.runs, overwrite=args.overwrite, suffixes=(".html",))
    if args.save_hub_folder:
        check_output_dir(args.save_hub_folder, what="--save-hub-folder", inputs=args.runs)
        _check_replaceable(Path(args.save_hub_folder), args.overwrite)
    if not args.no_plots:
        require_extra("matplotlib", "report", "the plots of critique files", "--no-plots")


def _check_replaceable(folder: Path, overwrite: bool) -> None:
    """A non-empty ``--save-hub-folder`` is replaced only with ``--overwrite``, and only when it is a folder this
    command wrote (a README.md card beside a data/ folder): never a folder of other files.

    Raises:
        ValueError: one line naming the folder and the fix.
    """
    if not folder.exists() or not any(folder.iterdir()):
        return
    if not overwrite:
        raise BadInputError(f"--save-hub-folder {folder}: exists and is not empty (add --overwrite to replace it)")
    if not ((folder / "README.md").is_file() and (folder / "data").is_dir()):
        raise BadInputError(
            f"--save-hub-folder {folder}: not a folder hf-critic view wrote (no README.md and data/), "
            "so --overwrite does not replace it: name a new folder"
        )


def run_view(args: argparse.Namespace) -> int:
    """Read the runs, write the page and, as asked, the Hub folder and its upload."""
    from ..reports import load_run, measure, push_run, render_view, write_hub_folder

    _check(args)
    run = load_run(args.runs)
    measured = measure(run, bootstrap=args.bootstrap, plots=not args.no_plots, tolerance=args.tolerance)
    page = render_view(measured, title=args.title)
    for note in measured.notes:
        print(note)
    rows = sum(len(r.rows) for r in run.row_sets)
    if args.output:
        from ..io import write_text

        write_text(args.output, page)
        size = Path(args.output).stat().st_size
        print(f"wrote {args.output}: {rows} rows of {len(run.row_sets)} run(s), {size / 1e6:.2f} MB")
    if args.save_hub_folder or args.push_to_hub:
        with tempfile.TemporaryDirectory(prefix="hf-critic-hub-") as scratch:
            folder = write_hub_folder(
                measured,
                args.save_hub_folder or Path(scratch) / "run",
                license=args.license,
                pretty_name=args.title,
                repo_id=args.push_to_hub,
                options=dict(args.card_option),
                page=page,
            )
            if args.save_hub_folder:
                print(
                    f"wrote {folder}: the card and {len(run.row_sets)} config(s) (datasets.load_dataset({str(folder)!r}, "
                    "CONFIG))"
                )
            if args.push_to_hub:
                print(f"pushed to {push_run(folder, args.push_to_hub, private=not args.public)}")
    return DONE
