"""Uniform keys on ``[-sqrt 3, sqrt 3]^d`` under the all-ones query, derived with SymPy (issue 47).

``X = beta sqrt(3/d) (2S - d)``, ``S`` the Irwin-Hall sum of ``d`` uniforms. Derived here: the density of ``S`` on
each knot interval (``sum_k (-1)^k C(d,k) (s-k)^{d-1} / (d-1)!``) by repeated convolution, equal to the package's
exact coefficients; the MGF ``(sinh z / z)^d``, ``z = s sqrt(3/d)``; ``Var T = 1``; and the large-beta form of the
bounded-logit limit, ``A(beta) ~ z^d`` (``z = beta sqrt(3/d)``): the density vanishes like ``(t_max - t)^{d-1}`` at
the top, so the crossover scale is ``beta* ~ N^{1/d}``.

Run ``python derivations/law_uniform.py`` to print the results.
"""

from __future__ import annotations

import sympy as sp

x, s, z = sp.symbols("x s z", positive=True)


def irwin_hall_pieces(dim: int) -> list[sp.Expr]:
    """The density of ``S`` on ``[j, j+1]``, ``j = 0..dim-1``, by convolving the uniform density ``dim - 1`` times."""
    pieces = [sp.Integer(1)]  # d = 1: density 1 on [0, 1]
    for n in range(2, dim + 1):
        new = []
        for j in range(n):
            # f_n(x) = int_{x-1}^{x} f_{n-1}(y) dy on [j, j+1]: the pieces j-1 and j of f_{n-1} contribute
            total = 0
            if j - 1 >= 0:
                total += sp.integrate(pieces[j - 1].subs(x, s), (s, x - 1, j))
            if j < n - 1:
                total += sp.integrate(pieces[j].subs(x, s), (s, j, x))
            new.append(sp.expand(total))
        pieces = new
    return pieces


def alternating_form(dim: int, j: int) -> sp.Expr:
    return sp.expand(sum((-1) ** k * sp.binomial(dim, k) * (x - k) ** (dim - 1) for k in range(j + 1))
                     / sp.factorial(dim - 1))


def mgf(dim: int) -> sp.Expr:
    """``E[e^{z T}]``, ``T = (U_1 + .. + U_dim)/sqrt(dim)`` with ``U_i`` uniform on [-sqrt3, sqrt3]: one coordinate's
    MGF to the power dim."""
    one = sp.integrate(sp.exp(z * x / sp.sqrt(dim)), (x, -sp.sqrt(3), sp.sqrt(3))) / (2 * sp.sqrt(3))
    return sp.simplify(one**dim)


def large_beta_ratio(dim: int) -> sp.Expr:
    """``lim_{z -> oo} A / z^d`` with ``A = (sinh 2z / 2z)^d / (sinh z / z)^{2d}``, ``z = beta sqrt(3/d)``."""
    a = (sp.sinh(2 * z) / (2 * z)) ** dim / (sp.sinh(z) / z) ** (2 * dim)
    return sp.limit(a / z**dim, z, sp.oo)


def main() -> None:
    for dim in (2, 3, 4):
        pieces = irwin_hall_pieces(dim)
        same = all(sp.simplify(p - alternating_form(dim, j)) == 0 for j, p in enumerate(pieces))
        print(f"d = {dim}: pieces", pieces, " equal the alternating sum:", same)
        print("       MGF:", mgf(dim), "  Var T:", sp.limit(sp.diff(mgf(dim), z, 2), z, 0),
              "  A/z^d -> ", large_beta_ratio(dim))


if __name__ == "__main__":
    main()
