"""Reproduction figure: test accuracy vs set size N, and the paired differences the headline claim rests on.

Top row, one panel per task and architecture: mean accuracy over seeds per normalization, with the 95% Student-t
interval over seeds as a band (cut to [0, 1]); the dotted line marks chance, the dashed one the longest training
length. Bottom row: the paired difference variant - none (same seed: same initialization, training data and test
sets) vs N, mean over seeds with its 95% t interval; a filled marker means the paired t-test rejects "no difference"
at 5% after Holm's step-down correction over every comparison drawn in the figure (all variants, lengths, tasks and
architectures), an open marker that it does not. The statistics are ``varsim.experiments.aggregate``'s summary; the
Holm adjustment is made here, over the family shown. The legend sits below the panels, off the curves.
"""

from __future__ import annotations

import numpy as np

from varsim.figures import figure_main
from varsim.tasks import chance_level

from . import _style
from .series import norm_style

NAME = "fig_repro_accuracy"
SOURCE = "reproduction"  # the data it draws: a key of varsim.figures.SOURCES
ALPHA = 0.05


from varsim.experiments.stats import holm  # noqa: E402  (one home; re-exported for the figures)


def source_of(quick: bool, seed: int, source):
    """The reproduction to draw (``source`` from :func:`varsim.figures.make`, else the default for ``quick``)."""
    from .reproduction import ReproductionSource

    return (source or ReproductionSource(quick=quick, seed=seed, progress=False)).load()


def header(rep: dict, quick: bool) -> dict:
    """The fields every reproduction figure's data carries: provenance footer and smoke-test flag."""
    return {"quick": bool(quick), "origin": rep["origin"], "source": rep["source"], "footer": rep["footer"],
            "smoke_test": rep["smoke_test"], "smoke_reason": "tiny models, 400 steps: they do not learn"}


def cells_by_panel(rep: dict, norms=None):
    """Per (task, architecture) of the grid, in its order: ``(task, architecture, [(norm, records), ...])``, the
    cells of ``norms`` (default: the grid's) that have records."""
    st = rep["settings"]
    for task in st["tasks"]:
        for arch in st["architectures"]:
            cells = [(norm, rep["cells"].get((task, arch, norm), [])) for norm in norms or st["norms"]]
            yield task, arch, [(norm, recs) for norm, recs in cells if recs]


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Per task and architecture: accuracy vs N per norm, and paired differences with Holm-adjusted p-values."""
    rep = source_of(quick, seed, source)
    summary, st = rep["summary"], rep["settings"]
    paired = {(p["task"], p["architecture"], p["norm"]): p for p in summary["paired"]}
    panels = []
    for task in st["tasks"]:
        for arch in st["architectures"]:
            lines, diffs = [], []
            for g in summary["groups"]:
                if g["task"] != task or g["architecture"] != arch or "accuracy" not in g:
                    continue
                lines.append({"norm": g["norm"], "n_seeds": g["n_seeds"], "mean": g["accuracy"]["mean"],
                              "ci_low": g["accuracy"]["ci_low"], "ci_high": g["accuracy"]["ci_high"],
                              "learned": g["in_distribution"]["learned"]})
                p = paired.get((task, arch, g["norm"]))
                if p is not None and "mean_diff" in p:
                    diffs.append({"norm": g["norm"], "n_seeds": len(p["seeds"]), "mean": p["mean_diff"],
                                  "ci_low": p["ci_low"], "ci_high": p["ci_high"], "p_ttest": p["p_ttest"]})
            panels.append({"task": task, "architecture": arch, "lines": lines, "diffs": diffs,
                           "chance": chance_level(task, st["model"])})
    # Holm over the whole family drawn: every (task, architecture, variant, N) difference in the figure
    family = [d for p in panels for d in p["diffs"]]
    raw = np.array([[np.nan if v is None else v for v in d["p_ttest"]] for d in family]) if family else np.zeros(0)
    adj = holm(raw)
    for d, row in zip(family, adj):
        d["p_holm"] = row.tolist()
    return {"name": NAME, **header(rep, quick), "root_seed": st["root_seed"], "seeds": st["seeds"],
            "lengths": st["eval_lengths"], "train_max": st["train"].get("train_max", 16), "alpha": ALPHA,
            "confidence": summary.get("confidence", 0.95), "n_comparisons": int(np.isfinite(raw).sum()),
            "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Top row accuracy vs N, bottom row paired differences vs N; one shared legend below the panels."""
    A = _style.array
    n = A(data["lengths"])
    panels = data["panels"]
    conf = int(round(100 * data["confidence"]))
    with _style.style(style):
        fig, axes = _style.subplots(2, len(panels), ax=ax, style=style, width=3.9, height=3.3,
                                        sharex=True, sharey="row", layout="constrained",
                                        gridspec_kw={"height_ratios": [1.25, 1]})
        handles = {}
        for ax, axd, p in zip(axes[0], axes[1], panels):
            for ln in p["lines"]:
                sty = norm_style(ln["norm"])
                label = ln["norm"] + ("" if ln["learned"] == ln["n_seeds"] else
                                      f" (learned {ln['learned']}/{ln['n_seeds']})")
                (h,) = ax.plot(n, A(ln["mean"]), label=label, **sty)
                handles.setdefault(ln["norm"], h)
                ax.fill_between(n, A(ln["ci_low"]), A(ln["ci_high"]), color=sty["color"], alpha=0.18, lw=0)
            handles["chance"] = ax.axhline(p["chance"], color="k", ls=":", lw=1.0, label="chance")
            handles["train"] = ax.axvline(data["train_max"], color="0.5", ls="--", lw=0.8,
                                          label=f"longest training set ($N = {data['train_max']}$)")
            ax.set_ylim(0, 1.02)
            ax.set_title(f"{p['task']}, {p['architecture'].replace('_', ' ')}")

            k = len(p["diffs"])
            for j, d in enumerate(p["diffs"]):
                sty = norm_style(d["norm"])
                shift = 2.0 ** (0.12 * (j - (k - 1) / 2))  # side by side, so the intervals do not overlap
                mean, lo, hi = A(d["mean"]), A(d["ci_low"]), A(d["ci_high"])
                sig = A(d["p_holm"]) <= data["alpha"]
                axd.errorbar(n * shift, mean, np.abs(np.vstack([mean - lo, hi - mean])), fmt="none",
                             ecolor=sty["color"], elinewidth=1.0)
                axd.plot(n * shift, mean, color=sty["color"], lw=0.8, alpha=0.6)
                axd.plot((n * shift)[sig], mean[sig], ls="none", marker=sty["marker"], color=sty["color"])
                axd.plot((n * shift)[~sig], mean[~sig], ls="none", marker=sty["marker"], color=sty["color"],
                         mfc="white")
            axd.axhline(0, color="k", lw=0.9)
            axd.axvline(data["train_max"], color="0.5", ls="--", lw=0.8)
            axd.set_xlabel("set size $N$")
            for a in (ax, axd):
                a.set_xscale("log", base=2)
                _style.log2_ticks(a, float(n.min()), float(n.max()))
        if _style.style_spec(style)["width"] is not None:  # a sized style: panels too low for two-line labels
            axes[0][0].set_ylabel("test accuracy")
            axes[1][0].set_ylabel("difference vs none")
        else:
            axes[0][0].set_ylabel(f"test accuracy\n(mean, {conf}% t interval over {data['seeds']} seeds)")
            axes[1][0].set_ylabel("paired difference\nvariant − none")
        from matplotlib.lines import Line2D

        extra = [Line2D([], [], color="0.3", marker="o", ls="none",
                        label=f"difference: Holm-adjusted paired t-test p ≤ {data['alpha']:g}"),
                 Line2D([], [], color="0.3", marker="o", mfc="white", ls="none",
                        label="difference: not significant after Holm")]
        _style.legend_below(fig, [*handles.values(), *extra], fontsize="small",
                            title=f"filled marker: paired t-test significant at {data['alpha']:g} after Holm "
                                  f"correction over all {data['n_comparisons']} comparisons shown",
                            title_fontsize="small")
        _style.suptitle(fig, f"Accuracy (top) and paired differences variant − none (bottom), {conf}% t intervals over "
                        "seeds", fontsize="medium")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_repro_accuracy [options]``: make just this figure
main = figure_main(NAME, __name__)
