"""Large-N expansion of E[sum_i w_i^2] for i.i.d. positive weights X_i (THEORY.md 1.3), derived with SymPy.

Write Y2 = A / (N B^2) with the sample means A = mean(X_i^2), B = mean(X_i). Expand f(A, B) = A/B^2
around (m2, m1) (exact in A, Taylor in B):

    A/B^2 = sum_q (-1)^q (q+1) (m2 + a) b^q / m1^(q+2),      a = A - m2,  b = B - m1.

The joint central moments E[a^p b^q] of the sample means come from their cumulant generating function
N K(s/N, t/N) - m2 s - m1 t, where K is the CGF of (X^2, X) (raw joint moments E[X^(2i+j)] = m_(2i+j)).
A moment of total order r is O(N^-ceil(r/2)), so q <= 6 gives E[A/B^2] to O(N^-3); only joint
cumulants up to order 4 (moments up to m5) reach that order. This gives
c1..c4 of E[Y2] = c1/N + c2/N^2 + c3/N^3 + c4/N^4 + O(N^-5).

Then: lognormal weights X = e^(beta g) have m_k = x^(k^2/2), x = e^(beta^2); Exp(1) weights (m_k = k!)
give Dirichlet(1,...,1) weights with E[Y2] = 2/(N+1) = 2/N - 2/N^2 + 2/N^3 - 2/N^4 + ...

Run ``python derivations/series_coefficients.py`` to print the results (plain and LaTeX).
"""

from __future__ import annotations

from functools import cache

import sympy as sp

ORDER = 4  # number of coefficients c1..c4
m = sp.symbols("m1:10", positive=True)  # m[k-1] = E[X^k]; the result uses m1..m5 only
N, x = sp.symbols("N x", positive=True)


def _moment(k: int):
    return sp.Integer(1) if k == 0 else m[k - 1]


@cache
def central_moments_of_means() -> dict[tuple[int, int], sp.Expr]:
    """``{(p, q): E[a^p b^q]}`` for p in {0, 1}, q <= 2*ORDER - 2, to O(N^-(ORDER-1)) (terms in ``1/N``).

    A joint cumulant of total order r of the sample means is ``N^(1-r)`` times that of (X^2, X), so
    cumulants up to order ORDER and products of at most ORDER-1 of them are all that reach ``N^-(ORDER-1)``.
    """
    s, t, h = sp.symbols("s t h")
    gens = (s, t, h)
    hmax = ORDER - 1  # keep powers of h = 1/N up to this

    def trunc(poly: sp.Poly, max_total: int | None = None) -> sp.Poly:
        terms = {mon: c for mon, c in poly.terms()
                 if mon[0] <= 1 and mon[2] <= hmax and (max_total is None or mon[0] + mon[1] <= max_total)}
        return sp.Poly.from_dict(terms, *gens) if terms else sp.Poly(0, *gens)

    # Raw MGF of (U, V) = (X^2, X) to total degree ORDER: E[U^i V^j] = m_(2i+j).
    mgf = sp.Poly(sum(_moment(2 * i + j) * s**i * t**j / (sp.factorial(i) * sp.factorial(j))
                      for i in range(2) for j in range(ORDER + 1) if 1 <= i + j <= ORDER), *gens)
    # CGF = log(1 + mgf) by its power series (mgf has no constant term here).
    cgf, power = sp.Poly(0, *gens), sp.Poly(1, *gens)
    for k in range(1, ORDER + 1):
        power = trunc(power * mgf, ORDER)
        cgf += power * sp.Rational((-1) ** (k + 1), k)
    cgf = trunc(cgf, ORDER)
    # Centred sample means: K_N(s, t) = N K(s/N, t/N) - m2 s - m1 t; the (i, j) term gets h^(i+j-1).
    k_n = {}
    for (i, j, _), c in cgf.terms():
        if i + j >= 2:
            k_n[(i, j, i + j - 1)] = c
    k_n = sp.Poly.from_dict(k_n, *gens)
    # exp(K_N); every term of K_N carries h^>=1, so powers up to hmax suffice.
    mgf_n, power = sp.Poly(1, *gens), sp.Poly(1, *gens)
    for k in range(1, hmax + 1):
        power = trunc(power * k_n)
        mgf_n += power * (sp.Integer(1) / sp.factorial(k))
    out = {}
    for p in range(2):
        for q in range(2 * ORDER - 1):
            coef = sum(c * h**mon[2] for mon, c in mgf_n.terms() if mon[0] == p and mon[1] == q)
            out[(p, q)] = sp.expand(coef * sp.factorial(p) * sp.factorial(q)).subs(h, 1 / N)
    return out


@cache
def generic_coefficients() -> tuple[sp.Expr, ...]:
    """``(c1, c2, c3, c4)`` in terms of the raw moments ``m1..m5`` (symbols ``m[0]..m[4]``)."""
    mom = central_moments_of_means()
    m1, m2 = m[0], m[1]
    expansion = sum((-1) ** q * (q + 1) * (m2 * mom[(0, q)] + mom[(1, q)]) / m1 ** (q + 2)
                    for q in range(2 * ORDER - 1))
    # E[Y2] = E[A/B^2]/N: the N^-(k-1) term of E[A/B^2] is c_k.
    h = sp.symbols("h")
    series = sp.expand(expansion.subs(N, 1 / h))
    return tuple(sp.factor(sp.together(series.coeff(h, k - 1))) for k in range(1, ORDER + 1))


def lognormal_coefficients() -> tuple[sp.Expr, ...]:
    """``c1..c4`` for ``X = e^(beta g)``: substitute ``m_k = x^(k^2/2)``, ``x = e^(beta^2)``."""
    subs = {m[k - 1]: x ** sp.Rational(k * k, 2) for k in range(1, 10)}
    return tuple(sp.expand(sp.powsimp(sp.expand(c.subs(subs)))) for c in generic_coefficients())


def exponential_coefficients() -> tuple[sp.Expr, ...]:
    """``c1..c4`` for ``X ~ Exp(1)`` (``m_k = k!``): the Dirichlet sanity check, expected (2, -2, 2, -2)."""
    subs = {m[k - 1]: sp.factorial(k) for k in range(1, 10)}
    return tuple(sp.nsimplify(c.subs(subs)) for c in generic_coefficients())


def main() -> None:
    names = ("c1", "c2", "c3", "c4")
    print("Generic moments m_k = E[X^k]:")
    for name, c in zip(names, generic_coefficients()):
        print(f"  {name} = {c}\n      LaTeX: {sp.latex(c)}")
    print("Lognormal weights, x = e^{beta^2}:")
    for name, c in zip(names, lognormal_coefficients()):
        print(f"  {name} = {c}\n      LaTeX: {sp.latex(c)}")
    print("Exp(1) weights (Dirichlet check, expect 2, -2, 2, -2):", exponential_coefficients())


if __name__ == "__main__":
    main()
