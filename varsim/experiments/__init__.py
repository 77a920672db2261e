"""The paper's length-generalization experiment, run as independent jobs, with paired statistics.

- ``varsim.experiments.reproduce``  the experiment grid, per-run jobs and results, resume, aggregation
  (:func:`run_reproduction`, :func:`aggregate`).
- ``varsim.experiments.probes``     distribution-shift measurements on a trained model (Figures 1-3 analogues).
- ``varsim.experiments.stats``      Wilson and t intervals, paired differences and tests.
- ``varsim.experiments.executor``   local process pool or Dask cluster behind one ``run_jobs`` call.

Submodules are imported on first use, so importing this package loads neither NumPy nor Dask (the local
executor's workers size their BLAS thread pools before NumPy loads).
"""

from __future__ import annotations

import importlib

__all__ = ["run_reproduction", "aggregate", "ReproductionSettings"]

_LAZY = {
    "run_reproduction": "varsim.experiments.reproduce",
    "aggregate": "varsim.experiments.reproduce",
    "ReproductionSettings": "varsim.experiments.reproduce",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
