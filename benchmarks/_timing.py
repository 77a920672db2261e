"""Timing shared by the benchmark scripts (imported as ``_timing``: they run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import contextlib
import time

import numpy as np

#: seconds of rest before each block: longer than the idle spin of OpenBLAS's and OpenMP's worker threads (about
#: 0.1 s), which would otherwise take cores from the contender timed next
PAUSE_S = 0.3


def blocked_times(steps: dict, repeats: int, block: int = 20, warmup: int = 3, contexts: dict | None = None,
                  pause: float = PAUSE_S) -> dict:
    """``{step: (wall seconds, process CPU seconds)}``, one pair of lists of ``repeats`` timed calls per step
    function, in blocks of ``block`` calls that take turns (so that slow drifts of other load on the machine reach
    every contender alike), each block after ``pause`` seconds and ``warmup`` untimed calls. ``contexts`` maps a step
    to a callable giving the context manager its blocks run in (e.g. its thread count).

    Not call by call: two libraries in one process whose thread pools take turns every few milliseconds slow each
    other down (a pool's threads spin for a while after each call). Timed call by call, the PyTorch twin of the
    2-block model of ``bench_train.py`` took 42 ms a step instead of 16 ms."""
    contexts = contexts or {}
    times = {k: ([], []) for k in steps}
    while any(len(walls) < repeats for walls, _ in times.values()):
        for k, step in steps.items():
            walls, cpus = times[k]
            time.sleep(pause)
            with contexts.get(k, contextlib.nullcontext)():
                for _ in range(warmup):
                    step()
                for _ in range(min(block, repeats - len(walls))):
                    t0, c0 = time.perf_counter(), time.process_time()
                    step()
                    walls.append(time.perf_counter() - t0)
                    cpus.append(time.process_time() - c0)
    return times


def blocked_medians(steps: dict, repeats: int, **kwargs) -> dict:
    """Median wall seconds per call of each step function, timed by :func:`blocked_times` (same keywords)."""
    return {k: float(np.median(walls)) for k, (walls, _) in blocked_times(steps, repeats, **kwargs).items()}
