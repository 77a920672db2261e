"""Limit the thread pool of the BLAS library loaded by NumPy: for a ``with`` block, for a whole process, or
before NumPy loads.

Why one thread:

- the model's matrices are small (D = 64), so BLAS threads cost more in synchronization than they save, and on a
  loaded machine they spin against each other (a training step measured 4x slower with 2 OpenBLAS threads than
  with 1 on 2 busy cores);
- a matrix product's rounding can depend on how it is split across threads (a multi-threaded OpenBLAS GEMM may
  round differently from a single-threaded one), so the thread count is part of what makes a run bitwise
  reproducible: a job computed in a local worker process, in a Dask worker or in the coordinating process would
  otherwise differ in the last bits of its float32 results.

Parallelism therefore comes from running several trainings / jobs side by side as processes, not from BLAS.

Three tools, one mechanism:

- :func:`blas_threads` (training, evaluation): a context manager, ref-counted so that overlapping uses share one
  setting and the previous count comes back only when the last one leaves;
- :func:`limit_blas_threads` (the reproduction's jobs): process-wide and deliberately never undone, because jobs
  running concurrently in threads of one process (a threaded Dask worker) must not see it change under them;
- :func:`single_threaded_worker` (initializer of the local worker processes): sets the thread-pool environment
  variables before NumPy loads, since BLAS and OpenMP size their pools when the library loads.

The first two act on every BLAS library loaded into this process (OpenBLAS, MKL, BLIS, ... on any OS) through
``threadpoolctl``, found once after NumPy has loaded. When none can be controlled, :func:`blas_threads` does nothing
and yields ``None`` and :func:`limit_blas_threads` returns an empty list.

This module imports only the standard library at load time (NumPy and threadpoolctl are imported on first use of
the BLAS controls): a spawned worker imports it to unpickle :func:`single_threaded_worker`, before NumPy may load.
"""

from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["blas_threads", "limit_blas_threads", "single_threaded_worker", "THREAD_VARS"]

# Thread-pool variables honoured by OpenBLAS, MKL, BLIS, Accelerate, OpenMP, numexpr and Numba.
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)

_libs: list | None = None  # (get, set, "path:api") of every controllable BLAS, found once
_lock = threading.Lock()  # guards the discovery and every change of the thread count
_depth = 0  # blocks currently inside blas_threads (nested or in other Python threads)
_active = 0  # the thread count they share
_saved: list = []  # the counts to restore when the last one leaves


def _blas_controls() -> list:
    """``(get, set, label)`` for every BLAS loaded into this process whose thread count can be read and set
    (computed once, after loading NumPy so that its BLAS is among them; ``label`` is ``"path:api"``)."""
    global _libs
    if _libs is None:
        import numpy  # noqa: F401  (loads NumPy's BLAS into the process)
        from threadpoolctl import ThreadpoolController

        with _lock:
            if _libs is None:
                libs = ThreadpoolController().select(user_api="blas").lib_controllers
                _libs = [(lib.get_num_threads, lib.set_num_threads, f"{lib.filepath}:{lib.internal_api}")
                         for lib in libs]
    return _libs


@contextlib.contextmanager
def blas_threads(n: int):
    """Run the block with ``n`` BLAS threads, then restore; yields the thread count in force, or ``None`` when
    BLAS cannot be controlled.

    The setting is process-wide, so uses that overlap (nested, or concurrent in several Python threads, e.g. two
    trainings in a threaded Dask worker) share it: the first to enter sets ``n``, later ones keep that value, and
    the previous count comes back only when the last one leaves, never under a training still running.
    """
    global _depth, _active, _saved
    controls = _blas_controls()
    with _lock:
        if _depth == 0:
            _saved = [get() for get, _, _ in controls]
            for _, set_, _ in controls:
                set_(int(n))
            _active = int(n)
        _depth += 1
        in_force = _active
    try:
        yield in_force if controls else None
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for (_, set_, _), k in zip(controls, _saved):
                    set_(k)


def limit_blas_threads(n: int = 1) -> list[str]:
    """Set every loaded BLAS to ``n`` threads for the rest of the process; return what was limited (``"path:api"``
    entries; empty if nothing could be).

    Never undone (see the module docstring). If :func:`blas_threads` blocks are running, their count stays in force
    until the last one leaves, and then ``n`` (not the count from before the blocks) is what comes back.
    """
    global _saved
    controls = _blas_controls()
    with _lock:
        if _depth == 0:
            for _, set_, _ in controls:
                set_(int(n))
        else:
            _saved = [int(n)] * len(controls)
    return [label for _, _, label in controls]


def single_threaded_worker() -> None:
    """Initializer of a worker process: one thread per pool, so ``workers`` processes use ``workers`` cores, not
    more. Sets the environment variables, so it must run before NumPy loads (pools are sized at load time)."""
    for var in THREAD_VARS:
        os.environ[var] = "1"
