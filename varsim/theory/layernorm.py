"""LayerNorm of the attention output across its ``d_v`` coordinates (THEORY.md 4a).

``LN(o)_c = (o_c - obar) / sqrt(S^2 + eps)`` with the population variance ``S^2``. With ``eps = 0`` and
Gaussian values, ``LN(o) = sqrt(d_v) U`` with ``U`` uniform on the unit sphere of ``1^perp``, for every
``N`` and ``beta``: ``LN_c^2/(d_v - 1) ~ Beta(1/2, (d_v-2)/2)``, ``E LN_c^2 = 1``,
``E LN_c^4 = 3(d_v-1)/(d_v+1)`` (derived in ``derivations/layernorm_moments.py``).

With ``eps > 0``, ``Var(LN_c) = E[S^2/(S^2 + eps)]`` where, given the keys,
``S^2 = sigma_v^2 Y2 C`` and ``C ~ chi^2_{d_v-1}/d_v`` independent of ``Y2 = sum w^2``. The ``C``-average
is done exactly (a 1-D integral, :func:`layernorm_conditional_variance`); the law of ``Y2`` has no
closed form, so :func:`layernorm_variance_eps` averages over sampled ``Y2`` (the "conditional formula" of
THEORY.md 4a; seeded, with its standard error), and :func:`layernorm_variance_eps_upper` gives the
deterministic Jensen upper bound obtained by plugging in the exact ``E[Y2]`` (the conditional
variance is concave in ``Y2``). For large ``N`` both approach ``sigma_v^2 E[Y2] (1 - 1/d_v) / eps -> 0``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.special import betaln, gammaln

from varsim._common.seeding import SEED_DEFAULT, child_generator, resolve_seed
from varsim._common.validate import check_int, check_positive_int, check_real
from varsim.theory._args import real_array, scalar_or_array
from varsim.theory.ipr import N_MAX, expected_ipr

__all__ = [
    "Estimate",
    "layernorm_beta_parameters",
    "layernorm_conditional_variance",
    "layernorm_marginal_pdf",
    "layernorm_moments",
    "layernorm_variance_eps",
    "layernorm_variance_eps_upper",
]


class Estimate(NamedTuple):
    """A Monte Carlo estimate and its standard error."""

    value: float
    se: float


def _check_dv(d_v, minimum: int = 2) -> int:
    return check_int("d_v", d_v, minimum=minimum)


def layernorm_moments(d_v) -> tuple[float, float]:
    """``(E LN_c^2, E LN_c^4) = (1, 3(d_v-1)/(d_v+1))`` for Gaussian values, ``eps = 0``; ``d_v >= 2``."""
    d_v = _check_dv(d_v)
    return 1.0, 3.0 * (d_v - 1.0) / (d_v + 1.0)


def layernorm_beta_parameters(d_v) -> tuple[float, float]:
    """``(a, b) = (1/2, (d_v - 2)/2)`` with ``LN_c^2 / (d_v - 1) ~ Beta(a, b)``; ``d_v >= 3``
    (``d_v = 2`` is degenerate: ``LN_c = +-1``)."""
    d_v = _check_dv(d_v, minimum=3)
    return 0.5, 0.5 * (d_v - 2.0)


def layernorm_marginal_pdf(x, d_v):
    """Density of one LayerNorm coordinate ``LN_c`` (Gaussian values, ``eps = 0``), ``d_v >= 3``.

    ``pdf(x) = (1 - x^2/(d_v-1))^{(d_v-4)/2} / (sqrt(d_v-1) B(1/2, (d_v-2)/2))`` on ``|x| < sqrt(d_v-1)``,
    zero outside; symmetric, tends to the standard normal density as ``d_v -> inf``.
    """
    a, b = layernorm_beta_parameters(d_v)
    x_arr = real_array("x", x)
    with np.errstate(over="ignore"):  # |x| beyond ~1e154: s = inf, outside the support (density 0)
        s = x_arr * x_arr / (d_v - 1.0)
    inside = s < 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pdf = (b - 1.0) * np.log1p(-np.where(inside, s, 0.0)) - 0.5 * math.log(d_v - 1.0) - betaln(a, b)
    return scalar_or_array(x, np.where(inside, np.exp(log_pdf), 0.0))


# E[G/(G + delta)], G ~ Gamma(alpha, 1), by the trapezoid rule in s = ln g: the integrand
# exp(alpha s - e^s) e^s/(e^s + delta) is analytic and decays doubly exponentially on the right and like
# e^{alpha s} on the left, so a uniform grid converges geometrically. Computing the ratio itself (not
# 1 - delta E[1/(G+delta)]) keeps full relative precision when it is tiny.
_S_STEP = 0.05
_S_HI = 4.5  # e^{-e^4.5} ~ 1e-39
_DELTA_CHUNK = 2048


def _mean_gamma_ratio(alpha: float, delta: np.ndarray) -> np.ndarray:
    s = np.arange(-45.0 / alpha, _S_HI, _S_STEP)
    g = np.exp(s)
    kernel = np.exp(alpha * s - g - gammaln(alpha)) * _S_STEP
    out = np.empty(delta.size)
    for i in range(0, delta.size, _DELTA_CHUNK):
        d = delta[i : i + _DELTA_CHUNK]
        out[i : i + d.size] = (g[None, :] / (g[None, :] + d[:, None])) @ kernel
    return out


def layernorm_conditional_variance(y2, d_v, eps, sigma_v=1.0):
    """``E[S^2/(S^2 + eps) | Y2]`` with ``S^2 = sigma_v^2 Y2 chi^2_{d_v-1}/d_v``: the LayerNorm variance given the keys.

    ``y2``: IPR value(s) in ``(0, 1]``; ``d_v >= 2``; ``eps >= 0``; ``sigma_v > 0``. Concave and
    increasing in ``y2``; equals 1 when ``eps = 0``.
    """
    y = real_array("y2", y2, minimum=0.0, maximum=1.0, strict_min=True)
    d_v = _check_dv(d_v)
    eps = check_real("eps", eps, minimum=0.0)
    sigma_v = check_real("sigma_v", sigma_v, minimum=0.0, strict_min=True)
    if eps == 0.0:
        return scalar_or_array(y2, np.ones_like(y))
    # S^2 = sigma^2 y (2G/d_v), G ~ Gamma((d_v-1)/2): S^2/(S^2+eps) = G/(G + delta), delta = eps d_v/(2 sigma^2 y).
    with np.errstate(over="ignore", divide="ignore"):  # a delta that overflows to inf gives the ratio 0 (its limit)
        delta = eps * d_v / (2.0 * sigma_v * sigma_v * y.ravel())
    out = _mean_gamma_ratio(0.5 * (d_v - 1.0), delta)
    return scalar_or_array(y2, np.clip(out, 0.0, 1.0).reshape(y.shape))


def _ln_args(n, beta, d_v, eps, sigma_v):
    n = check_real("n", n, minimum=1.0, maximum=N_MAX)
    beta = abs(check_real("beta", beta))
    d_v = _check_dv(d_v)
    eps = check_real("eps", eps, minimum=0.0)
    sigma_v = check_real("sigma_v", sigma_v, minimum=0.0, strict_min=True)
    return n, beta, d_v, eps, sigma_v


def layernorm_variance_eps_upper(n, beta, d_v, eps, sigma_v=1.0) -> float:
    """Deterministic upper bound ``E_C[h(E[Y2])] >= Var(LN_c)`` (Jensen; exact when ``beta = 0``).

    Tight where ``Y2`` concentrates (large ``N`` in the annealed phase); about 1.5% high at
    ``N = 64, beta = 1, d_v = 8, eps = 0.01``.
    """
    n, beta, d_v, eps, sigma_v = _ln_args(n, beta, d_v, eps, sigma_v)
    return layernorm_conditional_variance(expected_ipr(n, beta), d_v, eps, sigma_v)


_CHUNK_ELEMENTS = 1 << 20  # logits sampled per chunk (bounded memory for large N)


def layernorm_variance_eps(n, beta, d_v, eps, sigma_v=1.0, *, samples: int = 20000, seed=SEED_DEFAULT,
                           rng=None) -> Estimate:
    """``Var(LN(o)_c)`` for Gaussian values and LayerNorm ``eps > 0``: the exact chi-square average given
    ``Y2``, averaged over ``samples`` draws of ``Y2`` (logits i.i.d. ``N(0, beta^2)``, ``n`` integer).

    Returns ``Estimate(value, se)``; chunk ``k`` of the ``Y2`` draws uses ``child_generator(root, k)`` under the
    root of ``seed`` or ``rng`` (SPEC 7). Averaging the conditional variance instead of ``S^2/(S^2+eps)`` removes
    the chi-square noise; the remaining error is that of the ``Y2`` law, which has no closed form.
    ``beta = 0`` (``Y2 = 1/N``) is exact with ``se = 0``.
    """
    n, beta, d_v, eps, sigma_v = _ln_args(n, beta, d_v, eps, sigma_v)
    n = check_positive_int("n", n)
    samples = check_int("samples", samples, minimum=2)
    root = resolve_seed(seed, rng)
    if beta == 0.0 or n == 1:
        return Estimate(float(layernorm_conditional_variance(1.0 / n, d_v, eps, sigma_v)), 0.0)
    rows = max(1, _CHUNK_ELEMENTS // n)
    y2 = np.empty(samples)
    for k, start in enumerate(range(0, samples, rows)):
        m = min(rows, samples - start)
        s = beta * child_generator(root, k).standard_normal((m, n))
        w = np.exp(s - s.max(axis=1, keepdims=True))  # max-subtraction: no overflow at large beta
        w /= w.sum(axis=1, keepdims=True)
        y2[start : start + m] = np.einsum("ij,ij->i", w, w)
    h = np.asarray(layernorm_conditional_variance(np.clip(y2, 1.0 / n, 1.0), d_v, eps, sigma_v))
    return Estimate(float(h.mean()), float(h.std(ddof=1) / math.sqrt(samples)))
