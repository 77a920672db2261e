"""Remedies figure (why): softmax's errors split into ranking and dispersion errors vs N, per training recipe.

For the softmax models of each task, key encoding (rows) and training recipe (columns), the test examples it gets
wrong at each set size N, split by the last block's best head (the head with the largest mean weight on the correct
item at that N; :mod:`varsim.train.ranking`): a *ranking error* when that head's largest weight is on a wrong item,
a *dispersion error* when its largest weight is on the correct item but the answer is still wrong (the weight is
spread too thin over the others). The two stacked areas add up to 1 - accuracy (the line in softmax's colour). A
sharpening map keeps the order of the logits: it concentrates the weight on the item with the top logit, so it can
only repair dispersion errors. The coloured lines are the error left when the same weights are sharpened at
inference (log-N temperature; top-1, the limit of sharpening; colours, markers and labels of the series registry,
:mod:`varsim.figures.series`): where the ranking errors dominate, no sharpening helps. Means over the
seeds (the accuracy intervals are in ``fig_remedies_accuracy``); a secondary analysis (the primary endpoint is
``fig_remedies_primary``). The dashed grey line marks the longest training set.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style, remedies

NAME = "fig_remedies_decomposition"
SOURCE = "remedies"  # the data it draws: a key of varsim.figures.SOURCES
#: the decomposed model
BASELINE = "softmax"
#: the sharpening maps whose remaining error is drawn over the decomposition (those the grid has)
SHARPENING = ("logn_temperature", "topk1")
#: area colours: ranking errors, dispersion errors (greys: the series drawn over them keep their registry colours)
AREA_COLORS = {"ranking_error": "#5A5A5A", "dispersion_error": "#BDBDBD"}


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per (task, key encoding) x recipe: softmax's ranking and dispersion errors per N and the sharpening maps'
    error (1 - accuracy) with its interval."""
    src = remedies.source_of(quick, source)
    summary = src["summary"]
    groups = remedies.groups_by_key(summary)
    recipes = remedies.recipes_of(summary)
    rows = []
    for p in remedies.panels_of(summary):
        cells = []
        for r in recipes:
            base = groups.get((remedies.panel_key(p), r["key"], BASELINE))
            cell = {"recipe": r["key"], "recipe_label": r["label"], "title": f"{p['title']}; {r['label']}"}
            if base is not None and "ranking" in base:
                for k in ("ranking_error", "dispersion_error", "ranking_correct"):
                    cell[k] = base["ranking"][k]["mean"]
                cell["error"] = [None if a is None else 1.0 - a for a in base["accuracy"]["mean"]]
            cell["lines"] = []
            for v in SHARPENING:
                g = groups.get((remedies.panel_key(p), r["key"], v))
                if g is None or "accuracy" not in g:
                    continue
                acc = g["accuracy"]
                cell["lines"].append({"variant": v, "kind": g["kind"], "role": g["role"],
                                      "error": [1.0 - a for a in acc["mean"]],
                                      "ci_low": [1.0 - a for a in acc["ci_high"]],
                                      "ci_high": [1.0 - a for a in acc["ci_low"]]})
            cells.append(cell)
        rows.append({**p, "cells": cells})
    return {"name": NAME, **remedies.header(src, quick), **remedies.accuracy_fields(src),
            "families": remedies.family_variants(summary), "labels": remedies.series_labels(summary), "rows": rows}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Rows: task and key encoding; columns: recipe; one legend below."""
    from matplotlib.patches import Patch

    A = _style.array
    rows = data["rows"]
    ncols = max(len(r["cells"]) for r in rows)
    base, base_color = data["labels"][BASELINE], remedies.variant_style(BASELINE, "trained", "baseline")["color"]
    with _style.style(style):
        fig, axes = _style.subplots(len(rows), ncols, ax=ax, style=style, width=3.0, height=2.7, sharex=True,
                                    sharey=True)
        handles = {}
        for axrow, row in zip(axes, rows):
            for a, cell in zip(axrow, row["cells"]):
                a.set_title(cell["title"])
                remedies.log2_axis(a, data["lengths"])
                a.set_ylim(0.0, 1.0)
                if "ranking_error" in cell:
                    rank = A(cell["ranking_error"])
                    n = A(data["lengths"][:len(rank)])
                    top = rank + A(cell["dispersion_error"])
                    handles["ranking_error"] = a.fill_between(
                        n, 0.0, rank, color=AREA_COLORS["ranking_error"], alpha=0.45, lw=0,
                        label=f"{base}: ranking errors (largest weight on a wrong item)")
                    handles["dispersion_error"] = a.fill_between(
                        n, rank, top, color=AREA_COLORS["dispersion_error"], alpha=0.45, lw=0,
                        label=f"{base}: dispersion errors (largest weight on the correct item, too little of it)")
                    (handles["total"],) = a.plot(A(data["lengths"]), A(cell["error"]), lw=1.0,
                                                 color=base_color,
                                                 label=f"{base}: all errors (1 - accuracy)")
                for ln in cell["lines"]:
                    sty = remedies.variant_style(ln["variant"], ln["kind"], ln["role"])
                    n = A(data["lengths"])
                    label = data["labels"][ln["variant"]]
                    (h,) = a.plot(n, A(ln["error"]), color=sty["color"], ls=sty["ls"], marker=sty["marker"],
                                  label=f"{label}: the error left")
                    handles.setdefault(ln["variant"], h)
                handles.update(remedies.guide_lines(a, data["train_max"]))
            for a in axrow[len(row["cells"]):]:
                a.set_visible(False)
        _style.label_first_column(axes, "error rate")
        _style.label_last_row(axes, "set size $N$")
        order = ["ranking_error", "dispersion_error", "total", *(v for v in handles if v not in
                                                                 ("ranking_error", "dispersion_error", "total",
                                                                  "train")), "train"]
        shown = [handles[k] for k in order if k in handles]
        labels = [h.get_label() for h in shown]
        shown = [Patch(color=h.get_facecolor()[0], alpha=0.45) if k in AREA_COLORS else h
                 for k, h in zip([k for k in order if k in handles], shown)]
        _style.legend_below(fig, shown, labels, fontsize="small",
                            title="ranking error: the best head's largest weight on a wrong item (no sharpening "
                                  "repairs it); dispersion error: on the correct item, too little of it; lines: the "
                                  "error left after sharpening the same weights at inference",
                            title_fontsize="small")
        _style.suptitle(fig, "Why softmax fails at long N, per recipe: ranking or dispersion errors "
                        f"(means over {data['seeds']} seeds, secondary analysis)")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_remedies_decomposition --remedies-results DIR``: make just this figure
main = figure_main(NAME, __name__)
