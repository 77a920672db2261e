"""The package's NumPy formulas equal the SymPy derivations in derivations/ (symbolically, or at
Hypothesis-drawn points to 1e-12 relative), and every derivation script runs and prints plain + LaTeX."""

import math
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `derivations` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(ROOT))

from derivations import chi_square_mgf, layernorm_moments, rem_exponent, series_coefficients
from varsim import theory as T
from varsim.theory.series import _LOGNORMAL_Y, LOGNORMAL

SCRIPTS = ("series_coefficients", "chi_square_mgf", "rem_exponent", "layernorm_moments", "remedies_theory")


def _rel_close(value, exact, rel=1e-12, abs_=1e-300):
    return abs(value - exact) <= rel * abs(exact) + abs_


def _rounding_scale(expr, symbols, values):
    """``sum |term|`` of the expanded numerator over the denominator: the size that float rounding of the
    moment form scales with (the moment form cancels when the c_k are small)."""
    num, den = sp.fraction(sp.together(expr))
    num = sp.expand(num)
    abs_num = sum(abs(c) * mon for c, mon in zip(*_coeffs_monoms(num)))
    return float(abs((abs_num / den).subs(dict(zip(symbols, values)))))


def _coeffs_monoms(poly_expr):
    terms = sp.Add.make_args(poly_expr)
    coeffs, monoms = [], []
    for t in terms:
        c, m = t.as_coeff_Mul()
        coeffs.append(c)
        monoms.append(m)
    return coeffs, monoms


# ----------------------------------------------------------------------------- c1..c4

def test_lognormal_coefficients_equal_package_polynomials():
    """Symbolic: the derived lognormal c_k(x) equal the package's polynomial table exactly.
    Catches any wrong coefficient or power in varsim.theory.series."""
    x = series_coefficients.x
    for derived, (top, coefs), coefs_y in zip(series_coefficients.lognormal_coefficients(), LOGNORMAL, _LOGNORMAL_Y):
        package = sum(sp.Rational(int(a)) * x ** (top - i) for i, a in enumerate(coefs))
        assert sp.expand(derived - package) == 0
        package_y = sum(sp.Rational(int(a)) * (x - 1) ** i for i, a in enumerate(coefs_y))  # y = x - 1 form
        assert sp.expand(derived - package_y) == 0


def test_exponential_weights_give_dirichlet():
    """Exp(1) weights: derived (2, -2, 2, -2) = the expansion of 2/(N+1), and the package agrees."""
    assert series_coefficients.exponential_coefficients() == (2, -2, 2, -2)
    assert T.generic_series_coefficients(1, 2, 6, 24, 120) == pytest.approx((2, -2, 2, -2), rel=1e-14)


_GENERIC = None


def _generic_exact(moments):
    """The derived generic c1..c4 evaluated in 40-digit arithmetic."""
    global _GENERIC
    if _GENERIC is None:
        _GENERIC = sp.lambdify(series_coefficients.m[:5], series_coefficients.generic_coefficients(), "mpmath")
    import mpmath as mp

    with mp.workdps(40):
        return [float(c) for c in _GENERIC(*[mp.mpf(v) for v in moments])]


@settings(max_examples=8)
@given(shape=st.floats(0.5, 20.0), scale=st.floats(0.1, 10.0))
def test_generic_coefficients_match_derivation_gamma(shape, scale):
    """Gamma(shape, scale) weights, m_k = scale^k Gamma(shape+k)/Gamma(shape): package == derivation to 1e-12
    (relative; measured against 1e-3 of the moment form's rounding scale where the c_k cancel to tiny values)."""
    moments = [scale**k * math.exp(math.lgamma(shape + k) - math.lgamma(shape)) for k in range(1, 6)]
    exprs = series_coefficients.generic_coefficients()
    for value, exact, expr in zip(T.generic_series_coefficients(*moments), _generic_exact(moments), exprs):
        # 1e-12 relative to the rounding scale of the moment form (its terms cancel when c_k is small)
        scale = _rounding_scale(expr, series_coefficients.m[:5], moments)
        assert abs(value - exact) <= 1e-12 * max(abs(exact), 1e-3 * scale)


@settings(max_examples=8)
@given(beta=st.floats(0.01, 1.5))
def test_lognormal_package_matches_derivation(beta):
    """series_coefficients(beta) == derived lognormal c_k at x = e^{beta^2} (40 digits) to 1e-12."""
    x = series_coefficients.x
    exact = [float(sp.N(c.subs(x, sp.exp(sp.Float(beta, 40) ** 2)), 40))
             for c in series_coefficients.lognormal_coefficients()]
    for value, ref in zip(T.series_coefficients(beta), exact):
        assert _rel_close(value, ref)


# ----------------------------------------------------------------------------- chi-square constant

def test_chi_square_mgf_derivation():
    """Symbolic: integrating the chi^2_d density gives (1 - 2k tau^2/d)^(-d/2), with limit e^(k tau^2)."""
    derived = chi_square_mgf.tilted_mean()
    assert sp.simplify(sp.expand_log(sp.log(derived) - sp.log(chi_square_mgf.closed_form()), force=True)) == 0
    assert sp.simplify(chi_square_mgf.large_d_limit() - sp.exp(chi_square_mgf.k * chi_square_mgf.tau**2)) == 0


@settings(max_examples=10)
@given(d=st.integers(3, 400), frac=st.floats(0.0, 0.95))
def test_random_query_limit_matches_derivation(d, frac):
    """random_query_limit(d, tau) == derived constant at k = 1 (20 digits) for 2 tau^2 < d, to 1e-12.
    Catches (1 - tau^2/d)^(-d/2) or an exponent -d."""
    tau = math.sqrt(frac * d / 2)
    lead = chi_square_mgf.leading_constant()
    exact = float(sp.N(lead.subs({chi_square_mgf.d: d, chi_square_mgf.tau: sp.Float(tau, 30)}), 20))
    assert _rel_close(T.random_query_limit(d, tau), exact)


# ----------------------------------------------------------------------------- REM exponent

def test_rem_symbolic_results():
    """Thresholds sqrt(2/3), sqrt 2; psi continuous (and C^1 at sqrt 2); d(n psi)/dn = -1, 1/2 - n/beta^2;
    boundaries ln N = 3beta^2/2, beta^2/2; PD(alpha, 0) mean 1 - alpha."""
    b1, b2 = rem_exponent.annealed_threshold(), rem_exponent.frozen_threshold()
    assert sp.simplify(b1 - sp.sqrt(sp.Rational(2, 3))) == 0 and sp.simplify(b2 - sp.sqrt(2)) == 0
    assert T.rem_thresholds() == pytest.approx((float(b1), float(b2)), rel=1e-15)
    assert rem_exponent.continuity_gaps() == (0, 0, 0)
    annealed, middle = rem_exponent.local_exponents()
    assert annealed == -1 and sp.simplify(middle - (sp.Rational(1, 2) - rem_exponent.n / rem_exponent.beta**2)) == 0
    lo, hi = rem_exponent.phase_boundaries_in_log_n()
    assert sp.simplify(lo - 3 * rem_exponent.beta**2 / 2) == 0 and sp.simplify(hi - rem_exponent.beta**2 / 2) == 0
    alpha = sp.Symbol("alpha", positive=True)
    assert sp.simplify(rem_exponent.poisson_dirichlet_mean_ipr() - (1 - alpha)) == 0


@settings(max_examples=12)
@given(b=st.floats(0.0, 3.0))
def test_rem_psi_matches_derivation(b):
    """rem_psi(b) == derived Piecewise psi(b) to 1e-12. Catches -(2-b^2)^2/(8b) or swapped thresholds."""
    exact = float(rem_exponent.psi().subs(rem_exponent.b, sp.Float(b, 30)))
    assert _rel_close(T.rem_psi(b), exact, abs_=1e-15)


@settings(max_examples=10)
@given(beta=st.floats(0.5, 10.0), frac=st.floats(0.01, 0.99))
def test_effective_exponent_matches_derivation(beta, frac):
    """In the middle phase (beta^2/2 < ln N < 3 beta^2/2) effective_exponent == derived d(n psi)/dn."""
    ln_n = beta**2 * (0.5 + frac)
    middle = rem_exponent.local_exponents()[1]
    exact = float(middle.subs({rem_exponent.n: sp.Float(ln_n, 30), rem_exponent.beta: sp.Float(beta, 30)}))
    assert _rel_close(T.effective_exponent(math.exp(ln_n), beta), exact, abs_=1e-14)


# ----------------------------------------------------------------------------- LayerNorm

def test_layernorm_derivation():
    """Derived E LN^2 = 1, E LN^4 = 3(d_v-1)/(d_v+1), |P e_c|^2 = 1 - 1/d_v, independence of G1/(G1+G2) and
    G1+G2; the package's moments and Beta parameters equal the derived ones for d_v = 2..300."""
    e2, e4 = layernorm_moments.ln_moments()
    assert e2 == 1
    assert sp.simplify(e4 - 3 * (layernorm_moments.dv - 1) / (layernorm_moments.dv + 1)) == 0
    assert layernorm_moments.projection_norm_squared(5) == sp.Rational(4, 5)
    assert layernorm_moments.ratio_independent_of_sum() == 1
    a, b = layernorm_moments.beta_parameters()
    for d_v in range(2, 301):
        p2, p4 = T.layernorm_moments(d_v)
        assert p2 == 1.0 and _rel_close(p4, float(e4.subs(layernorm_moments.dv, d_v)), rel=1e-15)
        if d_v >= 3:
            assert T.layernorm_beta_parameters(d_v) == (float(a), float(b.subs(layernorm_moments.dv, d_v)))


@settings(max_examples=10)
@given(d_v=st.integers(3, 64), u=st.floats(0.001, 0.999))
def test_layernorm_pdf_matches_derived_density(d_v, u):
    """layernorm_marginal_pdf(x) == Beta density of r = x^2/(d_v-1) (derived from the chi-square ratio) times
    |dr/dx|/2 per sign, to 1e-12. Catches a pdf missing the 1/sqrt(d_v-1) Jacobian."""
    x = u * math.sqrt(d_v - 1)
    dens = layernorm_moments.beta_density_from_chi_squares()
    a, b = layernorm_moments.beta_parameters()
    sym = {layernorm_moments._a: a, layernorm_moments._c: b.subs(layernorm_moments.dv, d_v),
           layernorm_moments.r: sp.Float(x * x / (d_v - 1), 30)}
    exact = float(sp.N(dens.subs(sym), 30)) * x / (d_v - 1)  # |dr/dx| / 2 for the two signs of x
    assert _rel_close(T.layernorm_marginal_pdf(x, d_v), exact)


# ----------------------------------------------------------------------------- scripts

@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_print_plain_and_latex(name, capsys):
    """``python derivations/<name>.py`` prints its results, plain and LaTeX (run in-process as __main__)."""
    runpy.run_path(str(ROOT / "derivations" / f"{name}.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "LaTeX" in out and len(out.splitlines()) >= 3
    assert "nan" not in out.lower()


def test_package_never_imports_sympy():
    """varsim.theory must not import SymPy at runtime (checked in a fresh interpreter)."""
    import subprocess

    code = "import sys, varsim.theory, varsim.cli.theory; print('sympy' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "False"
    assert np.isfinite(T.expected_ipr(64, 1.0))
