"""Remedies figure: test accuracy vs set size N per attention variant, one panel per task and depth.

Mean over seeds with the 95% Student-t interval as a band (cut to [0, 1]); trained variants solid, inference-only
maps (the softmax runs' weights with another weight map) dashed. The dotted line marks chance, the dashed grey one
the longest training length. Drawn from a remedies results directory (``varsim figures --remedies-results DIR``);
the statistics are :func:`varsim.experiments.remedies_summary.summarize_remedies`'s. The legend sits below the
panels, off the curves.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style
from .remedies import chance_of, draw_lines, family_rows, header, panel_grid, panel_lines, panels_of, source_of

NAME = "fig_remedies_accuracy"
SOURCE = "remedies"  # the data it draws: a key of varsim.figures.SOURCES


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per (task, architecture, norm, depth): accuracy vs N of every variant with its interval."""
    src = source_of(quick, source)
    summary, st = src["summary"], src["settings"]
    panels = panels_of(summary)
    for p in panels:
        p["lines"] = panel_lines(summary, p, "accuracy",
                                 extra=lambda g: {"learned": g["in_distribution"]["learned"]})
        p["chance"] = chance_of(st, p["task"])
    return {"name": NAME, **header(src, quick), "seeds": st["seeds"], "lengths": st["eval_lengths"],
            "train_max": st["train"].get("train_max", 16), "confidence": summary.get("confidence", 0.95),
            "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """One panel per task and depth; one shared legend below the panels."""
    n = _style.array(data["lengths"])
    conf = int(round(100 * data["confidence"]))
    with _style.style(style):
        rows = family_rows(data["panels"])
        fig, axes = panel_grid(rows, data["lengths"], ax=ax, style=style)
        handles = {}
        for axrow, row in zip(axes, rows):
            for ax, p in zip(axrow, row):
                draw_lines(ax, n, p, handles)
                handles["chance"] = ax.axhline(p["chance"], color="k", ls=":", lw=1.0, label="chance")
                handles["train"] = ax.axvline(data["train_max"], color="0.5", ls="--", lw=0.8,
                                              label=f"longest training set ($N = {data['train_max']}$)")
                ax.set_ylim(0, 1.02)
            axrow[0].set_ylabel("test accuracy")
        guides = [handles.pop(k) for k in ("chance", "uniform", "train") if k in handles]
        _style.legend_below(fig, [*handles.values(), *guides], fontsize="small")
        _style.suptitle(fig, f"Accuracy vs N per attention variant: mean and {conf}% t interval over {data['seeds']} "
                        "seeds (solid: trained with it; dashed: inference-only map on the softmax weights)",
                        fontsize="medium")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_remedies_accuracy --remedies-results DIR``: make just this figure
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
