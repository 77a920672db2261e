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
from .params import Param, resolve

NAME = "fig_variance_vs_n"
BETAS = (0.5, 1.0, 1.5, 2.0)
D_K = D_V = 64
TAU = 1.0

#: each Monte Carlo point stops at this relative standard error of Var (``simulate(target_rse=...)``): the ratio
#: panel's narrowest range is +-2%, so 1% error bars are what it resolves; the counts below are the caps
TARGET_RSE = 0.01
# (grid of N, cap on sequences per N) of the full sampler; quick mode is for the tests (seconds)
_FULL = {False: (2 ** np.arange(4, 9), 10_000), True: (np.array([16, 64]), 500)}


def _series(result) -> dict:
    """The fields of a simulation result that a curve of the figure keeps."""
    return {k: getattr(result, k) for k in ("n", "var", "var_se", "sequences")}


#: the parameters of :func:`compute` (``varsim figures --only fig_variance_vs_n --param name=value``)
PARAMS = (
    Param("betas", "reals", BETAS, "logit scales beta, one curve each", minimum=0.0, maximum=25.0, max_len=12),
    Param("d_k", "int", D_K, "key dimension: sets the query norm beta sqrt(d_k) / tau and the full sampler's keys",
          minimum=1, maximum=2**16),
    Param("n_min", "int", 16, "smallest sequence length N (the grid is the powers of two in [n_min, n_max])",
          minimum=2, maximum=2**30),
    Param("n_max", "int", 2**14, "largest sequence length N", quick=2**12, minimum=32, maximum=2**30),
    Param("sequences", "int", 40_000, "most Monte Carlo sequences per N of the logits sampler (the full sampler a "
          "quarter)", quick=2_000, minimum=32, maximum=10**9),
    Param("full_sampler", "flag", True, "also run the brute-force full sampler at N <= 256"),
    Param("target_rse", "real", TARGET_RSE, "stop each point at this relative standard error of Var",
          minimum=0.0, maximum=1.0, strict_min=True, none="no target: every point runs the cap"),
)


def _grid(quick: bool, n_min: int, n_max: int) -> np.ndarray:
    """The powers of two in ``[n_min, n_max]`` (every second one in quick mode, from ``n_min`` up)."""
    k_min, k_max = int(math.ceil(math.log2(n_min) - 1e-12)), int(math.floor(math.log2(n_max) + 1e-12))
    if k_min > k_max:
        raise ValueError(f"n_min must be <= n_max and a power of two must lie between them, got n_min={n_min}, "
                         f"n_max={n_max}")
    return 2 ** np.arange(k_min, k_max + 1, 2 if quick else 1)


def work(quick: bool = False, betas=BETAS, d_k: int = D_K, n_min=None, n_max=None, sequences=None,
         full_sampler: bool = True, target_rse=TARGET_RSE) -> float:
    """The estimated work of :func:`compute` with these parameters in key-coordinates (each point at its cap)."""
    from varsim.sim import simulate_work

    p = resolve(PARAMS, quick, betas=betas, d_k=d_k, n_min=n_min, n_max=n_max, sequences=sequences,
                full_sampler=full_sampler, target_rse=target_rse)
    n_logits = _grid(quick, p["n_min"], p["n_max"])
    n_full = _FULL[bool(quick)][0]
    n_full = n_full[(n_full >= n_logits[0]) & (n_full <= n_logits[-1])]
    m_full = _FULL[bool(quick)][1] if sequences is None else max(32, p["sequences"] // 4)
    per_beta = simulate_work(n_logits, n_sequences=p["sequences"], d_k=p["d_k"], d_v=D_V, sampler="logits",
                             estimator="rao_blackwell")
    if p["full_sampler"] and n_full.size:
        per_beta += simulate_work(n_full, n_sequences=m_full, d_k=p["d_k"], d_v=D_V)
    return len(p["betas"]) * per_beta


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, betas=BETAS, d_k: int = D_K,
            n_min=None, n_max=None, sequences=None, full_sampler: bool = True, target_rse=TARGET_RSE,
            out=None) -> dict:
    """Simulate and evaluate the theory for every beta in ``betas``; returns plain data for :func:`draw`.

    ``d_k`` sets the query norm ``beta sqrt(d_k) / tau`` and the full sampler's key dimension (the logits sampler
    draws ``beta g_i`` directly, so its numbers do not depend on ``d_k``). N runs over the powers of two in
    ``[n_min, n_max]`` (default 16 to 2^14, quick 2^12, every second power); ``sequences``: the cap per N for the
    logits sampler (default 40000, quick 2000); the full sampler (``full_sampler``) runs the N <= 256 of that range
    with a quarter as many. Each point stops once its relative standard error is at most ``target_rse`` (default
    :data:`TARGET_RSE`; None: always the cap); the data give the target and the sequences each point used. Every
    parameter is declared in :data:`PARAMS` (a bad value is a ValueError naming it). ``out``: also write the data
    as JSON there."""
    from varsim._common.seeding import child_sequence
    from varsim.sim import simulate
    from varsim.theory import decay_exponent, expected_ipr

    p = resolve(PARAMS, quick, betas=betas, d_k=d_k, n_min=n_min, n_max=n_max, sequences=sequences,
                full_sampler=full_sampler, target_rse=target_rse)
    betas, d_k, full_sampler, target_rse = p["betas"], p["d_k"], p["full_sampler"], p["target_rse"]
    n_logits = _grid(quick, p["n_min"], p["n_max"])
    n_full = _FULL[bool(quick)][0]
    n_full = n_full[(n_full >= n_logits[0]) & (n_full <= n_logits[-1])]
    full_sampler = full_sampler and n_full.size > 0
    m_logits = p["sequences"]
    m_full = _FULL[bool(quick)][1] if sequences is None else max(32, m_logits // 4)
    betas = tuple(float(b) for b in betas)
    n_dense = np.geomspace(n_logits[0], n_logits[-1], 25 if quick else 60)
    common = dict(d_k=d_k, d_v=D_V, tau=TAU, progress=progress, target_rse=target_rse)
    curves = []
    for k, beta in enumerate(betas):
        query_norm = beta * math.sqrt(d_k) / TAU  # beta = tau |q| / sqrt(d_k)
        rb = simulate(n_logits, query_norm=query_norm, sampler="logits", estimator="rao_blackwell",
                      n_sequences=m_logits, seed=child_sequence(seed, k, 0), **common)
        full = (simulate(n_full, query_norm=query_norm, sampler="full", estimator="sample",
                         n_sequences=m_full, seed=child_sequence(seed, k, 1), **common) if full_sampler else None)
        curves.append({
            "beta": beta,
            "logits_rb": _series(rb),
            "full": None if full is None else _series(full),
            "exact": {"n": n_dense, "var": expected_ipr(n_dense, beta),  # sigma_v = 1
                      "exponent": decay_exponent(n_dense, beta)},  # exact d ln E[sum w^2] / d ln N
            "exact_at_mc": {"logits_rb": expected_ipr(rb.n.astype(float), beta),
                            "full": None if full is None else expected_ipr(full.n.astype(float), beta)},
        })
    return _style.computed_data(NAME, seed, quick, {
        "d_k": d_k, "d_v": D_V, "tau": TAU, "value_scale": 1.0,
        "sequences": {"logits_rb": m_logits, "full": m_full if full_sampler else None}, "target_rse": target_rse,
        "params": {"betas": list(betas), "d_k": d_k, "n_min": int(n_logits[0]), "n_max": int(n_logits[-1]),
                   "sequences": m_logits, "full_sampler": bool(full_sampler), "target_rse": target_rse},
        "curves": curves}, out)


def draw(data: dict, ax=None, *, style=None, footer: bool = False, ratio: bool = True, exponent: bool = True):
    """Var vs N with the exact lines and asymptotes, MC / exact - 1 (``ratio``) and the exact local exponent
    (``exponent``), stacked; ``ax``: one axes per shown panel (default: a new figure at the style's width)."""
    A = _style.array
    shown = ["var"] + (["ratio"] if ratio else []) + (["exponent"] if exponent else [])
    ax_given = ax is not None
    with _style.style(style):
        if ax is None:
            width = _style.style_spec(style)["width"] or 5.6
            heights = {"var": 3.2, "ratio": 1.0 if width > 4.5 else 1.4, "exponent": 1.4}
            fig, grid = _style.plt.subplots(
                len(shown), 1, figsize=(width, width * 0.16 * sum(heights[k] for k in shown) + 0.6), sharex=True,
                squeeze=False, layout="constrained", gridspec_kw={"height_ratios": [heights[k] for k in shown]})
            axes = list(grid[:, 0])
        else:
            fig, axes = _style.axes_grid(len(shown), ax=ax)
        panel = dict(zip(shown, axes))
        ax, axr, axe = panel["var"], panel.get("ratio"), panel.get("exponent")
        narrow = fig.get_figwidth() < 4.5
        small = _style.plt.rcParams["legend.fontsize"]
        n_all = []
        for i, c in enumerate(data["curves"]):
            color, beta = _style.COLORS[i % len(_style.COLORS)], c["beta"]
            rb, full, ex = c["logits_rb"], c.get("full"), c["exact"]
            n_ex = A(ex["n"])
            ax.plot(n_ex, A(ex["var"]), color=color, zorder=2)
            ax.plot(n_ex, np.exp(beta**2) / n_ex, color=color, lw=0.7 * _style.plt.rcParams["lines.linewidth"],
                    ls="--", alpha=0.8, zorder=1)
            expo = A(ex["exponent"])
            label = rf"$\beta={beta:g}$"
            if axe is not None:
                axe.plot(n_ex, expo, color=color)
                if not narrow:
                    label += rf": exponent ${expo[0]:+.2f}$ to ${expo[-1]:+.2f}$"
            ax.errorbar(A(rb["n"]), A(rb["var"]), A(rb["var_se"]), fmt=_style.MARKERS[0], color=color,
                        label=label, zorder=3)
            series = [("logits_rb", 1.0, _style.MARKERS[0], color)]
            if full is not None:
                ax.errorbar(A(full["n"]) * 1.12, A(full["var"]), A(full["var_se"]), fmt=_style.MARKERS[1],
                            mfc="white", color=color, zorder=3)
                series.append(("full", 1.12, _style.MARKERS[1], "white"))
                n_all += [*full["n"]]
            if axr is not None:
                for key, shift, marker, fill in series:
                    s, ref = c[key], A(c["exact_at_mc"][key])
                    axr.errorbar(A(s["n"]) * shift, A(s["var"]) / ref - 1, A(s["var_se"]) / ref, fmt=marker,
                                 color=color, mfc=fill, ms=0.8 * _style.plt.rcParams["lines.markersize"])
            n_all += [*rb["n"]]
        for a in axes:
            a.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel(r"$\mathrm{Var}(o_j)$")
        ax.set_title(rf"fixed query, $d_k = {data['d_k']}$, $\sigma_v = 1$", fontsize=small + 1)
        handles, _ = ax.get_legend_handles_labels()
        handles += [
            Line2D([], [], color="k", marker=_style.MARKERS[0], ls="none", label="MC ± SE, logits sampler + RB"),
            Line2D([], [], color="k", lw=1.2, label=r"exact $\sigma_v^2\,E[\,\sum w_i^2\,]$"),
            Line2D([], [], color="k", lw=0.8, ls="--", label=r"asymptote $e^{\beta^2}/N$"),
        ]
        if any(c.get("full") is not None for c in data["curves"]):
            handles.insert(len(handles) - 2, Line2D([], [], color="k", marker=_style.MARKERS[1], mfc="white",
                                                    ls="none", label="MC ± SE, full sampler"))
        if ax_given:
            ax.legend(handles=handles, fontsize=small - 0.5)
        else:  # under the panels: set off beside the top panel it would leave a blank block under itself
            _style.legend_below(fig, handles, ncol=2)
        if axr is not None:
            axr.axhline(0, color="k", lw=0.8)
            axr.set_ylabel("MC/exact − 1", fontsize=small if narrow else None)
            lim = max(0.02, np.nanmax(np.abs(axr.get_ylim())))  # symmetric, and wide enough for every point
            axr.set_ylim(-lim, lim)
        if axe is not None:
            axe.axhline(-1, color="k", lw=0.8, ls=":")
            axe.set_ylim(-1.05, 0.0)
            axe.set_ylabel("exponent" if narrow else "local exponent\n" + r"$d\ln \mathrm{Var} / d\ln N$")
        axes[-1].set_xlabel("sequence length $N$")
        if not ax_given:
            fig.align_ylabels(axes)
        _style.log2_ticks(axes[-1], min(n_all), max(n_all))
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_variance_vs_n [options]``: make just this figure
main = figure_main(NAME, __name__)
