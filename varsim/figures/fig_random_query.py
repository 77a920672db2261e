"""Figure (c): N Var(o_j) / sigma_v^2 against N for a random query versus a fixed query.

A random query q ~ N(0, I_d) per sequence mixes logit spreads beta^2 = tau^2 |q|^2 / d, which raises
the level: N Var -> (1 - 2 tau^2/d)^{-d/2} instead of e^{tau^2} for the fixed query with |q|^2 = d
(THEORY.md 2.1). Shown for d_k = 16 and 64: Monte Carlo with SE bars (logits sampler + Rao-Blackwell
over the whole range, the full sampler at small N), the exact finite-N chi-square mixture, the exact
fixed-query curve, and the two leading constants as horizontal lines.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from matplotlib.lines import Line2D

from varsim.figures import figure_main

from . import _style

NAME = "fig_random_query"
DIMS = (16, 64)
TAU = 1.0
D_V = 16

#: each Monte Carlo point stops at this relative standard error of N Var (``simulate(target_rse=...)``): a fifth of
#: the 5% gap between the d_k = 16 and d_k = 64 levels the figure separates; the counts below are the caps
TARGET_RSE = 0.01
_LOGITS = {False: (2 ** np.arange(4, 15), 40_000), True: (2 ** np.arange(4, 11, 2), 4_000)}
_FULL = {False: (2 ** np.arange(4, 10), 8_000), True: (np.array([16, 64]), 1_000)}


def _scaled(result, exact_ipr) -> dict:
    """N Var and its SE (sigma_v = 1), with the exact N E[sum w^2] at the same N for comparison."""
    n = np.asarray(result.n, float)
    return {"n": result.n, "nvar": n * result.var, "nvar_se": n * result.var_se, "exact": n * exact_ipr(n),
            "sequences": result.sequences}


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None) -> dict:
    """Simulate fixed and random queries and evaluate the exact curves; plain data for :func:`plot`."""
    from varsim._common.seeding import child_sequence
    from varsim.sim import simulate
    from varsim.theory import expected_ipr, random_query_ipr, random_query_limit

    n_logits, m_logits = _LOGITS[bool(quick)]
    n_full, m_full = _FULL[bool(quick)]
    n_dense = np.geomspace(n_logits[0], n_logits[-1], 25 if quick else 50)
    common = dict(tau=TAU, d_v=D_V, progress=progress, target_rse=TARGET_RSE)
    rb = dict(sampler="logits", estimator="rao_blackwell", n_sequences=m_logits)
    full = dict(sampler="full", estimator="sample", n_sequences=m_full)

    # fixed query with |q|^2 = d_k, so beta = tau whatever d_k is: one curve serves both dimensions
    d0 = DIMS[-1]
    fixed_exact = partial(expected_ipr, beta=TAU)
    fixed = {
        "beta": TAU,
        "logits_rb": _scaled(simulate(n_logits, d_k=d0, query="fixed", query_norm=math.sqrt(d0),
                                      seed=child_sequence(seed, 0, 0), **rb, **common), fixed_exact),
        "full": _scaled(simulate(n_full, d_k=d0, query="fixed", query_norm=math.sqrt(d0),
                                 seed=child_sequence(seed, 0, 1), **full, **common), fixed_exact),
        "exact": {"n": n_dense, "nvar": n_dense * fixed_exact(n_dense)},
        "limit": math.exp(TAU**2),
    }
    random = []
    for k, d in enumerate(DIMS, 1):
        mixture = partial(random_query_ipr, d=d, tau=TAU)
        random.append({
            "d_k": d,
            "logits_rb": _scaled(simulate(n_logits, d_k=d, query="random", seed=child_sequence(seed, k, 0),
                                          **rb, **common), mixture),
            "full": _scaled(simulate(n_full, d_k=d, query="random", seed=child_sequence(seed, k, 1),
                                     **full, **common), mixture),
            "exact": {"n": n_dense, "nvar": n_dense * mixture(n_dense)},
            "limit": random_query_limit(d, TAU),
        })
    return {"name": NAME, "quick": bool(quick), "seed": int(seed), "tau": TAU, "d_v": D_V,
            "sequences": {"logits_rb": m_logits, "full": m_full}, "target_rse": TARGET_RSE, "fixed": fixed,
            "random": random,
            "footer": _style.computed_footer(seed, quick), "smoke_reason": "few sequences, short N range"}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data (provenance footer and, in quick mode, smoke-test stamp)."""
    A = _style.array
    tau = data["tau"]
    with _style.style(style):
        fig, (ax,) = _style.new_figure(width=6.0, height=4.3, style=style, ax=ax)
        families = [(r"fixed query, $|q|^2 = d_k$ ($\beta = \tau$)", data["fixed"],
                     rf"$e^{{\tau^2}} = {data['fixed']['limit']:.4f}$")]
        families += [(rf"random query, $d_k = {r['d_k']}$", r,
                      rf"$(1 - 2\tau^2/d)^{{-d/2}} = {r['limit']:.4f}$") for r in data["random"]]
        n_all = []
        for i, (label, fam, limit_label) in enumerate(families):
            color = _style.COLORS[i]
            ex = fam["exact"]
            ax.plot(A(ex["n"]), A(ex["nvar"]), color=color, lw=1.5, label=label)
            ax.axhline(fam["limit"], color=color, lw=1.0, ls="--", alpha=0.85)
            below = i == 0  # e^{tau^2} sits just under the d = 64 constant: label it from below
            ax.annotate(limit_label, (0.0, fam["limit"]), xycoords=("axes fraction", "data"),
                        xytext=(4, -3 if below else 3), textcoords="offset points", ha="left",
                        va="top" if below else "bottom", fontsize="small", color=color)
            s = fam["logits_rb"]
            ax.errorbar(A(s["n"]), A(s["nvar"]), A(s["nvar_se"]), fmt=_style.MARKERS[0], color=color)
            s = fam["full"]
            ax.errorbar(A(s["n"]) * 1.1, A(s["nvar"]), A(s["nvar_se"]), fmt=_style.MARKERS[1], color=color,
                        mfc="white")
            n_all += [*fam["logits_rb"]["n"], *fam["full"]["n"]]
        ax.set_xscale("log", base=2)
        _style.log2_ticks(ax, min(n_all), max(n_all))
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, max(hi, max(fam["limit"] for _, fam, _ in families)) + 0.1 * (hi - lo))  # room for labels
        ax.set_xlabel("sequence length $N$")
        ax.set_ylabel(r"$N\,\mathrm{Var}(o_j)\,/\,\sigma_v^2$")
        ax.set_title(rf"Random vs fixed query ($\tau = {tau:g}$, $d_v = {data['d_v']}$)")
        handles, _ = ax.get_legend_handles_labels()
        handles += [
            Line2D([], [], color="k", marker=_style.MARKERS[0], ls="none", label="MC, logits sampler + Rao-Blackwell"),
            Line2D([], [], color="k", marker=_style.MARKERS[1], mfc="white", ls="none", label="MC, full sampler"),
            Line2D([], [], color="k", lw=1.5, label="exact (chi-square mixture for random q)"),
            Line2D([], [], color="k", lw=1.0, ls="--", label=r"limit $N \to \infty$"),
        ]
        ax.legend(handles=handles, loc="lower right", fontsize="small")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_random_query [options]``: make just this figure
main = figure_main(NAME)


if __name__ == "__main__":
    raise SystemExit(main())
