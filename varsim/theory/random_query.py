"""Random query ``q ~ N(0, I_d)`` (THEORY.md 2.1): mixture of the fixed-query law over ``|q|``.

Given ``q`` the logits ``tau q.k_i / sqrt(d)`` are i.i.d. ``N(0, beta^2)`` with ``beta = tau |q| / sqrt(d)``,
and ``|q| ~ chi_d``; so ``E[sum w^2] = E_q[f_N(beta(q))]`` with ``f_N`` = :func:`expected_ipr`, and
``N E[sum w^2] -> E_q[e^{beta^2}] = (1 - 2 tau^2/d)^{-d/2}`` when ``d > 2 tau^2``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from varsim._common.validate import check_positive_int, check_real
from varsim.theory._args import real_array, scalar_or_array
from varsim.theory.ipr import BETA_MAX, N_MAX, expected_ipr, ipr_and_exponent
from varsim.theory.series import _LOGNORMAL

__all__ = ["random_query_ipr", "random_query_decay_exponent", "random_query_series_coefficients",
           "random_query_limit", "chi_nodes"]

_CHI_NODES = 48  # Gauss-Legendre nodes over |q|: 40 already agree with 64 to ~1e-14 for d in {4, 16}
_CHI_HALF_WIDTH = 10.0  # chi_d is log-concave with sd <= 1: +-10 around the mode holds all but e^-40


def chi_nodes(d: int, nodes: int = _CHI_NODES) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes ``r`` and weights (density included) for ``E[g(|q|)]``, ``q ~ N(0, I_d)``.

    The weights sum to 1 up to ~1e-15 and integrate smooth ``g`` to similar accuracy.
    """
    d = check_positive_int("d", d)
    nodes = check_positive_int("nodes", nodes)
    mode = math.sqrt(max(d - 1.0, 0.0))
    lo, hi = max(0.0, mode - _CHI_HALF_WIDTH), mode + _CHI_HALF_WIDTH
    x, w = np.polynomial.legendre.leggauss(nodes)
    r = lo + (hi - lo) * 0.5 * (x + 1.0)
    log_pdf = (d - 1.0) * np.log(r) - 0.5 * r * r - (0.5 * d - 1.0) * math.log(2.0) - gammaln(0.5 * d)
    return r, 0.5 * (hi - lo) * w * np.exp(log_pdf)


def _mixture_nodes(d: int, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``chi_nodes(d)``, refusing a ``tau`` that puts the largest node's beta beyond ``BETA_MAX`` (naming tau)."""
    r, w = chi_nodes(d)
    top = tau * float(r.max()) / math.sqrt(d)
    if top > BETA_MAX:
        raise ValueError(f"tau={tau:g} gives beta up to {top:g} over |q| ~ chi_{d}; the quadrature accepts "
                         f"|beta| <= {BETA_MAX:g}")
    return r, w


def random_query_ipr(n, d, tau=1.0):
    """Exact ``E[sum w^2]`` averaged over a random query ``q ~ N(0, I_d)``, i.i.d. ``N(0, I_d)`` keys.

    ``n``: real ``1 <= n <= 1e300`` (scalar or array); ``d``: key dimension (integer >= 1);
    ``tau``: finite temperature (only ``|tau|`` matters). Equals ``Var(o_c)/sigma_v^2`` for a fresh
    query per sequence. Cost: one :func:`expected_ipr` grid per quadrature node (~1 s in total).
    """
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    d = check_positive_int("d", d)
    tau = abs(check_real("tau", tau))
    r, w = _mixture_nodes(d, tau)
    flat = n_arr.ravel()
    total = np.zeros_like(flat)
    for rj, wj in zip(r, w):
        total += wj * np.asarray(expected_ipr(flat, tau * rj / math.sqrt(d)))
    return scalar_or_array(n, total.reshape(n_arr.shape))


def random_query_decay_exponent(n, d, tau=1.0):
    """Exact ``d ln E[sum w^2] / d ln N`` for the random-query mixture (same arguments as :func:`random_query_ipr`).

    With ``F = sum_j w_j f_N(beta_j)`` and ``N f_N' = f_N gamma_N``: ``N F'/F = sum_j w_j f_j gamma_j / F``.
    """
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    d = check_positive_int("d", d)
    tau = abs(check_real("tau", tau))
    r, w = _mixture_nodes(d, tau)
    flat = n_arr.ravel()
    num, den = np.zeros_like(flat), np.zeros_like(flat)
    for rj, wj in zip(r, w):
        e, g = ipr_and_exponent(flat, tau * rj / math.sqrt(d))
        num += wj * e * g
        den += wj * e
    return scalar_or_array(n, (num / den).reshape(n_arr.shape))


def random_query_series_coefficients(d, tau=1.0) -> tuple[float, ...]:
    """``E_q[c_k(beta(q))]`` for ``k = 1..4``: each power ``x^j = e^{j beta^2}`` of the lognormal ``c_k``
    averages to ``(1 - 2 j tau^2/d)^{-d/2}``. ``E_q[c_k]`` is finite only for ``d > k(k+1) tau^2``; the
    tuple holds the finite ones (so its length tells how many orders exist; THEORY.md 2.2).
    """
    d = check_positive_int("d", d)
    tau = check_real("tau", tau)
    # c_k(x) = x^top * sum_i a_i x^{-i} (coefficients shared with varsim.theory.series).
    out = []
    for top, coefs in _LOGNORMAL:
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
