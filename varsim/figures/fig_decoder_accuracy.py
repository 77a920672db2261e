"""Decoder figure: test accuracy vs set size N of the causal decoder, one panel per position (columns: NoPE, RoPE,
ALiBi) and normalization after attention (rows), one line per trained attention (softmax, its replicate, SSMax,
log-N, each in its colour, marker and label of the series registry, :mod:`varsim.figures.series`), for the first
arm of the experiment (the pre-registered grid, cosine decay; ``--decoder-results DIR`` draws another;
:mod:`varsim.figures.decoder`).

Mean over seeds with the Student-t interval of the summary as a band (cut to [0, 1]). The dotted line marks chance,
the dashed grey one the longest training set; the pre-registered primary endpoint's N is marked on the x axis.
Drawn from a decoder results directory (``varsim figures --decoder-results DIR``) or the committed summary of the
last full decoder run (:mod:`varsim.figures.decoder`); the statistics are the remedies summary's.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style, remedies

NAME = "fig_decoder_accuracy"
SOURCE = "decoder"  # the data it draws: a key of varsim.figures.SOURCES


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per (position, norm): accuracy vs N of every trained attention, with its interval."""
    from .decoder import DecoderSource, position_label

    src = (source if source is not None else DecoderSource(None, quick=quick)).load()
    summary, st = src["summary"], src["settings"]
    panels = remedies.panels_of(summary)
    positions = [a for a in st["architectures"] if any(p["architecture"] == a for p in panels)]
    norms = [n for n in st["norms"] if any(p["norm"] == n for p in panels)]
    labels = remedies.series_labels(summary)
    for p in panels:
        p["lines"] = [{**remedies.accuracy_line(g), "style": remedies.variant_style(g["variant"], g["kind"], g["role"]),
                       "label": labels[g["variant"]]}
                      for g in summary["groups"] if remedies.panel_key(g) == remedies.panel_key(p) and "accuracy" in g]
        p["chance"] = remedies.chance_of(st, p["task"])
        p["title"] = f"{position_label(p['architecture'])}, norm {p['norm']}"
    grid = [[next(p for p in panels if (p["architecture"], p["norm"]) == (a, n)) for a in positions] for n in norms]
    return {"name": NAME, **remedies.header(src, quick), "recipe_label": src["recipe_label"],
            **remedies.accuracy_fields(src), "primary_length": (st.get("primary") or {}).get("length"), "grid": grid}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Rows: norms; columns: positions; one shared legend below the panels."""
    n = _style.array(data["lengths"])
    conf = int(round(100 * data["confidence"]))
    rows = data["grid"]
    with _style.style(style):
        fig, axes = _style.subplots(len(rows), len(rows[0]), ax=ax, style=style, width=3.6, height=3.0, sharex=True,
                                    sharey=True)
        handles = {}
        for axrow, row in zip(axes, rows):
            for a, p in zip(axrow, row):
                a.set_title(p["title"], fontsize="medium")
                remedies.log2_axis(a, data["lengths"])
                for ln in p["lines"]:
                    handles.setdefault(ln["variant"], remedies.accuracy_band(a, n, ln, ln["style"], ln["label"]))
                handles.update(remedies.guide_lines(a, data["train_max"], p["chance"]))
                a.set_ylim(0, 1.02)
        _style.label_first_column(axes, "test accuracy")
        _style.label_last_row(axes, "set size $N$")
        guides = [handles.pop(k) for k in ("chance", "train") if k in handles]
        primary = (f"primary endpoint: the accuracy at N = {data['primary_length']}" if data.get("primary_length")
                   else None)
        _style.legend_below(fig, [*handles.values(), *guides], fontsize="small", title=primary,
                            title_fontsize="small")
        _style.suptitle(fig, f"Causal decoder trained with {data['recipe_label']}: accuracy vs N (mean, {conf}% t "
                        f"interval, {data['seeds']} seeds)", fontsize="medium")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_decoder_accuracy --decoder-results DIR``: make just this figure
main = figure_main(NAME, __name__)
