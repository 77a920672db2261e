"""Independent references for ``varsim.theory.laws``: each law's measure built directly in mpmath from its
definition (atoms for the discrete laws; composite Gauss-Legendre in the angle for the sphere; the Irwin-Hall
density as its alternating sum at 60 digits for the uniform keys), and the outer integral
``E[Y2] = N int t E[e^{2X} e^{-t e^X}] L(t)^{N-1} dt`` (``t = e^u``) as composite Gauss-Legendre in u at 20
digits, its window found by bisection in mpmath. Nothing here calls the package's quadrature.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np

_X16, _W16 = np.polynomial.legendre.leggauss(16)


def _gl(a, b, panels):
    """Composite 16-point Gauss-Legendre nodes and weights on ``[a, b]`` (mpf)."""
    out = []
    h = (b - a) / panels
    for p in range(panels):
        lo = a + p * h
        for x, w in zip(_X16, _W16):
            out.append((lo + h * (1 + mp.mpf(float(x))) / 2, h * mp.mpf(float(w)) / 2))
    return out


def sphere_measure(d: int, beta: float):
    """``X = beta sqrt(d) cos(theta)``, theta's density ``sin^{d-2} / B((d-1)/2, 1/2)`` on ``[0, pi]``."""
    scale = mp.mpf(beta) * mp.sqrt(d)
    norm = mp.beta(mp.mpf(d - 1) / 2, mp.mpf(1) / 2)
    panels = int(float(scale)) + 4
    return [(scale * mp.cos(th), w * mp.sin(th) ** (d - 2) / norm) for th, w in _gl(mp.mpf(0), mp.pi, panels)]


def rademacher_measure(d: int, beta: float):
    return [(mp.mpf(beta) * (2 * k - d) / mp.sqrt(d), mp.binomial(d, k) / mp.mpf(2) ** d) for k in range(d + 1)]


def uniform_measure(d: int, beta: float):
    """``X = beta sqrt(3/d) (2 S - d)``, S Irwin-Hall: density ``sum_k (-1)^k C(d,k) (s-k)_+^{d-1} / (d-1)!``."""
    a = mp.mpf(beta) * mp.sqrt(mp.mpf(3) / d)
    out = []
    with mp.workdps(60):
        for j in range(d):
            per = max(1, int(2 * float(a)) + 1)
            for s, w in _gl(mp.mpf(j), mp.mpf(j + 1), per):
                dens = mp.fsum((-1) ** k * mp.binomial(d, k) * (s - k) ** (d - 1) for k in range(j + 1))
                out.append((a * (2 * s - d), w * dens / mp.factorial(d - 1)))
    return [(+x, +w) for x, w in out]


def atoms_measure(atoms, beta: float):
    atoms = np.asarray(atoms, dtype=float)
    return [(mp.mpf(beta) * mp.mpf(float(x)), mp.mpf(1) / atoms.size) for x in atoms]


def _inner(measure, u):
    """``(ln L, M, M4)`` at ``t = e^u``: ``L = E[e^{-t e^X}]`` (as ``log1p(-P)``, ``P = E[-expm1(-t e^X)]``, while
    ``P < 1/2``), ``M = E[(t e^X)^2 e^{-t e^X}]``, ``M4 = E[(t e^X)^4 e^{-t e^X}]``."""
    p, el, m, m4 = _sums(measure, u)
    return (mp.log1p(-p) if p < 0.5 else mp.log(el)), m, m4


def _sums(measure, u):
    """``(P, L, M, M4)`` at ``t = e^u`` from a measure's ``(x, weight)`` pairs."""
    p = el = m = m4 = mp.mpf(0)
    for x, w in measure:
        y = u + x
        ey = mp.exp(y)
        p += w * -mp.expm1(-ey)
        el += w * mp.exp(-ey)
        e = w * mp.exp(2 * y - ey)
        m += e
        m4 += e * ey * ey
    return p, el, m, m4


def _bisect(f, lo, hi, iters=60):
    """Smallest u in [lo, hi] with f(u) >= 0 for increasing f."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid) >= 0:
            hi = mid
        else:
            lo = mid
    return hi


def reference(measure, n: float, second: bool = False) -> float:
    """``E[Y2]`` (or ``E[Y2^2]`` with ``second``) at 20 digits."""
    with mp.workdps(20):
        big_n = mp.mpf(n)
        xs = [x for x, _ in measure]
        x_min, x_max = min(xs), max(xs)
        ln_n = mp.log(big_n)
        lo = -x_max - ln_n - 30
        hi = -x_min + 8
        if n > 1:
            target = 2 * ln_n + 80
            hi = _bisect(lambda u: (big_n - 1) * -_inner(measure, u)[0] - target, lo, hi)
        panels = int(float(hi - lo) / 3) + 1
        total = mp.mpf(0)
        for u, wu in _gl(lo, hi, panels):
            ln_l, m, m4 = _inner(measure, u)
            if second:
                total += wu * (big_n * m4 * mp.exp((big_n - 1) * ln_l)
                               + big_n * (big_n - 1) * m * m * mp.exp((big_n - 2) * ln_l)) / 6
            else:
                total += wu * big_n * m * mp.exp((big_n - 1) * ln_l)
        return float(total)


def exact_small_n(atoms, probs, n: int, beta: float) -> float:
    """``E[sum w^2]`` for a discrete law by enumerating all ``len(atoms)^n`` draws (tiny n only), in floats."""
    import itertools

    total = 0.0
    for idx in itertools.product(range(len(atoms)), repeat=n):
        x = beta * np.asarray([atoms[i] for i in idx])
        w = np.exp(x - x.max())
        w /= w.sum()
        total += math.prod(probs[i] for i in idx) * float(np.sum(w * w))
    return total



def _gl_breaks(breaks):
    """Composite 16-point Gauss-Legendre nodes and weights over consecutive ``breaks`` (one panel each)."""
    out = []
    for lo, hi in zip(breaks[:-1], breaks[1:]):
        out.extend(_gl(mp.mpf(lo), mp.mpf(hi), 1))
    return out


class StudentT:
    """The logit law ``X = beta T``, ``T = sqrt((nu-2)/nu) t_nu``, in mpmath from its definition: density
    ``(1 + x^2/((nu-2) beta^2))^{-(nu+1)/2} / (beta sqrt(nu-2) B(nu/2, 1/2))`` and survival function
    ``I_z(nu/2, 1/2)/2``, ``z = (nu-2) beta^2 / ((nu-2) beta^2 + x^2)``. The inner integrals are composite
    Gauss-Legendre in ``y = u + x`` on ``[-60, 8]`` plus the survival function above and ``mp.quad`` (tanh-sinh)
    below; nothing of the package's lattice, windows or partition of unity."""

    def __init__(self, nu: float, beta: float):
        self.nu, self.s2 = mp.mpf(nu), (mp.mpf(nu) - 2) * mp.mpf(beta) ** 2
        self.k = 1 / (mp.sqrt(self.s2) * mp.beta(self.nu / 2, mp.mpf(1) / 2))
        self.scale = mp.sqrt(self.s2)

    def f(self, x):
        return self.k * (1 + x * x / self.s2) ** (-(self.nu + 1) / 2)

    def sf(self, x):
        """``P(X > x)``, any real x."""
        if x < 0:
            return 1 - self.sf(-x)
        return mp.betainc(self.nu / 2, mp.mpf(1) / 2, 0, self.s2 / (self.s2 + x * x), regularized=True) / 2

    def inner(self, u):
        """``(ln L, M, M4)`` at ``t = e^u``."""
        breaks = [-60, -40, -20, -10] + list(range(-5, 9))
        peak = u  # the density's bulk (x = 0) in y: panels of its scale around it
        if -60 < peak < 8:
            w = min(float(self.scale), 1.0)
            breaks += [float(peak) + j * w for j in range(-6, 7) if -60 < float(peak) + j * w < 8]
        p, el, m, m4 = _sums([(y - u, w * self.f(y - u)) for y, w in _gl_breaks(sorted(set(breaks)))], u)
        low = -60 - u  # x below: y < -60, where 1 - e^{-e^y} = e^y (1 - e^y/2 ...) and e^{-e^y} = 1 - ...
        xs = [-mp.inf] + ([mp.mpf(0)] if low > 0 else []) + [low]
        below = mp.quad(lambda x: self.f(x) * -mp.expm1(-mp.exp(u + x)), xs)
        p += below + self.sf(8 - u)
        el += (1 - self.sf(low)) - below
        return (mp.log1p(-p) if p < 0.5 else mp.log(el)), m, m4


def reference_t(nu: float, beta: float, n: float, second: bool = False) -> float:
    """``E[Y2]`` (or ``E[Y2^2]``) of the Student-t logit law at 20 digits: the outer integral over the whole line in
    ``u = c + r sinh(v)``, ``|v| <= 12`` (composite 16-point Gauss-Legendre in v, 48 panels; ``c = u*`` with
    ``N P(u*) = 1`` by bisection, 0 at N = 1; ``r = max(1, |c|/(nu+1))``, the integrand's scale there), out to
    ``|u - c| = 8e4 r``, where the power-law tails are far below 1e-12 of the total for ``nu >= 3``."""
    with mp.workdps(20):
        law = StudentT(nu, beta)
        big_n = mp.mpf(n)
        c = mp.mpf(0)
        if n > 1:
            c = mp.sinh(_bisect(lambda t: mp.log(big_n) + mp.log(-mp.expm1(law.inner(mp.sinh(t))[0])),
                                mp.asinh(mp.mpf(-1e200)), mp.asinh(mp.mpf(8))))
        total = mp.mpf(0)
        spread = max(mp.mpf(1), abs(c) / (law.nu + 1))  # the scale of the integrand around c
        for v, wv in _gl(mp.mpf(-12), mp.mpf(12), 48):
            u = c + spread * mp.sinh(v)
            ln_l, m, m4 = law.inner(u)
            if second:
                g = (big_n * m4 * mp.exp((big_n - 1) * ln_l)
                     + big_n * (big_n - 1) * m * m * mp.exp((big_n - 2) * ln_l)) / 6
            else:
                g = big_n * m * mp.exp((big_n - 1) * ln_l)
            total += wv * g * spread * mp.cosh(v)
        return float(total)


#: (nu, beta, N, second) of the stored Student-t references (tests/data/law_student_t_reference.json)
T_POINTS = [(3.0, 1.0, 1e3, False), (30.0, 0.2, 1e300, False), (3.0, 1.0, 20.0, True), (3.0, 1.0, 2.0, False),
            (5.0, 0.5, 1e6, False), (10.0, 3.0, 1e12, False)]
T_REFERENCE = "law_student_t_reference.json"


if __name__ == "__main__":  # python tests/law_reference.py: rewrite the stored Student-t references (~10 CPU min)
    import json
    from pathlib import Path

    path = Path(__file__).parent / "data" / T_REFERENCE
    rows = []
    for nu, b, n, sec in T_POINTS:  # written after each point
        rows.append({"nu": nu, "beta": b, "n": n, "second": sec, "value": reference_t(nu, b, n, sec)})
        path.write_text(json.dumps({"command": "python tests/law_reference.py", "digits": 20, "points": rows},
                                   indent=1) + "\n")
        print(rows[-1], flush=True)
