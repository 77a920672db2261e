"""Grids of training runs, with paired statistics, in three kinds (:data:`GRID_KINDS`): the paper's
length-generalization reproduction, the remedies grid and the decoder grid. Each kind owns its summary, its format and
its table; its figure source is registered under the same name in :data:`varsim.figures.SOURCES`.

The kinds share one floor (a module imports only from the groups above it in this list):

- the grid:      ``settings`` (the grid and the spec of every run), ``variant_axis`` (the remedies and decoder
                 grids' fields and their validation), ``grid_kind`` (:class:`GridKind`: what a kind of grid owns),
                 ``stats`` (intervals and paired tests), ``records`` (the results directory: run records, settings,
                 loading and checking them), ``report`` (the pieces of the Markdown tables), ``selection`` (the lr
                 axis: choice on validation runs)
- running it:    ``worker`` (one run: train, evaluate, probe), ``runner`` (run or resume a grid on
                 :mod:`varsim.jobs`), ``recheck`` (recompute finished runs and compare them with their records)
- the kinds:     ``reproduction_summary`` (the paper grid's kind: statistics and table), ``remedies_summary`` and
                 ``remedies_table`` (the variant grids' paired differences against softmax, Holm, and their table),
                 ``remedies`` (the attention-variant grid and its kind, ``--preset remedies``), ``decoder_grid`` (the
                 causal decoder with positions and its kind, ``--preset decoder``);
                 ``prediction`` (the pre-registered test of the long-N accuracy predictor on the remedies grid's
                 softmax runs, :mod:`varsim.train.predict`)
- entry points:  ``aggregation`` (:data:`GRID_KINDS`, :func:`kind_of`, :func:`aggregate`: the summary of a
                 directory, made by its grid's kind), ``presets``
                 (``PRESETS``: the grids ``--preset`` names), ``reproduce`` (:func:`run_reproduction`: choose the
                 grid, run it, summarize it)

Simulator sweeps are :mod:`varsim.sim.sweep`; the probes of a trained model, :mod:`varsim.train.probes`; the
executor (local processes or Dask), :mod:`varsim.jobs.executor`.

The names below are importable from this package, its one facade; submodules are imported on first use, so importing
this package loads neither NumPy nor Dask (the local executor's workers size their BLAS thread pools before NumPy
loads).
"""

from __future__ import annotations

import importlib

_LAZY = {
    "ReproductionSettings": "settings",
    "GRID_ARCHITECTURES": "settings",
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
    "run_reproduction": "reproduce",
    "recheck_runs": "recheck",
    "SUMMARY_FORMAT": "reproduction_summary",
    "aggregate": "aggregation",
    "render_table": "reproduction_summary",
    "GridKind": "grid_kind",
    "GRID_KINDS": "aggregation",
    "grid_kind": "aggregation",
    "kind_of": "aggregation",
    "remedies_settings": "remedies",
    "decoder_settings": "decoder_grid",
    "PRESETS": "presets",
    "REMEDIES_SUMMARY_FORMAT": "remedies_summary",
    "select_lr": "selection",
}

__all__ = list(_LAZY)


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
