"""The paper's length-generalization experiment, run as independent jobs, with paired statistics.

- ``settings``       the grid (task x architecture x normalization x seed) and the spec of every run
- ``worker``         one run: train, evaluate, probe, return its record
- ``records``        the results directory: run records, settings file, loading and checking them
- ``runner``         run or resume the whole grid (:func:`run_reproduction`)
- ``recheck``        recompute finished runs and compare them with their records (:func:`recheck_runs`)
- ``aggregation``    seeds -> intervals and paired tests in ``summary.json`` (:func:`aggregate`)
- ``report``         the Markdown table of a summary
- ``stats``          Wilson and t intervals, paired differences and tests
- ``remedies``       the attention-variant grid (``--preset remedies``) and its learning-rate selection
- ``remedies_summary`` that grid's summary: paired differences against softmax, Holm over the whole grid
- ``reproduce``      all the public names of the reproduction in one place

The names below are importable from this package; submodules are imported on first use, so importing this package
loads neither NumPy nor Dask (the local executor's workers size their BLAS thread pools before NumPy loads).
"""

from __future__ import annotations

import importlib

_LAZY = {
    "ReproductionSettings": "settings",
    "ARCHITECTURES": "settings",
    "DEFAULT_NORMS": "settings",
    "BASELINE_NORM": "settings",
    "run_id": "settings",
    "job_specs": "settings",
    "run_job": "worker",
    "RUN_FORMAT": "records",
    "SETTINGS_FORMAT": "records",
    "CorruptRun": "records",
    "load_run": "records",
    "load_results": "records",
    "run_path": "records",
    "run_reproduction": "runner",
    "recheck_runs": "recheck",
    "SUMMARY_FORMAT": "aggregation",
    "aggregate": "aggregation",
    "render_table": "report",
}

__all__ = list(_LAZY)


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
