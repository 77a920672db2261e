"""``varsim.theory.remedies`` equals the SymPy derivations in ``derivations/remedies_theory.py``: sigmoid attention's
moments (exact cases, the large-N series, a 30-digit quadrature of the derived integrals) over N in [1, 1e300] and
beta in [0, 50], the output-variance identity, and the top-k bound (symbolically and on the package's top-k map).

Tolerances: ``sigmoid_moments`` runs scipy's adaptive quadrature at ``epsrel = 1e-12`` per piece and documents a
relative accuracy of ~1e-10; the tests hold it to that, 1e-10 relative. Values below 1e-300 (``Var(sum w)`` at
``beta = 1e-8``, ``N >= 1e270``) approach the subnormal floats, which carry fewer bits: those are held to an absolute
1e-310 instead. Exact arithmetic in the package (``beta = 0``, the bounds, the identity) is held to a few ulps.
"""

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
import sympy as sp

from varsim import theory as T
from varsim.variants import get_variant

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `derivations` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(ROOT))

from derivations import remedies_theory as R  # noqa: E402  (after the path above)

RTOL = 1e-10
ATOL = 1e-310


def _close(value, exact, rel=RTOL, abs_=ATOL):
    return abs(value - float(exact)) <= rel * abs(float(exact)) + abs_


def _assert_moments(got, ref, where):
    for name, value, exact in zip(("E[sum w^2]", "Var(sum w)", "E[sum w]"), got, ref):
        assert _close(value, exact), f"{name} at {where}: package {value!r}, derived {mp.nstr(exact, 17)}"


# ----------------------------------------------------------------------------------------------------- symbolic


def test_sum_moments_and_output_variance_are_derived():
    """The CGF gives E[sum w] = N m1, Var(sum w) = N (m2 - m1^2); conditioning on the weights gives
    E[o^2 | w] = sigma_v^2 sum w^2 + mu_v^2 (sum w)^2 and Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w);
    centring at any c leaves the variance unchanged."""
    ipr, var, mean = R.sum_moments()
    assert sp.simplify(ipr - R.n * R.m2) == 0 and sp.simplify(mean - R.n * R.m1) == 0
    assert sp.simplify(var - R.n * (R.m2 - R.m1**2)) == 0
    for keys in (2, 3, 5):
        cond_mean, cond_sq = R.conditional_output_moments(keys)
        w = sp.symbols(f"w1:{keys + 1}", nonnegative=True)
        s1, s2 = sum(w), sum(wi**2 for wi in w)
        assert sp.expand(cond_sq - R.sigma_v**2 * s2 - R.mu_v**2 * s1**2) == 0
        assert sp.expand(cond_mean - R.mu_v * s1) == 0
        assert sp.expand(R.output_variance(keys) - (R.sigma_v**2 * R.e_ipr + R.mu_v**2 * R.var_wsum)) == 0
    assert sp.expand(R.shifted_variance() - (R.m2 - R.m1**2)) == 0


def test_exact_cases_and_series_are_derived():
    """beta = 0: (N/(N+1)^2, 0, N/(N+1)); N = 1: s(g) + s(-g) = 1, E s = 1/2; E e^(j beta g) = e^(j^2 beta^2/2); the
    large-N leading terms e^(2 beta^2)/N, (e^(2 beta^2) - e^(beta^2))/N, e^(beta^2/2)."""
    N, b = R.n, R.beta
    expected = (N / (N + 1) ** 2, 0, N / (N + 1))
    assert all(sp.simplify(d - e) == 0 for d, e in zip(R.uniform_logits_moments(), expected))
    assert R.single_key_mean() == (1, sp.Rational(1, 2))
    for j in range(1, 5):
        assert sp.simplify(R.gaussian_mgf(j) - sp.exp(j**2 * b**2 / 2)) == 0
    ipr, var, mean = R.large_n_series(2)
    assert sp.simplify(ipr - sp.exp(2 * b**2) / N) == 0
    assert sp.simplify(var - (sp.exp(2 * b**2) - sp.exp(b**2)) / N) == 0
    assert sp.simplify(mean - (sp.exp(b**2 / 2) - sp.exp(2 * b**2) / N)) == 0
    ipr3 = R.large_n_series(3)[0]
    assert sp.simplify(ipr3 - sp.exp(2 * b**2) / N + 2 * sp.exp(sp.Rational(9, 2) * b**2) / N**2) == 0


def test_quadrature_ingredients_are_derived():
    """s(g) - s(0) equals both product forms; (ln sigmoid)'' = -1/(4 cosh^2(x/2)), (ln(1 - e^-x))'' =
    -1/(4 sinh^2(x/2)) (negative: one peak per integrand); the peak condition k beta sigmoid(L - beta g) = g; the
    large-N centring loss (y-1)/(y^2 (y+1)) peaks at the golden ratio with value phi^-5 < 0.1."""
    diff, pos, neg = R.centred_difference()
    assert sp.simplify(diff - pos) == 0 and sp.simplify(diff - neg) == 0
    c2_sig, c2_one = R.log_factor_curvatures()
    assert sp.simplify(c2_sig + 1 / (4 * sp.cosh(R.x / 2) ** 2)) == 0
    assert sp.simplify(c2_one + 1 / (4 * sp.sinh(R.x / 2) ** 2)) == 0
    for power in (1, 2):
        stated = power * R.beta * R.sigmoid(R.ln_n - R.beta * R.g) - R.g
        assert sp.simplify(R.peak_condition(power) - stated) == 0
    ratio, arg, top = R.centring_loss()
    golden = (1 + sp.sqrt(5)) / 2
    assert sp.simplify(arg - golden) == 0 and sp.simplify(top - golden**-5) == 0 and float(top) < 0.1


def test_topk_bound_is_derived():
    """Lagrange's identity and the square of a sum hold at k = 1..6; the constrained minimiser is w_i = 1/k with
    value 1/k; the bounds (1/k, 1) are attained as beta -> 0 and beta -> oo; Var(o_j) >= sigma_v^2 / k."""
    for kv in range(1, 7):
        assert R.topk_identities(kv) == (0, 0)
    for kv in range(1, 5):
        point, value = R.topk_minimiser(kv)
        assert value == sp.Rational(1, kv) and all(point[w] == sp.Rational(1, kv) for w in point if w.name != "lambda")
    assert R.topk_bounds() == (1 / R.k, 1)
    for kv in (2, 3, 4):
        assert R.topk_limits(kv) == (sp.Rational(1, kv), 1)
    assert sp.simplify(R.topk_output_variance_floor() - R.sigma_v**2 / R.k) == 0


# ----------------------------------------------------------------------------------------------------- numeric


_NS = (1.0, 2.0, 16.0, 1e3, 1e8, 1e20, 1e100, 1e154, 1e155, 1e200, 1e300)


@pytest.mark.parametrize("n", _NS)
def test_sigmoid_moments_equal_derived_beta_zero(n):
    """beta = 0 equals the derived (N/(N+1)^2, 0, N/(N+1)) to 4 ulps (the package's closed form), and the limit
    beta = 1e-300 (s differs from 1/(N+1) by 1e-300; the quadrature) to 1e-10, at every N up to 1e300. Catches an
    E[sum w^2] that underflows (E[s^2] = 1e-600 at N = 1e300) and a weight 1/N instead of 1/(N+1)."""
    with mp.workdps(30):
        exact = [mp.mpf(e.subs(R.n, sp.Float(n, 30))) for e in R.uniform_logits_moments()]
    for beta, rel in ((0.0, 1e-15), (1e-300, RTOL)):
        got = T.sigmoid_moments(n, beta)
        for value, ref in zip(got, exact):
            assert _close(value, ref, rel=rel, abs_=0.0 if ref else 1e-300)


@pytest.mark.parametrize("beta", (1e-8, 0.01, 0.5, 1.0, 3.0, 10.0, 50.0))
def test_sigmoid_single_key_mean_is_one_half(beta):
    """N = 1: E[sum w] = 1/2 exactly (the derived symmetry), for every beta. Catches a bias of ln N + 1."""
    assert _close(T.sigmoid_moments(1.0, beta)[2], 0.5)


@pytest.mark.parametrize("n", (1e100, 1e154, 1e155, 1e200, 1e250, 1e300))
def test_sigmoid_moments_equal_large_n_series(n):
    """At N >= 1e100 and beta <= 3 the derived series (6 terms, 30 digits) is exact to far below 1e-10: the terms
    fall by e^((2j+1) beta^2/2)/N <= 1e-75 and the region e^(beta g) > N holds Gaussian mass e^-2900. The package
    equals it to 1e-10. Catches the underflow of E[s^2] ~ 1e-600 (the quadrature returned 0 above N ~ 1e154), a
    Var(sum w) taken as E[s^2] - E[s]^2 (cancels all but beta^2 of it), and a bias of +ln N."""
    series = R.large_n_series(6)
    with mp.workdps(30):
        for beta in (1e-8, 1e-3, 0.3, 1.0, 2.0, 3.0):
            subs = {R.n: sp.Float(n, 30), R.beta: sp.Float(beta, 30)}
            exact = [mp.mpf(sp.N(e.subs(subs), 30)) for e in series]
            _assert_moments(T.sigmoid_moments(n, beta), exact, f"N={n:g}, beta={beta:g}")


_MOMENT = {p: sp.lambdify((R.g, R.beta, R.ln_n), R.moment_integrand(p), "mpmath") for p in (1, 2)}
_PEAK = {p: sp.lambdify((R.g, R.beta, R.ln_n), R.peak_condition(p), "mpmath") for p in (1, 2)}


def _quadrature_reference(n: float, beta: float):
    """``(N m2, N (m2 - m1^2), N m1)`` from the derived integrands at 30 digits: mpmath's tanh-sinh on a window of
    +-16 around the derived peak (bisection on the peak condition; beyond, below e^-128 of the peak), split near the
    peak and at the sigmoid's step ``L/beta``, each integrand divided by its peak value (mpmath stops at an absolute
    error). 30 digits leave 14 after the cancellation of m2 - m1^2 at beta = 1e-8."""
    with mp.workdps(30):
        b, ln_n = mp.mpf(beta), mp.log(mp.mpf(n))
        vals = []
        for p in (1, 2):
            lo, hi = mp.mpf(0), p * b
            for _ in range(70):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if _PEAK[p](mid, b, ln_n) > 0 else (lo, mid)
            width = min(mp.mpf(1), 1 / (b * math.sqrt(p)))
            pts = {lo + 16 * j / 8 for j in range(-8, 9)} | {lo + width * d for d in (-2, -1, -0.5, 0.5, 1, 2)}
            pts |= {ln_n / b + d / b for d in (-4, -1, 0, 1, 4) if abs(ln_n / b + d / b - lo) < 16}
            scale = _MOMENT[p](lo, b, ln_n)
            vals.append(scale * mp.quad(lambda v, p=p: _MOMENT[p](v, b, ln_n) / scale, sorted(pts)))
        n_m1, n_m2 = vals
        return n_m2, n_m2 - n_m1 * n_m1 / mp.exp(ln_n), n_m1


@pytest.mark.parametrize("n, betas", [
    (1.0, (1e-8, 0.3, 2.0, 50.0)),
    (16.0, (1e-4, 1.0, 5.0, 20.0)),
    (1e8, (0.01, 1.0, 4.0, 35.0)),
    (1e20, (1e-8, 0.5, 3.0, 10.0)),
    (1e154, (2.0, 10.0, 20.0)),
    (1e300, (5.0, 10.0, 20.0, 50.0)),
])
def test_sigmoid_moments_equal_quadrature_of_derived_integrals(n, betas):
    """Away from the series' reach (small N, beta up to the limit 50 where the weight is a step of width 0.02 at
    g = ln N / beta) the package equals the 30-digit quadrature of the derived integrals to 1e-10. Catches the
    1/sqrt(2 pi) dropped, the centred difference with the wrong sign on one side, Var(sum w) as N^2 Var(s), and the
    loss of Var(sum w) at beta = 1e-8 (the package returned 0 there)."""
    for beta in betas:
        _assert_moments(T.sigmoid_moments(n, beta), _quadrature_reference(n, beta), f"N={n:g}, beta={beta:g}")


@pytest.mark.parametrize("sigma_v, mu_v", [(1.0, 0.0), (0.5, 1.5), (2.0, -3.0), (0.0, 1.0)])
def test_sigmoid_variance_is_the_derived_identity(sigma_v, mu_v):
    """sigmoid_variance == the derived sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w) at the package's moments, to 2 ulps
    (the same numbers, two products and a sum). Catches the mean term dropped or sigma_v not squared."""
    identity = sp.lambdify((R.sigma_v, R.mu_v, R.e_ipr, R.var_wsum), R.output_variance(), "math")
    ns = np.array([1.0, 64.0, 1e30, 1e300])
    got = T.sigmoid_variance(ns, 1.2, sigma_v=sigma_v, mu_v=mu_v)
    y2, var_s1, _ = T.sigmoid_moments(ns, 1.2)
    for value, a, v in zip(got, y2, var_s1):
        assert value == pytest.approx(identity(sigma_v, mu_v, a, v), rel=5e-16, abs=1e-320)


def test_variant_theory_gives_numbers_at_1e300():
    """The theory of the sigmoid variant at N = 1e300 (beta = 1) is the series value, not a null cell left by an
    underflowing quadrature."""
    th = T.variant_theory("sigmoid", [1e300], 1.0)
    exact = [float(sp.N(e.subs({R.n: sp.Float(1e300, 30), R.beta: 1}), 30)) for e in R.large_n_series(4)]
    assert th.ipr[0] == pytest.approx(exact[0], rel=RTOL) and th.wsum_var[0] == pytest.approx(exact[1], rel=RTOL)


@pytest.mark.parametrize("k", (1, 2, 3, 7, 8, 1000, 2**31 - 1, 2**62))
def test_topk_bounds_equal_derivation(k):
    """topk_ipr_bounds(k) == the derived (1/k, 1), correctly rounded (1/k is one IEEE division). Catches 1/k^2,
    1/(k+1) or an upper bound k."""
    lower, upper = R.topk_bounds()
    assert T.topk_ipr_bounds(k) == (float(lower.subs(R.k, k)), float(upper))


@pytest.mark.parametrize("k", (1, 2, 5, 8))
def test_topk_map_attains_the_derived_bounds(k):
    """The package's top-k map (its NumPy reference) on 64 logits: equal logits give sum w^2 = 1/k (the derived
    minimiser), logits 800 apart give 1 (the beta -> oo limit), and 2000 Gaussian rows at beta in (0.1, 1, 5) stay
    within [1/k, 1] (up to 4 ulps). Catches a map that keeps k+1 logits or renormalises over all N."""
    lower, upper = (float(v) for v in (R.topk_bounds()[0].subs(R.k, k), R.topk_bounds()[1]))
    topk = get_variant("topk")
    flat = np.sum(topk.weights(np.zeros((1, 64)), k=k) ** 2)
    assert flat == pytest.approx(lower, rel=4e-16)
    steep = np.sum(topk.weights(np.arange(64.0)[None, :] * 800.0, k=k) ** 2)
    assert steep == pytest.approx(upper, rel=4e-16)
    rng = np.random.default_rng(34)
    for beta in (0.1, 1.0, 5.0):
        ipr = np.sum(topk.weights(beta * rng.standard_normal((2000, 64)), k=k) ** 2, axis=-1)
        assert np.all(ipr >= lower * (1 - 4e-16)) and np.all(ipr <= upper * (1 + 4e-16))
        if beta == 0.1:  # nearly equal logits: the lower bound is approached, not just respected
            assert np.min(ipr) < lower * 1.05
