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
from .params import Param, resolve

NAME = "fig_random_query"
DIMS = (16, 64)
TAU = 1.0
D_V = 16

#: each Monte Carlo point stops at this relative standard error of N Var (``simulate(target_rse=...)``): a fifth of
#: the 5% gap between the d_k = 16 and d_k = 64 levels the figure separates; the counts below are the caps
TARGET_RSE = 0.01
# (grid of N, cap on sequences per N) of the full sampler; quick mode is for the tests (seconds)
_FULL = {False: (2 ** np.arange(4, 10), 8_000), True: (np.array([16, 64]), 1_000)}


def _scaled(result, exact_ipr) -> dict:
    """N Var and its SE (sigma_v = 1), with the exact N E[sum w^2] at the same N for comparison."""
    n = np.asarray(result.n, float)
    return {"n": result.n, "nvar": n * result.var, "nvar_se": n * result.var_se, "exact": n * exact_ipr(n),
            "sequences": result.sequences}


#: the parameters of :func:`compute` (``varsim figures --only fig_random_query --param name=value``)
PARAMS = (
    Param("d_ks", "ints", DIMS, "key dimensions d_k of the random query, one curve each (the fixed query uses the "
          "last)", minimum=3, maximum=2**16, max_len=len(_style.COLORS) - 1),
    Param("tau", "real", TAU, "temperature: the fixed query's beta, and the random query's level "
          "(1 - 2 tau^2/d)^(-d/2) (needs 2 tau^2 < every d_k)", minimum=0.0, maximum=25.0, strict_min=True),
    Param("d_v", "int", D_V, "value dimension of the full sampler (its variance is pooled over the coordinates)",
          minimum=1, maximum=2**16),
    Param("n_min", "int", 16, "smallest sequence length N (the grid is the powers of two in [n_min, n_max])",
          minimum=2, maximum=2**30),
    Param("n_max", "int", 2**14, "largest sequence length N", quick=2**10, minimum=16, maximum=2**30),
    Param("sequences", "int", 40_000, "most Monte Carlo sequences per N of the logits sampler",
          quick=4_000, minimum=32, maximum=10**9),
    Param("target_rse", "real", TARGET_RSE, "stop each point at this relative standard error of N Var",
          minimum=0.0, maximum=1.0, strict_min=True, none="no target: every point runs the cap"),
)


def work(quick: bool = False, d_ks=DIMS, tau: float = TAU, d_v: int = D_V, n_min=None, n_max=None, sequences=None,
         target_rse=TARGET_RSE) -> float:
    """The estimated work of :func:`compute` with these parameters in key-coordinates (each point at its cap)."""
    from varsim.sim import simulate_work

    p = resolve(PARAMS, quick, d_ks=d_ks, tau=tau, d_v=d_v, n_min=n_min, n_max=n_max, sequences=sequences,
                target_rse=target_rse)
    k_min = int(math.ceil(math.log2(p["n_min"]) - 1e-12))
    k_max = int(math.floor(math.log2(p["n_max"]) + 1e-12))
    n_logits = 2 ** np.arange(k_min, k_max + 1, 2 if quick else 1)
    n_full, m_full = _FULL[bool(quick)]
    m_full = m_full if sequences is None else max(32, p["sequences"] // 5)
    n_full = n_full[(n_full >= (n_logits[0] if n_logits.size else 0)) & (n_full <= (n_logits[-1] if n_logits.size
                                                                                      else 0))]
    total = 0.0
    for d in (p["d_ks"][-1], *p["d_ks"]):  # the fixed query at the last d_k, then the random one at each
        total += simulate_work(n_logits, n_sequences=p["sequences"], d_k=d, d_v=p["d_v"], sampler="logits",
                               estimator="rao_blackwell") if n_logits.size else 0.0
        total += simulate_work(n_full, n_sequences=m_full, d_k=d, d_v=p["d_v"]) if n_full.size else 0.0
    return total


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, d_ks=DIMS, tau: float = TAU,
            d_v: int = D_V, n_min=None, n_max=None, sequences=None, target_rse=TARGET_RSE, out=None) -> dict:
    """Simulate fixed and random queries and evaluate the exact curves; plain data for :func:`draw`.

    The random query runs at every ``d_k`` of ``d_ks``, the fixed query (``|q|^2 = d_k``, so ``beta = tau``) at
    the last; N runs over the powers of two in ``[n_min, n_max]`` (default 16 to 2^14, quick 2^10, every second
    power), the logits sampler with at most ``sequences`` per N (default 40000, quick 4000) and the full sampler at
    the N <= 512 of that range (quick: 16 and 64) with at most 8000 (quick 1000), or a fifth of ``sequences`` when
    it is given; each point stops at ``target_rse`` (None: always the cap). Every parameter is declared in
    :data:`PARAMS` (a bad value is a ValueError naming it). ``out``: also write the data as JSON there."""
    from varsim._common.seeding import child_sequence
    from varsim.sim import simulate
    from varsim.theory import expected_ipr, random_query_ipr, random_query_limit

    p = resolve(PARAMS, quick, d_ks=d_ks, tau=tau, d_v=d_v, n_min=n_min, n_max=n_max, sequences=sequences,
                target_rse=target_rse)
    dims, tau, d_v, target_rse = p["d_ks"], p["tau"], p["d_v"], p["target_rse"]
    if not 2 * tau**2 < min(dims):
        raise ValueError(f"tau: the random query's variance is finite only for 2 tau^2 < d_k, got tau={tau:g} with "
                         f"d_k={min(dims)}")
    k_min = int(math.ceil(math.log2(p["n_min"]) - 1e-12))
    k_max = int(math.floor(math.log2(p["n_max"]) + 1e-12))
    if k_min > k_max:
        raise ValueError(f"n_min must be <= n_max, got n_min={p['n_min']}, n_max={p['n_max']}")
    n_logits, m_logits = 2 ** np.arange(k_min, k_max + 1, 2 if quick else 1), p["sequences"]
    n_full, m_full = _FULL[bool(quick)]
    if sequences is not None:
        m_full = max(32, m_logits // 5)
    n_full = n_full[(n_full >= n_logits[0]) & (n_full <= n_logits[-1])]
    if n_full.size == 0:
        raise ValueError(f"n_min: the full sampler's points lie at N <= {_FULL[bool(quick)][0][-1]}, got "
                         f"n_min={p['n_min']}")
    n_dense = np.geomspace(n_logits[0], n_logits[-1], 25 if quick else 50)
    common = dict(tau=tau, d_v=d_v, progress=progress, target_rse=target_rse)
    rb = dict(sampler="logits", estimator="rao_blackwell", n_sequences=m_logits)
    full = dict(sampler="full", estimator="sample", n_sequences=m_full)

    # fixed query with |q|^2 = d_k, so beta = tau whatever d_k is: one curve serves both dimensions
    d0 = dims[-1]
    fixed_exact = partial(expected_ipr, beta=tau)
    fixed = {
        "beta": tau,
        "logits_rb": _scaled(simulate(n_logits, d_k=d0, query="fixed", query_norm=math.sqrt(d0),
                                      seed=child_sequence(seed, 0, 0), **rb, **common), fixed_exact),
        "full": _scaled(simulate(n_full, d_k=d0, query="fixed", query_norm=math.sqrt(d0),
                                 seed=child_sequence(seed, 0, 1), **full, **common), fixed_exact),
        "exact": {"n": n_dense, "nvar": n_dense * fixed_exact(n_dense)},
        "limit": math.exp(tau**2),
    }
    random = []
    for k, d in enumerate(dims, 1):
        mixture = partial(random_query_ipr, d=d, tau=tau)
        random.append({
            "d_k": d,
            "logits_rb": _scaled(simulate(n_logits, d_k=d, query="random", seed=child_sequence(seed, k, 0),
                                          **rb, **common), mixture),
            "full": _scaled(simulate(n_full, d_k=d, query="random", seed=child_sequence(seed, k, 1),
                                     **full, **common), mixture),
            "exact": {"n": n_dense, "nvar": n_dense * mixture(n_dense)},
            "limit": random_query_limit(d, tau),
        })
    return _style.computed_data(NAME, seed, quick, {
        "tau": tau, "d_v": d_v, "sequences": {"logits_rb": m_logits, "full": m_full}, "target_rse": target_rse,
        "fixed": fixed, "random": random, "params": {**p, "d_ks": list(dims)}}, out)


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
main = figure_main(NAME, __name__)
