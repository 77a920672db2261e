"""Real-model figure, Figure-1 analogue: spread of the query's attention output across text windows vs N.

For each probed model (default: the committed results of SmolLM2, of three trained argmax decoders of the decoder grid
(NoPE, RoPE, ALiBi) and of MiniLM) and up to three of its probed layers (the first, the middle and the last,
:func:`shown_layers`; the panels flow three a row): the standard deviation over windows of real text (a trained
decoder: over task examples) of one fixed component (component 0) of each head's attention output (before the output
projection) at the query position, vs the number N of keys, log-log. Blue band: the range over the heads; blue line:
their median. Green: the measured std as the root mean square over all ``d_head`` components, ``sqrt(var_total)``,
median over heads; vermillion (dashed): what the i.i.d. law predicts for it, ``sigma * sqrt(E[sum w^2])`` with sigma^2
the within-window variance of the values (``sqrt(var_iid)``, per window, then averaged, as the probe computes it). The
probe stores the i.i.d. part only averaged over components, so the prediction is drawn for the component average, next
to the fixed component it summarises. Each panel gives the median over heads of the probe's fitted log-log slopes and
the span of the heads' 95% percentile-bootstrap intervals (windows resampled); the dotted line is ``N^(-1/2)``, the
decay of an average of N independent values.
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .probe import header, model_label, panel_name, row_name, source_of

NAME = "fig_probe_std"
SOURCE = "probe"  # the data it draws: a key of varsim.figures.SOURCES
#: How many of the probed layers get a panel: the first, the last and evenly spaced ones between (a 30-layer model
#: probed at every layer shows layers 0, 15 and 29).
N_LAYERS = 3
COMPONENT = 0


def shown_layers(layers, count: int = N_LAYERS) -> list[int]:
    """Indices into the probed ``layers`` of the panels: ``count`` evenly spaced from the first to the last."""
    k = len(layers)
    if k <= count:
        return list(range(k))
    return sorted({int(round(i * (k - 1) / (count - 1))) for i in range(count)})


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per model and shown layer: per-head std of component 0, median curves and the JSON's slope medians.

    Reads committed (or given) probe results only; ``quick`` and ``seed`` change nothing (recorded as given).
    """
    models = source_of(source)
    rows = []
    for m in models:
        d = m["data"]
        pl, sl = d["per_length"], d["slopes"]
        comp = np.asarray(pl["std_components"], dtype=float)[..., COMPONENT]  # (nN, L, H)
        std = np.asarray(pl["std"], dtype=float)
        iid = np.sqrt(np.asarray(pl["var_iid"], dtype=float))
        panels = []
        for i in shown_layers(d["layers"]):
            layer = d["layers"][i]
            s_std = np.asarray(sl["std"]["value"][i], dtype=float)
            s_iid = np.asarray(sl["std_iid"]["value"][i], dtype=float)
            ci = {key: (np.asarray(sl[key]["lo"][i], dtype=float), np.asarray(sl[key]["hi"][i], dtype=float))
                  if "lo" in sl[key] else None for key in ("std", "std_iid")}
            panels.append({
                "layer": layer,
                "component_per_head": comp[:, i, :].T.tolist(),  # (H, nN)
                "component_median": np.median(comp[:, i, :], axis=1).tolist(),
                "std_median": np.median(std[:, i, :], axis=1).tolist(),
                "iid_median": np.median(iid[:, i, :], axis=1).tolist(),
                "slope_std": _slopes(s_std, ci["std"]),
                "slope_iid": _slopes(s_iid, ci["std_iid"]),
            })
        rows.append({"model": model_label(d), "name": panel_name(d), "lengths": d["lengths"],
                     "windows": d["settings"]["windows"],
                     "n_head": d["n_head"], "panels": panels})
    return {"name": NAME, **header(models, quick), "component": COMPONENT, "rows": rows}


def _slopes(values, ci) -> dict:
    """Median over heads of the fitted slopes, their range, and the span of the heads' 95% bootstrap intervals."""
    out = {"median": float(np.median(values)), "min": float(values.min()), "max": float(values.max())}
    if ci is not None:
        out["ci_low"], out["ci_high"] = float(np.min(ci[0])), float(np.max(ci[1]))
    return out


def _slope_text(s: dict) -> str:
    if "ci_low" in s:
        return f"{s['median']:+.2f} [{s['ci_low']:+.2f}, {s['ci_high']:+.2f}]"
    return f"{s['median']:+.2f} (heads {s['min']:+.2f}..{s['max']:+.2f})"


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """One panel per model and shown layer, flowing row by row (three a row; two at a paper column's width;
    ``ax``: that many axes), the legend in the grid's spare slot (below the panels when there is none or it is
    too narrow)."""
    A = _style.array
    rows = data["rows"]
    c = _style.COLORS
    panels = [(row, p) for row in rows for p in row["panels"]]
    with _style.style(style):
        wide = (_style.style_spec(style)["width"] or 9) >= 4.5
        cols = 3 if wide else 2
        spare = ax is None and wide and len(panels) % cols != 0  # a narrow slot is too small for the legend
        fig, flat = _style.axes_grid(len(panels) + spare, ax=ax, style=style, width=3.9, aspect=0.82, ncols=cols)
        handles = {}
        for ax, (row, p) in zip(flat, panels):
            n = A(row["lengths"])
            heads = np.array([A(curve) for curve in p["component_per_head"]])
            h = ax.fill_between(n, np.nanmin(heads, axis=0), np.nanmax(heads, axis=0), color=c[0], alpha=0.15,
                                lw=0)
            handles.setdefault("heads", (h, f"component {data['component']}, range over the heads"))
            (h,) = ax.plot(n, A(p["component_median"]), color=c[0], marker="o")
            handles.setdefault("cmed", (h, f"component {data['component']}, median over heads"))
            (h,) = ax.plot(n, A(p["std_median"]), color=c[2], marker="s")
            handles.setdefault("rms", (h, "RMS over components, median over heads"))
            (h,) = ax.plot(n, A(p["iid_median"]), color=c[1], marker="^", ls="--")
            handles.setdefault("iid", (h, r"i.i.d. law $\sigma\sqrt{E[\sum w^2]}$, median over heads"))
            y0 = A(p["iid_median"])[0]
            (h,) = ax.plot(n, y0 * np.sqrt(n[0] / n), color="0.3", ls=":", lw=1.0)
            handles.setdefault("guide", (h, r"$\propto N^{-1/2}$"))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            _style.log2_ticks(ax, float(n.min()), float(n.max()))
            ax.set_title(f"{row_name(row)}, layer {p['layer']}", fontsize="small")
            ax.set_xlabel("keys $N$")
            ax.text(0.02, 0.02, f"RMS {_slope_text(p['slope_std'])}\ni.i.d. {_slope_text(p['slope_iid'])}",
                    transform=ax.transAxes, ha="left", va="bottom", fontsize="small",
                    bbox=dict(fc="white", ec="none", alpha=0.8, pad=1.0))
            if ax.get_subplotspec() is None or ax.get_subplotspec().is_first_col():
                ax.set_ylabel(f"std over {row['windows']} windows")
        legend = dict(handles=[h for h, _ in handles.values()], labels=[t for _, t in handles.values()],
                      fontsize="small", title="slopes: median head\n[heads' 95% bootstrap CIs]",
                      title_fontsize="small")
        if spare:  # the grid's last slot holds the legend
            slot = flat[-1]
            slot.set_visible(True)
            slot.axis("off")
            slot.legend(loc="center", **legend)
        else:
            _style.legend_below(fig, **legend)
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_probe_std [options]``: make just this figure
main = figure_main(NAME, __name__)
