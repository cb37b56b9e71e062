"""Write the generated benchmark of README "Your own benchmark" (deterministic: the same files every run).

The layout is PandaLM's human-annotated test set (Wang et al., 2024, ``data/testset-v1.json``): ``motivation_app``,
``instruction``, ``input``, ``response1``, ``response2`` and three annotators' labels ``annotator1..3`` with
**0 = tie, 1 = response 1 better, 2 = response 2 better**. The texts are synthetic (no published text is copied);
the annotators agree with a hidden preference most of the time, and so do the two judges, one with a position bias:

* ``judge_a.jsonl`` / ``judge_a_swapped.jsonl``: a judge's free-text judgements in MT-Bench's ``pair-v2`` format
  (``[[A]]`` / ``[[B]]`` / ``[[C]]``), on the original order and on the swapped order (in swapped terms);
* ``judge_b.csv``: another judge, each pair judged in one order only (``exchange`` = 1 when response 2 was shown
  first), verdicts as ``model_a`` / ``model_b`` / ``tie`` of the order shown.

Run: ``python examples/pandalm_style/make_fixture.py`` (writes next to this file).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
APPS = ["writing", "coding", "math", "advice", "summarization"]
TASKS = {
    "writing": ("Write a short {thing} about {topic}.", ["poem", "story", "toast", "slogan"]),
    "coding": (
        "Write a Python function that {thing} for {topic}.",
        ["sorts records", "validates input", "parses dates"],
    ),
    "math": ("Solve the following {thing} about {topic}.", ["word problem", "equation", "probability question"]),
    "advice": ("Give practical {thing} on {topic}.", ["tips", "steps", "advice"]),
    "summarization": ("Summarise the following {thing} on {topic}.", ["article", "email", "report"]),
}
TOPICS = ["rivers", "budgets", "a school trip", "solar panels", "a chess club", "bread", "time zones", "libraries"]
OPENINGS = ["Sure.", "Here is an answer.", "Certainly!", "Of course.", "Let me help."]
N_PAIRS = 200


def _response(rng: np.random.Generator, quality: float, instruction: str) -> str:
    detail = " ".join(
        f"Point {i + 1} addresses {instruction.split()[-1].rstrip('.')}." for i in range(1 + int(quality * 4))
    )
    return f"{rng.choice(OPENINGS)} {detail}" + (" It checks every case." if quality > 0.6 else "")


def _label(pref: int, rng: np.random.Generator, noise: float) -> int:
    """PandaLM code (0 tie, 1 first, 2 second) of the hidden preference, wrong with probability ``noise``."""
    return int(rng.integers(0, 3)) if rng.random() < noise else pref


def main() -> None:
    rng = np.random.default_rng(13)
    rows, judge_a, judge_a_swapped, judge_b = [], [], [], []
    letters = {0: "C", 1: "A", 2: "B"}  # PandaLM code -> pair-v2 letter of the order shown
    words = {0: "tie", 1: "model_a", 2: "model_b"}
    for i in range(N_PAIRS):
        app = APPS[i % len(APPS)]
        template, things = TASKS[app]
        instruction = template.format(thing=rng.choice(things), topic=rng.choice(TOPICS))
        q1, q2 = rng.random(2)
        pref = 0 if abs(q1 - q2) < 0.15 else (1 if q1 > q2 else 2)
        rows.append(
            {
                "idx": i,
                "motivation_app": app,
                "instruction": instruction,
                "input": f"Context {i}: keep it under {50 + 10 * (i % 5)} words." if i % 3 else "",
                "response1": _response(rng, q1, instruction),
                "response2": _response(rng, q2, instruction),
                **{f"annotator{k}": _label(pref, rng, noise) for k, noise in ((1, 0.15), (2, 0.25), (3, 0.3))},
            }
        )
        # Judge A: both orders; prefers what is shown first when unsure (position bias), sometimes off-format.
        first = _label(pref, rng, 0.35)
        first = 1 if first == 0 and rng.random() < 0.5 else first
        swapped_pref = {0: 0, 1: 2, 2: 1}[pref]
        second = _label(swapped_pref, rng, 0.35)
        second = 1 if second == 0 and rng.random() < 0.5 else second
        judge_a.append({"question_id": i, "judgement": _judgement(first, letters, rng)})
        judge_a_swapped.append({"question_id": i, "judgement": _judgement(second, letters, rng)})
        # Judge B: one order per pair.
        exchange = int(rng.random() < 0.5)
        shown = {0: 0, 1: 2, 2: 1}[pref] if exchange else pref
        judge_b.append({"id": i, "exchange": exchange, "verdict": words[_label(shown, rng, 0.3)]})
    (HERE / "testset.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, items in (("judge_a.jsonl", judge_a), ("judge_a_swapped.jsonl", judge_a_swapped)):
        with (HERE / name).open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
    with (HERE / "judge_b.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "exchange", "verdict"])
        writer.writeheader()
        writer.writerows(judge_b)


def _judgement(code: int, letters: dict[int, str], rng: np.random.Generator) -> str:
    text = "Assistant A is more complete, while Assistant B misses details."
    if rng.random() < 0.05:  # off-format: no verdict marker, reported as unparsed
        return text + " Both are fine overall."
    return f"{text} Final verdict: [[{letters[code]}]]"


if __name__ == "__main__":
    main()
