"""Random query ``q ~ N(0, I_d)`` (THEORY.md 2.1): mixture of the fixed-query law over ``|q|``.

Given ``q`` the logits ``tau q.k_i / sqrt(d)`` are i.i.d. ``N(0, beta^2)`` with ``beta = tau |q| / sqrt(d)``,
and ``|q| ~ chi_d``; so ``E[sum w^2] = E_q[f_N(beta(q))]`` with ``f_N`` = :func:`expected_ipr`, and
``N E[sum w^2] -> E_q[e^{beta^2}] = (1 - 2 tau^2/d)^{-d/2}`` when ``d > 2 tau^2``.

Where the mixture's mass lives depends on N. For ``d > 2 tau^2`` and moderate N it sits in the bulk of
``chi_d``; for ``d <= 2 tau^2`` (and for any ``d`` close to ``2 tau^2``) the factor ``f_N ~ e^{beta^2}/N`` outgrows
the chi density, and the mass moves out to ``beta^2 ~ (2/3) ln N`` and beyond as N grows (THEORY.md 2.3: for
``d = 2, tau = 1``, ``N E = (2/3) ln N - 4/9 + o(1)``, i.e. the integrand is flat in ``beta^2`` up to the
annealed/intermediate boundary). The integral over ``r = |q|`` is therefore done on a window located per N:

1. *Locate.* A cheap model of the log-integrand, ``ln chi_d(r) + ln N psi(beta / sqrt(ln N))`` with the REM
   exponent ``psi`` (:func:`varsim.theory.rem_psi`), is maximised on a fine ``r`` grid that provably contains
   everything within ``e^-60`` of the maximum (``ln chi_d`` has curvature <= -1 and ``1/N <= f_N <= 1``). The
   window is where the model is within ``_WINDOW_DROP`` of its maximum; the model's maxima are breakpoints.
2. *Integrate.* Adaptive Gauss-Kronrod (``scipy.integrate.quad_vec``, 15 points, vector-valued over all N and
   over the exponent's numerator) on the union of the windows, each component scaled by its model maximum.
3. *Check.* The exact integrand at the window's ends must be negligible (``e^-36`` of the total, with the
   left tail bounded by monotonicity of ``f_N`` in ``beta``); otherwise the window grows and step 2 repeats.

Accuracy: ~1e-11 relative or better (checked against an independent outer quadrature and THEORY's values).
Cost: one :func:`expected_ipr` grid per Gauss-Kronrod node, ~60-300 nodes (seconds) depending on how far the
mass spreads; the grids are shared by every N of one call.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import quad_vec
from scipy.special import gammaln

from varsim._common.validate import check_positive_int, check_real
from varsim.theory._args import real_array, scalar_or_array
from varsim.theory.ipr import BETA_MAX, N_MAX, ipr_and_exponent
from varsim.theory.rem import rem_psi
from varsim.theory.series import LOGNORMAL

__all__ = [
    "chi_nodes",
    "random_query_decay_exponent",
    "random_query_ipr",
    "random_query_ipr_and_exponent",
    "random_query_limit",
    "random_query_series_coefficients",
]

_CHI_NODES = 48  # Gauss-Legendre nodes over |q|: 40 already agree with 64 to ~1e-14 for d in {4, 16}
_CHI_HALF_WIDTH = 10.0  # chi_d is log-concave with sd <= 1: +-10 around the mode holds all but e^-40

_HARD_DROP = 60.0  # the model search grid holds every r whose integrand can be within e^-60 of the maximum
_WINDOW_DROP = 45.0  # window: model log-integrand within this of its maximum (the check in step 3 backs it up)
_TAIL_REL = 1e-15  # step 3: each end's tail estimate must be below this fraction of the total
_EPSREL = 1e-8  # quad_vec tolerance (QUADPACK-style error estimate, pessimistic for smooth integrands)
_RULE = "gk21"
_MODEL_POINTS = 4001


def chi_nodes(d: int, nodes: int = _CHI_NODES) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes ``r`` and weights (density included) for ``E[g(|q|)]``, ``q ~ N(0, I_d)``.

    The weights sum to 1 up to ~1e-15 and integrate smooth ``g`` concentrated in the bulk of ``chi_d`` to similar
    accuracy (``random_query_ipr`` does not use it: its integrand can live far outside the bulk).
    """
    d = check_positive_int("d", d)
    nodes = check_positive_int("nodes", nodes)
    mode = math.sqrt(max(d - 1.0, 0.0))
    lo, hi = max(0.0, mode - _CHI_HALF_WIDTH), mode + _CHI_HALF_WIDTH
    x, w = np.polynomial.legendre.leggauss(nodes)
    r = lo + (hi - lo) * 0.5 * (x + 1.0)
    return r, 0.5 * (hi - lo) * w * np.exp(_log_chi_pdf(r, d))


def _log_chi_pdf(r, d: int) -> np.ndarray:
    """``ln`` of the ``chi_d`` density at ``r >= 0`` (``-inf`` at ``r = 0`` for ``d > 1``)."""
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_r = (d - 1.0) * np.log(r) if d > 1 else np.zeros_like(r)
    return log_r - 0.5 * r * r - (0.5 * d - 1.0) * math.log(2.0) - gammaln(0.5 * d)


def _model_log_f(beta: np.ndarray, ln_n: float) -> np.ndarray:
    """REM model of ``ln f_N(beta)``: ``ln N psi(beta / sqrt(ln N))`` (0 for ``N = 1``, where ``f = 1``)."""
    if ln_n <= 0.0:
        return np.zeros_like(beta)
    return ln_n * np.asarray(rem_psi(beta / math.sqrt(ln_n)))


class _Window:
    """Per-N window ``[lo, hi]``, model maximum ``peak`` and ``top`` (its log value) from step 1."""

    def __init__(self, ln_n: float, d: int, slope: float):
        mode = math.sqrt(max(d - 1.0, 0.0))
        reach = math.sqrt(2.0 * (ln_n + _HARD_DROP))
        self.hard_lo, self.hard_hi = max(0.0, mode - reach), mode + reach
        r = np.linspace(self.hard_lo, self.hard_hi, _MODEL_POINTS)
        log_h = _log_chi_pdf(r, d) + _model_log_f(slope * r, ln_n)
        i_top = int(np.argmax(log_h))
        inside = np.nonzero(log_h >= log_h[i_top] - _WINDOW_DROP)[0]
        step = r[1] - r[0]
        self.lo = max(self.hard_lo, r[inside[0]] - step)
        self.hi = min(self.hard_hi, r[inside[-1]] + step)
        self.peak, self.top = float(r[i_top]), float(log_h[i_top])


def _breakpoints(points: list[float], lo: float, hi: float) -> list[float]:
    """Interior breakpoints, thinned so that neighbours are at least ``(hi - lo)/32`` (and 0.05) apart."""
    gap = max(0.05, (hi - lo) / 32.0)
    kept: list[float] = []
    for p in sorted(points):
        if lo + gap <= p <= hi - gap and (not kept or p - kept[-1] >= gap):
            kept.append(p)
    return kept


def _mixture(n_arr: np.ndarray, d: int, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``(E_q[f_N], d ln E_q[f_N] / d ln N)`` for each ``N`` of the 1-D array ``n_arr`` (``tau > 0``)."""
    slope = tau / math.sqrt(d)  # beta = slope * r
    ln_n = np.log(n_arr)
    windows = [_Window(float(v), d, slope) for v in ln_n]
    lo, hi = min(w.lo for w in windows), max(w.hi for w in windows)
    points = [w.peak for w in windows] + [math.sqrt(max(d - 1.0, 0.0))]
    scale = np.array([w.top for w in windows])
    k = n_arr.size

    def check_beta(r_top: float) -> None:
        if slope * r_top > BETA_MAX:
            raise ValueError(f"tau={tau:g} puts the mass of the |q| ~ chi_{d} mixture at beta up to "
                             f"{slope * r_top:g}; the quadrature accepts |beta| <= {BETA_MAX:g}")

    def log_h(r: float) -> tuple[np.ndarray, np.ndarray]:
        e, g = ipr_and_exponent(n_arr, slope * r)
        return float(_log_chi_pdf(r, d)) + np.log(e), g

    def integrand(r: float) -> np.ndarray:
        lh, g = log_h(r)
        h = np.exp(np.minimum(lh - scale, 700.0))
        return np.concatenate([h, h * g])

    def integrate(a: float, b: float) -> np.ndarray:
        if b <= a:
            return np.zeros(2 * k)
        return quad_vec(integrand, a, b, epsabs=0.0, epsrel=_EPSREL, norm="max", quadrature=_RULE, limit=4000,
                        points=_breakpoints(points, a, b) or None)[0]

    check_beta(hi)
    total = integrate(lo, hi)
    hard_lo = min(w.hard_lo for w in windows)
    hard_hi = max(w.hard_hi for w in windows)
    for _ in range(16):  # step 3: grow the window until both ends are negligible
        mass = total[:k]
        grow_lo = grow_hi = False
        if lo > hard_lo:
            lh, _ = log_h(lo)
            # Rigorous: f_N increases with beta and max_{r <= lo} chi_d(r) = chi_d(min(lo, mode)), so the mass on
            # [0, lo] is at most lo * h(lo) * chi_d(min(lo, mode)) / chi_d(lo).
            mode = math.sqrt(max(d - 1.0, 0.0))
            ratio = float(_log_chi_pdf(min(lo, mode), d) - _log_chi_pdf(lo, d))
            tail = lo * np.exp(np.minimum(lh - scale + ratio, 700.0))
            grow_lo = bool(np.any(tail > _TAIL_REL * mass))
        if hi < hard_hi:
            # Beyond the last maximum the log-integrand decreases with slope <= -(r - (d-1)/r) + O(1) once f_N
            # saturates, so the tail is about h(hi) times a decay length of order 1 (beyond hard_hi: < e^-60).
            lh, _ = log_h(hi)
            grow_hi = bool(np.any(np.exp(np.minimum(lh - scale, 700.0)) > _TAIL_REL * mass))
        if not (grow_lo or grow_hi):
            break
        width = hi - lo
        if grow_lo:
            new_lo = max(hard_lo, lo - 0.5 * width)
            total = total + integrate(new_lo, lo)
            lo = new_lo
        if grow_hi:
            new_hi = min(hard_hi, hi + 0.5 * width)
            check_beta(new_hi)
            total = total + integrate(hi, new_hi)
            hi = new_hi
    mass, moment = total[:k], total[k:]
    return np.exp(np.log(mass) + scale), moment / mass


def _validate(n, d, tau):
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    d = check_positive_int("d", d)
    tau = abs(check_real("tau", tau))
    return n_arr, d, tau


def random_query_ipr_and_exponent(n, d, tau=1.0):
    """``(random_query_ipr(n, d, tau), random_query_decay_exponent(n, d, tau))`` from one quadrature."""
    n_arr, d, tau = _validate(n, d, tau)
    flat = n_arr.ravel()
    if tau == 0.0:  # beta = 0 for every q: uniform weights
        e, g = 1.0 / flat, np.full_like(flat, -1.0)
    else:
        e, g = _mixture(flat, d, tau)
    return scalar_or_array(n, e.reshape(n_arr.shape)), scalar_or_array(n, g.reshape(n_arr.shape))


def random_query_ipr(n, d, tau=1.0):
    """Exact ``E[sum w^2]`` averaged over a random query ``q ~ N(0, I_d)``, i.i.d. ``N(0, I_d)`` keys.

    ``n``: real ``1 <= n <= 1e300`` (scalar or array); ``d``: key dimension (integer >= 1);
    ``tau``: finite temperature (only ``|tau|`` matters; the mixture's mass must lie at ``beta <= BETA_MAX``).
    Equals ``Var(o_c)/sigma_v^2`` for a fresh query per sequence. Exact for every ``N`` (the integral over ``|q|``
    follows the mass out of the chi bulk as N grows, see the module docstring). Cost: seconds.
    """
    return random_query_ipr_and_exponent(n, d, tau)[0]


def random_query_decay_exponent(n, d, tau=1.0):
    """Exact ``d ln E[sum w^2] / d ln N`` for the random-query mixture (same arguments as :func:`random_query_ipr`).

    With ``F = E_q[f_N]`` and ``N f_N' = f_N gamma_N``: ``N F'/F = E_q[f_N gamma_N] / F``.
    """
    return random_query_ipr_and_exponent(n, d, tau)[1]


def random_query_series_coefficients(d, tau=1.0) -> tuple[float, ...]:
    """``E_q[c_k(beta(q))]`` for ``k = 1..4``: each power ``x^j = e^{j beta^2}`` of the lognormal ``c_k``
    averages to ``(1 - 2 j tau^2/d)^{-d/2}``. ``E_q[c_k]`` is finite only for ``d > k(k+1) tau^2``; the
    tuple holds the finite ones (so its length tells how many orders exist; THEORY.md 2.2).
    """
    d = check_positive_int("d", d)
    tau = check_real("tau", tau)
    # c_k(x) = x^top * sum_i a_i x^{-i} (coefficients shared with varsim.theory.series).
    out = []
    for top, coefs in LOGNORMAL:
        if not d > 2.0 * top * tau * tau:
            break
        out.append(sum(a * math.exp(-0.5 * d * math.log1p(-2.0 * (top - i) * tau * tau / d))
                       for i, a in enumerate(coefs) if a != 0.0))
    return tuple(out)


def random_query_limit(d, tau=1.0):
    """Large-N limit of ``N E[sum w^2]`` for a random query: ``E[e^{tau^2 chi2_d / d}] = (1 - 2 tau^2/d)^{-d/2}``.

    Finite only for ``d > 2 tau^2``; otherwise ``ValueError`` (the mean of ``e^{beta^2}`` diverges and
    ``N E`` grows without bound).
    """
    d = check_positive_int("d", d)
    tau = check_real("tau", tau)
    if not d > 2.0 * tau * tau:
        raise ValueError(f"d must exceed 2 tau^2 = {2.0 * tau * tau:g} for a finite limit, got d={d}")
    return math.exp(-0.5 * d * math.log1p(-2.0 * tau * tau / d))
