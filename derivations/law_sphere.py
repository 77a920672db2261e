"""Query and keys on the unit sphere (QK-norm), derived with SymPy (issue 47; ``varsim.theory.laws``).

The logit is ``X = b C``, ``C`` the cosine of the angle between a uniform key on ``S^{d-1}`` and the query, with
density ``(1 - c^2)^{(d-3)/2} / B((d-1)/2, 1/2)`` on ``[-1, 1]``; the package's ``beta`` is ``b / sqrt(d)`` (so that
``Var X = beta^2``). Derived here:

* the MGF ``E[e^{s C}]`` by integrating the density, for small odd d (``d = 3``: ``sinh(s)/s``), equal to the
  package's Bessel form ``Gamma(d/2) (2/s)^{d/2-1} I_{d/2-1}(s)``;
* ``Var C = 1/d``;
* the bounded-logit limit ``A(b) = lim N E[sum w^2] = E[e^{2X}]/E[e^X]^2`` and its large-b form
  ``A ~ a_d b^{(d-1)/2}`` with ``a_d = sqrt(pi) / (2^{d-2} Gamma(d/2))`` (from ``I_nu(s) ~ e^s / sqrt(2 pi s)``):
  the annealed asymptote ``E = A/N`` reaches 1 at ``N* = A``, so the crossover scale is ``b* ~ N^{2/(d-1)}``.

Run ``python derivations/law_sphere.py`` to print the results (plain and LaTeX).
"""

from __future__ import annotations

import sympy as sp

c, s, b = sp.symbols("c s b", positive=True)
d = sp.symbols("d", positive=True, integer=True)


def density(dim: int) -> sp.Expr:
    """Density of the cosine in dimension ``dim`` on [-1, 1]."""
    return (1 - c**2) ** sp.Rational(dim - 3, 2) / sp.beta(sp.Rational(dim - 1, 2), sp.Rational(1, 2))


def mgf(dim: int) -> sp.Expr:
    """``E[e^{s C}]`` by integration (small integer ``dim``)."""
    return sp.simplify(sp.integrate(sp.exp(s * c) * density(dim), (c, -1, 1)))


def bessel_form(dim) -> sp.Expr:
    """The package's form ``Gamma(d/2) (2/s)^{d/2-1} I_{d/2-1}(s)``."""
    nu = sp.Rational(dim, 2) - 1 if isinstance(dim, int) else d / 2 - 1
    return sp.gamma(nu + 1) * (2 / s) ** nu * sp.besseli(nu, s)


def variance(dim: int) -> sp.Expr:
    return sp.simplify(sp.integrate(c**2 * density(dim), (c, -1, 1)).rewrite(sp.gamma))


def large_b_constant() -> sp.Expr:
    """``a_d`` in ``A(b) ~ a_d b^{(d-1)/2}``: the ratio of the leading terms of ``E[e^{2bC}]`` and ``E[e^{bC}]^2``
    with ``I_nu(s) ~ e^s / sqrt(2 pi s)``."""
    nu = d / 2 - 1
    lead = lambda z: sp.gamma(d / 2) * (2 / z) ** nu * sp.exp(z) / sp.sqrt(2 * sp.pi * z)  # noqa: E731
    ratio = sp.powsimp(sp.simplify(lead(2 * b) / lead(b) ** 2 / b ** ((d - 1) / 2)), force=True)
    return sp.simplify(ratio)


def main() -> None:
    for dim in (3, 5, 7):
        m = mgf(dim)
        diff = sp.simplify(sp.N((m - bessel_form(dim)).subs(s, sp.Rational(7, 3)), 30))
        print(f"d = {dim}: E[e^(sC)] =", m, "   LaTeX:", sp.latex(m), "   minus Bessel form at s=7/3:", diff)
        print(f"        Var C = {variance(dim)}")
    a_d = large_b_constant()
    print("large-b constant a_d in A ~ a_d b^((d-1)/2):", a_d, "   LaTeX:", sp.latex(a_d))


if __name__ == "__main__":
    main()
