"""``hf-critic view``: a run as one offline HTML page (rows, filters, figures, two critics side by side) and as a Hub
dataset folder that ``datasets.load_dataset`` reads back.

The pages are rendered for a critiques file (two critics on the same rows, one response hostile), a meta-eval run, a
calibrate run and a cascade with abstentions, and loaded in headless Chromium (as tests/test_docs.py does): the rows,
filters and plots are there and the hostile response stays text. ``HF_CRITIC_SAVE_SCREENSHOT=1`` saves the screenshot
of the docs page "Look at a run" to docs/img/view.png.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hf_critic.cli import main
from hf_critic.reports import load_run, measure, push_run, render_view, write_hub_folder
from hf_critic.reports.view_rows import row_outcomes

REPO = Path(__file__).resolve().parents[2]
HOSTILE = '<script>document.title="pwned";document.body.dataset.pwned="yes"</script><b>bold?</b>'
LONG = "The tilt of the axis, not the distance to the Sun, makes the seasons. " * 6
ROWS = 12


def _pairs() -> list[dict]:
    """Twelve pairs with human labels and categories; row 3's second response is hostile markup, row 0's long."""
    rows = []
    for i in range(ROWS):
        rows.append(
            {
                "id": f"q{i}",
                "question": f"Question {i}: which answer is better?",
                "response_1": LONG if i == 0 else f"Answer one to {i}.",
                "response_2": HOSTILE if i == 3 else f"Answer two to {i}.",
                "label": i % 2,
                "category": "math" if i < 6 else "writing",
            }
        )
    return rows


def _critic(label_of, confidence_of, status_of=lambda i: "ok") -> list[dict]:
    """The pairs with one critic's critique columns (as ``compare --swap`` writes them)."""
    out = []
    for i, row in enumerate(_pairs()):
        label, status = label_of(i), status_of(i)
        out.append(
            {
                **row,
                "critique_label": label,
                "critique_status": status,
                "critique_explanation": None
                if label is None
                else f"Critique of pair {i}: {HOSTILE if i == 3 else 'fine'}",
                "critique_label_swapped": label,
                "critique_confidence": None if label is None else confidence_of(i),
            }
        )
    return out


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def two_critics(tmp_path) -> tuple[Path, Path]:
    """``alpha``: right on even rows, wrong on odd ones (surest on the last), no verdict on row 5; ``beta``: always
    response 1 (right on even rows), unsure."""
    alpha = _critic(lambda i: None if i == 5 else 0, lambda i: 0.5 + i / 30, lambda i: "unparsed" if i == 5 else "ok")
    beta = _critic(lambda i: 0 if i % 3 else 1, lambda i: 0.4)
    return _write(tmp_path / "alpha" / "pairs.jsonl", alpha), _write(tmp_path / "beta" / "pairs.jsonl", beta)


def _unpacked(html: str) -> dict:
    """The rows a page carries (gzip JSON in base64)."""
    text = re.search(r'<script id="run-data" type="application/octet-stream">([^<]*)</script>', html).group(1)
    return json.loads(gzip.decompress(base64.b64decode(text)))


# ---------------------------------------------------------------------------------------------- rows and outcomes
def test_each_row_is_right_wrong_abstained_without_a_verdict_or_unlabelled():
    verdicts, statuses = [0, 1, None, 2, None, 0], ["ok", "ok", "unparsed", "ok", "abstained", "ok"]
    humans = [0, 0, 1, 2, 1, None]
    assert row_outcomes(verdicts, statuses, humans, True, 0) == [
        "right",
        "wrong",
        "no verdict",
        "right",
        "abstained",
        "unlabelled",
    ]
    assert row_outcomes([7.0, 4.0, 9.5], [None] * 3, [8.0, 8.0, 8.0], False, 1.5) == ["right", "wrong", "right"]


def test_the_page_carries_every_row_as_text_with_its_outcome_and_the_two_critics_disagreements(two_critics):
    alpha, beta = two_critics
    html = render_view(measure(load_run([str(alpha), str(beta)]), bootstrap=0, plots=False))
    assert HOSTILE not in html and "<b>bold?</b>" not in html  # the judged text is only in the packed data
    data = _unpacked(html)
    first, second = data["sets"]
    assert (first["name"], second["name"]) == ("alpha on pairs", "beta on pairs")
    assert first["counts"] == {"right": 6, "wrong": 5, "abstained": 0, "no verdict": 1, "unlabelled": 0}
    assert [r["o"] for r in first["rows"][:6]] == ["right", "wrong", "right", "wrong", "right", "no verdict"]
    assert data["texts"][first["rows"][3]["r"][1]] == HOSTILE
    assert first["rows"][5]["v"] is None and first["rows"][5]["st"] == "unparsed" and first["rows"][5]["conf"] is None
    # row 5: one critic gave no verdict; rows 0, 3, 6, 9: beta says response 2
    (pair,) = data["pairs"]
    assert pair == {"a": 0, "b": 1, "rows": [0, 3, 5, 6, 9], "compared": ROWS}
    assert 'id="headline"' in html and ">alpha</td><td>pairs</td><td>pairwise</td>" in html


def test_pointwise_scores_are_right_within_the_tolerance_and_the_page_stays_small(tmp_path):
    """Grades (``grade``'s columns) against human scores; 2,000 rows of about 1 KB of judged text each make a page
    under 1 MB (the rows gzip-compressed), where the same rows as JSONL take 2.9 MB."""
    import random

    words = "the answer explains why seasons change because axis tilt sunlight angle days longer winter".split()
    rng = random.Random(0)
    rows = []
    for i in range(2000):
        text = " ".join(rng.choice(words) for _ in range(160))
        rows.append(
            {
                "question": f"Question {i % 400}?",
                "response": text,
                "human_score": float(i % 10 + 1),
                "critique_score": float((i + i % 3) % 10 + 1),
                "critique_status": "ok",
                "critique_explanation": text[:300],
            }
        )
    path = _write(tmp_path / "graded.jsonl", rows)
    page = tmp_path / "graded.html"
    assert main(["view", str(path), "--output", str(page), "--no-plots", "--bootstrap", "0", "--tolerance", "1"]) == 0
    assert path.stat().st_size > 2_500_000 and page.stat().st_size < 1_000_000
    html = page.read_text(encoding="utf-8")
    (graded,) = _unpacked(html)["sets"]
    assert graded["task"] == "pointwise" and graded["rows"][1]["v"] == "3" and graded["rows"][1]["h"] == "2"
    # scores off by 0, 1 or 2 (2 on every third row, wrapping 10 -> 1 aside): right within 1 point, else wrong
    assert graded["counts"]["right"] + graded["counts"]["wrong"] == 2000 and graded["counts"]["wrong"] > 500
    assert "text-level Pearson" in html


def test_a_file_without_critique_columns_is_refused_naming_it(tmp_path, capsys):
    graded = _write(
        tmp_path / "graded.jsonl",
        [{"question": "q", "response": "r", "critique_score": 3.0, "human_score": s} for s in (4.0, "n/a")],
    )
    assert main(["view", str(graded), "--output", str(tmp_path / "x.html"), "--no-plots", "--bootstrap", "0"]) == 2
    assert f"{graded}: row 1: human_score 'n/a' is no number" in capsys.readouterr().err
    data = _write(tmp_path / "plain.jsonl", _pairs())
    assert main(["view", str(data), "--output", str(tmp_path / "x.html"), "--no-plots"]) == 2
    assert f"{data}: no critique_label or critique_score column" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing.jsonl"), "--output", str(tmp_path / "x.html")]) == 2
    assert "missing.jsonl: no such file or folder" in capsys.readouterr().err
    assert main(["view", str(data), "--output", str(tmp_path / "x.txt")]) == 2
    assert "--output" in capsys.readouterr().err and not (tmp_path / "x.txt").exists()


# ---------------------------------------------------------------------------------------------- the Hub folder
class FakeApi:
    """Records what an upload would send."""

    def __init__(self, token=None):
        self.calls = FakeApi.calls = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/datasets/{repo_id}"

    def upload_folder(self, **kwargs):
        self.calls.append(
            ("upload_folder", kwargs["repo_id"], sorted(p.name for p in Path(kwargs["folder_path"]).rglob("*")))
        )


def test_the_hub_folder_loads_back_with_the_same_rows_one_config_per_critic(two_critics, tmp_path):
    import datasets
    import yaml

    alpha, beta = two_critics
    run = load_run([f"alpha/pairs={alpha}", f"beta/pairs={beta}"])
    measured = measure(run, bootstrap=0, plots=False)
    folder = write_hub_folder(
        measured,
        tmp_path / "hub",
        license="cc-by-4.0",
        repo_id="org/run",
        options={"model": "tiny"},
        page=render_view(measured),
    )
    card = (folder / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---")[1])
    assert header["license"] == "cc-by-4.0"
    assert [c["config_name"] for c in header["configs"]] == ["alpha--pairs", "beta--pairs"]
    assert "- `model`: `tiny`" in card and "| `alpha--pairs` | alpha | pairs | pairwise | 12 | 6 | 5 | 0 | 1 |" in card
    for name, path in (("alpha--pairs", alpha), ("beta--pairs", beta)):
        loaded = datasets.load_dataset(str(folder), name, split="train")
        assert loaded.to_list() == [json.loads(line) for line in path.read_text().splitlines()]
    assert (folder / "report" / "view.html").is_file()
    api = FakeApi()
    assert push_run(folder, "org/run", api=api) == "https://huggingface.co/datasets/org/run"
    assert api.calls[0] == ("create_repo", "org/run", {"repo_type": "dataset", "private": True, "exist_ok": True})
    assert api.calls[1][0] == "upload_folder" and "README.md" in api.calls[1][2] and "view.html" in api.calls[1][2]


def test_save_hub_folder_and_push_to_hub_from_the_command_line(two_critics, tmp_path, capsys, monkeypatch):
    alpha, _ = two_critics
    argv = [
        "view",
        str(alpha),
        "--no-plots",
        "--bootstrap",
        "0",
        "--save-hub-folder",
        str(tmp_path / "hub"),
        "--license",
        "mit",
        "--card-option",
        "template=mtbench",
    ]
    assert main(argv) == 0
    assert "the card and 1 config(s)" in capsys.readouterr().out
    assert "license: mit" in (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    assert main(argv) == 2  # not over an existing folder without --overwrite
    assert "exists and is not empty (add --overwrite" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0
    monkeypatch.setattr("huggingface_hub.HfApi", FakeApi)  # the Hub is out of reach: the upload is recorded
    assert main([*argv[:5], "--push-to-hub", "org/run", "--public"]) == 0
    assert "pushed to https://huggingface.co/datasets/org/run" in capsys.readouterr().out
    assert FakeApi.calls[0] == ("create_repo", "org/run", {"repo_type": "dataset", "private": False, "exist_ok": True})
    assert {"README.md", "train-00000-of-00001.parquet", "view.html"} <= set(FakeApi.calls[1][2])
    other = _write(tmp_path / "mine" / "notes.txt", [])
    assert main([*argv[:-6], "--save-hub-folder", str(other.parent), "--overwrite"]) == 2
    assert "not a folder hf-critic view wrote" in capsys.readouterr().err and other.is_file()


# ---------------------------------------------------------------------------------------------- real runs
def _meta_eval(alpha: Path, tmp_path: Path) -> Path:
    """``hf-critic meta-eval`` of alpha's file; its folder holds the file's rows where a run there writes them."""
    out = tmp_path / "meta"
    assert main(["meta-eval", "--critiques", f"alpha/pairs={alpha}", "--output-dir", str(out)]) == 0
    shutil.copy(alpha, _write(out / "critiques" / "alpha" / "pairs.jsonl", []))
    return out


def _calibrate(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``hf-critic calibrate`` of a recorded judge (right on 8 of 12 rows, both orders agreeing there) with a report
    folder, and ``compare --cascade`` with its calibration (4 rows abstained)."""
    pairs = _write(tmp_path / "data.jsonl", _pairs())
    first = [r["label"] if i % 3 else 1 - r["label"] for i, r in enumerate(_pairs())]
    _write(tmp_path / "first.jsonl", [{"output": v} for v in first])
    _write(tmp_path / "swapped.jsonl", [{"output": 1 - r["label"]} for r in _pairs()])
    spec = {
        "critics": [
            {
                "name": "judge",
                "recorded": {
                    "benchmark": f"generic:{pairs}",
                    "verdicts": str(tmp_path / "first.jsonl"),
                    "swapped": str(tmp_path / "swapped.jsonl"),
                },
            }
        ]
    }
    (tmp_path / "rec.yaml").write_text(json.dumps(spec))
    calibration, report = tmp_path / "cal.json", tmp_path / "selective"
    assert (
        main(
            [
                "calibrate",
                "--data",
                str(pairs),
                "--cascade",
                str(tmp_path / "rec.yaml"),
                "--target-agreement",
                "0.8",
                "--delta",
                "0.2",
                "--min-rows",
                "5",
                "--output",
                str(calibration),
                "--report-dir",
                str(report),
                "--bootstrap",
                "0",
            ]
        )
        == 0
    )
    cascade = tmp_path / "cascade.jsonl"
    assert (
        main(
            [
                "compare",
                "--data",
                str(pairs),
                "--cascade",
                str(tmp_path / "rec.yaml"),
                "--calibration",
                str(calibration),
                "--output",
                str(cascade),
            ]
        )
        == 0
    )
    return report, calibration, cascade


def test_a_meta_eval_folder_shows_its_plots_and_report_beside_its_rows(two_critics, tmp_path):
    alpha, _ = two_critics
    run = load_run([str(_meta_eval(alpha, tmp_path))])
    assert [(r.critic, r.dataset) for r in run.row_sets] == [("alpha", "pairs")]
    html = render_view(measure(run, bootstrap=0))
    assert re.search(r'<img alt="confusion_alpha_pairs\.png" src="data:image/png;base64,', html)
    assert "report.md of <code>" in html
    assert html.count("<img ") == len(list((tmp_path / "meta").glob("*.png")))  # the folder measured it: no re-run


def test_a_calibrate_run_and_a_cascade_show_thresholds_and_abstentions(tmp_path):
    report, calibration, cascade = _calibrate(tmp_path)
    data = _unpacked(
        html := render_view(measure(load_run([str(report), str(calibration), str(cascade)]), bootstrap=0, plots=False))
    )
    assert [s["name"] for s in data["sets"]] == ["judge on selective", f"{tmp_path.name} on cascade"]
    assert data["sets"][1]["counts"]["abstained"] == 4 and data["sets"][1]["counts"]["wrong"] == 0
    assert {r["by"] for r in data["sets"][1]["rows"] if r["o"] != "abstained"} == {"judge"}
    assert 'id="calibrations"' in html and "<td>judge</td><td>recorded</td>" in html
    assert 'alt="risk_coverage.png"' in html


# ---------------------------------------------------------------------------------------------- in a browser
def _chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless chromium not installed (apt-get install -y chromium; .ci/run does it)")
    return browser


def _browse(page: Path, tmp_path: Path, fragment: str = "", screenshot: Path | None = None) -> str:
    """The DOM of ``page`` after its script ran (the rows unpacked), or a screenshot of it."""
    action = (
        [f"--screenshot={screenshot}", "--window-size=1300,1400", "--hide-scrollbars"]
        if screenshot
        else ["--dump-dom"]
    )
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=15000",
        *action,
        page.as_uri() + fragment,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _shown_rows(dom: str) -> list[tuple[str, str]]:
    """``(outcome, confidence)`` of every row the table shows."""
    body = dom.split('<table id="rows">', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr class="o-[a-z-]+" data-outcome="([a-z ]+)">.*?<td class="num conf">([^<]*)</td>', body)


def test_the_page_works_offline_in_a_headless_browser_and_hostile_text_stays_text(two_critics, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the page names the files as given: alpha/pairs.jsonl
    page = tmp_path / "run.html"
    argv = ["view", "alpha/pairs.jsonl", "beta/pairs.jsonl", "--output", "run.html", "--bootstrap", "0"]
    assert main(argv) == 0
    dom = _browse(page, tmp_path)
    assert 'data-ready="yes"' in dom and "showing 12 of 12 rows" in dom
    assert len(_shown_rows(dom)) == ROWS
    assert "&lt;script&gt;document.title=" in dom and "pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]
    assert "<title>hf-critic run</title>" in dom and "data-pwned" not in dom
    assert '<option value="wrong">wrong (disagrees with the human)</option>' in dom
    assert '<option value="math">math</option>' in dom and '<option value="writing">writing</option>' in dom
    assert re.search(r'<img alt="confusion_alpha_pairs\.png" src="data:image/png;base64,', dom)
    assert "alpha on pairs vs beta on pairs: 5 of 12 rows differ" in dom
    assert "<details><summary>The tilt of the axis" in dom  # the long response folds
    wrong = _shown_rows(_browse(page, tmp_path, "#outcome=wrong&sort=conf-desc"))
    assert [o for o, _ in wrong] == ["wrong"] * 5
    assert [c for _, c in wrong] == ["0.867", "0.800", "0.733", "0.600", "0.533"]  # the surest mistakes first
    low = _shown_rows(_browse(page, tmp_path, "#set=1&low=1&threshold=0.5&category=writing"))
    assert len(low) == 6 and {c for _, c in low} == {"0.400"}
    saved = os.environ.get("HF_CRITIC_SAVE_SCREENSHOT") == "1"
    shot = REPO / "docs" / "img" / "view.png" if saved else tmp_path / "view.png"
    _browse(page, tmp_path, "#outcome=wrong&sort=conf-desc", screenshot=shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    assert (REPO / "docs" / "img" / "view.png").is_file()  # the docs page "Look at a run" shows it


def test_a_cascade_page_filters_its_abstentions(tmp_path):
    report, calibration, cascade = _calibrate(tmp_path)
    page = tmp_path / "cascade.html"
    assert main(["view", str(cascade), str(calibration), "--output", str(page), "--bootstrap", "0"]) == 0
    dom = _browse(page, tmp_path, "#outcome=abstained")
    assert [o for o, _ in _shown_rows(dom)] == ["abstained"] * 4 and "showing 4 of 12 rows" in dom
