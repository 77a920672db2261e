"""Reproduction figure, Figure-2 analogue: histograms of one attention-output feature at several N.

For the baseline (no normalization) and for LayerNorm after attention, one trained model each (seed index 0, first
architecture of the reproduction): the values, over many evaluation sets, of the fixed coordinate of the query
token's attention output at N = 16, 256, 4096 (those probed). Columns: baseline output; LayerNorm model before
its norm; LayerNorm model after its norm. One row per task. The histograms narrow with N where the variance
vanishes; after LayerNorm they keep their width only if the coordinate's mean over sets stays at the vector mean.
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .fig_repro_accuracy import header, source_of

NAME = "fig_repro_hist"
SOURCE = "reproduction"  # the data it draws: a key of varsim.figures.SOURCES
# (norm, stage, column title)
COLUMNS = (("none", "pre", "no norm: attention output"),
           ("layernorm", "pre", "LayerNorm model: before the norm"),
           ("layernorm", "post", "LayerNorm model: after the norm"))


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """The raw probe values of the fixed coordinate at the histogram lengths, for seed index 0."""
    res = source_of(quick, seed, source)
    st = res["settings"]
    arch = st["architectures"][0]
    rows = []
    for task in st["tasks"]:
        cols = []
        for norm, stage, title in COLUMNS:
            recs = res["cells"].get((task, arch, norm), [])
            rec = recs[0] if recs and recs[0]["seed_index"] == 0 else None
            if rec is None or "hist" not in rec["probes"]:
                cols.append({"title": title, "lengths": [], "values": []})
                continue
            h = rec["probes"]["hist"]
            cols.append({"title": title, "coordinate": h["coordinate"], "lengths": h["lengths"], "values": h[stage]})
        rows.append({"task": task, "columns": cols})
    return {"name": NAME, **header(res, quick), "architecture": arch,
            "probe_sets": st["probe_sets"], "rows": rows}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data (provenance footer and, in quick mode, smoke-test stamp)."""
    rows = data["rows"]
    with _style.style(style):
        fig, axes = _style.subplots(len(rows), len(COLUMNS), ax=ax, style=style, width=4.0, height=3.1)
        for r, row in enumerate(rows):
            for c, col in enumerate(row["columns"]):
                ax = axes[r][c]
                values = [_style.array(v) for v in col["values"]]
                finite = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.array([])
                if finite.size:
                    lo, hi = np.quantile(finite, [0.002, 0.998])
                    pad = 0.05 * max(hi - lo, 1e-12)
                    bins = np.linspace(lo - pad, hi + pad, 41)
                    for k, (n, v) in enumerate(zip(col["lengths"], values)):
                        color = _style.COLORS[k % len(_style.COLORS)]
                        ax.hist(v, bins=bins, density=True, histtype="stepfilled", alpha=0.35, color=color,
                                label=f"$N = {n}$")
                        ax.hist(v, bins=bins, density=True, histtype="step", color=color)
                    ax.legend(loc="upper left", fontsize="small")
                else:
                    ax.text(0.5, 0.5, "no run", ha="center", va="center", transform=ax.transAxes)
                coord = col.get("coordinate")
                ax.set_title(f"{row['task']}: {col['title']}", fontsize="medium")
                ax.set_xlabel("value of coordinate" + ("" if coord is None else f" {coord}"))
        _style.label_first_column(axes, f"density over {data['probe_sets']} sets")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_repro_hist [options]``: make just this figure
main = figure_main(NAME, __name__)
