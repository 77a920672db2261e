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
* ``Y_LO <= y <= Y_HI``: composite Gauss-Legendre panels, restricted to where the (tilted)
  Gaussian has mass; panels are no wider than ``beta`` or 0.5 (the width of the cut-off).
* ``y > Y_HI``: ``exp(-e^y)`` underflows to zero, so only ``P`` gets a (closed-form) term.

All three are carried in log space. ``ln M`` and ``ln L`` are concave in ``u`` (Gaussian convolutions
of log-concave functions), so the outer integrand is log-concave: the trapezoid rule on a uniform
``u`` grid that reaches ``e^-40`` of the peak on both sides converges geometrically and the tails
beyond are negligible. The grid for one ``beta`` is shared by every ``N`` and kept in a small cache,
so sweeping ``N`` costs one set of inner integrals.

Accuracy: about 1e-13 relative (checked against the N = 2 closed form and against mpmath in the
tests). Cost: a few milliseconds to ~0.1 s per ``beta``.
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
_H_U = 0.125  # trapezoid step in u = ln t; the integrand is analytic in a strip of half-width ~pi/2
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
    """``(ln P, ln L, ln M[, ln M4])`` at log-times ``u`` (1-D), for logit scale ``beta > 0``.

    ``M4 = t^4 E[X^4 e^{-tX}] = E[e^{4Y - e^Y}]`` (only with ``fourth``; it needs a wider window).
    ``ln L`` is computed as ``log1p(-P)`` where ``P < 1/2`` (accurate when ``L`` is near 1) and
    directly otherwise.
    """
    u = np.asarray(u, dtype=np.float64)
    b2 = beta * beta
    top_tilt = 4.0 if fourth else 2.0
    # Region A: T_k = E[e^{kY}; Y < Y_LO] = exp(k u + k^2 b^2 / 2) Phi((Y_LO - u - k b^2) / beta).
    k = np.arange(_SERIES_TERMS + int(top_tilt), dtype=np.float64)
    log_t = k * u[:, None] + 0.5 * k * k * b2 + log_ndtr((_Y_LO - u[:, None] - k * b2) / beta)
    # exp(-e^y) = sum_j (-e^y)^j / j!; successive terms shrink by at least e^{Y_LO}/j, so the sums
    # below are (leading term) * (1 + small) and carry no cancellation.
    j = np.arange(_SERIES_TERMS, dtype=np.float64)
    sign_fact = (-1.0) ** j / np.exp(np.cumsum(np.log(np.maximum(j, 1.0))))  # (-1)^j / j!
    sign_fact_p = (-1.0) ** j / np.exp(np.cumsum(np.log(j + 1.0)))  # (-1)^j / (j+1)!

    def series(first: int, coef: np.ndarray) -> np.ndarray:  # coef[0] == 1
        lead = log_t[:, first]
        rest = np.exp(log_t[:, first + 1 : first + _SERIES_TERMS] - lead[:, None]) @ coef[1:]
        return lead + np.log1p(rest)

    # Region B: Gauss-Legendre panels on [Y_LO, Y_HI] intersected with the Gaussian window, which
    # must hold the mass of the most tilted integrand (mean u + top_tilt beta^2).
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

    # Region C (y > Y_HI): only P gets a term, since 1 - exp(-e^y) == 1 there and exp(-e^y) == 0.
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
        self.k0 = 0  # grid index of the first stored point
        self.parts: list[np.ndarray] | None = None

    def ensure(self, k_lo: int, k_hi: int) -> None:
        """Make indices ``[k_lo, k_hi)`` available (rounded out to whole blocks)."""
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
        """Inner integrals at grid indices ``[k_lo, k_hi)``, a few blocks at a time: the u range grows like
        ``beta``, and evaluating it at once would hold ``(range) x (nodes)`` temporaries (gigabytes at beta ~ 1e3)."""
        step = 16 * _BLOCK
        pieces = [_inner_logs(np.arange(a, min(a + step, k_hi)) * _H_U, self.beta, self.fourth)
                  for a in range(k_lo, k_hi, step)]
        return [np.concatenate(arrays) for arrays in zip(*pieces)]

    def slice(self, k_lo: int, k_hi: int) -> list[np.ndarray]:
        return [a[k_lo - self.k0 : k_hi - self.k0] for a in self.parts]


_CACHE: OrderedDict[tuple[float, bool], _Grid] = OrderedDict()
_CACHE_SIZE = 512  # a random-query mixture uses ~60-300 betas (one per Gauss-Kronrod node); keep one or two
_LOCK = threading.Lock()  # the cached grids are mutated in place


def _grid(beta: float, fourth: bool = False) -> _Grid:
    key = (beta, fourth)
    grid = _CACHE.get(key)
    if grid is None:
        grid = _CACHE[key] = _Grid(beta, fourth)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return grid


def _times_ln_l(m: float, log_p: np.ndarray, ln_l: np.ndarray) -> np.ndarray:
    """``m ln L`` for ``m >= 0``; for small ``P`` as ``-exp(ln m + ln P) * (-log1p(-P)/P)`` so that an
    underflowed ``P`` never meets a huge ``m``."""
    if m == 0.0:
        return np.zeros_like(ln_l)
    p = np.exp(log_p)
    small = p < 0.5
    p_safe = np.where(small & (p > 0.0), p, 1.0)
    ratio = np.where(small & (p > 0.0), -np.log1p(-np.where(small, p, 0.0)) / p_safe, 1.0)
    with np.errstate(over="ignore"):
        return np.where(small, -np.exp(math.log(m) + log_p) * ratio, m * ln_l)


def _bracketed(beta: float, n: float, fourth: bool, terms):
    """Find a grid slice on which every log-integrand term returned by ``terms(slice)`` has dropped
    ``_TAIL_DROP`` below the overall peak at both ends, with each term's own peak inside."""
    ln_n = math.log(n)
    # Peak near N (1 - L) = 1. 1 - L ~ E[min(e^Y, 1)]: ~ e^{u + beta^2/2} while the tilted mean u + beta^2 < 0,
    # which at the peak means ln N > beta^2/2; otherwise ~ P(Y > 0), giving u ~ -beta sqrt(2 ln N).
    # Annealed side: the left flank falls like e^{2u} (M ~ e^{2u}), the right one doubly exponentially, so ~30 units
    # hold e^-40 of the peak. Frozen side: the flanks are Gaussian in u with width ~beta. A poor guess only costs
    # the geometric growth below.
    if ln_n >= 0.5 * beta * beta:
        u_c = -ln_n - 0.5 * beta * beta
        span = 14.0 + beta
    else:
        u_c = -beta * math.sqrt(2.0 * ln_n)
        span = 6.0 + 2.5 * beta
    k_lo = math.floor((u_c - 2.0 * span) / _H_U)
    k_hi = math.ceil((u_c + span) / _H_U)
    grow = math.ceil(span / _H_U)
    grid = _grid(beta, fourth)
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
        grow *= 2  # geometric growth: a poor initial guess costs a few extra blocks, not hundreds
    raise RuntimeError(f"quadrature did not bracket its integrand (N={n}, beta={beta})")  # pragma: no cover


def _integrate(n: float, beta: float, want_exponent: bool) -> tuple[float, float]:
    """``(ln E[Y2], d ln E / d ln N)`` for one ``N >= 1``, ``beta > 0``."""

    def terms(parts):
        log_p, ln_l, log_m = parts
        return [math.log(n) + log_m + _times_ln_l(n - 1.0, log_p, ln_l)], _times_ln_l(n, log_p, ln_l)

    (log_f,), n_ln_l, top = _bracketed(beta, n, False, terms)
    weights = np.exp(log_f - top)
    total = weights.sum()
    log_e = top + math.log(total * _H_U)
    exponent = 1.0 + float(weights @ n_ln_l) / total if want_exponent else math.nan
    return log_e, exponent


def _second_moment(n: float, beta: float) -> float:
    """``E[Y2^2] = (1/6) int [N M4 L^{N-1} + N(N-1) M^2 L^{N-2}] du`` for ``N >= 2``, ``beta > 0``."""

    def terms(parts):
        log_p, ln_l, log_m, log_m4 = parts
        one = math.log(n) + log_m4 + _times_ln_l(n - 1.0, log_p, ln_l)
        two = math.log(n) + math.log(n - 1.0) + 2.0 * log_m + _times_ln_l(n - 2.0, log_p, ln_l)
        return [one, two], None

    logs, _, top = _bracketed(beta, n, True, terms)
    total = sum(float(np.exp(t - top).sum()) for t in logs)
    return math.exp(top + math.log(total * _H_U / 6.0))


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
    """Apply ``small(n_values, beta)`` (``beta < _BETA_TINY``) or ``exact(n_value, beta)`` (one quadrature grid per
    distinct beta) over broadcast ``n``/``beta`` arrays; ``small`` and ``exact`` return tuples of outputs."""
    outs = None
    for b in np.unique(beta):
        mask = beta == b
        b = float(b)
        if b < _BETA_TINY:
            vals = small(n[mask], b)
        else:
            with _LOCK:
                rows = [exact(float(v), b) for v in n[mask]]
            vals = tuple(np.array(col) for col in zip(*rows))
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


def _exact_pair(n: float, beta: float) -> tuple[float, float]:
    log_e, g = _integrate(n, beta, True)
    return math.exp(log_e), g


def ipr_and_exponent(n, beta) -> tuple[np.ndarray, np.ndarray]:
    """``(expected_ipr(n, beta), decay_exponent(n, beta))`` as arrays of the broadcast shape of ``n`` and
    ``beta``, from one quadrature per distinct beta."""
    n_b, b_b = broadcast_n_beta(n, beta)
    return _per_beta(n_b, b_b, _small_beta, _exact_pair)


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
    out, = _per_beta(n_b, b_b, lambda v, b: (_small_beta(v, b)[0],),
                     lambda v, b: (math.exp(_integrate(v, b, False)[0]),))
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

    out, = _per_beta(n_b, b_b, small, lambda v, b: (_second_moment(v, b),))
    return scalar_or_grid(n, beta, out)
