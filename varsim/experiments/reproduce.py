"""The paper's experiment: does normalizing the attention output help length generalization, and by how much?

This module gathers the public names of the reproduction, each defined in the module that does that one job:

- ``varsim.experiments.settings``       the grid and :class:`ReproductionSettings`, the spec of every run
- ``varsim.experiments.worker``         one run: train, evaluate, probe (:func:`run_job`)
- ``varsim.experiments.records``        the results directory on disk: run records, settings, :func:`load_results`
- ``varsim.experiments.runner``         run or resume the grid (:func:`run_reproduction`)
- ``varsim.experiments.aggregation``    statistics over seeds into ``summary.json`` (:func:`aggregate`)
- ``varsim.experiments.report``         the Markdown table (:func:`render_table`)
"""

from __future__ import annotations

from varsim.experiments.aggregation import SUMMARY_FORMAT, aggregate
from varsim.experiments.records import RUN_FORMAT, SETTINGS_FORMAT, CorruptRun, load_results, load_run, run_path
from varsim.experiments.report import render_table
from varsim.experiments.runner import run_reproduction
from varsim.experiments.settings import (
    ARCHITECTURES,
    BASELINE_NORM,
    DEFAULT_NORMS,
    ReproductionSettings,
    job_specs,
    run_id,
)
from varsim.experiments.worker import run_job

__all__ = [
    "ReproductionSettings",
    "ARCHITECTURES",
    "DEFAULT_NORMS",
    "BASELINE_NORM",
    "RUN_FORMAT",
    "SETTINGS_FORMAT",
    "SUMMARY_FORMAT",
    "run_id",
    "job_specs",
    "run_job",
    "run_reproduction",
    "aggregate",
    "render_table",
    "load_results",
    "load_run",
    "run_path",
    "CorruptRun",
]
