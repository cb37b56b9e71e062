"""Worst parse time over the fuzz set of ``tests/parsing/test_parser_fuzz.py``, against a typical critique.

Run: ``python benchmarks/bench_parsing.py [--examples 10000]``.

Every parser of teacher and critic answers (``parse_score``, ``parse_label``, ``parse_difficulties``,
``parse_generated_queries``, ``swap_critique``) runs on the texts hypothesis generates from the test's strategy
(random Unicode and runaway shapes up to 100k characters). Printed: the worst CPU time per parser and the text length
it was met on, and the ratio of the worst time to the median time of parsing a typical ~1 kB critique (the baseline,
measured in the same run). Times are ``process_time`` with the garbage collector off during each call.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from test_parser_fuzz import PARSERS, texts  # noqa: E402
from test_parsing import PAPER_EN_POINTWISE  # noqa: E402


def cpu_flags() -> str:
    """The SIMD flags of this CPU that matter for string scanning (from /proc/cpuinfo), and its model name."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    wanted = [f for f in flags if f.startswith(("avx", "sse4", "amx"))]
    return f"{model}; flags: {' '.join(wanted)}"


def timed(parser, text: str) -> float:
    gc.disable()
    try:
        start = time.process_time()
        parser(text)
        return time.process_time() - start
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="generated texts (default 10,000)")
    args = parser.parse_args()
    print(f"CPU: {cpu_flags()}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    typical = PAPER_EN_POINTWISE
    baseline = {name: statistics.median(timed(p, typical) for _ in range(200)) for name, p in PARSERS.items()}
    worst = dict.fromkeys(PARSERS, (0.0, 0))
    count = 0

    @settings(
        max_examples=args.examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(texts)
    def run(text):
        nonlocal count
        count += 1
        for name, p in PARSERS.items():
            took = timed(p, text)
            if took > worst[name][0]:
                worst[name] = (took, len(text))

    run()
    print(f"{count} generated texts; baseline: median over 200 parses of a {len(typical)}-character critique")
    for name, (took, length) in sorted(worst.items(), key=lambda kv: -kv[1][0]):
        base = baseline[name]
        print(
            f"{name:24s} worst {took * 1000:7.2f} ms on {length:6d} chars; typical {base * 1e6:7.1f} us; "
            f"ratio {took / base if base else float('inf'):8.0f}x"
        )
    print(f"worst over all parsers: {max(t for t, _ in worst.values()) * 1000:.2f} ms (test limit 50 ms)")


if __name__ == "__main__":
    main()
