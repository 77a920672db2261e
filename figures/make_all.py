"""Regenerate every figure: ``python -m figures.make_all [--quick] [--outdir DIR] [--only NAME ...]``.

Also reachable as ``varsim figures`` (same options) and ``python figures/make_all.py``.
Each figure module in :data:`FIGURES` provides ``compute(quick, seed, *, progress=False) -> dict`` (runs
the simulator and the theory, returns plain data) and ``plot(data, outdir) -> list[Path]`` (PNG + PDF).
The data of each figure is stored next to it as ``<name>.json``, so ``--replot`` redraws without
recomputing. Outputs are build products: the repository's ``.gitignore`` keeps them out of git.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file: make the `figures` package importable
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    __package__ = "figures"

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

__all__ = ["FIGURES", "DEFAULT_OUTDIR", "load", "make", "main"]

# The registry: module names inside this package, in the order they are made. Add new figures here.
FIGURES: list[str] = [
    "fig_variance_vs_n",
    "fig_decay_exponent",
    "fig_random_query",
    "fig_repro_accuracy",
    "fig_repro_std",
    "fig_repro_hist",
    "fig_repro_global",
    "fig_repro_attention",
]

DEFAULT_OUTDIR = Path(__file__).resolve().parent / "out"


def load(name: str):
    """Import the figure module ``name`` (one of :data:`FIGURES`)."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; expected one of {', '.join(FIGURES)}")
    return importlib.import_module(f"{__package__ or 'figures'}.{name}")


def _log(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


def make(
    names=None,
    *,
    outdir=DEFAULT_OUTDIR,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    replot: bool = False,
) -> dict[str, list[Path]]:
    """Compute and plot the figures ``names`` (default: all) into ``outdir``; return the written files.

    ``progress`` (default: stderr is a terminal) prints one status line per figure and lets the
    simulator show its own progress. ``replot`` reuses ``<outdir>/<name>.json`` from an earlier run.
    """
    from varsim._common.atomic import atomic_write_json, check_writable
    from varsim._common.validate import check_int

    from ._style import jsonable

    names = list(FIGURES) if names is None else list(names)
    if not names:
        raise ValueError("names must not be empty")
    modules = [load(name) for name in names]  # validates every name before any work
    seed = check_int("seed", seed, minimum=0)
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise ValueError(f"outdir {str(outdir)!r} is not a directory")
    missing = [str(outdir / f"{name}.json") for name in names if replot and not (outdir / f"{name}.json").is_file()]
    if missing:
        raise ValueError(f"replot: no stored data {', '.join(missing)}; run without --replot first")
    outdir.mkdir(parents=True, exist_ok=True)
    check_writable(outdir / f"{names[0]}.png", "outdir")  # fail now, not after minutes of simulation
    show = sys.stderr.isatty() if progress is None else bool(progress)

    written: dict[str, list[Path]] = {}
    start = time.perf_counter()
    for i, (name, module) in enumerate(zip(names, modules), 1):
        t0 = time.perf_counter()
        data_path = outdir / f"{name}.json"
        if replot:
            try:
                data = json.loads(data_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"replot: {str(data_path)!r} is not JSON ({exc.msg}, line {exc.lineno})") from None
        else:
            _log(show, f"[{i}/{len(names)}] {name}: computing ({'quick' if quick else 'full'} mode)")
            data = jsonable(module.compute(quick, seed, progress=show))
            atomic_write_json(data_path, data)
        paths = module.plot(data, outdir)
        written[name] = [data_path, *paths]
        _log(show, f"[{i}/{len(names)}] {name}: done in {time.perf_counter() - t0:.1f} s")
    _log(show and len(names) > 1, f"all {len(names)} figures in {time.perf_counter() - start:.1f} s -> {outdir}")
    return written


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Options shared by ``make_all.py``, each ``fig_*.py`` and ``varsim figures``."""
    parser = parser or argparse.ArgumentParser(description="Regenerate the varsim figures.")
    parser.add_argument("--quick", action="store_true", help="small runs (seconds per figure), as the tests use")
    parser.add_argument("--outdir", default=None, help=f"output directory (default {DEFAULT_OUTDIR})")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME",
                        help=f"only these figures: {', '.join(FIGURES)}")
    parser.add_argument("--seed", type=int, default=0, help="root seed of every simulation (default 0)")
    parser.add_argument("--replot", action="store_true", help="redraw from the stored <name>.json data")
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
    )
    for paths in written.values():
        for path in paths:
            print(path)
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run_args(args)
    except ValueError as exc:
        print(f"make_all: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
