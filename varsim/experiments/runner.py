"""Run (or resume) a grid of training runs into a results directory, then summarize it: the floor under the paper
reproduction and the remedies grid (:func:`varsim.experiments.run_reproduction` chooses the grid).

Resume (:mod:`varsim.jobs.resume`): a run whose record exists and validates is not redone; a record that does not
parse or does not match its run (a different spec, missing fields, accuracies outside [0, 1]) is reported, moved
aside to ``runs/<run_id>.json.corrupt`` and redone. With an lr grid, the selection runs come first
(:mod:`varsim.experiments.selection`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

from varsim._common.atomic import append_text
from varsim._common.validate import format_seconds
from varsim.experiments.records import (
    CorruptRun,
    load_run,
    load_select_run,
    read_selection,
    run_path,
    runs_dir,
    select_path,
    write_selection,
    write_settings,
)
from varsim.experiments.settings import ReproductionSettings, job_specs, selection_specs
from varsim.experiments.worker import run_job
from varsim.jobs.resume import results_dir, run_and_record, sort_jobs

__all__ = ["run_grid"]


class _GridLog:
    """Where a grid's progress goes: every line is appended to ``<outdir>/progress.log`` with its UTC time (flushed
    line by line, so ``tail -f`` follows a run in the background) and, when ``show``, printed on stderr.
    ``log(message)`` is a progress line; ``log.say(message)`` a notice (a redone corrupt record, a failed run), which
    reaches stderr whether or not progress is shown."""

    def __init__(self, out: Path, show: bool):
        self.path = out / "progress.log"
        self.show = show
        self.dropped = 0  # lines a FIFO or device did not take (no reader, a full pipe, a reader gone)

    def __call__(self, message: str, *, notice: bool = False) -> None:
        if self.show or notice:
            print(message, file=sys.stderr, flush=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if not append_text(self.path, f"{stamp} {message}\n"):  # a FIFO or device: written through, never waited on
            self.dropped += 1
            if self.dropped == 1:
                print(f"varsim reproduce: note: {self.path} is not a regular file and took no line (no process reads "
                      "it, or its reader is full or gone); progress lines it does not take are dropped",
                      file=sys.stderr, flush=True)

    def say(self, message: str) -> None:
        self("varsim reproduce: " + message, notice=True)


def _check_scheduler(scheduler: str) -> None:
    """Connect to the Dask scheduler once (ValueError naming ``scheduler`` when it cannot be reached)."""
    from varsim.jobs.executor import open_executor

    with open_executor(scheduler):
        pass


def run_grid(outdir, settings: ReproductionSettings, *, summarize: Callable[[Path], dict], scheduler: str | None,
             workers: int | None, checkpoints: bool | None, progress: bool | None,
             on_run: Callable[[dict], None] | None) -> dict:
    """Run (or resume) the grid ``settings`` into ``outdir``, then ``summarize(outdir)`` (which writes
    ``summary.json`` and ``table.md`` and returns the summary); return a report (see
    :func:`varsim.experiments.run_reproduction`, whose arguments these are)."""
    from varsim.jobs.executor import check_executor_args

    t0 = time.perf_counter()
    if not isinstance(settings, ReproductionSettings):
        raise ValueError(f"settings must be a ReproductionSettings, got {type(settings).__name__}")
    check_executor_args(scheduler, workers)
    if checkpoints is None:
        checkpoints = scheduler is None
    show = progress is None or bool(progress)
    if on_run is not None and not callable(on_run):
        raise ValueError("on_run must be callable or None")
    with results_dir(outdir, runs_dir(outdir), "varsim reproduce") as out:  # one process per outdir at a time
        return _run_locked(out, settings, summarize=summarize, scheduler=scheduler, workers=workers,
                           checkpoints=checkpoints, log=_GridLog(out, show), on_run=on_run, t0=t0)


def _run_locked(out: Path, settings: ReproductionSettings, *, summarize, scheduler, workers, checkpoints,
                log: _GridLog, on_run, t0: float) -> dict:
    """The body of :func:`run_grid` once ``out`` is locked: pin the settings, sort the runs into finished,
    corrupt and to do, run the rest, summarize."""
    if scheduler is not None:  # fail on an unreachable cluster before the directory is pinned to these settings
        _check_scheduler(scheduler)
    write_settings(out, settings)

    from varsim._common.provenance import provenance

    commit = provenance()["git_commit"]
    selection = None
    select_failed: list = []
    if settings.lr_grid:  # phase 1: the learning-rate selection runs (validation only), then the choice
        selection, select_failed = _select_phase(out, settings, scheduler=scheduler, workers=workers,
                                                 checkpoints=checkpoints, log=log)
        if selection is None:
            return {"outdir": str(out), "runs": 0, "skipped": [], "completed": [], "corrupt": [],
                    "failed": select_failed, "other_commit": [], "summary": None, "table": None, "learned": [],
                    "elapsed_s": time.perf_counter() - t0}
    specs = job_specs(settings, selection and selection["chosen"])
    finished, todo, corrupt = sort_jobs(specs, lambda rid: run_path(out, rid), load_run, CorruptRun, log=log.say)
    skipped = list(finished)
    other_code = [rid for rid, rec in finished.items() if (rec.get("provenance") or {}).get("git_commit") != commit]
    log(f"reproduce: {len(specs)} runs, {len(skipped)} already finished, {len(todo)} to run")
    if other_code:  # kept (same spec), but the numbers may predate a code change: say so
        log.say(f"note: {len(other_code)} finished run(s) were made at another git commit than the current {commit!r} "
                f"(e.g. {other_code[0]}); use a fresh outdir to recompute them")

    todo.sort(key=_cost_rank)  # longest first: the last runs to finish are short ones (records do not depend on order)

    def workdir(spec):
        return str(out / "checkpoints" / spec["run_id"]) if checkpoints else None

    if checkpoints:
        _set_aside_superseded(out / "checkpoints", todo, log)
    reused = {}
    if checkpoints and settings.lr_grid:
        for spec in todo:
            src = _reuse_selection_training(out, settings, spec)
            if src is not None:
                reused[spec["run_id"]] = src
        if reused:
            log(f"reproduce: {len(reused)} main runs start from the finished training of their lr selection run (same "
                "config: the same weights)")
    done = []

    def prepare(spec, rec) -> None:
        if spec["run_id"] in reused:
            rec["timing"]["train_reused_from"] = reused[spec["run_id"]]

    def recorded(spec, rec) -> None:
        done.append(spec["run_id"])
        if on_run is not None:
            on_run(rec)
        acc = rec["eval"]["accuracy"]
        log(f"[{len(skipped) + len(done)}/{len(specs)}] {spec['run_id']}: "
            f"in-dist {rec['in_distribution']['accuracy']:.3f}, N={rec['eval']['lengths'][-1]} {acc[-1]:.3f}, "
            f"{rec['timing']['total_s']:.1f} s (elapsed {format_seconds(time.perf_counter() - t0)})")

    failed = run_and_record(run_job, todo, lambda rid: run_path(out, rid), workdir_of=workdir, scheduler=scheduler,
                            workers=workers, prepare=prepare, on_record=recorded, log=log.say)
    agg = summarize(out)
    log(f"reproduce: {len(done)} run(s) done, {len(failed)} failed, summary written (elapsed "
        f"{format_seconds(time.perf_counter() - t0)})")
    return {
        "outdir": str(out),
        "runs": len(specs),
        "skipped": skipped,
        "completed": done,
        "corrupt": corrupt,
        "failed": select_failed + failed,
        "other_commit": other_code,
        "summary": str(out / "summary.json"),
        "table": str(out / "table.md"),
        "learned": agg["learned"],
        "elapsed_s": time.perf_counter() - t0,
    }


def _cost_rank(spec: dict) -> tuple:
    """Sort key putting the costly runs first: deeper models (a full self-attention block per extra block), then
    those with more inference-only maps to evaluate; stable within a rank."""
    return (-spec["train_config"]["model"]["n_blocks"], -len(spec.get("inference") or ()))


def _reuse_selection_training(out: Path, settings: ReproductionSettings, spec: dict) -> str | None:
    """Give a main run the finished training of its lr-selection twin; return the twin's run id, or None.

    A main run of a selection seed at its cell's chosen lr has the same ``TrainConfig`` as the selection run of that
    seed and lr, so training it again would give the same weights bit for bit (training is a pure function of its
    config). When the twin's checkpoint directory holds a completed training of exactly that config and the main run
    has no directory of its own yet, the twin's directory is copied to the main run's; ``train(resume=True)`` then
    finds it complete and the worker evaluates the same model it would have trained. Anything else (no twin, a
    diverged or unfinished twin, another config): None, and the run trains as usual."""
    import shutil

    from varsim._common.jsonio import read_json
    from varsim.experiments.settings import Cell, cell_key

    if spec["seed_index"] >= settings.lr_select_seeds or spec.get("lr") not in settings.lr_grid:
        return None
    dst = out / "checkpoints" / spec["run_id"]
    if dst.exists():
        return None
    cell = Cell(spec["task"], spec["architecture"], spec["norm"], spec["attention"], spec["depth"],
                spec.get("recipe"), spec.get("key_encoding"))
    twin = f"{cell_key(cell)}-lr{list(settings.lr_grid).index(spec['lr'])}-s{spec['seed_index']}"
    src = out / "checkpoints" / "select" / twin
    try:
        summary = read_json(src / "summary.json")
        config = read_json(src / "config.json")
    except ValueError:
        return None
    if summary.get("status") != "completed" or config.get("config") != spec["train_config"]:
        return None
    tmp = dst.with_name(dst.name + ".reuse-tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(".lock", ".ckpt-*.tmp"))
    os.replace(tmp, dst)
    return twin


def _set_aside_superseded(base: Path, todo: list, log: _GridLog) -> list[str]:
    """Move aside (to ``<run_id>.superseded``) the checkpoint directories under ``base`` of the runs to do whose
    training config is not their spec's: made for other settings, e.g. another chosen lr after a change of the
    selection rule. Resuming from them would refuse (the config differs), so the run could never be redone; set
    aside, nothing is lost and the run trains afresh. Returns the run ids moved."""
    import shutil

    from varsim._common.jsonio import read_json

    moved = []
    for spec in todo:
        d = base / spec["run_id"]
        try:
            config = read_json(d / "config.json")
        except ValueError:  # no directory or no training yet (or unreadable: train() says so)
            continue
        if not isinstance(config, dict) or config.get("config") == spec["train_config"]:
            continue
        dest = d.with_name(d.name + ".superseded")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(d, dest)
        moved.append(spec["run_id"])
    if moved:
        log(f"reproduce: {len(moved)} checkpoint directories were made for another training config (e.g. "
            f"{moved[0]}); set aside as <run_id>.superseded")
    return moved


def _select_phase(out: Path, settings: ReproductionSettings, *, scheduler, workers, checkpoints, log: _GridLog):
    """Run (or resume) the lr selection runs, choose the lr per cell, write ``selection.json``.

    Returns ``(selection, failed)``; ``selection`` is None when some selection run failed (re-running resumes)."""
    from varsim.experiments.selection import select_lr

    specs = selection_specs(settings)
    select_path(out, "x").parent.mkdir(parents=True, exist_ok=True)
    records, todo, _ = sort_jobs(specs, lambda rid: select_path(out, rid), load_select_run, CorruptRun, log=log.say)
    log(f"reproduce: lr selection: {len(specs)} runs, {len(specs) - len(todo)} already finished")
    if checkpoints:
        _set_aside_superseded(out / "checkpoints" / "select", todo, log)
    todo.sort(key=_cost_rank)

    def recorded(spec, rec) -> None:
        records[spec["run_id"]] = rec
        log(f"[select {len(records)}/{len(specs)}] {spec['run_id']}: validation {rec['validation']['score']:.3f}, "
            f"{rec['timing']['total_s']:.1f} s")

    def workdir(spec):
        return str(out / "checkpoints" / "select" / spec["run_id"]) if checkpoints else None

    failed = run_and_record(run_job, todo, lambda rid: select_path(out, rid), workdir_of=workdir,
                            scheduler=scheduler, workers=workers, on_record=recorded, log=log.say, name="selection run")
    if failed:
        return None, failed
    selection = select_lr(settings, records)
    old = read_selection(out)
    if old is None or old["chosen"] != selection["chosen"]:
        write_selection(out, selection)
    return selection, failed
