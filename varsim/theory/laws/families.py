"""Logit laws: the law of one logit ``X = beta T`` of a key under a fixed query, as registered objects.

Each family (an entry of :data:`LAWS`) gives its unit-scale law ``T``: support, tail class, ``log_mgf``
(``ln E[e^{s T}]``), a sampler of ``X`` taking ``rng=`` (SPEC 7) and a node measure of ``X`` for the exact theory
(:mod:`varsim.theory.laws._lattice`). Every family but the empirical one has ``Var T = 1``, so ``beta`` is the logit
standard deviation as in :func:`varsim.theory.expected_ipr`.

* ``gaussian``: ``T ~ N(0, 1)`` (keys ``N(0, I_d)``, any fixed query); the theory is :mod:`varsim.theory.ipr`.
* ``sphere``: query and keys on the unit sphere ``S^{d-1}`` (QK-norm), ``X = beta sqrt(d) cos(angle)``; the density
  of ``C = cos(angle)`` is proportional to ``(1 - c^2)^{(d-3)/2}`` on ``[-1, 1]``, ``Var C = 1/d``, so the logit's
  largest value is ``beta sqrt(d)`` (the temperature times the norms). ``d >= 2``.
* ``rademacher``: keys with i.i.d. ``+-1`` coordinates, the all-ones query ``q = (1, .., 1)/sqrt(d)``:
  ``T = (2 B - d)/sqrt(d)``, ``B ~ Binomial(d, 1/2)`` (``d = 1`` is any axis query ``e_i``).
* ``uniform``: key coordinates uniform on ``[-sqrt 3, sqrt 3]``, the same all-ones query: ``T`` is a standardised
  Irwin-Hall sum, ``sqrt(3/d) (2 S - d)``, ``S = U_1 + .. + U_d``, a piecewise polynomial of degree ``d - 1``.
* ``student_t``: multivariate Student-t keys with ``nu > 2`` degrees of freedom, ``k = z sqrt((nu - 2)/g)``,
  ``z ~ N(0, I_d)``, ``g ~ chi^2_nu`` shared by the coordinates of one key (a Gaussian key with a random scale, the
  standard heavy-tailed key), under any fixed unit query: the logit ``q.k`` is exactly ``T = sqrt((nu-2)/nu) t_nu``
  in every dimension d (``t_nu`` Student's t, ``Var T = 1``). Heavy (power-law) tail ``P(T > t) ~ t^-nu``, so
  ``E[e^{sT}] = inf`` for every ``s != 0``: its exact theory (:mod:`varsim.theory.laws._heavy`) uses the density and
  the survival function instead of a node measure of the whole law. Keys with i.i.d. t coordinates are another law
  (a convolution of d t laws, with the same tail index), not this one.
* ``empirical``: the atoms ``T = s_i`` of a sample of measured logits (``beta = 1`` is the sample itself).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy.special import betainc, betaln, gammaln, ive

from varsim._common.registry import Registry
from varsim._common.seeding import resolve_seed
from varsim._common.validate import check_finite_array, check_int, check_real
from varsim.theory.laws._lattice import H
from varsim.theory.laws._nodes import panel_nodes

__all__ = ["LAWS", "EmpiricalLaw", "GaussianLaw", "LogitLaw", "RademacherLaw", "SphereLaw", "StudentTLaw",
           "UniformLaw"]

LAWS = Registry("law", what="logit law")

#: Largest dimension of the uniform law (its density's exact rational coefficients cost ~d^3 big-integer steps).
UNIFORM_D_MAX = 64
#: Largest dimension of the Rademacher and sphere laws.
D_MAX = 1_000_000
#: Largest degrees of freedom of the Student-t law (its exact theory's grid grows like nu; beyond, use the Gaussian).
NU_MAX = 100.0


class LogitLaw:
    """Base of the families: subclasses set ``name``, ``tail``, ``symmetric`` and implement ``support_t``,
    ``log_mgf``, ``_draw`` and ``_measure``."""

    name = ""
    tail = ""
    symmetric = True

    def support_t(self) -> tuple[float, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def support(self, beta: float) -> tuple[float, float]:
        """Support ``[lo, hi]`` of ``X = beta T``."""
        lo, hi = self.support_t()
        beta = check_real("beta", beta)
        return (beta * lo, beta * hi) if beta >= 0 else (beta * hi, beta * lo)

    def log_mgf(self, s):  # pragma: no cover - abstract
        """``ln E[e^{s T}]`` (array-valued in ``s``)."""
        raise NotImplementedError

    def log_annealed_limit(self, beta):
        """``ln lim N E[sum w^2] = K(2 beta) - 2 K(beta)``, ``K`` = :meth:`log_mgf` (a family whose ``K`` grows
        like ``beta`` writes the difference without cancelling its large terms)."""
        beta = np.asarray(beta, dtype=np.float64)
        return self.log_mgf(2.0 * beta) - 2.0 * self.log_mgf(beta)

    def sample(self, size, beta: float = 1.0, *, rng=None) -> np.ndarray:
        """``size`` i.i.d. draws of ``X = beta T`` (``rng``: SPEC 7 seed, SeedSequence or Generator)."""
        beta = check_real("beta", beta)
        gen = np.random.default_rng(resolve_seed(rng=rng))
        return beta * self._draw(size, gen)

    def _draw(self, size, gen):  # pragma: no cover - abstract
        raise NotImplementedError

    def _measure(self, beta: float) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def measure(self, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """Nodes and log-weights of the law of ``X = beta T`` (``beta != 0``), as the exact theory uses them."""
        return self._measure(float(beta))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({params})"

    def params(self) -> dict:
        return {}


def _mirror(x: np.ndarray, lw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes of a symmetric law from those of its half ``x >= 0`` (each half carrying half of the mass)."""
    return np.concatenate([-x[::-1], x]), np.concatenate([lw[::-1], lw])


@LAWS.add
class GaussianLaw(LogitLaw):
    """``T ~ N(0, 1)``: i.i.d. Gaussian keys under any fixed query (the package's baseline theory)."""

    name = "gaussian"
    tail = "gaussian"

    def support_t(self):
        return (-math.inf, math.inf)

    def log_mgf(self, s):
        return 0.5 * np.square(s)

    def _draw(self, size, gen):
        return gen.standard_normal(size)


def _log_beta_half(a: float) -> float:
    """``ln B(a, 1/2)``: SciPy's ``betaln`` below ``a = 100``; above, where its difference of log-gammas loses
    ~1e-16 ln Gamma(a) (2e-13 at a = 500, 5e-11 at a = 5e4), ``ln sqrt(pi) - ln(Gamma(a + 1/2)/Gamma(a))`` from the
    asymptotic series ``1/2 ln a - 1/(8a) + 1/(192 a^3) - 1/(640 a^5) + 17/(14336 a^7)`` (remainder < 1e-19)."""
    if a < 100.0:
        return float(betaln(a, 0.5))
    return 0.5 * math.log(math.pi) - (0.5 * math.log(a) - 1.0 / (8.0 * a) + 1.0 / (192.0 * a**3)
                                      - 1.0 / (640.0 * a**5) + 17.0 / (14336.0 * a**7))


def _log_hyp0f1(b: float, z: np.ndarray) -> np.ndarray:
    """``ln 0F1(; b; z) = ln sum_k z^k / ((b)_k k!)`` for ``z >= 0``, all terms positive (summed in log space
    until they fall 40 below the largest), so it holds where the Bessel form underflows."""
    shape = np.shape(z)
    z = np.atleast_1d(np.asarray(z, dtype=np.float64)).ravel()
    peak = (-b + np.sqrt(b * b + 4.0 * z)) / 2.0  # index of the largest term
    j = np.arange(1, int(np.max(peak + 20.0 * np.sqrt(peak + 1.0) + 60.0)) + 1, dtype=np.float64)
    # ln of term k: the sum over j <= k of ln(z / (j (b + j - 1))), small steps (gammaln differences lose digits)
    steps = np.log(np.maximum(z, 1e-300))[None, :] - np.log(j * (b + j - 1.0))[:, None]
    terms = np.concatenate([np.zeros((1, z.size)), np.cumsum(steps, axis=0)])
    top = terms.max(axis=0)
    return (top + np.log(np.exp(terms - top).sum(axis=0))).reshape(shape)


#: above this argument ``ln I_nu(s)`` comes from Debye's expansion (SciPy's ``ive`` returns NaN past about 1e9)
_DEBYE_FROM = 1e4


def _log_iv_debye(nu: float, s: np.ndarray) -> np.ndarray:
    """``ln I_nu(s)`` for large ``s`` from Debye's uniform expansion (DLMF 10.41.3), written with
    ``r = sqrt(nu^2 + s^2)`` and ``t = nu / r`` so that it holds down to ``nu = 0``: ``r + nu ln(s / (nu + r))
    - ln(2 pi r) / 2 + ln(1 + u1/nu + u2/nu^2 + u3/nu^3)``, ``u_k(t)/nu^k`` a polynomial in ``t^2`` over ``r^k``;
    the first term left out is of order ``r^-4`` (below 1e-16 from ``s = 1e4``)."""
    r = np.hypot(nu, s)
    return r + nu * np.log(s / (nu + r)) - 0.5 * np.log(2.0 * np.pi * r) + np.log1p(_debye_correction(nu, r))


def _debye_correction(nu: float, r: np.ndarray) -> np.ndarray:
    """``u1(t)/nu + u2(t)/nu^2 + u3(t)/nu^3`` of Debye's expansion, ``t = nu / r``, as polynomials over ``r^k``."""
    t2 = np.square(nu / r)
    with np.errstate(under="ignore", over="ignore"):  # r^k past 1e308: the term is 0
        return ((3.0 - 5.0 * t2) / (24.0 * r) + (81.0 - 462.0 * t2 + 385.0 * t2 * t2) / (1152.0 * r * r)
                + (30375.0 - 369603.0 * t2 + 765765.0 * t2 * t2 - 425425.0 * t2**3) / (414720.0 * r * r * r))


class _KeyDimension(LogitLaw):
    """A bounded family of dimension ``d`` (``d_min <= d <= d_max``) whose ``T`` lies in ``[-r, r]``,
    ``r = sqrt(support_factor * d)``."""

    tail = "bounded"
    d_min, d_max, support_factor = 1, D_MAX, 1.0

    def __init__(self, d: int):
        self.d = check_int("d", d, minimum=self.d_min, maximum=self.d_max)

    def params(self):
        return {"d": self.d}

    def support_t(self):
        r = math.sqrt(self.support_factor * self.d)
        return (-r, r)


@LAWS.add
class SphereLaw(_KeyDimension):
    """Query and keys on the unit sphere in dimension ``d``: ``T = sqrt(d) cos(angle)``."""

    name = "sphere"
    d_min = 2

    def log_mgf(self, s):
        # E[e^{s C}] = Gamma(d/2) (2/s)^{d/2-1} I_{d/2-1}(s); with s -> s sqrt(d) and I = ive e^{|s|}
        s = np.abs(np.asarray(s, dtype=np.float64)) * math.sqrt(self.d)
        nu = 0.5 * self.d - 1.0
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            large = s > _DEBYE_FROM
            scaled = ive(nu, np.where(large, 1.0, s))
            log_iv = np.where(large, _log_iv_debye(nu, np.where(large, s, _DEBYE_FROM)), np.log(scaled) + s)
            out = gammaln(0.5 * self.d) + nu * np.log(2.0 / s) + log_iv
            # ive underflows for nu >> s: there ln 0F1(; d/2; s^2/4), its series summed in log space
            small = ~large & ~(scaled > 1e-280)
            if np.any(small):
                out = np.where(small, _log_hyp0f1(0.5 * self.d, 0.25 * np.where(small, s, 0.0) ** 2), out)
        return np.where(s == 0.0, 0.0, out)

    def log_annealed_limit(self, beta):
        # K(2b) - 2K(b) ~ ln b^{(d-1)/2}, but each K ~ b sqrt(d): past _DEBYE_FROM the difference of Debye's forms
        # is taken term by term (r(2a) - 2 r(a) = -3 nu^2 / (r(2a) + 2 r(a)), no term of size a left)
        beta = np.asarray(beta, dtype=np.float64)
        a = np.abs(beta) * math.sqrt(self.d)
        large = a > _DEBYE_FROM
        direct = super().log_annealed_limit(np.where(large, 0.0, beta))
        nu = 0.5 * self.d - 1.0
        a = np.where(large, a, _DEBYE_FROM)
        r1, r2 = np.hypot(nu, a), np.hypot(nu, 2.0 * a)
        corr1, corr2 = _debye_correction(nu, r1), _debye_correction(nu, r2)
        stable = (-gammaln(0.5 * self.d) - 3.0 * nu * nu / (r2 + 2.0 * r1)
                  + nu * (2.0 * np.log(nu + r1) - np.log(nu + r2) - math.log(2.0))
                  + 0.5 * math.log(2.0 * math.pi) + np.log(r1) - 0.5 * np.log(r2) + np.log1p(corr2)
                  - 2.0 * np.log1p(corr1))
        return np.where(large, stable, direct)

    def _draw(self, size, gen):
        # cos of the angle between a uniform direction and a fixed one: 2 Beta((d-1)/2, (d-1)/2) - 1
        a = 0.5 * (self.d - 1)
        return math.sqrt(self.d) * (2.0 * gen.beta(a, a, size) - 1.0)

    def _measure(self, beta):
        scale = abs(beta) * math.sqrt(self.d)  # X = scale cos(theta), theta in [0, pi/2] mirrored
        const = -_log_beta_half(0.5 * (self.d - 1))  # density of theta on [0, pi]; [0, pi/2] mirrored

        def log_density(theta):
            # ln sin(theta) near pi/2 as log1p(-2 sin^2((pi/2 - theta)/2)): sin(theta) rounded near 1 costs
            # ~1e-16 (d - 2) in the log-density (the mass is 1.7e-13 off at d = 1e5 that way, 3e-15 this way)
            with np.errstate(divide="ignore"):
                near = np.log1p(-2.0 * np.sin(0.5 * (0.5 * math.pi - theta)) ** 2)
                return (self.d - 2) * np.where(theta < 0.25 * math.pi, np.log(np.sin(theta)), near) + const

        j = np.arange(0, math.floor(scale / H) + 1)
        # the panel at theta = 0 takes Gauss-Jacobi for sin^{d-2} = theta^{d-2} (sin theta/theta)^{d-2}, the last
        # factor smooth while (d - 2) theta^2 / 6 stays small
        jacobi_end = min(0.5, math.sqrt(6.0 / self.d))
        breaks = np.concatenate([[0.0, jacobi_end, 0.5 * math.pi], np.arccos(np.minimum(j * H / scale, 1.0))])
        theta, lw = panel_nodes(breaks, log_density, 0.5 / math.sqrt(self.d), left_power=self.d - 2.0)
        return _mirror(scale * np.cos(theta), lw)


@LAWS.add
class RademacherLaw(_KeyDimension):
    """Keys with i.i.d. ``+-1`` coordinates in dimension ``d`` and the all-ones query (``T = (2B - d)/sqrt d``)."""

    name = "rademacher"

    def log_mgf(self, s):
        z = np.abs(np.asarray(s, dtype=np.float64)) / math.sqrt(self.d)
        return self.d * (z + np.log1p(np.expm1(-2.0 * z) + 1.0) - math.log(2.0))  # d ln cosh z, stable

    def log_annealed_limit(self, beta):
        # d ln(cosh 2z / cosh^2 z) = d ln(2 - sech^2 z): -> d ln 2 without the large terms of K
        z = np.abs(np.asarray(beta, dtype=np.float64)) / math.sqrt(self.d)
        with np.errstate(over="ignore"):
            return self.d * np.log(2.0 - np.square(1.0 / np.cosh(z)))

    def _draw(self, size, gen):
        return (2.0 * gen.binomial(self.d, 0.5, size) - self.d) / math.sqrt(self.d)

    def _measure(self, beta):
        k = np.arange(self.d + 1, dtype=np.float64)
        lw = gammaln(self.d + 1.0) - gammaln(k + 1.0) - gammaln(self.d - k + 1.0) - self.d * math.log(2.0)
        return beta * (2.0 * k - self.d) / math.sqrt(self.d), lw


@lru_cache(maxsize=16)
def _irwin_hall_coefficients(d: int) -> np.ndarray:
    """``c[j, m]``: the Irwin-Hall density on ``[j, j + 1]`` is ``sum_m c[j, m] (s - j)^m``, for ``j <= d/2``
    (exact rationals rounded once)."""
    fact = math.factorial(d - 1)
    rows = []
    for j in range(d // 2 + 1):
        row = []
        for m in range(d):
            total = sum((-1) ** k * math.comb(d, k) * (j - k) ** (d - 1 - m) for k in range(j + 1))
            row.append(float(Fraction(math.comb(d - 1, m) * total, fact)))
        rows.append(row)
    return np.array(rows)


@LAWS.add
class UniformLaw(_KeyDimension):
    """Key coordinates uniform on ``[-sqrt 3, sqrt 3]`` in dimension ``d`` and the all-ones query."""

    name = "uniform"
    d_max, support_factor = UNIFORM_D_MAX, 3.0

    def log_mgf(self, s):
        z = np.abs(np.asarray(s, dtype=np.float64)) * math.sqrt(3.0 / self.d)
        with np.errstate(invalid="ignore", divide="ignore"):
            # ln(sinh z / z) = z + ln(1 - e^{-2z}) - ln(2z)
            out = self.d * (z + np.log(-np.expm1(-2.0 * z)) - np.log(2.0 * z))
        with np.errstate(over="ignore"):
            return np.where(z < 1e-4, self.d * z * z / 6.0, out)

    def log_annealed_limit(self, beta):
        # d [ln(1 - e^{-4z}) - 2 ln(1 - e^{-2z}) + ln z]: the terms z of K(2b) and 2K(b) cancelled by hand
        z = np.abs(np.asarray(beta, dtype=np.float64)) * math.sqrt(3.0 / self.d)
        with np.errstate(divide="ignore", invalid="ignore"):
            stable = self.d * (np.log(-np.expm1(-4.0 * z)) - 2.0 * np.log(-np.expm1(-2.0 * z)) + np.log(z))
        return np.where(z < 1.0, super().log_annealed_limit(np.where(z < 1.0, beta, 0.0)), stable)

    def _draw(self, size, gen):
        shape = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
        s = gen.uniform(0.0, 1.0, (*shape, self.d)).sum(axis=-1)
        return math.sqrt(3.0 / self.d) * (2.0 * s - self.d)

    def _log_density_s(self, s: np.ndarray) -> np.ndarray:
        coef = _irwin_hall_coefficients(self.d)
        j = np.clip(np.floor(s), 0, coef.shape[0] - 1).astype(np.int64)
        v = s - j
        poly = np.zeros(s.shape)
        for m in range(self.d - 1, -1, -1):
            poly = poly * v + coef[j, m]
        with np.errstate(divide="ignore", invalid="ignore"):
            first = (self.d - 1) * np.log(s) - gammaln(self.d)
            return np.where(j == 0, first, np.log(poly))

    def _measure(self, beta):
        a = abs(beta) * math.sqrt(3.0 / self.d)  # X = a (2 S - d) on the half S <= d/2, mirrored
        half = 0.5 * self.d
        j = np.arange(0, math.floor(a * self.d / H) + 1)
        cells = half - 0.5 * j * H / a
        breaks = np.concatenate([[0.0, half], np.arange(0, math.floor(half) + 1), cells[cells >= 0.0]])
        s, lw = panel_nodes(breaks, self._log_density_s, 0.5, left_power=self.d - 1.0)
        return _mirror(a * (self.d - 2.0 * s), lw)


def _log1p_square(r: np.ndarray) -> np.ndarray:
    """``ln(1 + r^2)`` for ``r >= 0`` without overflow (``2 ln r + log1p(r^-2)`` above ``r = 1e150``)."""
    r = np.asarray(r, dtype=np.float64)
    big = r > 1e150
    out = np.log1p(np.square(np.where(big, 0.0, r)))
    if np.any(big):
        rb = np.where(big, r, 1.0)
        out = np.where(big, 2.0 * np.log(rb) + np.log1p((1.0 / rb) ** 2), out)
    return out


@LAWS.add
class StudentTLaw(LogitLaw):
    """Multivariate Student-t keys (``nu`` degrees of freedom, ``2 < nu <= 100``) under a fixed query:
    ``T = sqrt((nu-2)/nu) t_nu``, the density ``K (1 + t^2/(nu-2))^{-(nu+1)/2}``,
    ``K = 1/(sqrt(nu-2) B(nu/2, 1/2))``."""

    name = "student_t"
    tail = "heavy"

    def __init__(self, nu: float):
        self.nu = check_real("nu", nu, minimum=2.0, maximum=NU_MAX, strict_min=True)
        self._log_k = -0.5 * math.log(self.nu - 2.0) - _log_beta_half(0.5 * self.nu)

    def params(self):
        return {"nu": self.nu}

    def support_t(self):
        return (-math.inf, math.inf)

    def log_mgf(self, s):
        """``inf`` for every ``s != 0`` (power-law tails), 0 at ``s = 0``."""
        s = np.asarray(s, dtype=np.float64)
        return np.where(s == 0.0, 0.0, np.inf)

    def log_annealed_limit(self, beta):
        """``inf`` for every ``beta != 0`` (``E[e^{2X}] = inf``), 0 at ``beta = 0``."""
        return self.log_mgf(beta)

    def log_density_t(self, t) -> np.ndarray:
        """``ln`` of the density of ``T`` (any real ``t``, no overflow at ``|t|`` up to 1e308)."""
        r = np.abs(np.asarray(t, dtype=np.float64)) / math.sqrt(self.nu - 2.0)
        return self._log_k - 0.5 * (self.nu + 1.0) * _log1p_square(r)

    def log_sf_t(self, t) -> np.ndarray:
        """``ln P(T > t)`` for ``t >= 0``: ``ln(I_z(nu/2, 1/2) / 2)``, ``z = 1/(1 + t^2/(nu-2))``, from SciPy's
        ``betainc`` while ``z >= 0.1`` and from the hypergeometric series of ``I_z`` (30 terms, all positive, in
        log space) below, where it would underflow."""
        r = np.abs(np.asarray(t, dtype=np.float64)) / math.sqrt(self.nu - 2.0)
        a = 0.5 * self.nu
        log_z = -_log1p_square(r)
        small = log_z < math.log(0.1)
        with np.errstate(divide="ignore"):
            direct = np.log(0.5 * betainc(a, 0.5, np.exp(np.where(small, 0.0, log_z))))
        z = np.exp(np.where(small, log_z, -np.inf))
        term, total = np.ones_like(z), np.ones_like(z)
        for n in range(30):
            term = term * z * (a + 0.5 + n) / (a + 1.0 + n)
            total = total + term
        with np.errstate(divide="ignore"):
            log_1mz = -np.log1p((1.0 / np.where(small, r, 1.0)) ** 2)
        series = (a * log_z + 0.5 * log_1mz - math.log(a) - _log_beta_half(a) + np.log(total) - math.log(2.0))
        return np.where(small, series, direct)

    def _draw(self, size, gen):
        return math.sqrt((self.nu - 2.0) / self.nu) * gen.standard_t(self.nu, size)

    def _measure(self, beta):
        raise ValueError("the student_t law has no finite node measure (power-law tails); its exact theory is "
                         "varsim.theory.laws._heavy")


@LAWS.add
class EmpiricalLaw(LogitLaw):
    """The atoms of a sample of measured logits (``X = beta s_i``, each of weight 1/n)."""

    name = "empirical"
    tail = "bounded"
    symmetric = False

    def __init__(self, sample):
        arr = check_finite_array("sample", sample, ndim=1, min_size=1)
        self.atoms, counts = np.unique(arr, return_counts=True)
        self.log_p = np.log(counts) - math.log(arr.size)
        self.size = int(arr.size)

    def params(self):
        return {"size": self.size}

    def support_t(self):
        return (float(self.atoms[0]), float(self.atoms[-1]))

    def log_mgf(self, s):
        s = np.asarray(s, dtype=np.float64)
        v = self.log_p + s[..., None] * self.atoms
        top = np.max(v, axis=-1, keepdims=True)
        return np.squeeze(top, -1) + np.log(np.sum(np.exp(v - top), axis=-1))

    def log_annealed_limit(self, beta):
        # both K's shifted by the top atom's s x_max, which cancels exactly: no large term left
        beta = np.asarray(beta, dtype=np.float64)
        shift = np.where(beta[..., None] >= 0, self.atoms.max(), self.atoms.min())

        def shifted(s):
            v = self.log_p + s[..., None] * (self.atoms - shift)
            top = np.max(v, axis=-1, keepdims=True)
            return np.squeeze(top, -1) + np.log(np.sum(np.exp(v - top), axis=-1))

        return shifted(2.0 * beta) - 2.0 * shifted(beta)

    def _draw(self, size, gen):
        return gen.choice(self.atoms, size=size, p=np.exp(self.log_p - np.logaddexp.reduce(self.log_p)))

    def _measure(self, beta):
        return beta * self.atoms, self.log_p
