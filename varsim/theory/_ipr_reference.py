"""Per-point quadrature of :mod:`varsim.theory.ipr`: one trapezoid sum per ``(N, beta)``, the reference its grid path
is checked against (``tests/test_theory_grid.py``) and timed against (``benchmarks/bench_theory_grid.py``).

Same integrals and constants as :mod:`varsim.theory.ipr` (see its docstring), computed the direct way: per ``beta``
the inner integrals on the u grid ``k * _H_U`` (region B on Gauss-Legendre panels stretched over each u's own
Gaussian window, three log-sum-exps per node), then per ``N`` a trapezoid sum over a slice grown until the
log-integrand is ``_TAIL_DROP`` below its peak at both ends. Checked against the ``N = 2`` closed form and mpmath to
about 1e-13; a few milliseconds per point.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from varsim.theory.ipr import _GL_W, _GL_X, _SERIES_TERMS, _WINDOW_SD, _Y_HI, _Y_LO

__all__ = ["reference_ipr_and_exponent", "reference_second_moment"]

_H_U = 0.125  # trapezoid step in u = ln t
_TAIL_DROP = 40.0  # integrate until ln f is this far below its peak on both sides
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_BLOCK = 64  # grid points are computed and cached in blocks of this many u values


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """``log(sum(exp(a), axis=1))``; rows that are all ``-inf`` give ``-inf`` (empty panels)."""
    top = np.max(a, axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(a - safe[:, None]), axis=1))


def _inner_logs(u: np.ndarray, beta: float, fourth: bool = False) -> tuple[np.ndarray, ...]:
    """``(ln P, ln L, ln M[, ln M4])`` at log-times ``u`` (1-D), for logit scale ``beta > 0``."""
    u = np.asarray(u, dtype=np.float64)
    b2 = beta * beta
    top_tilt = 4.0 if fourth else 2.0
    k = np.arange(_SERIES_TERMS + int(top_tilt), dtype=np.float64)
    log_t = k * u[:, None] + 0.5 * k * k * b2 + log_ndtr((_Y_LO - u[:, None] - k * b2) / beta)
    j = np.arange(_SERIES_TERMS, dtype=np.float64)
    sign_fact = (-1.0) ** j / np.exp(np.cumsum(np.log(np.maximum(j, 1.0))))  # (-1)^j / j!
    sign_fact_p = (-1.0) ** j / np.exp(np.cumsum(np.log(j + 1.0)))  # (-1)^j / (j+1)!

    def series(first: int, coef: np.ndarray) -> np.ndarray:  # coef[0] == 1
        lead = log_t[:, first]
        rest = np.exp(log_t[:, first + 1 : first + _SERIES_TERMS] - lead[:, None]) @ coef[1:]
        return lead + np.log1p(rest)

    lo = np.maximum(_Y_LO, u - _WINDOW_SD * beta)
    hi = np.minimum(_Y_HI, u + top_tilt * b2 + _WINDOW_SD * beta)
    width = np.maximum(hi - lo, 0.0)
    max_width = min(_Y_HI - _Y_LO, 2.0 * _WINDOW_SD * beta + top_tilt * b2)
    n_panels = max(1, math.ceil(max_width / min(0.5, beta)))
    frac = ((np.arange(n_panels)[:, None] + 0.5 * (_GL_X[None, :] + 1.0)) / n_panels).ravel()
    y = lo[:, None] + width[:, None] * frac[None, :]
    with np.errstate(divide="ignore"):
        log_w = np.log(width[:, None] / n_panels) + np.log(0.5 * np.tile(_GL_W, n_panels))[None, :]
    z = (y - u[:, None]) / beta
    base = log_w - 0.5 * z * z - _LOG_SQRT_2PI - math.log(beta)
    ey = np.exp(y)
    cut = base - ey
    log_p = np.logaddexp(np.logaddexp(series(1, sign_fact_p), _logsumexp_rows(base + np.log(-np.expm1(-ey)))),
                         log_ndtr((u - _Y_HI) / beta))
    log_l_direct = np.logaddexp(series(0, sign_fact), _logsumexp_rows(cut))
    p = np.exp(log_p)
    ln_l = np.where(p < 0.5, np.log1p(-np.minimum(p, 0.5)), log_l_direct)
    out = [log_p, ln_l, np.logaddexp(series(2, sign_fact), _logsumexp_rows(cut + 2.0 * y))]
    if fourth:
        out.append(np.logaddexp(series(4, sign_fact), _logsumexp_rows(cut + 4.0 * y)))
    return tuple(out)


class _Grid:
    """Inner integrals of one ``beta`` on the u grid ``k * _H_U``, grown block by block on demand."""

    def __init__(self, beta: float, fourth: bool):
        self.beta = beta
        self.fourth = fourth
        self.k0 = 0
        self.parts: list[np.ndarray] | None = None

    def ensure(self, k_lo: int, k_hi: int) -> None:
        k_lo = (k_lo // _BLOCK) * _BLOCK
        k_hi = -((-k_hi) // _BLOCK) * _BLOCK
        if self.parts is None:
            self.k0 = k_lo
            self.parts = self._compute(k_lo, k_hi)
            return
        k1 = self.k0 + self.parts[0].size
        if k_lo < self.k0:
            new = self._compute(k_lo, self.k0)
            self.parts = [np.concatenate([a, b]) for a, b in zip(new, self.parts)]
            self.k0 = k_lo
        if k_hi > k1:
            new = self._compute(k1, k_hi)
            self.parts = [np.concatenate([b, a]) for a, b in zip(new, self.parts)]

    def _compute(self, k_lo: int, k_hi: int) -> list[np.ndarray]:
        step = 16 * _BLOCK
        pieces = [_inner_logs(np.arange(a, min(a + step, k_hi)) * _H_U, self.beta, self.fourth)
                  for a in range(k_lo, k_hi, step)]
        return [np.concatenate(arrays) for arrays in zip(*pieces)]

    def slice(self, k_lo: int, k_hi: int) -> list[np.ndarray]:
        return [a[k_lo - self.k0 : k_hi - self.k0] for a in self.parts]


def _times_ln_l(m: float, log_p: np.ndarray, ln_l: np.ndarray) -> np.ndarray:
    """``m ln L`` for ``m >= 0``; for small ``P`` as ``-exp(ln m + ln P) * (-log1p(-P)/P)``."""
    if m == 0.0:
        return np.zeros_like(ln_l)
    p = np.exp(log_p)
    small = p < 0.5
    p_safe = np.where(small & (p > 0.0), p, 1.0)
    ratio = np.where(small & (p > 0.0), -np.log1p(-np.where(small, p, 0.0)) / p_safe, 1.0)
    with np.errstate(over="ignore"):
        return np.where(small, -np.exp(math.log(m) + log_p) * ratio, m * ln_l)


def _bracketed(grid: _Grid, n: float, terms):
    """A grid slice on which every log-integrand term of ``terms(slice)`` is ``_TAIL_DROP`` below the overall peak
    at both ends, with each term's own peak inside."""
    beta = grid.beta
    ln_n = math.log(n)
    if ln_n >= 0.5 * beta * beta:
        u_c = -ln_n - 0.5 * beta * beta
        span = 14.0 + beta
    else:
        u_c = -beta * math.sqrt(2.0 * ln_n)
        span = 6.0 + 2.5 * beta
    k_lo = math.floor((u_c - 2.0 * span) / _H_U)
    k_hi = math.ceil((u_c + span) / _H_U)
    grow = math.ceil(span / _H_U)
    for _ in range(64):
        grid.ensure(k_lo, k_hi)
        logs, extra = terms(grid.slice(k_lo, k_hi))
        top = max(float(np.max(t)) for t in logs)
        left_ok = all(t[0] < top - _TAIL_DROP and np.argmax(t) > 0 for t in logs)
        right_ok = all(t[-1] < top - _TAIL_DROP and np.argmax(t) < t.size - 1 for t in logs)
        if left_ok and right_ok:
            return logs, extra, top
        k_lo -= 0 if left_ok else grow
        k_hi += 0 if right_ok else grow
        grow *= 2
    raise RuntimeError(f"quadrature did not bracket its integrand (N={n}, beta={beta})")  # pragma: no cover


def reference_ipr_and_exponent(n, beta: float, want_exponent: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(E[Y2], d ln E[Y2] / d ln N)`` for each ``N >= 1`` of the 1-D ``n`` at one ``beta > 0``, point by point
    (the exponent NaN unless wanted, as the old ``expected_ipr`` skipped it)."""
    grid = _Grid(float(beta), False)
    e, g = [], []
    for v in np.asarray(n, dtype=np.float64).ravel():
        v = float(v)

        def terms(parts, v=v):
            log_p, ln_l, log_m = parts
            n_ln_l = _times_ln_l(v, log_p, ln_l) if want_exponent else None
            return [math.log(v) + log_m + _times_ln_l(v - 1.0, log_p, ln_l)], n_ln_l

        (log_f,), n_ln_l, top = _bracketed(grid, v, terms)
        weights = np.exp(log_f - top)
        total = weights.sum()
        e.append(math.exp(top + math.log(total * _H_U)))
        g.append(1.0 + float(weights @ n_ln_l) / total if want_exponent else math.nan)
    return np.array(e), np.array(g)


def reference_second_moment(n, beta: float) -> np.ndarray:
    """``E[Y2^2]`` for each ``N >= 2`` of the 1-D ``n`` at one ``beta > 0``, point by point."""
    grid = _Grid(float(beta), True)
    out = []
    for v in np.asarray(n, dtype=np.float64).ravel():
        v = float(v)

        def terms(parts, v=v):
            log_p, ln_l, log_m, log_m4 = parts
            one = math.log(v) + log_m4 + _times_ln_l(v - 1.0, log_p, ln_l)
            two = math.log(v) + math.log(v - 1.0) + 2.0 * log_m + _times_ln_l(v - 2.0, log_p, ln_l)
            return [one, two], None

        logs, _, top = _bracketed(grid, v, terms)
        total = sum(float(np.exp(t - top).sum()) for t in logs)
        out.append(math.exp(top + math.log(total * _H_U / 6.0)))
    return np.array(out)
