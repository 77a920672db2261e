"""Exact ``E[sum w^2]`` of softmax weights over ``N`` i.i.d. logits of any bounded law given as a node measure.

A law of the logit ``X`` enters as a *measure*: sorted nodes ``x`` and log-weights ``lw`` such that
``sum exp(lw) f(x)`` integrates every function ``f`` that is smooth on the scale of a lattice cell to double
precision (Gauss rules on panels inside the cells ``[j h, (j + 1) h)`` of the lattice ``h = _H``, or the atoms of a
discrete law). As in :mod:`varsim.theory.ipr` (THEORY.md 1.2), with ``t = e^u``, ``Y = u + X``,

    P(u) = E[-expm1(-e^Y)],  L = 1 - P,  M(u) = E[e^{2Y - e^Y}],  M4(u) = E[e^{4Y - e^Y}],
    E[Y2] = int N M L^{N-1} du,   d ln E / d ln N = 1 + N <ln L>,
    E[Y2^2] = (1/6) int [N M4 L^{N-1} + N (N-1) M^2 L^{N-2}] du.

The u grid is ``k h`` (the lattice step), so the cut points ``Y_LO - u`` and ``Y_HI - u`` of the inner integrals
fall on cell boundaries and every cell lies wholly in one region:

* ``y < Y_LO``: ``exp(-e^y)`` as its alternating series in ``e^y``, whose terms need ``E[e^{iX}; X < c]``:
  cumulative sums over the cells (``i = 0 .. 13``), so this region costs O(1) per u whatever the support;
* ``Y_LO <= y < Y_HI``: the nodes of the ~57 cells in the window, in log space (every term positive, no
  cancellation, so ``P`` keeps full relative precision at ``1e-300``);
* ``y >= Y_HI``: ``exp(-e^y) = 0`` in double precision; only ``P`` gets ``P(X >= c)``, a cumulative sum from above.

The outer integrand is analytic in u; per N the trapezoid sum runs over every grid point between a left cut (where
``M`` increases in u and ``N M < e^-60 / N <= e^-60 E``, ``E >= 1/N``) and a right cut (where ``(N-1)(-ln L)``
exceeds ``760 + ln N``), so a multimodal integrand (a discrete law at large beta) loses no mode.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["H", "Measure", "ipr_exact", "second_moment_exact"]

H = 0.1875  # lattice cell width in x and trapezoid step in u (as varsim.theory.ipr's _H_U)
_J_LO = -21  # Y_LO = _J_LO * H = -3.9375: the series' 10 terms leave a relative error < e^{10 Y_LO}/10! ~ 1e-24
_J_HI = 36  # Y_HI = 6.75: exp(-e^y) < 1e-370 above, zero in double precision
_TERMS = 10
_FIRSTS = np.array([1, 0, 2, 4])  # moment index of the series' leading term: P, L, M, M4
_N_MOMENTS = 4 + _TERMS
_LEFT_DROP = 60.0
_RIGHT_DROP = 760.0
_CHUNK = 1 << 18


def _alternating(shift: int) -> np.ndarray:
    j = np.arange(_TERMS, dtype=np.float64)
    return ((-1.0) ** j / np.exp(np.cumsum(np.log(np.maximum(j + shift, 1.0)))))[1:]


_COEF = np.stack([_alternating(1), _alternating(0), _alternating(0), _alternating(0)])


def _lse(a: np.ndarray, axis: int) -> np.ndarray:
    """``log sum exp`` along ``axis``; all ``-inf`` gives ``-inf``."""
    top = np.max(a, axis=axis, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return np.squeeze(safe, axis) + np.log(np.sum(np.exp(a - safe), axis=axis))


class Measure:
    """Nodes ``x`` (sorted) and log-weights ``lw`` of the law of ``X``, with the per-cell cumulative exponential
    moments the series region needs."""

    def __init__(self, x: np.ndarray, lw: np.ndarray):
        order = np.argsort(x, kind="stable")
        self.x = np.asarray(x, dtype=np.float64)[order]
        self.lw = np.asarray(lw, dtype=np.float64)[order]
        keep = np.isfinite(self.lw)
        self.x, self.lw = self.x[keep], self.lw[keep]
        self.cell = np.floor(self.x / H).astype(np.int64)
        self.cells, first = np.unique(self.cell, return_index=True)
        i = np.arange(_N_MOMENTS, dtype=np.float64)[:, None]
        v = self.lw[None, :] + i * self.x[None, :]  # (moments, nodes)
        top = np.maximum.reduceat(v, first, axis=1)
        per_cell = top + np.log(np.add.reduceat(np.exp(v - np.repeat(top, np.diff(np.r_[first, v.shape[1]]),
                                                                           axis=1)), first, axis=1))
        neg = np.full((_N_MOMENTS, 1), -np.inf)
        self.below = np.concatenate([neg, np.logaddexp.accumulate(per_cell, axis=1)], axis=1)
        self.above = np.concatenate([np.logaddexp.accumulate(per_cell[0, ::-1])[::-1], [-np.inf]])
        self.lo, self.hi = float(self.x[0]), float(self.x[-1])

    def inner(self, k: np.ndarray, fourth: bool) -> np.ndarray:
        """``(ln(-ln L), ln M[, ln M4])`` at ``u = k H`` (1-D int array): rows, one column per u."""
        log_p, log_l, *moments = self.parts(k, fourth)
        return np.stack([_log_minus_ln_l(log_p, log_l)] + moments)

    def parts(self, k: np.ndarray, fourth: bool) -> list[np.ndarray]:
        """``[ln P, ln L, ln M(, ln M4)]`` of this measure at ``u = k H`` (additive over sub-measures: the
        heavy-tailed laws of :mod:`varsim.theory.laws._heavy` add their tails to a core measure's parts)."""
        u = k * H
        n_cells = np.searchsorted(self.cells, _J_LO - k)
        log_t = np.arange(_N_MOMENTS)[:, None] * u[None, :] + self.below[:, n_cells]
        rows = 4 if fourth else 3
        firsts = _FIRSTS[:rows]
        lead = log_t[firsts]
        with np.errstate(invalid="ignore", under="ignore"):
            terms = np.exp(log_t[firsts[:, None] + np.arange(1, _TERMS)] - lead[:, :, None].transpose(0, 2, 1))
        terms = np.where(np.isfinite(lead)[:, None, :], terms, 0.0)
        series = lead + np.log1p(np.einsum("fju,fj->fu", terms, _COEF[:rows]))
        window = self._window(u, k, fourth)
        log_p = np.logaddexp(np.logaddexp(series[0], window[0]),
                             self.above[np.searchsorted(self.cells, _J_HI - k)])
        log_l = np.logaddexp(series[1], window[1])
        return [log_p, log_l] + [np.logaddexp(series[r], window[r]) for r in range(2, rows)]

    def _window(self, u: np.ndarray, k: np.ndarray, fourth: bool) -> np.ndarray:
        """Region B in log space: rows ``P, L, M[, M4]`` from the nodes with ``Y_LO <= u + x < Y_HI``."""
        start = np.searchsorted(self.cell, _J_LO - k)
        stop = np.searchsorted(self.cell, _J_HI - k)
        width = max(1, int(np.max(stop - start)))
        rows = 4 if fourth else 3
        out = np.empty((rows, u.size))
        step = max(1, _CHUNK // width)
        for a in range(0, u.size, step):
            sl = slice(a, a + step)
            idx = start[sl, None] + np.arange(width)
            inside = idx < stop[sl, None]
            idx = np.minimum(idx, self.x.size - 1)
            y = u[sl, None] + self.x[idx]
            base = np.where(inside, self.lw[idx], -np.inf)
            with np.errstate(over="ignore", under="ignore", divide="ignore"):
                ey = np.exp(y)
                out[0, sl] = _lse(base + np.log(-np.expm1(-ey)), 1)
                cut = base - ey
                out[1, sl] = _lse(cut, 1)
                out[2, sl] = _lse(cut + 2.0 * y, 1)
                if fourth:
                    out[3, sl] = _lse(cut + 4.0 * y, 1)
        return out


def _log_minus_ln_l(log_p: np.ndarray, log_l: np.ndarray) -> np.ndarray:
    """``ln(-ln L)``: from ``P`` where ``P < 1/2`` (``-log1p(-P)``), from ``L`` directly otherwise."""
    p = np.exp(log_p)
    small = p < 0.5
    p_small = np.where(small & (p > 0.0), p, 0.5)
    ratio = np.where(p > 0.0, -np.log1p(-p_small) / p_small, 1.0)
    with np.errstate(divide="ignore"):
        return np.where(small, log_p + np.log(ratio), np.log(-np.minimum(log_l, math.log(0.5))))


class Grid:
    """Inner integrals of one measure on ``u = k H``, ``k`` in ``[k0, k0 + size)``: the whole range any N up to
    ``n_max`` needs (left: ``u = -x_max - ln n_max - 40``; right: ``u = -x_min + 8``, where ``M < e^-2900``)."""

    def __init__(self, measure: Measure, n_max: float, fourth: bool):
        self.fourth = fourth
        self.n_max = n_max
        self.k0 = math.floor((-measure.hi - math.log(n_max) - 40.0) / H)
        k1 = math.ceil((-measure.lo + 8.0) / H) + 1
        self.k = np.arange(self.k0, k1)
        parts = []
        step = 4096
        for a in range(0, self.k.size, step):
            parts.append(measure.inner(self.k[a:a + step], fourth))
        self.rows = np.concatenate(parts, axis=1)
        log_m = self.rows[1]
        # left of the peak of M (for a bounded law M increases in u while u + x_max < ln 2)
        self.m_rising = int(np.argmax(log_m)) + 1
        self.log_m_cummax = np.maximum.accumulate(log_m)


def _windows(grid: Grid, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per N the slice ``[lo, hi)`` of grid points outside of which the integrand is negligible (module doc)."""
    log_minus = grid.rows[0]  # increasing in u
    ln_n = np.log(n)
    right_level = np.log(_RIGHT_DROP + ln_n) - np.log(np.maximum(n - 1.0, 1e-300))
    hi = np.searchsorted(log_minus, right_level, side="right") + 1
    hi = np.where(n <= 1.0, grid.k.size, np.minimum(hi, grid.k.size))
    left_level = -2.0 * ln_n - _LEFT_DROP
    # last point left of which the running maximum of ln M stays below the level (ln M increasing there)
    lo = np.searchsorted(grid.log_m_cummax[: grid.m_rising], left_level, side="left") - 1
    lo = np.clip(lo, 0, np.maximum(hi - 1, 0))
    return lo, np.maximum(hi, lo + 1)


def _outer(grid: Grid, n: np.ndarray, terms, with_extra: bool):
    """``(ln integral, <extra>)`` per N: ``terms(rows, n)`` gives (list of log-integrand arrays, extra or None)."""
    lo, hi = _windows(grid, n)
    order = np.argsort(hi - lo, kind="stable")
    log_int = np.empty(n.size)
    extra_mean = np.full(n.size, np.nan)
    start = 0
    while start < n.size:
        width = int(hi[order[start]] - lo[order[start]])
        size = max(1, _CHUNK // max(width, 1))
        cols = order[start:start + size]
        start += size
        width = int(np.max(hi[cols] - lo[cols]))
        idx = lo[cols] + np.arange(width)[:, None]
        inside = idx < hi[cols]
        idx = np.minimum(idx, grid.k.size - 1)
        logs, extra = terms(grid.rows[:, idx], n[cols])
        logs = [np.where(inside, t, -np.inf) for t in logs]
        top = np.max([t.max(axis=0) for t in logs], axis=0)
        with np.errstate(under="ignore"):
            weights = [np.exp(t - top) for t in logs]
        total = np.sum(weights, axis=0).sum(axis=0)
        log_int[cols] = top + np.log(total * H)
        if with_extra:
            with np.errstate(invalid="ignore"):
                part = np.where(weights[0] > 0.0, weights[0] * extra, 0.0)
            extra_mean[cols] = part.sum(axis=0) / weights[0].sum(axis=0)
    return log_int, extra_mean


def _times_ln_l(m: np.ndarray, log_minus_ln_l: np.ndarray) -> np.ndarray:
    """``-m ln L`` for ``m >= 0``."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out = np.exp(np.log(m) + log_minus_ln_l)
    return np.where(m == 0.0, 0.0, out)


def ipr_exact(grid: Grid, n: np.ndarray, want_exponent: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(E[Y2], d ln E / d ln N)`` for the 1-D ``n`` (``1 <= n <= grid.n_max``)."""

    def terms(rows, v):
        a, log_m = rows[0], rows[1]
        minus = _times_ln_l(v - 1.0, a)
        log_f = np.log(v) + log_m - minus
        extra = None
        if want_exponent:  # N ln L = (N - 1) ln L * N / (N - 1), or ln L itself at N = 1
            one = v == 1.0
            with np.errstate(over="ignore", invalid="ignore"):
                extra = np.where(one, -np.exp(a), -minus * v / np.where(one, 1.0, v - 1.0))
        return [log_f], extra

    log_e, mean = _outer(grid, n, terms, want_exponent)
    return np.exp(log_e), (1.0 + mean) if want_exponent else mean


def second_moment_exact(grid: Grid, n: np.ndarray) -> np.ndarray:
    """``E[Y2^2]`` for the 1-D ``n`` (``2 <= n <= grid.n_max``; the grid built with ``fourth=True``)."""

    def terms(rows, v):
        a, log_m, log_m4 = rows[0], rows[1], rows[2]
        one = np.log(v) + log_m4 - _times_ln_l(v - 1.0, a)
        two = np.log(v) + np.log(v - 1.0) + 2.0 * log_m - _times_ln_l(v - 2.0, a)
        return [one, two], None

    log_e, _ = _outer(grid, n, terms, False)
    return np.exp(log_e) / 6.0
