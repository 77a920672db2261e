"""Real-model figure: every probed layer of every model on one axis, the decay slopes of ``E[sum w^2]`` and of the
output spread, head by head.

One column slot per (model, probed layer), models side by side in the order of the probe files (default: SmolLM2,
the three trained argmax decoders of the decoder grid, MiniLM). Upper panel: the log-log slope in N of
``E[sum w^2]`` of the query's attention row; lower panel: the slope of the std over windows of the head's attention
output (``sqrt(var_total)``, RMS over components). Each dot is one head (spread sideways within its layer's slot),
with its 95% percentile-bootstrap interval over windows from the JSON (``slopes.<name>.lo/hi``); hollow: the
interval contains 0. The black bar is the median over the layer's heads. Reference lines: 0 (no decay), -1 for
``E[sum w^2]`` (uniform attention over the N keys) and -1/2 for the std (an average of N i.i.d. values), so a
layer whose dots sit on both lines attends broadly and its output vanishes like the i.i.d. law; a trained model's
layers are read at the same N range as SmolLM2's (set sizes N = 16..1024: the keys are the N items and the tokens
around them, the file's ``n_keys``).
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .probe import header, model_label, short_name, source_of

NAME = "fig_probe_layers"
SOURCE = "probe"  # the data it draws: a key of varsim.figures.SOURCES
#: (slope field in the JSON, panel label, reference slope of broad attention over i.i.d. values)
QUANTITIES = (("y2", r"slope of $E[\sum w^2]$", -1.0), ("std", "slope of the output std", -0.5))
SLOT = 0.72  # width of a layer's slot taken by its heads' dots


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per model and probed layer: each head's slopes and 95% intervals, and the median over heads."""
    models = source_of(source)
    rows = []
    for m in models:
        d = m["data"]
        layers = []
        for i, layer in enumerate(d["layers"]):
            entry = {"layer": layer}
            for q, _, _ in QUANTITIES:
                s = d["slopes"][q]
                value = np.asarray(s["value"][i], dtype=float)
                entry[q] = {"value": value.tolist(), "lo": list(map(float, s["lo"][i])),
                            "hi": list(map(float, s["hi"][i])), "median": float(np.nanmedian(value))}
            layers.append(entry)
        rows.append({"model": model_label(d), "name": short_name(d), "lengths": [d["lengths"][0], d["lengths"][-1]],
                     "n_head": d["n_head"], "layers": layers})
    return {"name": NAME, **header(models, quick), "rows": rows}


def _slots(rows) -> list[tuple[int, int, float]]:
    """``(row index, layer index, x)`` of every layer slot; a gap of one slot between models."""
    out, x = [], 0.0
    for r, row in enumerate(rows):
        for i in range(len(row["layers"])):
            out.append((r, i, x))
            x += 1.0
        x += 0.6
    return out


def _ranges(rows) -> str:
    """The N ranges the slopes are fitted over: the most common one, then the models with another."""
    spans = [f"{row['lengths'][0]}..{row['lengths'][1]}" for row in rows]
    common = max(set(spans), key=spans.count)
    other = [f"{row['name']}: {s}" for row, s in zip(rows, spans) if s != common]
    return f"log-log slopes over N = {common}" + (f" ({'; '.join(other)})" if other else "")


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Two panels (``E[sum w^2]`` slope above, output-std slope below) sharing the layer axis."""
    from matplotlib.lines import Line2D

    rows = data["rows"]
    slots = _slots(rows)
    c = _style.COLORS
    with _style.style(style):
        width = _style.style_spec(style)["width"]
        narrow = ax is None and width is not None and width < 4.5
        if ax is not None:
            fig, axes = _style.axes_grid(2, ax=ax)
        else:
            total = width or max(7.0, 0.5 * len(slots) + 1.5)
            fig, grid = _style.plt.subplots(2, 1, figsize=(total, total * (0.95 if narrow else 0.62)), sharex=True,
                                            layout="constrained")
            axes = list(grid)
        span = slots[-1][2] - slots[0][2] + 1.2
        slot_pt = 0.85 * fig.get_figwidth() * 72 / span  # points per layer slot (the axes take ~85% of the width)
        for pax, (q, label, ref) in zip(axes, QUANTITIES):
            pax.axhline(0.0, color="0.3", lw=0.8)
            pax.axhline(ref, color="0.3", lw=0.9, ls="--")
            for r, i, x in slots:
                row = rows[r]
                e = row["layers"][i][q]
                color, marker = c[r % len(c)], _style.MARKERS[r % len(_style.MARKERS)]
                v, lo, hi = (_style.array(e[k]) for k in ("value", "lo", "hi"))
                h = len(v)
                xs = x + (np.arange(h) - (h - 1) / 2) * (SLOT / max(h, 1))
                zero = (lo <= 0) & (hi >= 0)
                size = float(np.clip(2.5 * (slot_pt * SLOT / max(h, 1)) ** 2, 4.0, 14.0))  # dots about as wide as
                pax.vlines(xs, lo, hi, color=color, lw=0.8, alpha=0.7)  # their spacing
                pax.scatter(xs[~zero], v[~zero], color=color, marker=marker, s=size, zorder=3)
                pax.scatter(xs[zero], v[zero], facecolor="white", edgecolor=color, marker=marker, s=size, zorder=3)
                pax.hlines(e["median"], x - SLOT / 2 - 0.05, x + SLOT / 2 + 0.05, color="black", lw=1.8, zorder=4)
            pax.set_ylabel(label)
            pax.grid(axis="x", visible=False)
        axes[-1].set_xticks([x for _, _, x in slots], [str(rows[r]["layers"][i]["layer"]) for r, i, _ in slots])
        axes[-1].set_xlabel("layer")
        axes[0].tick_params(labelbottom=False)
        for r, row in enumerate(rows):
            xs = [x for rr, _, x in slots if rr == r]
            centre = (xs[0] + xs[-1]) / 2
            axes[0].annotate(row["name"].replace(" ", "\n", 1) if narrow else row["name"], (centre, 1.0),
                             xycoords=("data", "axes fraction"), xytext=(0, 3), textcoords="offset points",
                             ha="center", va="bottom", fontsize="small", color=c[r % len(c)],
                             annotation_clip=False)
            for pax in axes:
                if r:
                    pax.axvline(xs[0] - 0.8, color="0.75", lw=0.6)
        for pax in axes:
            pax.set_xlim(slots[0][2] - 0.6, slots[-1][2] + 0.6)
        handles = [Line2D([], [], color="0.3", marker="o", ls="", label="head (slope, 95% bootstrap interval)"),
                   Line2D([], [], color="0.3", marker="o", ls="", markerfacecolor="white",
                          label="head whose interval contains 0"),
                   Line2D([], [], color="black", lw=1.8, label="median over the layer's heads"),
                   Line2D([], [], color="0.3", ls="--", lw=0.9, label=r"uniform attention over i.i.d. values: "
                          r"$E[\sum w^2] \propto N^{-1}$, std $\propto N^{-1/2}$")]
        _style.legend_below(fig, handles, fontsize="small", title=_ranges(rows), title_fontsize="small")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_probe_layers [options]``: make just this figure
main = figure_main(NAME, __name__)
