"""Reproduction figure: attention weight on the correct item vs N, linking accuracy to dispersion.

For each trained model, the query token's attention weight on the item that decides the answer (the largest
priority, or the key equal to the query), taking per set the head that puts the most weight there, averaged over
sets and seeds (band: range over seeds). 1 is a hard selection; the dotted line 1/N is uniform attention. Where the
weight falls the output becomes an average over many items, which is the vanishing variance, and the answer is
lost. One panel per task and architecture.
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .fig_repro_accuracy import cells_by_panel, header, source_of
from .series import norm_style

NAME = "fig_repro_attention"
SOURCE = "reproduction"  # the data it draws: a key of varsim.figures.SOURCES


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Seed-averaged weight on the correct item (best head) vs N per task, architecture and norm."""
    res = source_of(quick, seed, source)
    st = res["settings"]
    panels = []
    for task, arch, cells in cells_by_panel(res):
        lines = []
        for norm, recs in cells:
            w = np.array([r["probes"]["attn_correct"]["max_head"] for r in recs], dtype=float)  # (seeds, L)
            lines.append({"norm": norm, "mean": w.mean(axis=0).tolist(), "min": w.min(axis=0).tolist(),
                          "max": w.max(axis=0).tolist()})
        panels.append({"task": task, "architecture": arch, "lines": lines})
    return {"name": NAME, **header(res, quick), "seeds": st["seeds"],
            "lengths": st["probe_lengths"], "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data (provenance footer and, in quick mode, smoke-test stamp)."""
    A = _style.array
    n = A(data["lengths"])
    panels = data["panels"]
    with _style.style(style):
        fig, axes = _style.new_figure(len(panels), width=3.9, height=3.6, sharey=True, style=style, ax=ax)
        for ax, p in zip(axes, panels):
            for ln in p["lines"]:
                sty = norm_style(ln["norm"])
                ax.plot(n, A(ln["mean"]), label=ln["norm"], **sty)
                ax.fill_between(n, A(ln["min"]), A(ln["max"]), color=sty["color"], alpha=0.15, lw=0)
            ax.plot(n, 1.0 / n, color="k", ls=":", lw=1.0, label="uniform, $1/N$")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            _style.log2_ticks(ax, float(n.min()), float(n.max()))
            ax.set_ylim(top=1.3)
            ax.set_title(f"{p['task']}, {p['architecture'].replace('_', ' ')}")
            ax.set_xlabel("set size $N$")
        axes[0].set_ylabel("weight on the correct item (best head)")
        handles, labels = axes[0].get_legend_handles_labels()
        _style.legend_below(fig, handles, labels, fontsize="small")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_repro_attention [options]``: make just this figure
main = figure_main(NAME, __name__)
