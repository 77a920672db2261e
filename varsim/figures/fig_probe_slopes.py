"""Real-model figure: layer x head maps of the decay slopes, of the output spread and of ``E[sum w^2]``.

For each probed model (rows) two maps over (layer, head): left, the log-log slope in N of the std over text windows
of the head's attention output (``sqrt(var_total)``, RMS over components); right, the slope of ``E[sum w^2]`` of the
query's attention row. Both are the probe's least-squares slopes over its N grid, printed in each cell. Hatched
cells: the 95% percentile-bootstrap interval over windows (stored in the JSON) contains 0, i.e. no decay or growth
is resolved; the median interval width of each map is in its title. Colours: diverging (blue = falls with N,
red = grows), centred at 0, one scale per column. For i.i.d. values with the same attention, the std slope would be
half the ``E[sum w^2]`` slope (uniform attention: -1/2 and -1).
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .probe import header, model_label, source_of, title_name

NAME = "fig_probe_slopes"
SOURCE = "probe"  # the data it draws: a key of varsim.figures.SOURCES
QUANTITIES = (("std", "slope of the output std"), ("y2", r"slope of $E[\sum w^2]$"))
CMAP = "RdBu_r"  # ColorBrewer diverging, readable with the common colour-vision deficiencies


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per model and quantity: the (L, H) slope map, its bootstrap interval and which cells' intervals hold 0."""
    models = source_of(source)
    rows = []
    for m in models:
        d = m["data"]
        maps = {}
        for q, _ in QUANTITIES:
            s = d["slopes"][q]
            value, lo, hi = (np.asarray(s[k], dtype=float) for k in ("value", "lo", "hi"))
            maps[q] = {"value": value.tolist(), "lo": lo.tolist(), "hi": hi.tolist(),
                       "contains_zero": ((lo <= 0) & (hi >= 0)).tolist(),
                       "median_width": float(np.nanmedian(hi - lo))}
        rows.append({"model": model_label(d), "title": title_name(d), "layers": d["layers"], "n_head": d["n_head"],
                     "lengths": [d["lengths"][0], d["lengths"][-1]], "maps": maps})
    return {"name": NAME, **header(models, quick), "rows": rows}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data, with the provenance footer."""
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    rows = data["rows"]
    heights = [len(r["layers"]) + 1.6 for r in rows]
    width = max(r["n_head"] for r in rows)
    with _style.style(style):
        spec = _style.style_spec(style)
        total = spec["width"] or 2 * (0.5 * width + 1.3)
        stacked = total < 4.5  # a paper column: the two maps one above the other
        if ax is not None:
            fig, flat = _style.axes_grid(2 * len(rows), ax=ax)
            axes = np.array(flat, dtype=object).reshape(2, len(rows)).T
        elif stacked:
            fig = _style.plt.figure(figsize=(total, total / (0.5 * width + 1.3) * 0.5 * (2 * sum(heights)) + 0.4),
                                    layout="constrained")
            axes = fig.subplots(2 * len(rows), 1, squeeze=False, gridspec_kw={"height_ratios": heights * 2})
            axes = axes[:, 0].reshape(2, len(rows)).T
        else:
            fig = _style.plt.figure(figsize=(total, total / 2 / (0.5 * width + 1.3) * (0.5 * sum(heights)) + 0.4),
                                    layout="constrained")
            axes = fig.subplots(len(rows), 2, squeeze=False, gridspec_kw={"height_ratios": heights})
        font = _style.plt.rcParams["font.size"] * 0.833
        cell_pt = (0.62 if stacked else 0.31) * fig.get_figwidth() * 72 / width
        numbers = cell_pt > 3.4 * font  # "+0.22" fits its cell
        for col, (q, label) in enumerate(QUANTITIES):
            vmax = max(np.nanmax(np.abs(_style.array(np.ravel(r["maps"][q]["value"])))) for r in rows)
            norm = Normalize(-max(vmax, 0.05), max(vmax, 0.05))
            for row, ax in zip(rows, axes[:, col]):
                mp = row["maps"][q]
                v = np.array([_style.array(r) for r in mp["value"]])  # (L, H)
                im = ax.imshow(v, cmap=CMAP, norm=norm, aspect="auto", interpolation="nearest")
                for i in range(v.shape[0]):
                    for h in range(v.shape[1]):
                        if not np.isfinite(v[i, h]) or not numbers:
                            continue
                        zero = mp["contains_zero"][i][h]
                        if zero:
                            ax.add_patch(Rectangle((h - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", ec="0.35",
                                                   lw=0))
                        ax.text(h, i, f"{v[i, h]:+.2f}", ha="center", va="center", fontsize="small",
                                color="white" if abs(v[i, h]) > 0.62 * norm.vmax else "black",
                                fontweight="normal" if zero else "bold")
                ax.set_xticks(range(0, row["n_head"], 1 if numbers else 2))
                ax.set_yticks(range(len(row["layers"])), [str(layer) for layer in row["layers"]])
                ax.set_xlabel("head")
                ax.set_ylabel("layer")
                ax.grid(False)
                ax.set_title(f"{row.get('title', row['model'])}, N = {row['lengths'][0]}..{row['lengths'][1]}\n"
                             f"{label}, median {'' if stacked else '95% '}CI width {mp['median_width']:.2f}",
                             fontsize="small" if stacked else "medium")
            fig.colorbar(im, ax=list(axes[:, col]), shrink=0.8, label=label, pad=0.01)
        key = "bold: 95% bootstrap interval excludes 0;  " if numbers else ""
        fig.text(0.5, 0.0, key + "hatched: the 95% bootstrap interval contains 0", ha="center", va="top",
                 fontsize="small")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_probe_slopes [options]``: make just this figure
main = figure_main(NAME, __name__)
