"""CPU seconds of each teaching notebook run as a student runs it: "Run All", no solutions, in a fresh Jupyter kernel.

    python benchmarks/bench_notebooks.py [NAME ...]

Executes each notebook of ``varsim/notebooks`` (or the NAMEs given, e.g. ``01_variance_vanishes.py``) with nbclient,
as the docs build does (``VARSIM_STATIC_PAGE=1``: no sliders), twice: first with Numba's cache pointed at a new empty
directory (*cold*, as on a new installation), then with the same cache again (*warm*). The kernel reports its own
CPU seconds (user + system, with its finished children) in a cell appended to the notebook; they survive other load
on the machine, the wall seconds printed next to them do not. Needs the ``[docs]`` extra (jupytext, nbclient,
ipykernel) and the ``python`` of this environment first on ``PATH`` (the kernel's command). Prints one line per run
and a Markdown table (the lecturer's guide's).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

#: appended to each notebook: the kernel's CPU seconds so far
CPU_CELL = ("import resource\n"
            "_own, _kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print('VARSIM_CPU_SECONDS', _own.ru_utime + _own.ru_stime + _kids.ru_utime + _kids.ru_stime)")


def run(path: Path) -> tuple[float, float]:
    """(kernel CPU seconds, wall seconds) of one execution of the notebook ``path``."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    notebook = jupytext.read(path)
    notebook.cells.append(nbformat.v4.new_code_cell(CPU_CELL))
    with tempfile.TemporaryDirectory() as workdir:
        start = time.perf_counter()
        NotebookClient(notebook, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": workdir}}).execute()
        wall = time.perf_counter() - start
    text = "".join(out.get("text", "") for out in notebook.cells[-1].outputs)
    return float(text.split("VARSIM_CPU_SECONDS")[1]), wall


def main() -> None:
    from varsim.notebooks import notebooks_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook file names (default: all)")
    args = parser.parse_args()
    paths = [notebooks_dir() / n for n in args.names] or sorted(notebooks_dir().glob("[0-9]*.py"))
    os.environ.update(VARSIM_STATIC_PAGE="1", MPLBACKEND="Agg", NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="numba-"))
    rows = []
    for path in paths:
        times = []
        for label in ("cold", "warm"):
            cpu, wall = run(path)
            times.append(cpu)
            print(f"{path.name}: {label} {cpu:.1f} CPU s ({wall:.1f} s wall)", flush=True)
        rows.append((path.name, *times))
    print("\n| notebook | cold | warm |\n|---|---|---|")
    for name, cold, warm in rows:
        print(f"| {name} | {cold:.0f} s | {warm:.0f} s |")


if __name__ == "__main__":
    main()
