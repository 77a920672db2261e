"""varsim.theory.remedies for the attention variants: reference values of THEORY 4c, sigmoid quadrature against an
independent Gauss-Hermite rule and exact special cases, the top-k bound, adaptive temperature's switch-off point."""

import math

import numpy as np
import pytest

from varsim.theory import expected_ipr
from varsim.theory.remedies import (
    adaptive_switch_off_entropy,
    sigmoid_moments,
    sigmoid_variance,
    ssmax_ipr,
    topk_ipr_bounds,
    variant_beta,
    variant_ipr,
)


def test_ssmax_reference_values_theory_4c():
    """THEORY 4c (beta0 = 1): s = 0.5 gives 0.329, 0.199, 0.174, 0.181, 0.200, 0.250, 0.326, 0.490, 0.630 at
    N = 2^2 ... 2^80 (non-monotone, minimum near N = 2^6, tending to 1); s = 1: 0.471 (N = 4), 0.815 (2^80); P9:
    0.475399 (N = 64), 0.543917 (1024). Catches log2 N instead of ln N, or s applied as 1/s."""
    exps = [2, 4, 6, 8, 10, 14, 20, 40, 80]
    ref = [0.329, 0.199, 0.174, 0.181, 0.200, 0.250, 0.326, 0.490, 0.630]
    got = [variant_ipr("ssmax", 2.0**e, 1.0, s=0.5) for e in exps]
    np.testing.assert_allclose(got, ref, atol=6e-4)
    assert np.argmin(got) == 2 and got[-1] > got[0]
    assert variant_ipr("ssmax", 4, 1.0, s=1.0) == pytest.approx(0.471, abs=6e-4)
    assert variant_ipr("ssmax", 2.0**80, 1.0, s=1.0) == pytest.approx(0.815, abs=6e-4)
    np.testing.assert_allclose(variant_ipr("ssmax", np.array([64, 1024]), 1.0, s=1.0), [0.475399, 0.543917],
                               rtol=2e-6)
    np.testing.assert_allclose(variant_ipr("ssmax", [16, 256], 0.7, s=0.3), ssmax_ipr([16, 256], 0.3, 0.7),
                               rtol=1e-13)


def test_critical_and_logn_reference_values():
    """critical = REM scaling of THEORY 4c with c = s/sqrt2 (c sqrt(2 ln N) = s sqrt(ln N)), at ln N = 640:
    s = 2: E = 0.2958, s = 4: 0.6476 (frozen, -> 1 - 1/c); s = 0.7: (1/ln N) ln E = -0.5100; s = 1: -0.1308.
    logn: E[Y2](N, beta ln N / ln N0), clamped at 1 below N0. Catches sqrt(ln N) without the 2, beta0 ignored."""
    n = math.exp(640.0)
    assert variant_ipr("critical", n, 1.0, c=2 / math.sqrt(2)) == pytest.approx(0.2958, abs=2e-4)
    assert variant_ipr("critical", n, 1.0, c=4 / math.sqrt(2)) == pytest.approx(0.6476, abs=2e-4)
    assert math.log(variant_ipr("critical", n, 1.0, c=0.7 / math.sqrt(2))) / 640 == pytest.approx(-0.5100, abs=2e-4)
    assert math.log(variant_ipr("critical", n, 1.0, c=1 / math.sqrt(2))) / 640 == pytest.approx(-0.1308, abs=2e-4)
    assert variant_beta("critical", 256, 2.0, c=1.0, beta0=2.0) == pytest.approx(math.sqrt(2 * math.log(256)))
    assert variant_ipr("logn", 1024, 1.0, n0=32) == pytest.approx(expected_ipr(1024, 2.0), rel=1e-12)
    assert variant_ipr("logn", 8, 1.0, n0=32) == pytest.approx(expected_ipr(8, 1.0), rel=1e-12)
    assert variant_ipr("logn", 8, 1.0, n0=64, clamp=False) == pytest.approx(expected_ipr(8, 0.5), rel=1e-12)
    with pytest.raises(ValueError, match="topk"):
        variant_ipr("topk", 16, 1.0)
    with pytest.raises(ValueError, match="'s'"):
        variant_ipr("ssmax", 16, 1.0, s=-2)


def test_sigmoid_moments_against_gauss_hermite_and_exact_cases():
    """sigmoid(beta g - ln N): the adaptive quadrature equals a 200-node Gauss-Hermite rule (an independent method)
    to 1e-9 at moderate beta; N = 1 gives E[sum w] = 1/2 exactly (sigmoid(x) + sigmoid(-x) = 1); beta = 0 gives
    Var(sum w) = 0 and E[sum w^2] = N/(N+1)^2; for large N, N E[sum w^2] -> e^{2 beta^2} and
    N Var(sum w) -> e^{2 beta^2} - e^{beta^2} (both ~ 1/N, REMEDIES 3). Catches a
    bias of +ln N, Var(sum w) computed as N^2 Var(s) (correlated weights), or the 1/sqrt(2 pi) missing."""
    x, wts = np.polynomial.hermite_e.hermegauss(200)
    wts = wts / math.sqrt(2 * math.pi)
    for n, beta in ((16, 1.0), (1000, 1.5), (3, 0.3)):
        s = 1.0 / (1.0 + np.exp(-(beta * x - math.log(n))))
        m1, m2 = wts @ s, wts @ s**2
        y2, var_s1, s1 = sigmoid_moments(n, beta)
        assert y2 == pytest.approx(n * m2, rel=1e-9)
        assert var_s1 == pytest.approx(n * (m2 - m1 * m1), rel=1e-9)
        assert s1 == pytest.approx(n * m1, rel=1e-9)
    for beta in (0.5, 3.0):
        assert sigmoid_moments(1, beta)[2] == pytest.approx(0.5, abs=1e-12)
    y2, var_s1, _ = sigmoid_moments(np.array([4.0, 100.0]), 0.0)
    np.testing.assert_allclose(y2, [4 / 25, 100 / 101**2], rtol=1e-12)
    np.testing.assert_allclose(var_s1, 0.0, atol=1e-15)
    big = 1e12
    y2, var_s1, _ = sigmoid_moments(big, 1.0)
    assert big * y2 == pytest.approx(math.exp(2.0), rel=1e-9)  # N E[s^2] ~ E[e^{2 beta g}]/N
    assert big * var_s1 == pytest.approx(math.exp(2.0) - math.exp(1.0), rel=1e-9)  # minus N (E s)^2 ~ e^{beta^2}/N
    assert sigmoid_variance(64, 1.0, sigma_v=2.0, mu_v=3.0) == pytest.approx(
        4 * sigmoid_moments(64, 1.0)[0] + 9 * sigmoid_moments(64, 1.0)[1], rel=1e-14)


def test_topk_bound_and_adaptive_switch_off():
    """1/k <= sum w^2 <= 1 for top-k; P(H) = 1 at H ~ 5.94 nats (the largest root), so adaptive temperature leaves
    heads with H above it untouched. Catches 1/k^2 as the bound, or the root of P(H) = 0 (6.27) instead."""
    assert topk_ipr_bounds(8) == (0.125, 1.0)
    with pytest.raises(ValueError, match="'k'"):
        topk_ipr_bounds(0)
    assert adaptive_switch_off_entropy() == pytest.approx(5.9445, abs=1e-3)
