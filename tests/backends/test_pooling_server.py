"""The reward-model client for vLLM's Pooling API, against a loopback stub that follows vLLM's documented schema."""

from __future__ import annotations

import email.utils
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from hf_critic.backends.pooling import PoolingRewardClient
from hf_critic.backends.retry import EndpointError, FatalAPIError, RequestsFailedError, RetryPolicy
from hf_critic.testing.servers import _Base, free_port

FAST = RetryPolicy(max_retries=2, initial_backoff=0.01, max_backoff=0.02)
SECRET = "sk-test-SECRET-9f8e7d6c5b4a"
KEY_ENV = "HF_CRITIC_TEST_KEY"


class StubPoolingServer(_Base):
    """``vllm serve MODEL --runner pooling`` in miniature: ``GET /v1/models`` and ``POST /pooling`` (chat-style).

    The reward of a conversation is the length of its last assistant message's content, as ``data: [reward]``.
    ``respond(body, headers)`` may answer instead: ``(status, headers, body bytes)``, or None for the default answer.
    ``pooling=False`` is a server without the Pooling API (a generative model): ``/pooling`` answers 404;
    ``models_status`` is what ``GET /v1/models`` answers (401: the key is refused; 404: not a vLLM server).
    """

    def __init__(self, models=("stub-rm",), *, pooling=True, respond=None, delay=0.02, models_status=200):
        self.models, self.pooling, self.respond, self.delay = list(models), pooling, respond, delay
        self.models_status = models_status
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == "/v1/models" and stub.models_status != 200:
                    return self._send(stub.models_status, {}, {"error": {"message": "refused"}})
                if self.path == "/v1/models":
                    data = [{"id": m, "object": "model", "owned_by": "vllm"} for m in stub.models]
                    return self._send(200, {}, {"object": "list", "data": data})
                self._send(404, {}, {"error": {"message": "Not Found"}})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body, headers = json.loads(raw), {k.lower(): v for k, v in self.headers.items()}
                with stub._lock:
                    stub.bodies.append(body)
                    stub.headers.append(headers)
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    time.sleep(stub.delay)
                    self._send(*stub.answer(self.path, body, headers))
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

            def _send(self, status, headers, payload):
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._serve(Handler, 0)

    @property
    def pooled(self) -> list[dict]:
        """The bodies of the ``/pooling`` requests, in arrival order."""
        return [b for b in self.bodies if "messages" in b]

    def answer(self, path, body, headers):
        if path != "/pooling" or not self.pooling:
            return 404, {}, {"error": {"message": "Not Found", "type": "NotFoundError", "code": 404}}
        if body.get("model") not in self.models:
            return 404, {}, {"error": {"message": f"The model `{body.get('model')}` does not exist.", "code": 404}}
        custom = self.respond(body, headers) if self.respond else None
        if custom is not None:
            return custom
        return 200, {}, pooling_response(body["model"], [float(len(body["messages"][-1]["content"]))])


def pooling_response(model, data):
    """vLLM's ``PoolingResponse`` for one chat-style request whose pooled output is ``data``."""
    item = {"index": 0, "object": "pooling", "data": data}
    usage = {"prompt_tokens": 7, "total_tokens": 7, "completion_tokens": 0, "prompt_tokens_details": None}
    return {"id": "pool-1", "object": "list", "created": 0, "model": model, "data": [item], "usage": usage}


def conversation(question: str, response: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": response}]


# ------------------------------------------------------------------------------------------------ rewards
def test_rewards_are_exact_and_in_order_across_batches():
    lengths = [5, 1, 9, 3, 12, 7, 2, 11, 4, 8, 6]  # 11 conversations: batches of 4, 4, 3
    conversations = [conversation(f"question {i}?", "x" * n) for i, n in enumerate(lengths)]
    with StubPoolingServer() as server:
        client = PoolingRewardClient(server.url, "stub-rm", batch_size=4, policy=FAST)
        assert client.rewards(conversations) == [float(n) for n in lengths]
        assert client.rewards([]) == []
    assert len(server.pooled) == 11
    # each request is exactly one conversation as given, asking for the sequence-level raw output
    assert sorted(json.dumps(b["messages"]) for b in server.pooled) == sorted(json.dumps(c) for c in conversations)
    assert all(
        b["model"] == "stub-rm" and b["task"] == "classify" and b["use_activation"] is False for b in server.pooled
    )
    assert 1 <= server.max_in_flight <= 4  # never more than one batch in flight
    arrived = [b["messages"][0]["content"] for b in server.pooled]  # in any order within a batch, batch after batch
    batches = [range(0, 4), range(4, 8), range(8, 11)]
    assert [sorted(arrived[b.start : b.stop]) for b in batches] == [
        sorted(f"question {i}?" for i in b) for b in batches
    ]


def test_a_nested_one_number_output_is_the_reward_and_the_root_url_works():
    respond = lambda body, headers: (200, {}, pooling_response(body["model"], [[-1.25]]))  # noqa: E731
    with StubPoolingServer(respond=respond) as server:
        client = PoolingRewardClient(f"http://127.0.0.1:{server.port}", "stub-rm", policy=FAST)  # no /v1
        assert client.rewards([conversation("q", "a")]) == [-1.25]


@pytest.mark.parametrize(
    "data, shape",
    [([[0.1], [0.2], [0.3]], "token-level"), ([0.3, 0.7], "2 values"), ([], "empty"), ("AAAA", "a str")],
)
def test_an_output_that_is_not_one_number_is_a_clear_error(data, shape):
    respond = lambda body, headers: (200, {}, pooling_response(body["model"], data))  # noqa: E731
    with StubPoolingServer(respond=respond) as server:
        client = PoolingRewardClient(server.url, "stub-rm", policy=FAST)
        with pytest.raises(ValueError, match=f"{shape}.*not running a sequence reward model"):
            client.rewards([conversation("q", "a")])
        with pytest.raises(EndpointError, match="not running a sequence reward model"):
            client.check()


# ------------------------------------------------------------------------------------------------ retries
def test_a_503_then_a_200_is_retried():
    seen: dict[str, int] = {}

    def respond(body, headers):
        key = body["messages"][-1]["content"]
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 1:
            return 503, {"Retry-After": "0"}, {"error": {"message": "overloaded"}}
        return None

    conversations = [conversation("q", "y" * n) for n in (3, 1, 4)]
    with StubPoolingServer(respond=respond) as server:
        rewards = PoolingRewardClient(server.url, "stub-rm", batch_size=2, policy=FAST).rewards(conversations)
    assert rewards == [3.0, 1.0, 4.0]
    assert len(server.pooled) == 6 and set(seen.values()) == {2}


@pytest.mark.parametrize(
    ("headers", "wait"),
    # an HTTP-date 100 s ahead: within the 300 s a request may wait in all, the wait capped at max_backoff (60 s);
    # a Retry-After beyond that bound gives up at once (test_a_retry_after_beyond_the_bound_fails_at_once...)
    [
        ({"retry-after-ms": "3000"}, 3.0),
        ({"Retry-After": "DATE+100"}, 60.0),
    ],
)
def test_the_pooling_client_waits_as_the_server_says(headers, wait, monkeypatch):
    """The chat client's retry loop (backends.retry.Attempts), every Retry-After form (capped)."""
    if headers.get("Retry-After") == "DATE+100":  # made when the test runs, not when it is collected
        headers = {"Retry-After": email.utils.formatdate(time.time() + 100, usegmt=True)}
    import types

    from hf_critic.backends import pooling

    slept = []
    monkeypatch.setattr(pooling, "time", types.SimpleNamespace(sleep=slept.append))
    calls = []

    def once(body, headers_in):
        calls.append(1)
        return (429, headers, {"error": {"message": "slow down"}}) if len(calls) == 1 else None

    policy = RetryPolicy(max_retries=2, initial_backoff=0.01, max_backoff=60.0, jitter=0.0)
    with StubPoolingServer(respond=once) as server:
        assert PoolingRewardClient(server.url, "stub-rm", policy=policy).rewards([conversation("q", "abc")]) == [3.0]
    assert slept == [wait]


def test_retries_are_bounded_then_the_batch_fails():
    always = lambda body, headers: (500, {}, {"error": {"message": "boom"}})  # noqa: E731
    with StubPoolingServer(respond=always) as server:
        client = PoolingRewardClient(server.url, "stub-rm", batch_size=2, policy=FAST)
        with pytest.raises(RequestsFailedError, match=r"2 of 2 request\(s\).*500: boom \(after 3 attempts\)"):
            client.rewards([conversation("q", "a"), conversation("q", "b"), conversation("q", "c")])
    assert len(server.pooled) == 2 * (FAST.max_retries + 1)  # the second batch is never sent


def test_a_401_stops_the_run_and_its_message_holds_no_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    # a server that echoes the header it refused, as some proxies do: the key must still not reach the message
    echo = lambda body, headers: (401, {}, {"error": {"message": f"bad key {headers['authorization']}"}})  # noqa: E731
    with StubPoolingServer(respond=echo) as server:
        client = PoolingRewardClient(server.url, "stub-rm", api_key_env=KEY_ENV, policy=FAST)
        with pytest.raises(FatalAPIError, match=rf"401.*\${KEY_ENV}") as err:
            client.rewards([conversation("q", "a")] * 3)
    assert SECRET not in str(err.value) and SECRET not in repr(client)
    assert len(server.pooled) <= 3  # not retried


# ------------------------------------------------------------------------------------------------ the key
def test_the_key_from_the_environment_travels_only_in_the_authorization_header(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with StubPoolingServer() as server:
        client = PoolingRewardClient(server.url, api_key_env=KEY_ENV, policy=FAST)
        client.check()
        client.rewards([conversation("q", "ab")])
    assert server.headers and all(h["authorization"] == f"Bearer {SECRET}" for h in server.headers)
    assert all(SECRET not in json.dumps(b) for b in server.bodies)


def test_a_key_in_the_url_is_taken_out_and_sent_as_the_bearer_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with StubPoolingServer() as server:
        client = PoolingRewardClient(
            f"http://user:{SECRET}@127.0.0.1:{server.port}/v1", "stub-rm", api_key_env=KEY_ENV
        )
        assert client.rewards([conversation("q", "abc")]) == [3.0]
    assert server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in client.display_url and SECRET not in repr(client)


def test_no_key_set_sends_no_authorization(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with StubPoolingServer() as server:
        PoolingRewardClient(server.url, "stub-rm", api_key_env=KEY_ENV).rewards([conversation("q", "a")])
    assert "authorization" not in server.headers[-1]


# ------------------------------------------------------------------------------------------------ check
def test_check_picks_the_only_served_model_and_rewards_resolves_it_itself():
    with StubPoolingServer() as server:
        client = PoolingRewardClient(server.url, policy=FAST)
        client.check()
        assert client.model == "stub-rm"
        lazy = PoolingRewardClient(server.url, policy=FAST)
        assert lazy.rewards([conversation("q", "four")]) == [4.0] and lazy.model == "stub-rm"


def test_check_names_url_and_model_when_the_model_is_not_served_or_ambiguous():
    with StubPoolingServer(models=("rm-a", "rm-b")) as server:
        with pytest.raises(EndpointError, match=rf"127\.0\.0\.1:{server.port}.*'other'.*rm-a, rm-b"):
            PoolingRewardClient(server.url, "other").check()
        with pytest.raises(EndpointError, match=r"serves 2 models: rm-a, rm-b; name one"):
            PoolingRewardClient(server.url).check()
        PoolingRewardClient(server.url, "rm-b").check()


def test_check_on_a_server_without_the_pooling_api_raises():
    with StubPoolingServer(pooling=False) as server:
        with pytest.raises(EndpointError, match=r"404.*POST /pooling.*'stub-rm'.*--runner pooling") as err:
            PoolingRewardClient(server.url, "stub-rm").check()
    assert "\n" not in str(err.value) and server.url in str(err.value)


def test_check_on_a_server_that_is_down_raises():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EndpointError, match=rf"no server answers at {url} \(model stub-rm\)"):
        PoolingRewardClient(url, "stub-rm", timeout=2).check()


@pytest.mark.parametrize(
    "status, message", [(401, rf"answered 401 to GET /v1/models; check \${KEY_ENV}"), (404, "not a vLLM server")]
)
def test_check_on_a_server_refusing_the_key_or_not_vllm(status, message):
    with StubPoolingServer(models_status=status) as server:
        with pytest.raises(EndpointError, match=message):
            PoolingRewardClient(server.url, "stub-rm", api_key_env=KEY_ENV).check()


def test_compare_and_grade_through_a_served_reward_model(tmp_path, capsys):
    """`hf-critic compare|grade --base-url URL --pooling`: an order-free reward critic on the server's rewards (here the
    response's length), labels from the reward difference, a tie on equal rewards, no second pass under --swap."""
    from hf_critic.cli import main

    rows = [
        {"question": "q1", "response_1": "a longer answer", "response_2": "short"},
        {"question": "q2", "response_1": "short", "response_2": "a longer answer"},
        {"question": "q3", "response_1": "same!", "response_2": "same?"},
    ]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with StubPoolingServer() as server:
        common = ["--base-url", server.url, "--pooling", "--model", "stub-rm", "--no-cache", "--no-progress"]
        assert main(["compare", "--data", str(data), "--output", str(tmp_path / "c.jsonl"), "--swap", *common]) == 0
        out = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
        assert [r["critique_label"] for r in out] == [0, 1, 2]
        assert [r["critique_reward"] for r in out] == [15.0, 5.0, 5.0]
        assert "critique_label_swapped" not in out[0]
        assert len(server.bodies) == 1 + 6  # check()'s probe, then each response once: no second pass
        graded = tmp_path / "g.jsonl"
        graded.write_text(json.dumps({"question": "q", "response": "abc"}) + "\n")
        assert main(["grade", "--data", str(graded), "--output", str(tmp_path / "g_out.jsonl"), *common]) == 0
        (row,) = [json.loads(line) for line in (tmp_path / "g_out.jsonl").read_text().splitlines()]
        assert row["critique_reward"] == 3.0 and 1 <= row["critique_score"] <= 10
    assert "verdicts from the served reward model" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------- non-finite rewards
@pytest.mark.parametrize("bad", ["NaN", "Infinity"])
def test_a_non_finite_reward_is_an_error_naming_the_row_and_never_cached(tmp_path, capsys, bad):
    """A server answering NaN / Infinity gives no verdict: exit 2 naming the file and row, nothing cached, and a
    later run against a healthy server scores afresh."""
    from hf_critic.cli import main

    rows = [{"question": "q1", "response_1": "a longer answer", "response_2": "short"}]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    raw = lambda body, headers: (  # noqa: E731
        200,
        {},
        json.dumps(pooling_response(body["model"], [0.0])).replace("0.0", bad).encode(),
    )
    cache, out = tmp_path / "cache.sqlite", tmp_path / "c.jsonl"
    args = ["compare", "--data", str(data), "--output", str(out), "--model", "stub-rm", "--cache", str(cache)]
    with StubPoolingServer(
        respond=lambda body, headers: raw(body, headers) if len(body["messages"][-1]["content"]) > 4 else None
    ) as server:
        assert main([*args, "--base-url", server.url, "--pooling", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"gave reward {bad.lower() if bad == 'NaN' else 'inf'}" in err and "row 0 response" in err
    assert str(data) in err and not out.exists()
    from hf_critic.backends.cache import GenerationCache

    assert all(v == v and abs(v) != float("inf") for v in GenerationCache(cache).get_many(_all_keys(cache)).values())
    with StubPoolingServer() as server:  # healthy: every reward computed, none read back as NaN
        assert main([*args, "--base-url", server.url, "--pooling", "--no-progress"]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["critique_label"] == 0 and row["critique_reward"] == 15.0 and row["critique_status"] == "ok"


def _all_keys(path):
    import sqlite3

    with sqlite3.connect(path) as db:
        return [k for (k,) in db.execute("SELECT key FROM generations")]


def test_max_retries_and_a_long_retry_after_are_honoured_on_pooling(tmp_path, capsys):
    """`--max-retries 1` is two attempts per request; a Retry-After beyond the total wait bound fails at once, saying
    so (it used to sit silent until killed)."""
    from hf_critic.cli import main

    data = tmp_path / "g.jsonl"
    data.write_text(json.dumps({"question": "q", "response": "abcdef"}) + "\n")
    args = ["grade", "--data", str(data), "--output", str(tmp_path / "o.jsonl"), "--model", "stub-rm", "--no-cache"]
    busy = lambda body, headers: (503, {"Retry-After": "0"}, {"error": {"message": "busy"}})  # noqa: E731
    with StubPoolingServer(respond=lambda b, h: busy(b, h) if b["messages"][-1]["content"] != "Yes." else None) as s:
        assert main([*args, "--base-url", s.url, "--pooling", "--max-retries", "1", "--no-progress"]) == 3
    assert len(s.pooled) == 1 + 2  # the probe, then two attempts
    err = capsys.readouterr().err
    assert "after 2 attempts" in err and "nothing answered is kept" in err and "--cache file" not in err
    forever = lambda b, h: (503, {"Retry-After": "99999"}, {"error": {"message": "busy"}})  # noqa: E731
    started = time.monotonic()
    with StubPoolingServer(
        respond=lambda b, h: forever(b, h) if b["messages"][-1]["content"] != "Yes." else None
    ) as s:
        assert main([*args, "--base-url", s.url, "--pooling", "--max-retries", "1", "--no-progress"]) == 3
    assert time.monotonic() - started < 10 and len(s.pooled) == 1 + 1
    assert "waiting 99999 s more would pass the 300 s a request may wait in all" in capsys.readouterr().err


def test_a_long_wait_is_said_before_it_starts(caplog):
    seen = []

    def respond(body, headers):
        seen.append(1)
        return (503, {"Retry-After": "5"}, {"error": {"message": "busy"}}) if len(seen) == 1 else None

    policy = RetryPolicy(max_retries=1, initial_backoff=0.01, max_backoff=6)
    with StubPoolingServer(respond=respond) as server, caplog.at_level("WARNING", logger="hf_critic.backends.pooling"):
        assert PoolingRewardClient(server.url, "stub-rm", policy=policy).rewards([conversation("q", "abc")]) == [3.0]
    assert "503: busy; retry 1 of 1 in 5 s" in caplog.text


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--concurrency", "0", "argument --concurrency: must be at least 1, got 0"),
        ("--max-retries", "-1", "argument --max-retries: must be 0 or more, got -1"),
        ("--request-timeout", "0", "argument --request-timeout: must be above 0, got 0"),
    ],
)
def test_server_options_out_of_range_name_the_option(capsys, option, value, message):
    """`--concurrency 0` was reported as "batch_size must be >= 1"."""
    from hf_critic.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["grade", "--data", "x.jsonl", "--base-url", "http://127.0.0.1:9/v1", "--pooling", option, value])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
