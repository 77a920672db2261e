"""LayerNorm law for Gaussian values (THEORY.md 4a), derived with SymPy.

Given the keys, o ~ N(mu_v, sigma^2 Y2 I_{d_v}); LayerNorm (eps = 0) removes the mean and the scale, so
LN(o) = sqrt(d_v) U with U uniform on the unit sphere of the (d_v - 1)-dimensional subspace 1^perp.
Coordinate c: LN_c = sqrt(d_v) <U, e_c> = sqrt(d_v) |P e_c| <U, P e_c/|P e_c|>, with P the projection onto
1^perp and |P e_c|^2 = 1 - 1/d_v, so LN_c^2/(d_v - 1) is the squared coordinate of a uniform unit vector
in R^(d_v-1), i.e. G_1/(G_1 + G_rest) with independent chi^2_1 and chi^2_(d_v-2): Beta(1/2, (d_v-2)/2).
Derived here: |P e_c|^2, the Beta density from the chi-square ratio, and E LN_c^2 = 1,
E LN_c^4 = 3(d_v - 1)/(d_v + 1).

Run ``python derivations/layernorm_moments.py`` to print the results (plain and LaTeX).
"""

from __future__ import annotations

from functools import cache

import sympy as sp

dv = sp.symbols("d_v", positive=True)
r = sp.symbols("r", positive=True)


def projection_norm_squared(d_value: int = 5) -> sp.Expr:
    """``|P e_1|^2`` for ``P = I - 11^T/d`` at a concrete ``d`` (equals ``1 - 1/d``)."""
    ones = sp.ones(d_value, 1)
    proj = sp.eye(d_value) - ones * ones.T / d_value
    e1 = sp.zeros(d_value, 1)
    e1[0] = 1
    return sp.simplify((proj * e1).dot(proj * e1))


_a, _c, _s = sp.symbols("a c s", positive=True)


def _joint_density() -> sp.Expr:
    """Joint density of ``(R, S) = (G1/(G1+G2), G1+G2)``, ``G1 ~ Gamma(a)``, ``G2 ~ Gamma(c)`` (chi^2/2):
    the density of ``(g1, g2) = (r s, (1-r) s)`` times the Jacobian ``s``."""
    joint = (r * _s) ** (_a - 1) * ((1 - r) * _s) ** (_c - 1) * sp.exp(-_s) / (sp.gamma(_a) * sp.gamma(_c)) * _s
    return sp.powsimp(sp.expand_power_base(joint, force=True), force=True)


@cache
def beta_density_from_chi_squares() -> sp.Expr:
    """Density of ``R = G1/(G1+G2)``: integrate ``S`` out of the joint density (a Beta(a, c) density)."""
    dens = sp.integrate(_joint_density(), (_s, 0, sp.oo), conds="none")
    return sp.simplify(sp.gammasimp(dens))


def ratio_independent_of_sum() -> sp.Expr:
    """joint / (density of R * density of S): simplifies to 1, so R and S = G1 + G2 are independent."""
    s_density = _s ** (_a + _c - 1) * sp.exp(-_s) / sp.gamma(_a + _c)
    return sp.simplify(sp.gammasimp(_joint_density() / (beta_density_from_chi_squares() * s_density)))


def beta_parameters() -> tuple[sp.Expr, sp.Expr]:
    """``(a, b) = (1/2, (d_v - 2)/2)``: chi^2_1 and chi^2_(d_v-2) halves."""
    return sp.Rational(1, 2), (dv - 2) / 2


def _gamma_moment(shape, k: int) -> sp.Expr:
    g = sp.symbols("g", positive=True)
    return sp.integrate(g ** (shape + k - 1) * sp.exp(-g) / sp.gamma(shape), (g, 0, sp.oo), conds="none")


def ln_moments() -> tuple[sp.Expr, sp.Expr]:
    """``(E LN_c^2, E LN_c^4)`` with ``LN_c^2 = (d_v - 1) R``: by independence of R and S,
    ``E[R^k] = E[G1^k] / E[S^k]`` (Gamma moments, integrated)."""
    pa, pb = beta_parameters()
    out = []
    for k in (1, 2):
        rk = _gamma_moment(pa, k) / _gamma_moment(pa + pb, k)
        out.append(sp.factor(sp.expand_func(sp.gammasimp((dv - 1) ** k * rk))))
    return tuple(out)


def main() -> None:
    print("|P e_c|^2 at d_v = 5:", projection_norm_squared(5), "(1 - 1/d_v = 4/5)")
    dens = beta_density_from_chi_squares()
    print("density of G1/(G1+G2):", dens, "   LaTeX:", sp.latex(dens))
    print("joint / (f_R f_S) =", ratio_independent_of_sum(), "(R independent of G1 + G2)")
    e2, e4 = ln_moments()
    print("E LN_c^2 =", e2, "   LaTeX:", sp.latex(e2))
    print("E LN_c^4 =", e4, "   LaTeX:", sp.latex(e4))
    print("E LN_c^4 at d_v = 8, 16:", e4.subs(dv, 8), e4.subs(dv, 16))


if __name__ == "__main__":
    main()
