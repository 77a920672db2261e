"""Real-model figure: how much of the output variance the i.i.d. law explains, vs N, for three heads per model.

The probe splits the variance over text windows of a head's attention output (per component, then averaged over
components) as ``var_total = var_iid + between``: ``var_iid = E[s^2 sum w^2]`` is what the i.i.d. law predicts
(s^2 = the window's own value variance), ``between = var_total - var_iid`` is the between-window part the i.i.d.
law does not have; part of it is a shared value offset per window (``var_offset``, THEORY 2.4). Per head, the upper
panel shows ``var_total`` and ``var_iid`` (log-log), the lower one the ratios ``var_iid / var_total`` (the share
the i.i.d. law explains; the between-window share is one minus it, and a ratio above 1 means the i.i.d. law predicts
more spread than the windows show) and ``var_offset / var_total``, on a log scale.

The heads are chosen by a fixed rule from the data, so the same rule picks them in any probe file: in the first
probed layer, the head whose ``E[sum w^2]`` falls fastest (the broadest attention: where the i.i.d. law should do
best) and the one whose ``E[sum w^2]`` falls slowest (the sharpest head); then, over all probed layers, the head
whose output std falls fastest (the strongest vanishing-variance signal), skipping heads already shown.
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .probe import header, model_label, panel_name, row_name, source_of, title_name

NAME = "fig_probe_decomposition"
SOURCE = "probe"  # the data it draws: a key of varsim.figures.SOURCES


def select_heads(data: dict) -> list[dict]:
    """The three (layer index, head, reason) this figure shows for one probe result (see the module docstring)."""
    y2 = np.asarray(data["slopes"]["y2"]["value"], dtype=float)  # (L, H)
    std = np.asarray(data["slopes"]["std"]["value"], dtype=float)
    first = y2[0]
    picks = [(0, int(np.nanargmin(first)), f"broadest in layer {data['layers'][0]}: "
                                           f"E[sum w^2] slope {np.nanmin(first):+.2f}"),
             (0, int(np.nanargmax(first)), f"sharpest in layer {data['layers'][0]}: "
                                           f"E[sum w^2] slope {np.nanmax(first):+.2f}")]
    for flat in np.argsort(np.where(np.isfinite(std), std, np.inf), axis=None):
        i, h = np.unravel_index(flat, std.shape)
        if (int(i), int(h)) not in [(p[0], p[1]) for p in picks]:
            picks.append((int(i), int(h), f"fastest std decay: slope {std[i, h]:+.2f}"))
            break
    return [{"layer_index": i, "layer": data["layers"][i], "head": h, "reason": why} for i, h, why in picks]


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per model: the selected heads' var_total, var_iid, var_offset vs N and their ratios to var_total."""
    models = source_of(source)
    rows = []
    for m in models:
        d = m["data"]
        pl = {k: np.asarray(d["per_length"][k], dtype=float) for k in ("var_total", "var_iid", "var_offset")}
        heads = []
        for sel in select_heads(d):
            i, h = sel["layer_index"], sel["head"]
            tot, iid, off = (pl[k][:, i, h] for k in ("var_total", "var_iid", "var_offset"))
            heads.append({**sel, "var_total": tot.tolist(), "var_iid": iid.tolist(), "var_offset": off.tolist(),
                          "iid_ratio": (iid / tot).tolist(), "offset_ratio": (off / tot).tolist()})
        rows.append({"model": model_label(d), "name": panel_name(d), "title": title_name(d), "lengths": d["lengths"],
                     "windows": d["settings"]["windows"],
                     "heads": heads})
    return {"name": NAME, **header(models, quick), "rows": rows}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data, with the provenance footer."""
    A = _style.array
    c = _style.COLORS
    rows = data["rows"]
    ncols = max(len(r["heads"]) for r in rows)
    with _style.style(style):
        narrow = ax is None and (_style.style_spec(style)["width"] or 9) < 4.5
        if narrow:  # a paper column: one row per head, variance and ratios side by side
            width = _style.style_spec(style)["width"]
            fig = _style.plt.figure(figsize=(width, 0.45 * width * len(rows) * ncols), layout="constrained")
            subs = fig.subfigures(len(rows) * ncols, 1, squeeze=False)[:, 0]
            grid = np.array([sub.subplots(1, 2) for sub in subs], dtype=object)
            pairs = [(grid[r * ncols:(r + 1) * ncols, 0], grid[r * ncols:(r + 1) * ncols, 1])
                     for r in range(len(rows))]
        else:
            fig, axes = _style.subplots(2 * len(rows), ncols, ax=ax, style=style, width=4.2, height=2.7,
                                        gridspec_kw={"height_ratios": [1.4, 1] * len(rows)})
            pairs = [(axes[2 * r], axes[2 * r + 1]) for r in range(len(rows))]
        for r, row in enumerate(rows):
            n = A(row["lengths"])
            top, bottom = pairs[r]
            for k, hd in enumerate(row["heads"]):
                ax, bx = top[k], bottom[k]
                ax.plot(n, A(hd["var_total"]), color=c[0], marker="o", label="measured var_total")
                ax.plot(n, A(hd["var_iid"]), color=c[1], marker="^", ls="--",
                        label=r"i.i.d. law $E[s^2\sum w^2]$")
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                _style.log2_ticks(ax, float(n.min()), float(n.max()))
                if narrow:
                    _style.suptitle(subs[r * ncols + k], f"{row_name(row)}, layer {hd['layer']}, "
                                    f"head {hd['head']}: {hd['reason']}", fontsize="small")
                else:
                    name = row.get("title", row["model"])
                    ax.set_title(f"{name}\nlayer {hd['layer']}, head {hd['head']} ({hd['reason']})",
                                 fontsize="medium")
                bx.axhline(1.0, color="0.3", lw=0.8)
                bx.plot(n, A(hd["iid_ratio"]), color=c[1], marker="^", ls="--", label="i.i.d. law / measured")
                bx.plot(n, A(hd["offset_ratio"]), color=c[3], marker="D", ls=":", label="shared offset / measured")
                bx.set_xscale("log", base=2)
                bx.set_yscale("log")
                _style.log2_ticks(bx, float(n.min()), float(n.max()))
                bx.set_xlabel("number of keys $N$")
                if narrow:
                    ax.set_ylabel("variance")
                    bx.set_ylabel("ratio to var_total")
                    ax.set_xlabel("number of keys $N$")
                elif k == 0:
                    ax.set_ylabel(f"variance over {row['windows']} windows")
                    bx.set_ylabel("ratio to var_total")
                if k == 0 and r == 0 and narrow:
                    handles = [*ax.get_legend_handles_labels()[0], *bx.get_legend_handles_labels()[0][1:]]
                elif k == 0 and not narrow:
                    ax.legend(loc="best", fontsize="small")
                    bx.legend(loc="best", fontsize="small")
            for ax in (*top[len(row["heads"]):], *bottom[len(row["heads"]):]):
                ax.set_visible(False)
        if narrow:
            _style.legend_below(fig, handles, fontsize="small")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_probe_decomposition [options]``: make just this figure
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
