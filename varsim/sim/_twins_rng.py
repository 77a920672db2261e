"""NumPy twins of ``_kernels_rng``: the same generator, request layout and ziggurat, in plain NumPy.

Slow (a Python loop over vector steps) and meant for tests on small sizes: ``draw`` returns bit-for-bit the
variates ``_kernels_rng._draw`` produces from the same state, and advances the state identically.
"""

from __future__ import annotations

import math

import numpy as np

from ._kernels_rng import GAUSSIAN, UNIFORM
from ._rngstate import FIX, LANES, padded_words
from ._ziggurat import LAYER_BITS, LAYERS, kernel_tables

_MASK64 = (1 << 64) - 1
_SQRT3 = math.sqrt(3.0)


def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


def fill_words(state: np.ndarray, n_words: int) -> np.ndarray:
    """Advance the bulk lanes ``n_words / LANES`` steps; words lane-interleaved (vectorised over lanes)."""
    s0, s1, s2, s3 = (state[w, :LANES].copy() for w in range(4))
    out = np.empty((n_words // LANES, LANES), np.uint64)
    for t in range(out.shape[0]):
        out[t] = _rotl(s0 + s3, 23) + s0
        t17 = s1 << np.uint64(17)
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t17
        s3 = _rotl(s3, 45)
    for w, arr in enumerate((s0, s1, s2, s3)):
        state[w, :LANES] = arr
    return out.reshape(-1)


def next_fix(state: np.ndarray) -> int:
    """One word from the fix-up lane, in Python integers (no overflow warnings)."""
    a0, a1, a2, a3 = (int(state[w, FIX]) for w in range(4))
    x = (a0 + a3) & _MASK64
    out = ((((x << 23) | (x >> 41)) & _MASK64) + a0) & _MASK64
    t17 = (a1 << 17) & _MASK64
    a2 ^= a0
    a3 ^= a1
    a1 ^= a2
    a0 ^= a3
    a2 ^= t17
    a3 = ((a3 << 45) | (a3 >> 19)) & _MASK64
    for w, v in enumerate((a0, a1, a2, a3)):
        state[w, FIX] = np.uint64(v)
    return out


def open_uniform(state: np.ndarray) -> float:
    return (float(next_fix(state) >> 11) + 0.5) * 2.0**-53


def zig_tail(state: np.ndarray) -> np.float32:
    """``|Z|`` given ``|Z| > r`` by Marsaglia's tail method, from the fix-up lane (twin of ``_zig_tail``)."""
    tail_edge = float(kernel_tables()[2][LAYERS + 1])
    while True:
        xx = -math.log(open_uniform(state)) / tail_edge
        yy = -math.log(open_uniform(state))
        if yy + yy > xx * xx:
            return np.float32(tail_edge + xx)


def zig_slow(r32: int, state: np.ndarray) -> np.float32:
    """The ziggurat slow path for one rejected 32-bit draw (tail or wedge, restarting from the fix-up lane)."""
    zw, zk, zf = kernel_tables()
    while True:
        idx = r32 & (LAYERS - 1)
        negative = r32 & LAYERS
        u = r32 >> (LAYER_BITS + 1)
        x = np.float32(np.float32(u) * zw[idx])
        if u < zk[idx]:
            return -x if negative else x
        if idx == 0:
            y = zig_tail(state)
            return -y if negative else y
        else:
            y = float(zf[idx]) + open_uniform(state) * (float(zf[idx + 1]) - float(zf[idx]))
            xd = float(x)
            if y < math.exp(-0.5 * xd * xd):
                return -x if negative else x
        r32 = next_fix(state) & 0xFFFFFFFF


def draw(state: np.ndarray, n: int, dist: int) -> np.ndarray:
    """One request of ``n`` float32 variates (twin of ``_kernels_rng._draw``)."""
    zw, zk, _zf = kernel_tables()
    raw = fill_words(state, padded_words(n))
    r32 = raw.view(np.uint32)[:n]
    if dist == GAUSSIAN:
        idx = r32 & np.uint32(LAYERS - 1)
        u = r32 >> np.uint32(LAYER_BITS + 1)
        x = u.astype(np.float32) * zw[idx]
        x = np.where((r32 & np.uint32(LAYERS)) != 0, -x, x)
        for j in np.flatnonzero(u >= zk[idx]):
            x[j] = zig_slow(int(r32[j]), state)
        return x
    if dist == UNIFORM:
        grid = ((r32 >> np.uint32(8)).astype(np.float64) * 2.0 + 1.0) * 2.0**-24 - 1.0
        return (_SQRT3 * grid).astype(np.float32)
    return np.where((r32 >> np.uint32(31)) != 0, np.float32(1.0), np.float32(-1.0)).astype(np.float32)
