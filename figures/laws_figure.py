"""Figure: does QK-norm stop the variance from vanishing? Exact ``E[sum w^2]`` against N for keys on the sphere
(QK-norm, d = 64, logit ``s cos(angle)``) and Gaussian logits of the same standard deviation ``s / 8``.

    python figures/laws_figure.py            # writes figures/out/laws_qk_norm.png and .pdf (~30 s)

Left: ``N E[sum w^2]`` (flat = the 1/N law, its level the limit ``E[e^{2X}]/E[e^X]^2``); right: the local exponent
``d ln E / d ln N``. Computation (``compute``) apart from drawing (``draw``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

SCALES = (8.0, 16.0, 32.0, 64.0)
D = 64
OUT = Path(__file__).resolve().parent / "out"


def compute() -> dict:
    from varsim.theory.laws import law_ipr_and_exponent, logit_law

    ns = np.geomspace(2.0, 1e12, 120)
    laws = {"sphere d=64 (QK-norm)": logit_law("sphere", d=D), "Gaussian": logit_law("gaussian")}
    out = {"n": ns, "curves": []}
    for s in SCALES:
        for label, law in laws.items():
            e, g = law_ipr_and_exponent(law, ns, s / math.sqrt(D))
            out["curves"].append({"s": s, "law": label, "ne": ns * e, "slope": g})
    return out


def draw(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    colors = dict(zip(SCALES, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for c in data["curves"]:
        style = "-" if c["law"].startswith("sphere") else "--"
        label = f"s = {c['s']:g}, {c['law']}"
        left.loglog(data["n"], c["ne"], style, color=colors[c["s"]], label=label)
        right.semilogx(data["n"], c["slope"], style, color=colors[c["s"]])
    left.set(xlabel="N", ylabel=r"$N\,E[\sum_i w_i^2]$", title="flat = the 1/N law")
    right.set(xlabel="N", ylabel=r"$d \ln E / d \ln N$", ylim=(-1.05, 0.02), title="local exponent")
    left.legend(fontsize=7, ncol=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in (".png", ".pdf"):
        fig.savefig(path.with_suffix(suffix), dpi=120)
    plt.close(fig)


def main() -> None:
    draw(compute(), OUT / "laws_qk_norm")
    print(f"wrote {OUT / 'laws_qk_norm'}.png and .pdf")


if __name__ == "__main__":
    main()
