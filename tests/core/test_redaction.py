"""A key in the clear: a key in --base-url authenticates like one from the environment, and no key is
printed, logged or written, at -v or -vv."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hf_critic.backends.chat import ChatRequest
from hf_critic.backends.openai_client import OpenAIClient
from hf_critic.backends.retry import RetryPolicy
from hf_critic.core.redaction import RedactingFilter, redact_text, redact_url, register_secret, split_url_credentials
from hf_critic.testing.servers import StubOpenAIServer

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-test-SECRET-8086-xyz"
FAST = RetryPolicy(max_retries=0, initial_backoff=0.01, max_backoff=0.01)


def _url(server_url: str, where: str) -> str:
    """The server's URL with the key where ``where`` says: ``env`` (not in the URL), ``user:KEY@`` or ``KEY@``."""
    return server_url if where == "env" else server_url.replace("http://", "http://" + where.replace("KEY", KEY))


@pytest.mark.parametrize("where", ["env", "user:KEY@", "KEY@"])
def test_the_key_authenticates_every_request_the_same_way(where, monkeypatch):
    """The server sees ``Authorization: Bearer KEY`` on every request, whether the key came from the environment or
    from the URL (a URL's credentials used to go out as HTTP Basic auth)."""
    if where == "env":
        monkeypatch.setenv("HF_CRITIC_TEST_KEY", KEY)
    else:
        monkeypatch.delenv("HF_CRITIC_TEST_KEY", raising=False)
    with StubOpenAIServer(lambda body: "Rating: [[7]]") as server:
        client = OpenAIClient(
            _url(server.url, where), "m", api_key_env="HF_CRITIC_TEST_KEY", concurrency=4, retry=FAST
        )
        client.check()
        requests = [ChatRequest(str(i), [{"role": "user", "content": f"q{i}"}]) for i in range(12)]
        results = client.complete_many(requests, stage="s", progress=False)
    assert [r.text for r in results] == ["Rating: [[7]]"] * 12
    assert [h.get("authorization") for h in server.headers] == [f"Bearer {KEY}"] * 12
    assert client.base_url == server.url and KEY not in repr(client)


@pytest.mark.parametrize(("verbosity", "where"), [("-v", "user:KEY@"), ("-vv", "KEY@"), ("-vv", "env"), ("-v", "env")])
def test_the_command_line_prints_and_writes_no_key(verbosity, where, tmp_path):
    """``hf-critic -v`` / ``-vv grade --base-url`` in a fresh process: httpx's request log is on, the key is nowhere in
    stdout, stderr, the output or the cache, and every request carried the same bearer key."""
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if where == "env":
        env["OPENAI_API_KEY"] = KEY
    with StubOpenAIServer(lambda body: "Good. Rating: [[7]]") as server:
        argv = [sys.executable, "-m", "hf_critic.cli", verbosity, "grade", "--base-url", _url(server.url, where)]
        argv += [
            "--model",
            "stub",
            "--data",
            str(REPO / "examples" / "pointwise_reference_free.jsonl"),
            "--limit",
            "3",
        ]
        argv += ["--output", str(out), "--cache", str(cache), "--template", "mtbench", "--verdict", "text"]
        run = subprocess.run(
            [*argv, "--no-progress"], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
        )
    assert run.returncode == 0, run.stderr
    assert "HTTP Request: POST http://127.0.0.1:" in run.stderr  # the request log that used to show the key
    if verbosity == "-vv":
        assert "DEBUG" in run.stderr
    assert KEY not in run.stdout and KEY not in run.stderr
    assert [h.get("authorization") for h in server.headers] == [f"Bearer {KEY}"] * 3
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert out in written and cache in written
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path


def test_the_log_filter_masks_urls_headers_and_registered_keys():
    """Whatever a library logs (a URL with credentials, a header dump, a traceback), the filter masks the key."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("hf_critic.tests.redaction")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        logger.info('HTTP Request: %s %s "HTTP/1.1 200 OK"', "POST", f"http://user:{KEY}@h:1/v1/chat/completions")
        logger.info("HTTP Request: POST https://%s@h/v1/models", KEY)
        logger.debug("Request options: %s", {"headers": {"Authorization": f"Bearer {KEY}"}, "api_key": KEY})
        register_secret("sk-registered-0123456789")
        try:
            raise ValueError("refused key sk-registered-0123456789")
        except ValueError:
            logger.exception("request failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert KEY not in text and "sk-registered-0123456789" not in text
    assert "http://user:***@h:1/v1/chat/completions" in text and "https://***@h/v1/models" in text
    assert "'Authorization': 'Bearer ***'" in text and "'api_key': '***'" in text
    assert "ValueError: refused key ***" in text


def test_split_and_redact_url():
    assert split_url_credentials("http://user:sk-a%40b@h:8/v1") == ("http://h:8/v1", "sk-a@b")
    assert split_url_credentials("https://sk-abc@api.example.com/v1") == ("https://api.example.com/v1", "sk-abc")
    assert split_url_credentials("http://127.0.0.1:8000/v1") == ("http://127.0.0.1:8000/v1", None)
    assert redact_url("http://user:sk-abc@h/v1") == "http://user:***@h/v1"
    assert redact_url("https://sk-abc@h/v1") == "https://***@h/v1"  # a lone user-info is the key itself
    assert redact_url("https://h/v1") == "https://h/v1"
    assert redact_text("x-api-key=sk-zzz and authorization: Basic dXNlcjpzaw==") == (
        "x-api-key=*** and authorization: Basic ***"
    )
