"""The named runs behind the Results page's generated sections: each one's report.json and PNGs live in
docs/results/NAME/ (committed), and `make docs` renders them (docs/hooks.py, ``<!-- generated: results NAME -->``,
calls :func:`section`). Every run here reads recorded verdicts (no model is loaded): seconds on a CPU.

    python scripts/build_results_docs.py            # rerun every run, write docs/results/NAME/ (needs ../shared/data)
    python scripts/build_results_docs.py --check    # rerun into a temporary folder; exit 1 where a figure differs
    python scripts/build_results_docs.py --list     # the runs and their commands
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
AUTOJ = "../shared/data/autoj"
VERDICTS = f"{AUTOJ}/outputs/pairwise_example_output.jsonl,{AUTOJ}/outputs/pairwise_exchange_example_output.jsonl"

# name -> (what it is, the hf-critic arguments; OUT is the output folder)
RUNS: dict[str, tuple[str, list[str]]] = {
    "autoj-13b-meta-eval": (
        "Auto-J-13B's published verdicts (both orders, GAIR-NLP/auto-j) on Auto-J Eval-P's 1,392 human-labelled pairs",
        [
            "meta-eval",
            "--benchmark",
            f"autoj-eval-p=autoj:{AUTOJ}/test/testdata_pairwise.jsonl",
            "--verdicts",
            f"auto-j-13b={VERDICTS}",
            "--output-dir",
            "OUT",
        ],
    ),
    "autoj-13b-selective": (
        "Auto-J-13B's published verdicts calibrated for 80% agreement with humans on Auto-J Eval-P's 1,019 pairs "
        "without a tie (examples/cascades/autoj_13b.yaml), 1,000 random calibration / test splits",
        [
            "calibrate",
            "--data",
            f"{AUTOJ}/test/testdata_pairwise.jsonl",
            "--format",
            "autoj",
            "--drop-tie",
            "--cascade",
            "examples/cascades/autoj_13b.yaml",
            "--target-agreement",
            "0.8",
            "--output",
            "OUT/calibration.json",
            "--splits",
            "1000",
            "--report-dir",
            "OUT",
        ],
    ),
}
KEEP = ("report.json", "*.png")  # what is committed of a run's output


def command(name: str, out: Path | str) -> list[str]:
    return ["hf-critic", *[str(a).replace("OUT", str(out)) for a in RUNS[name][1]]]


def run(name: str, out: Path) -> None:
    """Run ``name`` into ``out`` (from the repository root, offline) and keep its report.json and PNGs only."""
    with tempfile.TemporaryDirectory() as tmp:
        args = command(name, tmp)[1:]
        code = f"import sys; from hf_critic.cli import main; sys.exit(main({args!r}))"
        env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
        subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, env={**os.environ, **env})
        out.mkdir(parents=True, exist_ok=True)
        for pattern in KEEP:
            for path in Path(tmp).glob(pattern):
                shutil.copyfile(path, out / path.name)


def figures(name: str, folder: Path = RESULTS) -> dict[str, str]:
    """The figures a run's section shows, from its report.json, as shown."""
    report = json.loads((folder / name / "report.json").read_text(encoding="utf-8"))
    if "runs" in report:  # meta-eval
        out = {}
        for r in report["runs"]:
            m = r["metrics"]
            for key in ("agreement", "consistency", "first_order_agreement"):
                out[f"{r['critic']}/{r['dataset']}/{key}"] = f"{100 * m[key]:.2f}"
            out[f"{r['critic']}/{r['dataset']}/cohen_kappa"] = f"{m['cohen_kappa']:.3f}"
        return out
    out = {}
    for level in report["levels"]:
        for method in ("cascade", "plain_cutoff"):
            f = level[method]
            out[f"{level['target']}/{method}/success_rate"] = f"{100 * f['success_rate']:.1f}"
            out[f"{level['target']}/{method}/coverage"] = f"{100 * f['coverage']['mean']:.1f}"
            out[f"{level['target']}/{method}/agreement"] = f"{100 * f['agreement']['mean']:.1f}"
    return out


def section(name: str) -> str:
    """The Markdown of run ``name``: what it is, its command, its figures (from report.json) and its PNGs."""
    what, _ = RUNS[name]
    report = json.loads((RESULTS / name / "report.json").read_text(encoding="utf-8"))
    lines = [
        f"{what}. Generated from [`docs/results/{name}/report.json`](results/{name}/report.json), written by:",
        "",
    ]
    lines += ["```text", " ".join(command(name, f"docs/results/{name}")), "```", ""]
    if "runs" in report:
        lines += ["| critic | benchmark | rows | agreement | consistency | first-order agreement | Cohen's kappa |"]
        lines += ["|---|---|---:|---:|---:|---:|---:|"]
        for r in report["runs"]:
            m = r["metrics"]
            lines.append(
                f"| {r['critic']} | {r['dataset']} | {r['n_rows']} | {100 * m['agreement']:.2f} | "
                f"{100 * m['consistency']:.2f} | {100 * m['first_order_agreement']:.2f} | {m['cohen_kappa']:.3f} |"
            )
    else:
        lines += [f"{report['rows']} rows, {report['splits']} splits, delta {report['delta']}:", ""]
        lines += [
            "| target | method | success rate % | coverage % | agreement on kept rows % |",
            "|---|---|---:|---:|---:|",
        ]
        for level in report["levels"]:
            for method, label in (("cascade", "fixed-sequence threshold"), ("plain_cutoff", "plain cut-off")):
                f = level[method]
                lines.append(
                    f"| {level['target']:.2f} | {label} | {100 * f['success_rate']:.1f} | "
                    f"{100 * f['coverage']['mean']:.1f} | {100 * f['agreement']['mean']:.1f} |"
                )
    lines.append("")
    for png in sorted((RESULTS / name).glob("*.png")):
        lines += [f"![{name}: {png.stem.replace('_', ' ')}](results/{name}/{png.name})", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="rerun into a temporary folder and compare the figures")
    parser.add_argument("--list", action="store_true", help="print each run's command and exit")
    parser.add_argument("names", nargs="*", help=f"runs to redo (default: all: {', '.join(RUNS)})")
    args = parser.parse_args(argv)
    names = args.names or list(RUNS)
    if args.list:
        for name in names:
            print(f"{name}: {' '.join(command(name, RESULTS.relative_to(REPO) / name))}")
        return 0
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            folder = Path(tmp) if args.check else RESULTS
            run(name, folder / name)
            if args.check:
                new, old = figures(name, Path(tmp)), figures(name)
                if new != old:
                    differ += 1
                    print(f"{name}: figures differ: {sorted(k for k in new if new[k] != old.get(k))}")
                else:
                    print(f"{name}: the committed report matches a rerun")
            else:
                print(f"wrote {(RESULTS / name).relative_to(REPO)}/")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
