"""Helpers of the reproduction tests (tests/test_reproduce*.py, tests/test_remedies*.py, tests/test_figures*.py)."""

from __future__ import annotations

import json

from varsim.experiments.records import record_numbers


def run_records(outdir, sub: str = "") -> dict:
    """``{file name: record numbers}`` of the run records in ``outdir/runs/sub`` (timing and provenance left out:
    what two executions of the same grid must agree on exactly)."""
    return {path.name: record_numbers(json.loads(path.read_text()))
            for path in sorted((outdir / "runs" / sub).glob("*.json"))}


def module_grid(tmp_path_factory, name: str, **grid) -> tuple:
    """A grid run once for a test module (a module-scoped fixture calls this): ``run_reproduction(**grid)`` into a
    new temporary directory ``<name>/grid`` with 2 workers and no progress, every run finished; ``(directory,
    report)``."""
    from varsim.experiments import run_reproduction

    out = tmp_path_factory.mktemp(name) / "grid"
    report = run_reproduction(out, workers=2, progress=False, **grid)
    assert report["failed"] == [], report["failed"]
    return out, report
