"""Decoder figure: test accuracy vs set size N of the causal decoder, one panel per position (columns: NoPE, RoPE,
ALiBi) and normalization after attention (rows), one line per trained attention (softmax, its replicate, SSMax,
log-N), for the first arm of the experiment (the pre-registered grid, cosine decay; ``--decoder-results DIR``
draws another; :mod:`varsim.figures.decoder`).

Mean over seeds with the Student-t interval of the summary as a band (cut to [0, 1]). The dotted line marks chance,
the dashed grey one the longest training set; the pre-registered primary endpoint's N is marked on the x axis.
Drawn from a decoder results directory (``varsim figures --decoder-results DIR``) or the committed summary of the
last full decoder run (:mod:`varsim.figures.decoder`); the statistics are the remedies summary's.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style
from .remedies import (
    accuracy_line,
    chance_of,
    family_variants,
    header,
    panel_key,
    panels_of,
    variant_label,
    variant_style,
)

NAME = "fig_decoder_accuracy"
SOURCE = "decoder"  # the data it draws: a key of varsim.figures.SOURCES


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per (position, norm): accuracy vs N of every trained attention, with its interval."""
    from .decoder import DecoderSource, position_label

    src = (source if source is not None else DecoderSource(None, quick=quick)).load()
    summary, st = src["summary"], src["settings"]
    panels = panels_of(summary)
    positions = [a for a in st["architectures"] if any(p["architecture"] == a for p in panels)]
    norms = [n for n in st["norms"] if any(p["norm"] == n for p in panels)]
    families = family_variants(summary)
    for p in panels:
        p["lines"] = [{**accuracy_line(g), "style": variant_style(g["variant"], g["kind"], g["role"], families),
                       "label": variant_label(g["variant"], g["kind"], g["role"])}
                      for g in summary["groups"] if panel_key(g) == panel_key(p) and "accuracy" in g]
        p["chance"] = chance_of(st, p["task"])
        p["title"] = f"{position_label(p['architecture'])}, norm {p['norm']}"
    grid = [[next(p for p in panels if (p["architecture"], p["norm"]) == (a, n)) for a in positions] for n in norms]
    return {"name": NAME, **header(src, quick), "recipe_label": src["recipe_label"], "seeds": st["seeds"],
            "lengths": summary["lengths"],
            "train_max": st["train"].get("train_max", 16), "confidence": summary.get("confidence", 0.95),
            "primary_length": (st.get("primary") or {}).get("length"), "grid": grid}


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
                a.set_xscale("log", base=2)
                _style.log2_ticks(a, float(n.min()), float(n.max()))
                for ln in p["lines"]:  # the mean per N with its interval as a band
                    (h,) = a.plot(n, _style.array(ln["mean"]), label=ln["label"], **ln["style"])
                    handles.setdefault(ln["variant"], h)
                    a.fill_between(n, _style.array(ln["ci_low"]), _style.array(ln["ci_high"]),
                                   color=ln["style"]["color"], alpha=0.12, lw=0)
                handles["chance"] = a.axhline(p["chance"], color="k", ls=":", lw=1.0, label="chance")
                handles["train"] = a.axvline(data["train_max"], color="0.5", ls="--", lw=0.8,
                                             label=f"longest training set ($N = {data['train_max']}$)")
                a.set_ylim(0, 1.02)
                spec = a.get_subplotspec()  # a narrow style may reflow the panels: label by where they landed
                if spec is not None and spec.is_first_col():
                    a.set_ylabel("test accuracy")
                if spec is not None and spec.is_last_row():
                    a.set_xlabel("set size $N$")
        guides = [handles.pop(k) for k in ("chance", "train") if k in handles]
        primary = (f"primary endpoint: the accuracy at N = {data['primary_length']}" if data.get("primary_length")
                   else None)
        _style.legend_below(fig, [*handles.values(), *guides], fontsize="small", title=primary,
                            title_fontsize="small")
        _style.suptitle(fig, f"Causal decoder trained with {data['recipe_label']}: accuracy vs N (mean, {conf}% t "
                        f"interval, {data['seeds']} seeds)", fontsize="medium")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_decoder_accuracy --decoder-results DIR``: make just this figure
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
