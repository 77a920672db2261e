"""Recompute finished runs of a results directory with the current code and compare them with their records.

A directory resumed across code changes holds records made at several commits (``varsim reproduce`` says so when it
resumes). Each run is a pure function of its spec, so a recomputed run whose numbers equal the record's shows that
the current code gives what the older record says. The recomputation trains in a temporary directory: nothing in the
results directory is written (``varsim reproduce DIR --recheck RUN_ID ...``).
"""

from __future__ import annotations

import json
import time

from varsim._common.jsonio import JSONFileError, jsonable, read_json
from varsim._common.provenance import provenance
from varsim.experiments.records import CorruptRun, load_run, load_select_run, record_numbers, run_path, select_path

__all__ = ["recheck_runs"]


def recheck_runs(outdir, run_ids, *, on_result=None) -> list[dict]:
    """Recompute the runs ``run_ids`` of ``outdir`` (main runs or lr-selection runs) from their records' specs.

    Every record is read and checked before anything is computed (ValueError naming the ``run_id`` without a
    trustworthy record). Returns, per run, ``{"run_id", "identical", "differs" (the record fields that differ,
    timing and provenance aside), "made_at", "recomputed_at" (git commits), "seconds"}``; ``on_result(result)`` is
    called as each one finishes."""
    if isinstance(run_ids, str) or not run_ids:
        raise ValueError("run_ids must be a non-empty list of run ids")
    records = [(rid, _record(outdir, rid)) for rid in run_ids]
    from varsim.experiments.worker import run_job

    commit = provenance().get("git_commit")
    results = []
    for rid, rec in records:
        t0 = time.perf_counter()
        new = json.loads(json.dumps(jsonable(run_job((rec["spec"], None)))))  # as it would be written to disk
        old, now = record_numbers(rec), record_numbers(new)
        differs = sorted(k for k in set(old) | set(now) if old.get(k) != now.get(k))
        results.append({"run_id": rid, "identical": not differs, "differs": differs,
                        "made_at": (rec.get("provenance") or {}).get("git_commit"), "recomputed_at": commit,
                        "seconds": time.perf_counter() - t0})
        if on_result is not None:
            on_result(results[-1])
    return results


def _record(outdir, run_id) -> dict:
    if not isinstance(run_id, str) or not run_id or "/" in run_id:
        raise ValueError(f"run_id must be the name of a run record, got {run_id!r}")
    main, select = run_path(outdir, run_id), select_path(outdir, run_id)
    if not (main.is_file() or select.is_file()):
        raise ValueError(f"run_id: no record of {run_id!r} in {outdir}/runs or {outdir}/runs/select")
    try:
        if main.is_file():
            return load_run(main)
        stored = read_json(select, what="selection run record", expect=None)  # checked against the spec it carries
        return load_select_run(select, stored.get("spec") if isinstance(stored, dict) else None)
    except (CorruptRun, JSONFileError) as exc:
        raise ValueError(f"run_id {run_id!r}: its record cannot be trusted: {exc}") from None
