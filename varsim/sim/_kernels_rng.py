"""Numba random-number kernels: lane-parallel xoshiro256++, float32 ziggurat normals, fast exp.

Private; every function takes arrays and scalars only, is compiled lazily (``cache=True``) and has a NumPy twin in
``_twins_rng.py`` that reproduces its output bit for bit. Variates are drawn in *requests*: a request for ``n``
variates consumes ``padded_words(n)`` 64-bit words from the bulk lanes, word ``t`` of lane ``l`` landing at
position ``t * LANES + l``; word ``i`` yields variate ``2i`` from its low 32 bits and ``2i + 1`` from its high 32
bits. Variates past ``n`` are discarded. Rejected ziggurat draws are then repaired in index order with words from
the fix-up lane, so the whole request is a deterministic function of the state.

Distributions (all unit variance, float32, one 32-bit draw each): 0 = Gaussian (1024-layer ziggurat, see
``_ziggurat``), 1 = uniform on ``[-sqrt3, sqrt3]`` (24-bit midpoint grid), 2 = Rademacher (top bit).

Why this design: generating random numbers dominates a brute-force simulation. The bulk lanes advance together so
the xoshiro step vectorises (~0.1 ns per word); the ziggurat's fast path is a table lookup, a multiply and a compare;
and two float32 variates come out of every 64-bit word.

Compile time: Numba's IR-level inlining (``inline="always"``) deep-copies the callee's IR at every call site, which
made most of a chunk kernel's compile time. Only ``_exp_shifted`` (which must take its caller's fast-math flags) is
inlined that way; the generator step, the word fill, the slow path and the per-request ``_draw`` are ordinary
functions, compiled once and called (the slow path takes scalars only). A call per request costs reference counting
on its array arguments, which measured below the noise (full sampler at d_k = 8, d_v = 3 and at d = 16 and 64: the
same keys per CPU-second as with ``_draw`` inlined). They now compile with their own strict flags instead of the
streaming kernels' contraction: the uniform's products are exact either way, and only the wedge ordinate of the slow
path could have rounded differently in its last bit (a decision changed with probability ~1e-16 per wedge test; none
in 1765 kernel calls hashed before and after).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from varsim._common.numba_cache import install as _install_cache

from ._rngstate import FIX, LANES
from ._ziggurat import LAYER_BITS, LAYERS, kernel_tables

_install_cache()  # before any @njit(cache=True): the cache stamp covers the modules a kernel compiles in

GAUSSIAN, UNIFORM, RADEMACHER = 0, 1, 2
SPHERE = 3  # keys only: Gaussian requests, each key then scaled to norm sqrt(d_k) (``_kernels_draws``)

_U11 = np.uint64(11)
_U17 = np.uint64(17)
_U19 = np.uint64(19)
_U23 = np.uint64(23)
_U41 = np.uint64(41)
_U45 = np.uint64(45)
_U52 = np.uint64(52)
_U8_32 = np.uint32(8)
_U31_32 = np.uint32(31)
# 32-bit ziggurat draw: bits [0, LAYER_BITS) layer, bit LAYER_BITS sign, the top BITS bits the abscissa
_ZSHIFT = np.uint32(LAYER_BITS + 1)
_ZLAYER = np.uint32(LAYERS - 1)
_ZSIGN = np.uint32(LAYERS)
_ZSHIFT64 = np.uint64(LAYER_BITS + 1)
_ZLAYER64 = np.uint64(LAYERS - 1)
_ZSIGN64 = np.uint64(LAYERS)
_SIGN_SHIFT = np.uint32(31 - LAYER_BITS)  # moves the draw's sign bit onto the float32 sign bit
_TAIL = LAYERS + 1  # index of the tail edge r in zf
_M32 = np.uint64(0xFFFFFFFF)
_TWO_M53 = 2.0**-53
_TWO_M24 = 2.0**-24
_SQRT3 = math.sqrt(3.0)

# exp on (-inf, 0]: exp(t) = 2^k * exp(r), |r| <= ln2/2, Taylor polynomial of degree 13 (truncation < 5e-18).
_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # high bits of ln 2 (exact product with k up to 2^20)
_LN2_LO = 1.9082149292705877e-10
_EXP_FLOOR = -708.0  # exp below this is replaced by exp(-708) ~ 3e-308: invisible next to the maximum term 1
_INV_FACT = tuple(1.0 / math.factorial(i) for i in range(14))
_BIAS = np.int64(1023)

# the tables as the slow path's compiled-in constants (the fast path reads the same arrays, passed as arguments)
_ZW, _ZK, _ZF = kernel_tables()

_JIT = dict(nogil=True, cache=True)
_FAST = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})


@nb.njit(**_JIT)
def _xoshiro_step(a0, a1, a2, a3):
    """One xoshiro256++ step on a state held in four uint64 registers: ``(output word, new state)``."""
    x = a0 + a3
    out = ((x << _U23) | (x >> _U41)) + a0
    t17 = a1 << _U17
    a2 ^= a0
    a3 ^= a1
    a1 ^= a2
    a0 ^= a3
    a2 ^= t17
    a3 = (a3 << _U45) | (a3 >> _U19)
    return out, a0, a1, a2, a3


@nb.njit(**_JIT)
def _fill_words(state, raw, n_words):
    """Advance the bulk lanes ``n_words / LANES`` steps, writing words lane-interleaved into ``raw``."""
    s0 = state[0]
    s1 = state[1]
    s2 = state[2]
    s3 = state[3]
    for t in range(n_words // LANES):
        base = t * LANES
        for lane in range(LANES):
            a0 = s0[lane]
            a1 = s1[lane]
            a2 = s2[lane]
            a3 = s3[lane]
            raw[base + lane], a0, a1, a2, a3 = _xoshiro_step(a0, a1, a2, a3)
            s0[lane] = a0
            s1[lane] = a1
            s2[lane] = a2
            s3[lane] = a3


@nb.njit(**_JIT)
def _open_uniform(a0, a1, a2, a3):
    """A float64 uniform on the open interval (0, 1) from the fix-up lane ``(a0, .., a3)``: ``(u, new lane)``."""
    word, a0, a1, a2, a3 = _xoshiro_step(a0, a1, a2, a3)
    return (np.float64(word >> _U11) + 0.5) * _TWO_M53, a0, a1, a2, a3


@nb.njit(**_JIT)
def _zig_tail(a0, a1, a2, a3):
    """A draw of ``|Z|`` conditioned on ``|Z| > r`` (``r = x[1]``, the base-strip edge), by Marsaglia's exact tail
    method (J. Stat. Softw. 5(8), 2000), from the fix-up lane: ``(float32 variate, new lane)``. Its own function so
    that the tail certificate's planted defects (``tests/rng_mutants.py``) can replace it or its constant."""
    tail_edge = _ZF[_TAIL]
    while True:
        u1, a0, a1, a2, a3 = _open_uniform(a0, a1, a2, a3)
        u2, a0, a1, a2, a3 = _open_uniform(a0, a1, a2, a3)
        xx = -math.log(u1) / tail_edge
        yy = -math.log(u2)
        if yy + yy > xx * xx:
            return np.float32(tail_edge + xx), a0, a1, a2, a3


@nb.njit(**_JIT)
def _zig_slow(r32, a0, a1, a2, a3):
    """Finish a ziggurat draw whose fast test failed: tail (layer 0) or wedge, restarting as needed, with the fix-up
    lane ``(a0, .., a3)``: ``(float32 variate, new lane)``. Scalars only (the tables are compiled-in constants), so a
    call costs no reference counting; rare enough (~0.4% of draws) not to be inlined."""
    while True:
        idx = r32 & _ZLAYER64
        negative = (r32 & _ZSIGN64) != 0
        u = r32 >> _ZSHIFT64
        x = np.float32(np.float32(u) * _ZW[idx])
        if u < _ZK[idx]:
            return (-x if negative else x), a0, a1, a2, a3
        if idx == 0:
            y, a0, a1, a2, a3 = _zig_tail(a0, a1, a2, a3)
            return (-y if negative else y), a0, a1, a2, a3
        else:
            u1, a0, a1, a2, a3 = _open_uniform(a0, a1, a2, a3)
            y = _ZF[idx] + u1 * (_ZF[idx + 1] - _ZF[idx])
            xd = np.float64(x)
            if y < math.exp(-0.5 * xd * xd):
                return (-x if negative else x), a0, a1, a2, a3
        word, a0, a1, a2, a3 = _xoshiro_step(a0, a1, a2, a3)
        r32 = word & _M32


@nb.njit(**_JIT)
def _scratch(n_variates):
    """Scratch of requests of up to ``n_variates``: raw words and their uint32 view, each slot's ziggurat width and
    limit, repair flags and the flags viewed as uint64 (8 at a time). Views are made once per chunk, not per request
    (a view costs reference-count traffic)."""
    n_words = ((n_variates + 2 * LANES - 1) // (2 * LANES)) * LANES
    raw = np.empty(n_words, np.uint64)
    bad = np.zeros(2 * n_words, np.uint8)
    return raw, raw.view(np.uint32), np.empty(2 * n_words, np.float32), np.empty(2 * n_words, np.uint32), bad, \
        bad.view(np.uint64)


@nb.njit(**_JIT)
def _draw(state, scratch, out, out_bits, n, dist, zw, zk, zf):
    """Fill ``out[:n]`` with ``n`` float32 variates of distribution ``dist`` (one request).

    ``scratch`` comes from ``_scratch`` (``r32`` views the raw words little-endian: variate ``2i`` is the low half of
    word ``i``); ``out`` has room for ``2 * padded_words(n)`` variates (slots past ``n`` are scratch) and ``out_bits``
    is ``out.view(np.uint32)``.
    """
    raw, r32, width, limit, bad, flags = scratch
    n_words = ((n + 2 * LANES - 1) // (2 * LANES)) * LANES
    _fill_words(state, raw, n_words)
    n_slots = 2 * n_words
    if dist == GAUSSIAN:
        # fast path for every slot (|x| = u * w[layer]), flagging the ~0.4% of slots it cannot decide. The table
        # look-ups are a scalar loop of their own (vector gathers are slower on some CPUs, and the compiler then
        # keeps the whole loop scalar); what follows vectorises: the product, the test, and the sign put in as a
        # bit flip (25% faster than a select per draw)
        for j in range(n_slots):
            idx = r32[j] & _ZLAYER
            width[j] = zw[idx]
            limit[j] = zk[idx]
        for j in range(n_slots):
            u = r32[j] >> _ZSHIFT
            out[j] = np.float32(u) * width[j]
            bad[j] = 1 if u >= limit[j] else 0
        for j in range(n_slots):
            out_bits[j] ^= (r32[j] & _ZSIGN) << _SIGN_SHIFT
        # repair flagged slots in index order; skip clean runs of 8 slots with one 64-bit test
        for g in range((n + 7) // 8):
            if flags[g] != 0:
                for j in range(8 * g, min(8 * g + 8, n)):
                    if bad[j] != 0:
                        out[j], state[0, FIX], state[1, FIX], state[2, FIX], state[3, FIX] = _zig_slow(
                            np.uint64(r32[j]), state[0, FIX], state[1, FIX], state[2, FIX], state[3, FIX])
    elif dist == UNIFORM:
        for j in range(n_slots):
            out[j] = np.float32(_SQRT3 * ((np.float64(r32[j] >> _U8_32) * 2.0 + 1.0) * _TWO_M24 - 1.0))
    else:
        for j in range(n_slots):
            out[j] = np.float32(1.0) if (r32[j] >> _U31_32) != 0 else np.float32(-1.0)


@nb.njit(nogil=True, cache=True, inline="always")  # inherits the caller's fast-math flags when inlined
def _exp_shifted(s, m, e, bits, pw, n):
    """``e[i] = exp(s[i] - m)`` for ``i < n`` with ``s[i] <= m`` (vectorisable; relative error ~1e-16).

    ``bits`` (uint64) and ``pw = bits.view(np.float64)`` are scratch: the power ``2^k`` is assembled in its bits.
    """
    for i in range(n):
        t = max(s[i] - m, _EXP_FLOOR)
        kf = math.floor(t * _LOG2E + 0.5)
        r = (t - kf * _LN2_HI) - kf * _LN2_LO
        p = _INV_FACT[13]
        p = p * r + _INV_FACT[12]
        p = p * r + _INV_FACT[11]
        p = p * r + _INV_FACT[10]
        p = p * r + _INV_FACT[9]
        p = p * r + _INV_FACT[8]
        p = p * r + _INV_FACT[7]
        p = p * r + _INV_FACT[6]
        p = p * r + _INV_FACT[5]
        p = p * r + _INV_FACT[4]
        p = p * r + _INV_FACT[3]
        p = p * r + _INV_FACT[2]
        p = p * r + 1.0
        p = p * r + 1.0
        bits[i] = np.uint64(np.int64(kf) + _BIAS) << _U52
        e[i] = p
    for i in range(n):
        e[i] *= pw[i]


@nb.njit(**_JIT)
def draw_variates(state, n, dist, zw, zk, zf):
    """Test entry point: one request of ``n`` variates as a new float32 array (advances ``state``)."""
    scratch = _scratch(n)
    out = np.empty(2 * scratch[0].size, np.float32)
    _draw(state, scratch, out, out.view(np.uint32), n, dist, zw, zk, zf)
    return out[:n].copy()


@nb.njit(**_FAST)  # the same flags as the chunk kernels that inline _exp_shifted
def exp_shifted(s, m):
    """Test entry point for ``_exp_shifted``."""
    n = s.size
    e = np.empty(n)
    bits = np.empty(n, np.uint64)
    _exp_shifted(s, m, e, bits, bits.view(np.float64), n)
    return e
