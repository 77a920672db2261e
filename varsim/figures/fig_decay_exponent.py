"""Figure (b): the effective decay exponent d ln Var / d ln N against ln N / beta^2 for several beta.

The exact local exponent of E[sum w^2] (THEORY.md 1.2), Monte Carlo local slopes (finite differences
of ln Var between neighbouring grid points, plotted at the midpoint in ln N, with delta-method SE),
the rule clamp(1/2 - ln N / beta^2, -1, 0) and the REM phase boundaries at ln N / beta^2 = 1/2
(frozen below) and 3/2 (annealed 1/N law above).
"""

from __future__ import annotations

import math

import numpy as np

from varsim.figures import figure_main

from . import _style
from .params import Param, resolve

NAME = "fig_decay_exponent"
BETAS = (2.0, 3.0, 4.0)
D_K = 64
TAU = 1.0
X_MAX = 2.5  # right end of the ln N / beta^2 axis

#: each Monte Carlo point stops at this relative standard error of Var (``simulate(target_rse=...)``), so a local
#: slope between neighbours N and 4N has an SE of about 0.01, a hundredth of the exponent axis; ``sequences`` caps it
TARGET_RSE = 0.01
#: the Monte Carlo grid's default end. In the intermediate phase sum w^2 is heavy-tailed: its relative variance
#: (``ipr_second_moment / expected_ipr**2 - 1``) is 4.5 at beta = 3, N = 2^16 and grows to 7.9 at 2^18 and 14 at
#: 2^20, where 1% would take 140 000 sequences; at the 6000-sequence cap the points at 2^18 and 2^20 of beta = 3
#: and 4 reached only 2.0-4.7% (slope SEs up to 0.045) and took 93% of the figure's Monte Carlo (keys drawn). Up
#: to 2^16 the betas' points still span all three phases between them (beta = 2 reaches ln N / beta^2 = 2.4,
#: beta = 3 1.2, beta = 4 0.69) and every point is within 3% at the cap.
N_MAX = 2**16
_K_STEP = 2  # the MC grid's N are powers of 2^_K_STEP


def local_slopes(n, var, var_se):
    """Finite-difference slopes of ln Var between neighbours, at the midpoint in ln N, with SE.

    Neighbouring points are independent simulations, so the variances of the two log-ratios add:
    SE = sqrt((se_a/var_a)^2 + (se_b/var_b)^2) / ln(N_b/N_a).
    """
    ln_n, ln_v = np.log(np.asarray(n, float)), np.log(np.asarray(var, float))
    rel = np.asarray(var_se, float) / np.asarray(var, float)
    dln = np.diff(ln_n)
    return (ln_n[:-1] + ln_n[1:]) / 2, np.diff(ln_v) / dln, np.hypot(rel[:-1], rel[1:]) / dln


#: the parameters of :func:`compute` (``varsim figures --only fig_decay_exponent --param name=value``)
PARAMS = (
    Param("betas", "reals", BETAS, "logit scales beta, one exponent curve each", minimum=0.1, maximum=25.0,
          max_len=len(_style.COLORS)),
    Param("d_k", "int", D_K, "key dimension: sets the query norm beta sqrt(d_k) / tau (the logits sampler's numbers "
          "depend on beta only)", minimum=1, maximum=2**16),
    Param("n_min", "int", 4, "smallest sequence length N of the Monte Carlo grid (powers of four from there)",
          minimum=2, maximum=2**30),
    Param("n_max", "int", N_MAX, "largest sequence length N (each beta also stops where ln N / beta^2 reaches the "
          "axis' end, 2.5)", quick=2**12, minimum=8, maximum=2**30),
    Param("sequences", "int", 6_000, "most Monte Carlo sequences per N", quick=1_000, minimum=32, maximum=10**9),
    Param("target_rse", "real", TARGET_RSE, "stop each point at this relative standard error of Var",
          minimum=0.0, maximum=1.0, strict_min=True, none="no target: every point runs the cap"),
)


def work(quick: bool = False, betas=BETAS, d_k: int = D_K, n_min=None, n_max=None, sequences=None,
         target_rse=TARGET_RSE) -> float:
    """The estimated work of :func:`compute` with these parameters in key-coordinates (each point at its cap)."""
    from varsim.sim import simulate_work

    p = resolve(PARAMS, quick, betas=betas, d_k=d_k, n_min=n_min, n_max=n_max, sequences=sequences,
                target_rse=target_rse)
    k_min = int(math.ceil(math.log2(p["n_min"]) - 1e-12))
    k_max = int(math.floor(math.log2(p["n_max"]) + 1e-12))
    total = 0.0
    for beta in (float(b) for b in p["betas"]):
        k_top = min(k_max, int(math.floor(X_MAX * beta**2 / math.log(2))))
        if k_top >= k_min:
            total += simulate_work(2 ** np.arange(k_min, k_top + 1, _K_STEP), n_sequences=p["sequences"],
                                   d_k=p["d_k"], sampler="logits", estimator="rao_blackwell")
    return total


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, betas=BETAS,
            d_k: int = D_K, n_min=None, n_max=None, sequences=None, target_rse=TARGET_RSE, out=None) -> dict:
    """Exact exponent curves and MC local slopes for every beta in ``betas``; plain data for :func:`draw`.

    The Monte Carlo grid is ``N = n_min 4^j <= n_max`` (default 4 to :data:`N_MAX` = 2^16, quick 2^12), cut for each
    beta where ``ln N / beta^2`` passes the axis' end; at most ``sequences`` per N (default 6000, quick 1000), each
    point stopped at ``target_rse`` (None: always the cap; ``mc.rse`` is what each point reached); ``d_k`` sets the
    query norm. Every parameter is declared in
    :data:`PARAMS` (a bad value is a ValueError naming it). ``out``: also write the data as JSON there."""
    from varsim._common.seeding import child_sequence
    from varsim.sim import simulate
    from varsim.theory import decay_exponent, effective_exponent, rem_thresholds

    p = resolve(PARAMS, quick, betas=betas, d_k=d_k, n_min=n_min, n_max=n_max, sequences=sequences,
                target_rse=target_rse)
    d_k, target_rse = p["d_k"], p["target_rse"]
    k_min = int(math.ceil(math.log2(p["n_min"]) - 1e-12))
    k_max = int(math.floor(math.log2(p["n_max"]) + 1e-12))
    if k_max < k_min + _K_STEP:
        raise ValueError(f"n_max must be at least 4 n_min (two grid points make one slope), got n_min={p['n_min']}, "
                         f"n_max={p['n_max']}")
    x_dense = np.linspace(0.02, X_MAX, 50 if quick else 120)
    curves = []
    for k, beta in enumerate(float(b) for b in p["betas"]):
        # stop the MC grid where the axis ends (beta = 2 reaches ln N / beta^2 = 2.5 at N ~ 2^14)
        k_top = min(k_max, int(math.floor(X_MAX * beta**2 / math.log(2))))
        if k_top < k_min + _K_STEP:
            raise ValueError(f"betas: beta = {beta:g} leaves the axis (ln N / beta^2 <= {X_MAX}) before N = "
                             f"{2 ** (k_min + _K_STEP)}, so no slope can be drawn; raise it or lower n_min")
        n_grid = 2 ** np.arange(k_min, k_top + 1, _K_STEP)
        res = simulate(n_grid, d_k=d_k, tau=TAU, query_norm=beta * math.sqrt(d_k) / TAU, sampler="logits",
                       estimator="rao_blackwell", n_sequences=p["sequences"], seed=child_sequence(seed, k),
                       progress=progress, target_rse=target_rse)
        ln_mid, slope, slope_se = local_slopes(res.n, res.var, res.var_se)
        n_dense = np.exp(x_dense * beta**2)
        curves.append({
            "beta": beta,
            "mc": {"n": res.n, "var": res.var, "var_se": res.var_se, "sequences": res.sequences,
                   "rse": res.var_se / res.var,
                   "x_mid": ln_mid / beta**2, "slope": slope, "slope_se": slope_se,
                   "exact_at_mid": decay_exponent(np.exp(ln_mid), beta)},
            "exact": {"x": x_dense, "exponent": decay_exponent(n_dense, beta),
                      "clamp": effective_exponent(n_dense, beta)},
        })
    # phase boundaries: b = beta / sqrt(ln N) = sqrt(2) (frozen) and sqrt(2/3) (annealed), i.e. x = 1/b^2
    boundaries = sorted(1.0 / b**2 for b in rem_thresholds())
    return _style.computed_data(NAME, seed, quick, {
        "d_k": d_k, "tau": TAU, "sequences": p["sequences"], "target_rse": target_rse, "boundaries": boundaries,
        "curves": curves, "params": {**p, "betas": [float(b) for b in p["betas"]]}}, out)


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """The Matplotlib figure of :func:`compute`'s data (provenance footer and, in quick mode, smoke-test stamp)."""
    A = _style.array
    with _style.style(style):
        fig, (ax,) = _style.new_figure(width=6.0, height=4.2, style=style, ax=ax)
        x_frozen, x_annealed = data["boundaries"]  # 1/2 and 3/2
        for x0, x1, label in ((0, x_frozen, "frozen"), (x_frozen, x_annealed, "intermediate"),
                              (x_annealed, X_MAX, "annealed")):
            ax.axvspan(x0, x1, color="0.5", alpha=0.07 if label == "intermediate" else 0.0, lw=0)
            ax.text((x0 + x1) / 2, 0.06, label, ha="center", va="bottom", fontsize="medium", color="0.3")
        for xb in (x_frozen, x_annealed):
            ax.axvline(xb, color="0.35", lw=0.9, ls=":")
        handles, labels = [], []
        for i, c in enumerate(data["curves"]):
            color, beta = _style.COLORS[i], c["beta"]
            ex, mc = c["exact"], c["mc"]
            (line,) = ax.plot(A(ex["x"]), A(ex["exponent"]), color=color, lw=1.5)
            points = ax.errorbar(A(mc["x_mid"]), A(mc["slope"]), A(mc["slope_se"]), fmt=_style.MARKERS[i],
                                 color=color, mfc="white")
            handles.append((line, points))
            labels.append(rf"$\beta={beta:g}$: exact (line), MC local slope $\pm$ SE")
        # the rule depends on ln N / beta^2 only: one curve serves every beta
        ex = data["curves"][0]["exact"]
        (rule,) = ax.plot(A(ex["x"]), A(ex["clamp"]), color="k", lw=1.2, ls="--")
        handles.append(rule)
        labels.append(r"rule $\mathrm{clamp}(1/2 - \ln N/\beta^2,\,-1,\,0)$")
        ax.axhline(-1, color="0.6", lw=0.7)
        ax.axhline(0, color="0.6", lw=0.7)
        ax.set_xlim(0, X_MAX)
        ax.set_ylim(-1.12, 0.15)
        ax.set_xlabel(r"$\ln N / \beta^2$")
        ax.set_ylabel(r"decay exponent $d\,\ln \mathrm{Var}(o_j) / d\,\ln N$")
        ax.set_title(rf"Effective decay exponent (fixed query, $d_k={data['d_k']}$, logits sampler)")
        ax.legend(handles, labels, loc="lower left", fontsize="small")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_decay_exponent [options]``: make just this figure
main = figure_main(NAME, __name__)
