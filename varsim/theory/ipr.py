"""Exact mean inverse participation ratio ``E[sum_i w_i^2]`` of softmax weights over Gaussian logits.

For ``N`` i.i.d. logits ``s_i ~ N(0, beta^2)`` and ``w = softmax(s)``, THEORY.md 1.2 gives, with
``X = e^{beta g}``, ``L(t) = E e^{-tX}`` and ``L2(t) = E[X^2 e^{-tX}]``,

    E[Y2] = N int_0^inf t L2(t) L(t)^{N-1} dt,        d ln E[Y2] / d ln N = 1 + N <ln L>,

where ``<.>`` averages over the integrand. The right side is analytic in ``N``, so real ``N >= 1``
is allowed. We substitute ``t = e^u`` and write everything in terms of ``Y = u + beta g = ln(tX)``,
which is ``N(u, beta^2)``:

    P(u) = 1 - L = E[-expm1(-e^Y)],   L(u) = E[exp(-e^Y)],   M(u) = t^2 L2 = E[e^{2Y - e^Y}],
    E[Y2] = int N M(u) L(u)^{N-1} du.

Each inner expectation is split at two fixed points of ``y``:

* ``y < Y_LO``: ``exp(-e^y)`` is a rapidly converging alternating power series in ``e^y``, and every
  term ``E[e^{kY}; Y < Y_LO]`` is a closed-form Gaussian integral (``scipy.special.log_ndtr``).
  This is what keeps ``1 - L`` accurate to full relative precision when it is ``1e-300``.
* ``Y_LO <= y <= Y_HI``: composite Gauss-Legendre panels no wider than ``beta`` or 0.5 (the width of the
  cut-off), fixed per ``beta`` and shared by every u: a u takes the panels that cover its Gaussian window, so the
  integrands are evaluated once per node and each u costs one exponential per node.
* ``y > Y_HI``: ``exp(-e^y)`` underflows to zero, so only ``P`` gets a (closed-form) term.

All three are carried in log space. ``ln M`` and ``ln L`` are concave in ``u`` (Gaussian convolutions
of log-concave functions), so the outer integrand is log-concave: the trapezoid rule on a uniform
``u`` grid converges geometrically, and the sum takes the grid points within ``e^-45`` of the peak.

Vectorised over N: per ``beta``, the inner integrals on one u grid (kept in a small cache), each N's window located
on every 8th grid point, then the log-integrand of all N on their windows as one array. A grid entry is the same
number, bit for bit, as the scalar call: the sums run in grid order over exactly the points of the window.

Accuracy: about 1e-13 relative (checked against the N = 2 closed form and mpmath, and point by point against the
per-point quadrature :mod:`varsim.theory._ipr_reference`, in the tests). Cost: ~1 ms per ``beta`` and ~10 us per
point (``benchmarks/bench_theory_grid.py``: 10^5 points in under a CPU second).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np
from scipy.special import log_ndtr

from varsim._common.validate import check_real
from varsim.theory._args import broadcast_pair, real_array, scalar_or_grid

__all__ = ["BETA_MAX", "N_MAX", "decay_exponent", "expected_ipr", "ipr_and_exponent", "ipr_second_moment"]

#: Largest sequence length accepted (the quadrature is validated up to here).
N_MAX = 1e300
#: Largest ``|beta|`` accepted. The u range of the quadrature grows like ``beta`` (about 1 s per 1000); beyond this
#: every ``N <= N_MAX`` is deep in the frozen phase, where :func:`varsim.theory.frozen_ipr` is the tool.
BETA_MAX = 1e4

_Y_LO = -4.0  # below: series in e^y; 10 terms leave a relative error < e^{10 Y_LO}/10! ~ 1e-24
_Y_HI = 6.7  # above: exp(-e^y) < 1e-350, exactly zero in double precision
_SERIES_TERMS = 10
_GL_X, _GL_W = np.polynomial.legendre.leggauss(10)
_WINDOW_SD = 13.0  # Gaussian window half-width in standard deviations (mass outside < e^-84)
# Trapezoid step in u = ln t, a dyadic fraction so that the grid points k * _H_U are exact. The integrand is analytic
# in the strip |Im u| < pi/2 and bounded there by the integral over cos(Im u)^-2 (|L(t)| <= L(Re t)), so the error
# is below ~1/cos^2(d) e^{-2 pi d / h}, e^-45 at d = 1.5.
_H_U = 0.1875
_DROP = 45.0  # the outer sum takes the grid points where ln f is within this of its peak (the rest < e^-45 of it)
_BLOCK = 16  # grid points are computed and cached in blocks of this many u values
_STRIDE = 8  # the coarse grid that locates each N's window takes every _STRIDE-th point
_CHUNK = 1 << 16  # elements of one (points x N) temporary: a few of them stay in cache
_COLUMNS = 128  # N per chunk at most: N of similar window widths share a chunk, whose width is their largest
_INNER_CHUNK = 1 << 18  # elements of one (points x nodes) temporary: most grids in one call
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _alternating(shift: int) -> np.ndarray:
    """``(-1)^j / (j + shift)!`` for ``1 <= j < _SERIES_TERMS``: the series of ``exp(-x)`` (0) and ``-expm1(-x)/x``
    (1) after their leading 1."""
    j = np.arange(_SERIES_TERMS, dtype=np.float64)
    return ((-1.0) ** j / np.exp(np.cumsum(np.log(np.maximum(j + shift, 1.0)))))[1:]


# Region A's series: for P, L, M, M4 the first moment index (T_1 for P = E[1 - e^{-e^Y}], T_0 for L, T_2 for M and
# T_4 for M4) and the coefficients of the terms after the first.
_SERIES_FIRST = np.array([1, 0, 2, 4])
_SERIES_COEF = np.stack([_alternating(1), _alternating(0), _alternating(0), _alternating(0)])


class _Panels:
    """Region B's Gauss-Legendre panels for one ``beta``: ``n_panels`` of equal width ``<= min(0.5, beta)`` tiling
    ``[Y_LO, Y_HI]``, of which a u uses the ``n_win`` consecutive ones that cover its Gaussian window (all of them once
    ``beta`` is above ~0.4). ``tau`` is the node offsets from the left end of the first panel used."""

    def __init__(self, beta: float, fourth: bool):
        self.beta = beta
        self.fourth = fourth
        self.n_panels = math.ceil((_Y_HI - _Y_LO) / min(0.5, beta))
        self.width = (_Y_HI - _Y_LO) / self.n_panels
        window = 2.0 * _WINDOW_SD * beta + (4.0 if fourth else 2.0) * beta * beta
        self.n_win = min(self.n_panels, math.ceil(window / self.width) + 1)
        self.tau = self.width * (np.arange(self.n_win)[:, None] + 0.5 * (_GL_X + 1.0)).ravel()
        self._all = self._weighted(0, self.n_panels) if self.n_panels * _GL_X.size <= _INNER_CHUNK // 16 else None

    def first_panel(self, u: np.ndarray) -> np.ndarray:
        """Index of the first panel each u uses (its window starts ``_WINDOW_SD`` standard deviations below u)."""
        if self.n_win == self.n_panels:
            return np.zeros(u.shape, dtype=np.int64)
        start = np.floor((u - _WINDOW_SD * self.beta - _Y_LO) / self.width)
        return np.clip(start, 0, self.n_panels - self.n_win).astype(np.int64)

    def weighted(self, p_lo: int, p_hi: int) -> np.ndarray:
        """Rows: node weight times integrand (``1 - e^{-e^y}``, ``e^{-e^y}``, ``e^{2y - e^y}``[, ``e^{4y - e^y}``])
        over ``beta sqrt(2 pi)`` at the nodes of panels ``[p_lo, p_hi)``, in linear space (a term that underflows is
        ``e^-700`` below the term at the Gaussian's peak). Kept for all panels when they are few."""
        if self._all is not None:
            return self._all[:, p_lo * _GL_X.size : p_hi * _GL_X.size]
        return self._weighted(p_lo, p_hi)

    def _weighted(self, p_lo: int, p_hi: int) -> np.ndarray:
        y = _Y_LO + self.width * (np.arange(p_lo, p_hi)[:, None] + 0.5 * (_GL_X + 1.0)).ravel()
        weight = np.tile(0.5 * self.width * _GL_W, p_hi - p_lo) / (self.beta * _SQRT_2PI)
        ey = np.exp(y)
        out = np.empty((4 if self.fourth else 3, y.size))
        with np.errstate(under="ignore"):
            out[0] = weight * -np.expm1(-ey)
            out[1] = weight * np.exp(-ey)
            out[2] = out[1] * ey * ey
            if self.fourth:
                out[3] = out[2] * ey * ey
        return out


def _region_b(u: np.ndarray, panels: _Panels) -> np.ndarray:
    """``ln`` of region B's part of each inner integral (rows) at log-times ``u`` (1-D, columns).

    Per u, the ``n_win`` panels from :meth:`_Panels.first_panel`; the Gaussian's argument ``z = (y - u) / beta`` is
    formed from the offsets ``o + tau`` (``o`` = first panel's left end minus u), never from the rounded nodes ``y``,
    so that a narrow Gaussian (``beta = 1e-4``) keeps full precision; it is taken relative to its value at the nearest
    node (``z^2 - z_a^2`` as a product of differences), which keeps far windows from underflowing. Sums are
    ``einsum`` loops (no BLAS): a u's value does not depend on how many share the call.
    """
    beta = panels.beta
    start = panels.first_panel(u)
    p_lo, p_hi = int(start.min()), int(start.max()) + panels.n_win
    gw = panels.weighted(p_lo, p_hi)
    tau = panels.tau
    offset = (_Y_LO + start * panels.width) - u
    tau_a = np.clip(-offset, tau[0], tau[-1])  # the node range's point nearest to u
    c = -0.5 / (beta * beta)
    e = np.subtract.outer(-c * tau_a, -c * tau)  # c (tau - tau_a)
    e *= np.add.outer(2.0 * offset + tau_a, tau)
    with np.errstate(under="ignore"):
        np.exp(e, out=e)
    if panels.n_win == panels.n_panels:
        sums = np.einsum("ij,kj->ki", e, gw)
    else:
        idx = ((start - p_lo) * _GL_X.size)[:, None] + np.arange(tau.size)
        sums = np.stack([np.einsum("ij,ij->i", e, g[idx]) for g in gw])
    shift = 0.5 * ((offset + tau_a) / beta) ** 2
    with np.errstate(divide="ignore"):
        return np.log(sums) - shift


def _inner_logs(u: np.ndarray, beta: float, panels: _Panels) -> tuple[np.ndarray, ...]:
    """``(ln(-ln L), ln M[, ln M4])`` at log-times ``u`` (1-D), for logit scale ``beta > 0``.

    ``M4 = t^4 E[X^4 e^{-tX}] = E[e^{4Y - e^Y}]`` (when ``panels.fourth``). ``-ln L`` is ``-log1p(-P)`` where
    ``P < 1/2`` (accurate when ``L`` is near 1: ``ln P + ln(-log1p(-P)/P)``) and ``-ln L`` directly otherwise; the
    outer integrand needs it as ``m ln L = -exp(ln m + ln(-ln L))``, which never meets an underflowed ``P``.
    """
    u = np.asarray(u, dtype=np.float64)
    b2 = beta * beta
    # Region A: T_k = E[e^{kY}; Y < Y_LO] = exp(k u + k^2 b^2 / 2) Phi((Y_LO - u - k b^2) / beta).
    k = np.arange(_SERIES_TERMS + (4 if panels.fourth else 2), dtype=np.float64)
    log_t = (k * u[:, None] + 0.5 * k * k * b2 + log_ndtr((_Y_LO - u[:, None] - k * b2) / beta)).T

    # exp(-e^y) = sum_j (-e^y)^j / j!; successive terms shrink by at least e^{Y_LO}/j, so the sums are
    # (leading term) * (1 + small) and carry no cancellation. Rows: P (from T_1), L (T_0), M (T_2)[, M4 (T_4)].
    firsts = _SERIES_FIRST[: 4 if panels.fourth else 3]
    lead = log_t[firsts]
    terms = np.exp(log_t[firsts[:, None] + np.arange(1, _SERIES_TERMS)] - lead[:, None])
    series = lead + np.log1p(np.einsum("fju,fj->fu", terms, _SERIES_COEF[: firsts.size]))
    b_p, b_l, b_m, *b_m4 = _region_b(u, panels)
    # Region C (y > Y_HI): only P gets a term, since 1 - exp(-e^y) == 1 there and exp(-e^y) == 0.
    log_p = np.logaddexp(np.logaddexp(series[0], b_p), log_ndtr((u - _Y_HI) / beta))
    p = np.exp(log_p)
    small = p < 0.5
    p_small = np.where(small & (p > 0.0), p, 0.5)
    ratio = np.where(p > 0.0, -np.log1p(-p_small) / p_small, 1.0)  # -ln L / P, 1 where P underflows
    with np.errstate(divide="ignore"):
        log_minus_ln_l = np.where(small, log_p + np.log(ratio),
                                  np.log(-np.minimum(np.logaddexp(series[1], b_l), math.log(0.5))))
    out = [log_minus_ln_l, np.logaddexp(series[2], b_m)]
    if b_m4:
        out.append(np.logaddexp(series[3], b_m4[0]))
    return tuple(out)


class _Grid:
    """Inner integrals of one ``beta`` on the u grid ``k * stride * _H_U``, grown block by block on demand. A point's
    values depend on its u alone, so the coarse grid (``stride = _STRIDE``) and the fine one agree where they meet."""

    def __init__(self, beta: float, fourth: bool, stride: int):
        self.beta = beta
        self.stride = stride
        self.panels = _Panels(beta, fourth)
        self.k0 = 0  # grid index of the first stored point
        self.parts: np.ndarray | None = None  # (terms, points)

    def ensure(self, k_lo: int, k_hi: int) -> None:
        """Make indices ``[k_lo, k_hi)`` available (rounded out to whole blocks)."""
        k_lo = (k_lo // _BLOCK) * _BLOCK
        k_hi = -((-k_hi) // _BLOCK) * _BLOCK
        if self.parts is None:
            self.k0 = k_lo
            self.parts = self._compute(k_lo, k_hi)
            return
        k1 = self.k0 + self.parts.shape[1]
        if k_lo < self.k0:
            self.parts = np.concatenate([self._compute(k_lo, self.k0), self.parts], axis=1)
            self.k0 = k_lo
        if k_hi > k1:
            self.parts = np.concatenate([self.parts, self._compute(k1, k_hi)], axis=1)

    def _compute(self, k_lo: int, k_hi: int) -> np.ndarray:
        """Inner integrals at grid indices ``[k_lo, k_hi)``, a block at a time: the u range grows like ``beta``, and
        evaluating it at once would hold ``(range) x (nodes)`` temporaries (gigabytes at beta ~ 1e3)."""
        step = max(_BLOCK, (_INNER_CHUNK // self.panels.tau.size) // _BLOCK * _BLOCK)
        pieces = [_inner_logs(np.arange(a, min(a + step, k_hi)) * self.stride * _H_U, self.beta, self.panels)
                  for a in range(k_lo, k_hi, step)]
        return np.concatenate([np.array(p) for p in pieces], axis=1)

    def rows(self, k: np.ndarray) -> np.ndarray:
        """The inner integrals at grid indices ``k`` (any shape): shape ``(terms,) + k.shape``."""
        return self.parts.take(k - self.k0, axis=1)


_CACHE: OrderedDict[tuple[float, bool, int], _Grid] = OrderedDict()
_CACHE_SIZE = 512  # a random-query mixture uses ~60-300 betas (one per Gauss-Kronrod node); keep one or two
_LOCK = threading.Lock()  # the cached grids are mutated in place


def _grid(beta: float, fourth: bool, stride: int = 1) -> _Grid:
    key = (beta, fourth, stride)
    grid = _CACHE.get(key)
    if grid is None:
        grid = _CACHE[key] = _Grid(beta, fourth, stride)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return grid


def _first_band(beta: float, ln_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A first guess of each N's grid slice ``[k_lo, k_hi)``.

    Peak near N (1 - L) = 1. 1 - L ~ E[min(e^Y, 1)]: ~ e^{u + beta^2/2} while the tilted mean u + beta^2 < 0, which
    at the peak means ln N > beta^2/2; otherwise ~ P(Y > 0), giving u ~ -beta sqrt(2 ln N). Annealed side: the left
    flank falls like e^{2u} (M ~ e^{2u}), the right one doubly exponentially. Frozen side: the flanks are Gaussian in
    u with width ~beta. A poor guess only costs the geometric growth in :func:`_locate`."""
    annealed = ln_n >= 0.5 * beta * beta
    u_c = np.where(annealed, -ln_n - 0.5 * beta * beta, -beta * np.sqrt(2.0 * ln_n))
    span = np.where(annealed, 14.0 + beta, 6.0 + 2.5 * beta)
    return np.floor((u_c - 3.0 * span) / _H_U).astype(np.int64), np.ceil((u_c + 3.0 * span) / _H_U).astype(np.int64)


def _bracketed(logs: list[np.ndarray], peak: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of the ``(points, N)`` log terms: is every term ``_DROP`` below ``peak`` at the first (last) point
    with its own maximum inside?"""
    floor = peak - _DROP
    ok_lo = np.logical_and.reduce([t[0] < floor for t in logs])
    ok_hi = np.logical_and.reduce([t[-1] < floor for t in logs])
    if len(logs) > 1:  # with one term, ends below its peak imply the peak inside
        arg = [np.argmax(t, axis=0) for t in logs]
        ok_lo &= np.logical_and.reduce([a > 0 for a in arg])
        ok_hi &= np.logical_and.reduce([a < logs[0].shape[0] - 1 for a in arg])
    return ok_lo, ok_hi


def _peak(logs: list[np.ndarray]) -> np.ndarray:
    return np.max([t.max(axis=0) for t in logs], axis=0)


def _locate(beta: float, n: np.ndarray, fourth: bool, terms) -> tuple[np.ndarray, np.ndarray]:
    """Each N's slice ``[lo, hi)`` of the fine grid that holds every point within ``_DROP`` of the peak, from the log
    terms on the coarse grid: the slice reaches one coarse step past the last coarse point inside on each side, so by
    unimodality it holds the whole window. The coarse slices start at a guess and grow until bracketed."""
    grid = _grid(beta, fourth, _STRIDE)
    k_lo, k_hi = _first_band(beta, np.log(n))
    k_lo, k_hi = k_lo // _STRIDE, -(-k_hi // _STRIDE)
    lo, hi = np.empty_like(k_lo), np.empty_like(k_hi)
    todo = np.arange(n.size)
    for _ in range(64):
        if todo.size == 0:
            return lo, hi
        count = int(np.max(k_hi[todo] - k_lo[todo])) + 1
        grid.ensure(int(k_lo[todo].min()), int(k_lo[todo].max()) + count)  # one call for the common case
        failed = []
        pieces = min(todo.size, -(-(count * todo.size) // _CHUNK))  # bounded temporaries at large beta
        for chunk in np.array_split(todo, pieces):
            count = int(np.max(k_hi[chunk] - k_lo[chunk])) + 1
            k = k_lo[chunk] + np.arange(count)[:, None]
            grid.ensure(int(k[0].min()), int(k[-1].max()) + 1)
            logs, _, _ = terms(grid.rows(k), n[chunk])
            peak = _peak(logs)
            ok_lo, ok_hi = _bracketed(logs, peak)
            good = ok_lo & ok_hi
            inside = np.logical_or.reduce([t >= peak - _DROP for t in logs])
            first = np.argmax(inside, axis=0)
            last = count - 1 - np.argmax(inside[::-1], axis=0)
            cols = np.arange(chunk.size)[good]
            lo[chunk[good]] = (k[first[good], cols] - 1) * _STRIDE
            hi[chunk[good]] = (k[last[good], cols] + 1) * _STRIDE + 1
            bad = chunk[~good]
            span = k_hi[bad] - k_lo[bad]
            k_lo[bad] -= np.where(ok_lo[~good], 0, span)
            k_hi[bad] += np.where(ok_hi[~good], 0, span)  # geometric growth: a poor guess costs a few extra blocks
            failed.append(bad)
        todo = np.concatenate(failed)
    raise RuntimeError(f"quadrature did not bracket its integrand (beta={beta})")  # pragma: no cover


def _sums(beta: float, n: np.ndarray, fourth: bool, terms) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(top, sum_k exp(f_k - top), sum_k exp(f_k - top) x_k)`` per N of the 1-D ``n``, where
    ``terms(parts, n) -> (logs, shift, x)`` gives the log-integrand ``f`` as terms (a list of ``(points, len(n))``
    arrays, ``parts`` the inner integrals on each N's slice) plus a per-N ``shift``, and ``x`` (or None) a quantity
    to sum with the weights of the first term.

    The sums take exactly the grid points within ``_DROP`` of the peak ``top`` (zero elsewhere), added in grid order
    (``sum`` over the leading axis of a C-ordered array with two or more columns adds row after row): an N's result
    does not depend on its slice or on the other values of ``n``.
    """
    lo, hi = _locate(beta, n, fourth, terms)
    grid = _grid(beta, fourth)
    grid.ensure(int(lo.min()), int(hi.max()))
    order = np.argsort(hi - lo, kind="stable")  # similar widths share a chunk
    top, total = np.empty(n.size), np.empty(n.size)
    weighted = None
    start = 0
    while start < n.size:
        size = max(2, min(_COLUMNS, _CHUNK // int(hi[order[start]] - lo[order[start]])))
        cols = order[start : start + size]
        start += size
        if cols.size == 1:  # a reduction over the leading axis of one column would be pairwise, not in order
            cols = np.repeat(cols, 2)
        for _ in range(64):
            width = int(np.max(hi[cols] - lo[cols]))
            k = lo[cols] + np.arange(width)[:, None]
            grid.ensure(int(k[0].min()), int(k[-1].max()) + 1)
            logs, shift, extra = terms(grid.rows(k), n[cols])
            peak = _peak(logs)
            ok_lo, ok_hi = _bracketed(logs, peak)
            if np.all(ok_lo & ok_hi):
                break
            # _locate's slice holds the window of a unimodal integrand; widen it if rounding says otherwise
            lo[cols[~ok_lo]] -= _STRIDE  # pragma: no cover
            hi[cols[~ok_hi]] += _STRIDE  # pragma: no cover
        w = None
        for t in logs:
            t -= peak
            inside = t >= -_DROP
            np.maximum(t, -2.0 * _DROP, out=t)  # exp is slow where it underflows; these points are masked out
            part = np.exp(t, out=t)
            part *= inside
            w = part if w is None else np.add(w, part, out=w)
        top[cols] = peak + shift
        total[cols] = w.sum(axis=0)
        if extra is not None:
            if weighted is None:
                weighted = np.empty(n.size)
            w *= extra
            weighted[cols] = w.sum(axis=0)
    return top, total, weighted


def _times_ln_l(m: np.ndarray, log_minus_ln_l: np.ndarray) -> np.ndarray:
    """``-m ln L`` for ``m >= 0`` as ``exp(ln m + ln(-ln L))`` (0 at ``m = 0``, ``inf`` past overflow)."""
    with np.errstate(divide="ignore", over="ignore"):
        out = np.log(m) + log_minus_ln_l
        return np.exp(out, out=out)


def _ipr_grid(n: np.ndarray, beta: float, want_exponent: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(E[Y2], d ln E / d ln N)`` for each ``N >= 1`` of the 1-D ``n``, ``beta > 0`` (exponent NaN unless wanted).

    The log-integrand is ``ln N + ln M + (N - 1) ln L``; the exponent's ``N <ln L>`` is the average of
    ``(N - 1) ln L`` times ``N / (N - 1)`` (of ``ln L`` itself at ``N = 1``)."""
    one = n == 1.0

    def terms(parts, v):
        a, log_m = parts
        minus = _times_ln_l(v - 1.0, a)  # -(N - 1) ln L
        log_f = np.subtract(log_m, minus, out=log_m)
        if want_exponent and np.any(v == 1.0):
            minus[:, v == 1.0] = np.exp(a[:, v == 1.0])
        return [log_f], np.log(v), minus if want_exponent else None

    top, total, weighted = _sums(beta, n, False, terms)
    e = np.exp(top + np.log(total * _H_U))
    if not want_exponent:
        return e, np.full(n.size, np.nan)
    factor = np.where(one, -1.0, -n / np.where(one, 1.0, n - 1.0))
    return e, 1.0 + factor * weighted / total


def _second_moment_grid(n: np.ndarray, beta: float) -> np.ndarray:
    """``E[Y2^2] = (1/6) int [N M4 L^{N-1} + N(N-1) M^2 L^{N-2}] du`` for each ``N >= 2`` of ``n``, ``beta > 0``."""

    def terms(parts, v):
        a, log_m, log_m4 = parts
        one = log_m4 - _times_ln_l(v - 1.0, a)
        two = np.log(v - 1.0) + 2.0 * log_m - _times_ln_l(v - 2.0, a)
        return [one, two], np.log(v), None

    top, total, _ = _sums(beta, n, True, terms)
    return np.exp(top + np.log(total * _H_U / 6.0))


def _check_beta(beta) -> float:
    beta = abs(check_real("beta", beta))
    if beta > BETA_MAX:
        raise ValueError(_beta_max_message(beta))
    return beta


def _beta_max_message(beta: float) -> str:
    return (f"beta must satisfy |beta| <= {BETA_MAX:g} (the quadrature's cost grows like beta; this deep in the "
            f"frozen phase use frozen_ipr), got {beta:g}")


def _validate(n, beta):
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    return n_arr, _check_beta(beta)


def broadcast_n_beta(n, beta, *, n_min: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (``n_min <= n <= N_MAX``) and ``|beta|`` (``<= BETA_MAX``) validated and broadcast together."""
    n_b, b_b = broadcast_pair("n", n, "beta", beta, first_min=n_min, first_max=N_MAX)
    b_b = np.abs(b_b)
    if np.any(b_b > BETA_MAX):
        raise ValueError(_beta_max_message(float(b_b[b_b > BETA_MAX].flat[0])))
    return n_b, b_b


def _per_beta(n, beta, small, exact):
    """Apply ``small(n_values, beta)`` (``beta < _BETA_TINY``) or ``exact(distinct_n_values, beta)`` (one quadrature
    grid per distinct beta, vectorised over N) over broadcast ``n``/``beta`` arrays; both return tuples of arrays."""
    outs = None
    for b in np.unique(beta):
        mask = beta == b
        b = float(b)
        if b < _BETA_TINY:
            vals = small(n[mask], b)
        else:
            distinct, where = np.unique(n[mask], return_inverse=True)
            with _LOCK:
                vals = tuple(col[where] for col in exact(distinct, b))
        if outs is None:
            outs = tuple(np.empty(n.shape) for _ in vals)
        for out, v in zip(outs, vals):
            out[mask] = v
    return outs


def _small_beta(n_arr: np.ndarray, beta: float):
    """``beta -> 0``: ``E = 1/N + beta^2 (N-1)/N^2 + O(beta^4)``, exponent ``-1 + beta^2/N + O(beta^4)``."""
    e = (1.0 + beta * beta * (n_arr - 1.0) / n_arr) / n_arr
    g = -1.0 + beta * beta / n_arr / (1.0 + beta * beta * (n_arr - 1.0) / n_arr)
    return e, g


# Below this scale the small-beta expansion is exact to double precision (its O(beta^4) remainder is
# ~beta^4/2 relative), while the quadrature's Gaussian window shrinks to width ~beta and loses digits.
_BETA_TINY = 1e-4


def ipr_and_exponent(n, beta) -> tuple[np.ndarray, np.ndarray]:
    """``(expected_ipr(n, beta), decay_exponent(n, beta))`` as arrays of the broadcast shape of ``n`` and
    ``beta``, from one quadrature per distinct beta."""
    n_b, b_b = broadcast_n_beta(n, beta)
    return _per_beta(n_b, b_b, _small_beta, lambda v, b: _ipr_grid(v, b, True))


def expected_ipr(n, beta):
    """Exact ``E[sum_i w_i^2]`` for ``w = softmax(s)``, ``s_1..s_N`` i.i.d. ``N(0, beta^2)``.

    Parameters
    ----------
    n : float or array_like
        Sequence length, real ``1 <= n <= 1e300``.
    beta : float or array_like
        Logit standard deviation, ``|beta| <= BETA_MAX = 1e4`` (its sign is irrelevant); ``beta = 0`` gives ``1/n``.
        ``n`` and ``beta`` broadcast against each other: ``expected_ipr(ns, betas[:, None])`` is a
        ``(len(betas), len(ns))`` table. One inner-integral grid per distinct beta.

    Returns
    -------
    float or ndarray
        A float when both are scalars, else an array of the broadcast shape. Relative accuracy ~1e-13.
        By THEORY.md 1.1 this is ``Var(o_c) / sigma_v^2`` for values independent of the keys.
    """
    n_b, b_b = broadcast_n_beta(n, beta)
    out, = _per_beta(n_b, b_b, lambda v, b: (_small_beta(v, b)[0],), lambda v, b: _ipr_grid(v, b, False)[:1])
    return scalar_or_grid(n, beta, out)


def decay_exponent(n, beta):
    """Exact local decay exponent ``d ln E[sum w^2] / d ln N`` (THEORY.md 1.2), in ``[-1, 0]``.

    Same arguments (and broadcasting) as :func:`expected_ipr`. About -1 in the annealed phase
    (``ln N > 3 beta^2/2``), about 0 in the frozen phase (``ln N < beta^2/2``), with broad crossovers at finite N;
    compare :func:`varsim.theory.effective_exponent`.
    """
    return scalar_or_grid(n, beta, ipr_and_exponent(n, beta)[1])


def ipr_second_moment(n, beta):
    """Exact ``E[(sum_i w_i^2)^2]`` (same model and broadcasting as :func:`expected_ipr`), for ``2 <= n <= 1e300``.

    Uses ``1/Z^4 = (1/6) int t^3 e^{-tZ} dt`` and ``(sum X_i^2)^2 = sum X_i^4 + sum_{i != j} X_i^2 X_j^2``.
    ``Var(sum w^2) = ipr_second_moment - expected_ipr**2`` sizes Monte Carlo runs and enters the
    LayerNorm-with-eps approximation of :mod:`varsim.theory.layernorm`.
    """
    n_b, b_b = broadcast_n_beta(n, beta, n_min=2.0)

    def small(v, b):
        # Y2 = 1/N + O(beta^2) almost surely, so E[Y2^2] = 1/N^2 + 2 beta^2 (N-1)/N^3 + O(beta^4).
        return ((1.0 + 2.0 * b * b * (v - 1.0) / v) / v / v,)  # n**2 would overflow at 1e300

    out, = _per_beta(n_b, b_b, small, lambda v, b: (_second_moment_grid(v, b),))
    return scalar_or_grid(n, beta, out)
