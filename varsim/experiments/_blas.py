"""Pin the BLAS libraries of this process to one thread, so that a run's numbers do not depend on where it ran.

A multi-threaded OpenBLAS GEMM may round differently from a single-threaded one (the work is split differently),
so a job computed in a worker process limited to one thread (the local pool), in a Dask worker or in the
coordinating process would otherwise differ in the last bits of its float32 probes. Jobs call
:func:`limit_blas_threads` first; parallelism comes from running jobs side by side, not from BLAS.

The limit is process-wide and deliberately not undone: jobs running concurrently in threads of one process (a
threaded Dask worker) must not see it change under them. ``threadpoolctl`` is used when installed; otherwise the
thread-count setters of the OpenBLAS / MKL libraries mapped into the process (Linux ``/proc/self/maps``) are called
through ctypes.
"""

from __future__ import annotations

import ctypes
import threading

__all__ = ["limit_blas_threads"]

# Setter symbols: OpenBLAS (plain, 64-bit interface, and the scipy-openblas builds bundled with NumPy/SciPy), MKL.
_SETTERS = (
    "openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "scipy_openblas_set_num_threads64_",
    "MKL_Set_Num_Threads",
)
_LOCK = threading.Lock()
_DONE: dict[int, list[str]] = {}


def _mapped_blas_libraries() -> list[str]:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split()[-1] for line in fh if "/" in line}
    except OSError:  # not Linux: only threadpoolctl can help
        return []
    return sorted(p for p in paths if any(tag in p.lower() for tag in ("openblas", "libmkl_rt", "blis")))


def limit_blas_threads(n: int = 1) -> list[str]:
    """Set every loaded BLAS to ``n`` threads; return what was limited (empty if nothing could be).

    Loads NumPy first, so that its BLAS is among the libraries found.
    """
    import numpy  # noqa: F401  (maps NumPy's BLAS into the process)

    with _LOCK:
        if n in _DONE:
            return _DONE[n]
        limited: list[str] = []
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            threadpool_limits = None
        if threadpool_limits is not None:
            threadpool_limits(limits=n, user_api="blas")  # applied now; kept (see the module docstring)
            limited.append("threadpoolctl")
        else:
            for path in _mapped_blas_libraries():
                try:
                    lib = ctypes.CDLL(path)
                except OSError:
                    continue
                for name in _SETTERS:
                    setter = getattr(lib, name, None)
                    if setter is not None:
                        setter.argtypes = [ctypes.c_int]
                        setter.restype = None
                        setter(int(n))
                        limited.append(f"{path}:{name}")
                        break
        _DONE[n] = limited
        return limited
