"""Run untrusted Python (model-written code) in a subprocess sandbox, for CriticBench's correction dimension.

CriticBench (Lan et al., 2024, §3; CriticEval ``evaluators/utils/exec.py``) scores a corrected program by running it
with the task's unit tests: it passes when the process exits 0 within the time limit. Model-written code may loop
forever, fork without end, eat memory, write files or open sockets, so each program runs:

* in a fresh interpreter (``python -I``: no user site, no ``PYTHON*`` variables) inside its own empty temporary
  folder (the working directory, removed afterwards), with an environment holding only ``PATH``, ``LANG`` and
  ``HOME`` = that folder;
* in its own session, so the whole process group is SIGKILLed at the wall-clock timeout (an infinite loop, or the
  children of a fork bomb, cannot outlive it);
* under resource limits: address space (``memory_mb``), CPU seconds, process count (a fork bomb's ``fork()`` fails),
  file size and open files;
* without network: in a new user + network namespace (``unshare -rn``) where the system allows it, and always with
  an audit hook that refuses socket creation, connections and name lookups from Python code. Where the namespace is
  not available a warning says so (once per process: the audit hook alone stops Python's own calls, not a C
  extension's or a child program's), and every :class:`ExecResult` records which isolation ran
  (:func:`isolation`).
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache

from ..core.errors import BadInputError

__all__ = ["AUDIT_HOOK_ONLY", "NETWORK_NAMESPACE", "ExecResult", "isolation", "network_isolation", "run_python"]

logger = logging.getLogger(__name__)

#: What :attr:`ExecResult.isolation` says: a network namespace besides the audit hook, or the audit hook alone.
NETWORK_NAMESPACE = "network namespace + audit hook"
AUDIT_HOOK_ONLY = "audit hook only"

# Runs first in the child: Python-level network calls raise before any bytes leave (the namespace, when available,
# already has no interface but loopback).
_GUARD = """import sys
def _no_network(event, args):
    if event in ("socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname",
                 "urllib.Request"):
        raise PermissionError("network access is disabled in the hf-critic sandbox")
sys.addaudithook(_no_network)
del _no_network
sys.argv = ["solution.py"]
with open("solution.py", encoding="utf-8") as _f:
    _code = compile(_f.read(), "solution.py", "exec")
del _f
exec(_code, {"__name__": "__main__"})
"""


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one sandboxed run.

    Attributes:
        status: ``"passed"`` (exit code 0 in time), ``"failed"`` (non-zero exit: an exception, a failed assert, a
            resource limit), or ``"timeout"`` (killed at the wall-clock limit).
        returncode: the process exit code (negative: killed by that signal); None on timeout.
        stdout, stderr: the process output, decoded as UTF-8 (errors replaced), each cut to 20,000 characters.
        seconds: wall-clock run time.
        isolation: how the network was shut off (:data:`NETWORK_NAMESPACE` or :data:`AUDIT_HOOK_ONLY`).
    """

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    isolation: str = NETWORK_NAMESPACE

    @property
    def passed(self) -> bool:
        """True exactly when ``status == "passed"``."""
        return self.status == "passed"


@cache
def network_isolation() -> bool:
    """Whether ``unshare -rn`` (a user + network namespace, no root needed) works on this system."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    try:
        return subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@cache
def isolation() -> str:
    """The network isolation the sandbox runs with here; warns once when it is the audit hook alone."""
    if network_isolation():
        return NETWORK_NAMESPACE
    logger.warning(
        "sandbox: no user + network namespace here (`unshare -rn` failed); model-written code runs with the audit "
        "hook alone, which stops Python's own network calls but not a C extension's or a child program's"
    )
    return AUDIT_HOOK_ONLY


def _limits(memory_mb: int, cpu_seconds: int, max_processes: int):
    def apply() -> None:  # runs in the child between fork and exec
        memory = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024, 16 * 1024 * 1024))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_python(
    code: str,
    *,
    timeout: float = 10.0,
    memory_mb: int = 1024,
    max_processes: int = 32,
    python: str = sys.executable,
) -> ExecResult:
    """Run ``code`` as a script in the sandbox (see the module docstring) and report how it ended.

    Args:
        code: the full program (solution plus its tests).
        timeout: wall-clock seconds before the process group is killed (> 0).
        memory_mb: address-space limit in MiB (the interpreter itself needs ~30 MiB; imports of large packages
            such as numpy need several hundred).
        max_processes: RLIMIT_NPROC for the child. Without a user namespace this counts every process of the
            user, so forking is refused at once when the user already runs more; the program itself never needs to.
        python: the interpreter to run.

    Returns:
        :class:`ExecResult`; a timeout, a crash and a limit hit are all failures, never exceptions.

    Raises:
        ValueError: a non-positive timeout or memory limit.
    """
    if timeout <= 0 or memory_mb <= 0:
        raise BadInputError(f"timeout and memory_mb must be positive, got {timeout} and {memory_mb}")
    with tempfile.TemporaryDirectory(prefix="hf-critic-sandbox-") as workdir:
        with open(os.path.join(workdir, "solution.py"), "w", encoding="utf-8") as handle:
            handle.write(code)
        command = [python, "-I", "-c", _GUARD]
        isolated = isolation()
        if isolated == NETWORK_NAMESPACE:
            command = [shutil.which("unshare"), "-rn", *command]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": workdir}
        start = time.monotonic()
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_limits(memory_mb, max(1, int(timeout) + 1), max_processes),
        )
        try:
            out, err = process.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:  # the whole group: a forked child must not survive its parent's timeout
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if timed_out:
            out, err = process.communicate()
        seconds = time.monotonic() - start

    def text(data: bytes) -> str:
        return data.decode("utf-8", errors="replace")[:20_000]

    if timed_out:
        return ExecResult("timeout", None, text(out), text(err), seconds, isolated)
    status = "passed" if process.returncode == 0 else "failed"
    return ExecResult(status, process.returncode, text(out), text(err), seconds, isolated)
