"""Remedies figure (the answer): the gain of each remedy over softmax at N = 1024, per training recipe.

The pre-registered primary endpoint (:data:`varsim.experiments.remedies.PRIMARY_ENDPOINT`): per task, key encoding
and training recipe (x axis: schedule and peak learning rate), each remedy's paired accuracy difference against
softmax at N = 1024 (same seed index: same test sets; the inference-only maps on the softmax models' own weights),
mean over the seeds with its 95% Student-t interval. A filled marker: significant after Holm's step-down correction
over the primary family only (every remedy x task x recipe x key encoding); open: not significant. Trained remedies
in the upper row, inference-only maps in the lower one. The controls, judged by their own unadjusted tests: the
oracle (all weight on the correct item: the ceiling of any attention-side remedy) is a bar with its interval as a
band; the null control of the row (softmax trained again; softmax summed in another key order) is a marker that must
sit at 0. A control that fails its test is drawn in red. Every series in its colour, marker and label of the series
registry (:mod:`varsim.figures.series`). Numbers:
``summary.json``'s ``primary`` and ``controls`` rows.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style, remedies

NAME = "fig_remedies_primary"
SOURCE = "remedies"  # the data it draws: a key of varsim.figures.SOURCES
#: width of one recipe's slot on the x axis (the remedies are dodged inside it)
SLOT = 0.76


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per panel (task, key encoding): per remedy and control, the difference at the primary length per recipe."""
    src = remedies.source_of(quick, source)
    summary, st = src["summary"], src["settings"]
    ep = summary.get("primary_endpoint")
    if not ep:
        raise ValueError(f"remedies_results: {src['source']} has no pre-registered primary endpoint")
    recipes = remedies.recipes_of(summary)
    roles = {g["variant"]: (g["kind"], g["role"]) for g in summary["groups"]}
    families = remedies.family_variants(summary)
    rows = {(remedies.panel_key(r), r["recipe"], r["variant"]): r for r in summary["primary"]}
    rows.update({(remedies.panel_key(r), r["recipe"], r["variant"]): r for r in summary["controls"]})
    controls = list(dict.fromkeys(r["variant"] for r in summary["controls"]))
    labels = [v for k, _ in remedies.FAMILIES for v in families[k]] + controls
    panels = remedies.panels_of(summary)
    for p in panels:
        key = remedies.panel_key(p)
        p["series"] = []
        for v in labels:
            got = [rows.get((key, r["key"], v)) for r in recipes]
            if not any(got):
                continue
            p["series"].append(remedies.gain_series(v, *roles[v], got))
    return {"name": NAME, **remedies.header(src, quick), "seeds": st["seeds"], "length": ep["length"],
            "alpha": summary["alpha"], "confidence": summary["confidence"], "correction": ep["correction"],
            "recipes": recipes, "families": families, "labels": remedies.series_labels(summary), "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Rows: trained remedies, inference-only maps; columns: task and key encoding; one legend below."""
    import numpy as np
    from matplotlib.lines import Line2D

    conf = int(round(100 * data["confidence"]))
    fams = [(k, words) for k, words in remedies.FAMILIES if data["families"].get(k)]
    x = np.arange(len(data["recipes"]), dtype=float)
    # short recipe names under the ticks (a narrow column has room for about 7 characters each)
    ticks = [r["label"].replace("constant", "const.").replace("cosine", "cos.").replace(", ", "\n")
             for r in data["recipes"]]
    with _style.style(style):
        fig, axes = _style.subplots(len(fams), len(data["panels"]), ax=ax, style=style, width=3.6, height=3.2,
                                    sharex=True, sharey=True)
        handles, failed = {}, False
        ms = 1.25 * _style.plt.rcParams["lines.markersize"]
        for (kind, words), axrow in zip(fams, axes):
            for a, p in zip(axrow, data["panels"]):
                a.set_title(f"{p['title']}: {words}")
                a.axhline(0.0, color="k", lw=0.8)
                mine = [s for s in p["series"] if s["role"] == "remedy" and s["kind"] == kind]
                nulls = [s for s in p["series"] if s["role"] == "negative_control" and s["kind"] == kind]
                ceilings = [s for s in p["series"] if s["role"] == "positive_control"]
                for s in ceilings:
                    sty = remedies.variant_style(s["variant"], s["kind"], s["role"])
                    for i, (m, lo, hi, ok) in enumerate(zip(s["mean_diff"], s["ci_low"], s["ci_high"], s["behaves"])):
                        if m is None:
                            continue
                        color = sty["color"] if ok else remedies.FAIL_COLOR
                        failed |= not ok
                        a.fill_between([x[i] - SLOT / 2, x[i] + SLOT / 2], lo, hi, color=color, alpha=0.15, lw=0)
                        a.hlines(m, x[i] - SLOT / 2, x[i] + SLOT / 2, color=color, lw=2.0)
                    handles.setdefault(s["variant"], (Line2D([], [], color=sty["color"], lw=2.0),
                                                      data["labels"][s["variant"]]))
                dodged = nulls + mine
                for j, s in enumerate(dodged):
                    sty = remedies.variant_style(s["variant"], s["kind"], s["role"])
                    failed |= remedies.draw_gain(a, x + remedies.dodge(j, len(dodged), SLOT), s, sty, ms)
                    handles.setdefault(s["variant"], remedies.gain_entry(s, sty, ms, data["labels"][s["variant"]]))
                _style.categories(a, ticks)
        _style.label_last_row(axes, "training recipe")
        _style.label_first_column(axes, f"gain over softmax\nat N = {data['length']}")
        order = [v for k, _ in fams for v in data["families"][k]]
        entries = [handles[v] for v in order if v in handles] + [h for v, h in handles.items() if v not in order]
        remedies.gain_legend(fig, entries, data["alpha"], failed,
                             f"filled: significant after {data['correction']}; bar: the oracle (the ceiling)")
        _style.suptitle(fig, f"Primary endpoint: accuracy gain over softmax at N = {data['length']} per training "
                        f"recipe (mean, {conf}% t interval, {data['seeds']} paired seeds)")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_remedies_primary --remedies-results DIR``: make just this figure
main = figure_main(NAME, __name__)
