"""The engines measured against each other, by CPU class and job: what ``engine="auto"`` chooses from.

``benchmarks/bench_engines.py`` runs the three jobs of a critic on Auto-J Eval-P pairs (one order: a row is a pair)
through every engine in one run: ``text`` (greedy text critiques), ``readout`` (the probability read-out of the
embedded critic) and ``reward`` (the shipped reward critic ``smollm2-135m-critic``). Each figure is pairs per second
of the whole job **with the engine's start** (loading the model, vLLM's engine start), as a user who runs one command
pays it. ``served`` is a vLLM server started for the job (``base_url=``); it is recorded beside the in-process engines
but never chosen by ``auto`` (a server is something a user starts).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

__all__ = ["CHOOSABLE", "ENGINE_MEASUREMENTS", "JOBS", "fastest_engine"]

JOBS = ("text", "readout", "reward")
#: The engines ``auto`` may choose (in-process ones).
CHOOSABLE = ("transformers", "llamacpp", "vllm")

#: pairs/s by CPU class -> job -> Eval-P pairs -> engine (module docstring). Measured on 2026-12-02 on this project's
#: machine (2-core AMD EPYC, AVX-512 BF16, no AMX), shared with other jobs, 24 pairs only: the load averages and
#: commands are in docs/performance.md ("Engines, job by job"). The AMX Xeon and 240 pairs were not measured.
ENGINE_MEASUREMENTS: dict[str, dict[str, dict[int, dict[str, float]]]] = {
    "avx512_bf16": {
        "text": {24: {"transformers": 0.069, "llamacpp": 0.151, "vllm": 0.233, "served": 0.198}},
        "readout": {24: {"transformers": 0.140, "llamacpp": 0.054, "vllm": 0.216, "served": 0.209}},
        "reward": {24: {"transformers": 1.521, "vllm": 0.340, "served": 0.342}},
    },
}


def fastest_engine(
    table: Mapping[str, Mapping[int, Mapping[str, float]]],
    job: str,
    installed: Collection[str],
    rows: int | None = None,
) -> str | None:
    """The installed engine measured fastest for ``job``, at the largest measured size not above ``rows``.

    Args:
        table: one CPU class's :data:`ENGINE_MEASUREMENTS` (``{job: {pairs: {engine: pairs/s}}}``).
        job: one of :data:`JOBS`.
        installed: the engines that can run here (of :data:`CHOOSABLE`).
        rows: the rows (pairs, or graded responses) the run will judge, when known. A figure is never carried down
            to a shorter run, where an engine's start weighs more than it was measured at; None counts as short.

    Returns:
        The engine, or None when no installed engine was measured for ``job`` at or below ``rows`` (the caller keeps
        its default).
    """
    sizes = [size for size in sorted(table.get(job, {})) if rows is not None and size <= rows]
    if not sizes:
        return None
    figures = {e: r for e, r in table[job][sizes[-1]].items() if e in installed and e in CHOOSABLE}
    return max(figures, key=lambda e: (figures[e], e == "transformers")) if figures else None
