"""The log-log power-law fit: the one implementation of "slope of log y against log x" in varsim.

Used for decay exponents of a variance or a standard deviation vs the set size N (``-1`` for ``1/N`` variance
decay, ``-1/2`` for a ``1/sqrt(N)`` standard deviation), by the Monte Carlo simulators (with standard errors of
each point) and by the probes of trained models (without).
"""

from __future__ import annotations

import math

import numpy as np

from varsim._common.validate import check_finite_array

__all__ = ["loglog_fit"]


def _positive_series(name: str, values) -> np.ndarray:
    arr = check_finite_array(name, values, ndim=1, min_size=2)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and positive for a log-log fit")
    return arr


def loglog_fit(x, y, y_se=None) -> dict:
    """Least-squares line through ``(log x, log y)``: ``{"slope", "intercept", "se", "n"}``.

    Without ``y_se``: ordinary least squares (``scipy.stats.linregress``); ``se`` is its slope standard error from
    the residuals, NaN with two points (no residual degrees of freedom).

    With ``y_se`` (the standard error of each ``y``): the error of ``log y`` is ``y_se / y`` (delta method). When
    every one is positive, weighted least squares with weights ``(y / y_se)**2``, whose slope SE is
    ``1 / sqrt(sum w (log x - xbar_w)**2)``; when some are zero (exact points), ordinary least squares with the
    propagated SE ``sqrt(sum a_i**2 (y_se_i / y_i)**2)``, ``a_i`` the OLS weights of the slope.
    """
    from scipy.stats import linregress

    xs = _positive_series("x", x)
    ys = _positive_series("y", y)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have the same length, got {xs.size} and {ys.size}")
    lx, ly = np.log(xs), np.log(ys)
    if np.ptp(lx) == 0:
        raise ValueError("x must take at least two distinct values")
    n = xs.size
    if y_se is not None:
        se_arr = np.asarray(y_se, dtype=np.float64)
        if se_arr.shape != xs.shape or not np.all(np.isfinite(se_arr)) or np.any(se_arr < 0):
            raise ValueError(f"y_se must be {n} finite standard errors >= 0, one per point")
        s_log = se_arr / ys
        if np.all(s_log > 0):  # weighted least squares
            w = 1.0 / s_log**2
            xbar = np.sum(w * lx) / np.sum(w)
            sxx = np.sum(w * (lx - xbar) ** 2)
            slope = float(np.sum(w * (lx - xbar) * ly) / sxx)
            intercept = float(np.sum(w * ly) / np.sum(w) - slope * xbar)
            return {"slope": slope, "intercept": intercept, "se": float(1.0 / math.sqrt(sxx)), "n": n}
    fit = linregress(lx, ly)
    if y_se is None:
        se = float(fit.stderr) if n > 2 else math.nan
    else:  # some exact points: OLS, with the standard errors of the points propagated to the slope
        a = (lx - lx.mean()) / np.sum((lx - lx.mean()) ** 2)
        se = float(math.sqrt(np.sum(a**2 * s_log**2)))
    return {"slope": float(fit.slope), "intercept": float(fit.intercept), "se": se, "n": n}
