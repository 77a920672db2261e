"""Where the reproduction figures get their data: a results directory, run or resumed on demand.

Used by the figure scripts only (the experiment itself never needs it).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from varsim._common.jsonio import JSONFileError, read_json
from varsim._common.validate import check_int
from varsim.experiments.aggregation import aggregate
from varsim.experiments.records import load_results, runs_by_cell
from varsim.experiments.runner import run_reproduction

__all__ = ["RESULTS_ENV", "figure_results"]

#: Environment variable naming the reproduction directory the figures read (overrides every default).
RESULTS_ENV = "VARSIM_REPRODUCE_DIR"
_QUICK_DIRS: dict[int, Path] = {}


def figure_results(quick: bool, seed: int = 0, *, default_dir=None, progress: bool = False) -> dict:
    """The reproduction the figures are drawn from, as :func:`load_results` returns it, plus its ``summary`` and
    ``cells`` (``{(task, architecture, norm): [run records in seed order]}``).

    Looked up in this order: the directory in ``$VARSIM_REPRODUCE_DIR``; in quick mode, a quick reproduction with
    root seed ``seed`` run once per process into a temporary directory (every figure of one ``make_all`` call
    shares it; it is removed when the process exits); otherwise ``default_dir`` (the full run, e.g.
    ``results/reproduce`` of the checkout), where the full reproduction is run or resumed first (tens of minutes
    on 2 cores the first time; nothing when it is complete).
    """
    env = os.environ.get(RESULTS_ENV)
    if env:
        outdir = Path(env)
    elif quick:
        seed = check_int("seed", seed, minimum=0)
        outdir = _QUICK_DIRS.get(seed)
        if outdir is None or not (outdir / "summary.json").is_file():
            outdir = Path(tempfile.mkdtemp(prefix=f"varsim-repro-quick-{seed}-"))
            atexit.register(shutil.rmtree, outdir, ignore_errors=True)  # a cache for this process only
            report = run_reproduction(outdir, quick=True, root_seed=seed, progress=progress)
            if report["failed"]:  # figures of a partial grid would silently miss lines
                first = report["failed"][0]
                raise ValueError(f"the quick reproduction in {str(outdir)!r} had {len(report['failed'])} failed "
                                 f"run(s), e.g. {first['run_id']}: {first['error']}")
            _QUICK_DIRS[seed] = outdir
    else:
        if default_dir is None:
            raise ValueError(f"no reproduction directory given: set ${RESULTS_ENV} or pass default_dir")
        outdir = Path(default_dir)
        # The figures are the package's main job: a missing or unfinished full reproduction is run (or resumed;
        # finished runs are never redone) rather than refused, so one command regenerates every figure.
        outdir.mkdir(parents=True, exist_ok=True)
        report = run_reproduction(outdir, root_seed=seed, progress=progress)
        if report["failed"]:
            first = report["failed"][0]
            raise ValueError(f"the reproduction in {str(outdir)!r} had {len(report['failed'])} failed run(s), "
                             f"e.g. {first['run_id']}: {first['error']}; run `varsim reproduce {outdir}` to retry")
    res = load_results(outdir)
    try:
        summary = read_json(outdir / "summary.json", what="summary")
        stale = (summary.get("runs") or {}).get("found") != len(res["runs"])
    except JSONFileError:
        stale = True
    if stale:  # runs finished (or were added) after the last aggregation
        summary = aggregate(outdir)
    res["summary"] = summary
    res["outdir"] = str(outdir)
    # the records of each (task, architecture, norm) in seed order, so figures need not scan every run per cell
    res["cells"] = {cell: list(by_seed.values()) for cell, by_seed in runs_by_cell(res["settings"], res["runs"]).items()}
    return res
