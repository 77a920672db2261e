"""Real-model figure: how much of the output variance the i.i.d. law explains, vs N, for three heads per model.

The probe splits the variance over text windows of a head's attention output (per component, then averaged over
components) as ``var_total = var_iid + between``: ``var_iid = E[s^2 sum w^2]`` is what the i.i.d. law predicts
(s^2 = the window's own value variance), ``between = var_total - var_iid`` is the between-window part the i.i.d.
law does not have; part of it is a shared value offset per window (``var_offset``, THEORY 2.4). Each panel (one per
model and head, a model's heads in a row) shows ``var_total``, ``var_iid`` and ``var_offset`` vs N, log-log: the
vertical gap between two lines is their ratio (``var_iid / var_total`` the share the i.i.d. law explains, above 1
where it predicts more spread than the windows show); the ratios are in the figure's data (``iid_ratio``,
``offset_ratio``). An offset estimate at or below zero (a tiny offset, estimated as a difference) has no place on the
log axis: it is marked by an open triangle at the panel's bottom edge, at its N.

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
    """One panel per model and selected head, flowing row by row (a model's three heads in one row, the model named
    by the row's y label; two panels a row, each naming its model, at a paper column's width; ``ax``: that many
    axes), one legend below."""
    A = _style.array
    c = _style.COLORS
    rows = data["rows"]
    panels = [(row, hd) for row in rows for hd in row["heads"]]
    ncols = max(len(r["heads"]) for r in rows)
    with _style.style(style):
        narrow = ax is None and (_style.style_spec(style)["width"] or 9) < 4.5
        fig, flat = _style.axes_grid(len(panels), ax=ax, style=style, width=4.2, aspect=0.8 if narrow else 0.68,
                                     ncols=None if narrow else ncols)
        for ax, (row, hd) in zip(flat, panels):
            n = A(row["lengths"])
            ax.plot(n, A(hd["var_total"]), color=c[0], marker="o", label="measured var_total")
            ax.plot(n, A(hd["var_iid"]), color=c[1], marker="^", ls="--",
                    label=r"i.i.d. law $E[s^2\sum w^2]$ (var_iid)")
            _offsets(ax, n, A(hd["var_offset"]), c[3])
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            _style.log2_ticks(ax, float(n.min()), float(n.max()))
            if narrow:  # the model without its training steps; the rule's first word: broadest, sharpest, fastest
                name = ", ".join(part for part in row_name(row).split(", ") if not part.endswith(" steps"))
                ax.set_title(f"{name}\nlayer {hd['layer']}, head {hd['head']}, {hd['reason'].split()[0]}",
                             fontsize="small")
            else:  # the model names its row (y label); the rule and its number, the panel
                rule, _, value = hd["reason"].partition(": ")
                ax.set_title(f"layer {hd['layer']}, head {hd['head']}: {rule}\n{value}", fontsize="small")
            ax.set_xlabel("keys $N$" if narrow else "number of keys $N$")
            if ax.get_subplotspec() is None or ax.get_subplotspec().is_first_col():
                ax.set_ylabel("variance" if narrow else f"{row_name(row)}\nvariance over {row['windows']} windows")
        handles, labels = _legend_entries(flat)
        _style.legend_below(fig, handles, labels, fontsize="small",
                            title="on a log scale the gap between two lines is their ratio", title_fontsize="small")
        return _style.finish(fig, data, footer=footer)


#: the legend's words for the offsets a log axis cannot show
NOT_POSITIVE = "var_offset <= 0 (its estimate; no place on a log axis), marked at the bottom edge"


def _offsets(ax, n, offset, color) -> None:
    """``var_offset`` vs N: the positive estimates as a line, each estimate at or below zero (the between-window
    variance minus the within-window part can come out negative where the offset is tiny) as an open triangle at the
    bottom edge of the panel, at its N, instead of a line clipped to the axis floor."""
    positive = offset > 0
    ax.plot(n, np.where(positive, offset, np.nan), color=color, marker="D", ls=":",
            label="shared value offset (var_offset)")
    shown = ~positive & np.isfinite(offset)
    if shown.any():
        ax.plot(n[shown], np.full(int(shown.sum()), 0.03), transform=ax.get_xaxis_transform(), ls="none", marker="v",
                mfc="white", color=color, clip_on=False, label=NOT_POSITIVE)


def _legend_entries(axes) -> tuple[list, list]:
    """The legend's handles and labels over all panels, each label once (the marks of offsets <= 0 only where a
    panel has one)."""
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


#: ``python -m varsim.figures.fig_probe_decomposition [options]``: make just this figure
main = figure_main(NAME, __name__)
