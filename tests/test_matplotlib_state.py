"""Nothing varsim does on an import or library path changes the caller's Matplotlib state: importing every figure
module and calling every drawing function of ``varsim.plotting`` (and a figure's ``draw``) in a session with another
backend and changed rcParams leaves both as they were. (``varsim/figures/_style.py`` once called
``matplotlib.use("Agg")`` on import: a Jupyter session lost its inline backend, and every later figure with it.)

Run in a fresh interpreter: the backend can be switched only before pyplot draws, and this process's tests have
drawn already. The ``svg`` backend stands in for Jupyter's ``inline`` one (any backend other than Agg shows a
switch), ``module://matplotlib_inline.backend_inline`` is tried too where it is installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from varsim import plotting
from varsim.figures import FIGURES

SCRIPT = textwrap.dedent(r"""
    import importlib, json, sys, warnings
    import matplotlib
    matplotlib.use(sys.argv[1])
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 13.0, "lines.linewidth": 3.3, "axes.grid": False, "savefig.dpi": 77,
                         "figure.figsize": [5.5, 2.5]})

    def state():
        return matplotlib.get_backend(), {k: repr(v) for k, v in matplotlib.rcParams.items() if k != "backend"}

    before = state()
    saved = {k: v for k, v in matplotlib.rcParams.items() if k != "backend"}
    changed = []

    def check(what):
        now = state()
        if now != before:
            keys = sorted(k for k in before[1] if before[1][k] != now[1].get(k))
            changed.append({"after": what, "backend": [before[0], now[0]], "rcParams": keys[:8]})
            matplotlib.use(before[0])  # back as they were, so the next call is judged on its own
            matplotlib.rcParams.update(saved)

    import varsim.figures
    check("import varsim.figures")
    for module in json.loads(sys.argv[2]):
        importlib.import_module(module)
        check("import " + module)
    import numpy as np
    from varsim import plotting, style
    from varsim.sim import simulate
    check("import varsim.plotting")
    res = simulate([16, 64], beta=1.0, d_k=8, n_sequences=64, seed=0)
    def enter_and_leave(manager):
        with manager:
            plt.plot([1, 2])

    fig_module = importlib.import_module("varsim.figures.fig_variance_vs_n")
    calls = {
        "plot_result": lambda: plotting.plot_result(res),
        "plot_result(style='column')": lambda: plotting.plot_result(res, style="column"),
        "plot_result(ax=)": lambda: plotting.plot_result(res, ax=plt.subplots()[1]),
        "phase_diagram": lambda: plotting.phase_diagram(ln_n=np.linspace(0, 6, 12), betas=np.linspace(0.2, 2, 9),
                                                        levels=2),
        "phase_diagram(style='slides')": lambda: plotting.phase_diagram(ln_n=np.linspace(0, 6, 12),
                                                                        betas=np.linspace(0.2, 2, 9), style="slides"),
        "phase_diagram(law=)": lambda: plotting.phase_diagram(ln_n=np.linspace(0, 6, 12), betas=np.linspace(0.2, 2, 5),
                                                              law="sphere", law_params={"d": 8}, levels=2),
        "phase_diagram(law=, style='column')": lambda: plotting.phase_diagram(
            ln_n=np.linspace(0, 6, 12), betas=np.linspace(0.2, 2, 5), law="uniform", law_params={"d": 3},
            style="column"),
        "plot_result(law=)": lambda: plotting.plot_result(res, law="rademacher", law_params={"d": 4}),
        "plot_theory": lambda: plotting.plot_theory(np.geomspace(2, 1e4, 9), [1.0, 2.0]),
        "plot_theory(law=, style='slides')": lambda: plotting.plot_theory(
            np.geomspace(2, 1e4, 9), [1.0, 2.0], law="sphere", law_params={"d": 8}, quantity="n_ipr", style="slides"),
        "plot_theory(law=, ax=)": lambda: plotting.plot_theory(np.geomspace(2, 1e4, 9), 1.0, ax=plt.subplots()[1],
                                                              law="rademacher", law_params={"d": 4},
                                                              quantity="exponent"),
        "style": lambda: enter_and_leave(plotting.style("column")),
        "varsim.style.style": lambda: enter_and_leave(style.style({"font.size": 4.0})),
        "save": lambda: plotting.save(plotting.plot_result(res), sys.argv[3] + "/a.png", record={"k": 1}),
        "read_provenance": lambda: plotting.read_provenance(sys.argv[3] + "/a.png"),
        "sweep_records": lambda: plotting.sweep_records({"cells": []}),
        "figure compute and draw": lambda: fig_module.draw(fig_module.compute(True, 0, n_min=16, n_max=64,
                                                                              sequences=64, full_sampler=False)),
    }
    for name, call in calls.items():
        call()
        check(name)
        plt.close("all")
    print("STATE " + json.dumps(changed))
""")

#: every public function of varsim.plotting the script calls (a new one must be added to its calls)
CALLED = {"plot_result", "plot_theory", "phase_diagram", "style", "save", "read_provenance", "sweep_records"}


def _run(backend: str, tmp_path):
    modules = sorted(set(FIGURES.values()))
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    res = subprocess.run([sys.executable, "-c", SCRIPT, backend, json.dumps(modules), str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("STATE "))
    return json.loads(line[len("STATE "):])


def test_every_public_plotting_function_is_called():
    """The script below calls every drawing and saving function of varsim.plotting (sweep_frame is sweep_records
    through pandas; STYLE_NAMES, QUANTITIES and PhaseDiagram are data)."""
    functions = {name for name in plotting.__all__ if callable(getattr(plotting, name))
                 and not isinstance(getattr(plotting, name), type)}
    assert functions - {"sweep_frame"} == CALLED


@pytest.mark.parametrize("backend", ["svg", "module://matplotlib_inline.backend_inline"])
def test_imports_and_library_calls_leave_backend_and_rcparams_alone(backend, tmp_path):
    """In a session whose backend is not Agg and whose rcParams were changed, importing every figure module and
    calling every varsim.plotting function (with and without a style, on new and on the caller's axes) and a figure's
    compute and draw leaves the backend and every rcParam as they were, with and without a logit law (``law=``).
    Seen failing with the import-time ``matplotlib.use("Agg")`` of varsim/figures/_style.py (backend svg -> agg
    after ``import varsim.figures``), with a style applied by ``plt.rcParams.update`` instead of a context manager,
    and with ``plot_theory`` setting ``rcParams["axes.grid"]``."""
    if backend.startswith("module://"):
        pytest.importorskip("matplotlib_inline")
    assert _run(backend, tmp_path) == []
