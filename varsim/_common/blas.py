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

The first two call the thread-count functions of the OpenBLAS builds that NumPy wheels ship (symbols
``scipy_openblas_set_num_threads64_`` and friends) or of MKL, found once among the shared libraries mapped into
this process (Linux ``/proc/self/maps``) and called through ctypes: the same job as ``threadpoolctl``, without the
dependency. Elsewhere (another BLAS, another OS) :func:`blas_threads` does nothing and yields ``None``, and
:func:`limit_blas_threads` falls back on ``threadpoolctl`` when it is installed.

This module imports only the standard library at load time (NumPy is imported on first use of the BLAS
controls): a spawned worker imports it to unpickle :func:`single_threaded_worker`, before NumPy may load.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading

__all__ = ["blas_threads", "limit_blas_threads", "single_threaded_worker", "THREAD_VARS"]

# (getter, setter) symbol names, tried in order in each library: OpenBLAS (the scipy-openblas builds bundled with
# NumPy/SciPy, 64-bit interface and plain) and MKL.
_SYMBOLS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
    ("MKL_Get_Max_Threads", "MKL_Set_Num_Threads"),
)
_LIBRARY_TAGS = ("openblas", "libmkl_rt")

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

_libs: list | None = None  # (get, set, "path:setter") of every controllable BLAS, found once
_lock = threading.Lock()  # guards the discovery and every change of the thread count
_depth = 0  # blocks currently inside blas_threads (nested or in other Python threads)
_active = 0  # the thread count they share
_saved: list = []  # the counts to restore when the last one leaves


def _mapped_blas_libraries() -> list[str]:
    """Paths of the OpenBLAS / MKL shared libraries mapped into this process (empty when not on Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split()[-1] for line in fh if "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and any(tag in p.lower() for tag in _LIBRARY_TAGS))


def _blas_controls() -> list:
    """``(get, set, label)`` for every BLAS mapped into this process whose thread count can be read and set
    (computed once; loads NumPy first, so that its BLAS is among them)."""
    global _libs
    if _libs is None:
        import numpy  # noqa: F401  (maps NumPy's BLAS into the process)

        with _lock:
            if _libs is None:
                found = []
                for path in _mapped_blas_libraries():
                    try:
                        lib = ctypes.CDLL(path)
                    except OSError:
                        continue
                    for get_name, set_name in _SYMBOLS:
                        get = getattr(lib, get_name, None)
                        set_ = getattr(lib, set_name, None)
                        if get is not None and set_ is not None:
                            get.argtypes = []
                            get.restype = ctypes.c_int
                            set_.argtypes = [ctypes.c_int]
                            set_.restype = None
                            found.append((get, set_, f"{path}:{set_name}"))
                            break
                _libs = found
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
    """Set every loaded BLAS to ``n`` threads for the rest of the process; return what was limited (``"path:symbol"``
    entries, ``["threadpoolctl"]``, or empty if nothing could be).

    Never undone (see the module docstring). If :func:`blas_threads` blocks are running, their count stays in force
    until the last one leaves, and then ``n`` (not the count from before the blocks) is what comes back.
    """
    global _saved
    controls = _blas_controls()
    if not controls:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return []
        threadpool_limits(limits=int(n), user_api="blas")  # applied now; kept (see the module docstring)
        return ["threadpoolctl"]
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
