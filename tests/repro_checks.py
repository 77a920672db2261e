"""Helpers of the reproduction tests (tests/test_reproduce*.py, tests/test_remedies.py)."""

from __future__ import annotations

import json

from varsim.experiments.records import record_numbers


def run_records(outdir, sub: str = "") -> dict:
    """``{file name: record numbers}`` of the run records in ``outdir/runs/sub`` (timing and provenance left out:
    what two executions of the same grid must agree on exactly)."""
    return {path.name: record_numbers(json.loads(path.read_text()))
            for path in sorted((outdir / "runs" / sub).glob("*.json"))}
