"""The CPU threads of a run: how many CPUs this process may use, what ``OMP_NUM_THREADS`` asks for, and the default
thread count of torch and llama.cpp (:func:`default_num_threads`), which ``--threads`` / ``num_threads`` override.

Standard library only (torch is imported inside :func:`default_num_threads`, for its count of physical cores).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..core.errors import BadInputError


def usable_cpus(cgroup: str | os.PathLike = "/sys/fs/cgroup") -> int:
    """CPUs this process may run on: its affinity mask (``taskset``, container cpusets), capped by a cgroup CPU quota
    (``docker --cpus``, Kubernetes limits; v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``),
    rounded up.

    Args:
        cgroup: the cgroup file system's root (for tests).

    Returns:
        A count >= 1.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    root = Path(cgroup)
    quota = None
    try:
        text = (root / "cpu.max").read_text().split()
        if text and text[0] != "max":
            quota = int(text[0]) / int(text[1])
    except (OSError, ValueError, IndexError):
        try:
            q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
            if q > 0:
                quota = q / int((root / "cpu" / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError, ZeroDivisionError):
            pass
    if quota is not None and quota > 0:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, cpus)


#: OpenMP's thread-count variable, which torch and llama.cpp read too; a user who sets it means it.
OMP_NUM_THREADS = "OMP_NUM_THREADS"


def env_num_threads() -> int | None:
    """The thread count ``OMP_NUM_THREADS`` asks for: None when it is unset or empty; of a nested list (``"4,2"``,
    OpenMP's per-level counts) the first level's.

    Raises:
        ValueError: a value that is not a positive integer, naming the variable and the value.
    """
    raw = os.environ.get(OMP_NUM_THREADS, "").strip()
    if not raw:
        return None
    first = raw.split(",")[0].strip()
    if not first.isdecimal() or int(first) < 1:
        raise BadInputError(f"{OMP_NUM_THREADS}={raw!r}: must be a positive integer (the CPU threads), or unset")
    return int(first)


def num_threads_or_default(num_threads: int | None, name: str = "num_threads") -> int:
    """``num_threads`` checked, else (None) :func:`default_num_threads`: what a backend passes to
    ``torch.set_num_threads`` or llama.cpp.

    Args:
        num_threads: a thread count >= 1, or None for the default.
        name: the argument's name in the caller, for the message (the command line checks ``--threads`` itself).

    Returns:
        A thread count >= 1.

    Raises:
        ValueError: ``num_threads`` is not an integer >= 1 (0 would silently mean the default; torch refuses a
            negative count with a traceback).
    """
    if num_threads is None:
        return default_num_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise BadInputError(f"{name} must be a positive integer (or None for the default), got {num_threads!r}")
    return num_threads


def default_num_threads(cores: int | None = None) -> int:
    """CPU threads for inference (torch intra-op, llama.cpp): ``OMP_NUM_THREADS`` when it is set (:func:`env_num_threads`;
    only when ``cores`` is not given), else one per physical core this process may use, never more than
    :func:`usable_cpus`.

    More threads than usable CPUs never helps: OpenMP threads wait for each other at every operator, so one thread
    descheduled stalls them all (under a second busy process, 2 threads on 1 free core ran a 1,000-token prefill 3.5x
    slower than quiet, where 1 core less should cost 2x; ``benchmarks/bench_real_inputs.py``). Measured on the
    project's quiet 2-core machine (SmolLM2-135M, 245-token prompt): 2 threads decode 1.8x faster than 1 at batch 1
    and 2x faster at batch 8. ``--threads`` overrides it, and it never overrides ``OMP_NUM_THREADS``.

    Args:
        cores: CPU cores available (default: physical cores reported by torch, else ``os.cpu_count()``), capped by
            :func:`usable_cpus`.

    Returns:
        Thread count >= 1.

    Raises:
        ValueError: ``OMP_NUM_THREADS`` set to anything but a positive integer.
    """
    if cores is None:
        requested = env_num_threads()
        if requested is not None:
            return requested
        import torch

        try:
            cores = torch.cpu.get_capabilities().get("num_physical_cores")
        except AttributeError:
            cores = None
    return max(1, min(cores or os.cpu_count() or 1, usable_cpus()))
