"""Exact theory of a heavy-tailed logit law: Student-t keys (``varsim.theory.laws``, family ``student_t``; issue 47).

Against: an independent mpmath quadrature (``tests/law_reference.py``: the density and survival function in mpmath,
Gauss-Legendre and tanh-sinh, no lattice or partition of unity), stored with its command in
``tests/data/law_student_t_reference.json`` (a slow test recomputes it); Monte Carlo from the law's own sampler
within 5 of its standard errors; the frozen asymptote derived in ``derivations/law_student_t.py``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import law_reference as R
import numpy as np
import pytest
import scipy.stats as st
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st_h

from varsim.testing import mc_settings
from varsim.theory import laws as TL

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

_STORED = json.loads((Path(__file__).parent / "data" / R.T_REFERENCE).read_text())["points"]


def _value(p):
    law = TL.logit_law("student_t", nu=p["nu"])
    f = TL.law_ipr_second_moment if p["second"] else TL.law_ipr
    return f(law, p["n"], p["beta"])


@pytest.mark.parametrize("p", _STORED, ids=lambda p: f"nu{p['nu']}-b{p['beta']}-N{p['n']:g}-{p['second']}")
def test_exact_vs_stored_mpmath(p):
    """1e-10 relative against the mpmath quadrature at N from 2 to 1e300 (mean and second moment). Catches the
    tails' survival masses left out (P loses ``P(X > 7.5 - u)``), the partition's Jacobian dropped, the density
    standardised with ``nu/(nu-2)`` for ``(nu-2)/nu``, and a second moment weighting ``M^2`` by the piece twice."""
    assert _value(p) == pytest.approx(p["value"], rel=1e-10, abs=0.0)


@pytest.mark.slow
@pytest.mark.parametrize("p", _STORED, ids=lambda p: f"nu{p['nu']}-b{p['beta']}-N{p['n']:g}-{p['second']}")
def test_stored_mpmath_is_what_the_reference_makes(p):
    """The stored references are what ``tests/law_reference.py`` computes now (1e-14; ~1-3 min a point)."""
    assert R.reference_t(p["nu"], p["beta"], p["n"], p["second"]) == pytest.approx(p["value"], rel=1e-14)


def test_density_and_survival_against_scipy():
    """The family's log-density and log-survival of ``T = sqrt((nu-2)/nu) t_nu`` against SciPy's t law (1e-12),
    and the survival's series branch continuing SciPy's past its underflow (mpmath at t = 1e200)."""
    import mpmath as mp

    for nu in (2.5, 3.0, 10.0, 100.0):
        law = TL.logit_law("student_t", nu=nu)
        c = math.sqrt((nu - 2.0) / nu)
        t = np.array([0.0, 0.3, 1.0, 2.9, 3.1, 10.0, 100.0])
        np.testing.assert_allclose(law.log_density_t(t), st.t.logpdf(t / c, nu) - math.log(c), rtol=1e-12)
        np.testing.assert_allclose(law.log_sf_t(t), st.t.logsf(t / c, nu), rtol=1e-12, atol=1e-14)
    with mp.workdps(30):
        nu = mp.mpf(3)
        x = mp.mpf(1e200) / mp.sqrt((nu - 2) / nu)
        ref = mp.log(mp.betainc(nu / 2, mp.mpf(1) / 2, 0, nu / (nu + x * x), regularized=True) / 2)
    assert float(TL.logit_law("student_t", nu=3.0).log_sf_t(1e200)) == pytest.approx(float(ref), rel=1e-13)


def test_errors_and_limits():
    """``nu`` must be in (2, 100]; ``annealed_limit`` is inf (1 at beta = 0), ``crossover_beta`` 0; N = 1 gives 1."""
    for bad in (2.0, 1.5, 101.0, float("nan")):
        with pytest.raises(ValueError, match="nu must"):
            TL.logit_law("student_t", nu=bad)
    law = TL.logit_law("student_t", nu=4.0)
    assert TL.annealed_limit(law, 1.0) == math.inf and TL.annealed_limit(law, 0.0) == 1.0
    assert TL.crossover_beta(law, 1e6) == 0.0
    assert TL.law_ipr(law, 1.0, 2.0) == pytest.approx(1.0, rel=1e-12)
    assert TL.law_ipr(law, 37.0, 0.0) == 1.0 / 37.0
    assert float(law.log_mgf(0.0)) == 0.0 and float(law.log_mgf(1e-3)) == math.inf


def _mc(law, n: int, beta: float, reps: int, seed: int, power: int = 1):
    x = law.sample((reps, n), beta, rng=seed)
    w = np.exp(x - x.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    y = np.sum(w * w, axis=1) ** power
    return float(y.mean()), float(y.std(ddof=1) / math.sqrt(reps))


@mc_settings(max_examples=6, derandomize=True)
@given(nu=st_h.floats(2.2, 60.0), n=st_h.integers(2, 300), beta=st_h.floats(0.1, 4.0), seed=st_h.integers(0, 2**31))
def test_monte_carlo_matches_exact(nu, n, beta, seed):
    """Monte Carlo from the law's sampler against the exact mean and second moment within 5 of their standard
    errors (4000 draws). Catches a sampler or a theory of the wrong scale (rejected below)."""
    law = TL.logit_law("student_t", nu=nu)
    mean, se = _mc(law, n, beta, 4000, seed)
    assert abs(mean - TL.law_ipr(law, n, beta)) <= 5.0 * se
    mean, se = _mc(law, n, beta, 4000, seed, power=2)
    assert abs(mean - TL.law_ipr_second_moment(law, n, beta)) <= 5.0 * se


def test_monte_carlo_check_rejects_planted_scaling():
    """The power of the check above: a sampler of the unstandardised ``t_nu`` (``Var = nu/(nu-2) = 3`` at nu = 3)
    is more than 5 standard errors off the exact theory at N = 64, beta = 1; the right one is within."""
    law = TL.logit_law("student_t", nu=3.0)

    class Wrong(type(law)):
        def _draw(self, size, gen):
            return gen.standard_t(self.nu, size)

    mean, se = _mc(Wrong(3.0), 64, 1.0, 4000, 7)
    assert abs(mean - TL.law_ipr(law, 64, 1.0)) > 5.0 * se
    mean, se = _mc(law, 64, 1.0, 4000, 7)
    assert abs(mean - TL.law_ipr(law, 64, 1.0)) <= 5.0 * se


def test_frozen_asymptote_from_the_derivation():
    """The heavy-tail phase picture: ``E[sum w^2] -> 1`` at every beta with ``a_N (1 - E) -> nu Gamma(2 + 1/nu)``
    (``a_N = beta (N C/nu)^{1/nu}``, ``C`` from ``derivations/law_student_t.py``), corrections O(1/a_N): within
    0.5% at a_N ~ 1e3 and 2% at a_N ~ 1e2; the local exponent is ``(1 - E)/(nu E)`` there (2%), positive. A
    bounded or Gaussian tail would send ``E`` to 0 instead; a wrong tail constant or index misses the 0.5%."""
    from derivations import law_student_t as D

    for nu, beta in ((3.0, 1.0), (5.0, 0.5)):
        law = TL.logit_law("student_t", nu=nu)
        c = float(D.tail_constant().subs(D.nu, nu))
        k = float(D.frozen_constant().subs(D.nu, nu))
        for a_target, tol in ((1e2, 0.02), (1e3, 0.005)):
            n = nu / c * (a_target / beta) ** nu
            e, g = TL.law_ipr_and_exponent(law, n, beta)
            a_n = beta * (n * c / nu) ** (1.0 / nu)
            assert a_n * (1.0 - e) / k == pytest.approx(1.0, rel=tol)
            assert g == pytest.approx((1.0 - e) / (nu * e), rel=4 * tol)


def test_derivation_equals_package():
    """The derived normaliser equals the integrated density (nu = 3, 5) and the package's density at 0 (1e-13);
    the tail constant equals ``lim t^{nu+1} f(t)`` of the package's log-density (1e-9 at t = 1e6); Var T = 1."""
    from derivations import law_student_t as D

    for dof in (3, 5):
        law = TL.logit_law("student_t", nu=float(dof))
        assert D.variance(dof) == 1
        assert float(D.density(dof).subs(D.t, 0)) == pytest.approx(math.exp(float(law.log_density_t(0.0))), rel=1e-13)
        c = float(D.tail_constant().subs(D.nu, dof))
        t = 1e6
        assert math.exp(float(law.log_density_t(t)) + (dof + 1) * math.log(t)) == pytest.approx(c, rel=1e-9)
    assert D.gap_integral() == 1
    assert sp.simplify(D.frechet_moment(3) - sp.gamma(sp.Rational(7, 3))) == 0


def test_exponent_is_the_log_derivative():
    """``law_decay_exponent`` against a central difference of ``ln law_ipr`` in ``ln N`` (1e-6), on both sides of
    the minimum of ``E`` (negative, then positive)."""
    law = TL.logit_law("student_t", nu=3.0)
    signs = []
    for n in (20.0, 1e6):
        h = 1e-4
        g = TL.law_decay_exponent(law, n, 1.0)
        up, down = TL.law_ipr(law, n * math.exp(h), 1.0), TL.law_ipr(law, n * math.exp(-h), 1.0)
        diff = (math.log(up) - math.log(down)) / (2 * h)
        assert g == pytest.approx(diff, abs=1e-6)
        signs.append(math.copysign(1.0, g))
    assert signs == [-1.0, 1.0]
