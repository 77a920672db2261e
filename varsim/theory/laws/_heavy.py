"""Exact ``E[sum w^2]`` of softmax weights over ``N`` i.i.d. logits of a symmetric heavy-tailed law (Student-t keys).

Such a law has ``E[e^{sX}] = inf`` for every ``s != 0``, but the representation of
:mod:`varsim.theory.laws._lattice` needs no exponential moment: ``P(u) = E[-expm1(-e^{u+X})]``, ``L = 1 - P``,
``M = E[e^{2Y - e^Y}]`` and ``M4 = E[e^{4Y - e^Y}]`` (``Y = u + X``) are bounded expectations for every law. What
changes is the range: with ``P(X > x) ~ x^-nu`` the outer integrand ``N M L^{N-1}`` decays in u only like a power,
so a uniform u grid cannot reach its ends (``|u|`` up to ``(N^2 e^80)^{1/nu}``, 1e160 and more). Here:

* the law is split at ``|x| = A0 = 2 (nu + 1) + 10`` (rounded up to lattice cells). The core ``[-A0, A0]`` is a
  node measure handled by :class:`~varsim.theory.laws._lattice.Measure` on ``u = k H``. Beyond ``A0`` the density
  has ``|d ln f / dx| <= (nu + 1)/|x| <= 1/2`` (true of the Student-t density at every scale), so ``f(x) e^{m x}``
  (``m >= 1``) increases there, and each tail's share of ``P, L, M, M4`` at any u is a Gauss-Legendre sum over the
  window ``-135 <= y <= 7.5`` plus the tail's exact survival function where the kernel is 0 or 1 (what falls below
  the window is below ``e^-60`` of the whole);
* the outer integral is split by a smooth partition of unity ``chi_L + chi_C + chi_R = 1`` (``erfc`` steps of width
  1.5 at ``a = -(A0 + ln n_max + 60)`` and ``b = A0 + 20``): ``chi_C g`` on the lattice ``u = k H`` (the trapezoid
  of :mod:`~varsim.theory.laws._lattice`), ``chi_L g`` and ``chi_R g`` on ``u = c + w sinh((s - c)/w)`` with ``s``
  on a step-H grid and ``w = nu + 1``: beyond the joins the integrand is a power of ``|u|`` times ``exp(-N P)``,
  smooth on the scale ``|u|/(nu + 1)``, so the trapezoid in ``s`` stays exponentially accurate. Left of ``a`` only
  the tails matter (``N P_core <= e^-40``); right of ``b`` the core is its mass in ``P`` and nothing in ``L, M``.

Each piece is a grid that :func:`~varsim.theory.laws._lattice.ipr_exact` and
:func:`~varsim.theory.laws._lattice.second_moment_exact` take as they are; the three results add (the exponent as
their E-weighted mean). Checked against an mpmath quadrature in ``tests/test_theory_laws_heavy.py``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erfc

from varsim.theory.laws import _lattice
from varsim.theory.laws._lattice import H
from varsim.theory.laws._nodes import _GL_W, _GL_X, panel_nodes

__all__ = ["HeavyGrid", "ipr_exact", "second_moment_exact"]

_Y_A, _Y_B = -135.0, 7.5
# 10-point Gauss-Legendre panels: where the kernels are powers of e^y (m <= 4) 6 and 2 wide, where they turn 0.5,
# and 0.25 on [1, 4], where e^{-e^y} falls fastest while it still counts
_BREAKS = np.concatenate([np.arange(_Y_A, -45.0, 6.0), np.arange(-45.0, -5.0, 2.0), np.arange(-5.0, 1.0, 0.5),
                          np.arange(1.0, 4.0, 0.25), np.arange(4.0, _Y_B + 1e-9, 0.5)])
_PA, _PB = _BREAKS[:-1], _BREAKS[1:]


def _full_window() -> tuple[np.ndarray, np.ndarray]:
    """The unclipped window's nodes ``y`` and the weight times each kernel: ``(y, W)``, ``W[j, r] = w_j k_r(y_j)``
    for ``k = -expm1(-e^y), e^{-e^y}, e^{2y - e^y}, e^{4y - e^y}`` (what underflows is below e^-700 of the rest)."""
    half = 0.5 * (_PB - _PA)
    y = ((_PA + half)[:, None] + half[:, None] * _GL_X).ravel()
    w = (half[:, None] * _GL_W).ravel()
    ey = np.exp(y)
    with np.errstate(under="ignore"):
        kernels = np.stack([-np.expm1(-ey), np.exp(-ey), np.exp(2.0 * y - ey), np.exp(4.0 * y - ey)], axis=1)
    return y, w[:, None] * kernels


_Y_FULL, _W_FULL = _full_window()
_SIGMA = 1.5
_FAR = 8.0 * _SIGMA  # erfc(8)/2 ~ 6e-30: each piece of the partition ends there
_CHUNK = 256
_REACH_MAX = 1e300
_W_PER_NU = 0.6  # the sinh pieces' scale w over nu + 1: a step H/w in ln|u| resolves the tail's exp(-N P)


class _Piece:
    """One piece of the outer integral on its own trapezoid grid (step H in its variable): the attributes
    :func:`varsim.theory.laws._lattice.ipr_exact` reads from a ``Grid``."""

    def __init__(self, rows: np.ndarray, n_max: float, fourth: bool):
        self.rows, self.n_max, self.fourth = rows, n_max, fourth
        self.k = np.arange(rows.shape[1])
        self.m_rising = int(np.argmax(rows[1])) + 1
        self.log_m_cummax = np.maximum.accumulate(rows[1])


def _log_diff(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """``ln(e^la - e^lb)`` for ``lb <= la`` (``-inf`` where equal)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lb < la, la + np.log(-np.expm1(np.minimum(lb - la, 0.0))), -np.inf)


def _log_cosh(z: np.ndarray) -> np.ndarray:
    z = np.abs(z)
    return z + np.log1p(np.exp(-2.0 * z)) - math.log(2.0)


class HeavyGrid:
    """The three pieces of the outer integral of the law ``law`` (a symmetric family with ``log_density_t``,
    ``log_sf_t`` and ``nu``) at logit scale ``beta`` for every ``N <= n_max``."""

    def __init__(self, law, beta: float, n_max: float, fourth: bool):
        self.law, self.beta, self.n_max, self.fourth = law, abs(float(beta)), n_max, fourth
        self.rows = 4 if fourth else 3
        self.a0 = H * math.ceil((2.0 * (law.nu + 1.0) + 10.0) / H)
        self.log_sf_a0 = float(self._log_sf(self.a0))
        self.a = -(self.a0 + math.log(n_max) + 60.0)
        self.b = self.a0 + 20.0
        w = _W_PER_NU * (law.nu + 1.0)
        core = self._core()
        self.pieces = [self._left(w), self._centre(core), self._right(core, w)]

    # -- the law of X = beta T
    def _log_f(self, x):
        return self.law.log_density_t(np.asarray(x) / self.beta) - math.log(self.beta)

    def _log_sf(self, x):
        """``ln P(X > x)`` for ``x >= 0``."""
        return self.law.log_sf_t(np.asarray(x, dtype=np.float64) / self.beta)

    def _reach(self, level: float) -> float:
        """The smallest ``x`` (to 1e-3 relative, at most 1e300) with ``ln P(X > x) <= level``."""
        lo, hi = math.log(self.a0), math.log(_REACH_MAX)
        if float(self._log_sf(_REACH_MAX)) > level:
            return _REACH_MAX
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if float(self._log_sf(math.exp(mid))) > level else (lo, mid)
        return math.exp(hi)

    def _core(self) -> _lattice.Measure:
        cells = np.arange(-round(self.a0 / H), round(self.a0 / H) + 1) * H
        x, lw = panel_nodes(cells, self._log_f, H)
        measure = _lattice.Measure(x, lw)
        measure.log_mass = float(np.logaddexp.reduce(lw))
        return measure

    # -- the tails' shares of [P, L, M(, M4)] at any u
    def _window(self, u, lo, hi):
        """Log-sums ``[P, L, M(, M4)]`` of the density times each kernel over ``lo <= y <= hi`` (per u)."""
        full = (lo == _Y_A) & (hi == _Y_B)
        out = [np.empty(u.size) for _ in range(self.rows)]
        for sel, part in ((full, self._full_rows), (~full, self._clipped_rows)):
            if np.any(sel):
                for r, v in enumerate(part(u[sel], lo[sel], hi[sel])):
                    out[r][sel] = v
        return out

    def _full_rows(self, u, lo, hi):
        """The unclipped window: the density (which varies by at most e^71 across it beyond A0) scaled by its
        largest value, one exponential per node, then a fixed-order sum against the precomputed kernels."""
        lf = self._log_f(_Y_FULL[None, :] - u[:, None])
        top = lf.max(axis=1)
        with np.errstate(divide="ignore"):
            sums = np.log(np.einsum("ij,jr->ir", np.exp(lf - top[:, None]), _W_FULL[:, :self.rows]))
        return list((sums + top[:, None]).T)

    def _clipped_rows(self, u, lo, hi):
        a = np.clip(_PA, lo[:, None], hi[:, None])
        b = np.clip(_PB, lo[:, None], hi[:, None])
        half = 0.5 * (b - a)
        y = ((a + half)[:, :, None] + half[:, :, None] * _GL_X).reshape(u.size, -1)
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            base = np.log((half[:, :, None] * _GL_W).reshape(u.size, -1)) + self._log_f(y - u[:, None])
            ey = np.exp(y)
            out = [_lattice._lse(base + np.log(-np.expm1(-ey)), 1), _lattice._lse(base - ey, 1),
                   _lattice._lse(base + 2.0 * y - ey, 1)]
            if self.fourth:
                out.append(_lattice._lse(base + 4.0 * y - ey, 1))
        return out

    def _tails(self, u: np.ndarray) -> list[np.ndarray]:
        out = [np.full(u.size, -np.inf) for _ in range(self.rows)]
        for lo, hi in ((np.maximum(_Y_A, self.a0 + u), np.full(u.size, _Y_B)),   # right tail x > A0
                       (np.full(u.size, _Y_A), np.minimum(_Y_B, u - self.a0))):  # left tail x < -A0
            for start in range(0, u.size, _CHUNK):
                sl = slice(start, start + _CHUNK)
                sel = np.flatnonzero(lo[sl] < hi[sl]) + start
                if sel.size:
                    for r, v in enumerate(self._window(u[sel], lo[sel], hi[sel])):
                        out[r][sel] = np.logaddexp(out[r][sel], v)
        sa0 = np.full(u.size, self.log_sf_a0)
        # where the kernel is 1 (above the window) in P and 1 (below it) in L: the tails' exact masses there
        out[0] = np.logaddexp.reduce([out[0], self._log_sf(np.maximum(self.a0, _Y_B - u)),
                                      _log_diff(sa0, self._log_sf(np.maximum(self.a0, u - _Y_B)))])
        out[1] = np.logaddexp.reduce([out[1], self._log_sf(np.maximum(self.a0, u - _Y_A)),
                                      _log_diff(sa0, self._log_sf(np.maximum(self.a0, _Y_A - u)))])
        return out

    def _rows(self, parts: list[np.ndarray], log_weight: np.ndarray) -> np.ndarray:
        """The rows of ``_lattice`` with the piece's weight (partition and Jacobian) ``w`` folded in: ``M w`` for
        ``E[Y2]``; ``M sqrt(w)`` and ``M4 w`` for ``E[Y2^2]``, whose ``N (N-1) M^2`` term squares ``M``."""
        if not self.fourth:
            return np.stack([_lattice._log_minus_ln_l(parts[0], parts[1]), parts[2] + log_weight])
        return np.stack([_lattice._log_minus_ln_l(parts[0], parts[1]), parts[2] + 0.5 * log_weight,
                         parts[3] + log_weight])

    # -- the partition of unity and the three pieces
    def _chi(self, u, side: str) -> np.ndarray:
        with np.errstate(divide="ignore"):
            if side == "left":
                return np.log(0.5 * erfc((u - self.a) / _SIGMA))
            if side == "right":
                return np.log(0.5 * erfc((self.b - u) / _SIGMA))
            mid = 0.5 * (self.a + self.b)
            left = 0.5 * erfc((self.a - u) / _SIGMA) - 0.5 * erfc((self.b - u) / _SIGMA)
            right = 0.5 * erfc((u - self.b) / _SIGMA) - 0.5 * erfc((u - self.a) / _SIGMA)
            return np.log(np.maximum(np.where(u < mid, left, right), 0.0))

    def _left(self, w: float) -> _Piece:
        reach = self._reach(-2.0 * math.log(self.n_max) - 80.0)
        far = math.ceil(_FAR / H)  # at least the partition's step (the tail may end inside the centre piece)
        j = np.arange(min(math.floor(w * math.asinh((-reach - self.a) / w) / H), -far), far + 1)
        z = j * H / w
        u = self.a + w * np.sinh(z)
        keep = u <= self.a + _FAR
        u, z = u[keep], z[keep]
        return _Piece(self._rows(self._tails(u), self._chi(u, "left") + _log_cosh(z)), self.n_max, self.fourth)

    def _centre(self, core: _lattice.Measure) -> _Piece:
        k = np.arange(math.floor((self.a - _FAR) / H), math.ceil((self.b + _FAR) / H) + 1)
        cols = []
        for start in range(0, k.size, 4096):
            kk = k[start:start + 4096]
            parts = [np.logaddexp(c, t) for c, t in zip(core.parts(kk, self.fourth), self._tails(kk * H))]
            cols.append(self._rows(parts, self._chi(kk * H, "centre")))
        return _Piece(np.concatenate(cols, axis=1), self.n_max, self.fourth)

    def _right(self, core: _lattice.Measure, w: float) -> _Piece:
        reach = self._reach(-790.0)
        far = math.ceil(_FAR / H)
        j = np.arange(math.floor(w * math.asinh(-_FAR / w) / H),
                      max(math.ceil(w * math.asinh((reach - self.b) / w) / H), far) + 1)
        z = j * H / w
        u = self.b + w * np.sinh(z)
        keep = u >= self.b - _FAR
        u, z = u[keep], z[keep]
        parts = self._tails(u)
        parts[0] = np.logaddexp(parts[0], core.log_mass)
        return _Piece(self._rows(parts, self._chi(u, "right") + _log_cosh(z)), self.n_max, self.fourth)


def ipr_exact(grid: HeavyGrid, n: np.ndarray, want_exponent: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(E[Y2], d ln E / d ln N)`` for the 1-D ``n`` (``1 <= n <= grid.n_max``): the pieces' sums added."""
    results = [_lattice.ipr_exact(piece, n, want_exponent) for piece in grid.pieces]
    e = np.sum([r[0] for r in results], axis=0)
    if not want_exponent:
        return e, np.full(n.shape, np.nan)
    g = np.sum([r[0] * np.where(r[0] > 0.0, np.nan_to_num(r[1]), 0.0) for r in results], axis=0) / e
    return e, g


def second_moment_exact(grid: HeavyGrid, n: np.ndarray) -> np.ndarray:
    """``E[Y2^2]`` for the 1-D ``n`` (``2 <= n <= grid.n_max``; the grid built with ``fourth=True``)."""
    return np.sum([_lattice.second_moment_exact(piece, n) for piece in grid.pieces], axis=0)
