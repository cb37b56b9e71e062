"""The machine's roofline, measured in the run that uses it, and each engine's share of it.

Two ceilings bound a critic on one machine:

- **compute**: the matmul throughput at the model's own linear shapes (``tokens x in @ in x out`` for every distinct
  ``nn.Linear`` of the model, weighted by how often it occurs), per dtype. Prefill-bound work (the probability
  read-out, reward-model scoring, glass-box features) is measured against it.
- **memory bandwidth**: bytes per second a reduction over a buffer far larger than the caches reads. Decoding reads
  every weight once per step whatever the batch, so ``bandwidth / weight bytes x batch`` new tokens per second is
  its bound.

Work is counted from the real token counts of the prompts (:func:`prefill_flops`), never estimated from an average.
The helpers here are plain functions so that ``tests/test_roofline.py`` checks the arithmetic on a tiny model.
"""

from __future__ import annotations

import os
import platform
import resource
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = [
    "Roofline",
    "RssWatch",
    "attention_flops",
    "cpu_model",
    "decode_bound",
    "decode_roofline",
    "kv_bytes_per_token",
    "linear_shapes",
    "load_line",
    "machine_header",
    "matmul_peak",
    "measure_roofline",
    "memory_bandwidth",
    "peak_rss_gb",
    "prefill_flops",
    "rss_gb",
    "weight_bytes",
]


@dataclass(frozen=True)
class Roofline:
    """The ceilings measured in one run.

    Attributes:
        peaks: ``{dtype name: FLOP/s}`` of the matmul at the model's shapes (e.g. ``{"float32": 9.7e10}``).
        bandwidth: bytes/s read from memory (reduction over a buffer larger than the caches).
        threads: torch intra-op threads the figures were measured with.
    """

    peaks: dict[str, float]
    bandwidth: float
    threads: int


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux), else what :mod:`platform` says."""
    path = Path("/proc/cpuinfo")
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def load_line() -> str:
    """``"load average 1.20 / 3.40 / 5.60 (1 / 5 / 15 min)"`` from :func:`os.getloadavg`."""
    return f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min)"


def machine_header(threads: int | None = None) -> str:
    """The lines every benchmark starts with: the CPU, the flags that decide dtype and engine, torch's threads (set to
    ``threads`` first when given), OpenMP's wait policy and the load average."""
    from hf_critic.backends.models import cpu_flags

    if threads is not None:
        torch.set_num_threads(threads)
    flags = " ".join(sorted(f for f, on in cpu_flags().items() if on)) or "none of interest"
    return (
        f"CPU: {cpu_model()}; flags: {flags}\nthreads {torch.get_num_threads()}, OMP_WAIT_POLICY "
        f"{os.environ.get('OMP_WAIT_POLICY')}, torch {torch.__version__}, {load_line()}"
    )


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far, in GB (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def rss_gb() -> float:
    """Resident memory of this process now, in GB (psutil when installed, else ``/proc/self/statm``)."""
    try:
        import psutil

        return psutil.Process().memory_info().rss / 1e9
    except ImportError:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e9


class RssWatch:
    """The highest resident memory of this process while the ``with`` block runs, sampled every ``interval`` s.

    ``ru_maxrss`` (:func:`peak_rss_gb`) only ever grows over the process, so it cannot tell a later, longer job's
    peak from an earlier one's; this samples :func:`rss_gb` in a thread, from the block's start to its end.

    Attributes:
        start, peak, end: GB at the start, the highest seen, and at the end.
    """

    def __init__(self, interval: float = 0.2):
        self.interval, self.start = interval, rss_gb()
        self.peak = self.end = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss_gb())

    def __enter__(self) -> RssWatch:
        self.start = self.peak = rss_gb()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.end = rss_gb()
        self.peak = max(self.peak, self.end)


def linear_shapes(model: torch.nn.Module) -> Counter:
    """``{(in_features, out_features): count}`` of the model's ``nn.Linear`` layers, the output head excluded.

    The head runs on one position per read-out row (or per generated token), not on every prompt token, so it is
    counted apart (:func:`prefill_flops`).
    """
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return Counter(
        (m.in_features, m.out_features) for m in model.modules() if isinstance(m, torch.nn.Linear) and m is not head
    )


def attention_flops(config, length: int) -> float:
    """FLOPs of causal self-attention scores and weighted sums over a prompt of ``length`` tokens, all layers.

    Token ``p`` (0-based) attends to ``p + 1`` keys: ``2 * heads * head_dim`` FLOPs for its scores and as many for
    the weighted sum per key and layer, so ``4 * layers * heads * head_dim * length * (length + 1) / 2``.

    Args:
        config: a transformers config with ``num_hidden_layers``, ``num_attention_heads`` and ``hidden_size``
            (``head_dim`` when the model sets it).
        length: prompt tokens.
    """
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return 4.0 * config.num_hidden_layers * heads * head_dim * length * (length + 1) / 2


def prefill_flops(model: torch.nn.Module, lengths: Iterable[int], outputs_per_row: int = 1) -> float:
    """FLOPs of a plain prefill of prompts of the given token ``lengths`` (no shared-prefix reuse), head included.

    ``2 x in x out`` per token and linear layer, the causal attention of :func:`attention_flops`, and the output
    head on ``outputs_per_row`` positions per prompt. An engine that reuses a shared prefix does less work than
    this, so its share of the peak may exceed what it computes: the share is of the useful work.

    Args:
        model: the transformers model (its linear layers and config).
        lengths: tokens of each prompt, as the model's tokenizer counts them.
        outputs_per_row: positions per prompt whose logits are computed (1 for the read-out).

    Returns:
        FLOPs (float).
    """
    per_token = sum(2.0 * i * o * n for (i, o), n in linear_shapes(model).items())
    head = model.get_output_embeddings()
    head_flops = 2.0 * head.in_features * head.out_features if head is not None else 0.0
    lengths = list(lengths)
    return sum(per_token * n + attention_flops(model.config, n) + head_flops * outputs_per_row for n in lengths)


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of every parameter, as decoding reads them once per step (a tied embedding counted once)."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


def decode_bound(bandwidth: float, bytes_per_step: int, batch: int) -> float:
    """New tokens per second the memory bandwidth allows at ``batch`` sequences: every weight read once per step.

    Args:
        bandwidth: bytes/s (:func:`memory_bandwidth`).
        bytes_per_step: bytes of weights read per decoding step (:func:`weight_bytes`, or a GGUF file's size).
        batch: sequences decoded together.
    """
    return bandwidth / bytes_per_step * batch


def kv_bytes_per_token(config, element_bytes: int) -> int:
    """Bytes of KV cache one token holds, all layers: keys and values of every key-value head.

    Args:
        config: a transformers config (``num_hidden_layers``, ``num_attention_heads``, ``hidden_size``,
            ``num_key_value_heads`` and ``head_dim`` when the model sets them).
        element_bytes: bytes per cached number (2 for bfloat16).
    """
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    return 2 * config.num_hidden_layers * kv_heads * head_dim * element_bytes


def decode_roofline(
    bandwidth: float, weight_bytes: int, kv_bytes: float, step_flops: float, peak_at_batch: float, batch: int
) -> tuple[float, str]:
    """New tokens per second the roofline allows a decoding step of ``batch`` sequences, and which ceiling binds.

    A step reads every weight and every sequence's KV cache once (``weight_bytes + kv_bytes`` at ``bandwidth``) and
    computes ``step_flops`` at ``peak_at_batch``, the matmul throughput at the model's shapes with ``batch`` rows
    (:func:`matmul_peak` with ``tokens=batch``: small products run far below the prefill peak). The slower of the two
    bounds the step: ``batch / max(bytes / bandwidth, flops / peak)``.

    Returns:
        ``(tokens/s, "bandwidth" or "compute")``.
    """
    read, compute = (weight_bytes + kv_bytes) / bandwidth, step_flops / peak_at_batch
    return batch / max(read, compute), "bandwidth" if read >= compute else "compute"


def _best_seconds(job: Callable[[], object], repeats: int, sync: Callable[[], None]) -> float:
    job()  # warm-up: kernels chosen, buffers allocated
    sync()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        job()
        sync()
        best = min(best, time.perf_counter() - started)
    return best


def _sync(device: str) -> Callable[[], None]:
    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def matmul_peak(
    shapes: Counter, dtype: torch.dtype, tokens: int = 512, device: str = "cpu", repeats: int = 5
) -> float:
    """FLOP/s of ``tokens x in @ in x out`` products at ``shapes``, weighted by their counts (best of ``repeats``).

    This is the compute ceiling of a prefill of ``tokens`` tokens per forward pass in ``dtype`` on ``device``: the
    best each shape achieved, so a loaded machine lowers it less than one timing would.

    Args:
        shapes: :func:`linear_shapes` of the model.
        dtype: e.g. ``torch.float32``, ``torch.bfloat16``.
        tokens: rows of the activation matrix (tokens per forward pass).
        device: ``"cpu"`` or a CUDA device.
        repeats: timings per shape; the fastest is kept.

    Returns:
        FLOP/s (float).
    """
    flops = seconds = 0.0
    for (n_in, n_out), count in shapes.items():
        x = torch.randn(tokens, n_in, dtype=dtype, device=device)
        w = torch.randn(n_out, n_in, dtype=dtype, device=device)
        with torch.inference_mode():
            best = _best_seconds(lambda x=x, w=w: torch.nn.functional.linear(x, w), repeats, _sync(device))
        flops += 2.0 * tokens * n_in * n_out * count
        seconds += best * count
    return flops / seconds


def memory_bandwidth(megabytes: int = 512, device: str = "cpu", repeats: int = 5) -> float:
    """Bytes per second read by a float32 sum over ``megabytes`` MB (best of ``repeats``): what decoding's weight
    reads can reach.

    Args:
        megabytes: buffer size; well above the last-level cache.
        device: ``"cpu"`` or a CUDA device.
        repeats: timings; the fastest is kept.
    """
    buffer = torch.ones(megabytes * 250_000, dtype=torch.float32, device=device)
    best = _best_seconds(buffer.sum, repeats, _sync(device))
    return buffer.numel() * 4 / best


def measure_roofline(
    model: torch.nn.Module, dtypes: Iterable[str], tokens: int = 512, device: str = "cpu"
) -> Roofline:
    """Compute peaks at ``model``'s shapes in each of ``dtypes`` and the memory bandwidth, now, on ``device``.

    Args:
        model: the model whose linear shapes set the matmuls.
        dtypes: torch dtype names, e.g. ``("float32", "bfloat16")``.
        tokens: tokens per forward pass of the matmuls.
        device: ``"cpu"`` or a CUDA device.
    """
    shapes = linear_shapes(model)
    peaks = {name: matmul_peak(shapes, getattr(torch, name), tokens, device) for name in dtypes}
    return Roofline(peaks, memory_bandwidth(device=device), torch.get_num_threads())
