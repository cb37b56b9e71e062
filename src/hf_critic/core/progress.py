"""One progress bar for a long run done in chunks (read-outs and rewards go through the cache a chunk at a time, so a
killed run keeps every finished chunk): rows/s, tokens/s and the time to finish of the whole run, not of one chunk.
"""

from __future__ import annotations

import contextlib
import time

__all__ = ["RunBar"]


class RunBar(contextlib.AbstractContextManager):
    """A tqdm bar over a whole run; the engine's own per-call bars are silenced while it is open.

    Args:
        total: rows the run must do (those not in the cache).
        unit: what a row is (``"verdict"``, ``"response"``).
        desc: the bar's label.
        engine: the backend or scorer doing the work: its ``progress`` flag decides whether a bar is shown, and is
            switched off inside the run; its ``last_readout`` (:class:`hf_critic.backends.prefill.ReadoutCounts`), where it
            keeps one, gives the tokens read.
    """

    def __init__(self, total: int, unit: str, desc: str, engine):
        from tqdm.auto import tqdm

        self.engine, self.shown = engine, bool(getattr(engine, "progress", False))
        self.bar = tqdm(total=total, unit=unit, desc=desc, disable=not self.shown or not total)
        self.tokens, self.started = 0, time.perf_counter()

    def __enter__(self) -> RunBar:
        if self.shown:
            self.engine.progress = False
        return self

    def done(self, rows: int) -> None:
        """A chunk of ``rows`` finished: advance, and show the tokens read per second where the engine counts them."""
        counts = getattr(self.engine, "last_readout", None)
        if counts is not None:
            self.tokens += counts.read
            self.bar.set_postfix(
                tok_s=f"{self.tokens / max(time.perf_counter() - self.started, 1e-9):.0f}", refresh=False
            )
        self.bar.update(rows)

    def __exit__(self, *exc) -> None:
        self.bar.close()
        if self.shown:
            self.engine.progress = True
