"""Figure: E[sum w^2] against N for every attention variant of :mod:`varsim.variants`, one panel per common beta.

Monte Carlo points with standard-error bars come from one :func:`varsim.sim.sweep.run_sweep` call (logits
sampler with the Rao-Blackwell estimator, every cell seeded by its own key) over all variants, both betas and all N.
Lines and bands are what the theory kind of each variant's registry entry gives
(:func:`varsim.theory.remedies.variant_theory`): exact for softmax, ssmax, logn and critical (softmax at the effective
scale ``f(N) beta``) and sigmoid (its exact moments); top-k's bound ``1/k <= sum w^2 <= 1`` as a band; adaptive
temperature, entmax-1.5 and sparsemax are Monte Carlo only. The legend names each variant's kind.
``critical`` uses ``beta0 = beta`` in each panel (the REM scaling ``c sqrt(2 ln N)`` of the logits' own spread).
The registry gives each map's label, colour and marker (:func:`varsim.figures.series.variant_style`, the same in
every panel) and row (its family, :data:`varsim.variants.FAMILIES`); every map but the controls' is drawn, at its
default parameters.

Softmax's weights flatten (E[sum w^2] -> e^{beta^2}/N); a variant whose curve stays level keeps the output variance
``sigma_v^2 E[sum w^2]`` from vanishing. Full mode: 16 <= N <= 65536, each cell to a 2% relative standard error, 1000
sequences or 2^24 logits (N x sequences), whichever comes first; quick mode (tests): N <= 1024, at most 128 sequences,
stamped as a smoke test. Each point's error bar is the standard error it reached.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from varsim.figures import figure_main

from . import _style
from .params import Param, resolve

NAME = "fig_variants_ipr"
BETAS = (1.0, 2.0)

#: each cell stops at this relative standard error of E[sum w^2] (``SweepGrid(target_rse=...)``): 2% is under a
#: hundredth of a decade, less than a marker on these log-log panels; the sequences below are the caps
TARGET_RSE = 0.02
#: and at this many logits (N x sequences): without it the N = 4^8 cells, which mostly reach the sequence cap before
#: the target (heavy-tailed sum w^2), take three quarters of the figure's Monte Carlo; with it they stop at 256
#: sequences, a relative SE of at most about 9% (measured: 8.7%; under a twenty-fifth of a decade)
CELL_LOGITS = 2**24
# points of each exact line; quick mode is for the tests (seconds)
_DENSE_POINTS = {False: 20, True: 10}
# a line equal to one drawn before it in its panel (ssmax with s = 1/ln 16 and clamped logn, N0 = 16, for N >= 16)
# is dashed on top, so both stay visible
_ON_TOP = (0, (4, 2.5))


def variant_specs() -> tuple:
    """(variant, label, parameters; ``None`` means "= the panel's beta") of every registered map but the controls',
    in registry order: each at its defaults, its ``logit_scale`` parameters (critical's ``beta0``) at the beta."""
    from varsim.variants import CONTROLS, VARIANTS

    controls = {c.weight_map for c in CONTROLS.values()}
    return tuple((v.name, v.label, {p.name: None for p in v.params if p.logit_scale})
                 for v in VARIANTS.values() if v.name not in controls)


def _grid_variants(betas=BETAS) -> dict:
    """The sweep's variants: every spec, a ``None`` parameter at each panel's beta."""
    return {name: {p: (list(betas) if v is None else v) for p, v in params.items()}
            for name, _label, params in variant_specs()}


def _panel_params(params: dict, beta: float) -> dict:
    return {p: (beta if v is None else v) for p, v in params.items()}


#: the legend's words for each theory kind of the registry (varsim.variants.THEORY_KINDS)
_KIND_LABELS = {"exact_ipr": "MC + exact", "sigmoid_moments": "MC + exact", "bound": "MC + bound", "none": "MC only"}


#: the parameters of :func:`compute` (``varsim figures --only fig_variants_ipr --param name=value``)
PARAMS = (
    Param("betas", "reals", BETAS, "logit scales beta, one column of panels each", minimum=0.0, maximum=25.0,
          max_len=6),
    Param("n_min", "int", 16, "smallest sequence length N (the grid is the powers of four in [n_min, n_max])",
          minimum=2, maximum=2**30),
    Param("n_max", "int", 4**8, "largest sequence length N", quick=4**5, minimum=4, maximum=2**30),
    Param("sequences", "int", 1000, "most Monte Carlo sequences per cell", quick=128, minimum=32, maximum=10**9),
    Param("target_rse", "real", TARGET_RSE, "stop each cell at this relative standard error of E[sum w^2]",
          minimum=0.0, maximum=1.0, strict_min=True, none="no target: every cell runs the cap"),
    Param("cell_logits", "int", CELL_LOGITS, "most logits (N x sequences) per cell, at least 32 sequences",
          minimum=32, maximum=10**12, none="no budget in logits: every cell may run the sequence cap"),
)


def _sweep_grid(quick: bool, betas=BETAS, n_min=None, n_max=None, sequences=None, target_rse=TARGET_RSE,
                cell_logits=CELL_LOGITS):
    """``(grid, betas, n_grid, resolved parameters)``: the sweep :func:`compute` runs."""
    from varsim.sim.sweep import SweepGrid

    p = resolve(PARAMS, quick, betas=betas, n_min=n_min, n_max=n_max, sequences=sequences, target_rse=target_rse,
                cell_logits=cell_logits)
    betas = tuple(float(b) for b in p["betas"])
    n_grid = 4 ** np.arange(math.ceil(math.log(p["n_min"], 4) - 1e-12), math.floor(math.log(p["n_max"], 4) + 1e-12) + 1)
    if n_grid.size < 2:
        raise ValueError(f"n_max must be at least 4 n_min (two powers of four), got n_min={p['n_min']}, "
                         f"n_max={p['n_max']}")
    grid = SweepGrid(variants=_grid_variants(betas), betas=list(betas), n_grid=[int(v) for v in n_grid],
                     n_sequences=p["sequences"], target_rse=p["target_rse"], max_cell_logits=p["cell_logits"])
    return grid, betas, n_grid, p


def work(quick: bool = False, **params) -> float:
    """The estimated work of :func:`compute` with ``params`` in key-coordinates (every cell at its cap), before
    it runs (``varsim figures`` refuses a figure above its budget)."""
    from varsim.sim.sweep import estimate_sweep_work

    return estimate_sweep_work(_sweep_grid(quick, **params)[0])


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, betas=BETAS, n_min=None,
            n_max=None, sequences=None, target_rse=TARGET_RSE, cell_logits=CELL_LOGITS, out=None) -> dict:
    """Run the sweep (all variants x betas x N) and the exact lines; returns plain data for :func:`draw`.

    N runs over the powers of four in ``[n_min, n_max]`` (default 16 to 4^8, quick 4^5), each cell to ``target_rse``
    (None: always the cap), ``sequences`` (default 1000, quick 128) or ``cell_logits`` logits (``N x sequences``,
    default 2^24; None: no such budget), whichever comes first. Every parameter is declared in :data:`PARAMS`
    (a bad value is a ValueError naming it). ``out``: also write the data as JSON there."""
    from varsim.sim.sweep import run_sweep
    from varsim.theory.remedies import variant_theory
    from varsim.variants import get_variant

    grid, betas, n_grid, p = _sweep_grid(quick, betas, n_min, n_max, sequences, target_rse, cell_logits)
    sequences, target_rse = p["sequences"], p["target_rse"]
    dense_points = _DENSE_POINTS[bool(quick)]
    # quick mode runs in this process (no worker start-up); full mode on one worker process per core
    sweep = run_sweep(grid, seed=seed, workers=1 if quick else None, progress=bool(progress))
    n_dense = np.geomspace(n_grid[0], n_grid[-1], dense_points)
    panels = []
    for beta in betas:
        series = []
        for name, label, params in variant_specs():
            spec = get_variant(name)
            full = spec.check_params(_panel_params(params, beta))
            cells = [c for c in sweep["cells"] if c["attention"] == name and c["beta"] == beta
                     and c["params"] == full]
            cells.sort(key=lambda c: c["n"])
            th = variant_theory(name, n_dense, beta, **full)
            exact = None if all(v is None for v in th.ipr) else np.array(
                [np.nan if v is None else v for v in th.ipr], dtype=np.float64)
            series.append({
                "attention": name, "label": label, "params": full,
                "n": [c["n"] for c in cells], "ipr": [c["ipr"] for c in cells],
                "ipr_se": [c["ipr_se"] for c in cells], "sequences_used": [c["sequences"] for c in cells],
                "theory": spec.theory, "family": spec.family, "marker": spec.marker,
                "exact_at_mc": [c["exact_ipr"] for c in cells], "z": [c["z_ipr"] for c in cells],
                "exact": None if exact is None else {"n": n_dense, "ipr": exact},
                "bound": None if th.ipr_lower is None else {"lower": th.ipr_lower[0], "upper": th.ipr_upper[0]},
            })
        panels.append({"beta": beta, "series": series})
    return _style.computed_data(NAME, seed, quick, {
        "betas": list(betas), "sequences": sequences, "target_rse": target_rse, "cell_logits": p["cell_logits"],
        "sampler": "logits",
        "estimator": "rao_blackwell", "sweep_elapsed_s": sweep["elapsed_s"], "panels": panels,
        "params": {**p, "betas": list(betas)}}, out, smoke_reason=f"few sequences, N <= {int(n_grid[-1])}")


def _mc_label(data: dict) -> str:
    """The legend's words for the Monte Carlo points: their precision target and cap, or the fixed count."""
    if data.get("target_rse") is None:
        return f"MC ± SE, {data['sequences']} sequences per point (logits sampler + RB)"
    budget, logits = data.get("cell_logits"), ""
    if budget is not None:
        power = math.log2(budget)
        logits = f" or $2^{{{power:g}}}$ logits" if power.is_integer() else f" or {budget:.3g} logits"
    return (f"MC ± SE to {100 * data['target_rse']:g}% relative SE, at most {data['sequences']} sequences{logits} "
            f"(logits sampler + RB)")


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Log-log panels of E[sum w^2] vs N: one column per beta, one row per variant family (``FAMILIES`` of the
    registry; the baseline, softmax, in every row); one legend naming every variant below. ``ax``: one axis per
    family and beta, row by row."""
    from varsim.variants import BASELINE, FAMILIES

    from .series import variant_styles

    A = _style.array
    colors = {name: sty["color"] for name, sty in variant_styles().items()}
    with _style.style(style):
        panels = data["panels"]
        fig, grid = _style.subplots(len(FAMILIES), len(panels), ax=ax, style=style, width=4.2, height=3.2,
                                    sharex=True, sharey=True)
        n_all = [n for p in panels for s in p["series"] for n in s["n"]]
        handles = {}
        band_color = None
        for col, panel in enumerate(panels):
            for row, family in enumerate(FAMILIES):
                ax = grid[row][col]
                members = [s for s in panel["series"] if s["attention"] == BASELINE or s["family"] == family]
                lines = []
                for j, s in enumerate(members):
                    color, marker = colors[s["attention"]], s["marker"]
                    n = A(s["n"])
                    shift = 2 ** ((j - (len(members) - 1) / 2) * 0.03)  # separate overlapping error bars
                    ax.errorbar(n * shift, A(s["ipr"]), A(s["ipr_se"]), fmt=marker, color=color, lw=1.0, zorder=3)
                    ls = "-"
                    if s["exact"] is not None:
                        line = A(s["exact"]["ipr"])
                        ls = _ON_TOP if any(np.allclose(line, other, rtol=1e-9) for other in lines) else "-"
                        lines.append(line)
                        ax.plot(A(s["exact"]["n"]), line, color=color, ls=ls, zorder=2 if ls == "-" else 2.5)
                    if s["bound"] is not None:
                        band_color = color
                        ax.fill_between([min(n_all) / 1.25, max(n_all) * 1.25], s["bound"]["lower"],
                                        s["bound"]["upper"], color=color, alpha=0.10, lw=0, zorder=1)
                        ax.axhline(s["bound"]["lower"], color=color, lw=0.9, ls=":", zorder=1)
                    kind = _KIND_LABELS[s["theory"]]
                    width = _style.plt.rcParams["lines.linewidth"] if s["exact"] is not None else 0
                    handles.setdefault(s["attention"], Line2D([], [], color=color, marker=marker, ls=ls, lw=width,
                                                              label=f"{s['label']}: {kind}"))
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_title(rf"$\beta = {panel['beta']:g}$" + f"\n{family}", fontsize="medium")
                _style.log2_ticks(ax, min(n_all), max(n_all))
        for ax in grid[-1]:
            ax.set_xlabel("sequence length $N$")
        narrow = fig.get_figwidth() < 4.5
        ylabel = r"$E[\sum_i w_i^2]$" + ("" if narrow else r"  $(= \mathrm{Var}(o_j)/\sigma_v^2)$")
        _style.label_first_column(grid, ylabel)
        extra = []
        if band_color is not None:
            extra.append(Patch(color=band_color, alpha=0.25, label=r"top-$k$ bound $1/k \leq \sum w^2 \leq 1$"))
        extra.append(Line2D([], [], color="k", marker="o", ls="none",
                            label=_mc_label(data)))
        extra.append(Line2D([], [], color="k", label="exact (varsim.theory)"))
        _style.suptitle(fig, "Weight concentration of the attention variants (Gaussian logits of scale $\\beta$)")
        order = [s["attention"] for s in panels[0]["series"]]
        _style.legend_below(fig, [handles[v] for v in order if v in handles] + extra, fontsize="small", ncol=2)
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_variants_ipr [options]``: make just this figure
main = figure_main(NAME, __name__)
