"""Pin the BLAS library loaded by NumPy to a number of threads, for the duration of a ``with`` block.

Why: the model's matrices are small (D = 64), so BLAS threads cost more in synchronization than they save, and
on a loaded machine they spin against each other (a training step measured 4x slower with 2 OpenBLAS threads
than with 1 on 2 busy cores). And a matrix product's rounding can depend on how it is split across threads, so
the number of threads is part of what makes a run bitwise reproducible. Training therefore runs single-threaded
(parallelism comes from running several runs as processes).

Works with the OpenBLAS builds that NumPy wheels ship (symbols ``scipy_openblas_set_num_threads64_`` and
friends), found among the shared libraries mapped into this process; elsewhere (another BLAS, another OS) it
does nothing and :func:`blas_threads` yields ``None``. The same job as ``threadpoolctl``, without the dependency.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import threading

__all__ = ["blas_threads"]

_SET = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
        "openblas_set_num_threads")
_GET = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
        "openblas_get_num_threads")
_libs: list | None = None
_lock = threading.Lock()
_depth = 0  # blocks currently inside blas_threads (nested or in other Python threads)
_active = 0  # the thread count they share
_saved: list = []  # the counts to restore when the last one leaves


def _openblas_controls() -> list:
    """(get, set) function pairs of every OpenBLAS mapped into this process (computed once)."""
    global _libs
    if _libs is None:
        import numpy  # noqa: F401  (make sure NumPy's BLAS is loaded)

        _libs = []
        try:
            with open("/proc/self/maps", encoding="utf-8") as fh:
                paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", fh.read())))
        except OSError:
            paths = []
        for path in paths:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            get = next((getattr(lib, n) for n in _GET if hasattr(lib, n)), None)
            set_ = next((getattr(lib, n) for n in _SET if hasattr(lib, n)), None)
            if get is not None and set_ is not None:
                get.restype = ctypes.c_int
                set_.argtypes = [ctypes.c_int]
                _libs.append((get, set_))
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
    controls = _openblas_controls()
    with _lock:
        if _depth == 0:
            _saved = [get() for get, _ in controls]
            for _, set_ in controls:
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
                for (_, set_), k in zip(controls, _saved):
                    set_(k)
