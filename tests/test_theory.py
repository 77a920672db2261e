"""varsim.theory: exact quadrature, series, random query, REM asymptotics, remedies (THEORY.md 1-4, P10).

Reference numbers are THEORY.md's (computed there by an independent implementation); each test names the
wrong implementation it would catch.
"""

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from varsim import theory as T


def _close_to_digits(value: float, ref: float, digits: int, units: float = 0.5) -> bool:
    """``value`` agrees with ``ref`` given to ``digits`` significant digits: within ``units`` (default half) of a
    unit in its last place. Use ``units=1`` where the reference may itself have been rounded differently."""
    ulp = 10.0 ** (math.floor(math.log10(abs(ref))) - digits + 1)
    return abs(value - ref) <= units * ulp * (1 + 1e-9)


def _n2_closed_form(beta: float) -> float:
    """N = 2: E[Y2] = E[1 - 1/(2 cosh^2(beta D/2))], D ~ N(0, 2) (THEORY.md 1.2), by adaptive quadrature."""
    f = lambda dd: (1.0 - 0.5 / np.cosh(beta * dd / 2) ** 2) * np.exp(-dd * dd / 4) / math.sqrt(4 * math.pi)
    return quad(f, -60, 60, epsabs=0, epsrel=1e-13, limit=500, points=[0.0])[0]


# ----------------------------------------------------------------------------- exact quadrature (1.2)

EXACT_REFS = [  # (N, beta, E[Y2], significant digits) from THEORY.md 1.4 / 7
    (16, 1.0, 0.132452, 6), (64, 1.0, 0.0388042, 6), (1024, 1.0, 0.00263541, 6), (4096, 1.0, 0.000662418, 6),
    (64, 2.0, 0.160735, 6), (1024, 2.0, 0.0285382, 6), (256, 1.0, 0.0103345, 6), (256, 6.0, 0.54501, 5),
    (1024, 0.5 * math.log(1024), 0.199854, 6), (256, 0.5, 0.005007, 4), (256, 2.0, 0.072666, 5),
    (20000, 1.5, 4.7097e-4, 5), (1000, 3.0, 0.13611, 5), (30, 3.0, 0.40276, 5), (1000, 8.0, 0.60248, 5),
]


@pytest.mark.parametrize("n, beta, ref, digits", EXACT_REFS)
def test_expected_ipr_reference_values(n, beta, ref, digits):
    """Reproduces THEORY's exact table to every printed digit. Catches a wrong quadrature (e.g. L(t)^N instead
    of L(t)^(N-1), a missing factor N, or a z-grid that misses the tilted Gaussian at 2 beta)."""
    assert _close_to_digits(T.expected_ipr(n, beta), ref, digits)


def test_p10_beta_zero_is_uniform():
    """P10: beta = 0 gives uniform weights, E[Y2] = 1/N exactly (also for real N), and exponent -1."""
    n = np.array([1.0, 2.0, 7.5, 1e3, 1e300])
    np.testing.assert_allclose(T.expected_ipr(n, 0.0), 1.0 / n, rtol=1e-15)
    np.testing.assert_allclose(T.decay_exponent(n, 0.0), -1.0, rtol=1e-15)


@settings(max_examples=6)
@given(beta=st.floats(0.05, 12.0))
@example(beta=0.5)
@example(beta=1.0)
@example(beta=3.0)
@example(beta=10.0)
def test_p10_n2_closed_form(beta):
    """P10: N = 2 agrees with the closed form to 1e-10 (observed ~1e-15). Catches a wrong inner integral
    (e.g. e^{beta z} instead of e^{2 beta z} in L2) at any beta, small or frozen."""
    assert T.expected_ipr(2, beta) == pytest.approx(_n2_closed_form(beta), rel=1e-10)


@settings(max_examples=8)
@given(beta=st.floats(0.0, 1.2), k=st.integers(0, 12))
@example(beta=1.2, k=0)
@example(beta=0.5, k=4)
@example(beta=1e-7, k=3)
def test_p10_series_bracket(beta, k):
    """P10: for beta <= 1.2 and N >= 16 e^{2 beta^2}, |N E - c1 - c2/N| <= 2|c3|/N^2 + 1e-11.
    Catches a wrong c2 or c3 (sign or power of x) and a quadrature error above ~1e-11."""
    n = 16.0 * math.exp(2 * beta * beta) * 2.0**k
    c1, c2, c3, _ = T.series_coefficients(beta)
    assert abs(n * T.expected_ipr(n, beta) - c1 - c2 / n) <= 2 * abs(c3) / n**2 + 1e-11


@settings(max_examples=5)
@given(beta=st.floats(0.0, 8.0))
@example(beta=1.0)
@example(beta=6.0)
def test_p10_strictly_decreasing_in_n(beta):
    """P10: E[Y2] strictly decreases in N (integer and real N, up to 1e300). Catches an integrand that does
    not shrink with N (e.g. L^(N-1) replaced by L)."""
    n = np.concatenate([np.arange(1, 40, dtype=float), np.geomspace(40.5, 1e300, 40)])
    e = T.expected_ipr(n, beta)
    assert np.all(np.diff(e) < 0)
    assert np.all((e >= 1.0 / n * (1 - 1e-13)) & (e <= 1.0 + 1e-13))


def test_n_equals_one_and_huge_n():
    """N = 1 gives 1 (a single weight); at N = 1e300 the annealed law N E -> e^{beta^2} holds to the
    c2/N correction. Catches computing 1 - L without expm1/log space (L^(N-1) collapses at huge N)."""
    for beta in (0.3, 1.0, 4.0):
        assert T.expected_ipr(1, beta) == pytest.approx(1.0, rel=1e-12)
    assert 1e300 * T.expected_ipr(1e300, 1.0) == pytest.approx(math.e, rel=1e-12)
    assert 1e200 * T.expected_ipr(1e200, 3.0) == pytest.approx(math.exp(9.0), rel=1e-12)


FROZEN_TABLE = [  # THEORY.md 3.3: beta = 2 beta_c(N); exact E[Y2] and 1 - a_N/beta (4 digits)
    (1e2, 0.5997, 0.6102), (1e4, 0.5593, 0.5645), (1e8, 0.5345, 0.5370), (1e16, 0.5196, 0.5208),
    (1e32, 0.5110, 0.5116), (1e64, 0.5061, 0.5064), (1e128, 0.5033, 0.5035), (1e256, 0.5018, 0.5019),
]


def test_frozen_phase_table_up_to_1e256():
    """THEORY.md 3.3 at beta = 2 sqrt(2 ln N): exact values and the 1 - a_N/beta predictor, N up to 1e256.
    Catches a u-range that does not follow the frozen peak (at -beta a_N) and a wrong a_N correction."""
    for n, exact, predictor in FROZEN_TABLE:
        beta = 2.0 * math.sqrt(2.0 * math.log(n))
        assert _close_to_digits(T.expected_ipr(n, beta), exact, 4)
        assert abs(T.frozen_ipr(n, beta) - predictor) <= 1e-4


REM_TABLE = [  # THEORY.md 3.2: b, psi(b), (1/n) ln E[Y2] at n = ln N = 25, 100, 650 (4 decimals)
    (0.5, -0.75, (-0.7500, -0.7500, -0.7500)), (math.sqrt(2 / 3), -1 / 3, (-0.3689, -0.3413, -0.3345)),
    (1.0, -0.125, (-0.2135, -0.1532, -0.1307)), (1.2, -0.0272, (-0.1280, -0.0606, -0.0338)),
    (math.sqrt(2), 0.0, (-0.0848, -0.0284, -0.0058)), (1.7, 0.0, (-0.0576, -0.0165, -0.0027)),
]


def test_rem_rate_table():
    """THEORY.md 3.2: (1/n) ln E[Y2] at n = ln N = 25, 100, 650 (N up to 1e282, beta up to 43) to 4 decimals,
    approaching psi(b) from below. Catches loss of precision at astronomically large N and large beta, and a
    wrong middle branch of psi."""
    for b, psi, rates in REM_TABLE:
        for n, ref in zip((25.0, 100.0, 650.0), rates):
            rate = math.log(T.expected_ipr(math.exp(n), b * math.sqrt(n))) / n
            assert abs(rate - ref) <= 5e-5 + 1e-12
            assert rate <= T.rem_psi(b) + 1e-12
        assert T.rem_psi(b) == pytest.approx(psi, abs=5e-5)


@pytest.mark.parametrize("n, beta, ref", [(64, 1, -0.9271), (256, 1, -0.9751), (1024, 1, -0.9929),
                                          (64, 2, -0.5269), (1024, 2, -0.7276)])
def test_decay_exponent_reference(n, beta, ref):
    """THEORY.md 7 local exponents to 4 decimals. Catches gamma = N <ln L> without the leading 1."""
    assert abs(T.decay_exponent(n, beta) - ref) <= 5e-5


@settings(max_examples=6)
@given(ln_n=st.floats(0.5, 300.0), beta=st.floats(0.1, 12.0))
@example(ln_n=math.log(64), beta=2.0)
def test_decay_exponent_matches_finite_difference(ln_n, beta):
    """d ln E / d ln N equals a central difference of expected_ipr (h = 1e-4 in ln N) to 1e-6.
    Catches averaging ln L with the wrong weight or dropping the factor N."""
    h = 1e-4
    lo, hi = T.expected_ipr(np.exp([ln_n - h, ln_n + h]), beta)
    assert T.decay_exponent(math.exp(ln_n), beta) == pytest.approx(math.log(hi / lo) / (2 * h), abs=1e-6)


EXPONENT_CROSSINGS = [  # THEORY.md 3.4: ln N / beta^2 where the exact exponent first reaches -0.1/-0.5/-0.9
    (2, 0.924, -0.5), (2, 2.381, -0.9), (3, 1.101, -0.5), (3, 1.931, -0.9), (4, 1.090, -0.5), (4, 1.739, -0.9),
    (6, 0.301, -0.1), (6, 1.050, -0.5), (6, 1.579, -0.9), (10, 0.543, -0.1), (10, 1.019, -0.5), (10, 1.479, -0.9),
]


def test_decay_exponent_crossings_and_rule():
    """THEORY.md 3.4 crossings (3-digit abscissae, so |gamma - level| <= 1e-3), and the clamp rule is within
    0.43 of the exact exponent there. Catches an exponent with the wrong sign convention or scale."""
    for beta, x, level in EXPONENT_CROSSINGS:
        n = math.exp(x * beta * beta)
        assert abs(T.decay_exponent(n, beta) - level) <= 1e-3
        assert abs(T.effective_exponent(n, beta) - level) <= 0.43


def _mp_reference(n: float, beta: float) -> float:
    """Straightforward double integral N int t L2 L^(N-1) dt in mpmath (composite Gauss-Legendre, 20+log10 N
    digits), with no log-space or series tricks: an independent check of the production quadrature."""
    x, w = np.polynomial.legendre.leggauss(12)
    with mp.workdps(20 + int(math.log10(n))):
        xs, ws = [mp.mpf(float(v)) for v in x], [mp.mpf(float(v)) for v in w]
        big_n, b = mp.mpf(n), mp.mpf(beta)

        def panels(a, c, k):
            h = (c - a) / k
            return [(a + h * (p + (xi + 1) / 2), h * wi / 2) for p in range(k) for xi, wi in zip(xs, ws)]

        zw = [(b * z, wz * mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi))
              for z, wz in panels(mp.mpf(-10), 2 * b + 10, int(2 * beta + 20))]
        uc = -mp.log(big_n) - b * b / 2
        total = mp.mpf(0)
        for u, wu in panels(uc - 25 - 2 * b * b, uc + 6, 24):
            t = mp.exp(u)
            one_minus_l = mp.fsum(-wz * mp.expm1(-t * mp.exp(bz)) for bz, wz in zw)
            m = mp.fsum(wz * mp.exp(2 * (u + bz) - t * mp.exp(bz)) for bz, wz in zw)
            total += wu * big_n * m * mp.exp((big_n - 1) * mp.log1p(-one_minus_l))
        return float(total)


def test_mpmath_cross_check_large_n():
    """Production quadrature vs a high-precision mpmath double integral at N = 1e12, beta = 1 (1e-12).
    Catches 1 - L formed as a difference (loses ~12 digits here) and any quadrature shortcut."""
    assert T.expected_ipr(1e12, 1.0) == pytest.approx(_mp_reference(1e12, 1.0), rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("n, beta", [(16, 1.0), (1024, 2.0), (1e6, 1.5)])
def test_mpmath_cross_check_more_points(n, beta):
    """As above at more points (~5 s each)."""
    assert T.expected_ipr(n, beta) == pytest.approx(_mp_reference(n, beta), rel=1e-12)


def test_large_beta_memory_is_bounded():
    """beta = 1000 (a logit scale the simulator accepts, e.g. P6's tau = 1000): the u range grows like beta, and the
    quadrature must evaluate it in blocks. Catches evaluating the whole range at once (~1.5 GB of temporaries,
    a MemoryError at beta ~ 1e4); the value is the frozen-side 1 - O(a_N/beta)."""
    import tracemalloc

    tracemalloc.start()
    try:
        value = T.expected_ipr(64, 1000.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 400e6, peak
    assert 0.99 < value < 1.0 and abs(value - T.frozen_ipr(64, 1000.0)) < 1e-3


def test_vectorised_shapes_and_scalars():
    """Scalar in, float out; array in, array of the same shape out; sign of beta irrelevant."""
    assert isinstance(T.expected_ipr(64, 1.0), float)
    grid = np.array([[16, 64], [256, 1024]])
    out = T.expected_ipr(grid, -1.0)
    assert out.shape == (2, 2)
    assert out[0, 1] == T.expected_ipr(64, 1.0)
    e, g = T.ipr_and_exponent([64, 256], 1.0)
    np.testing.assert_array_equal(g, T.decay_exponent([64, 256], 1.0))
    np.testing.assert_array_equal(e, T.expected_ipr([64, 256], 1.0))


def test_second_moment():
    """E[Y2^2]: N = 2 closed form (1e-10) and Var(Y2) >= 0. Catches a missing i != j term."""
    for beta in (0.5, 1.0, 3.0):
        f = lambda dd, beta=beta: ((1 - 0.5 / np.cosh(beta * dd / 2) ** 2) ** 2 * np.exp(-dd * dd / 4)
                                   / math.sqrt(4 * math.pi))
        ref = quad(f, -60, 60, epsabs=0, epsrel=1e-13, limit=500, points=[0.0])[0]
        assert T.ipr_second_moment(2, beta) == pytest.approx(ref, rel=1e-10)
    for n in (16, 1024, 1e9):
        assert T.ipr_second_moment(n, 1.0) > T.expected_ipr(n, 1.0) ** 2
    assert T.ipr_second_moment(64, 0.0) == pytest.approx(1 / 64**2, rel=1e-15)


# ----------------------------------------------------------------------------- series (1.3)

def test_series_coefficients_known_values():
    """Exp(1) weights give the Dirichlet 2/(N+1) coefficients; lognormal = generic with m_k = x^{k^2/2};
    c2 < 0 for beta > 0. Catches a wrong generic formula (any single term)."""
    assert T.generic_series_coefficients(1, 2, 6, 24, 120) == pytest.approx((2, -2, 2, -2), rel=1e-14)
    for beta in (0.1, 0.7, 1.3):
        moments = [math.exp(k * k * beta * beta / 2) for k in range(1, 6)]
        assert T.series_coefficients(beta) == pytest.approx(T.generic_series_coefficients(*moments), rel=1e-11)
        assert T.series_coefficients(beta)[1] < 0


TRUNCATION_TABLE = [  # THEORY.md 1.3: relative error of the truncated series (2 significant digits)
    (0.5, 64, (6.9e-3, -1.6e-4, 6.6e-6, -4.3e-7)),
    (1.0, 256, (2.8e-2, -3.1e-3, 8.8e-4, -5.3e-4)),
    (1.0, 1024, (7.3e-3, -2.3e-4, 1.8e-5, -3.3e-6)),
]


def test_ipr_series_truncation_table():
    """Relative errors of order-1..4 truncations match THEORY's table. Catches an off-by-one power of N."""
    for beta, n, errs in TRUNCATION_TABLE:
        exact = T.expected_ipr(n, beta)
        for order, ref in enumerate(errs, 1):
            assert _close_to_digits(T.ipr_series(n, beta, order) / exact - 1, ref, 2, units=1.0)


def test_series_overflow_is_not_nan():
    """Huge beta: coefficients overflow to signed infinities, never NaN; ipr_series refuses instead."""
    c = T.series_coefficients(20.0)
    assert math.isfinite(c[0]) and c[1:] == (-math.inf, math.inf, -math.inf)
    assert T.series_coefficients(30.0) == (math.inf, -math.inf, math.inf, -math.inf)
    with pytest.raises(ValueError, match="beta"):
        T.ipr_series(64, 20.0)


# ----------------------------------------------------------------------------- random query (2.1)

RANDOM_QUERY_REFS = {16: {64: 2.53779, 256: 2.76853, 512: 2.82852}, 64: {64: 2.49771, 256: 2.67616, 512: 2.71607},
                     8: {64: 2.58577}, 4: {64: 2.66641}, 32: {256: 2.70687}}


@pytest.mark.parametrize("d", sorted(RANDOM_QUERY_REFS))
def test_random_query_reference(d):
    """N E[Y2] for q ~ N(0, I_d) to THEORY's 6 digits. Catches beta^2 = tau^2 |q|^2 (missing 1/d) and a
    chi density with the wrong degrees of freedom."""
    ns = sorted(RANDOM_QUERY_REFS[d])
    values = np.asarray(T.random_query_ipr(ns, d)) * ns
    for n, v in zip(ns, values):
        assert _close_to_digits(v, RANDOM_QUERY_REFS[d][n], 6)


def test_random_query_limit_and_exponent():
    """Limit (1 - 2tau^2/d)^{-d/2} (THEORY values), its domain, E_q[c2] at d = 16, and the mixture exponent
    vs a finite difference. Catches (1 - tau^2/d) and a mixture exponent that averages gamma unweighted."""
    assert T.random_query_limit(16) == pytest.approx(2.9103, abs=5e-5)
    assert T.random_query_limit(64) == pytest.approx(2.7620, abs=5e-5)
    assert T.random_query_limit(4) == pytest.approx(4.0, rel=1e-14)
    assert T.random_query_limit(3) == pytest.approx(5.196, abs=5e-4)
    with pytest.raises(ValueError, match="d"):
        T.random_query_limit(2, 1.0)
    coefs = T.random_query_series_coefficients(16)
    assert len(coefs) == 3 and coefs[1] == pytest.approx(-58.84, abs=5e-3)
    h = 1e-3
    lo, hi = T.random_query_ipr(np.exp([math.log(256) - h, math.log(256) + h]), 16)
    assert T.random_query_decay_exponent(256, 16) == pytest.approx(math.log(hi / lo) / (2 * h), abs=1e-6)


def _outer_reference(n: float, d: int, tau: float) -> float:
    """N E_q[f_N(beta)] by an independent outer quadrature: QUADPACK (scipy ``quad``) over beta = tau |q|/sqrt(d)
    on [0, B] with B from the chi_d tail, breakpoints at THEORY's phase boundaries beta^2 = (2/3, 1, 2) ln N and at
    the chi mode; the inner f_N is ``expected_ipr`` (itself checked against mpmath and the N = 2 closed form)."""
    from scipy.stats import chi

    slope = tau / math.sqrt(d)
    ln_n = math.log(n)
    top = slope * chi.isf(1e-18 / n, d)  # beyond: mass < 1e-18/N <= 1e-18 E[Y2]
    pts = sorted({math.sqrt(c * ln_n) for c in (2 / 3, 1.0, 2.0)} | {slope * math.sqrt(max(d - 1, 0))})
    pts = [p for p in pts if 0 < p < top]
    dens = lambda b: chi.pdf(b / slope, d) / slope
    return n * quad(lambda b: dens(b) * T.expected_ipr(n, b), 0.0, top, points=pts, limit=400,
                    epsabs=0.0, epsrel=1e-11)[0]


def test_random_query_large_n_follows_the_mass():
    """d = 2, tau = 1 at N = 1e40 and 1e100: N E = (2/3) ln N - 4/9 (THEORY 2.3, 11 digits at 1e100) and 153.0612284
    at 1e100; at 1e40 also the independent outer quadrature. Catches an |q| integral cut off near the chi bulk
    (it gives 60.5 at 1e100 and is 4% low at 1e40), where N E flattens instead of growing like (2/3) ln N."""
    ns = np.array([1e40, 1e100])
    values = np.asarray(T.random_query_ipr(ns, 2, 1.0)) * ns
    np.testing.assert_allclose(values, 2 / 3 * np.log(ns) - 4 / 9, rtol=0, atol=2e-9)
    assert values[1] == pytest.approx(153.0612284218, rel=1e-11)
    assert values[0] == pytest.approx(_outer_reference(1e40, 2, 1.0), rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("n, d, tau", [(1e300, 2, 1.0), (1e30, 1, 1.0), (1e60, 3, 1.0), (1e200, 6, 1.7),
                                       (1e12, 16, 2.5), (1e100, 64, 1.0), (64, 16, 1.0)])
def test_random_query_matches_independent_outer_quadrature(n, d, tau):
    """Against the independent QUADPACK outer integral at large N, d <= 2 tau^2 and d > 2 tau^2, to 1e-9.
    Catches a window that misses where the mass lives (far from the chi bulk at large N)."""
    assert n * T.random_query_ipr(n, d, tau) == pytest.approx(_outer_reference(n, d, tau), rel=1e-9)


@pytest.mark.slow
def test_random_query_d1_exponent():
    """d = 1, tau = 1: the exact local exponent at N = 1e16 equals the central difference of ln of the independent
    outer quadrature, and at N = 1e128 it is THEORY 2.3's -0.620 on its way to 1/2 - sqrt5/2 = -0.618. Catches a
    mixture window fixed at the chi bulk (whose exponent tends to -1) and an exponent averaged without the weights
    f_N."""
    g16, g128 = T.random_query_decay_exponent(np.array([1e16, 1e128]), 1, 1.0)
    h = 0.05
    lo, hi = (_outer_reference(1e16 * math.exp(s), 1, 1.0) / (1e16 * math.exp(s)) for s in (-h, h))
    assert g16 == pytest.approx(math.log(hi / lo) / (2 * h), abs=1e-5)
    assert g128 == pytest.approx(-0.620, abs=1.5e-3)


def test_chi_nodes_integrate_chi_moments():
    """The |q| rule integrates 1, E|q|^2 = d and E e^{tau^2|q|^2/d} (the limit) to 1e-10."""
    for d in (1, 4, 16, 64):
        r, w = T.chi_nodes(d)
        assert w.sum() == pytest.approx(1.0, rel=1e-12)
        assert w @ r**2 == pytest.approx(d, rel=1e-11)
        if d > 2:
            assert w @ np.exp(r**2 / d) == pytest.approx(T.random_query_limit(d), rel=1e-10)


# ----------------------------------------------------------------------------- REM (3.2-3.4)

def test_rem_phases_and_rule():
    """Thresholds, phase labels at their boundaries (ln N vs beta^2/2 and 3 beta^2/2), clamp rule, a_N."""
    assert T.rem_thresholds() == pytest.approx((math.sqrt(2 / 3), math.sqrt(2)))
    beta = 2.0
    assert T.phase(math.exp(0.49 * beta**2), beta) == "frozen"
    assert T.phase(math.exp(0.51 * beta**2), beta) == "intermediate"
    assert T.phase(math.exp(1.49 * beta**2), beta) == "intermediate"
    assert T.phase(math.exp(1.51 * beta**2), beta) == "annealed"
    assert list(T.phase([2, 1e9], 0.0)) == ["annealed", "annealed"]
    np.testing.assert_allclose(T.effective_exponent(np.exp(np.array([0.1, 1.0, 1.25, 3.0]) * 4), 2.0),
                               [0.0, -0.5, -0.75, -1.0], atol=1e-14)
    n = 1e6
    ln_n = math.log(n)
    a_n = math.sqrt(2 * ln_n) - (math.log(ln_n) + math.log(4 * math.pi)) / (2 * math.sqrt(2 * ln_n))
    assert T.frozen_a_n(n) == pytest.approx(a_n, rel=1e-15)


# ----------------------------------------------------------------------------- remedies (4b, 4c)

def test_remedies():
    """SSMax (P9 references), fixed standardisation ratios (4b), IPR normalisation. Catches SSMax with log2 N
    (0.52/0.66 instead of 0.475/0.544) and a standardisation that uses the e^{beta^2}/N asymptote."""
    np.testing.assert_allclose(T.ssmax_ipr([64, 1024], 1.0, 1.0), [0.475399, 0.543917], atol=5e-7)
    np.testing.assert_allclose(T.fixed_standardized_variance([256, 1024, 4096], 64, 1.0),
                               [0.2663, 0.0679, 0.0171], atol=5e-5)
    assert T.ipr_normalized_variance(1.7) == pytest.approx(2.89)
    s05 = T.ssmax_ipr(2.0 ** np.array([2, 4, 6, 8, 10, 14, 20, 40, 80]), 0.5, 1.0)
    np.testing.assert_allclose(s05, [0.329, 0.199, 0.174, 0.181, 0.200, 0.250, 0.326, 0.490, 0.630], atol=5e-4)


# ----------------------------------------------------------------------------- argument validation

NAN, INF = float("nan"), float("inf")
MORE_BAD_CALLS = [
    (lambda: T.ipr_and_exponent(INF, 1.0), "n"),
    (lambda: T.ipr_and_exponent(64, NAN), "beta"),
    (lambda: T.ipr_second_moment(64, INF), "beta"),
    (lambda: T.ipr_series(NAN, 1.0), "n"),
    (lambda: T.ipr_series(64, INF), "beta"),
    (lambda: T.generic_series_coefficients(1, 2, INF, 24, 120), "m3"),
    (lambda: T.series_coefficients(INF), "beta"),
    (lambda: T.truncated_series(NAN, (1.0,)), "n"),
    (lambda: T.truncated_series(0.5, (1.0,)), "n"),
    (lambda: T.truncated_series(64, ()), "coefficients"),
    (lambda: T.truncated_series(64, (1.0, NAN)), "coefficients"),
    (lambda: T.random_query_ipr(INF, 16), "n"),
    (lambda: T.random_query_ipr(64, 2.5), "d"),
    (lambda: T.random_query_ipr_and_exponent(64, 16, tau=INF), "tau"),
    (lambda: T.random_query_ipr_and_exponent(64, 16, tau=1e6), "tau"),
    (lambda: T.random_query_decay_exponent(64, -1), "d"),
    (lambda: T.random_query_series_coefficients(16, NAN), "tau"),
    (lambda: T.random_query_series_coefficients(0), "d"),
    (lambda: T.random_query_limit(16, INF), "tau"),
    (lambda: T.chi_nodes(0), "d"),
    (lambda: T.chi_nodes(4, nodes=0), "nodes"),
    (lambda: T.rem_psi(NAN), "b"),
    (lambda: T.rem_psi(INF), "b"),
    (lambda: T.effective_exponent(64, NAN), "beta"),
    (lambda: T.phase(INF, 1.0), "n"),
    (lambda: T.frozen_a_n(NAN), "n"),
    (lambda: T.frozen_ipr(64, INF), "beta"),
    (lambda: T.layernorm_moments(1), "d_v"),
    (lambda: T.layernorm_beta_parameters(2), "d_v"),
    (lambda: T.layernorm_marginal_pdf(NAN, 8), "x"),
    (lambda: T.layernorm_marginal_pdf(0.0, 2.5), "d_v"),
    (lambda: T.layernorm_conditional_variance(0.0, 8, 0.01), "y2"),
    (lambda: T.layernorm_conditional_variance(0.5, 8, NAN), "eps"),
    (lambda: T.layernorm_conditional_variance(0.5, 8, 0.01, sigma_v=0.0), "sigma_v"),
    (lambda: T.layernorm_variance_eps(64.5, 1.0, 8, 0.01), "n"),
    (lambda: T.layernorm_variance_eps(64, 1.0, 8, 0.01, samples=1), "samples"),
    (lambda: T.layernorm_variance_eps(64, INF, 8, 0.01), "beta"),
    (lambda: T.layernorm_variance_eps_upper(64, 1.0, 8, -1.0), "eps"),
    (lambda: T.ipr_normalized_variance(NAN), "sigma_v"),
    (lambda: T.ipr_normalized_variance(-1.0), "sigma_v"),
    (lambda: T.fixed_standardized_variance(256, 64, NAN), "beta"),
    (lambda: T.fixed_standardized_variance(NAN, 64, 1.0), "n"),
    (lambda: T.ssmax_beta(64, 1.0, INF), "beta0"),
    (lambda: T.ssmax_beta(0.5, 1.0, 1.0), "n"),
    (lambda: T.ssmax_ipr(64, 1e6, 1.0), "beta"),
]


@pytest.mark.parametrize("call, name", MORE_BAD_CALLS)
def test_every_public_function_validates(call, name):
    """NaN, inf and out-of-range arguments of every public theory function raise ValueError naming the parameter
    (never a NaN result, an OverflowError or a traceback from inside NumPy/SciPy)."""
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda: T.expected_ipr(0, 1.0), "n"),
    (lambda: T.expected_ipr(-3, 1.0), "n"),
    (lambda: T.expected_ipr(float("nan"), 1.0), "n"),
    (lambda: T.expected_ipr(1e301, 1.0), "n"),
    (lambda: T.expected_ipr("64", 1.0), "n"),
    (lambda: T.expected_ipr([], 1.0), "n"),
    (lambda: T.expected_ipr(64, float("inf")), "beta"),
    (lambda: T.expected_ipr(64, None), "beta"),
    (lambda: T.expected_ipr(64, 2 * T.BETA_MAX), "beta"),  # finite, but the quadrature's u range grows like beta
    (lambda: T.ipr_second_moment(64, -2 * T.BETA_MAX), "beta"),
    (lambda: T.random_query_ipr(64, 16, tau=T.BETA_MAX), "tau"),
    (lambda: T.decay_exponent(0.5, 1.0), "n"),
    (lambda: T.ipr_second_moment(1.5, 1.0), "n"),
    (lambda: T.ipr_series(64, 1.0, order=5), "order"),
    (lambda: T.series_coefficients(float("nan")), "beta"),
    (lambda: T.generic_series_coefficients(1, -2, 6, 24, 120), "m2"),
    (lambda: T.random_query_ipr(64, 0), "d"),
    (lambda: T.random_query_ipr(64, 16, tau=float("nan")), "tau"),
    (lambda: T.random_query_limit(2.5), "d"),
    (lambda: T.rem_psi(-0.1), "b"),
    (lambda: T.effective_exponent(0, 1.0), "n"),
    (lambda: T.phase(64, "x"), "beta"),
    (lambda: T.frozen_a_n(1.0), "n"),
    (lambda: T.frozen_ipr(64, 0.0), "beta"),
    (lambda: T.ssmax_ipr(64, float("nan"), 1.0), "s"),
    (lambda: T.fixed_standardized_variance(256, 0, 1.0), "n0"),
])
def test_arguments_are_validated(call, name):
    """Bad input raises ValueError naming the parameter (never NaN or a traceback from deep inside)."""
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


# ----------------------------------------------------------------------------- no warnings leak

def _warning_grid():
    calls = []
    for b in (0.0, 1e-9, 1e-4, 0.3, 2.0, 27.0, 60.0, 1e4):
        for n in (1.0, 2.0, 1e300):
            calls += [lambda n=n, b=b: T.ipr_series(n, b),
                      lambda n=n, b=b: T.truncated_series(n, T.series_coefficients(b)),
                      lambda n=n, b=b: T.effective_exponent(n, b), lambda n=n, b=b: T.phase(n, b)]
            if b <= 27.0:  # the quadratures (their cost grows like beta)
                calls.append(lambda n=n, b=b: T.ipr_and_exponent(n, b))
                if n >= 2:
                    calls.append(lambda n=n, b=b: T.ipr_second_moment(n, b))
            if n > 1 and b > 0:
                calls.append(lambda n=n, b=b: T.frozen_ipr(n, b))
        calls.append(lambda b=b: T.series_coefficients(np.array([b, 40.0])))
        calls.append(lambda b=b: T.rem_psi(np.array([b, 1e6])))
    for tau in (0.0, 0.1, 1.0, 30.0, 1000.0, 1e6):
        for d in (1, 2, 64):
            calls += [lambda d=d, tau=tau: T.random_query_series_coefficients(d, tau),
                      lambda d=d, tau=tau: T.random_query_limit(d, tau)]
    calls += [
        lambda: T.random_query_ipr([1.0, 1e300], 2, 0.0),
        lambda: T.random_query_ipr_and_exponent([1.0, 64.0], 1, 1.5),
        lambda: T.ssmax_beta(1e300, 1e6, 1.0),
        lambda: T.layernorm_conditional_variance([1e-300, 1.0], 8, 1e-5, 1e-150),
        lambda: T.layernorm_marginal_pdf([0.0, 2.6, 1e200], 8),
        lambda: T.layernorm_variance_eps_upper(1e300, 2.0, 8, 1e300),
        lambda: T.generic_series_coefficients(1e-200, 1e200, 1e300, 1e300, 1e300),
        lambda: T.frozen_a_n([1.0000001, 1e300]),
        lambda: T.fixed_standardized_variance([1.0, 1e300], 2.0, 27.0),
    ]
    return calls


def test_no_runtime_warnings():
    """Every public theory function over a wide grid (N from 1 to 1e300, beta from 0 to 1e4, tau up to 1e6,
    extreme moments and eps) runs with warnings turned into errors: out-of-range arguments may raise
    ValueError, nothing may warn. Catches n**2 at N = 1e300, m1**k underflow, x*x overflow and the like."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for call in _warning_grid():
            try:
                call()
            except ValueError:
                pass
