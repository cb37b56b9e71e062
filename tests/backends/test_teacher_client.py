"""The OpenAI-compatible teacher client: concurrency, bounded retries with backoff, cache, accounting, secrets."""

from __future__ import annotations

import email.utils
import itertools
import random
import sqlite3
import threading
import time

import pytest

from hf_critic.backends.cache import GenerationCache
from hf_critic.backends.chat import BackendSource, ChatRequest, ChatResult, Pricing, UsageLedger, chat_cache_key
from hf_critic.backends.openai import OpenAIBackend
from hf_critic.backends.openai_client import OpenAIClient
from hf_critic.backends.retry import FatalAPIError, RequestsFailedError, RetryPolicy
from hf_critic.critic import Critic
from hf_critic.critic.decoding import DecodingConfig
from hf_critic.testing.servers import FaultInjectionProxy, StubOpenAIServer, free_port

FAST = RetryPolicy(max_retries=3, initial_backoff=0.01, max_backoff=0.02)
SECRET = "sk-test-SECRET-9f8e7d6c5b4a"


def requests(n: int, tag: str = "") -> list[ChatRequest]:
    return [ChatRequest(f"item-{i}", [{"role": "user", "content": f"question {i} {tag}"}]) for i in range(n)]


def client(url: str, **kwargs) -> OpenAIClient:
    kwargs.setdefault("retry", FAST)
    return OpenAIClient(url, "stub-model", **kwargs)


# ----------------------------------------------------------------------------------------------- concurrency
def test_bounded_concurrency_overlaps_requests():
    with StubOpenAIServer(delay=0.25) as server:
        c = client(server.url, concurrency=8)
        c.complete_many(requests(1, "warm-up"), stage="warm-up", progress=False)  # imports, first connection
        server.max_in_flight = 0
        results = c.complete_many(requests(16), stage="s", progress=False)
    assert [r.id for r in results] == [f"item-{i}" for i in range(16)]  # input order
    assert [r.text for r in results] == [f"question {i} "[::-1] for i in range(16)]
    # Overlap is shown by the server's own count of requests in flight, not by a wall-clock bound (flaky under load).
    assert server.max_in_flight == 8  # 8 at once: concurrent, and never more than the bound


# ----------------------------------------------------------------------------------------------- retries
def flaky(kinds):
    """A respond hook failing the first attempts of every request with the given kinds, in order."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def respond(body, headers):
        key = body["messages"][-1]["content"]
        with lock:
            n = seen[key] = seen.get(key, 0) + 1
        if n <= len(kinds):
            kind = kinds[n - 1]
            if kind == "429":
                return 429, {"Retry-After": "0"}, b'{"error": {"message": "slow down"}}'
            if kind == "500":
                return 500, {}, b'{"error": {"message": "boom"}}'
            if kind == "garbage":
                return 200, {}, b"<html>not json"
            if kind == "no_choices":
                return 200, {}, b'{"id": "x", "object": "chat.completion"}'
            if kind == "slow":
                return 3.0  # answer after 3 s: past the client's timeout
        return None

    return respond


@pytest.mark.parametrize("kinds", [["429"], ["500", "garbage"], ["no_choices", "500", "429"], ["slow"]])
def test_retryable_errors_are_retried_until_success(kinds):
    with StubOpenAIServer(respond=flaky(kinds)) as server:
        c = client(server.url, timeout=1.0)
        results = c.complete_many(requests(3), stage="s", progress=False)
    assert all(r.ok for r in results)
    assert all(r.attempts == len(kinds) + 1 for r in results)
    usage = c.ledger.stage("s")
    assert (usage.items, usage.succeeded, usage.failed) == (3, 3, 0)
    assert usage.requests == 3 * (len(kinds) + 1) and usage.retries == 3 * len(kinds)
    expected = {"slow": "timeout", "no_choices": "garbage"}
    assert sum(usage.errors.values()) == 3 * len(kinds)
    assert set(usage.errors) == {expected.get(k, k) for k in kinds}


def test_retries_are_bounded_and_the_item_is_reported_failed(tmp_path):
    always = lambda body, headers: (503, {}, b'{"error": {"message": "overloaded"}}')  # noqa: E731
    cache = GenerationCache(tmp_path / "c.sqlite")
    with StubOpenAIServer(respond=always) as server:
        c = client(server.url, cache=cache)
        results = c.complete_many(requests(2), stage="s", progress=False)
        assert server.requests == 2 * (FAST.max_retries + 1)
    assert [r.ok for r in results] == [False, False]
    assert all(r.text is None and "503" in r.error and "after 4 attempts" in r.error for r in results)
    assert c.ledger.stage("s").failed == 2
    assert len(cache) == 0  # failures are never cached: a rerun asks again


def test_client_errors_are_not_retried_and_auth_errors_stop_the_run():
    bad_request = lambda body, headers: (400, {}, b'{"error": {"message": "context too long"}}')  # noqa: E731
    with StubOpenAIServer(respond=bad_request) as server:
        results = client(server.url).complete_many(requests(2), stage="s", progress=False)
        assert server.requests == 2
    assert all(not r.ok and r.error.startswith("400") and r.attempts == 1 for r in results)

    unauthorized = lambda body, headers: (401, {}, b'{"error": {"message": "invalid api key"}}')  # noqa: E731
    with StubOpenAIServer(respond=unauthorized) as server:
        c = client(server.url, api_key_env="HF_CRITIC_TEST_KEY")
        with pytest.raises(FatalAPIError, match=r"401.*\$HF_CRITIC_TEST_KEY"):
            c.complete_many(requests(4), stage="s", progress=False)


def test_connection_errors_are_retried_then_reported():
    with StubOpenAIServer() as server:
        url = server.url
    results = client(url, timeout=1).complete_many(requests(1), stage="s", progress=False)  # nothing listens now
    assert not results[0].ok and "connection" in results[0].error and results[0].attempts == FAST.max_retries + 1


def test_backoff_is_exponential_with_jitter_and_honours_retry_after():
    policy = RetryPolicy(max_retries=5, initial_backoff=1.0, max_backoff=8.0, multiplier=2.0, jitter=0.5)
    rng = random.Random(0)
    for retry, base in enumerate([1, 2, 4, 8, 8]):
        delay = policy.delay(retry, rng)
        assert base * 0.5 <= delay <= base
    exact = RetryPolicy(initial_backoff=1.0, max_backoff=60.0, jitter=0.0)
    assert [exact.delay(k, rng) for k in range(4)] == [1.0, 2.0, 4.0, 8.0]
    assert exact.delay(0, rng, retry_after=5.0) == 5.0
    assert exact.delay(0, rng, retry_after=500.0) == 60.0  # capped
    with pytest.raises(ValueError):
        RetryPolicy(jitter=1.5)


def test_waits_between_retries_follow_the_policy():
    waits = []

    async def record(seconds):
        waits.append(seconds)

    policy = RetryPolicy(max_retries=3, initial_backoff=0.5, max_backoff=10.0, multiplier=3.0, jitter=0.0)
    with StubOpenAIServer(respond=flaky(["500", "500", "500"])) as server:
        c = OpenAIClient(server.url, "m", retry=policy, sleep=record)
        assert c.complete_many(requests(1), stage="s", progress=False)[0].ok
    assert waits == [0.5, 1.5, 4.5]


# ----------------------------------------------------------------------------------------------- cache
def test_cache_makes_a_rerun_free_and_keys_cover_model_messages_params(tmp_path):
    path = tmp_path / "teacher.sqlite"
    with StubOpenAIServer() as server:
        first = client(server.url, cache=GenerationCache(path), params={"temperature": 0})
        a = first.complete_many(requests(5), stage="s", progress=False)
        assert server.requests == 5
        again = client(server.url, cache=GenerationCache(path), params={"temperature": 0})
        b = again.complete_many(requests(5), stage="s", progress=False)
        assert server.requests == 5  # zero new requests
        assert [r.text for r in a] == [r.text for r in b] and all(r.cached for r in b)
        assert again.ledger.stage("s").cache_hits == 5 and again.ledger.stage("s").requests == 0
        # another sampling parameter or another model is another request
        client(server.url, cache=GenerationCache(path), params={"temperature": 0.7}).complete_many(
            requests(1), stage="s", progress=False
        )
        other = OpenAIClient(server.url, "other-model", cache=GenerationCache(path))
        other.complete_many(requests(1), stage="s", progress=False)
        assert server.requests == 7
        assert server.headers[-1]["x-hf-critic-stage"] == "s"
        # the model part of the key is its identity: base URL, name and what the server reports
        assert other.identity.startswith(f"{server.url}|other-model|")
        assert server.headers[-1]["x-hf-critic-cache-key"] == chat_cache_key(
            other.identity, requests(1)[0].messages, {}
        )
    key = chat_cache_key("m", [{"role": "user", "content": "x"}], {"temperature": 0, "seed": None})
    assert key == chat_cache_key("m", [{"role": "user", "content": "x"}], {"temperature": 0})
    assert key != chat_cache_key("m", [{"role": "user", "content": "x"}], {"temperature": 1})


def test_usage_and_cost_are_booked_per_stage():
    with StubOpenAIServer() as server:
        c = client(server.url, pricing=Pricing(input_per_million=2.0, output_per_million=10.0))
        c.complete_many(requests(2), stage="grading", progress=False)
        c.complete_many(requests(1, "x"), stage="p2p", progress=False)
    grading, p2p = c.ledger.stage("grading"), c.ledger.stage("p2p")
    # the stub reports usage = words of the messages / words of the answer: "question i " -> 2 and 2
    assert (grading.prompt_tokens, grading.completion_tokens) == (4, 4)
    assert grading.cost == pytest.approx((4 * 2.0 + 4 * 10.0) / 1e6)
    assert (p2p.prompt_tokens, p2p.items) == (3, 1)
    assert c.ledger.total().items == 3


# ----------------------------------------------------------------------------------------------- secrets
def test_api_key_comes_from_the_environment_and_is_never_stored(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HF_CRITIC_TEST_KEY", SECRET)
    path = tmp_path / "teacher.sqlite"
    with StubOpenAIServer() as server:
        c = client(server.url, api_key_env="HF_CRITIC_TEST_KEY", cache=GenerationCache(path))
        c.complete_many(requests(3), stage="s", progress=False)
        assert all(h["authorization"] == f"Bearer {SECRET}" for h in server.headers)
        assert all(SECRET not in str(b) for b in server.bodies)
        assert all(SECRET not in v for h in server.headers for k, v in h.items() if k != "authorization")
    assert SECRET not in repr(c) and SECRET not in str(vars(c)) and SECRET not in caplog.text
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert SECRET.encode() not in raw
    with sqlite3.connect(path) as db:
        assert not any(SECRET in k or SECRET in v for k, v in db.execute("SELECT key, value FROM generations"))
    with pytest.raises(ValueError, match="credentials"):
        OpenAIClient("http://127.0.0.1:1/v1", "m", params={"api_key": SECRET})


def test_without_a_key_a_placeholder_is_sent(monkeypatch):
    monkeypatch.delenv("HF_CRITIC_UNSET_KEY", raising=False)
    with StubOpenAIServer() as server:
        client(server.url, api_key_env="HF_CRITIC_UNSET_KEY").complete_many(requests(1), stage="s", progress=False)
        assert server.headers[0]["authorization"] == "Bearer EMPTY"


# ----------------------------------------------------------------------------------------------- fault proxy
def test_fault_injection_proxy_injects_about_the_asked_share():
    with StubOpenAIServer() as server, FaultInjectionProxy(server.url, fault_rate=0.3, delay=(0.0, 0.05)) as proxy:
        c = client(proxy.url, retry=RetryPolicy(max_retries=8, initial_backoff=0.001, max_backoff=0.002))
        results = c.complete_many(requests(60), stage="s", progress=False)
    assert all(r.ok for r in results)
    faulted = sum(1 for rec in proxy.log if rec.fault)
    assert 0.15 < faulted / len(proxy.log) < 0.45
    assert set(proxy.faults_injected()) <= {"429", "500", "garbage", "delay"}
    assert all(rec.stage == "s" and len(rec.key) == 64 for rec in proxy.log)


# ----------------------------------------------------------------------------------------------- backends
def test_openai_backend_runs_the_critic_against_a_server():
    reply = "The answer is right. Rating: [[8]]"
    with StubOpenAIServer(lambda body: reply) as server:
        backend = OpenAIBackend(client(server.url), progress=False)
        graded = Critic(backend, template="mtbench").grade([{"question": "2+2?", "response": "4"}])
        assert graded[0]["critique_score"] == 8.0
        assert server.bodies[0]["temperature"] == 0.0 and server.bodies[0]["max_tokens"] == 512
        sampled = backend.generate(
            [[{"role": "user", "content": "q"}]], DecodingConfig("self_consistency", num_samples=3)
        )
        assert sampled == [[reply] * 3]
        assert sorted(b.get("seed") for b in server.bodies[-3:]) == [0, 1, 2]  # arrival order varies
    with pytest.raises(ValueError, match="beam"):
        backend.generate([[{"role": "user", "content": "q"}]], DecodingConfig("beam"))
    assert backend.count_tokens("abcdefgh") == 2


def test_openai_backend_raises_when_items_fail():
    with StubOpenAIServer(respond=lambda body, headers: (500, {}, b"{}")) as server:
        backend = OpenAIBackend(client(server.url), progress=False)
        with pytest.raises(RequestsFailedError, match="1 of 1 request"):
            backend.generate([[{"role": "user", "content": "q"}]], DecodingConfig())


def test_a_server_gone_mid_run_is_one_error_naming_the_cache(tmp_path):
    """The server answers one request, then is gone: every backend call that needs it raises RequestsFailedError,
    one line with the counts, the first error, the redacted URL and the cache file; the answered request is kept."""
    ask = [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]
    cache = GenerationCache(tmp_path / "cache.sqlite")
    with StubOpenAIServer() as server:
        backend = OpenAIBackend(client(server.url, cache=cache), progress=False)
        assert backend.generate(ask[:1], DecodingConfig()) == [["a"]]
    with pytest.raises(RequestsFailedError) as info:
        backend.generate(ask, DecodingConfig())  # "a" from the cache, "b" to a server that is not there
    assert str(info.value) == (
        f"1 of 2 request(s) to {server.url} failed after retries (first: connection error: Connection error. "
        f"(after {FAST.max_retries + 1} attempts)); answered requests are kept in {tmp_path / 'cache.sqlite'}: run "
        "the same command again to resume"
    )
    assert (info.value.failed, info.value.total, len(cache)) == (1, 2, 1)
    # no cache (--no-cache), a key in the URL: nothing claimed kept, the key redacted
    url = f"http://user:{SECRET}@127.0.0.1:{free_port()}/v1"
    backend = OpenAIBackend(client(url), progress=False)
    calls = [
        lambda: backend.verdict_probabilities(ask, ["Rating: [[", "Rating: [["], ["1", "2"]),
        lambda: backend.continue_under_grammar(ask, ["Rating: [[", "Rating: [["], 'root ::= "1"'),
    ]
    for call in calls:
        with pytest.raises(RequestsFailedError, match=r"^2 of 2 request\(s\) to http://user:\*\*\*@127") as info:
            call()
        assert SECRET not in str(info.value) and "\n" not in str(info.value)
        assert str(info.value).endswith(
            "no cache (--no-cache), so nothing answered is kept: a rerun asks every request again"
        )


class EchoBackend:
    name, context_length = "echo", None

    def __init__(self):
        self.calls = 0

    def generate(self, conversations, config):
        self.calls += len(conversations)
        return [[c[-1]["content"].upper()] for c in conversations]

    def count_tokens(self, text):
        return len(text.split())

    def prompt_tokens(self, conversation):
        return sum(self.count_tokens(m["content"]) for m in conversation)


def test_backend_source_caches_local_generations(tmp_path):
    backend, cache = EchoBackend(), GenerationCache(tmp_path / "c.sqlite")
    source = BackendSource(backend, cache=cache, ledger=UsageLedger(), chunk_size=2)
    out = source.complete_many(requests(5), stage="gen", progress=False)
    assert [r.text for r in out] == [f"QUESTION {i} " for i in range(5)] and backend.calls == 5
    again = BackendSource(backend, cache=cache).complete_many(requests(5), stage="gen", progress=False)
    assert backend.calls == 5 and all(r.cached for r in again)
    with pytest.raises(ValueError, match="params"):
        source.complete_many([ChatRequest("x", [{"role": "user", "content": "q"}], {"seed": 1})], stage="gen")


def test_chat_result_round_trips_through_the_cache():
    result = ChatResult("a", "text", None, 3, 4, False, 2, "stop", "k")
    back = ChatResult.from_cache("a", "k", result.to_cache())
    assert (back.text, back.prompt_tokens, back.completion_tokens, back.cached) == ("text", 3, 4, True)
    assert set(result.to_cache()) == {"text", "prompt_tokens", "completion_tokens", "finish_reason"}


def test_progress_counter_is_unique_per_request():
    counter = itertools.count()
    with StubOpenAIServer(lambda body: str(next(counter))) as server:
        out = client(server.url, concurrency=4).complete_many(requests(12), stage="s", progress=False)
    assert sorted(int(r.text) for r in out) == list(range(12))


def test_identical_requests_in_a_batch_are_sent_once():
    same = [ChatRequest(f"row-{i}", [{"role": "user", "content": "same question"}]) for i in range(3)]
    with StubOpenAIServer() as server:
        c = client(server.url)
        out = c.complete_many([*same, *requests(2)], stage="s", progress=False)
        assert server.requests == 3
    assert [r.id for r in out] == ["row-0", "row-1", "row-2", "item-0", "item-1"]
    assert len({r.text for r in out[:3]}) == 1
    usage = c.ledger.stage("s")
    assert (usage.items, usage.succeeded, usage.requests) == (5, 5, 3)


# ----------------------------------------------------------------------------------------------- Retry-After
def test_retry_after_reads_seconds_milliseconds_and_http_dates():
    """The server's wait in its three forms (OpenAI sends retry-after-ms, RFC 9110 allows a date)."""
    from hf_critic.backends.retry import retry_after

    now = 1_700_000_000.0  # Tue, 14 Nov 2023 22:13:20 GMT
    assert retry_after({"Retry-After": "7"}) == 7.0
    assert retry_after({"retry-after-ms": "1500", "Retry-After": "7"}) == 1.5  # the finer one wins
    assert retry_after({"Retry-After": "Tue, 14 Nov 2023 22:13:50 GMT"}, now=now) == 30.0
    assert retry_after({"Retry-After": "Tue, 14 Nov 2023 22:00:00 GMT"}, now=now) == 0.0  # in the past
    for bad in ({}, None, {"Retry-After": "soon"}, {"Retry-After": "-3"}, {"Retry-After": "nan"}):
        assert retry_after(bad) is None


@pytest.mark.parametrize(
    ("headers", "wait"),  # a date 100 s ahead: within the 300 s a request may wait in all, capped at max_backoff
    [
        ({"retry-after-ms": "3000"}, 3.0),
        ({"Retry-After": "DATE+100"}, 60.0),
    ],
)
def test_the_chat_client_waits_as_the_server_says(headers, wait):
    """Every Retry-After form reaches the wait (capped at max_backoff); the pooling client: test_pooling_server.py."""
    if headers.get("Retry-After") == "DATE+100":  # made when the test runs, not when it is collected
        headers = {"Retry-After": email.utils.formatdate(time.time() + 100, usegmt=True)}
    calls = []

    def once(body, headers_in):
        calls.append(1)
        return (429, headers, b'{"error": {"message": "slow down"}}') if len(calls) == 1 else None

    waits = []

    async def record(seconds):
        waits.append(seconds)

    policy = RetryPolicy(max_retries=2, initial_backoff=0.01, max_backoff=60.0, jitter=0.0)
    with StubOpenAIServer(respond=once) as server:
        result = OpenAIClient(server.url, "m", retry=policy, sleep=record).complete_many(
            requests(1), stage="s", progress=False
        )
    assert result[0].ok and waits == [wait]
