"""varsim.theory.layernorm: the LayerNorm law of THEORY.md 4a, against quadrature and direct simulation."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from varsim import theory as T
from varsim._common.seeding import child_generator


def _layernorm(o: np.ndarray, eps: float) -> np.ndarray:
    """torch-style LayerNorm over the last axis: population variance (ddof=0), eps inside the square root."""
    centred = o - o.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps)


def _simulate_outputs(n: int, beta: float, d_v: int, m: int, seed: int) -> np.ndarray:
    """``m`` attention outputs with Gaussian logits N(0, beta^2) and N(0, 1) values (explicit values)."""
    rng = child_generator(seed, 0)
    s = beta * rng.standard_normal((m, n))
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    v = rng.standard_normal((m, n, d_v))
    return np.einsum("mn,mnc->mc", w, v)


def test_moments_beta_law_and_pdf():
    """E LN^2 = 1, E LN^4 = 3(d_v-1)/(d_v+1), Beta(1/2, (d_v-2)/2), and the pdf integrates to those moments.
    Catches Beta(1/2, (d_v-1)/2) (the law of a coordinate on the full sphere, without removing the mean)."""
    assert T.layernorm_moments(8) == (1.0, 3 * 7 / 9)
    assert T.layernorm_moments(2) == (1.0, 1.0)  # LN_c = +-1
    assert T.layernorm_beta_parameters(16) == (0.5, 7.0)
    for d_v in (3, 4, 8, 16):
        edge = math.sqrt(d_v - 1)
        pdf = lambda x, d_v=d_v: T.layernorm_marginal_pdf(x, d_v)
        mass = integrate.quad(pdf, -edge, edge, limit=200)[0]
        m4 = integrate.quad(lambda x, pdf=pdf: x**4 * pdf(x), -edge, edge, limit=200)[0]
        assert mass == pytest.approx(1.0, rel=1e-8)
        assert m4 == pytest.approx(T.layernorm_moments(d_v)[1], rel=1e-8)
    assert T.layernorm_marginal_pdf(3.0, 8) == 0.0


def test_p8_layernorm_eps0_matches_simulation():
    """P8: with eps = 0, mean_c LN^2 = 1 per vector (1e-10) and E LN_c^4 = 3(d_v-1)/(d_v+1) at N = 16 and 4096,
    within 5 SE (seeded). Catches LN with ddof=1 (mean_c LN^2 = (d_v-1)/d_v) and an N-dependent law."""
    d_v = 16
    for n, m, seed in ((16, 2000, 1), (4096, 300, 2)):
        ln = _layernorm(_simulate_outputs(n, 1.0, d_v, m, seed), 0.0)
        np.testing.assert_allclose((ln**2).mean(axis=1), 1.0, atol=1e-10)
        per_seq = (ln**4).mean(axis=1)  # pooled over coordinates; one value per independent sequence
        se = per_seq.std(ddof=1) / math.sqrt(m)
        assert abs(per_seq.mean() - T.layernorm_moments(d_v)[1]) <= 5 * se


def test_conditional_variance_matches_quadrature():
    """E[S^2/(S^2+eps) | Y2] with S^2 = sigma^2 Y2 chi2_{d_v-1}/d_v against scipy quad to 1e-9, incl. tiny values.
    Catches chi2_{d_v} instead of chi2_{d_v-1} (population variance loses one degree of freedom)."""
    for d_v in (2, 3, 8, 64):
        for y in (1e-7, 1e-3, 0.05, 1.0):
            a = 1.3**2 * y
            ref = integrate.quad(lambda c, a=a, d_v=d_v: (a * c / (a * c + 0.01)
                                                         * stats.chi2.pdf(c * d_v, d_v - 1) * d_v),
                                 0, np.inf, limit=400, epsabs=0, epsrel=1e-12)[0]
            assert T.layernorm_conditional_variance(y, d_v, 0.01, sigma_v=1.3) == pytest.approx(ref, rel=1e-9)
    assert T.layernorm_conditional_variance(0.3, 8, 0.0) == 1.0


def test_variance_eps_reproduces_theory():
    """THEORY.md 4a (d_v = 8, beta = sigma = 1, eps = 1e-2): N = 64, 1024 conditional formula 0.7212, 0.1782 and
    MC 0.7201, 0.1796, within 5 SE + 1%; the plug-in E[Y2] value is a Jensen upper bound. Catches eps added to
    the standard deviation instead of the variance (0.886 at N = 64)."""
    for n, cond, mc in ((64, 0.7212, 0.7201), (1024, 0.1782, 0.1796)):
        est = T.layernorm_variance_eps(n, 1.0, 8, 1e-2, samples=4000 if n == 64 else 1000, seed=3)
        for ref in (cond, mc):
            assert abs(est.value - ref) <= 5 * est.se + 0.01 * ref
        assert T.layernorm_variance_eps_upper(n, 1.0, 8, 1e-2) >= est.value - 5 * est.se
    exact = T.layernorm_variance_eps(64, 0.0, 8, 1e-2)
    assert exact.se == 0.0 and exact.value == T.layernorm_conditional_variance(1 / 64, 8, 1e-2)


def test_variance_eps_matches_direct_simulation():
    """Explicit Gaussian values + LayerNorm(eps) simulated directly agree with layernorm_variance_eps within
    5 SE + 1% (N = 256, beta = 1.5, d_v = 8, eps = 1e-2). Catches LN over the batch axis and ddof=1 variance."""
    n, beta, d_v, eps, m = 256, 1.5, 8, 1e-2, 3000
    ln = _layernorm(_simulate_outputs(n, beta, d_v, m, seed=11), eps)
    per_seq = (ln**2).mean(axis=1)  # E LN_c = 0 by symmetry, so Var = E LN_c^2, pooled over coordinates
    sim, sim_se = per_seq.mean(), per_seq.std(ddof=1) / math.sqrt(m)
    est = T.layernorm_variance_eps(n, beta, d_v, eps, samples=3000, seed=12)
    assert abs(sim - est.value) <= 5 * math.hypot(sim_se, est.se) + 0.01 * est.value


def test_variance_eps_is_seeded():
    """Same seed, same estimate; chunks are keyed by index, so the value does not depend on chunking."""
    a = T.layernorm_variance_eps(64, 1.0, 8, 1e-2, samples=500, seed=7)
    b = T.layernorm_variance_eps(64, 1.0, 8, 1e-2, samples=500, seed=7)
    assert a == b


@pytest.mark.parametrize("call, name", [
    (lambda: T.layernorm_moments(1), "d_v"),
    (lambda: T.layernorm_beta_parameters(2), "d_v"),
    (lambda: T.layernorm_marginal_pdf(float("nan"), 8), "x"),
    (lambda: T.layernorm_conditional_variance(0.0, 8, 0.01), "y2"),
    (lambda: T.layernorm_conditional_variance(0.1, 8, -1.0), "eps"),
    (lambda: T.layernorm_variance_eps(64.5, 1.0, 8, 0.01), "n"),
    (lambda: T.layernorm_variance_eps(64, 1.0, 8, 0.01, sigma_v=0.0), "sigma_v"),
    (lambda: T.layernorm_variance_eps(64, 1.0, 8, 0.01, samples=1), "samples"),
    (lambda: T.layernorm_variance_eps(64, 1.0, 8, 0.01, seed=-1), "seed"),
])
def test_layernorm_arguments_are_validated(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()
