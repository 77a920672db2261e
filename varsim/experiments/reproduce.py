"""Choose the grid (the paper reproduction, or a preset such as the remedies grid), run or resume it, summarize it."""

from __future__ import annotations

from typing import Any, Callable

from varsim.experiments.aggregation import aggregate
from varsim.experiments.presets import preset_settings
from varsim.experiments.runner import run_grid
from varsim.experiments.settings import ReproductionSettings

__all__ = ["run_reproduction"]


def run_reproduction(
    outdir,
    *,
    quick: bool = False,
    seeds: int | None = None,
    root_seed: int = 0,
    settings: ReproductionSettings | None = None,
    tasks=None,
    architectures=None,
    norms=None,
    preset: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    checkpoints: bool | None = None,
    progress: bool | None = None,
    on_run: Callable[[dict], None] | None = None,
) -> dict:
    """Run (or resume) the reproduction into ``outdir``, then aggregate it; return a report.

    ``settings`` defaults to :meth:`ReproductionSettings.quick` (``quick=True``) or :meth:`~.full`, with
    ``seeds`` (default 2 quick, 6 full), ``root_seed``, and ``tasks`` / ``architectures`` / ``norms`` restricting
    the grid; ``preset`` (a name of :data:`varsim.experiments.presets.PRESETS`: ``"remedies"``,
    :mod:`varsim.experiments.remedies`; ``"decoder"``, :mod:`varsim.experiments.decoder_grid`) picks another grid,
    and an option that contradicts it is a ValueError naming both (:func:`~varsim.experiments.presets.preset_settings`).
    ``scheduler`` (a Dask address) or ``workers`` (local processes, default one per core) choose where the runs execute.
    ``checkpoints`` (default: on for local runs, off on Dask, whose workers may not share this
    filesystem) keeps training checkpoints in ``outdir/checkpoints`` so an interrupted run resumes mid-training.
    ``progress`` (default True) prints one line per finished run on stderr, with its seconds and the time elapsed;
    the same lines always go to ``outdir/progress.log``, time-stamped. ``on_run(record)`` is called in this process
    for each.

    Returns ``{"outdir", "runs", "skipped", "completed", "corrupt", "failed", "other_commit", "learned",
    "summary", "table", "elapsed_s"}``: ``skipped`` lists the runs already finished, ``corrupt`` the records that
    were moved aside and redone, ``failed`` the runs that raised (``{"run_id", "error"}``; re-running resumes
    them), ``other_commit`` the finished runs made at another git commit (kept: a record is trusted when its spec
    matches, so after changing the code, start a fresh ``outdir``), ``learned`` the per-variant learned counts.

    One process at a time per ``outdir``: while one runs, another is refused with
    :class:`varsim._common.runlock.RunLocked` (a ValueError naming the holder). Local worker processes exit when
    this process dies, even by SIGKILL (``varsim._common.lifeline``).

    Scripts must call this under ``if __name__ == "__main__":`` (the local workers are spawned processes).
    """
    if settings is None:
        changes: dict[str, Any] = {}
        for name, value in (("tasks", tasks), ("architectures", architectures), ("norms", norms)):
            if value is not None:
                changes[name] = tuple(value)
        kw = {"root_seed": root_seed, **({} if seeds is None else {"seeds": seeds})}
        if preset is not None:  # an option that contradicts the preset is refused here, before any work
            settings = preset_settings(preset, quick=quick, **kw, **changes)
        else:
            factory = ReproductionSettings.quick if quick else ReproductionSettings.full
            settings = factory(**kw, **changes)
    elif not isinstance(settings, ReproductionSettings):
        raise ValueError(f"settings must be a ReproductionSettings, got {type(settings).__name__}")
    elif any(v is not None for v in (seeds, tasks, architectures, norms, preset)) or quick:
        raise ValueError("settings: pass either a ReproductionSettings or quick/seeds/tasks/..., not both")
    return run_grid(outdir, settings, summarize=aggregate, scheduler=scheduler, workers=workers,
                    checkpoints=checkpoints, progress=progress, on_run=on_run)
