"""Critiques as feedback (hf-critic refine): the Table 4 layout on scripted models with hand-computed values, unparsed
judge verdicts counted, resumption after a kill with no generation repeated, and the loop over real HTTP."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from hf_critic.backends.base import Backend
from hf_critic.critic import Critic
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.prompts.rewrite import load_rewrite_prompt
from hf_critic.refine import ORIGINAL, refine

sys.path.insert(0, str(Path(__file__).parent))
from _eval_instruct_support import (  # noqa: E402
    SCRIPT_TEXT,
    build_scripted_model,
    start_transformers_serve,
    stop_server,
)

ANSWER = re.compile(r"\[The Start of Assistant's Answer\]\n(.*?)\n\[The End of Assistant's Answer\]", re.DOTALL)


class Scripted(Backend):
    """A backend whose answer depends only on the prompt, counting every conversation it generates for.

    Roles: ``critic`` writes ``critique``; ``generator`` appends `` IMPROVED`` to the answer when the critique says
    "add detail", else answers ``plain``; ``judge`` rates 3 + 2 per ``IMPROVED`` and writes no verdict for an
    answer containing ``UNPARSEABLE``. ``fail_after`` raises on that generate call (a kill mid-stage)."""

    batch_size = 1  # the cache commits every 4 conversations

    def __init__(self, name: str, role: str, critique: str = "", fail_after: int | None = None):
        self.name, self.role, self.critique, self.fail_after = name, role, critique, fail_after
        self.calls, self.generated = 0, 0

    def generate(self, conversations, config):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("killed")
        self.generated += len(conversations)
        return [[self._answer(c[-1]["content"])] for c in conversations]

    def _answer(self, prompt: str) -> str:
        if self.role == "critic":
            return self.critique
        if self.role == "generator":
            answer = prompt.split("[Answer]\n", 1)[1].split("\n\n[Critique]", 1)[0]
            return f"{answer} IMPROVED" if "add detail" in prompt.split("[Critique]", 1)[1] else "plain"
        answer = ANSWER.search(prompt).group(1)
        if "UNPARSEABLE" in answer:
            return "I cannot say."
        return f"Fine. Rating: [[{3 + 2 * answer.count('IMPROVED')}]]"

    def count_tokens(self, text):
        return len(text.split())

    def prompt_tokens(self, conversation):
        return sum(len(m["content"].split()) for m in conversation)

    def truncate_middle(self, text, num_tokens):
        return text


RECORDS = [
    {"question": "What is 2+2?", "response": "five", "reference": "4", "category": "math"},
    {"question": "Name a color.", "response": "Blue.", "reference": None, "category": "writing"},
    {"question": "What is 3*3?", "response": "UNPARSEABLE nine", "reference": "9", "category": "math"},
]


def _records_file(tmp_path):
    """RECORDS as a JSONL file, the command line's input."""
    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return data


def _critic(backend, cache=None):
    return Critic(backend, template="mtbench", decoding=DecodingConfig(max_new_tokens=32), cache_path=cache)


def _run(tmp_path, rounds=1, **fail):
    cache = tmp_path / "cache.sqlite"
    backends = {
        "a": Scripted("critic-a", "critic", "Please add detail. Rating: [[4]]", fail.get("a")),
        "b": Scripted("critic-b", "critic", "Too long. Rating: [[6]]"),
        "gen": Scripted("generator", "generator", fail_after=fail.get("gen")),
        "judge": Scripted("judge", "judge", fail_after=fail.get("judge")),
    }
    critics = {"a": _critic(backends["a"], cache), "b": _critic(backends["b"], cache)}
    result = refine(
        RECORDS, critics, backends["gen"], _critic(backends["judge"], cache), rounds=rounds, cache_path=cache
    )
    return result, backends


def test_table_outcomes_and_parse_rate_match_hand_computed_values(tmp_path):
    result, _ = _run(tmp_path)
    table = {row["row"]: row for row in result.table()}
    assert list(table) == [ORIGINAL, "a", "b"]
    # originals: five -> 3, Blue. -> 3, UNPARSEABLE -> no verdict (left out, counted)
    assert table[ORIGINAL]["cells"] == {"math": 3.0, "writing": 3.0}
    assert (table[ORIGINAL]["overall"], table[ORIGINAL]["judged"], table[ORIGINAL]["total"]) == (3.0, 2, 3)
    # critic a asks for detail: both parsed rewrites gain IMPROVED -> 5; the third stays unparsed
    assert table["a"]["cells"] == {"math": 5.0, "writing": 5.0} and table["a"]["judged"] == 2
    # critic b does not: every rewrite is "plain" -> 3, now parsed for all three
    assert table["b"]["cells"] == {"math": 3.0, "writing": 3.0} and table["b"]["judged"] == 3
    outcomes = {o["row"]: o for o in result.outcomes()}
    assert outcomes["a"] == {"row": "a", "win": 2, "tie": 0, "lose": 0, "not_compared": 1}
    assert outcomes["b"] == {"row": "b", "win": 0, "tie": 2, "lose": 0, "not_compared": 1}
    judge = result.judge_parse()
    assert (judge["total"], judge["parsed"], judge["statuses"]) == (9, 7, {"ok": 7, "unparsed": 2})
    assert result.critique_parse() == {"total": 6, "statuses": {"ok": 6}}
    rows = [r for r in result.rows if r["critic"] == "a"]
    assert rows[0]["critiqued"] == "five" and rows[0]["response"] == "five IMPROVED"
    assert rows[0]["critique"] == "Please add detail. Rating: [[4]]"
    markdown = result.markdown()
    assert "| original | 3.000 | 3.000 | 3.000 | 2/3 |" in markdown
    assert "| a | 2 | 0 | 0 | 1 |" in markdown
    assert "Judge verdicts parsed: 7/9" in markdown


def test_rounds_critique_the_previous_rewrite(tmp_path):
    result, _ = _run(tmp_path, rounds=2)
    table = {row["row"]: row for row in result.table()}
    assert table["a (round 1)"]["overall"] == 5.0
    assert table["a (round 2)"]["overall"] == 7.0  # "five IMPROVED IMPROVED"
    second = [r for r in result.rows if r["critic"] == "a" and r["round"] == 2]
    assert second[0]["critiqued"] == "five IMPROVED"
    assert {o["row"]: o["win"] for o in result.outcomes()}["a (round 2)"] == 2


def test_a_killed_run_resumes_without_repeating_a_generation(tmp_path):
    records = [{"question": f"Question {i}?", "response": f"answer {i}", "category": "c"} for i in range(12)]
    cache = tmp_path / "cache.sqlite"

    def run(fail_gen=None):
        critic = Scripted("critic-a", "critic", "Please add detail.")
        gen = Scripted("generator", "generator", fail_after=fail_gen)
        judge = Scripted("judge", "judge")
        result = refine(records, {"a": _critic(critic, cache)}, gen, _critic(judge, cache), cache_path=cache)
        return result, critic, gen, judge

    with pytest.raises(KeyboardInterrupt):
        run(fail_gen=2)  # the generator dies in its third chunk of 4: 8 of 12 rewrites committed
    result, critic, gen, judge = run()
    assert (critic.generated, gen.generated, judge.generated) == (0, 4, 24)  # only what the kill had not finished
    assert {k: vars(v) for k, v in result.cache.items()} == {
        "critique": {"total": 12, "cached": 12},
        "rewrite": {"total": 12, "cached": 8},
        "judge": {"total": 24, "cached": 0},
    }
    again, critic, gen, judge = run()
    assert (critic.generated, gen.generated, judge.generated) == (0, 0, 0)
    assert "critique 12/12 from cache; rewrite 12/12 from cache; judge 24/24 from cache" in again.markdown()

    # equal inputs in one call are generated once
    critic, gen, judge = (
        Scripted("c2", "critic", "Please add detail."),
        Scripted("g2", "generator"),
        Scripted("j2", "judge"),
    )
    same = refine([{"question": "Same?", "response": "same"}] * 3, {"a": _critic(critic)}, gen, _critic(judge))
    assert (critic.generated, gen.generated, judge.generated) == (1, 1, 2)
    assert len(same.rows) == 6


def test_rewrite_prompts_are_versioned_data(tmp_path):
    for language in ("en", "zh"):
        prompt = load_rewrite_prompt(language)
        assert prompt.version == "1" and prompt.fields == ("question", "response", "critique")
        text = prompt.messages({"question": "Q?", "response": "R.", "critique": "C!"})[0]["content"]
        assert "Q?" in text and "R." in text and "C!" in text
    with pytest.raises(KeyError, match="critique"):
        load_rewrite_prompt("en").messages({"question": "Q", "response": "R"})
    own = tmp_path / "mine.yaml"
    own.write_text("version: '2'\nsource: me\nlanguage: en\nfields: [question]\nprompt: '{question} {oops}'\n")
    with pytest.raises(ValueError, match="oops"):
        load_rewrite_prompt(str(own))
    with pytest.raises(ValueError, match="language"):
        load_rewrite_prompt("fr")


def test_refine_rejects_bad_input(tmp_path):
    judge = _critic(Scripted("judge", "judge"))
    with pytest.raises(ValueError, match="original"):
        refine(RECORDS, {ORIGINAL: judge}, Scripted("g", "generator"), judge)
    with pytest.raises(ValueError, match="rounds"):
        refine(RECORDS, {"a": judge}, Scripted("g", "generator"), judge, rounds=0)
    from hf_critic.io import RecordError

    with pytest.raises(RecordError, match="row 1, field 'question'"):
        refine(
            [{"question": "q", "response": "r"}, {"question": " ", "response": "r"}],
            {"a": judge},
            Scripted("g", "generator"),
            judge,
        )


def test_cli_runs_three_roles_on_one_local_model(tmp_path, tiny_model_dir, capsys):
    from hf_critic.cli import main

    data = _records_file(tmp_path)
    argv = [
        "refine",
        "--data",
        str(data),
        "--critic",
        f"tiny={tiny_model_dir}",
        "--generator",
        str(tiny_model_dir),
        "--judge",
        str(tiny_model_dir),
        "--template",
        "mtbench",
        "--max-new-tokens",
        "4",
        "--rewrite-max-new-tokens",
        "4",
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--output-dir",
        str(tmp_path / "out"),
        "--no-progress",
    ]
    assert main(argv) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [row["row"] for row in report["table"]] == [ORIGINAL, "tiny"]
    assert report["judge_parse"]["total"] == 6
    assert report["cache"]["critique"] == {"total": 3, "cached": 0}
    assert main([*argv, "--overwrite"]) == 0  # the reports exist: replacing them is asked for
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cache"] == {
        k: {"total": n, "cached": n} for k, n in (("critique", 3), ("rewrite", 3), ("judge", 6))
    }
    assert "Wall time:" in (tmp_path / "out" / "report.md").read_text()
    with pytest.raises(SystemExit):
        main(["refine", "--data", str(data), "--output-dir", str(tmp_path), "--rounds"])
    assert main(["refine", "--data", str(data), "--critic", "x", "--critic", "x", "--output-dir", str(tmp_path)]) == 2


@pytest.mark.slow
def test_the_loop_over_a_real_openai_compatible_server(tmp_path):
    """`transformers serve` on 127.0.0.1 (real HTTP) with a scripted tiny model as critic and generator; judge too."""
    from hf_critic.backends.openai import OpenAIBackend
    from hf_critic.backends.openai_client import OpenAIClient

    model = build_scripted_model(tmp_path / "model")
    proc, url = start_transformers_serve(model, tmp_path / "serve.log")
    try:

        def backend(stage):
            return OpenAIBackend(OpenAIClient(url, str(model), params={"max_tokens": 32}), stage=stage, progress=False)

        cache = tmp_path / "cache.sqlite"
        critic = Critic(
            backend("critique"), template="mtbench", cache_path=cache, decoding=DecodingConfig(max_new_tokens=32)
        )

        def run():
            return refine(
                RECORDS,
                {"served": critic},
                backend("rewrite"),
                critic,
                cache_path=cache,
                decoding=DecodingConfig(max_new_tokens=32),
            )

        result = run()
        rows = [r for r in result.rows if r["critic"] == "served"]
        assert [r["critique"] for r in rows] == [SCRIPT_TEXT] * 3  # the critic behind the server wrote them
        assert [r["response"] for r in rows] == [SCRIPT_TEXT.strip()] * 3  # and the generator rewrote from them
        judge = result.judge_parse()
        assert judge["total"] == 6 and sum(judge["statuses"].values()) == 6
        again = run()
        assert {k: (v.total, v.cached) for k, v in again.cache.items()} == {
            "critique": (3, 3),
            "rewrite": (3, 3),
            "judge": (6, 6),
        }
        # the command line: every role behind the server (--base-url), answers from the same cache
        from hf_critic.cli import main

        data = _records_file(tmp_path)
        argv = [
            "refine",
            "--data",
            str(data),
            "--base-url",
            url,
            "--critic",
            f"served={model}",
            "--generator",
            str(model),
            "--judge",
            str(model),
            "--template",
            "mtbench",
            "--max-new-tokens",
            "32",
            "--rewrite-max-new-tokens",
            "32",
            "--cache",
            str(tmp_path / "cli.sqlite"),
            "--output-dir",
            str(tmp_path / "out"),
            "--no-progress",
        ]
        assert main(argv) == 0
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        assert report["cache"]["rewrite"] == {"total": 3, "cached": 0} and report["judge_parse"]["total"] == 6
        assert main([*argv, "--overwrite"]) == 0
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        assert report["cache"]["judge"] == {"total": 6, "cached": 6}
    finally:
        stop_server(proc)
