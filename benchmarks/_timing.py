"""Timing shared by the benchmark scripts (imported as ``_timing``: they run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import time

import numpy as np


def interleaved_medians(steps: dict, repeats: int, warmup: int = 10) -> dict:
    """Median seconds per call of each step function, timed alternately so that load from other processes on the
    machine affects every contender alike."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times = {k: [] for k in steps}
    for _ in range(repeats):
        for k, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[k].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}
