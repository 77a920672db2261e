"""A results directory of one JSON record per job, resumed: finished jobs are kept, the rest run.

:func:`results_dir` checks a directory can hold the records and locks it (one process at a time,
:mod:`varsim._common.runlock`); :func:`sort_jobs` sorts the jobs into finished (a record that loads), corrupt (a
record that does not: moved aside to ``<name>.corrupt`` and redone) and to do; :func:`run_and_record` runs the ones to
do through :func:`~varsim.jobs.executor.run_jobs` and writes each record atomically as it arrives, so an interrupted
grid loses only the jobs that were running.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable

from varsim._common.atomic import atomic_write_json, check_writable_dir
from varsim._common.runlock import run_lock

__all__ = ["results_dir", "sort_jobs", "run_and_record"]


@contextlib.contextmanager
def results_dir(outdir, records: Path, command: str):
    """Create ``records`` (a folder inside ``outdir``), refuse an ``outdir`` that is a file or cannot be written
    (ValueError naming ``outdir``), and hold ``outdir``'s run lock for ``command`` while the block runs."""
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"outdir {str(out)!r} is not a directory")
    try:
        records.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"outdir {str(out)!r} cannot be created: {exc.strerror or exc}") from None
    check_writable_dir(out, "outdir")  # a file really created (os.access says yes to root on a read-only mount)
    with run_lock(out, command):
        yield out


def sort_jobs(specs, path_of: Callable, load: Callable, bad_record: type[Exception], *,
              log: Callable[[str], None]) -> tuple[dict, list, list]:
    """Sort ``specs`` (dicts with a ``run_id``) by their records at ``path_of(run_id)``.

    Returns ``(finished, todo, corrupt)``: ``finished`` maps a run id to its record ``load(path, spec)``; a record
    whose load raises ``bad_record`` is moved aside to ``<name>.corrupt`` (said through ``log``), listed in ``corrupt``
    as ``{"run_id", "reason"}`` and its spec joins ``todo``, in the order of ``specs``."""
    finished, todo, corrupt = {}, [], []
    for spec in specs:
        path = path_of(spec["run_id"])
        if not path.exists():
            todo.append(spec)
            continue
        try:
            finished[spec["run_id"]] = load(path, spec)
        except bad_record as exc:
            os.replace(path, path.with_name(path.name + ".corrupt"))
            corrupt.append({"run_id": spec["run_id"], "reason": str(exc)})
            log(f"redoing {spec['run_id']}: {exc} (moved to {path.name}.corrupt)")
            todo.append(spec)
    return finished, todo, corrupt


def run_and_record(job: Callable, todo: list, path_of: Callable, *, workdir_of: Callable, scheduler, workers,
                   on_record: Callable, log: Callable[[str], None], prepare: Callable | None = None,
                   name: str = "run") -> list[dict]:
    """Run ``job((spec, workdir_of(spec)))`` for every spec of ``todo`` (:func:`~varsim.jobs.executor.run_jobs` on
    ``scheduler`` or ``workers``); as each record arrives, ``prepare(spec, record)`` may amend it, it is written
    atomically to ``path_of(run_id)``, then ``on_record(spec, record)`` is called. A job that raises is logged and
    returned in the list of failures ``{"run_id", "error"}`` (logged as ``"<name> <run_id> failed: <error>"``); the
    others still run."""
    from varsim.jobs.executor import JobFailure, run_jobs

    failed = []

    def finished(i: int, rec) -> None:
        spec = todo[i]
        if isinstance(rec, JobFailure):
            failed.append({"run_id": spec["run_id"], "error": f"{type(rec.error).__name__}: {rec.error}"})
            log(f"{name} {spec['run_id']} failed: {rec.error}")
            return
        if prepare is not None:
            prepare(spec, rec)
        atomic_write_json(path_of(spec["run_id"]), rec)
        on_record(spec, rec)

    run_jobs(job, [(spec, workdir_of(spec)) for spec in todo], scheduler=scheduler, workers=workers,
             on_result=finished, return_exceptions=True)
    return failed
