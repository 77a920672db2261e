"""Node measures of continuous laws: Gauss-Legendre panels that never straddle a lattice cell or a knot of the
density and are bisected until the log-density varies by at most ``_VARIATION`` across each (so a density that
vanishes like a high power at an end of its support is graded geometrically towards it). A panel whose mass is
below ``e^-_NEGLIGIBLE`` is kept unrefined: every quantity the quadrature needs is at least ``1/N >= 1e-300``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import roots_jacobi, roots_laguerre

__all__ = ["panel_nodes"]

_GL_X, _GL_W = np.polynomial.legendre.leggauss(10)
_VARIATION = 2.0
_CURVATURE = 0.5
_NEGLIGIBLE = 780.0
_PROBE = np.array([0.02, 0.5, 0.98])


def _resolved(a: np.ndarray, b: np.ndarray, log_density, max_width: float) -> np.ndarray:
    """Which panels ``[a, b]`` are fine as they are."""
    w = b - a
    lv = log_density(a[:, None] + w[:, None] * _PROBE)
    with np.errstate(invalid="ignore"):
        variation = np.max(lv, axis=1) - np.min(lv, axis=1)
        curvature = np.abs(lv[:, 0] + lv[:, 2] - 2.0 * lv[:, 1])
        smooth = (variation <= _VARIATION) & (curvature <= _CURVATURE)
    mass = np.log(w) + np.max(lv, axis=1)
    return (w <= max_width) & (smooth | (mass < -_NEGLIGIBLE))


def panel_nodes(breaks: np.ndarray, log_density, max_width: float,
                left_power: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Gauss nodes ``v`` and log-weights (weight times density) on ``[breaks[0], breaks[-1]]``.

    ``breaks``: sorted points every panel must respect (cell boundaries, knots, support ends); ``log_density``:
    the log-density at an array of interior points (vectorised, any shape). With ``left_power = p > 0`` the density
    is ``(v - breaks[0])^p`` times a function smooth on ``[breaks[0], breaks[1]]``, which gets a Gauss-Jacobi rule
    for that weight (no grading towards a zero of high order)."""
    breaks = np.unique(np.asarray(breaks, dtype=np.float64))
    first = None
    if left_power > 0.0:
        first = _jacobi_panel(breaks[0], breaks[1], log_density, left_power)
        breaks = breaks[1:]
    a, b = breaks[:-1], breaks[1:]
    keep = b > a
    a, b = a[keep], b[keep]
    done_a, done_b = [], []
    for _ in range(2000):
        if a.size == 0:
            break
        ok = _resolved(a, b, log_density, max_width)
        done_a.append(a[ok])
        done_b.append(b[ok])
        a, b = a[~ok], b[~ok]
        mid = 0.5 * (a + b)
        split = (mid > a) & (mid < b)
        done_a.append(a[~split])
        done_b.append(b[~split])
        a, b, mid = a[split], b[split], mid[split]
        a, b = np.concatenate([a, mid]), np.concatenate([mid, b])
    else:  # pragma: no cover
        raise RuntimeError("panel refinement did not converge")
    a, b = np.concatenate(done_a), np.concatenate(done_b)
    half = 0.5 * (b - a)
    v = (a + half)[:, None] + half[:, None] * _GL_X
    with np.errstate(divide="ignore"):
        lw = np.log(half[:, None] * _GL_W) + log_density(v)
    v, lw = v.ravel(), lw.ravel()
    if first is not None:
        v, lw = np.concatenate([first[0], v]), np.concatenate([first[1], lw])
    return v, lw


def _jacobi_panel(a: float, b: float, log_density, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and log-weights on ``[a, b]`` for a density ``(v - a)^p`` times a smooth factor: Gauss-Jacobi with
    weight ``(1 + s)^p`` on ``[-1, 1]``, ``v = a + (b - a)(1 + s)/2`` (Gauss-Laguerre after
    ``v = a + (b - a) e^{-s/(p+1)}`` above ``p = 1000``, where SciPy's Jacobi rule overflows)."""
    if p > 1000.0:
        s, w = roots_laguerre(2 * _GL_X.size)
        v = a + (b - a) * np.exp(-s / (p + 1.0))
        # (v - a)^p dv = (b - a)^{p+1} / (p + 1) e^{-s} ds
        lw = np.log(w) + (p + 1.0) * np.log(b - a) - np.log(p + 1.0) + log_density(v) - p * np.log(v - a)
        return v, lw
    s, w = roots_jacobi(_GL_X.size, 0.0, p)
    half = 0.5 * (b - a)
    v = a + half * (1.0 + s)
    # int f(v) dv = half int f dv/ds ds; f = (v - a)^p g = half^p (1 + s)^p g
    lw = np.log(w) + (p + 1.0) * np.log(half) + log_density(v) - p * np.log(v - a)
    return v, lw
