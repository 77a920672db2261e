"""Large-N expansion ``E[sum w^2] = c1/N + c2/N^2 + c3/N^3 + c4/N^4 + O(N^-5)`` (THEORY.md 1.3).

The coefficients come from the delta-method (cumulant) expansion of ``A/B^2`` with
``A = mean(X_i^2)``, ``B = mean(X_i)`` for i.i.d. positive weights ``X_i``; ``derivations/series_coefficients.py``
derives them with SymPy and the tests check these NumPy formulas against that derivation.
The series is asymptotic, not convergent: the leading exponential of ``c_k`` for lognormal weights
is ``(-1)^{k-1} k e^{k(k+1) beta^2/2}``, so it is only useful for ``N >> e^{2 beta^2}``; use
:func:`varsim.theory.expected_ipr` otherwise.
"""

from __future__ import annotations

import numpy as np

from varsim._common.validate import check_int, check_real
from varsim.theory._args import real_array, scalar_or_array

__all__ = ["generic_series_coefficients", "ipr_series", "series_coefficients", "truncated_series", "LOGNORMAL"]


def generic_series_coefficients(m1, m2, m3, m4, m5):
    """``(c1, c2, c3, c4)`` of ``E[sum w^2]`` for weights ``w_i = X_i / sum_j X_j``, ``X_i`` i.i.d. > 0.

    ``m1..m5`` are the raw moments ``E[X^k]`` (positive, finite; arrays broadcast). The formulas
    depend only on the scale-free ratios ``r_k = m_k / m1^k``. Exp(1) weights (``m_k = k!``) give the
    Dirichlet(1, ..., 1) values ``(2, -2, 2, -2)`` of ``2/(N+1)``.
    """
    moments = [real_array(f"m{k}", m, minimum=0.0, strict_min=True) for k, m in enumerate((m1, m2, m3, m4, m5), 1)]
    log_m1 = np.log(moments[0])
    # Extreme moments: the ratios r_k = m_k / m1^k (formed in logs, so m1^k never underflows) may overflow to inf and
    # the coefficients then to +-inf or nan (inf - inf): no finite answer exists in double precision.
    with np.errstate(over="ignore", invalid="ignore"):
        r2, r3, r4, r5 = (np.exp(np.log(m) - k * log_m1) for k, m in zip((2, 3, 4, 5), moments[1:]))
        c1 = r2
        c2 = 3.0 * r2**2 - r2 - 2.0 * r3
        c3 = r2 + 6.0 * r3 - 9.0 * r2**2 + 3.0 * r4 - 16.0 * r2 * r3 + 15.0 * r2**3
        c4 = -(r2 + 14.0 * r3 - 21.0 * r2**2 + 18.0 * r4 - 96.0 * r2 * r3 + 4.0 * r5
               + 90.0 * r2**3 - 35.0 * r2 * r4 - 20.0 * r3**2 + 150.0 * r2**2 * r3 - 105.0 * r2**4)
    scalar = all(np.ndim(m) == 0 for m in (m1, m2, m3, m4, m5))
    return tuple(float(c) if scalar else c for c in (c1, c2, c3, c4))


# Lognormal weights X = e^{beta g}: r_k = m_k/m1^k = x^{k(k-1)/2}, x = e^{beta^2}.
# In powers of x (as in THEORY.md), each c_k as x^{top} * sum_i a_i x^{-i}; used for moments over a random
# query (E_q[x^j] is closed-form, see varsim.theory.random_query).
LOGNORMAL = (
    (1, (1.0,)),
    (3, (-2.0, 3.0, -1.0)),
    (6, (3.0, 0.0, -16.0, 21.0, -9.0, 1.0)),
    (10, (-4.0, 0.0, 0.0, 35.0, 2.0, -150.0, 201.0, -104.0, 21.0, -1.0)),
)
# The same polynomials in y = x - 1 = expm1(beta^2) (coefficients of y^0, y^1, ...). Every c_k has
# coefficients of a single sign in y, so evaluation has no cancellation (the x form loses all digits of
# c3 ~ 3 beta^4 as beta -> 0) and a huge beta overflows to a signed infinity, never to nan.
_LOGNORMAL_Y = (
    (1.0, 1.0),
    (0.0, -1.0, -3.0, -2.0),
    (0.0, 0.0, 3.0, 17.0, 29.0, 18.0, 3.0),
    (0.0, 0.0, 0.0, -15.0, -134.0, -411.0, -593.0, -445.0, -180.0, -40.0, -4.0),
)


def series_coefficients(beta):
    """``(c1, c2, c3, c4)`` for logits ``N(0, beta^2)`` (lognormal weights), ``x = e^{beta^2}``:

    ``c1 = x``, ``c2 = 3x^2 - x - 2x^3``, ``c3 = 3x^6 - 16x^4 + 21x^3 - 9x^2 + x``,
    ``c4 = -4x^10 + 35x^7 + 2x^6 - 150x^5 + 201x^4 - 104x^3 + 21x^2 - x``,
    evaluated in ``y = e^{beta^2} - 1`` to full relative precision (``c2 ~ -beta^2``, ``c3 ~ 3 beta^4``,
    ``c4 ~ -15 beta^6`` as ``beta -> 0``). ``beta`` may be an array; beyond ``beta ~ 5.2`` the
    coefficients overflow to +-inf.
    """
    b = real_array("beta", beta)
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.expm1(b * b)
        for coefs in _LOGNORMAL_Y:
            poly = np.full_like(y, coefs[-1])
            for c in reversed(coefs[:-1]):  # Horner in y; all terms share one sign
                poly = poly * y + c
            out.append(scalar_or_array(beta, poly))
    return tuple(out)


def truncated_series(n, coefficients):
    """``(value, meaningful)`` of the truncated series ``sum_{k=1..K} c_k / n^k`` for ``coefficients = (c_1..c_K)``.

    ``meaningful`` is the one validity rule for these asymptotic series (used by ``varsim theory``): every ``c_k``
    is finite and the terms shrink, ``|c_{k+1}| / n^{k+1} <= |c_k| / n^k`` for ``k < K``. An asymptotic series
    carries information only while its terms decrease; for lognormal weights (``c_k ~ (-1)^{k-1} k e^{k(k+1)
    beta^2/2}``) the last ratio needs ``N > (4/3) e^{4 beta^2}`` for large ``beta``, while ``beta -> 0`` is
    meaningful for every ``N``. ``value`` is ``nan`` where it is not meaningful (never an overflow).
    ``n``: real ``>= 1``, scalar or array; ``coefficients``: a non-empty sequence of reals (``inf`` allowed,
    meaning "diverges"). Returns floats/bools for scalar ``n``, else arrays of ``n``'s shape.
    """
    n_arr = real_array("n", n, minimum=1.0)
    if isinstance(coefficients, (str, bytes)) or len(coefficients) == 0:
        raise ValueError(f"coefficients must be a non-empty sequence of reals, got {coefficients!r}")
    coefs = np.array([float(c) for c in coefficients])
    if np.any(np.isnan(coefs)):
        raise ValueError(f"coefficients must not be nan, got {coefficients!r}")
    finite = bool(np.all(np.isfinite(coefs)))
    ln_n = np.log(n_arr)
    meaningful = np.full(n_arr.shape, finite)
    if finite:
        with np.errstate(divide="ignore"):
            log_abs = np.log(np.abs(coefs))  # -inf for a zero coefficient: a zero term never grows
        k = np.arange(1, coefs.size + 1)
        log_terms = log_abs[:, None] - k[:, None] * ln_n.ravel()[None, :]
        shrink = np.all(log_terms[1:] <= log_terms[:-1] + 1e-12, axis=0).reshape(n_arr.shape)
        meaningful &= shrink
    value = np.full(n_arr.shape, np.nan)
    if np.any(meaningful):
        m = n_arr[meaningful]
        total = np.zeros_like(m)
        for c in coefs[::-1]:  # Horner in 1/n: every partial sum is bounded by the leading term, no overflow
            total = (total + c) / m
        value[meaningful] = total
    return scalar_or_array(n, value), (bool(meaningful.reshape(-1)[0]) if np.ndim(n) == 0 else meaningful)


def ipr_series(n, beta, order: int = 4):
    """Truncated large-N series ``sum_{k<=order} c_k(beta) / n^k`` of ``E[sum w^2]``.

    ``n``: real ``>= 1`` (scalar or array); ``beta``: finite scalar; ``order``: 1..4.
    """
    n_arr = real_array("n", n, minimum=1.0)
    beta = check_real("beta", beta)
    order = check_int("order", order, minimum=1, maximum=4)
    coefs = series_coefficients(beta)[:order]
    if not all(np.isfinite(coefs)):
        raise ValueError(f"beta={beta} is too large for the series (its coefficients overflow); use expected_ipr")
    total = np.zeros_like(n_arr)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for k in range(order, 0, -1):  # Horner in 1/n
            total = (total + coefs[k - 1]) / n_arr
    return scalar_or_array(n, total)
