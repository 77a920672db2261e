"""Exact theory of softmax weights for any logit law (``varsim.theory.laws``, issue 47).

Against: an independent mpmath quadrature (``tests/law_reference.py``), exact enumeration of a discrete law, two
laws that must coincide (Archimedes: the sphere at d = 3 is the uniform key at d = 1), the bounded-logit limit
``N E[sum w^2] -> E[e^{2X}]/E[e^X]^2``, and Monte Carlo from each law's own sampler within 5 of its standard errors.
"""

from __future__ import annotations

import math
import runpy
import sys
from pathlib import Path

import law_reference as R
import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import varsim.theory as T
from varsim.testing import mc_settings
from varsim.theory import laws as TL

_SAMPLE = np.array([-1.3, -0.2, 0.0, 0.4, 0.4, 1.1, 2.5])  # a small "measured" logit sample (with a tie)

_MEASURES = {
    "sphere": lambda beta: R.sphere_measure(8, beta),
    "rademacher": lambda beta: R.rademacher_measure(5, beta),
    "uniform": lambda beta: R.uniform_measure(4, beta),
    "empirical": lambda beta: R.atoms_measure(_SAMPLE, beta),
}
_LAWS = {
    "sphere": TL.logit_law("sphere", d=8),
    "rademacher": TL.logit_law("rademacher", d=5),
    "uniform": TL.logit_law("uniform", d=4),
    "empirical": TL.logit_law("empirical", sample=_SAMPLE),
}


def test_registry_and_errors():
    """Every family is registered; an unknown name and bad parameters raise naming the parameter."""
    assert set(TL.LAWS) == {"gaussian", "sphere", "rademacher", "uniform", "student_t", "empirical"}
    with pytest.raises(ValueError, match="unknown law 'cauchy'"):
        TL.logit_law("cauchy")
    with pytest.raises(ValueError, match="d must be"):
        TL.logit_law("sphere", d=1)
    with pytest.raises(ValueError, match="n must be"):
        TL.law_ipr(_LAWS["sphere"], 0.5, 1.0)
    with pytest.raises(ValueError, match="beta must"):
        TL.law_ipr(_LAWS["sphere"], 10, float("nan"))
    with pytest.raises(ValueError, match="sample must contain only finite"):
        TL.logit_law("empirical", sample=[0.0, np.inf])


def test_gaussian_law_is_the_package_theory():
    """The Gaussian law is ``varsim.theory.ipr`` itself (same numbers, bit for bit)."""
    n, beta = np.array([2.0, 1e3, 1e300]), 1.5
    assert np.array_equal(TL.law_ipr("gaussian", n, beta), T.expected_ipr(n, beta))
    assert np.array_equal(TL.law_decay_exponent("gaussian", n, beta), T.decay_exponent(n, beta))
    assert TL.annealed_limit("gaussian", beta) == pytest.approx(math.exp(beta * beta), rel=1e-14)


@pytest.mark.parametrize("name, n, beta", [("sphere", 1e300, 1.0), ("uniform", 2.5, 1.0), ("empirical", 1e300, 2.0),
                                           ("rademacher", 2.0, 3.0), ("rademacher", 1e6, 0.7),
                                           ("rademacher", 1e300, 3.0)])
def test_exact_vs_mpmath(name, n, beta):
    """1e-10 relative against the mpmath quadrature of the law built from its definition. Catches a wrong
    density (sphere exponent (d-3) in theta instead of (d-2)), 1/d scaling of the logit instead of 1/sqrt(d), and
    any shortcut in the tails (``1 - L`` formed as a difference loses every digit at N = 1e300)."""
    ref = R.reference(_MEASURES[name](beta), n)
    assert TL.law_ipr(_LAWS[name], n, beta) == pytest.approx(ref, rel=1e-10, abs=0.0)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_MEASURES))
@pytest.mark.parametrize("n", [2.0, 1e3, 1e300])
@pytest.mark.parametrize("beta", [0.5, 3.0])
def test_exact_vs_mpmath_grid(name, n, beta):
    """As above on a grid (up to ~1 min a point)."""
    ref = R.reference(_MEASURES[name](beta), n)
    assert TL.law_ipr(_LAWS[name], n, beta) == pytest.approx(ref, rel=1e-10, abs=0.0)


@pytest.mark.parametrize("name, n, beta", [("rademacher", 7.0, 2.0), ("empirical", 1e4, 1.0), ("sphere", 1e300, 1.0)])
def test_second_moment_vs_mpmath(name, n, beta):
    """``E[(sum w^2)^2]`` against mpmath (1e-10). Catches the ``N(N-1) M^2 L^{N-2}`` term dropped or mis-powered."""
    ref = R.reference(_MEASURES[name](beta), n, second=True)
    assert TL.law_ipr_second_moment(_LAWS[name], n, beta) == pytest.approx(ref, rel=1e-10, abs=0.0)


def test_rademacher_exact_enumeration():
    """Exact enumeration of all 3^n draws of the d = 2 Rademacher law (atoms -sqrt2, 0, sqrt2 with 1/4, 1/2, 1/4)
    at n = 2..5, mean and second moment: an exact check with no quadrature in it."""
    law = TL.logit_law("rademacher", d=2)
    atoms, probs = [-math.sqrt(2.0), 0.0, math.sqrt(2.0)], [0.25, 0.5, 0.25]
    for n in range(2, 6):
        assert TL.law_ipr(law, n, 1.7) == pytest.approx(R.exact_small_n(atoms, probs, n, 1.7), rel=1e-12)


def test_sphere_three_is_uniform_one():
    """Archimedes: the cosine on S^2 is uniform, so sphere d=3 and uniform keys at d=1 are one law, built by two
    different node constructions. Agree to 1e-12 over N in [1, 1e300]."""
    n = np.array([1.0, 2.0, 17.0, 1e5, 1e300])
    for beta in (0.3, 4.0):
        a = TL.law_ipr(TL.logit_law("sphere", d=3), n, beta)
        b = TL.law_ipr(TL.logit_law("uniform", d=1), n, beta)
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(_LAWS))
def test_bounded_limit(name):
    """Bounded logits: ``N E[sum w^2] -> E[e^{2X}]/E[e^X]^2`` (law of large numbers; the correction is O(1/N)),
    checked at N = 1e300 (1e-10) from the closed-form log-MGF of each law; and ``beta = 0`` gives ``1/N``."""
    law = _LAWS[name]
    for beta in (0.5, 2.0):
        assert 1e300 * TL.law_ipr(law, 1e300, beta) == pytest.approx(TL.annealed_limit(law, beta), rel=1e-10)
    assert TL.law_ipr(law, 37.0, 0.0) == 1.0 / 37.0
    assert TL.law_ipr(law, 1.0, 2.0) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("name", sorted(_LAWS))
def test_log_mgf_matches_sampler_and_measure(name):
    """The closed-form log-MGF against the law's own node measure (1e-12) and the sampler's variance (unit for
    every family but the empirical one). Catches a log-MGF of the wrong scale (1/d for 1/sqrt d)."""
    law = _LAWS[name]
    x, lw = law.measure(1.0)
    for s in (0.7, 2.0):
        assert np.logaddexp.reduce(lw + s * x) == pytest.approx(float(law.log_mgf(s)), rel=1e-12, abs=1e-13)
    if name != "empirical":
        assert float(law.log_mgf(1e-3)) == pytest.approx(0.5e-6, rel=1e-3)  # Var T = 1


def test_exponent_is_the_log_derivative():
    """``law_decay_exponent`` against a central difference of ``ln law_ipr`` in ``ln N`` (1e-6). (Not bounded by -1:
    ``N E[sum w^2]`` may approach its limit from above.)"""
    for name in ("sphere", "rademacher"):
        law = _LAWS[name]
        for n, beta in ((50.0, 2.0), (1e8, 3.0)):
            h = 1e-4
            e_hi, e_lo = TL.law_ipr(law, n * math.exp(h), beta), TL.law_ipr(law, n * math.exp(-h), beta)
            g = TL.law_decay_exponent(law, n, beta)
            assert g == pytest.approx((math.log(e_hi) - math.log(e_lo)) / (2 * h), abs=1e-6)
            assert -1.01 <= g <= 0.0


def test_broadcast_and_scalars():
    """``(betas[:, None], ns)`` gives a table; scalars give floats; grid entries equal the scalar calls."""
    law = _LAWS["uniform"]
    ns, betas = np.array([2.0, 100.0, 1e9]), np.array([0.5, 2.0])
    e, g = TL.law_ipr_and_exponent(law, ns, betas[:, None])
    assert e.shape == g.shape == (2, 3)
    assert isinstance(TL.law_ipr(law, 100.0, 2.0), float)
    assert e[1, 1] == pytest.approx(TL.law_ipr(law, 100.0, 2.0), rel=1e-14)


def _mc_ipr(law, n: int, beta: float, reps: int, seed: int) -> tuple[float, float]:
    """Mean of ``sum w^2`` over ``reps`` softmax draws from the law's sampler, with its standard error."""
    x = law.sample((reps, n), beta, rng=seed)
    w = np.exp(x - x.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    y = np.sum(w * w, axis=1)
    return float(y.mean()), float(y.std(ddof=1) / math.sqrt(reps))


@mc_settings(max_examples=6, derandomize=True)
@given(name=st.sampled_from(["sphere", "rademacher", "uniform", "empirical"]),
       n=st.integers(2, 300), beta=st.floats(0.1, 4.0), d=st.integers(1, 24), seed=st.integers(0, 2**31))
def test_monte_carlo_matches_exact(name, n, beta, d, seed):
    """Monte Carlo from each law's sampler against the exact theory within 5 of its standard errors (4000 draws).
    Catches a sampler and a theory that disagree on the law (the planted 1/d scaling is rejected below)."""
    law = {"sphere": lambda: TL.logit_law("sphere", d=max(d, 2)), "rademacher": lambda: TL.logit_law("rademacher", d=d),
           "uniform": lambda: TL.logit_law("uniform", d=d), "empirical": lambda: _LAWS["empirical"]}[name]()
    mean, se = _mc_ipr(law, n, beta, 4000, seed)
    assert abs(mean - TL.law_ipr(law, n, beta)) <= 5.0 * se


def test_monte_carlo_check_rejects_planted_scaling():
    """The power of the check above: a Rademacher sampler scaled by 1/d instead of 1/sqrt(d) (d = 16) is more than
    5 standard errors off the exact theory at N = 64, beta = 2."""
    law = TL.logit_law("rademacher", d=16)

    class Wrong(type(law)):
        def _draw(self, size, gen):
            return (2.0 * gen.binomial(self.d, 0.5, size) - self.d) / self.d

    mean, se = _mc_ipr(Wrong(16), 64, 2.0, 4000, 7)
    assert abs(mean - TL.law_ipr(law, 64, 2.0)) > 5.0 * se
    mean, se = _mc_ipr(law, 64, 2.0, 4000, 7)
    assert abs(mean - TL.law_ipr(law, 64, 2.0)) <= 5.0 * se


def test_support_width_limit():
    """A beta whose logit range exceeds SUPPORT_WIDTH_MAX is refused with a message naming beta."""
    with pytest.raises(ValueError, match="beta must satisfy"):
        TL.law_ipr(TL.logit_law("sphere", d=512), 10.0, 1000.0)


def test_crossover_beta():
    """``A(beta*) = N``: Gaussian ``sqrt(ln N)`` (1e-10); Rademacher ``inf`` once ``N > 2^d``; the local exponent at
    beta* lies mid-crossover (between -0.6 and -0.2) for every law, a check of the phase picture."""
    assert TL.crossover_beta("gaussian", 1e6) == pytest.approx(math.sqrt(math.log(1e6)), rel=1e-10)
    assert TL.crossover_beta(TL.logit_law("rademacher", d=16), 1e6) == math.inf
    for law in (TL.logit_law("sphere", d=16), TL.logit_law("uniform", d=6), TL.logit_law("rademacher", d=40)):
        b = TL.crossover_beta(law, 1e6)
        assert TL.annealed_limit(law, b) == pytest.approx(1e6, rel=1e-9)
        assert -0.6 <= TL.law_decay_exponent(law, 1e6, b) <= -0.2


# ---- SymPy derivations (derivations/law_*.py) equal the package ----

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))


@pytest.mark.parametrize("script", ["law_sphere", "law_rademacher", "law_uniform", "law_student_t"])
def test_derivation_scripts_run(script, capsys):
    runpy.run_path(str(_ROOT / "derivations" / f"{script}.py"), run_name="__main__")
    assert "LaTeX" in capsys.readouterr().out or script == "law_uniform"


def test_sphere_derivation_equals_package():
    """The integrated MGF (d = 3, 5, 7) equals the package's Bessel-form log-MGF (1e-12); the derived large-beta
    constant ``a_d`` matches ``annealed_limit`` at large beta (ratio -> 1 like 1/b). Catches a wrong Bessel order or
    a 1/d instead of 1/sqrt(d) argument scaling."""
    from derivations import law_sphere as D

    for dim in (3, 5, 7):
        f = sp.lambdify(D.s, D.mgf(dim), "mpmath")
        law = TL.logit_law("sphere", d=dim)
        for t in (0.3, 2.0, 9.0):  # package: ln E[e^{t T}], T = sqrt(d) C
            assert float(law.log_mgf(t)) == pytest.approx(float(mp.log(f(t * math.sqrt(dim)))), rel=1e-12)
    a_d = sp.lambdify(D.d, D.large_b_constant())
    for dim, beta in ((4, 1000.0), (16, 3000.0)):
        b = beta * math.sqrt(dim)
        nu = dim / 2 - 1  # Hankel's next term I_nu(s) ~ e^s/sqrt(2 pi s) (1 - (4nu^2-1)/(8s)) gives this correction
        first = 3.0 * (4 * nu * nu - 1) / (16 * b)
        assert TL.annealed_limit(TL.logit_law("sphere", d=dim), beta) / (a_d(dim) * b ** ((dim - 1) / 2)) == \
            pytest.approx(1.0 + first, abs=(dim / b) ** 2 * 10)


def test_rademacher_derivation_equals_package():
    """Binomial-sum MGF = package log-MGF (1e-12); ``A(beta) -> 2^d``, reached by the exact theory at N = 1e300."""
    from derivations import law_rademacher as D

    for dim in (1, 2, 5):
        f = sp.lambdify(D.s, D.mgf(dim), "mpmath")
        law = TL.logit_law("rademacher", d=dim)
        for t in (0.3, 4.0):
            assert float(law.log_mgf(t)) == pytest.approx(float(mp.log(f(t))), rel=1e-12)
        assert int(D.large_beta_limit(dim)) == 2**dim
    assert 1e300 * TL.law_ipr(TL.logit_law("rademacher", d=5), 1e300, 40.0) == pytest.approx(32.0, rel=1e-8)


def test_uniform_derivation_equals_package():
    """The convolved Irwin-Hall pieces equal the package's exact coefficients (1e-15); the MGF equals the package
    log-MGF (1e-12); ``A / z^d -> 1`` at large beta."""
    from derivations import law_uniform as D
    from varsim.theory.laws.families import _irwin_hall_coefficients

    for dim in (2, 3, 4):
        pieces = D.irwin_hall_pieces(dim)
        coef = _irwin_hall_coefficients(dim)
        for j in range(coef.shape[0]):
            shifted = sp.Poly(sp.expand(pieces[j].subs(D.x, D.x + j)), D.x).all_coeffs()[::-1]
            expect = [float(c) for c in shifted] + [0.0] * (dim - len(shifted))
            np.testing.assert_allclose(coef[j], expect, rtol=1e-15, atol=1e-15)
        f = sp.lambdify(D.z, D.mgf(dim), "mpmath")
        for t in (0.3, 4.0):
            assert float(TL.logit_law("uniform", d=dim).log_mgf(t)) == pytest.approx(float(mp.log(f(t))), rel=1e-12)
        assert D.large_beta_ratio(dim) == 1


def test_docs_tables_are_what_the_script_makes(capsys):
    """docs/site/theory/laws.md carries the tables ``figures/laws_numbers.py`` prints now (regenerate both together)."""
    runpy.run_path(str(_ROOT / "figures" / "laws_numbers.py"), run_name="__main__")
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    page = (_ROOT / "docs" / "site" / "theory" / "laws.md").read_text().splitlines()
    missing = [line for line in printed if line not in page]
    assert not missing, f"laws.md lacks {len(missing)} table rows the script prints, e.g. {missing[0]}"


def test_empirical_negative_beta_is_the_mirrored_sample():
    """The empirical law is not symmetric: ``beta = -1`` is the law of the negated sample at ``beta = 1``."""
    flipped = TL.logit_law("empirical", sample=-_SAMPLE)
    n = np.array([2.0, 50.0, 1e9])
    np.testing.assert_allclose(TL.law_ipr(_LAWS["empirical"], n, -1.3), TL.law_ipr(flipped, n, 1.3), rtol=1e-12)
    assert not np.allclose(TL.law_ipr(_LAWS["empirical"], n, 1.3), TL.law_ipr(flipped, n, 1.3), rtol=1e-3)


@pytest.mark.parametrize("d", [1000, 100_000])
def test_sphere_large_dimension(d):
    """Large d: the node measure has unit mass (1e-13), the log-MGF equals mpmath's ``ln 0F1(; d/2; s^2 d/4)``
    (1e-13; SciPy's ``ive`` underflows there), and ``N E`` at N = 1e300 equals the limit (1e-12). Catches the
    normaliser ``betaln((d-1)/2, 1/2)`` taken from SciPy at large d (its log-gamma difference is 5e-11 off at
    d = 1e5) and Gauss-Jacobi weights that overflow above p = 1000."""
    law = TL.logit_law("sphere", d=d)
    x, lw = law.measure(1.0)
    assert abs(np.logaddexp.reduce(lw)) < 1e-13
    for t in (0.3, 3.0):
        ref = float(mp.log(mp.hyp0f1(mp.mpf(d) / 2, (t * mp.sqrt(d)) ** 2 / 4)))
        assert float(law.log_mgf(t)) == pytest.approx(ref, rel=1e-13)
    assert 1e300 * TL.law_ipr(law, 1e300, 1.0) == pytest.approx(TL.annealed_limit(law, 1.0), rel=1e-12)


def test_missing_parameters_are_value_errors():
    """A family named without its parameters (``law_ipr("sphere", ...)``) or with an unknown one is a ValueError
    naming the parameter, not a TypeError."""
    with pytest.raises(ValueError, match="'d'"):
        TL.law_ipr("sphere", 10.0, 1.0)
    with pytest.raises(ValueError, match="'e'"):
        TL.logit_law("rademacher", d=3, e=2)


@pytest.mark.parametrize("beta", [0.5, 2.0, 5.0])
def test_lattice_engine_reproduces_the_gaussian_quadrature(beta):
    """The lattice quadrature fed a Gaussian node measure truncated at 40 standard deviations (mass lost < e^-800)
    against ``varsim.theory.expected_ipr`` and ``decay_exponent`` (an independent quadrature, checked against mpmath
    in tests/test_theory.py): 1e-11 relative, 1e-10 absolute on the exponent, N from 1 to 1e300."""
    from varsim.theory.laws import _lattice
    from varsim.theory.laws._nodes import panel_nodes

    cells = np.arange(-math.floor(40 * beta / _lattice.H), math.floor(40 * beta / _lattice.H) + 1) * _lattice.H
    breaks = np.concatenate([[-40 * beta, 40 * beta], cells[np.abs(cells) < 40 * beta]])
    x, lw = panel_nodes(breaks, lambda v: -0.5 * (v / beta) ** 2 - math.log(beta * math.sqrt(2 * math.pi)),
                        0.5 * beta)
    grid = _lattice.Grid(_lattice.Measure(x, lw), 1e300, False)
    n = np.array([1.0, 2.0, 37.0, 1e4, 1e12, 1e300])
    e, g = _lattice.ipr_exact(grid, n, True)
    np.testing.assert_allclose(e, T.expected_ipr(n, beta), rtol=1e-11)
    np.testing.assert_allclose(g, T.decay_exponent(n, beta), atol=1e-10)


def test_a_registered_law_gets_the_exact_theory():
    """A new family registered in LAWS (here a two-point law, atoms 0 and 1 with 1/4, 3/4) gets the exact theory
    with no other code: equal to exact enumeration at n = 2..6 (1e-12); removed afterwards."""
    from varsim.theory.laws import LogitLaw

    class TwoPoint(LogitLaw):
        name = "two_point_test"
        tail = "bounded"
        symmetric = False

        def support_t(self):
            return (0.0, 1.0)

        def log_mgf(self, s):
            return np.log(0.25 + 0.75 * np.exp(np.asarray(s, dtype=float)))

        def _draw(self, size, gen):
            return (gen.random(size) < 0.75).astype(float)

        def _measure(self, beta):
            return beta * np.array([0.0, 1.0]), np.log([0.25, 0.75])

    TL.LAWS.add(TwoPoint)
    try:
        law = TL.logit_law("two_point_test")
        for n in range(2, 7):
            ref = R.exact_small_n([0.0, 1.0], [0.25, 0.75], n, 2.5)
            assert TL.law_ipr(law, n, 2.5) == pytest.approx(ref, rel=1e-12, abs=0.0)
    finally:
        del TL.LAWS["two_point_test"]
    assert "two_point_test" not in TL.LAWS


@pytest.mark.parametrize(("name", "dim"), [("sphere", 2), ("sphere", 3), ("sphere", 16), ("sphere", 1000),
                                           ("uniform", 1), ("uniform", 4)])
def test_annealed_limit_at_large_beta_against_mpmath(name, dim):
    """``ln A(beta) = K(2 beta) - 2 K(beta)`` past the scale where each ``K`` is ~1e6 or more (the difference of two
    float K's keeps no digit there; SciPy's ``ive`` returns NaN past ~1e9) against mpmath at 140 digits, to 1e-12
    relative: seen failing with the plain difference (off by 1e-10 at 1e6, by everything at 1e17, and an
    out-of-memory series at 1e9) and with Debye's u3 term dropped (1e-11 at d = 1000)."""
    mp.mp.dps = 140
    law = TL.logit_law(name, d=dim)

    def log_k(t):  # ln E[e^{t T}], exact
        if name == "sphere":
            a, nu = mp.mpf(t) * mp.sqrt(dim), mp.mpf(dim) / 2 - 1
            return mp.loggamma(mp.mpf(dim) / 2) + nu * mp.log(2 / a) + mp.log(mp.besseli(nu, a))
        z = mp.mpf(t) * mp.sqrt(mp.mpf(3) / dim)
        return dim * mp.log(mp.sinh(z) / z)

    for beta in (3e4, 1e6, 1e9, 1e17, 1e60):
        if name == "sphere" and dim == 1000 and beta > 1e9:
            continue  # mpmath's Bessel series at order 499 and argument 1e18 does not converge in time
        ref = float(log_k(2 * beta) - 2 * log_k(beta))
        assert float(law.log_annealed_limit(beta)) == pytest.approx(ref, rel=1e-12), beta
    mp.mp.dps = 15


def test_crossover_beta_stays_small_and_finite_where_it_exists():
    """The sphere's crossover follows ``N^{2/(d-1)}`` out to N = 1e300 (Bruno et al.'s scale; it took the machine's
    memory at d = 16, N = 1e60), the uniform key's ``N^{1/d}`` (it was ``inf`` at d = 4, N = 1e60, beyond a 1e12
    search cap); beyond the search range, ``inf``."""
    sphere = TL.logit_law("sphere", d=16)
    lo, hi = TL.crossover_beta(sphere, 1e60), TL.crossover_beta(sphere, 1e300)
    assert hi / lo == pytest.approx(1e240 ** (2 / 15), rel=1e-6)
    uniform = TL.logit_law("uniform", d=4)
    assert TL.crossover_beta(uniform, 1e300) / TL.crossover_beta(uniform, 1e60) == pytest.approx(1e60, rel=1e-6)
    assert TL.crossover_beta(TL.logit_law("sphere", d=3), 1e300) == math.inf  # N / 1.7: past the 1e280 searched


def test_annealed_limit_of_laws_with_a_top_atom_at_large_beta():
    """Rademacher keys and an empirical law: ``A(beta) -> 1/P(top atom)`` (2^d; 7 for the sample's single top
    logit), reached without cancellation at beta = 1e17 and 1e250 (the plain difference of K's gave 2^52 at d = 16,
    and a crossover where none exists); at beta = 30 against mpmath."""
    mp.mp.dps = 60
    rad = TL.logit_law("rademacher", d=16)
    emp = _LAWS["empirical"]
    for beta in (1e17, 1e250):
        assert float(rad.log_annealed_limit(beta)) == pytest.approx(16 * math.log(2.0), rel=1e-14)
        assert float(emp.log_annealed_limit(beta)) == pytest.approx(math.log(7.0), rel=1e-14)
        assert float(emp.log_annealed_limit(-beta)) == pytest.approx(math.log(7.0), rel=1e-14)  # bottom atom
    k_rad = lambda t: 16 * mp.log(mp.cosh(mp.mpf(t) / 4))  # noqa: E731 - ln E[e^{tT}], T = (2B - 16)/4
    k_emp = lambda t: mp.log(mp.fsum(mp.exp(mp.mpf(t) * mp.mpf(float(x))) for x in _SAMPLE) / len(_SAMPLE))  # noqa: E731
    assert float(rad.log_annealed_limit(30.0)) == pytest.approx(float(k_rad(60) - 2 * k_rad(30)), rel=1e-13)
    assert float(emp.log_annealed_limit(30.0)) == pytest.approx(float(k_emp(60) - 2 * k_emp(30)), rel=1e-13)
    assert TL.crossover_beta(rad, 1e6) == math.inf
    mp.mp.dps = 15
