"""Remedies figure: the attention weight on the correct item vs N per variant, one panel per task and depth.

The weight the best head puts on the correct item (``probes.attn_correct.max_head`` of each run: mean over the probe
sets), mean over seeds with its 95% Student-t interval as a band; the dotted line is 1/N, the weight of a uniform
map. Trained variants solid, inference-only maps dashed. Log-log axes: a weight decaying like 1/N is a line of slope
-1. Drawn from a remedies results directory; legend below the panels.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style
from .remedies import draw_lines, family_rows, header, panel_grid, panel_lines, panels_of, source_of

NAME = "fig_remedies_weight"
SOURCE = "remedies"  # the data it draws: a key of varsim.figures.SOURCES


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per panel: every variant's weight on the correct item per probed N, with its interval."""
    src = source_of(quick, source)
    summary, st = src["summary"], src["settings"]
    panels = panels_of(summary)
    for p in panels:
        p["lines"] = panel_lines(summary, p, "weight_correct")
    return {"name": NAME, **header(src, quick), "seeds": st["seeds"], "lengths": st["probe_lengths"],
            "train_max": st["train"].get("train_max", 16), "confidence": summary.get("confidence", 0.95),
            "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Weight on the correct item vs N (log-log) per variant; 1/N for reference; one legend below the panels."""
    n = _style.array(data["lengths"])
    conf = int(round(100 * data["confidence"]))
    with _style.style(style):
        rows = family_rows(data["panels"])
        fig, axes = panel_grid(rows, data["lengths"], ax=ax, style=style)
        handles = {}
        for axrow, row in zip(axes, rows):
            for ax, p in zip(axrow, row):
                draw_lines(ax, n, p, handles, band_floor=1e-6)
                handles["uniform"] = ax.plot(n, 1.0 / n, color="k", ls=":", lw=1.0,
                                             label="$1/N$ (uniform weights)")[0]
                handles["train"] = ax.axvline(data["train_max"], color="0.5", ls="--", lw=0.8,
                                              label=f"longest training set ($N = {data['train_max']}$)")
                ax.set_yscale("log")
                ax.set_ylim(top=1.05)
            axrow[0].set_ylabel("weight on the correct item")
        guides = [handles.pop(k) for k in ("chance", "uniform", "train") if k in handles]
        _style.legend_below(fig, [*handles.values(), *guides], fontsize="small")
        _style.suptitle(fig, f"Attention weight on the correct item (best head) vs N per attention variant: mean and "
                        f"{conf}% t interval over {data['seeds']} seeds (solid: trained with it; dashed: "
                        "inference-only map on the softmax weights)", fontsize="medium")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_remedies_weight --remedies-results DIR``: make just this figure
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
