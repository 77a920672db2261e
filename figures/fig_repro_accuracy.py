"""Reproduction figure: test accuracy vs set size N, one panel per task and architecture, one line per norm.

Lines are the mean accuracy over seeds, bands the 95% Student-t interval over seeds (cut to [0, 1]); the dotted
line marks chance. Data: a ``varsim reproduce`` directory (see ``varsim.experiments.reproduce.figure_results``).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file: make the `figures` package importable
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    __package__ = "figures"

import sys
from pathlib import Path

from . import _style

NAME = "fig_repro_accuracy"
DEFAULT_RESULTS = Path(__file__).resolve().parents[1] / "results" / "reproduce"


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False) -> dict:
    """Read the aggregated accuracies of a reproduction (runs a quick one in quick mode)."""
    from varsim.experiments.reproduce import figure_results

    res = figure_results(quick, seed, default_dir=DEFAULT_RESULTS, progress=progress)
    summary, st = res["summary"], res["summary"]["settings"]
    chance = {"argmax": 1 / st["model"].get("n_classes", 10), "dictionary": 1 / st["model"].get("value_vocab", 16)}
    panels = []
    for task in st["tasks"]:
        for arch in st["architectures"]:
            lines = []
            for g in summary["groups"]:
                if g["task"] != task or g["architecture"] != arch or "accuracy" not in g:
                    continue
                lines.append({"norm": g["norm"], "n_seeds": g["n_seeds"], "mean": g["accuracy"]["mean"],
                              "ci_low": g["accuracy"]["ci_low"], "ci_high": g["accuracy"]["ci_high"],
                              "learned": g["in_distribution"]["learned"]})
            panels.append({"task": task, "architecture": arch, "lines": lines, "chance": chance[task]})
    return {"name": NAME, "quick": bool(quick), "source": res["outdir"], "root_seed": st["root_seed"],
            "seeds": st["seeds"], "lengths": st["eval_lengths"], "train_max": st["train"].get("train_max", 16),
            "panels": panels}


def plot(data: dict, outdir) -> list:
    """Draw the figure from :func:`compute`'s data; returns the PNG and PDF paths."""
    A = _style.array
    n = A(data["lengths"])
    panels = data["panels"]
    with _style.style():
        fig, axes = _style.new_figure(len(panels), width=4.2, height=3.5, sharey=True)
        for ax, p in zip(axes, panels):
            for ln in p["lines"]:
                sty = norm_style(ln["norm"])
                label = f"{ln['norm']}" + ("" if ln["learned"] == ln["n_seeds"] else
                                           f" (learned {ln['learned']}/{ln['n_seeds']})")
                ax.plot(n, A(ln["mean"]), label=label, **sty)
                ax.fill_between(n, A(ln["ci_low"]), A(ln["ci_high"]), color=sty["color"], alpha=0.18, lw=0)
            ax.axhline(p["chance"], color="k", ls=":", lw=1.0, label="chance")
            ax.axvline(data["train_max"], color="0.5", ls="--", lw=0.8)
            ax.set_xscale("log", base=2)
            _style.log2_ticks(ax, float(n.min()), float(n.max()))
            ax.set_ylim(0, 1.02)
            ax.set_title(f"{p['task']}, {p['architecture'].replace('_', ' ')}")
            ax.set_xlabel("set size $N$ (trained on $N \\leq$ %d)" % data["train_max"])
            ax.legend(loc="upper right")
        axes[0].set_ylabel(f"test accuracy (mean, 95% CI over {data['seeds']} seeds)")
        return _style.save(fig, outdir, NAME)


NORM_ORDER = ("none", "layernorm", "standardize", "layernorm_per_head", "standardize_per_head")


def norm_style(norm: str) -> dict:
    """Colour and marker of a normalization, the same in every reproduction figure."""
    k = NORM_ORDER.index(norm) if norm in NORM_ORDER else len(NORM_ORDER)
    return {"color": _style.COLORS[k % len(_style.COLORS)], "marker": _style.MARKERS[k % len(_style.MARKERS)]}


def main(argv=None) -> int:
    from . import make_all

    return make_all.main(["--only", NAME, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
