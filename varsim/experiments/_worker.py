"""Start-up hook of the local worker processes; deliberately imports nothing heavy.

A spawned worker unpickles its initializer by importing the module that defines it. Keeping it here, away
from anything that imports NumPy, lets it run before NumPy loads: BLAS and OpenMP size their thread pools when
the library loads and cannot be shrunk afterwards (without threadpoolctl, which varsim does not require).
"""

import os

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


def single_threaded_worker() -> None:
    """One thread per worker process: ``workers`` processes then use ``workers`` cores, not more."""
    for var in THREAD_VARS:
        os.environ[var] = "1"
