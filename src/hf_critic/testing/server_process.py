"""Model servers in child processes on 127.0.0.1, for tests and benchmarks: a free port, waiting until one answers,
stopping one with its children. Standard library only; :class:`hf_critic.testing.servers.LlamaCppServerProcess` and
:class:`hf_critic.backends.serving.VllmServerProcess` run on these."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import time

__all__ = ["free_port", "stop_group", "wait_ready"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bound to 0 by the OS, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(process: subprocess.Popen, port: int, path: str, timeout: float, what: str) -> bool:
    """Poll ``GET path`` on 127.0.0.1:``port`` until it answers 200 (True) or ``timeout`` seconds pass (False).

    Raises:
        RuntimeError: the process exited first (its code and ``what`` named).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return True
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.3)
    return False


def stop_group(process: subprocess.Popen | None, kill: bool = False, timeout: float = 20.0) -> None:
    """Stop a server started with ``start_new_session=True`` and its children: SIGTERM to its process group (SIGKILL
    with ``kill``, or when it is still running after ``timeout`` seconds), then wait for it. Nothing when it is None or
    has exited."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)
