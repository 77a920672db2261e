"""Figure: E[sum w^2] against N for every attention variant of :mod:`varsim.variants`, one panel per common beta.

Monte Carlo points with standard-error bars come from one :func:`varsim.sim.sweep.run_sweep` call (logits
sampler with the Rao-Blackwell estimator, every cell seeded by its own key) over all variants, both betas and all N.
Lines and bands are what the theory kind of each variant's registry entry gives
(:func:`varsim.theory.remedies.variant_theory`): exact for softmax, ssmax, logn and critical (softmax at the effective
scale ``f(N) beta``) and sigmoid (its exact moments); top-k's bound ``1/k <= sum w^2 <= 1`` as a band; adaptive
temperature, entmax-1.5 and sparsemax are Monte Carlo only. The legend names each variant's kind.
``critical`` uses ``beta0 = beta`` in each panel (the REM scaling ``c sqrt(2 ln N)`` of the logits' own spread).

Softmax's weights flatten (E[sum w^2] -> e^{beta^2}/N); a variant whose curve stays level keeps the output variance
``sigma_v^2 E[sum w^2]`` from vanishing. Full mode: 16 <= N <= 65536, each cell to a 2% relative standard error or 1000
sequences, whichever comes first; quick mode (tests): N <= 1024, at most 128 sequences, stamped as a smoke test.
"""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from varsim.figures import figure_main

from . import _style

NAME = "fig_variants_ipr"
BETAS = (1.0, 2.0)
TOPK = 8

#: (variant, label, parameters; ``beta0`` None means "= the panel's beta") in drawing order
VARIANT_SPECS = (
    ("softmax", "softmax", {}),
    ("ssmax", r"ssmax ($s = 1/\ln 16$)", {}),
    ("logn", r"logn ($N_0 = 16$, clamped)", {}),
    ("critical", r"critical ($c = 1$, $\beta_0 = \beta$)", {"beta0": None}),
    ("adaptive_temperature", "adaptive temperature", {}),
    ("topk", rf"top-$k$ ($k = {TOPK}$)", {"k": TOPK}),
    ("entmax15", "1.5-entmax", {}),
    ("sparsemax", "sparsemax", {}),
    ("sigmoid", r"sigmoid ($z - \ln N$)", {}),
)
#: each cell stops at this relative standard error of E[sum w^2] (``SweepGrid(target_rse=...)``): 2% is under a
#: hundredth of a decade, less than a marker on these log-log panels; the sequences below are the caps
TARGET_RSE = 0.02
# (N grid, cap on sequences per cell, points of each exact line); quick mode is for the tests (seconds)
_SIZES = {False: (4 ** np.arange(2, 9), 1000, 20), True: (4 ** np.arange(2, 6), 128, 10)}
_COLORS = _style.COLORS + ("#000000", "#7F7F7F", "#8C564B")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
# ssmax with s = 1/ln 16 equals clamped logn (N0 = 16) for N >= 16: dashed on top, so both lines stay visible
_LINESTYLES = {"ssmax": (0, (4, 2.5))}


def _grid_variants() -> dict:
    """The sweep's variants: every spec, critical with ``beta0`` equal to each panel's beta."""
    out = {}
    for name, _label, params in VARIANT_SPECS:
        out[name] = {p: (list(BETAS) if v is None else v) for p, v in params.items()}
    return out


def _panel_params(params: dict, beta: float) -> dict:
    return {p: (beta if v is None else v) for p, v in params.items()}


#: the legend's words for each theory kind of the registry (varsim.variants.THEORY_KINDS)
_KIND_LABELS = {"exact_ipr": "MC + exact", "sigmoid_moments": "MC + exact", "bound": "MC + bound", "none": "MC only"}


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Run the sweep (all variants x betas x N) and the exact lines; returns plain data for :func:`plot`."""
    from varsim.sim.sweep import SweepGrid, run_sweep
    from varsim.theory.remedies import variant_theory
    from varsim.variants import get_variant

    from ._style import computed_footer

    n_grid, sequences, dense_points = _SIZES[bool(quick)]
    grid = SweepGrid(variants=_grid_variants(), betas=list(BETAS), n_grid=[int(v) for v in n_grid],
                     n_sequences=sequences, target_rse=TARGET_RSE)
    # quick mode runs in this process (no worker start-up); full mode on one worker process per core
    sweep = run_sweep(grid, seed=seed, workers=1 if quick else None, progress=bool(progress))
    n_dense = np.geomspace(n_grid[0], n_grid[-1], dense_points)
    panels = []
    for beta in BETAS:
        series = []
        for name, label, params in VARIANT_SPECS:
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
                "theory": spec.theory,
                "exact_at_mc": [c["exact_ipr"] for c in cells], "z": [c["z_ipr"] for c in cells],
                "exact": None if exact is None else {"n": n_dense, "ipr": exact},
                "bound": None if th.ipr_lower is None else {"lower": th.ipr_lower[0], "upper": th.ipr_upper[0]},
            })
        panels.append({"beta": beta, "series": series})
    return {"name": NAME, "quick": bool(quick), "seed": int(seed), "betas": list(BETAS), "sequences": sequences,
            "target_rse": TARGET_RSE,
            "sampler": "logits", "estimator": "rao_blackwell", "sweep_elapsed_s": sweep["elapsed_s"],
            "panels": panels, "footer": computed_footer(seed, quick), "smoke_reason": "few sequences, N <= 1024"}


def _mc_label(data: dict) -> str:
    """The legend's words for the Monte Carlo points: their precision target and cap, or the fixed count."""
    if data.get("target_rse") is None:
        return f"MC ± SE, {data['sequences']} sequences per point (logits sampler + RB)"
    return (f"MC ± SE to {100 * data['target_rse']:g}% relative SE, at most {data['sequences']} sequences "
            f"(logits sampler + RB)")


#: the rows of panels: softmax at an N-dependent scale, and the other weight maps (softmax, the baseline, in both);
#: a variant in neither goes with the other maps, so a row's count is not capped (five each for VARIANT_SPECS today)
_FAMILIES = (("rescaled softmax", {"softmax", "ssmax", "logn", "critical", "adaptive_temperature"}),
             ("other weight maps", None))


def _family_of(name: str) -> int:
    return 0 if name in _FAMILIES[0][1] else 1


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Log-log panels of E[sum w^2] vs N: one column per beta, one row per variant family (softmax in both); one
    legend naming every variant below. ``ax``: two axes per beta, the rescaled-softmax row first."""
    A = _style.array
    with _style.style(style):
        panels = data["panels"]
        fig, grid = _style.subplots(len(_FAMILIES), len(panels), ax=ax, style=style, width=4.2, height=3.2,
                                    sharex=True, sharey=True)
        n_all = [n for p in panels for s in p["series"] for n in s["n"]]
        handles = {}
        band_color = None
        for col, panel in enumerate(panels):
            for row, (family, _) in enumerate(_FAMILIES):
                ax = grid[row][col]
                members = [(i, s) for i, s in enumerate(panel["series"])
                           if s["attention"] == "softmax" or _family_of(s["attention"]) == row]
                for j, (i, s) in enumerate(members):
                    color, marker = _COLORS[i % len(_COLORS)], _MARKERS[i % len(_MARKERS)]
                    n = A(s["n"])
                    shift = 2 ** ((j - (len(members) - 1) / 2) * 0.03)  # separate overlapping error bars
                    ax.errorbar(n * shift, A(s["ipr"]), A(s["ipr_se"]), fmt=marker, color=color, lw=1.0, zorder=3)
                    ls = _LINESTYLES.get(s["attention"], "-")
                    if s["exact"] is not None:
                        ax.plot(A(s["exact"]["n"]), A(s["exact"]["ipr"]), color=color, ls=ls,
                                zorder=2.5 if s["attention"] in _LINESTYLES else 2)
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
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
