"""CPU seconds of ``varsim figures``: per figure and in total, into a fresh output directory.

    python benchmarks/bench_figures.py [--cold] [--only NAME ...] [--quick] [--jobs J]

Draws the figures with :func:`varsim.figures.make` in this process (the default set of ``varsim figures``) into a
new temporary directory and prints, per figure (a line on stderr as each ends, then a table), the CPU seconds it
took (this process's and its finished child processes', e.g. the sweep's workers) next to the wall seconds, then
the totals. CPU seconds survive other load on the machine; wall seconds do not. ``--cold`` points Numba's cache at
an empty temporary directory first, so every kernel compiles as on a clean clone (the first run after installing);
without it the kernels load from the cache. The ``compile`` column is the CPU seconds Numba spent compiling kernels
(its ``numba:compile`` events, outermost only, in the compiling thread's CPU time) in this process and in the worker
processes the figures start (a ``sitecustomize`` in a temporary directory put first on their ``PYTHONPATH`` records
them there), so a cold run shows how much of each figure is compilation.
To compare two versions, run the script against each checkout (``PYTHONPATH=/path/to/checkout``).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

#: registers a Numba listener (when Numba loads) that appends ``pid compile-CPU-seconds`` to $BENCH_FIGURES_COMPILE_LOG
#: for each outermost compilation of a thread; run in this process and, as ``sitecustomize``, in every Python child
COMPILE_LISTENER = """
import os as _os
import sys as _sys

def _register(event):
    import threading
    import time

    class CompileCPU(event.Listener):
        def __init__(self):
            self._local = threading.local()

        def on_start(self, ev):
            depth = getattr(self._local, "depth", 0)
            if depth == 0:
                self._local.t0 = time.thread_time()
            self._local.depth = depth + 1

        def on_end(self, ev):
            self._local.depth -= 1
            if self._local.depth == 0:
                line = f"{_os.getpid()} {time.thread_time() - self._local.t0:.6f}\\n"
                fd = _os.open(_os.environ["BENCH_FIGURES_COMPILE_LOG"], _os.O_WRONLY | _os.O_APPEND | _os.O_CREAT)
                try:
                    _os.write(fd, line.encode())
                finally:
                    _os.close(fd)

    event.register("numba:compile", CompileCPU())

class _WhenNumbaLoads:
    # registers the listener as numba.core.event is imported, so that this hook imports nothing itself (a worker's
    # initializer sets NUMBA_NUM_THREADS before Numba loads)
    def find_spec(self, name, path=None, target=None):
        if name != "numba.core.event":
            return None
        _sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _register(module)

        spec.loader.exec_module = exec_module
        return spec

if _os.environ.get("BENCH_FIGURES_COMPILE_LOG"):
    if "numba.core.event" in _sys.modules:
        _register(_sys.modules["numba.core.event"])
    else:
        _sys.meta_path.insert(0, _WhenNumbaLoads())
"""


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have finished."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def compile_seconds(log: Path) -> float:
    """CPU seconds of the compilations recorded in ``log`` so far (this process and its children)."""
    if not log.is_file():
        return 0.0
    return sum(float(line.split()[1]) for line in log.read_text().splitlines() if line.strip())


def record_compilations(workdir: Path) -> Path:
    """Record every Numba compilation of this process and of its Python children into a log under ``workdir``."""
    log = workdir / "compile.log"
    hook = workdir / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(COMPILE_LISTENER)
    os.environ["BENCH_FIGURES_COMPILE_LOG"] = str(log)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])
    exec(compile(COMPILE_LISTENER, "compile_listener", "exec"), {})
    return log


#: issue 32's goal for a clean clone's ``varsim figures`` (cold Numba cache, full mode, every figure)
GOAL_WALL_S = 60.0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cold", action="store_true", help="compile every kernel (Numba cache in a new empty directory)")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME", help="only these figures")
    p.add_argument("--quick", action="store_true", help="the figures' quick (smoke-test) mode")
    p.add_argument("--jobs", type=int, default=0, help="make(jobs=J): figures in J worker processes (default 0: one "
                   "per core, as `varsim figures` runs them; 1: one after the other); the per-figure CPU and compile "
                   "seconds of workers count when the pool ends, the totals are exact")
    a = p.parse_args(argv)
    if a.cold:
        if "numba" in sys.modules:
            raise SystemExit("--cold must set NUMBA_CACHE_DIR before Numba is imported")
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_figures_numba_")
    work = Path(tempfile.mkdtemp(prefix="bench_figures_"))
    log = record_compilations(work)
    import varsim
    from varsim.figures import make

    rows = []
    last = {"cpu": cpu_seconds(), "wall": time.perf_counter(), "compile": 0.0}

    def on_figure(name, data_from, seconds, paths):
        cpu, wall, comp = cpu_seconds(), time.perf_counter(), compile_seconds(log)
        rows.append((name, data_from, cpu - last["cpu"], wall - last["wall"], comp - last["compile"]))
        last.update(cpu=cpu, wall=wall, compile=comp)
        print(f"{name}: {rows[-1][2]:.1f} CPU s ({rows[-1][4]:.1f} compiling), {rows[-1][3]:.1f} wall s",
              file=sys.stderr, flush=True)

    load_before = os.getloadavg()[0]
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    make(a.only, outdir=work / "out", quick=a.quick, progress=False, on_figure=on_figure, jobs=a.jobs)
    cpu, wall, comp = cpu_seconds() - cpu0, time.perf_counter() - wall0, compile_seconds(log)
    print(f"varsim {getattr(varsim, '__version__', '?')} from {os.path.dirname(varsim.__file__)}; "
          f"{'cold' if a.cold else 'warm'} Numba cache, {'quick' if a.quick else 'full'} mode, jobs {a.jobs}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    width = max(len("figure"), *(len(r[0]) for r in rows))
    print(f"{'figure':<{width}}  {'CPU s':>8}  {'compile':>8}  {'wall s':>8}  data")
    for name, data_from, c, w, k in rows:
        print(f"{name:<{width}}  {c:8.1f}  {k:8.1f}  {w:8.1f}  {data_from}")
    print(f"{'total (' + str(len(rows)) + ' figures)':<{width}}  {cpu:8.1f}  {comp:8.1f}  {wall:8.1f}")
    if a.cold and not a.quick and a.only is None:
        verdict = "met" if wall <= GOAL_WALL_S else "not met"
        print(f"goal (issue 32): a clean clone's figures in <= {GOAL_WALL_S:g} s wall on 2 quiet cores: {wall:.1f} s, "
              f"{verdict} on {os.cpu_count()} CPUs at load average {load_before:.1f} before the run")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
