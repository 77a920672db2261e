"""Random-query constant (THEORY.md 2.1), derived with SymPy.

With q ~ N(0, I_d) the logit scale is beta^2 = tau^2 |q|^2 / d and |q|^2 ~ chi^2_d, so the leading
large-N constant of N E[sum w^2] is E_q[e^(beta^2)], and the k-th series term needs
E_q[e^(k beta^2)] = E[exp(k tau^2 chi2_d / d)] = (1 - 2 k tau^2 / d)^(-d/2)   (d > 2 k tau^2),
which decreases to e^(k tau^2) as d -> oo.

Run ``python derivations/chi_square_mgf.py`` to print the results (plain and LaTeX).
"""

from __future__ import annotations

import sympy as sp

d, y, k, tau = sp.symbols("d y k tau", positive=True)


def chi_square_pdf() -> sp.Expr:
    """Density of chi^2_d at ``y``."""
    return y ** (d / 2 - 1) * sp.exp(-y / 2) / (2 ** (d / 2) * sp.gamma(d / 2))


def tilted_mean() -> sp.Expr:
    """``E[exp(k tau^2 Y / d)]``, ``Y ~ chi^2_d``, by integrating the density (valid for d > 2 k tau^2)."""
    # Integrate exp(-c y) y^(d/2-1) with c = 1/2 - k tau^2/d > 0 symbolically, then put c back.
    c = sp.symbols("c", positive=True)
    integral = sp.integrate(y ** (d / 2 - 1) * sp.exp(-c * y), (y, 0, sp.oo))
    value = integral / (2 ** (d / 2) * sp.gamma(d / 2))
    return sp.simplify(sp.powsimp(value.subs(c, sp.Rational(1, 2) - k * tau**2 / d), force=True))


def closed_form() -> sp.Expr:
    """The claimed form ``(1 - 2 k tau^2/d)^(-d/2)``."""
    return (1 - 2 * k * tau**2 / d) ** (-d / 2)


def large_d_limit() -> sp.Expr:
    """``lim_{d -> oo} (1 - 2 k tau^2/d)^(-d/2) = e^(k tau^2)``."""
    return sp.limit(closed_form(), d, sp.oo)


def leading_constant() -> sp.Expr:
    """``(1 - 2 tau^2/d)^(-d/2)``: the k = 1 case, the limit of N E[sum w^2] for a random query."""
    return tilted_mean().subs(k, 1)


def main() -> None:
    derived = tilted_mean()
    check = sp.simplify(sp.log(derived) - sp.log(closed_form()))
    print("E[exp(k tau^2 chi2_d/d)] =", derived, "\n    LaTeX:", sp.latex(derived))
    print("log(derived) - log((1 - 2k tau^2/d)^(-d/2)) simplifies to:", sp.simplify(sp.expand_log(check, force=True)))
    print("large-d limit:", large_d_limit(), "   LaTeX:", sp.latex(large_d_limit()))
    lead = leading_constant()
    print("leading constant (k = 1):", lead, "   LaTeX:", sp.latex(lead))
    print("  d = 16, tau = 1:", sp.N(lead.subs({d: 16, tau: 1}), 6), "  d = 4:", sp.N(lead.subs({d: 4, tau: 1}), 6))


if __name__ == "__main__":
    main()
