"""Minimal progress reporting on a terminal (silent when stderr is not a TTY unless forced)."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``with Progress(total, "simulate") as p: ... p.update(k)`` prints a one-line status to stderr."""

    def __init__(self, total: int, label: str = "", *, enabled: bool | None = None, stream=None, min_interval=0.2):
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else bool(enabled)
        self.done = 0
        self.start = time.perf_counter()
        self._last = 0.0
        self.min_interval = min_interval

    def __enter__(self):
        return self

    def update(self, k: int = 1, extra: str = "") -> None:
        self.done += k
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < self.min_interval and self.done < self.total:
            return
        self._last = now
        elapsed = now - self.start
        frac = self.done / self.total
        eta = elapsed * (1 - frac) / frac if frac > 0 else float("nan")
        self.stream.write(
            f"\r{self.label} {self.done}/{self.total} ({100 * frac:5.1f}%) elapsed {elapsed:6.1f}s "
            f"eta {eta:6.1f}s {extra}"
        )
        self.stream.flush()

    def __exit__(self, *exc):
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
        return False
