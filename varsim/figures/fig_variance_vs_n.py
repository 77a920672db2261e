"""Figure (a): Var(o_j) against N on log-log axes for several logit spreads beta.

Monte Carlo points with standard-error bars (the exact ``logits`` sampler with the Rao-Blackwell
estimator over the whole N range, and the brute-force ``full`` sampler where it is cheap, to show the
two agree), the exact curve sigma_v^2 E[sum w^2](N, beta) and the asymptote e^{beta^2}/N. A middle panel
shows MC / exact - 1, where the agreement is visible. No single log-log slope is fitted: for large beta the
exact local exponent d ln Var / d ln N drifts over the plotted range (from about -0.45 to -0.91 at beta = 2),
so the bottom panel draws that exact local exponent and the legend gives its range over the plotted N.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.lines import Line2D

from varsim.figures import figure_main

from . import _style

NAME = "fig_variance_vs_n"
BETAS = (0.5, 1.0, 1.5, 2.0)
D_K = D_V = 64
TAU = 1.0

# (grid of N, sequences per N) for each sampler; quick mode is for the tests (seconds)
_LOGITS = {False: (2 ** np.arange(4, 15), 40_000), True: (2 ** np.arange(4, 13, 2), 2_000)}
_FULL = {False: (2 ** np.arange(4, 9), 10_000), True: (np.array([16, 64]), 500)}


def _series(result) -> dict:
    return {
        "n": result.n,
        "var": result.var,
        "var_se": result.var_se,
    }


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Simulate and evaluate the theory for every beta; returns plain data for :func:`plot`."""
    from varsim._common.seeding import child_sequence
    from varsim.sim import simulate
    from varsim.theory import decay_exponent, expected_ipr

    from ._style import computed_footer

    n_logits, m_logits = _LOGITS[bool(quick)]
    n_full, m_full = _FULL[bool(quick)]
    n_dense = np.geomspace(n_logits[0], n_logits[-1], 25 if quick else 60)
    common = dict(d_k=D_K, d_v=D_V, tau=TAU, progress=progress)
    curves = []
    for k, beta in enumerate(BETAS):
        query_norm = beta * math.sqrt(D_K) / TAU  # beta = tau |q| / sqrt(d_k)
        rb = simulate(n_logits, query_norm=query_norm, sampler="logits", estimator="rao_blackwell",
                      n_sequences=m_logits, seed=child_sequence(seed, k, 0), **common)
        full = simulate(n_full, query_norm=query_norm, sampler="full", estimator="sample",
                        n_sequences=m_full, seed=child_sequence(seed, k, 1), **common)
        curves.append({
            "beta": beta,
            "logits_rb": _series(rb),
            "full": _series(full),
            "exact": {"n": n_dense, "var": expected_ipr(n_dense, beta),  # sigma_v = 1
                      "exponent": decay_exponent(n_dense, beta)},  # exact d ln E[sum w^2] / d ln N
            "exact_at_mc": {"logits_rb": expected_ipr(rb.n.astype(float), beta),
                            "full": expected_ipr(full.n.astype(float), beta)},
        })
    return {"name": NAME, "quick": bool(quick), "seed": int(seed), "d_k": D_K, "d_v": D_V, "tau": TAU,
            "value_scale": 1.0, "sequences": {"logits_rb": m_logits, "full": m_full}, "curves": curves,
            "footer": computed_footer(seed, quick), "smoke_reason": "few sequences, short N range"}


def draw(data: dict):
    """The Matplotlib figure of :func:`compute`'s data: Var vs N, MC / exact - 1, exact local exponent."""
    A = _style.array
    with _style.style():
        fig, (ax, axr, axe) = _style.plt.subplots(
            3, 1, figsize=(7.6, 6.6), sharex=True, gridspec_kw={"height_ratios": [3.2, 1, 1.5], "hspace": 0.08}
        )
        n_all = []
        for i, c in enumerate(data["curves"]):
            color, beta = _style.COLORS[i], c["beta"]
            rb, full, ex = c["logits_rb"], c["full"], c["exact"]
            n_ex = A(ex["n"])
            ax.plot(n_ex, A(ex["var"]), color=color, lw=1.4, zorder=2)
            ax.plot(n_ex, np.exp(beta**2) / n_ex, color=color, lw=1.0, ls="--", alpha=0.8, zorder=1)
            expo = A(ex["exponent"])
            axe.plot(n_ex, expo, color=color)
            axe.annotate(rf"$\beta={beta:g}$", (n_ex[-1], expo[-1]), xytext=(3, 0), textcoords="offset points",
                         va="center", ha="left", fontsize=8, color=color)
            label = rf"$\beta={beta:g}$: local exponent ${expo[0]:+.2f}$ to ${expo[-1]:+.2f}$"
            ax.errorbar(A(rb["n"]), A(rb["var"]), A(rb["var_se"]), fmt=_style.MARKERS[0], color=color,
                        ms=4, label=label, zorder=3)
            ax.errorbar(A(full["n"]) * 1.12, A(full["var"]), A(full["var_se"]), fmt=_style.MARKERS[1],
                        mfc="white", color=color, ms=4.5, zorder=3)
            for key, shift, marker, fill in (("logits_rb", 1.0, _style.MARKERS[0], color),
                                             ("full", 1.12, _style.MARKERS[1], "white")):
                s, ref = c[key], A(c["exact_at_mc"][key])
                axr.errorbar(A(s["n"]) * shift, A(s["var"]) / ref - 1, A(s["var_se"]) / ref, fmt=marker,
                             color=color, mfc=fill, ms=3.5)
            n_all += [*rb["n"], *full["n"]]
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel(r"$\mathrm{Var}(o_j)$")
        ax.set_title(rf"Vanishing variance: fixed query, $d_k = d_v = {data['d_k']}$, $\sigma_v = 1$")
        handles, _ = ax.get_legend_handles_labels()
        handles += [
            Line2D([], [], color="k", marker=_style.MARKERS[0], ls="none", label="MC, logits sampler + Rao-Blackwell"),
            Line2D([], [], color="k", marker=_style.MARKERS[1], mfc="white", ls="none", label="MC, full sampler"),
            Line2D([], [], color="k", lw=1.4, label=r"exact $\sigma_v^2\,E[\,\sum w_i^2\,]$"),
            Line2D([], [], color="k", lw=1.0, ls="--", label=r"asymptote $e^{\beta^2}/N$"),
        ]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        axr.axhline(0, color="k", lw=0.8)
        axr.set_xscale("log", base=2)
        axr.set_ylabel("MC / exact − 1")
        lim = max(0.02, min(0.2, np.nanmax(np.abs(axr.get_ylim()))))
        axr.set_ylim(-lim, lim)
        axe.axhline(-1, color="k", lw=0.8, ls=":")
        axe.set_ylim(-1.05, 0.0)
        axe.set_ylabel("exact local exponent\n" + r"$d\ln \mathrm{Var} / d\ln N$")
        axe.set_xlabel("sequence length $N$")
        _style.log2_ticks(axe, min(n_all), max(n_all))
        return _style.finish(fig, data)


#: ``python -m varsim.figures.fig_variance_vs_n [options]``: make just this figure
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
