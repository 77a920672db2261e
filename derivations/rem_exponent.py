"""REM exponent of the mean IPR (THEORY.md 3.2-3.4), derived with SymPy.

One big jump: E[Y2] = N E[X_1^2/(X_1 + Z')^2] with Z' ~ N e^(beta^2/2) below the frozen threshold.
With N = e^n, beta = b sqrt(n), g = eta sqrt(n), the Laplace exponent per n of
N phi(g) e^(2 beta g) / (e^(beta g) + N e^(beta^2/2))^2 is

    phi(eta) = 1 - eta^2/2 + 2 b eta - 2 max(b eta, 1 + b^2/2),

and psi(b) = max_eta phi(eta) until psi reaches 0, where Y2 <= 1 caps it (frozen phase).
Also derived: the thresholds sqrt(2/3) and sqrt(2), continuity, the local exponent
d(n psi(beta/sqrt n))/dn (= 1/2 - n/beta^2 in the middle phase), and, for the frozen phase, the mean
of sum eta_k^2 under Poisson-Dirichlet PD(alpha, 0): 1 - alpha (THEORY.md 3.3).

Run ``python derivations/rem_exponent.py`` to print the results (plain and LaTeX).
"""

from __future__ import annotations

from functools import cache

import sympy as sp

b, eta, n, beta = sp.symbols("b eta n beta", positive=True)


def exponent_branches() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``(phi_1, phi_2, eta_kink)``: phi where ``N e^(beta^2/2)`` (phi_1) or ``e^(beta g)`` (phi_2) dominates
    the denominator; they meet at ``eta_kink = (1 + b^2/2)/b``."""
    phi1 = 1 - eta**2 / 2 + 2 * b * eta - 2 * (1 + b**2 / 2)
    phi2 = 1 - eta**2 / 2 + 2 * b * eta - 2 * b * eta
    kink = sp.solve(sp.Eq(b * eta, 1 + b**2 / 2), eta)[0]
    return phi1, phi2, kink


@cache
def annealed_threshold() -> sp.Expr:
    """``b`` where the interior maximiser of ``phi_1`` hits the kink: ``sqrt(2/3)``."""
    phi1, _, kink = exponent_branches()
    stationary = sp.solve(sp.diff(phi1, eta), eta)[0]  # 2b
    return sp.solve(sp.Eq(stationary, kink), b)[0]


@cache
def psi_pieces() -> tuple[sp.Expr, sp.Expr]:
    """``(psi_annealed, psi_middle)``: ``max phi_1`` at its stationary point, and ``phi`` at the kink
    (``phi_1`` increases and ``phi_2`` decreases across it once ``b > sqrt(2/3)``)."""
    phi1, phi2, kink = exponent_branches()
    stationary = sp.solve(sp.diff(phi1, eta), eta)[0]
    annealed = sp.expand(phi1.subs(eta, stationary))
    middle = sp.factor(sp.simplify(phi2.subs(eta, kink)))
    assert sp.simplify(phi1.subs(eta, kink) - middle) == 0  # the branches agree at the kink
    return annealed, middle


@cache
def frozen_threshold() -> sp.Expr:
    """``b`` where the middle branch reaches 0 (and Y2 <= 1 caps psi): ``sqrt(2)``."""
    _, middle = psi_pieces()
    return sp.solve(sp.Eq(middle, 0), b)[0]


def psi() -> sp.Piecewise:
    """``psi(b) = lim (1/ln N) ln E[Y2]`` as a SymPy Piecewise."""
    annealed, middle = psi_pieces()
    return sp.Piecewise((annealed, b <= annealed_threshold()), (middle, b <= frozen_threshold()), (0, True))


def continuity_gaps() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """Jumps of psi at sqrt(2/3) and sqrt(2), and of psi' at sqrt(2): all simplify to 0."""
    annealed, middle = psi_pieces()
    b1, b2 = annealed_threshold(), frozen_threshold()
    return (sp.simplify(annealed.subs(b, b1) - middle.subs(b, b1)), sp.simplify(middle.subs(b, b2)),
            sp.simplify(sp.diff(middle, b).subs(b, b2)))


def local_exponents() -> tuple[sp.Expr, sp.Expr]:
    """``d(n psi(beta/sqrt n))/dn`` in the annealed (``-1``) and middle (``1/2 - n/beta^2``) phases."""
    annealed, middle = psi_pieces()
    at = {b: beta / sp.sqrt(n)}
    return (sp.simplify(sp.diff(n * annealed.subs(at), n)), sp.expand(sp.simplify(sp.diff(n * middle.subs(at), n))))


def phase_boundaries_in_log_n() -> tuple[sp.Expr, sp.Expr]:
    """``ln N`` at ``b = sqrt(2/3)`` (annealed above) and ``b = sqrt 2`` (frozen below): ``3 beta^2/2, beta^2/2``."""
    return tuple(sp.solve(sp.Eq(beta / sp.sqrt(n), bt), n)[0] for bt in (annealed_threshold(), frozen_threshold()))


def poisson_dirichlet_mean_ipr() -> sp.Expr:
    """``E sum_k eta_k^2`` for ``PD(alpha, 0)``: atoms of intensity ``alpha xi^(-alpha-1)`` normalised by their sum,
    via ``1/S^2 = int t e^(-tS) dt`` and Campbell-Mecke. Equals ``1 - alpha``."""
    al, t, xi = sp.symbols("alpha t xi", positive=True)
    inner = sp.integrate(xi**2 * sp.exp(-t * xi) * al * xi ** (-al - 1), (xi, 0, sp.oo), conds="none")
    laplace = sp.exp(-sp.gamma(1 - al) * t**al)  # E e^{-tS} for the alpha-stable sum
    return sp.simplify(sp.gammasimp(sp.integrate(t * inner * laplace, (t, 0, sp.oo), conds="none")))


def main() -> None:
    annealed, middle = psi_pieces()
    print("psi annealed branch:", annealed, "   LaTeX:", sp.latex(annealed))
    print("psi middle branch:  ", middle, "   LaTeX:", sp.latex(middle))
    print("thresholds:", annealed_threshold(), frozen_threshold(),
          "   LaTeX:", sp.latex(annealed_threshold()), sp.latex(frozen_threshold()))
    print("continuity gaps (psi at sqrt(2/3), psi and psi' at sqrt 2):", continuity_gaps())
    ann, mid = local_exponents()
    print("d(n psi)/dn: annealed", ann, " middle", mid, "   LaTeX:", sp.latex(mid))
    print("phase boundaries in ln N:", phase_boundaries_in_log_n())
    pd = poisson_dirichlet_mean_ipr()
    print("PD(alpha, 0) mean of sum eta^2:", pd, "   LaTeX:", sp.latex(pd))


if __name__ == "__main__":
    main()
