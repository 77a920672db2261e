"""Reproduction figure, Figure-1 analogue: spread of one attention-output coordinate vs N in the trained models.

For every trained model, the standard deviation over many evaluation sets of fixed size N of one fixed coordinate
of the query token's attention output (the coordinate with the largest spread at the shortest N), before the
normalization (left of each pair) and after it (right), on log-log axes; lines are geometric means over seeds and
the legend gives the fitted log-log slope (mean and 95% t interval over seeds). A slope of -1/2 is the 1/sqrt(N)
decay of an average of N independent values. "Before" is the vector the normalization acts on: the attention output
after the output projection for none / layernorm / standardize, the concatenated head outputs for the per-head norms.
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .fig_repro_accuracy import cells_by_panel, header, source_of
from .series import norm_style

NAME = "fig_repro_std"
SOURCE = "reproduction"  # the data it draws: a key of varsim.figures.SOURCES
STAGES = ("pre", "post")


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per task, architecture and norm: geometric-mean std of the fixed coordinate vs N and the fitted slopes."""
    res = source_of(quick, seed, source)
    st = res["settings"]
    slopes = {(g["task"], g["architecture"], g["norm"]): g.get("probe_slopes") or {}
              for g in res["summary"]["groups"]}
    panels = []
    for task, arch, cells in cells_by_panel(res):
        for stage in STAGES:
            lines = []
            for norm, recs in cells:
                curves = np.array([r["probes"]["std_coordinate"][stage] for r in recs], dtype=float)  # (S, L)
                with np.errstate(divide="ignore"):
                    geo = np.exp(np.mean(np.log(curves), axis=0))
                fit = slopes[(task, arch, norm)].get(f"{stage}_coordinate")
                lines.append({"norm": norm, "std": geo.tolist(), "per_seed": curves.tolist(), "slope": fit})
            panels.append({"task": task, "architecture": arch, "stage": stage, "lines": lines})
    return {"name": NAME, **header(res, quick), "seeds": st["seeds"],
            "probe_sets": st["probe_sets"], "lengths": st["probe_lengths"], "panels": panels}


def _slope_text(fit) -> str:
    if not fit:
        return "slope n/a"
    lo, hi = fit.get("ci_low"), fit.get("ci_high")
    if lo is None or hi is None:
        return f"slope {fit['mean']:+.2f}"
    return f"slope {fit['mean']:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data (provenance footer and, in quick mode, smoke-test stamp)."""
    A = _style.array
    n = A(data["lengths"])
    panels = data["panels"]
    ncols = 2 * len({p["architecture"] for p in panels})
    nrows = max(1, len(panels) // ncols)
    with _style.style(style):
        fig, axes = _style.subplots(nrows, ncols, ax=ax, style=style, width=3.9, height=3.4,
                                        layout="constrained")
        from matplotlib.patheffects import withStroke

        narrow = fig.get_figwidth() < 4.5
        for ax, p in zip(axes.ravel(), panels):
            for ln in p["lines"]:
                sty = norm_style(ln["norm"])
                y = A(ln["std"])
                ax.plot(n, y, label=f"{ln['norm']}: {_slope_text(ln['slope'])}", **sty)
                for curve in ln["per_seed"]:
                    ax.plot(n, A(curve), color=sty["color"], lw=0.5, alpha=0.35)
            if p["lines"]:  # guide: 1/sqrt(N) through the first point of the first line
                y0 = A(p["lines"][0]["std"])[0]
                if np.isfinite(y0) and y0 > 0:
                    ax.plot(n, y0 * np.sqrt(n[0] / n), color="k", ls=":", lw=1.0, label=r"$\propto N^{-1/2}$")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            _style.log2_ticks(ax, float(n.min()), float(n.max()))
            where = "before the norm" if p["stage"] == "pre" else "after the norm"
            ax.set_title(f"{p['task']}, {p['architecture'].replace('_', ' ')}: {where}")
            if narrow:  # the slopes as text in each line's colour (legend order), the line styles below
                for k, ln in enumerate(p["lines"]):
                    ax.annotate(_slope_text(ln["slope"])[6:], (1.0, 1.0), xycoords="axes fraction",
                                xytext=(-2, -2 - 7 * k), textcoords="offset points", ha="right", va="top",
                                fontsize="small", color=norm_style(ln["norm"])["color"],
                                path_effects=[withStroke(linewidth=2.2, foreground="white")])
            else:  # in a band of its own under the lines (the lines fall to the right, so the left is freer)
                _style.legend_clear_of_data(ax, "lower left", fontsize="small")
        for ax in axes.ravel():
            ax.set_xlabel("set size $N$")
        if narrow:
            handles = {}
            for ax in axes.ravel():
                for h, label in zip(*ax.get_legend_handles_labels()):
                    handles.setdefault(label.split(":")[0], h)
            _style.legend_below(fig, list(handles.values()), list(handles), fontsize="small",
                                title="slope of log std vs log N [95% t interval over seeds], in each panel")
        ylabel = f"std over {data['probe_sets']} sets" + ("" if narrow else " of one coordinate")
        _style.label_first_column(axes, ylabel)
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_repro_std [options]``: make just this figure
main = figure_main(NAME, __name__)
