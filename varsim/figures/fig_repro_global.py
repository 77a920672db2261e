"""Reproduction figure, Figure-3 analogue: global (across-feature) mean and variance of the attention output vs N.

Per evaluation set, the mean and the variance across the D features of the query token's attention output, averaged
over sets and then over seeds, for the baseline (no norm) and the LayerNorm model: the attention output before the
norm (solid), after it (dashed; LayerNorm fixes both to 0 and ~1 per vector), and the input to the next layer
(dotted; the block output, where the residual stream and the MLP enter). One row per task and architecture; the
spread over seeds as bars (the means, set a little apart in N so they do not cover each other) and bands (the
variances).
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .fig_repro_accuracy import cells_by_panel, header, source_of
from .series import norm_style

NAME = "fig_repro_global"
SOURCE = "reproduction"  # the data it draws: a key of varsim.figures.SOURCES
NORMS = ("none", "layernorm")
# (probe key, legend text, line style); "post" is drawn only where there is a norm
STAGES = (("pre", "attention output", "-"), ("post", "after the norm", "--"), ("next", "next-layer input", ":"))


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Seed-averaged global mean and variance vs N for each stage, task, architecture and norm."""
    res = source_of(quick, seed, source)
    st = res["settings"]
    rows = []
    for task, arch, cells in cells_by_panel(res, NORMS):
        lines = []
        for norm, recs in cells:
            for stage, _, _ in STAGES:
                if stage == "post" and norm == "none":
                    continue
                entry = {"norm": norm, "stage": stage}
                for stat in ("mean", "var"):
                    per_seed = np.array([r["probes"]["global"][stage][stat] for r in recs], dtype=float)
                    entry[stat] = per_seed.mean(axis=0).tolist()
                    entry[f"{stat}_min"] = per_seed.min(axis=0).tolist()
                    entry[f"{stat}_max"] = per_seed.max(axis=0).tolist()
                lines.append(entry)
        rows.append({"task": task, "architecture": arch, "lines": lines})
    return {"name": NAME, **header(res, quick), "seeds": st["seeds"],
            "lengths": st["probe_lengths"], "rows": rows}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Rows: task and architecture (named on the left); columns: the mean and the variance across features; one
    legend below. The means' spreads over seeds overlap, so they are drawn as bars, set a little apart in N; the
    variances' as bands."""
    A = _style.array
    n = A(data["lengths"])
    rows = data["rows"]
    labels = {s: t for s, t, _ in STAGES}
    styles = {s: ls for s, _, ls in STAGES}
    with _style.style(style):
        fig, axes = _style.subplots(len(rows), 2, ax=ax, style=style, width=4.8, height=2.9, sharex=True,
                                    layout="constrained")
        narrow = fig.get_figwidth() < 4.5
        for r, ((ax_m, ax_v), row) in enumerate(zip(axes, rows)):
            lines = row["lines"]
            for k, ln in enumerate(lines):
                sty = norm_style(ln["norm"])
                kw = dict(color=sty["color"], marker=sty["marker"], ls=styles[ln["stage"]],
                          label=f"{ln['norm']}: {labels[ln['stage']]}")
                m = A(ln["mean"])
                shift = 2.0 ** (0.09 * (k - (len(lines) - 1) / 2))  # side by side at each N (log2 axis)
                ax_m.errorbar(n * shift, m, np.vstack([m - A(ln["mean_min"]), A(ln["mean_max"]) - m]),
                              elinewidth=0.8, capsize=0, **kw)
                ax_v.plot(n, A(ln["var"]), **kw)
                ax_v.fill_between(n, A(ln["var_min"]), A(ln["var_max"]), color=sty["color"], alpha=0.12, lw=0)
            where = f"{row['task']}, {row['architecture'].replace('_', ' ')}"
            ax_m.set_ylabel(f"{where}\nmean" if not narrow else f"{row['task']},\n{row['architecture']}"
                            .replace("_", " "))
            ax_v.set_ylabel("variance")
            ax_v.set_yscale("log")
            for ax in (ax_m, ax_v):
                ax.set_xscale("log", base=2)
                _style.log2_ticks(ax, float(n.min()), float(n.max()))
            if r == 0:
                ax_m.set_title("mean across features" if not narrow else "mean")
                ax_v.set_title("variance across features" if not narrow else "variance")
        for ax in axes[-1]:
            ax.set_xlabel("set size $N$")
        fig.align_ylabels(list(axes[:, 0]))
        handles, texts = axes[0][0].get_legend_handles_labels()
        _style.legend_below(fig, handles, texts, fontsize="small",
                            title=f"bars and bands: range over the {data['seeds']} seeds", title_fontsize="small")
        _style.suptitle(fig, f"Query-token statistics across features, mean over sets and {data['seeds']} seeds",
                        fontsize="medium")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_repro_global [options]``: make just this figure
main = figure_main(NAME, __name__)
