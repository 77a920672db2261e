"""The Wilson score interval for binomial proportions: varsim's one home for accuracy intervals.

Used by ``varsim.train.evaluate`` (one accuracy per evaluation length) and ``varsim.experiments.stats`` (pooled
and per-seed accuracies); both re-export this very function. It is vectorised (arrays of counts in, arrays of
bounds out) and checked against ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` in the tests;
``benchmarks/bench_wilson.py`` measures how much faster it is than calling scipy per count.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from varsim._common.validate import check_real

__all__ = ["wilson_interval"]


def _counts(name: str, values) -> np.ndarray:
    """``values`` as a float array of whole numbers, or ValueError naming ``name``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be integer counts, got {values!r}") from None
    if not np.all(np.isfinite(arr)) or not np.all(np.mod(arr, 1) == 0):
        raise ValueError(f"{name} must be integer counts, got {values!r}")
    return arr


def wilson_interval(successes, trials, *, confidence: float = 0.95):
    """Wilson score interval ``(low, high)`` for the binomial proportion ``successes / trials``.

    Parameters
    ----------
    successes, trials : int or array_like of int (broadcast together)
        Counts with ``0 <= successes <= trials`` and ``trials >= 1`` (zero trials is refused: no interval is
        defined from no data).
    confidence : float in (0, 1)
        Two-sided coverage; the normal quantile is ``z = Phi^{-1}(1/2 + confidence/2)`` (1.95996... at 0.95).

    Returns
    -------
    (low, high)
        Floats for scalar counts, float arrays of the broadcast shape otherwise. The interval lies in [0, 1] and
        contains ``successes / trials``; at ``successes == 0`` (``== trials``) the low (high) end is exactly 0 (1).

    Unlike the Wald interval ``p +- z sqrt(p(1-p)/n)`` it does not collapse to a point at ``p = 0`` or 1, which
    matters for accuracies near 100% at short lengths and near chance at long ones.
    """
    c = check_real("confidence", confidence, minimum=0.0, strict_min=True)
    if c >= 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    k = _counts("successes", successes)
    n = _counts("trials", trials)
    if np.any(n < 1):
        raise ValueError("trials must be >= 1")
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("successes must lie in [0, trials]")
    z = NormalDist().inv_cdf(0.5 + c / 2)

    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at k = 0 (k = n) the lower (upper) end is exactly 0 (1); do not let rounding say otherwise
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    if low.ndim == 0:
        return float(low), float(high)
    return low, high
