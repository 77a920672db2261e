"""Tables of the ziggurat for the standard normal (Marsaglia & Tsang, J. Stat. Softw. 5(8), 2000).

The tables are *computed* here (not copied): the base-strip edge ``r`` is the root of the condition that
``layers`` equal-area strips exactly tile ``f(x) = exp(-x^2/2)`` on ``x >= 0``, and the strip edges follow from it
by the recursion ``f(x_{i+1}) = f(x_i) + v / x_i``. Both the Numba kernels and their NumPy twins read the same
arrays, so the two implementations transform the same raw bits into the same float32 normals.

The kernels use ``LAYERS = 1024`` strips rather than the classic 256: one 32-bit draw gives 10 bits of layer, one
sign bit and ``BITS = 21`` bits of abscissa, and only ~0.4% of draws (instead of ~1.5%) fall outside the fast path,
which matters because the slow path (an ``exp`` and an extra draw) costs ~50 fast draws.

Layout (layer ``i = 0..L-1``): ``x[0] = v / f(r)`` is the pseudo-width of the base strip (rectangle plus tail),
``x[1] = r`` and ``x[i]`` decreases to ``x[L] = 0``. A ``BITS``-bit uniform integer ``u`` in layer ``i`` gives
``X = u * w[i]`` with ``w[i] = x[i] / 2^BITS``; it is accepted at once when ``u < k[i] = floor(2^BITS x[i+1]/x[i])``
(the point lies inside the next, narrower strip, hence under the curve); otherwise the slow path (tail or wedge)
decides exactly.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.special import erfc

__all__ = ["LAYERS", "LAYER_BITS", "BITS", "ziggurat_tables", "kernel_tables"]

LAYER_BITS = 10
LAYERS = 1 << LAYER_BITS
BITS = 32 - LAYER_BITS - 1  # abscissa bits per 32-bit draw, after the layer index and the sign bit


def _f(x):
    return math.exp(-0.5 * x * x)


def _finv(y):
    return math.sqrt(-2.0 * math.log(y))


def _strip_area(r: float) -> float:
    """Area of the base strip: rectangle ``r f(r)`` plus the tail ``int_r^inf f``."""
    return r * _f(r) + math.sqrt(math.pi / 2) * erfc(r / math.sqrt(2))


def _top_excess(r: float, layers: int) -> float:
    """Zero exactly when the strips of equal area close at the top, ``f(x_{L-1}) + v/x_{L-1} = 1``; positive
    when ``r`` is too small (the strips reach the top early), negative when too large."""
    v = _strip_area(r)
    x = r
    for _ in range(layers - 2):
        y = _f(x) + v / x
        if y >= 1.0:
            return 1.0
        x = _finv(y)
    return _f(x) + v / x - 1.0


@lru_cache(maxsize=4)
def ziggurat_tables(layers: int = LAYERS, bits: int = BITS):
    """``(r, v, x, w, k, f)``: edge, strip area, float64 edges ``x[0..layers]``, float32 widths ``w``, uint32
    acceptance limits ``k`` and float64 ``f(x[i])`` (``f[0]`` belongs to the pseudo-width and is unused)."""
    r = brentq(_top_excess, 2.5, 5.0, args=(layers,), xtol=1e-15, rtol=1e-15, maxiter=200)
    v = _strip_area(r)
    x = np.empty(layers + 1)
    x[0] = v / _f(r)
    x[1] = r
    for i in range(1, layers - 1):
        x[i + 1] = _finv(_f(x[i]) + v / x[i])
    x[layers] = 0.0
    scale = float(2**bits)
    w = (x[:layers] / scale).astype(np.float32)
    k = np.floor(scale * x[1:] / x[:layers]).astype(np.uint32)
    f = np.exp(-0.5 * x * x)
    return r, v, x, w, k, f


@lru_cache(maxsize=1)
def kernel_tables():
    """The arrays the kernels and twins take: ``(zw, zk, zf)`` with ``zw`` float32[L] widths, ``zk`` uint32[L]
    acceptance limits and ``zf`` float64[L+2] = ``f(x[0..L])`` followed by the tail edge ``r`` (read-only)."""
    r, _v, _x, w, k, f = ziggurat_tables()
    zf = np.append(f, r)
    for arr in (w, k, zf):
        arr.setflags(write=False)
    return w, k, zf
