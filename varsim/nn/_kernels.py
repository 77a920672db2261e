"""Numba kernels of the transformer's weight maps, each beside its plain NumPy reference (same arguments).

Private: ``varsim.nn.weightmaps`` calls the kernels; the tests compare every kernel with its reference. Compiled on
first call (``cache=True`` keeps the machine code on disk), never at import.

``entmax15_rows(z, mask, tol, out)``: 1.5-entmax of every row of ``z`` (R, T), ``mask`` (R, T) bool (True = the key
takes part; at least one per row) or a (0, 0) array for no mask, into ``out`` (R, T) in ``z``'s dtype. With
``x = (z - max z) / 2`` the weights are ``[x - t]_+^2``, ``t`` the root of ``f(t) = sum_j [x_j - t]_+^2 - 1``:

1. Newton's method from ``t = max x - 1 = -1``, where ``f >= 0``. ``f`` is convex and decreasing, so every step
   stays below the root and the iterates rise to it (quadratically once the support is right):
   ``t += (sum d^2 - 1) / (2 sum d)``, ``d = [x - t]_+``; stop when the step is at most ``tol``.
2. Exact finish on the support ``S = {x > t}``, ``k = |S|``: ``t = mean_S - sqrt((1 - k (meansq_S - mean_S^2)) / k)``
   (the registry's closed form, ``varsim.variants``, at the support's size).

The kernel does both per row, in float64, with the row in L1 cache, and tries the exact finish at every iterate:
when the closed form ``t_c`` on ``S(t)`` lies in ``[t, min_S x)``, ``S(t)`` is the support and ``t_c`` the root,
so a diffuse row (every key in the support, where Newton from -1 only halves its distance per step) is done in
one pass. The reference does the two steps on all rows at once with NumPy passes (float64 sums of ``z``'s dtype)
and stops when every row's step is at most ``tol``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from varsim._common.numba_cache import install as _install_cache

_install_cache()  # before any @njit(cache=True): the cache stamp covers the modules a kernel compiles in

__all__ = ["entmax15_rows", "entmax15_rows_reference", "ENTMAX_MAX_NEWTON"]

#: Newton steps at most (the iterates rise monotonically; a handful suffice unless the support is huge)
ENTMAX_MAX_NEWTON = 100


@nb.njit(nogil=True, cache=True)
def entmax15_rows(z, mask, tol, out):
    r, t_len = z.shape
    has_mask = mask.shape[0] > 0
    x = np.empty(t_len)
    for i in range(r):
        # 1. x = (z - max z) / 2 over the keys that take part; the others at -2, below every threshold (t >= -1)
        m = -np.inf
        for j in range(t_len):
            if (not has_mask or mask[i, j]) and z[i, j] > m:
                m = z[i, j]
        for j in range(t_len):
            x[j] = 0.5 * (z[i, j] - m) if (not has_mask or mask[i, j]) else -2.0
        # 2. Newton's method from below, trying the exact finish (3.) on the current support at every iterate
        t = -1.0
        exact = False
        for _ in range(ENTMAX_MAX_NEWTON):
            s1 = 0.0
            s2 = 0.0
            k = 0
            sx = 0.0
            sxx = 0.0
            lo = np.inf
            for j in range(t_len):
                d = x[j] - t
                if d > 0.0:
                    s1 += d
                    s2 += d * d
                    k += 1
                    sx += x[j]
                    sxx += x[j] * x[j]
                    lo = min(lo, x[j])
            # the closed form on S(t) is the root when S(t) is its own support
            mean = sx / k
            disc = (1.0 - k * (sxx / k - mean * mean)) / k
            if disc >= 0.0:
                tc = mean - math.sqrt(disc)
                if t <= tc < lo:
                    t = tc
                    exact = True
                    break
            step = (s2 - 1.0) / (2.0 * s1)
            t += step
            if step <= tol:
                break
        if not exact:  # 3. the closed form on the support Newton converged to
            k = 0
            sx = 0.0
            sxx = 0.0
            for j in range(t_len):
                if x[j] > t:
                    k += 1
                    sx += x[j]
                    sxx += x[j] * x[j]
            mean = sx / k
            t = mean - math.sqrt(max((1.0 - k * (sxx / k - mean * mean)) / k, 0.0))
        for j in range(t_len):
            d = x[j] - t
            out[i, j] = d * d if d > 0.0 else 0.0


def entmax15_rows_reference(z, mask, tol, out):
    """NumPy reference of :func:`entmax15_rows` (same arguments; ``z`` is not modified)."""
    x = z - z.max(axis=-1, keepdims=True, where=mask if mask.shape[0] else True,
                  initial=-np.inf)
    x *= 0.5
    if mask.shape[0]:
        np.copyto(x, -2.0, where=~mask)
    t = np.full(x.shape[:-1] + (1,), -1.0)
    d = np.empty_like(x)
    for _ in range(ENTMAX_MAX_NEWTON):
        np.subtract(x, t.astype(x.dtype), out=d)
        np.maximum(d, 0.0, out=d)
        s1 = d.sum(axis=-1, keepdims=True, dtype=np.float64)  # >= max x - t > 0
        d *= d
        step = (d.sum(axis=-1, keepdims=True, dtype=np.float64) - 1.0) / (2.0 * s1)
        t += step
        if step.max() <= tol:
            break
    support = x > t.astype(x.dtype)
    k = np.count_nonzero(support, axis=-1)[..., None].astype(np.float64)
    np.multiply(x, support, out=d)
    mean = d.sum(axis=-1, keepdims=True, dtype=np.float64) / k
    d *= d
    meansq = d.sum(axis=-1, keepdims=True, dtype=np.float64) / k
    t = mean - np.sqrt(np.maximum((1.0 - k * (meansq - mean * mean)) / k, 0.0))
    x -= t.astype(x.dtype)
    np.maximum(x, 0.0, out=x)
    x *= x
    out[...] = x
