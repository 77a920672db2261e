"""Run records and settings on disk: reading, checking, and the layout of a results directory.

Layout of a results directory::

    settings.json           the ReproductionSettings (a resumed run must use the same ones)
    runs/<run_id>.json      one record per finished run, written atomically by the coordinating process
    checkpoints/<run_id>/   training checkpoints (local runs; lets an interrupted run resume mid-training)
    summary.json, table.md  the aggregation (:func:`varsim.experiments.aggregate`)

With a learning-rate grid (the remedies axis) also::

    runs/select/<id>.json   one record per learning-rate selection run (validation accuracies only)
    selection.json          the lr chosen per cell, with the validation scores it was chosen on

A record is trusted when it parses and matches its run's spec (same spec, every field present, accuracies in
[0, 1] inside their intervals); anything else is a :class:`CorruptRun`.
"""

from __future__ import annotations

from pathlib import Path

from varsim._common.atomic import atomic_write_json
from varsim._common.jsonio import JSONFileError, read_json
from varsim.experiments.settings import ReproductionSettings, cells, job_specs

__all__ = ["RUN_FORMAT", "SETTINGS_FORMAT", "CorruptRun", "runs_dir", "run_path", "load_run",
           "read_settings", "write_settings", "load_results", "runs_by_cell", "SELECT_FORMAT", "SELECTION_FORMAT",
           "select_path", "load_select_run", "read_selection", "write_selection", "VOLATILE_FIELDS", "record_numbers",
           "grid_run"]

RUN_FORMAT = "varsim.reproduce.run/1"
SELECT_FORMAT = "varsim.reproduce.lr_select/1"
SELECTION_FORMAT = "varsim.reproduce.selection/1"
SETTINGS_FORMAT = "varsim.reproduce.settings/1"


#: the fields of a run record that differ between executions of the same spec (wall and CPU time, commit, host)
VOLATILE_FIELDS = ("timing", "provenance")


def record_numbers(rec: dict) -> dict:
    """A run record without its :data:`VOLATILE_FIELDS`: what two executions of one spec must agree on exactly."""
    return {k: v for k, v in rec.items() if k not in VOLATILE_FIELDS}


class CorruptRun(ValueError):
    """A run record that cannot be trusted (unreadable, truncated, or not the run it claims to be)."""


def runs_dir(outdir) -> Path:
    return Path(outdir) / "runs"


def run_path(outdir, rid: str) -> Path:
    return runs_dir(outdir) / f"{rid}.json"


def _read_record(p: Path, what: str, fmt: str) -> dict:
    """The JSON object of ``p`` if its ``format`` is ``fmt``, else :class:`CorruptRun`."""
    try:
        rec = read_json(p, what=what, expect=None)
    except JSONFileError as exc:
        raise CorruptRun(f"{p.name}: {exc}") from None
    if not isinstance(rec, dict) or rec.get("format") != fmt:
        raise CorruptRun(f"{p.name}: not a {fmt} record")
    return rec


def load_run(path, spec: dict | None = None) -> dict:
    """Read and check one run record; raise :class:`CorruptRun` saying what is wrong.

    With ``spec`` the record must be the result of exactly that spec.
    """
    p = Path(path)
    rec = _read_record(p, "run record", RUN_FORMAT)
    missing = [k for k in ("run_id", "spec", "train", "in_distribution", "eval", "probes") if k not in rec]
    if missing:
        raise CorruptRun(f"{p.name}: missing {missing}")
    if spec is not None:
        if rec["run_id"] != spec["run_id"]:
            raise CorruptRun(f"{p.name}: holds run {rec['run_id']!r}, expected {spec['run_id']!r}")
        if rec["spec"] != spec:
            raise CorruptRun(f"{p.name}: was produced by a different spec (settings or code changed)")
    return _consistent(p, rec, _run_consistent, "accuracies or intervals")


def _run_consistent(rec: dict) -> bool:
    ev = rec["eval"]
    n_len = len(rec["spec"]["eval"]["lengths"])
    ok = ev["lengths"] == rec["spec"]["eval"]["lengths"] and all(
        len(ev[k]) == n_len for k in ("correct", "accuracy", "ci_low", "ci_high"))
    ok = ok and all(0.0 <= a <= 1.0 for a in ev["accuracy"] + [rec["in_distribution"]["accuracy"]])
    return ok and all(lo <= a <= hi for a, lo, hi in zip(ev["accuracy"], ev["ci_low"], ev["ci_high"]))


def _select_consistent(rec: dict) -> bool:
    v = rec["validation"]
    ok = v["lengths"] == rec["spec"]["validation"]["lengths"] and len(v["accuracy"]) == len(v["lengths"])
    return ok and all(0.0 <= a <= 1.0 for a in v["accuracy"]) and 0.0 <= v["score"] <= 1.0


def _consistent(p: Path, rec: dict, check, what: str) -> dict:
    """``rec`` when ``check(rec)`` holds, else :class:`CorruptRun` naming ``what`` (a missing field counts as
    inconsistent)."""
    try:
        ok = check(rec)
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise CorruptRun(f"{p.name}: inconsistent {what}")
    return rec


def select_path(outdir, rid: str) -> Path:
    return runs_dir(outdir) / "select" / f"{rid}.json"


def load_select_run(path, spec: dict) -> dict:
    """Read and check one learning-rate selection record (:class:`CorruptRun` when it cannot be trusted)."""
    p = Path(path)
    rec = _read_record(p, "selection run record", SELECT_FORMAT)
    if rec.get("spec") != spec:
        raise CorruptRun(f"{p.name}: was produced by a different spec (settings or code changed)")
    return _consistent(p, rec, _select_consistent, "validation accuracies")


def write_selection(outdir, selection: dict) -> None:
    from varsim._common.provenance import provenance

    atomic_write_json(Path(outdir) / "selection.json",
                      {"format": SELECTION_FORMAT, **selection, "provenance": provenance()})


def read_selection(outdir) -> dict | None:
    """The lr selection of ``outdir`` (``{"chosen": {cell: lr}, "cells": {...}}``), or None when not made yet."""
    p = Path(outdir) / "selection.json"
    if not p.exists():
        return None
    d = read_json(p, what="selection file")
    if d.get("format") != SELECTION_FORMAT or not isinstance(d.get("chosen"), dict):
        raise ValueError(f"selection file {str(p)!r} is not a {SELECTION_FORMAT} file")
    return d


def read_settings(outdir) -> ReproductionSettings:
    """The settings of the reproduction in ``outdir``; ValueError naming the file when it is missing or bad."""
    p = Path(outdir) / "settings.json"
    try:
        d = read_json(p, what="settings file")
    except JSONFileError as exc:
        if exc.missing:
            raise ValueError(f"outdir {str(outdir)!r} holds no reproduction (no settings.json)") from None
        raise
    if d.get("format") != SETTINGS_FORMAT:
        raise ValueError(f"settings file {str(p)!r} is not a {SETTINGS_FORMAT} file")
    try:
        return ReproductionSettings.from_dict(d.get("settings"))
    except ValueError as exc:
        raise ValueError(f"settings file {str(p)!r}: {exc}") from None


def write_settings(outdir: Path, settings: ReproductionSettings) -> None:
    p = outdir / "settings.json"
    if p.exists():
        old = read_settings(outdir).to_dict()
        new = settings.to_dict()
        if old != new:
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise ValueError(
                f"outdir {str(outdir)!r} holds a reproduction with other settings (differing: {', '.join(diff)}); "
                "use another outdir, or the same settings to resume"
            )
        return
    from varsim._common.provenance import provenance

    atomic_write_json(p, {"format": SETTINGS_FORMAT, "settings": settings.to_dict(), "provenance": provenance()})


def load_results(outdir) -> dict:
    """``{"settings", "runs": {run_id: record}, "missing": [run_id], "corrupt": [{"run_id", "reason"}]}``."""
    out = Path(outdir)
    settings = read_settings(out)
    runs, missing, corrupt = {}, [], []
    selection = read_selection(out) if settings.lr_grid else None
    if settings.lr_grid and selection is None:
        raise ValueError(f"outdir {str(out)!r}: the learning rates are not selected yet (no selection.json); "
                         f"run `varsim reproduce {out}` to finish the selection runs")
    for spec in job_specs(settings, selection and selection["chosen"]):
        path = run_path(out, spec["run_id"])
        if not path.exists():
            missing.append(spec["run_id"])
            continue
        try:
            runs[spec["run_id"]] = load_run(path, spec)
        except CorruptRun as exc:
            corrupt.append({"run_id": spec["run_id"], "reason": str(exc)})
    return {"settings": settings, "runs": runs, "missing": missing, "corrupt": corrupt}


def runs_by_cell(settings: ReproductionSettings, runs: dict) -> dict:
    """``{cell: {seed: record}}`` for every cell (:class:`varsim.experiments.settings.Cell`) of
    :func:`varsim.experiments.settings.cells`, in grid order."""
    return {cell: {s: runs[rid] for s in range(settings.seeds) if (rid := cell.run_id(s)) in runs}
            for cell in cells(settings)}


def grid_run(checkpoint, config: dict | None) -> dict | None:
    """The ``varsim reproduce`` grid run a checkpoint file belongs to, or None.

    A grid keeps run ``RUN_ID``'s checkpoints in ``GRID/checkpoints/RUN_ID/`` and its record in
    ``GRID/runs/RUN_ID.json``; the checkpoint is that run's when the record is a valid run record whose spec trained
    with the checkpoint's own config ``config``. Returns the run id, the record's path relative to the grid, its
    digest, its spec (without the long train/eval/probe settings, which the record keeps), the commit the grid ran
    at, and the run's accuracies (in distribution and per evaluation length), so that a probe result names the grid
    run it can be recomputed from (``varsim reproduce GRID --recheck RUN_ID``, then the probe).
    """
    from varsim.pretrained.loading import file_digest

    run_dir = Path(checkpoint).resolve().parent
    if run_dir.parent.name != "checkpoints":
        return None
    record = run_path(run_dir.parent.parent, run_dir.name)
    if not record.is_file():
        return None
    try:
        rec = load_run(record)
    except CorruptRun:
        return None
    if config is None or rec["spec"].get("train_config") != config:
        return None
    spec = {k: v for k, v in rec["spec"].items() if k not in ("train_config", "eval", "in_distribution", "probe")}
    return {"run_id": rec["run_id"], "record": f"runs/{record.name}", "record_sha256": file_digest(record),
            "spec": spec, "git_commit": (rec.get("provenance") or {}).get("git_commit"),
            "in_distribution_accuracy": rec["in_distribution"]["accuracy"],
            "eval": {"lengths": rec["eval"]["lengths"], "accuracy": rec["eval"]["accuracy"]}}
