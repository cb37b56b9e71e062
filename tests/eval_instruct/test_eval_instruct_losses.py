"""Items lost without a name: a difficulty answer that scores only some of its queries is not a good
answer (asked again, never cached; one cached by an older run is asked again, and the run says how many), and every
item a run does not pass on is named in ``failures.jsonl`` with its stage and reason. Against the fault-injecting
proxy of :mod:`hf_critic.testing.servers` in front of a scripted local server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets

from hf_critic.backends.cache import GenerationCache
from hf_critic.backends.openai_client import OpenAIClient
from hf_critic.backends.retry import RetryPolicy
from hf_critic.core import schema
from hf_critic.eval_instruct import stages
from hf_critic.eval_instruct.config import load_config
from hf_critic.eval_instruct.pipeline import run_eval_instruct
from hf_critic.eval_instruct.stage_report import StageReport
from hf_critic.testing.servers import FaultInjectionProxy, StubOpenAIServer
from tests._eval_instruct_support import SEEDS, recipe, scripted_reply

FAST = RetryPolicy(max_retries=3, max_invalid_retries=2, initial_backoff=0.01, max_backoff=0.02)
TEACHER_STAGES = {
    "augment_queries",
    "score_difficulty",
    "grade_pointwise_referenced",
    "path1_p2p_referenced",
    "path1_r2rf_pairwise",
    "path2_r2rf_pointwise",
    "path2_p2p_reference_free",
}
SEED_QUESTIONS = [json.loads(line)["question"] for line in SEEDS.read_text(encoding="utf-8").splitlines()]
POISON = SEED_QUESTIONS[1]  # the teacher never scores this one: its prompt's answer is always incomplete


def is_difficulty(body: dict) -> bool:
    return "rate the difficulty" in body["messages"][-1]["content"]


def dropping(question: str | None, reply=scripted_reply):
    """``reply`` answering difficulty prompts with the items of the queries shown only (not the prompt's example
    items), the item of ``question`` left out of every answer (None: the first query's item, from the first answer
    to each prompt only: a flaky teacher that gets it right when asked again)."""
    seen: dict[str, int] = {}

    def answer(body: dict) -> str:
        text = reply(body)
        if not is_difficulty(body):
            return text
        prompt = body["messages"][-1]["content"]
        shown = re.findall(r"@@(.+?)@@", prompt.split("Given the above")[0])
        lines = [line for line in text.splitlines() if re.search(r"@@(.+?)@@", line).group(1) in shown]
        seen[prompt] = seen.get(prompt, 0) + 1
        if question is None:
            return "\n".join(lines[1:]) if seen[prompt] == 1 else "\n".join(lines)
        return "\n".join(line for line in lines if f"@@{question}@@" not in line)

    return answer


def queries(n: int) -> datasets.Dataset:
    return datasets.Dataset.from_list(
        [{"query_id": f"q{i}", "question": f"Question number {i}?", "category": "Mathematics"} for i in range(n)]
    )


class WithoutCheck:
    """A teacher that keeps any answer, as the difficulty stage did before (an answer with one score was good)."""

    def __init__(self, client: OpenAIClient):
        self.client, self.name, self.ledger = client, client.name, client.ledger

    def complete_many(self, requests, *, stage, progress=True, check=None):
        return self.client.complete_many(requests, stage=stage, progress=False)


# ------------------------------------------------------------------------------------------------ the stage
def test_an_incomplete_difficulty_answer_is_asked_again_and_never_cached(tmp_path):
    cache = GenerationCache(tmp_path / "c.sqlite")
    with StubOpenAIServer(dropping(None)) as server:  # the first answer to every prompt lacks a score
        client = OpenAIClient(server.url, "m", retry=FAST, cache=cache)
        report = StageReport("score_difficulty")
        out = stages.score_difficulty(queries(7), client, report=report, progress=False)
        assert server.requests == 6  # 3 prompts (3 + 3 + 1 queries), each answered incompletely once
    assert out["query_id"] == [f"q{i}" for i in range(7)] and report.balanced and not report.rejected
    usage = client.ledger.stage("score_difficulty")
    assert usage.errors["rejected:incomplete"] == 2 and usage.errors["rejected:unparseable"] == 1
    assert len(cache) == 3  # only the complete answers


def test_an_always_incomplete_answer_fails_its_queries_by_name():
    with StubOpenAIServer(dropping("Question number 4?")) as server:
        client = OpenAIClient(server.url, "m", retry=FAST)
        report = StageReport("score_difficulty")
        out = stages.score_difficulty(queries(7), client, report=report, progress=False)
    assert out["query_id"] == ["q0", "q1", "q2", "q6"] and report.balanced
    assert [(f.stage, f.id) for f in report.failures] == [("score_difficulty", q) for q in ("q3", "q4", "q5")]
    assert {f.error for f in report.failures} == {"answer rejected: incomplete (after 3 attempts)"}


def test_an_incomplete_answer_cached_by_an_older_run_is_asked_again_and_counted(tmp_path):
    cache = GenerationCache(tmp_path / "c.sqlite")
    with StubOpenAIServer(dropping("Question number 1?")) as server:  # an older run kept the incomplete answer
        old = OpenAIClient(server.url, "m", retry=FAST, cache=cache)
        kept = stages.score_difficulty(queries(4), WithoutCheck(old), progress=False)
    assert len(kept) == 3 and len(cache) == 2
    with StubOpenAIServer(scripted_reply, port=server.port) as healthy:  # the same URL: one cache key
        client = OpenAIClient(healthy.url, "m", retry=FAST, cache=cache)
        report = StageReport("score_difficulty")
        out = stages.score_difficulty(queries(4), client, report=report, progress=False)
        assert healthy.requests == 1  # the incomplete answer only; the complete one came from the cache
    assert out["query_id"] == ["q0", "q1", "q2", "q3"] and not report.failures and not report.rejected
    assert client.ledger.stage("score_difficulty").errors["rejected_from_cache"] == 1


def test_every_rejection_is_named_by_its_stage():
    rows = [
        {"query_id": f"q{i}", "question": f"Q{i}?", "category": c}
        for i, c in enumerate(["Mathematics"] * 4 + ["Writing Ability"])
    ]
    report = StageReport("balance_queries")
    stages.balance_queries(datasets.Dataset.from_list(rows), total=2, seed=0, report=report)
    assert report.rejected == {"balance": 3}
    assert {(r.stage, r.reason) for r in report.rejected_items} == {("balance_queries", "balance")}
    # named: three of the four Mathematics queries (the lone Writing Ability one is always drawn)
    assert len(report.rejected_items) == 3 and {r.id for r in report.rejected_items} < {"q0", "q1", "q2", "q3"}


# ------------------------------------------------------------------------------------------------ the whole run
def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_poisoned_difficulty_answer_loses_nothing_unnamed_and_a_healthy_rerun_recovers_it(tmp_path, capsys):
    """One query the teacher never scores, flaky incomplete answers and 30% garbled or cut-off answers on the teacher's
    stages: every item not passed on is named in failures.jsonl (stage, id, kind, reason), as many per stage as the
    report counts; the same recipe against the healthy server gives exactly the clean run's rows."""
    with StubOpenAIServer(scripted_reply) as healthy:
        clean = run_eval_instruct(load_config(recipe(tmp_path / "clean", healthy.url)), echo=lambda line: None)
        with (
            StubOpenAIServer(dropping(POISON, dropping(None))) as poisoned,
            FaultInjectionProxy(
                poisoned.url, fault_rate=0.3, faults=("garbled", "length"), stages=TEACHER_STAGES, seed=5
            ) as proxy,
        ):
            faulty = run_eval_instruct(load_config(recipe(tmp_path / "faulty", proxy.url)), echo=lambda line: None)
            # the draws follow the requests' arrival order, which the client's threads vary (9 to 14 seen): that
            # faults happened is what counts here, their number is not the subject
            assert sum(proxy.faults_injected().values()) >= 3
        named = _lines(tmp_path / "faulty" / "out" / "failures.jsonl")  # before the rerun rewrites it
        echoed: list[str] = []
        healed = run_eval_instruct(load_config(recipe(tmp_path / "faulty", healthy.url)), echo=echoed.append)

    # the poisoned prompt's queries failed, by name, saying why
    difficulty = faulty.report.stage("score_difficulty")
    failed = {f.id: f.error for f in difficulty.failures}
    poisoned_prompt = [schema.query_id(q) for q in SEED_QUESTIONS[:3]]  # seeds go three to a prompt, in order
    assert set(poisoned_prompt) <= set(failed) and difficulty.balanced
    # its last attempt may also have been garbled or cut by the proxy: the reason is that attempt's
    assert all(
        re.fullmatch(r"answer rejected: (incomplete|unparseable|length) \(after 3 attempts\)", failed[q])
        for q in poisoned_prompt
    )
    assert all(e.startswith("answer rejected: ") for e in failed.values())
    # every item a stage did not pass on is named, as many as the report counts, with stage, kind and reason
    assert named == faulty.report.named_losses()
    for stage in faulty.report.stages:
        mine = [line for line in named if line["stage"] == stage.name]
        assert len([x for x in mine if x["kind"] == "failed"]) == stage.failed, stage.name
        assert len([x for x in mine if x["kind"] != "failed"]) == sum(stage.rejected.values()), stage.name
        assert all(line["id"] and line["reason"] for line in mine), stage.name
    assert {f["id"] for f in named if f["kind"] == "failed"} >= set(poisoned_prompt)
    # what balancing leaves out by design is named too, as left out (the clean run draws 10 of 13 queries)
    left_out = [line for line in clean.report.named_losses() if line["kind"] == "left_out"]
    assert [(x["stage"], x["reason"]) for x in left_out] == [("balance_queries", "balance")] * 3
    # a healthy rerun recovers every item the faults cost: the clean run's rows, nothing failed
    assert not healed.report.failures and healed.report.counts == clean.report.counts
    for name in clean.dataset:
        assert healed.dataset[name]["id"] == clean.dataset[name]["id"], name
        assert healed.dataset[name]["critique"] == clean.dataset[name]["critique"], name
    assert healed.report.reasked() == {}  # nothing bad was cached: the rerun asked only for what was missing
    assert re.search(r"score_difficulty: 13 queries in, 13 out, 0 failed", "\n".join(echoed))
