"""Student-t keys under a fixed query, derived with SymPy (issue 47; ``varsim.theory.laws``, family ``student_t``).

``T = sqrt((nu-2)/nu) t_nu`` (multivariate t keys ``k = z sqrt((nu-2)/g)``, ``g ~ chi^2_nu``). Derived here: the
normaliser ``K`` of the density ``K (1 + t^2/(nu-2))^{-(nu+1)/2}``, ``Var T = 1``, the tail constant ``C`` of
``f(t) ~ C t^{-nu-1}`` (``P(T > t) ~ C t^{-nu}/nu``), and the frozen limit of softmax weights over ``N`` such
logits: with ``a_N = beta (N C/nu)^{1/nu}`` the scale of the largest logit (``N P(X > a_N) = 1``),

    1 - E[sum w^2] ~ E[sum over the others of psi(gap to the largest)] ~ E[N f_X(max)] int_0^oo psi
                   = nu Gamma(2 + 1/nu) / a_N,

with ``psi(g) = 1 - (1 + e^{-2g})/(1 + e^{-g})^2 = 2 e^{-g}/(1 + e^{-g})^2`` (what two logits ``g`` apart take from
``sum w^2``; ``int_0^oo psi = 1``) and ``E[N C M^{-nu-1}] = nu Gamma(2 + 1/nu)/a_N`` for the Frechet maximum
``M = a_N Z``, ``P(Z <= z) = exp(-z^-nu)``. So ``E[sum w^2] -> 1`` at every ``beta > 0``, with local exponent
``d ln E / d ln N ~ (1 - E)/nu > 0``: heavy tails have no spread phase at large N.

Run ``python derivations/law_student_t.py`` to print the results.
"""

from __future__ import annotations

import sympy as sp

t, g, z = sp.symbols("t g z", positive=True)
nu = sp.symbols("nu", positive=True)


def density(dof) -> sp.Expr:
    """The density of ``T`` with the normaliser integrated from its kernel."""
    dof = sp.Integer(dof)
    kernel = (1 + t**2 / (dof - 2)) ** (-(dof + 1) / 2)
    return kernel / (2 * sp.integrate(kernel, (t, 0, sp.oo)))


def normaliser() -> sp.Expr:
    """``K = 1/(sqrt(nu-2) B(nu/2, 1/2))`` in closed form (checked against :func:`density` at given nu)."""
    return 1 / (sp.sqrt(nu - 2) * sp.beta(nu / 2, sp.Rational(1, 2)))


def variance(dof) -> sp.Expr:
    return sp.simplify(2 * sp.integrate(t**2 * density(dof), (t, 0, sp.oo)))


def tail_constant() -> sp.Expr:
    """``C = lim t^{nu+1} f(t) = K (nu-2)^{(nu+1)/2}``."""
    return normaliser() * (nu - 2) ** ((nu + 1) / 2)


def gap_integral() -> sp.Expr:
    psi = 1 - (1 + sp.exp(-2 * g)) / (1 + sp.exp(-g)) ** 2
    return sp.integrate(sp.simplify(psi), (g, 0, sp.oo))


def frechet_moment(dof) -> sp.Expr:
    """``E[Z^{-nu-1}]`` for ``P(Z <= z) = exp(-z^-nu)``."""
    dof = sp.Integer(dof)
    dens = sp.diff(sp.exp(-z ** (-dof)), z)
    return sp.simplify(sp.integrate(z ** (-dof - 1) * dens, (z, 0, sp.oo)))


def frozen_constant() -> sp.Expr:
    """``a_N (1 - E[sum w^2]) -> nu Gamma(2 + 1/nu)`` (``E[N C M^{-nu-1}] a_N`` with ``N C a_N^-nu = nu``)."""
    return nu * sp.gamma(2 + 1 / nu)


def main() -> None:
    for dof in (3, 5):
        dens = density(dof)
        print(f"nu = {dof}: density", sp.simplify(dens), "  LaTeX:", sp.latex(sp.simplify(dens)),
              "  Var T =", variance(dof), "  K closed form - integrated:",
              sp.simplify((normaliser().subs(nu, dof) - dens.subs(t, 0)).rewrite(sp.gamma)))
        print(f"        E[Z^(-nu-1)] = {frechet_moment(dof)} = Gamma(2 + 1/nu): "
              f"{sp.simplify(frechet_moment(dof) - sp.gamma(2 + sp.Rational(1, dof)))} off")
    print("tail constant C =", tail_constant(), "  int_0^oo psi =", gap_integral(),
          "  a_N (1 - E) ->", frozen_constant())


if __name__ == "__main__":
    main()
