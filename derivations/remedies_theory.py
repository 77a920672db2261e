"""Remedies theory (REMEDIES.md 1 and 3; THEORY.md 4d), derived with SymPy: sigmoid attention's moments and the
top-k bound behind ``varsim.theory.remedies``.

Sigmoid attention puts ``w_i = s(g_i) = sigmoid(beta g_i - L)`` on key ``i``, ``L = ln N``, ``g_i`` i.i.d. N(0, 1).
The weights are i.i.d. and do not sum to 1, so the output variance has two terms. Derived here:

* the sum's moments from its cumulant generating function ``N K(t)``: ``E[sum w] = N m1``,
  ``Var(sum w) = N (m2 - m1^2)``, and ``E[sum w^2] = N m2`` (``m_k = E[s^k]``, one Gaussian integral each);
* ``Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)`` by conditioning on the weights (REMEDIES 1);
* exact cases: ``beta = 0`` gives ``(N/(N+1)^2, 0, N/(N+1))``; ``N = 1`` gives ``E[sum w] = 1/2``;
* the large-N series: with ``u = e^(beta g)/N``, ``s = u/(1+u)`` and the Gaussian MGF ``E[e^(j beta g)] =
  e^(j^2 beta^2/2)``: ``N E[s^2] = e^(2 beta^2)/N - 2 e^(9 beta^2/2)/N^2 + ...``,
  ``N Var(s) = (e^(2 beta^2) - e^(beta^2))/N + ...``: both vanish like ``1/N``;
* what a quadrature that keeps its relative accuracy at ``N = 1e300`` needs: ``s(g) - s(0)`` as a product
  (no cancellation), the log-integrands' second derivative ``<= -1`` (one peak, Gaussian tails around it, its
  stationarity condition), and the centring loss: at large N, ``(E[s] - s(0))^2 / Var(s)`` is at most
  ``phi^-5 ~ 0.09`` (``phi`` the golden ratio), so ``Var(s) = E[(s - s(0))^2] - (E[s] - s(0))^2`` cancels nothing,
  while ``m2 - m1^2`` cancels all but a fraction ``~ beta^2`` of ``m2`` as ``beta -> 0``.

Top-k softmax keeps ``k`` weights summing to 1: ``k sum w^2 - (sum w)^2 = sum_{i<j} (w_i - w_j)^2 >= 0`` gives
``sum w^2 >= 1/k`` (attained at equal weights, the Lagrange minimiser), ``(sum w)^2 - sum w^2 = 2 sum_{i<j} w_i w_j
>= 0`` gives ``sum w^2 <= 1``; both are reached (``beta -> 0`` and ``beta -> oo``), and with ``Var(sum w) = 0``,
``Var(o_j) >= sigma_v^2 / k``.

Run ``python derivations/remedies_theory.py`` to print the results (plain and LaTeX).
"""

from __future__ import annotations

from functools import cache

import sympy as sp

g = sp.Symbol("g", real=True)
x = sp.Symbol("x", real=True)
beta, n, k = sp.symbols("beta N k", positive=True)
ln_n = sp.Symbol("L", nonnegative=True)
m1, m2, m3, t, c = sp.symbols("m1 m2 m3 t c", real=True)
sigma_v = sp.Symbol("sigma_v", positive=True)
mu_v = sp.Symbol("mu_v", real=True)
#: E[sum w^2], Var(sum w), E[sum w] of a weight map, as symbols of the output-variance identity
e_ipr, var_wsum, e_wsum = sp.symbols("E_Y2 Var_S1 E_S1", nonnegative=True)
_u = sp.Symbol("u", positive=True)
_eps = sp.Symbol("epsilon", positive=True)


def sigmoid(arg) -> sp.Expr:
    return 1 / (1 + sp.exp(-arg))


def weight() -> sp.Expr:
    """One key's sigmoid weight ``s(g) = sigmoid(beta g - L)``."""
    return sigmoid(beta * g - ln_n)


def gauss_density() -> sp.Expr:
    return sp.exp(-g**2 / 2) / sp.sqrt(2 * sp.pi)


def moment_integrand(power: int) -> sp.Expr:
    """``N s(g)^power phi(g)``: its integral over the real line is ``N m_power`` (``N = e^L``)."""
    return sp.exp(ln_n) * weight() ** power * gauss_density()


# ----------------------------------------------------------------------------------------------------------------------
# the sum of N i.i.d. weights, and the output variance


def sum_moments() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``(E[sum w^2], Var(sum w), E[sum w])`` of ``N`` i.i.d. weights with ``E s = m1``, ``E s^2 = m2``: the sum's
    cumulant generating function is ``N K(t)``, ``K = ln E e^(t s)``; its first two cumulants are the mean and the
    variance. ``E[sum w^2]`` is ``N m2`` by linearity."""
    cgf = n * sp.log(1 + m1 * t + m2 * t**2 / 2 + m3 * t**3 / 6)
    mean = sp.simplify(sp.diff(cgf, t).subs(t, 0))
    var = sp.factor(sp.simplify(sp.diff(cgf, t, 2).subs(t, 0)))
    return n * m2, var, mean


def conditional_output_moments(n_keys: int = 4) -> tuple[sp.Expr, sp.Expr]:
    """``(E[o | w], E[o^2 | w])`` for ``o = sum_i w_i v_i`` at ``n_keys`` keys, values i.i.d. with mean ``mu_v``
    and variance ``sigma_v^2``, independent of the weights: the square expanded,
    ``E v_i v_j = mu_v^2 + sigma_v^2 [i=j]``."""
    w = sp.symbols(f"w1:{n_keys + 1}", nonnegative=True)
    v = sp.symbols(f"v1:{n_keys + 1}", real=True)
    o = sum(wi * vi for wi, vi in zip(w, v))
    square = sp.Poly(sp.expand(o**2), *v)
    cond_sq = 0
    for monom, coef in square.terms():
        value = 1
        for power in monom:
            value *= {0: 1, 1: mu_v, 2: sigma_v**2 + mu_v**2}[power]
        cond_sq += coef * value
    return mu_v * sum(w), sp.expand(cond_sq)


def output_variance(n_keys: int = 4) -> sp.Expr:
    """``Var(o_j)`` by total variance, ``E[Var(o|w)] + Var(E[o|w])``: the conditional second moment is rewritten in
    ``S1 = sum w`` and ``S2 = sum w^2`` (checked to leave no remainder), then averaged over the keys with
    ``E[S2] = E_Y2``, ``E[S1^2] = Var_S1 + E_S1^2``. Gives ``sigma_v^2 E_Y2 + mu_v^2 Var_S1``. Needs ``n_keys >= 2``
    (at one key ``S2 = S1^2`` and the split is not unique)."""
    if n_keys < 2:
        raise ValueError(f"n_keys must be >= 2, got {n_keys!r}")
    s1, s2 = sp.symbols("S1 S2", nonnegative=True)
    w = sp.symbols(f"w1:{n_keys + 1}", nonnegative=True)
    cond_mean, cond_sq = conditional_output_moments(n_keys)
    a, b = sp.symbols("a b")
    fit = sp.solve(sp.Poly(cond_sq - a * sum(wi**2 for wi in w) - b * sum(w) ** 2, *w).coeffs(), [a, b], dict=True)
    if len(fit) != 1:
        raise ArithmeticError("E[o^2 | w] is not a combination of sum w^2 and (sum w)^2")
    cond_sq_s = fit[0][a] * s2 + fit[0][b] * s1**2
    second = cond_sq_s.subs({s2: e_ipr, s1**2: var_wsum + e_wsum**2})
    mean = sp.simplify(cond_mean / sum(w)) * e_wsum
    return sp.expand(second - mean**2)


# ----------------------------------------------------------------------------------------------------------------------
# exact cases and the large-N series


@cache
def gaussian_mgf(j: int) -> sp.Expr:
    """``E[e^(j beta g)]``, ``g ~ N(0, 1)``, by integrating the density: ``e^(j^2 beta^2 / 2)``."""
    return sp.simplify(sp.integrate(sp.exp(j * beta * g) * gauss_density(), (g, -sp.oo, sp.oo)))


def uniform_logits_moments() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``beta = 0``: every weight is ``sigmoid(-ln N) = 1/(N+1)``; the moments integrated against the density and put
    into :func:`sum_moments`: ``(N/(N+1)^2, 0, N/(N+1))``."""
    s0 = sp.simplify(weight().subs(beta, 0).subs(ln_n, sp.log(n)))
    mk = [sp.integrate(s0**p * gauss_density(), (g, -sp.oo, sp.oo)) for p in (1, 2)]
    return tuple(sp.simplify(e.subs({m1: mk[0], m2: mk[1]})) for e in sum_moments())


def single_key_mean() -> tuple[sp.Expr, sp.Expr]:
    """``N = 1``: ``s(g) + s(-g)`` simplifies to 1 and the density is even, so ``E s = E[(s(g) + s(-g))/2] = 1/2``.
    Returns ``(s(g) + s(-g), E s)``."""
    s = weight().subs(ln_n, 0)
    pair = sp.simplify(s + s.subs(g, -g))
    even = sp.simplify(gauss_density() - gauss_density().subs(g, -g))
    if even != 0:
        raise ArithmeticError("the Gaussian density is not even")
    return pair, pair / 2


@cache
def large_n_series(terms: int = 4) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``(N E[s^2], N Var(s), N E[s])`` in powers of ``1/N`` up to ``N^-(terms-1)``: ``s^p = (u/(1+u))^p`` expanded in
    ``u = e^(beta g)/N``, each ``u^j`` averaged with :func:`gaussian_mgf`. An asymptotic series: the region ``u >= 1``,
    where the expansion fails, has Gaussian mass ``~ exp(-(ln N)^2 / (2 beta^2))``, below every power of ``1/N``;
    within ``u < 1`` the alternating binomial series errs by less than its first omitted term."""
    mk = []
    for p in (1, 2):
        poly = sp.Poly(sp.series((_u / (1 + _u)) ** p, _u, 0, terms + 1).removeO(), _u)
        mk.append(sum(coef * _eps**j * gaussian_mgf(j) for (j,), coef in poly.terms()))
    mean1, mean2 = mk
    per_n = [mean2 / _eps, (mean2 - mean1**2) / _eps, mean1 / _eps]
    out = []
    for e in per_n:
        trunc = sp.series(sp.expand(e), _eps, 0, terms).removeO()
        out.append(sp.expand(trunc.subs(_eps, 1 / n)))
    return tuple(out)


# ----------------------------------------------------------------------------------------------------------------------
# what an accurate quadrature needs


def centred_difference() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``(s(g) - s(0), positive form, negative form)``: ``sigmoid(beta g - L) sigmoid(L) (1 - e^(-beta g))`` and
    ``-sigmoid(-L) sigmoid(L - beta g) (1 - e^(beta g))``, products of factors with one sign each (the first for
    ``g > 0``, the second for ``g < 0``), so the difference is computed without cancellation; both equal it."""
    diff = weight() - weight().subs(g, 0)
    pos = sigmoid(beta * g - ln_n) * sigmoid(ln_n) * (1 - sp.exp(-beta * g))
    neg = -sigmoid(-ln_n) * sigmoid(ln_n - beta * g) * (1 - sp.exp(beta * g))
    return diff, pos, neg


def shifted_variance() -> sp.Expr:
    """``E[(s - c)^2] - (E[s] - c)^2`` in the moments: ``m2 - m1^2`` for every constant ``c``."""
    return sp.expand((m2 - 2 * c * m1 + c**2) - (m1 - c) ** 2)


def log_factor_curvatures() -> tuple[sp.Expr, sp.Expr]:
    """``((ln sigmoid)''(x), (ln(1 - e^(-x)))''(x))``: ``-sigmoid(x) sigmoid(-x)`` and ``-e^x/(e^x - 1)^2``, both
    negative. Every integrand of the quadrature is a product of such factors (of ``beta g`` shifted) times the
    density, so its log has second derivative ``<= -1``: one peak ``g*``, and below ``e^(-(g - g*)^2 / 2)`` times
    the peak value away from it."""
    return (sp.simplify(sp.diff(sp.log(sigmoid(x)), x, 2)),
            sp.simplify(sp.diff(sp.log(1 - sp.exp(-x)), x, 2)))


def peak_condition(power: int) -> sp.Expr:
    """``d/dg ln(s^power phi)``: ``power beta sigmoid(L - beta g) - g``; decreasing, positive at 0 and negative at
    ``g = power beta``, so the peak lies in ``[0, power beta]``."""
    return sp.simplify(sp.diff(power * sp.log(weight()) - g**2 / 2, g))


def centring_loss() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``(ratio, argmax, max)``: the large-N ratio ``(E[s] - s(0))^2 / Var(s)`` from :func:`large_n_series` (with
    ``s(0) = 1/(N+1)``) in ``y = e^(beta^2/2)``, ``(y-1)/(y^2 (y+1))``, and its maximum over ``y > 1``: at the golden
    ratio, ``phi^-5``."""
    y = sp.Symbol("y", positive=True)
    _, nvar, nmean = large_n_series(2)
    lead_var = sp.limit(nvar * n, n, sp.oo)
    lead_shift = sp.limit(nmean - n / (n + 1), n, sp.oo)
    ratio = sp.factor(sp.simplify((lead_shift**2 / lead_var).subs(beta, sp.sqrt(2 * sp.log(y)))))
    crit = [r for r in sp.solve(sp.diff(ratio, y), y) if r.is_real and r > 1]
    if len(crit) != 1:
        raise ArithmeticError(f"expected one interior maximum, got {crit}")
    return ratio, crit[0], sp.nsimplify(sp.simplify(ratio.subs(y, crit[0])))


# ----------------------------------------------------------------------------------------------------------------------
# top-k


def topk_identities(k_value: int) -> tuple[sp.Expr, sp.Expr]:
    """At ``k_value`` kept weights: ``k S2 - S1^2 - sum_{i<j} (w_i - w_j)^2`` and
    ``S1^2 - S2 - 2 sum_{i<j} w_i w_j``; both expand to 0 (Lagrange's identity, the square of a sum)."""
    w = sp.symbols(f"w1:{k_value + 1}", nonnegative=True)
    s1, s2 = sum(w), sum(wi**2 for wi in w)
    pairs = [(w[i], w[j]) for i in range(k_value) for j in range(i + 1, k_value)]
    lagrange = sp.expand(k_value * s2 - s1**2 - sum((a - b) ** 2 for a, b in pairs))
    square = sp.expand(s1**2 - s2 - 2 * sum(a * b for a, b in pairs))
    return lagrange, square


def topk_minimiser(k_value: int) -> tuple[dict, sp.Expr]:
    """Minimise ``sum w^2`` on ``sum w = 1`` (Lagrange multiplier): the stationary point, all ``w_i = 1/k``, and the
    value there, ``1/k``; the objective's Hessian is ``2 I``, so it is the global minimum."""
    w = sp.symbols(f"w1:{k_value + 1}", real=True)
    lam = sp.Symbol("lambda", real=True)
    lagrangian = sum(wi**2 for wi in w) - lam * (sum(w) - 1)
    sol = sp.solve([sp.diff(lagrangian, v) for v in (*w, lam)], [*w, lam], dict=True)
    if len(sol) != 1:
        raise ArithmeticError(f"expected one stationary point, got {sol}")
    hessian = sp.hessian(sum(wi**2 for wi in w), w)
    if hessian != 2 * sp.eye(k_value):
        raise ArithmeticError("the objective's Hessian is not 2 I")
    return sol[0], sp.nsimplify(sum(wi**2 for wi in w).subs(sol[0]))


def topk_bounds() -> tuple[sp.Expr, sp.Expr]:
    """``(lower, upper)`` on ``sum w^2`` at general ``k``: from the two identities, ``k S2 >= S1^2`` and
    ``S1^2 >= S2`` (nonnegative weights), at ``S1 = 1``."""
    s1 = sp.Symbol("S1", positive=True)
    return (s1**2 / k).subs(s1, 1), (s1**2).subs(s1, 1)


def topk_limits(k_value: int = 3) -> tuple[sp.Expr, sp.Expr]:
    """``sum w^2`` of softmax over ``k_value`` kept logits ``z_1 - delta_i`` (``delta_1 = 0``, other gaps positive)
    at ``beta = 0`` (``1/k``: the lower bound is attained) and as ``beta -> oo`` (1: the upper bound is)."""
    deltas = [sp.Integer(0), *sp.symbols(f"delta2:{k_value + 1}", positive=True)]
    z = [sp.exp(-beta * d) for d in deltas]
    ipr = sum(zi**2 for zi in z) / sum(z) ** 2
    return sp.simplify(ipr.subs(beta, 0)), sp.limit(ipr, beta, sp.oo)


def topk_output_variance_floor() -> sp.Expr:
    """:func:`output_variance` with ``Var(sum w) = 0`` (the weights sum to 1) at the lower bound ``E[sum w^2] = 1/k``:
    ``sigma_v^2 / k``."""
    lower, _ = topk_bounds()
    return output_variance().subs({var_wsum: 0, e_ipr: lower})


def main() -> None:
    ipr, var, mean = sum_moments()
    print("sum of N i.i.d. weights: E[sum w^2] =", ipr, " Var(sum w) =", var, " E[sum w] =", mean,
          "   LaTeX:", sp.latex(var))
    out = output_variance()
    print("Var(o_j) =", out, "   LaTeX:", sp.latex(out))
    print("beta = 0:", uniform_logits_moments(), "   N = 1: s(g) + s(-g) =", single_key_mean()[0],
          " E s =", single_key_mean()[1])
    print("E[e^(j beta g)], j = 1, 2:", gaussian_mgf(1), gaussian_mgf(2))
    for name, e in zip(("N E[s^2]", "N Var(s)", "N E[s]"), large_n_series(3)):
        print(f"{name} (large N) =", e, "   LaTeX:", sp.latex(e))
    diff, pos, neg = centred_difference()
    print("s(g) - s(0) =", pos, "=", neg, "   LaTeX:", sp.latex(pos))
    print("E[(s-c)^2] - (E s - c)^2 =", shifted_variance())
    print("log-factor curvatures:", log_factor_curvatures(), "   peak condition (s^2 phi):", peak_condition(2))
    ratio, arg, top = centring_loss()
    print("centring loss (large N):", ratio, " max at y =", arg, ":", top, "=", sp.N(top, 6), "   LaTeX:",
          sp.latex(top))
    print("top-k identities at k = 4 (both 0):", topk_identities(4), "  minimiser at k = 3:", topk_minimiser(3))
    lower, upper = topk_bounds()
    print("top-k bounds:", lower, "<= sum w^2 <=", upper, "   LaTeX:", sp.latex(lower))
    print("top-k limits (beta = 0, beta -> oo) at k = 3:", topk_limits(3))
    print("top-k output variance floor:", topk_output_variance_floor())


if __name__ == "__main__":
    main()
