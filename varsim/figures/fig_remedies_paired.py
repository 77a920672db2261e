"""Remedies figure: paired accuracy differences variant − softmax vs N, with intervals and Holm-corrected tests.

Per seed, a variant minus softmax at the same N (same initialization, data and test sets; the same weights for the
inference-only maps), mean over seeds with its 95% Student-t interval. A filled marker: the paired t-test rejects
"no difference" at 5% after Holm's step-down correction over every paired test of the grid (all tasks, depths,
variants and N, as :func:`varsim.experiments.remedies_summary.summarize_remedies` computes it); an open marker:
not significant after the correction. One panel per task and depth; legend below the panels.
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main

from . import _style
from .remedies import family_rows, header, panel_grid, panels_of, source_of, variant_label, variant_style

NAME = "fig_remedies_paired"
SOURCE = "remedies"  # the data it draws: a key of varsim.figures.SOURCES
ALPHA = 0.05


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per panel: every variant's paired difference against softmax with its Holm-adjusted p-values."""
    src = source_of(quick, source)
    summary, st = src["summary"], src["settings"]
    panels = panels_of(summary)
    for p in panels:
        p["diffs"] = [
            {"variant": d["variant"], "kind": d["kind"], "n_seeds": len(d["seeds"]), "mean": d["mean_diff"],
             "ci_low": d["ci_low"], "ci_high": d["ci_high"], "p_ttest": d["p_ttest"], "p_holm": d["p_holm"]}
            for d in summary["paired"]
            if (d["task"], d["architecture"], d["norm"], d["depth"]) == (p["task"], p["architecture"], p["norm"],
                                                                         p["depth"]) and "mean_diff" in d]
    return {"name": NAME, **header(src, quick), "seeds": st["seeds"], "lengths": st["eval_lengths"],
            "train_max": st["train"].get("train_max", 16), "alpha": ALPHA,
            "confidence": summary.get("confidence", 0.95), "correction": summary["correction"], "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Paired differences vs N, the variants side by side at each N; one shared legend below the panels."""
    from matplotlib.lines import Line2D

    A = _style.array
    n = A(data["lengths"])
    conf = int(round(100 * data["confidence"]))
    with _style.style(style):
        rows = family_rows(data["panels"], "diffs")
        fig, axes = panel_grid(rows, data["lengths"], ax=ax, style=style)
        handles = {}
        for ax, p in ((a, q) for axrow, row in zip(axes, rows) for a, q in zip(axrow, row)):
            k = len(p["diffs"])
            for j, d in enumerate(p["diffs"]):
                sty = variant_style(d["variant"], p["order"], d["kind"])
                shift = 2.0 ** (0.5 * (j - (k - 1) / 2) / max(k, 1))  # side by side within a third of an octave
                mean, lo, hi = A(d["mean"]), A(d["ci_low"]), A(d["ci_high"])
                sig = A(d["p_holm"]) <= data["alpha"]  # NaN (no test) counts as not significant
                x = n * shift
                ax.errorbar(x, mean, np.abs(np.vstack([mean - lo, hi - mean])), fmt="none", ecolor=sty["color"],
                            elinewidth=1.0)
                (h,) = ax.plot(x, mean, color=sty["color"], ls=sty["ls"], lw=0.8, alpha=0.7,
                               marker=sty["marker"], ms=0, label=variant_label(d["variant"], d["kind"]))
                ax.plot(x[sig], mean[sig], ls="none", marker=sty["marker"], color=sty["color"])
                ax.plot(x[~sig], mean[~sig], ls="none", marker=sty["marker"], color=sty["color"], mfc="white")
                handles.setdefault(d["variant"], Line2D([], [], color=sty["color"], ls=sty["ls"],
                                                        marker=sty["marker"], label=h.get_label()))
            ax.axhline(0, color="k", lw=0.9)
            ax.axvline(data["train_max"], color="0.5", ls="--", lw=0.8)
        for axrow in axes:
            axrow[0].set_ylabel("accuracy difference\nvariant − softmax")
        extra = [Line2D([], [], color="0.3", marker="o", ls="none",
                        label=f"Holm-adjusted paired t-test p ≤ {data['alpha']:g}"),
                 Line2D([], [], color="0.3", marker="o", mfc="white", ls="none",
                        label="not significant after Holm"),
                 Line2D([], [], color="0.5", ls="--", lw=0.8,
                        label=f"longest training set ($N = {data['train_max']}$)")]
        _style.legend_below(fig, [*handles.values(), *extra], fontsize="small")
        _style.suptitle(fig, f"Paired differences variant − softmax (same seed; same weights for inference-only maps), "
                     f"{conf}% t intervals over {data['seeds']} seeds;\nfilled marker: significant at "
                     f"{data['alpha']:g} after the Holm correction ({data['correction']})", fontsize="medium")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_remedies_paired --remedies-results DIR``: make just this figure
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
