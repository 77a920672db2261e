"""Real-model figure, Figure-1 analogue: spread of the query's attention output across text windows vs N.

For each probed model (rows; default: the committed SmolLM2 and MiniLM results) and its first two probed layers
(columns): the standard deviation over windows of real text of one fixed component (component 0) of each head's
attention output (before the output projection) at the query position, vs the number N of keys, log-log. Thin
lines: the heads; blue: their median. Green: the measured std as the root mean square over all ``d_head``
components, ``sqrt(var_total)``, median over heads; vermillion (dashed): what the i.i.d. law predicts for it,
``sigma * sqrt(E[sum w^2])`` with sigma^2 the within-window variance of the values (``sqrt(var_iid)``, per window,
then averaged, as the probe computes it). The probe stores the i.i.d. part only averaged over components, so the
prediction is drawn for the component average, next to the fixed component it summarises. The legend gives the
median over heads of the probe's fitted log-log slopes (with their range over heads); the dotted line is
``N^(-1/2)``, the decay of an average of N independent values.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _style
from .probe import header, model_label, source_of

NAME = "fig_probe_std"
#: How many of the probed layers (the first ones) get a panel.
N_LAYERS = 2
COMPONENT = 0


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
        for i, layer in enumerate(d["layers"][:N_LAYERS]):
            s_std = np.asarray(sl["std"]["value"][i], dtype=float)
            s_iid = np.asarray(sl["std_iid"]["value"][i], dtype=float)
            panels.append({
                "layer": layer,
                "component_per_head": comp[:, i, :].T.tolist(),  # (H, nN)
                "component_median": np.median(comp[:, i, :], axis=1).tolist(),
                "std_median": np.median(std[:, i, :], axis=1).tolist(),
                "iid_median": np.median(iid[:, i, :], axis=1).tolist(),
                "slope_std": {"median": float(np.median(s_std)), "min": float(s_std.min()), "max": float(s_std.max())},
                "slope_iid": {"median": float(np.median(s_iid)), "min": float(s_iid.min()), "max": float(s_iid.max())},
            })
        rows.append({"model": model_label(d), "lengths": d["lengths"], "windows": d["settings"]["windows"],
                     "n_head": d["n_head"], "panels": panels})
    return {"name": NAME, **header(models, quick), "component": COMPONENT, "rows": rows}


def _slope_text(s: dict) -> str:
    return f"slope {s['median']:+.2f} (heads {s['min']:+.2f}..{s['max']:+.2f})"


def plot(data: dict, outdir, *, style=None, footer: bool = False) -> list:
    """Draw the figure from :func:`compute`'s data; returns the PNG and PDF paths."""
    return _style.draw_and_save(draw, data, outdir, NAME, style=style, footer=footer)


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data, with the provenance footer."""
    A = _style.array
    rows = data["rows"]
    ncols = max(len(r["panels"]) for r in rows)
    c = _style.COLORS
    with _style.style(style):
        fig, axes = _style.subplots(len(rows), ncols, ax=ax, style=style, width=4.6, height=4.1,
                                        layout="constrained")
        for row, axrow in zip(rows, axes):
            n = A(row["lengths"])
            for ax, p in zip(axrow, row["panels"]):
                for k, curve in enumerate(p["component_per_head"]):
                    ax.plot(n, A(curve), color=c[0], lw=0.6, alpha=0.35,
                            label=f"component {data['component']}, each of {row['n_head']} heads" if k == 0 else None)
                ax.plot(n, A(p["component_median"]), color=c[0], marker="o",
                        label=f"component {data['component']}, median over heads")
                ax.plot(n, A(p["std_median"]), color=c[2], marker="s",
                        label=f"RMS over components: {_slope_text(p['slope_std'])}")
                ax.plot(n, A(p["iid_median"]), color=c[1], marker="^", ls="--",
                        label=rf"i.i.d. law $\sigma\sqrt{{E[\sum w^2]}}$: {_slope_text(p['slope_iid'])}")
                y0 = A(p["iid_median"])[0]
                ax.plot(n, y0 * np.sqrt(n[0] / n), color="0.3", ls=":", lw=1.0, label=r"$\propto N^{-1/2}$")
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                _style.log2_ticks(ax, float(n.min()), float(n.max()))
                ax.set_title(f"{row['model']}, layer {p['layer']}")
                ax.set_xlabel("number of keys $N$")
                ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), fontsize="small", ncol=1)
            axrow[0].set_ylabel(f"std over {row['windows']} text windows")
            for ax in axrow[len(row["panels"]):]:
                ax.set_visible(False)
        return _style.finish(fig, data, footer=footer)


def main(argv=None) -> int:
    """Make just this figure (``python -m varsim.figures.<name> [options]``)."""
    from varsim.figures import main as make_main

    return make_main(["--only", NAME, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
