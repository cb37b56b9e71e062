"""No bad answer kept, no run poisoned by one answer, empty results never pass as success, no secret in a
URL written out. Against the fault-injecting proxy of :mod:`hf_critic.testing.servers` in front of a scripted local server."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import datasets
import pytest

from hf_critic.backends.cache import GenerationCache
from hf_critic.backends.chat import BackendSource, ChatRequest
from hf_critic.backends.openai_client import OpenAIClient
from hf_critic.backends.retry import RetryPolicy
from hf_critic.core.redaction import redact_url
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.eval_instruct import stages
from hf_critic.eval_instruct.config import load_config
from hf_critic.eval_instruct.pipeline import run_eval_instruct
from hf_critic.eval_instruct.stage_report import ShortfallError, StageReport
from hf_critic.testing.servers import GARBLED_MARK, FaultInjectionProxy, StubOpenAIServer, chat_completion_body
from tests._eval_instruct_support import recipe, scripted_reply

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


def requests(n: int) -> list[ChatRequest]:
    return [ChatRequest(f"r{i}", [{"role": "user", "content": f"question {i}"}]) for i in range(n)]


def cut_off_then(good: str, bad: int):
    """A server answer hook: the first ``bad`` answers to each prompt are cut off (finish_reason "length")."""
    seen: dict[str, int] = {}

    def respond(body, headers):
        prompt = body["messages"][-1]["content"]
        seen[prompt] = seen.get(prompt, 0) + 1
        if seen[prompt] <= bad:
            return 200, {}, chat_completion_body(good[:5], "m", finish_reason="length")
        return 200, {}, chat_completion_body(good, "m")

    return respond


def cached_texts(path: Path) -> list[dict]:
    with sqlite3.connect(path) as db:
        return [json.loads(v) for (v,) in db.execute("SELECT value FROM generations")]


# ------------------------------------------------------------------------------------------------ the client
def test_a_cut_off_answer_is_asked_again_and_only_the_whole_one_is_cached(tmp_path):
    cache = GenerationCache(tmp_path / "c.sqlite")
    with StubOpenAIServer(respond=cut_off_then("Good answer. Rating: [[8]]", bad=2)) as server:
        client = OpenAIClient(server.url, "m", retry=FAST, cache=cache)
        results = client.complete_many(requests(2), stage="s", progress=False)
        assert server.requests == 6  # two cut-off answers, then the whole one, per request
    assert [r.text for r in results] == ["Good answer. Rating: [[8]]"] * 2
    usage = client.ledger.stage("s")
    assert usage.errors["rejected:length"] == 4 and usage.retries == 4 and usage.succeeded == 2
    assert [v["finish_reason"] for v in cached_texts(tmp_path / "c.sqlite")] == ["stop", "stop"]


def test_an_answer_that_never_passes_fails_the_item_is_not_cached_and_is_asked_again_next_run(tmp_path):
    cache = GenerationCache(tmp_path / "c.sqlite")
    check = lambda text: None if "[[" in text else "unparseable"  # noqa: E731
    with StubOpenAIServer(lambda body: "no verdict here") as server:
        client = OpenAIClient(server.url, "m", retry=FAST, cache=cache)
        results = client.complete_many(requests(1), stage="s", progress=False, check=check)
        assert server.requests == 3  # the first answer and max_invalid_retries=2 more
    assert results[0].text is None and results[0].error == "answer rejected: unparseable (after 3 attempts)"
    assert len(cache) == 0
    with StubOpenAIServer(lambda body: "Fine. [[7]]") as healthy:
        again = OpenAIClient(healthy.url, "m", retry=FAST, cache=cache).complete_many(
            requests(1), stage="s", progress=False, check=check
        )
        assert healthy.requests == 1 and again[0].text == "Fine. [[7]]"


def test_a_cached_answer_that_no_longer_passes_is_asked_again(tmp_path):
    cache = GenerationCache(tmp_path / "c.sqlite")
    with StubOpenAIServer(lambda body: "garbage ~~~") as server:  # cached by a run without a check (older version)
        OpenAIClient(server.url, "m", retry=FAST, cache=cache).complete_many(requests(1), stage="s", progress=False)
    check = lambda text: None if "[[" in text else "unparseable"  # noqa: E731
    # the same server (URL and model) again: the cache is keyed by both, so the stored entry is found
    with StubOpenAIServer(lambda body: "Fine. [[7]]", port=server.port) as server:
        client = OpenAIClient(server.url, "m", retry=FAST, cache=cache)
        result = client.complete_many(requests(1), stage="s", progress=False, check=check)[0]
        assert server.requests == 1 and result.text == "Fine. [[7]]" and not result.cached
    assert client.ledger.stage("s").errors["rejected_from_cache"] == 1


def test_a_raising_check_rejects_the_answer_not_the_run():
    def check(text):
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")

    with StubOpenAIServer(lambda body: "9" * 5001) as server:
        result = OpenAIClient(server.url, "m", retry=FAST).complete_many(
            requests(1), stage="s", progress=False, check=check
        )[0]
    assert result.text is None and "check_error: ValueError" in result.error


def test_truncated_answers_can_be_accepted_for_capped_generators():
    policy = RetryPolicy(max_retries=0, max_invalid_retries=0, accept_truncated=True)
    with StubOpenAIServer(respond=cut_off_then("a long response", bad=9)) as server:
        result = OpenAIClient(server.url, "m", retry=policy).complete_many(requests(1), stage="s", progress=False)[0]
    assert result.text == "a lon" and result.finish_reason == "length"


def test_a_local_source_does_not_cache_what_the_check_rejects(tmp_path, tiny_model_dir):
    from hf_critic.backends.transformers import TransformersBackend

    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), progress=False)
    cache = GenerationCache(tmp_path / "c.sqlite")
    source = BackendSource(backend, DecodingConfig(max_new_tokens=4), cache=cache)
    out = source.complete_many(requests(2), stage="gen", progress=False, check=lambda text: "unparseable")
    assert all(r.text is None and r.error == "answer rejected: unparseable" for r in out) and len(cache) == 0


# ------------------------------------------------------------------------------------------------ the stages
def test_a_5001_digit_difficulty_is_one_unreadable_answer_not_a_dead_run():
    answer = "1.@@a@@&&b&&##" + "9" * 5001 + "##\n2.@@c@@&&d&&##2##"
    queries = datasets.Dataset.from_list(
        [{"query_id": f"q{i}", "question": f"Question {i}?", "category": "Mathematics"} for i in range(2)]
    )

    class Teacher:
        name, ledger = "t", None

        def complete_many(self, reqs, *, stage, progress=True, check=None):
            from hf_critic.backends.chat import ChatResult

            # the check reads it without raising: incomplete (a client asks again); this teacher keeps it anyway
            assert check is not None and check(answer) == "incomplete"
            return [ChatResult(r.id, answer) for r in reqs]

    report = StageReport("score_difficulty")
    out = stages.score_difficulty(queries, Teacher(), report=report)
    assert out["query_id"] == ["q1"] and out["difficulty"] == [2]
    assert report.rejected == {"unparseable": 1} and report.balanced
    assert [(r.stage, r.id, r.reason) for r in report.rejected_items] == [("score_difficulty", "q0", "unparseable")]


def test_an_exception_in_one_items_parse_fails_that_item_only(monkeypatch):
    from hf_critic.eval_instruct.stages import _common

    real = _common.check_critique

    def flaky(text, **kwargs):
        if "BOOM" in text:
            raise OverflowError("int too large to convert")
        return real(text, **kwargs)

    monkeypatch.setattr(_common, "check_critique", flaky)
    good = "Correctness: 7. Accurate and complete.\n{'Correctness': 7, 'Overall Score': 7}"

    class Teacher:
        name = "t"

        def complete_many(self, reqs, *, stage, progress=True, check=None):
            from hf_critic.backends.chat import ChatResult

            return [ChatResult(r.id, good + (" BOOM" if r.id == "q/b" else "")) for r in reqs]

    rows = [
        {
            "query_id": "q",
            "question": "Q?",
            "reference": "R.",
            "response": f"resp {g}",
            "response_id": f"q/{g}",
            "generator": g,
        }
        for g in "abc"
    ]
    report = StageReport("grade_pointwise_referenced")
    out = stages.grade_pointwise_referenced(datasets.Dataset.from_list(rows), Teacher(), report=report)
    assert out["id"] == ["q/a", "q/c"] and report.balanced
    (failure,) = report.failures
    assert (failure.stage, failure.id) == ("grade_pointwise_referenced", "q/b")
    assert "OverflowError: int too large" in failure.error


# ------------------------------------------------------------------------------------------------ the whole run
def test_garbled_and_cut_off_answers_never_reach_the_data_or_the_cache(tmp_path):
    """30% of the teacher's answers garbled or cut off (status 200, well-formed): no row holds one, none is cached;
    a rerun against the healthy server leaves no fault-caused failure and gives the clean run's data."""
    with StubOpenAIServer(scripted_reply) as server:
        clean = run_eval_instruct(load_config(recipe(tmp_path / "clean", server.url)), echo=lambda line: None)
        with FaultInjectionProxy(
            server.url, fault_rate=0.3, faults=("garbled", "length"), stages=TEACHER_STAGES, seed=3
        ) as proxy:
            config = load_config(recipe(tmp_path / "faulty", proxy.url))
            faulty = run_eval_instruct(config, echo=lambda line: None)
            injected = proxy.faults_injected()
        # both kinds met (their numbers follow the requests' arrival order, which the client's threads vary)
        assert injected.get("garbled", 0) >= 2 and injected.get("length", 0) >= 2, injected
        for name, split in faulty.dataset.items():
            clean_rows = {row["id"]: row for row in clean.dataset[name]}
            for row in split:  # every kept row is exactly the clean run's row: nothing garbled or cut off
                assert row == clean_rows[row["id"]], (name, row["id"])
        for value in cached_texts(config.cache_path):
            assert GARBLED_MARK not in value["text"] and value["finish_reason"] != "length"
        usage = faulty.report.total_usage()
        assert usage.errors["rejected:length"] >= 1 and usage.retries >= sum(injected.values())
        for failure in faulty.report.failures:  # what still failed says why, after how many tries
            assert "answer rejected" in failure.error and "attempts" in failure.error
        # the same recipe against the healthy server: the fault-caused failures are gone
        healed = run_eval_instruct(load_config(recipe(tmp_path / "faulty", server.url)), echo=lambda line: None)
    assert not healed.report.failures
    assert healed.report.counts == clean.report.counts
    for name in clean.dataset:
        assert healed.dataset[name]["id"] == clean.dataset[name]["id"]


def test_an_empty_result_fails_in_one_line_and_writes_no_dataset_or_card(tmp_path, capsys):
    from hf_critic.cli import main

    with StubOpenAIServer(lambda body: "I would rather not say.") as server:
        path = recipe(tmp_path, server.url, queries={"augmentation": None})
        with pytest.raises(ShortfallError) as err:
            run_eval_instruct(load_config(path), echo=lambda line: None)
        code = main(["eval-instruct", "--config", str(path), "--no-progress"])
    message = str(err.value)
    assert "\n" not in message and message.startswith("no rows in any config: stage score_difficulty kept 0 of 10")
    assert "main reason: failed: answer rejected: unparseable (10)" in message
    stderr = capsys.readouterr().err.strip().splitlines()
    pointer = "(see docs/troubleshooting.md#eval-instruct)"
    assert code == 4 and stderr[-1] == f"hf-critic eval-instruct: error: {message} {pointer}"
    out = tmp_path / "out"
    assert (out / "report.json").is_file() and (out / "failures.jsonl").is_file()
    assert not (out / "dataset").exists() and not (out / "hub").exists()


def test_a_stage_losing_more_than_the_allowed_share_fails_the_run(tmp_path):
    with StubOpenAIServer(scripted_reply) as server:
        config = load_config(recipe(tmp_path, server.url, max_rejected_share=0.05))
        with pytest.raises(
            ShortfallError,
            match=r"^more than 5% of a stage.s items lost: stage cross_validation kept 9 of 10 pairs; main reason: label_mismatch \(1\)",
        ):
            run_eval_instruct(config, echo=lambda line: None)


def test_a_key_in_the_base_url_is_written_nowhere(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TEACHER_KEY", "sk-in-url-SECRET-5150")
    with StubOpenAIServer(scripted_reply) as server:
        url = server.url.replace("http://", "http://user:${TEACHER_KEY}@")
        config = load_config(recipe(tmp_path, url, queries={"augmentation": None}))
        assert "sk-in-url-SECRET-5150" in config.teacher.base_url  # expanded by the loader, for the requests
        result = run_eval_instruct(config, echo=lambda line: None)
    assert result.report.info["teacher_url"] == server.url.replace("http://", "http://user:***@")
    written = [p for p in Path(config.output_dir).rglob("*") if p.is_file() and p.name != "cache.sqlite"]
    assert any(p.name == "README.md" for p in written)
    for path in written:
        assert b"sk-in-url-SECRET-5150" not in path.read_bytes(), path
    client = OpenAIClient(config.teacher.base_url, "m")
    assert "SECRET" not in repr(client) and "user:***@" in repr(client)
    assert redact_url("https://api.example.com/v1") == "https://api.example.com/v1"
    assert redact_url("http://k@h:8/v1") == "http://***@h:8/v1"  # a lone user-info is the key itself


def test_the_report_separates_filter_rejections_from_failures_after_retries():
    from hf_critic.eval_instruct.stage_report import Failure

    report = StageReport("grading", items_in=5, items_out=2)
    report.reject("unparseable")
    report.reject("wrong_language")
    report.failures.append(Failure("grading", "a", "answer rejected: length (after 3 attempts)"))
    saved = report.to_dict()
    assert saved["rejected"] == {"unparseable": 1, "wrong_language": 1}
    assert saved["failed"] == 1 and saved["failed_by_reason"] == {"answer rejected: length": 1}


def test_the_critic_backend_retries_a_cut_off_critique_then_keeps_the_last_one():
    from hf_critic.backends.openai import OpenAIBackend

    with StubOpenAIServer(respond=cut_off_then("Good answer. Rating: [[8]]", bad=1)) as server:
        backend = OpenAIBackend(OpenAIClient(server.url, "m", retry=FAST), progress=False)
        assert backend.generate([[{"role": "user", "content": "a"}]], DecodingConfig()) == [
            ["Good answer. Rating: [[8]]"]
        ]
        assert server.requests == 2  # the cut-off answer was asked again
    with StubOpenAIServer(respond=cut_off_then("Good answer. Rating: [[8]]", bad=9)) as server:
        backend = OpenAIBackend(OpenAIClient(server.url, "m", retry=FAST), progress=False)
        assert backend.generate([[{"role": "user", "content": "b"}]], DecodingConfig()) == [
            ["Good"]
        ]  # stripped, as the local engines strip
        assert server.requests == 3  # bounded; the critic then reports the cut-off critique as unparsed


def test_a_one_token_probe_is_kept_and_served_from_the_cache(tmp_path):
    """A verdict read-out probe (logprobs, max_tokens 1) stops at its length by design: kept, cached, reused."""
    cache = GenerationCache(tmp_path / "c.sqlite")
    probe = [
        ChatRequest("p", [{"role": "user", "content": "x"}], {"logprobs": True, "top_logprobs": 5, "max_tokens": 1})
    ]
    with StubOpenAIServer(respond=cut_off_then("8", bad=9)) as server:
        first = OpenAIClient(server.url, "m", retry=FAST, cache=cache).complete_many(probe, stage="s", progress=False)
        again = OpenAIClient(server.url, "m", retry=FAST, cache=cache).complete_many(probe, stage="s", progress=False)
        assert server.requests == 1
    assert first[0].text == "8" and again[0].cached
