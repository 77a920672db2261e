"""The varsim figures: one module per figure, a registry, and :func:`make` behind ``varsim figures``.

Each figure module in :data:`FIGURES` provides

- ``compute(quick=False, seed=0, *, progress=False, source=None) -> dict``: runs the simulator and the theory (or
  reads the reproduction ``source``, a :class:`varsim.figures.reproduction.ReproductionSource`) and returns plain
  data, including a ``footer`` saying where the numbers come from;
- ``draw(data) -> matplotlib Figure`` and ``plot(data, outdir) -> list[Path]`` (PNG + PDF).

The reproduction figures (``fig_repro_*``) are drawn from the compact records of the last full reproduction that
ship with the package (``varsim/figures/data/reproduction``, see :mod:`varsim.figures.reproduction`), so a fresh
install draws every figure in minutes; ``--results DIR`` reads a ``varsim reproduce`` directory instead and
``--rerun`` runs (or resumes) the full reproduction into it first. Quick mode runs a tiny reproduction whose models
do not learn: every quick figure is stamped "smoke test, not results".

The real-model figures (``fig_probe_*``) are drawn from the ``varsim probe-model`` results of the two shipped models
that ship with the package (``varsim/figures/data/probe``, see :mod:`varsim.figures.probe`); ``--probe-results FILE
...`` draws a user's own probe files instead. They need no computation, so quick mode draws the same real data
(no smoke-test stamp).
The remedies figures (``fig_remedies_*``, :mod:`varsim.figures.remedies`) are drawn from the summary of the last full
remedies run that ships with the package (``varsim/figures/data/remedies``), or from a ``varsim reproduce DIR
--preset remedies`` directory given as ``--remedies-results DIR``. A build without that summary skips them with one
line on stderr and draws the others (naming one of them explicitly with ``--only`` is an error instead).

Each figure's data is stored next to it as ``<name>.json``, so ``--replot`` redraws without recomputing. Importing
this package loads neither Matplotlib nor NumPy.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

__all__ = ["FIGURES", "DEFAULT_OUTDIR", "load", "make", "build_parser", "run_args", "main"]

#: The registry: figure name -> module (inside this package), in the order they are made. Add new figures here.
FIGURES: dict[str, str] = {
    "fig_variance_vs_n": "varsim.figures.fig_variance_vs_n",
    "fig_decay_exponent": "varsim.figures.fig_decay_exponent",
    "fig_random_query": "varsim.figures.fig_random_query",
    "fig_repro_accuracy": "varsim.figures.fig_repro_accuracy",
    "fig_repro_std": "varsim.figures.fig_repro_std",
    "fig_repro_hist": "varsim.figures.fig_repro_hist",
    "fig_repro_global": "varsim.figures.fig_repro_global",
    "fig_repro_attention": "varsim.figures.fig_repro_attention",
    "fig_probe_std": "varsim.figures.fig_probe_std",
    "fig_probe_slopes": "varsim.figures.fig_probe_slopes",
    "fig_probe_decomposition": "varsim.figures.fig_probe_decomposition",
    "fig_variants_ipr": "varsim.figures.fig_variants_ipr",
    "fig_remedies_accuracy": "varsim.figures.fig_remedies_accuracy",
    "fig_remedies_paired": "varsim.figures.fig_remedies_paired",
    "fig_remedies_weight": "varsim.figures.fig_remedies_weight",
}
#: Figures drawn from the remedies summary (committed, or ``--remedies-results``); skipped (one line) without one.
REMEDIES_PREFIX = "fig_remedies_"

#: Where the figures go by default: ``figures/out`` under the current directory (the checkout's root, usually).
DEFAULT_OUTDIR = Path("figures") / "out"


def load(name: str):
    """Import the figure module ``name`` (a key of :data:`FIGURES`); unknown names raise ValueError."""
    module = FIGURES.get(name) if isinstance(name, str) else None
    if module is None:
        raise ValueError(f"unknown figure {name!r}; expected one of {', '.join(FIGURES)}")
    return importlib.import_module(module)


def _log(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


def _read_stored(path: Path) -> dict:
    """The stored data of one figure (``--replot``), or a ValueError naming the file and what is wrong with it."""
    from varsim._common.jsonio import read_json

    if not path.is_file():
        raise ValueError(f"replot: no stored data {str(path)!r}; run without --replot first")
    data = read_json(path, what="replot: stored figure data")
    if data.get("name") != path.stem:
        raise ValueError(f"replot: {str(path)!r} does not hold the data of figure {path.stem!r}")
    return data


def make(
    names=None,
    *,
    outdir=DEFAULT_OUTDIR,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    replot: bool = False,
    results=None,
    rerun: bool = False,
    probe_results=None,
    remedies_results=None,
) -> dict[str, list[Path]]:
    """Compute and plot the figures ``names`` (default: all) into ``outdir``; return the written files.

    ``progress`` (default: stderr is a terminal) prints one status line per figure and lets the simulator show
    its own progress. ``replot`` reuses ``<outdir>/<name>.json`` from an earlier run. The reproduction figures
    read the committed records (default), the ``varsim reproduce`` directory ``results``, or, with ``rerun``, a
    full reproduction run (or resumed) into ``results`` (default ``results/reproduce``) first; ``quick`` runs a
    tiny one instead (smoke test). The real-model figures (``fig_probe_*``) read the committed probe results, or
    the ``varsim probe-model`` JSON files ``probe_results``. The remedies figures read the committed remedies
    summary or the remedies results directory ``remedies_results``; when there is neither they are skipped with one
    line on stderr when ``names`` is None (all figures), and refused (ValueError) when named.
    """
    from varsim._common.atomic import atomic_write_json, check_writable
    from varsim._common.validate import check_int

    from .probe import ProbeSource
    from .remedies import RemediesSource
    from .reproduction import ReproductionSource

    explicit = names is not None
    names = list(FIGURES) if names is None else list(names)
    if not names:
        raise ValueError("names must not be empty")
    modules = [load(name) for name in names]  # validates every name before any work
    seed = check_int("seed", seed, minimum=0)
    source = ReproductionSource(quick=quick, seed=seed, results=results, rerun=rerun, progress=progress)
    repro = [name for name in names if name.startswith("fig_repro_")]
    if repro and not replot:
        if explicit or source.available:
            source.check()  # ValueError naming results: no committed records and no --results / --rerun
        else:  # drawing everything from a build without committed records: draw the rest, say what was left out
            print(f"varsim figures: skipping {', '.join(repro)}: this build has no committed reproduction records "
                  "(draw them with --results DIR, a `varsim reproduce DIR` directory, or --rerun)", file=sys.stderr)
            modules = [m for name, m in zip(names, modules) if name not in repro]
            names = [name for name in names if name not in repro]
    probe_source = ProbeSource(probe_results)
    if not replot and any(name.startswith("fig_probe_") for name in names):
        probe_source.check()  # a corrupt or partial probe file fails here, before any drawing
    remedies = RemediesSource(remedies_results, quick=quick)
    wanted = [name for name in names if name.startswith(REMEDIES_PREFIX)]
    if replot and not explicit:  # redraw the remedies figures whose data an earlier run stored, skip the others
        wanted = [name for name in wanted if not (Path(outdir) / f"{name}.json").is_file()]
    if wanted:
        if explicit or (remedies.available and not replot):
            if not replot:
                remedies.check()  # ValueError naming remedies_results: missing source, summary or format
        else:
            print(f"varsim figures: skipping {', '.join(wanted)}: no remedies {'stored data' if replot else 'results'} "
                  "(draw them with "
                  "--remedies-results DIR, a `varsim reproduce DIR --preset remedies` directory)", file=sys.stderr)
            modules = [m for name, m in zip(names, modules) if name not in wanted]
            names = [name for name in names if name not in wanted]
    # figure-name prefix -> its data source; the others get `source`
    sources = {"fig_probe_": probe_source, REMEDIES_PREFIX: remedies}
    if isinstance(outdir, str) and not outdir.strip():
        raise ValueError("outdir must not be empty")
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise ValueError(f"outdir {str(outdir)!r} is not a directory")
    stored = {name: _read_stored(outdir / f"{name}.json") for name in names} if replot else {}
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"outdir {str(outdir)!r} cannot be created ({exc.strerror})") from None
    if not names:
        return {}
    check_writable(outdir / f"{names[0]}.png", "outdir")  # fail now, not after minutes of simulation
    show = sys.stderr.isatty() if progress is None else bool(progress)

    from ._style import jsonable

    written: dict[str, list[Path]] = {}
    start = time.perf_counter()
    for i, (name, module) in enumerate(zip(names, modules), 1):
        t0 = time.perf_counter()
        data_path = outdir / f"{name}.json"
        if replot:
            data = stored[name]
        else:
            _log(show, f"[{i}/{len(names)}] {name}: computing ({'quick' if quick else 'full'} mode)")
            src = next((s for prefix, s in sources.items() if name.startswith(prefix)), source)
            data = jsonable(module.compute(quick, seed, progress=show, source=src))
            atomic_write_json(data_path, data)
        paths = module.plot(data, outdir)
        written[name] = [data_path, *paths]
        _log(show, f"[{i}/{len(names)}] {name}: done in {time.perf_counter() - t0:.1f} s")
    _log(show and len(names) > 1, f"all {len(names)} figures in {time.perf_counter() - start:.1f} s -> {outdir}")
    return written


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The options of ``varsim figures`` (also ``python figures/make_all.py``, ``python -m varsim.figures``)."""
    from varsim.cli._options import seed_option

    parser = parser or argparse.ArgumentParser(prog="varsim figures", description="Regenerate the varsim figures.")
    parser.add_argument("--quick", action="store_true",
                        help="small runs (seconds per figure; a tiny reproduction whose models do not learn): a smoke "
                             "test, every figure is stamped as such")
    parser.add_argument("--outdir", default=None, help=f"output directory (default {DEFAULT_OUTDIR} in the current "
                                                       "directory)")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help=f"only these figures: "
                                                                                f"{', '.join(FIGURES)}")
    parser.add_argument("--seed", type=seed_option(), default=0, help="root seed of every simulation (default 0)")
    parser.add_argument("--replot", action="store_true", help="redraw from the stored <name>.json data")
    parser.add_argument("--results", default=None, metavar="DIR",
                        help="draw the reproduction figures from this `varsim reproduce` directory instead of the "
                             "committed records of the last full run")
    parser.add_argument("--rerun", action="store_true",
                        help="run (or resume) the full reproduction first (into --results, default "
                             "results/reproduce; about 30 min on 2 cores) and draw from it")
    parser.add_argument("--probe-results", nargs="+", default=None, metavar="FILE",
                        help="draw the real-model figures (fig_probe_*) from these `varsim probe-model` JSON files "
                             "instead of the committed results of SmolLM2 and MiniLM")
    parser.add_argument("--remedies-results", default=None, metavar="DIR",
                        help="draw the remedies figures (fig_remedies_*) from this `varsim reproduce DIR --preset "
                             "remedies` directory instead of the committed summary of the last full remedies run")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="status on stderr (default: when stderr is a terminal)")
    return parser


def run_args(args: argparse.Namespace) -> int:
    written = make(
        args.only,
        outdir=DEFAULT_OUTDIR if args.outdir is None else args.outdir,
        quick=args.quick,
        seed=args.seed,
        progress=args.progress,
        replot=args.replot,
        results=args.results,
        rerun=args.rerun,
        probe_results=getattr(args, "probe_results", None),
        remedies_results=args.remedies_results,
    )
    for paths in written.values():
        for path in paths:
            print(path)
    return 0


def main(argv=None) -> int:
    """Command-line entry point of the figure scripts (``varsim figures`` goes through ``varsim.cli``)."""
    args = build_parser().parse_args(argv)
    try:
        return run_args(args)
    except ValueError as exc:
        print(f"varsim figures: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
