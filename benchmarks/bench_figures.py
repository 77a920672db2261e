"""CPU seconds of ``varsim figures``: per figure and in total, into a fresh output directory.

    python benchmarks/bench_figures.py [--cold] [--only NAME ...] [--quick]

Draws the figures with :func:`varsim.figures.make` in this process (the default set of ``varsim figures``) into a
new temporary directory and prints, per figure (a line on stderr as each ends, then a table), the CPU seconds it
took (this process's and its finished child processes', e.g. the sweep's workers) next to the wall seconds, then
the totals. CPU seconds survive other load on the machine; wall seconds do not. ``--cold`` points Numba's cache at
an empty temporary directory first, so every kernel compiles as on a clean clone (the first run after installing);
without it the kernels load from the cache.
To compare two versions, run the script against each checkout (``PYTHONPATH=/path/to/checkout``).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have finished."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cold", action="store_true", help="compile every kernel (Numba cache in a new empty directory)")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME", help="only these figures")
    p.add_argument("--quick", action="store_true", help="the figures' quick (smoke-test) mode")
    a = p.parse_args(argv)
    if a.cold:
        if "numba" in sys.modules:
            raise SystemExit("--cold must set NUMBA_CACHE_DIR before Numba is imported")
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_figures_numba_")
    import varsim
    from varsim.figures import make

    rows = []
    last = {"cpu": cpu_seconds(), "wall": time.perf_counter()}

    def on_figure(name, data_from, seconds, paths):
        cpu, wall = cpu_seconds(), time.perf_counter()
        rows.append((name, data_from, cpu - last["cpu"], wall - last["wall"]))
        last.update(cpu=cpu, wall=wall)
        print(f"{name}: {rows[-1][2]:.1f} CPU s, {rows[-1][3]:.1f} wall s", file=sys.stderr, flush=True)

    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_figures_") as outdir:
        make(a.only, outdir=outdir, quick=a.quick, progress=False, on_figure=on_figure)
    cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    print(f"varsim {getattr(varsim, '__version__', '?')} from {os.path.dirname(varsim.__file__)}; "
          f"{'cold' if a.cold else 'warm'} Numba cache, {'quick' if a.quick else 'full'} mode, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    width = max(len("figure"), *(len(r[0]) for r in rows))
    print(f"{'figure':<{width}}  {'CPU s':>8}  {'wall s':>8}  data")
    for name, data_from, c, w in rows:
        print(f"{name:<{width}}  {c:8.1f}  {w:8.1f}  {data_from}")
    print(f"{'total (' + str(len(rows)) + ' figures)':<{width}}  {cpu:8.1f}  {wall:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
