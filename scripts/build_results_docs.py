"""The named runs behind the Results page's generated sections: each one's report.json and PNGs live in
docs/results/NAME/ (committed), and `make docs` renders them (docs/hooks.py, ``<!-- generated: results NAME -->``,
calls :func:`section`). Every run here reads recorded verdicts (no model is loaded): seconds on a CPU.

    python scripts/build_results_docs.py            # rerun every run, write docs/results/NAME/ (needs ../shared/data)
    python scripts/build_results_docs.py --check    # rerun into a temporary folder; exit 1 where a figure differs
    python scripts/build_results_docs.py --list     # the runs and their commands

Figures shown in more than one place (the README's results table, the shipped critic's card, docs/results.md, the
recipe README, the choosing and selective-judging pages) are rendered from one committed report each, into the
blocks between ``<!-- figures: NAME -->`` and ``<!-- /figures: NAME -->`` that :data:`PLACES` names:

    python scripts/build_results_docs.py --write-figures   # render every block from its report, in place
    python scripts/build_results_docs.py --check-figures   # exit 1 naming each block that differs from its render
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


# ------------------------------------------------------------------------------ figure blocks: one report, every copy
CRITIC = RESULTS / "smollm2-135m-critic" / "report.json"  # the shipped critic's accuracy figures and the demo
LOCAL_JURY = RESULTS / "local-jury-halves" / "report.json"  # scripts/smollm2-135m/jury_halves.py, local_jury.yaml
CHEAP_JURY = RESULTS / "local-jury-evalp" / "reward_length_jury_halves.json"  # the same, reward_length_jury.yaml
BENCHMARKS = {  # the jury reports' benchmarks: the row label of their test half (rows filled in)
    "hhh": "HHH alignment, test half, {n} pairs",
    "autoj": "Auto-J Eval-P, test half, all {n} pairs without a tie",
    "mt_vicuna": "MT-Bench + Vicuna-Bench turn 1, test half, {n} pairs",
}
TITLES = {"hhh": "HHH alignment", "autoj": "Auto-J Eval-P (no ties)", "mt_vicuna": "MT-Bench + Vicuna-Bench pairs"}
BLOCK = re.compile(r"(<!-- figures: (\S+) -->\n)(.*?)(<!-- /figures: \2 -->)", re.S)


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _table(header: list[str], rows: list[list[str]], left: int = 2, text_last: bool = False) -> list[str]:
    """A Markdown table: the first ``left`` columns (and the last, with ``text_last``) left-aligned as text, the
    others right-aligned as figures."""
    rule = ["---"] * left + ["---:"] * (len(header) - left - text_last) + ["---"] * text_last
    return ["| " + " | ".join(row) + " |" for row in (header, rule, *rows)]


def _figure(key: str, value: float) -> str:
    """An accuracy in points with one decimal; a Pearson correlation with three."""
    return f"{value:.3f}" if key.endswith("pearson") else f"{value:.1f}"


def heldout_table() -> str:
    """The shipped critic, the untrained critic and length on the whole held-out benchmarks (one run)."""
    report = _read(CRITIC)
    run = report["heldout"]
    names = list(report["critics"])
    rows = [
        [run["rows"][key], label, *(_figure(key, run["values"][c][key]) for c in names), run["published"].get(key, "")]
        for key, label in report["figures"].items()
    ]
    header = ["benchmark", "figure", *report["critics"].values(), "published"]
    return "\n".join([f"**Run**: {run['run']}: `{run['command']}`.", "", *_table(header, rows, text_last=True)])


def halves_table() -> str:
    """Dev and test halves: the four figures of each critic and its mean margin over length (the dev score)."""
    report = _read(CRITIC)
    run = report["halves"]
    rows = []
    for half, critics in run["values"].items():
        for name, values in critics.items():
            figures = [_figure(key, values[key]) for key in report["figures"]]
            rows.append([half, report["critics"][name], *figures, f"{values['mean_margin']:.2f}"])
    lines = [f"**Run**: {run['run']}: `{run['command']}`. Rows:", ""]
    lines += [f"- {half}: " + "; ".join(run["rows"][half].values()) for half in run["rows"]]
    header = [
        "half",
        "critic",
        "HHH two-way",
        "Eval-P first order",
        "MT+Vicuna within-question",
        "MT-Bench row Pearson",
    ]
    return "\n".join([*lines, "", *_table([*header, "mean margin over length"], rows)])


def _selective(block: dict) -> str:
    """A risk-coverage block as the results table shows it: AURC (coverage at 80% agreement, %)."""
    return f"{block['aurc']:.3f} ({100 * block['coverage_at_agreement']['0.8']:.1f})"


def _demo(demo: dict, critic: str) -> str:
    """A critic's demo count: ``12 / 16``, or one count per dtype where the dtypes differ (a reward margin near 0
    can change sign between float32 and bfloat16)."""
    counts = {dtype: right[critic] for dtype, right in demo["right"].items() if right[critic] is not None}
    if len(set(counts.values())) == 1:
        return f"{next(iter(counts.values()))} / {demo['of']}"
    return "; ".join(f"{n} / {demo['of']} ({dtype})" for dtype, n in counts.items())


def readme_table() -> str:
    """The README's table: the accuracy figures and the demo of each critic on the test halves, then the selective
    view (AURC and coverage at 80% agreement) with the cheap and the local jury."""
    report, local, cheap = _read(CRITIC), _read(LOCAL_JURY), _read(CHEAP_JURY)
    names = list(report["critics"])
    test, demo = report["halves"], report["demo"]
    rows = []
    for key, label in report["figures"].items():
        values = [_figure(key, test["values"]["test"][c][key]) for c in names]
        rows.append([test["rows"]["test"][key], label, *values[:2], "–", "–", values[2]])
    right = [_demo(demo, c) for c in names]
    rows.append([demo["rows"], "verdicts right", *right[:2], "–", "–", right[2]])
    for bench, label in BENCHMARKS.items():
        blocks, jury = local["benchmarks"][bench]["test"], cheap["benchmarks"][bench]["test"]["blocks"]
        picked = ["local-jury/smollm2-135m-critic", "local-jury/default-critic"]
        cells = [_selective(blocks["blocks"][name]) for name in picked]
        cells += [_selective(jury["reward-length-jury (fitted)"]), _selective(blocks["blocks"]["local-jury (fitted)"])]
        cells.append(_selective(blocks["blocks"]["longer-wins"]))
        rows.append([label.format(n=blocks["rows"]), "selective: AURC (coverage at 80% agreement)", *cells])
    header = ["benchmark", "figure", *list(report["critics"].values())[:2], "cheap jury", "local jury"]
    table = _table([*header, report["critics"]["longer-wins"]], rows)
    return "\n".join([*table, "", f"**The demo row**: {demo['run']}."])


def ranking_table() -> str:
    """The local configurations ranked by their mean AURC over the three test halves (lower first), beside length:
    each one's test AURC with its 95% interval over questions, and on how many halves it is below length's."""
    local, cheap = _read(LOCAL_JURY)["benchmarks"], _read(CHEAP_JURY)["benchmarks"]
    configurations = {
        "cheap jury: `smollm2-135m-critic` + `longer-wins`, fitted (`reward_length_jury.yaml`)": (
            cheap,
            "reward-length-jury (fitted)",
        ),
        "local jury: the cheap jury + the untrained critic's read-out, fitted (`local_jury.yaml`)": (
            local,
            "local-jury (fitted)",
        ),
        "`smollm2-135m-critic` alone": (local, "local-jury/smollm2-135m-critic"),
        "the untrained default critic's probability read-out alone": (local, "local-jury/default-critic"),
    }
    length = {bench: local[bench]["test"]["blocks"]["longer-wins"]["aurc"] for bench in BENCHMARKS}
    ranked = []
    for label, (report, name) in configurations.items():
        blocks = [report[bench]["test"]["blocks"][name] for bench in BENCHMARKS]
        below = sum(b["aurc"] < length[bench] for b, bench in zip(blocks, BENCHMARKS, strict=True))
        cells = [f"{b['aurc']:.3f} [{b['interval'][0]:.3f}, {b['interval'][1]:.3f}]" for b in blocks]
        ranked.append((sum(b["aurc"] for b in blocks) / len(blocks), label, cells, f"{below} of {len(blocks)}"))
    ranked.sort()
    rows = [[str(i), label, *cells, f"{mean:.3f}", below] for i, (mean, label, cells, below) in enumerate(ranked, 1)]
    baseline = [f"{length[b]:.3f}" for b in BENCHMARKS]
    rows.append(["–", "`longer-wins` (the baseline)", *baseline, f"{sum(length.values()) / len(length):.3f}", "–"])
    halves = [f"{TITLES[b]}, {local[b]['test']['rows']} pairs" for b in BENCHMARKS]
    return "\n".join(_table(["rank", "configuration", *halves, "mean AURC", "below length on"], rows))


def local_jury_tables() -> str:
    """Each benchmark's table of the local jury's report: every aggregate, member and baseline, dev and test."""
    report = _read(LOCAL_JURY)["benchmarks"]
    lines = []
    for bench, title in TITLES.items():
        result = report[bench]
        test, dev = result["test"], result["dev"]
        lines += [
            f"**{title}**, test half, {test['rows']} pairs (dev {dev['rows']}); chosen on dev: {result['chosen']}"
        ]
        rows = []
        for name, block in test["blocks"].items():
            dev_aurc = dev["dev_aurc"].get(name)
            at = block["agreement_at_coverage"]
            shown = name + (" (baseline)" if block.get("baseline") else "")
            aurc = f"{block['aurc']:.3f} [{block['interval'][0]:.3f}, {block['interval'][1]:.3f}]"
            coverage = f"{100 * block['coverage_at_agreement']['0.8']:.1f}"
            dev_cell = "" if dev_aurc is None else f"{dev_aurc:.3f}"
            rows.append([shown, dev_cell, aurc, f"{100 * at['1.0']:.1f}", f"{100 * at['0.5']:.1f}", coverage])
        header = ["critic", "dev AURC", "test AURC [95% interval]", "agreement @ 100%", "@ 50%"]
        lines += ["", *_table([*header, "coverage @ 80% agreement"], rows, left=1), ""]
    return "\n".join(lines[:-1])


#: the cascades calibrated on all of Auto-J Eval-P at 80% target agreement (1,000 splits): label -> committed report
GUARANTEE_RUNS = {
    "local jury alone, fitted and bounded on the same rows (before)": "local-jury-evalp/local_jury_fit_rows_shared.json",
    "local jury alone, fit rows apart (now)": "local-jury-evalp/local_jury.json",
    "cheap jury (`reward_length_jury.yaml`) alone, fit rows apart": "local-jury-evalp/reward_length_jury.json",
    "local jury → Auto-J-13B, fit rows apart": "local-jury-evalp/jury_then_autoj.json",
    "local jury → Auto-J-13B, `fit_share: 0.3` (sensitivity)": "local-jury-evalp/jury_then_autoj_fit_share_0.3.json",
    "local jury → Auto-J-13B, `fit_share: 0.3`, Auto-J `delta_share: 0.8` (sensitivity)": (
        "local-jury-evalp/jury_then_autoj_fit_share_0.3_delta_share_0.8.json"
    ),
    "`smollm2-135m-critic` → default critic → Auto-J-13B": "local-jury-evalp/autoj_cascade.json",
    "Auto-J-13B alone": "autoj-13b-selective/report.json",
}
STRONG = "auto-j-13b"  # the strong critic whose calls a cascade saves


def _guarantee_row(label: str, report: dict, target: float = 0.8) -> list[str]:
    """One cascade's row: its failing splits (bold where above delta), success rate, coverage, the local critics'
    shares and how often the strong critic was asked."""
    level = next(lv["cascade"] for lv in report["levels"] if abs(lv["target"] - target) < 1e-9)
    splits = level["splits"]
    empty = level.get("empty_splits", level.get("vacuous", 0))  # "vacuous": the name in reports before this one
    kept = splits - empty
    successes = level.get("successes", round(level["success_rate"] * kept))
    failing = 100 * (kept - successes) / splits
    failed = f"**{failing:.1f} (above δ)**" if failing > 100 * report["delta"] else f"{failing:.1f}"
    coverage = level["coverage"]
    local = [100 * s for s, c in zip(level["shares"], report["critics"], strict=True) if c != STRONG]
    asked = f"{100 * level['strongest_asked']:.1f}" if STRONG in report["critics"] else "–"
    return [
        label,
        failed,
        f"{100 * successes / kept:.1f} ({successes} of {kept})",
        f"{100 * coverage['mean']:.1f} [{100 * coverage['low']:.1f}, {100 * coverage['high']:.1f}]",
        " / ".join(f"{s:.1f}" for s in local) or "–",
        asked,
    ]


def guarantee_table() -> str:
    """The cascades calibrated on all of Eval-P: how often the guarantee failed, what they kept, what they saved."""
    rows = [_guarantee_row(label, _read(RESULTS / path)) for label, path in GUARANTEE_RUNS.items()]
    header = ["cascade", "failing splits % (guarantee: ≤ 10)", "success % (of splits keeping rows)", "coverage %"]
    return "\n".join(_table([*header, "local share %", "Auto-J-13B asked on %"], rows, left=1))


#: block name -> (its renderer, the files that show it); a block is the renderer's output, byte for byte.
CARD = "src/hf_critic/critics/smollm2_135m_critic/README.md"
PLACES: dict[str, tuple] = {
    "critic-test-halves": (readme_table, ["README.md", CARD]),
    "critic-halves": (halves_table, [CARD, "recipes/smollm2-135m/README.md"]),
    "critic-heldout": (heldout_table, [CARD, "docs/results.md"]),
    "local-ranking": (ranking_table, ["docs/judge/choosing.md", "docs/judge/selective.md"]),
    "local-jury-halves": (local_jury_tables, ["docs/judge/selective.md"]),
    "eval-p-guarantee": (guarantee_table, ["docs/judge/selective.md"]),
}


def figure_blocks(text: str) -> dict[str, str]:
    """The ``<!-- figures: NAME -->`` blocks of a file's text, ``{NAME: content}``.

    Raises:
        ValueError: a block name appears twice in one file.
    """
    found: dict[str, str] = {}
    for match in BLOCK.finditer(text):
        if match.group(2) in found:
            raise ValueError(f"figure block {match.group(2)!r} appears twice")
        found[match.group(2)] = match.group(3)
    return found


def check_figures(root: Path = REPO) -> list[str]:
    """One line per block of :data:`PLACES` under ``root`` that is missing, or whose content is not what its
    renderer makes of the committed reports now (empty: every copy is its report's)."""
    problems = []
    for name, (render, files) in PLACES.items():
        expected = render() + "\n"
        for path in files:
            blocks = figure_blocks((root / path).read_text(encoding="utf-8"))
            if name not in blocks:
                problems.append(f"{path}: no <!-- figures: {name} --> block")
            elif blocks[name] != expected:
                problems.append(f"{path}: block {name} differs from what {render.__name__}() renders")
    return problems


def write_figures(root: Path = REPO) -> list[str]:
    """Render every block of :data:`PLACES` in place (each file must hold its markers); returns the files changed."""
    changed = []
    for path in sorted({p for _, files in PLACES.values() for p in files}):
        file = root / path
        text = file.read_text(encoding="utf-8")
        blocks = set(figure_blocks(text))
        if blocks - set(PLACES):
            raise ValueError(f"{path}: no renderer for the figure blocks {sorted(blocks - set(PLACES))}")
        new = BLOCK.sub(lambda m: m.group(1) + PLACES[m.group(2)][0]() + "\n" + m.group(4), text)
        if new != text:
            file.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def figures_command(write: bool) -> int:
    """``--write-figures`` (render every block, print the files changed) or ``--check-figures`` (print each block
    that is missing or differs; exit status 1 when any does)."""
    if write:
        for path in write_figures():
            print(f"wrote the figure blocks of {path}")
    problems = check_figures()
    for line in problems:
        print(line)
    if not problems:
        print(f"every figure block ({len(PLACES)} blocks) is what its committed report renders")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="rerun into a temporary folder and compare the figures")
    parser.add_argument("--list", action="store_true", help="print each run's command and exit")
    parser.add_argument("--write-figures", action="store_true", help="render every figure block in place and exit")
    parser.add_argument(
        "--check-figures", action="store_true", help="exit 1 naming each figure block that differs from its render"
    )
    parser.add_argument("names", nargs="*", help=f"runs to redo (default: all: {', '.join(RUNS)})")
    args = parser.parse_args(argv)
    if args.write_figures or args.check_figures:
        return figures_command(write=args.write_figures)
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
