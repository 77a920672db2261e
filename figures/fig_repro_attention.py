"""Reproduction figure: attention weight on the correct item vs N, linking accuracy to dispersion.

For each trained model, the query token's attention weight on the item that decides the answer (the largest
priority, or the key equal to the query), taking per set the head that puts the most weight there, averaged over
sets and seeds (band: range over seeds). 1 is a hard selection; the dotted line 1/N is uniform attention. Where the
weight falls the output becomes an average over many items, which is the vanishing variance, and the answer is
lost. One panel per task and architecture.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file: make the `figures` package importable
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    __package__ = "figures"

import sys

import numpy as np

from . import _style
from .fig_repro_accuracy import DEFAULT_RESULTS, norm_style

NAME = "fig_repro_attention"


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False) -> dict:
    """Seed-averaged weight on the correct item (best head) vs N per task, architecture and norm."""
    from varsim.experiments.reproduce import figure_results

    res = figure_results(quick, seed, default_dir=DEFAULT_RESULTS, progress=progress)
    st = res["summary"]["settings"]
    panels = []
    for task in st["tasks"]:
        for arch in st["architectures"]:
            lines = []
            for norm in st["norms"]:
                recs = res["cells"].get((task, arch, norm), [])
                if not recs:
                    continue
                w = np.array([r["probes"]["attn_correct"]["max_head"] for r in recs], dtype=float)  # (seeds, L)
                lines.append({"norm": norm, "mean": w.mean(axis=0).tolist(), "min": w.min(axis=0).tolist(),
                              "max": w.max(axis=0).tolist()})
            panels.append({"task": task, "architecture": arch, "lines": lines})
    return {"name": NAME, "quick": bool(quick), "source": res["outdir"], "seeds": st["seeds"],
            "lengths": st["probe_lengths"], "panels": panels}


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
                ax.plot(n, A(ln["mean"]), label=ln["norm"], **sty)
                ax.fill_between(n, A(ln["min"]), A(ln["max"]), color=sty["color"], alpha=0.15, lw=0)
            ax.plot(n, 1.0 / n, color="k", ls=":", lw=1.0, label="uniform, $1/N$")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            _style.log2_ticks(ax, float(n.min()), float(n.max()))
            ax.set_ylim(top=1.3)
            ax.set_title(f"{p['task']}, {p['architecture'].replace('_', ' ')}")
            ax.set_xlabel("set size $N$")
            ax.legend(loc="lower left")
        axes[0].set_ylabel("weight on the correct item (best head)")
        return _style.save(fig, outdir, NAME)


def main(argv=None) -> int:
    from . import make_all

    return make_all.main(["--only", NAME, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
