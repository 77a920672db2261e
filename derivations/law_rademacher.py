"""Rademacher keys under the all-ones query, derived with SymPy (issue 47; ``varsim.theory.laws``).

``X = beta (2B - d)/sqrt(d)``, ``B ~ Binomial(d, 1/2)``. Derived here: the MGF ``E[e^{sT}] = cosh(s/sqrt d)^d`` by
the binomial sum; ``Var T = 1``; the bounded-logit limit
``A(beta) = cosh(2 beta/sqrt d)^d / cosh(beta/sqrt d)^{2d}``, increasing to ``2^d = 1/P(top atom)`` as
``beta -> oo``: ``N E[sum w^2]`` stays below ``2^d`` at every beta, so there is no frozen phase once ``N >> 2^d``.

Run ``python derivations/law_rademacher.py`` to print the results.
"""

from __future__ import annotations

import sympy as sp

s, beta = sp.symbols("s beta", positive=True)


def mgf(dim: int) -> sp.Expr:
    """``E[e^{s T}]`` as the binomial sum, rewritten as a power of cosh."""
    k = sp.symbols("k", integer=True, nonnegative=True)
    total = sp.summation(sp.binomial(dim, k) * sp.exp(s * (2 * k - dim) / sp.sqrt(dim)), (k, 0, dim)) / 2**dim
    return sp.simplify(total.rewrite(sp.cosh))


def closed_mgf(dim: int) -> sp.Expr:
    return sp.cosh(s / sp.sqrt(dim)) ** dim


def annealed_limit(dim: int) -> sp.Expr:
    """``E[e^{2X}]/E[e^X]^2`` at logit scale ``beta``."""
    return closed_mgf(dim).subs(s, 2 * beta) / closed_mgf(dim).subs(s, beta) ** 2


def large_beta_limit(dim: int) -> sp.Expr:
    return sp.limit(annealed_limit(dim), beta, sp.oo)


def main() -> None:
    for dim in (1, 2, 5):
        m = mgf(dim)
        diff = sp.simplify((m - closed_mgf(dim)).rewrite(sp.exp))
        print(f"d = {dim}: E[e^(sT)] =", m, "   LaTeX:", sp.latex(m), "  minus cosh(s/sqrt d)^d:", diff)
        print("       Var T =", sp.simplify(sp.diff(m, s, 2).subs(s, 0)), "  A(beta) =", annealed_limit(dim),
              "  beta -> oo:", large_beta_limit(dim))


if __name__ == "__main__":
    main()
