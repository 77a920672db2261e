"""Decoder figure (the answer): the gain of SSMax and log-N over softmax at N = 1024 in the causal decoder, per
position, normalization after attention and training recipe.

The pre-registered primary endpoint (:data:`varsim.experiments.decoder_grid.PRIMARY_ENDPOINT`): per position (x
axis: NoPE, RoPE, ALiBi) and normalization (rows), the paired accuracy difference of each trained variant against
softmax at N = 1024 (same seed index: same test sets), mean over the seeds with its 95% Student-t interval. A filled
marker: significant after Holm's step-down correction over its arm's primary family (2 variants x 3 positions x 2
norms); open: not significant. One column per arm of the experiment (:mod:`varsim.figures.decoder`): the
pre-registered grid (cosine decay) and the recipe check (a constant learning rate), each with its own family. The
null control (softmax trained again from other streams), judged by its own unadjusted test, must sit at 0, and is
drawn in red when it does not. Every series in its colour, marker and label of the series registry
(:mod:`varsim.figures.series`). Numbers: each arm's ``summary.json`` ``primary`` and
``controls`` rows.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style, remedies

NAME = "fig_decoder_primary"
SOURCE = "decoder"  # the data it draws: a key of varsim.figures.SOURCES
#: width of one position's slot on the x axis (the series are dodged inside it)
SLOT = 0.7


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per norm (rows) and arm (columns): per variant and the null control, the difference at the primary length
    per position."""
    from .decoder import DecoderSource, position_label

    arms = (source if source is not None else DecoderSource(None, quick=quick)).arms()
    first = arms[0]
    st = first["settings"]
    ep = first["summary"].get("primary_endpoint")
    if not ep:
        raise ValueError(f"decoder_results: {first['source']} has no pre-registered primary endpoint")
    positions = list(st["architectures"])
    norms = list(st["norms"])
    families = remedies.family_variants(first["summary"])
    labels = {k: v for arm in arms for k, v in remedies.series_labels(arm["summary"]).items()}
    grid = []
    for norm in norms:
        row = []
        for arm in arms:
            summary = arm["summary"]
            roles = {g["variant"]: (g["kind"], g["role"]) for g in summary["groups"]}
            rows = {(r["architecture"], r["norm"], r["variant"]): r
                    for r in (*summary["primary"], *summary["controls"])}
            variants = list(dict.fromkeys(r["variant"] for r in summary["controls"])) + list(ep["variants"])
            series = []
            for v in variants:
                got = [rows.get((a, norm, v)) for a in positions]
                if not any(got):
                    continue
                series.append(remedies.gain_series(v, *roles[v], got))
            row.append({"norm": norm, "recipe": arm["recipe"], "recipe_label": arm["recipe_label"],
                        "n_comparisons": (summary.get("primary_endpoint") or {}).get("n_comparisons"),
                        "title": f"{arm['recipe_label']}; norm {norm}", "series": series})
        grid.append(row)
    head = remedies.header(first, quick)
    head["footer"] = "; ".join(a["footer"] for a in arms)
    head["smoke_test"] = any(bool(a["smoke_test"]) for a in arms)
    return {"name": NAME, **head, "seeds": st["seeds"], "length": ep["length"],
            "alpha": first["summary"]["alpha"], "confidence": first["summary"]["confidence"],
            "positions": [{"architecture": a, "label": position_label(a)} for a in positions],
            "families": families, "labels": labels, "grid": grid}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Rows: norms; columns: training recipes; x: positions; one legend below."""
    import numpy as np

    conf = int(round(100 * data["confidence"]))
    x = np.arange(len(data["positions"]), dtype=float)
    rows = data["grid"]
    with _style.style(style):
        fig, axes = _style.subplots(len(rows), len(rows[0]), ax=ax, style=style, width=3.8, height=3.0, sharex=True,
                                    sharey=True)
        handles, failed = {}, False
        ms = 1.25 * _style.plt.rcParams["lines.markersize"]
        for axrow, row in zip(axes, rows):
            for a, p in zip(axrow, row):
                a.set_title(p["title"], fontsize="medium")
                a.axhline(0.0, color="k", lw=0.8)
                for j, s in enumerate(p["series"]):
                    sty = remedies.variant_style(s["variant"], s["kind"], s["role"])
                    failed |= remedies.draw_gain(a, x + remedies.dodge(j, len(p["series"]), SLOT), s, sty, ms)
                    handles.setdefault(s["variant"], remedies.gain_entry(s, sty, ms, data["labels"][s["variant"]]))
                _style.categories(a, [q["label"] for q in data["positions"]])
        _style.label_last_row(axes, "positional encoding")
        _style.label_first_column(axes, f"gain over softmax\nat N = {data['length']}")
        family = rows[0][0]["n_comparisons"]
        remedies.gain_legend(fig, list(handles.values()), data["alpha"], failed,
                             f"filled: significant after Holm over each recipe's {family} comparisons; the null "
                             "control must sit at 0")
        _style.suptitle(fig, f"Causal decoder, primary endpoint: accuracy gain over softmax at N = {data['length']} "
                        f"(mean, {conf}% t interval, {data['seeds']} paired seeds)")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_decoder_primary --decoder-results DIR [DIR ...]``: make just this figure
main = figure_main(NAME, __name__)
