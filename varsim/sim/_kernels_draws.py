"""One routine per sampler: the draw order and the per-block work of every chunk kernel, inlined into each kernel.

Private. A chunk runs ``n_seq`` independent sequences of ``n_keys`` keys from one generator state (``_kernels_rng``).
The draw order is what makes a kernel agree with its NumPy twin (``_twins_draws`` is the same routine in NumPy) and
what pairs the variants (every kernel of one sampler draws the same variates from one state). Per sequence:

- full sampler (:class:`~._kernel_args.FullSampler`): ``d_k`` Gaussian query coordinates (random query only), then
  per block of ``nb <= KEY_BLOCK`` keys one request of ``nb * d_k`` key variates (row-major, key by key) followed by
  one request of ``nb * d_v`` value variates (row-major);
- logits sampler (:class:`~._kernel_args.LogitsSampler`): one request of ``d_k`` Gaussian query variates (random
  query only), then per block of ``nb <= LOGIT_BLOCK`` keys one request of ``nb`` Gaussian logit variates and, when
  ``d_v > 0``, one request of ``nb * d_v`` value variates (key-major).

What happens to a block is chosen by ``keep``, a constant of the calling kernel:

- ``keep=False`` (``_kernels_attn``, softmax at a rescaled logit scale): an *online*, max-subtracted softmax. The
  running maximum ``m`` of the logits only grows, and whenever a block raises it the accumulated sums are rescaled by
  ``exp(m_old - m_new)``; every exponent is <= 0, so logits of any size give finite outputs. Values enter linearly,
  ``v_i = mu + sigma (A k_i + c eps_i)`` (``A = 0``, ``c = 1`` without coupling), so the routine accumulates
  ``sum_i e_i eps_i`` and ``sum_i e_i k_i`` and applies ``sigma``, ``A`` once per sequence. It writes the
  deviation ``o - mu`` (``mu`` cancels: with weights summing to 1, ``o - mu = sigma sum_i w_i (A k_i + c eps_i)``,
  so a value mean of 1e8 with a value scale of 1e-8 keeps every digit) and ``sum w^2``. Neither K nor V is stored
  beyond one block.
- ``keep=True`` (``_kernels_map``, maps that need every logit): the sequence's logits and value rows
  ``A k_i + c eps_i`` are kept, and ``finish(seq, logits, core, p, o_out, y2_out, extra)`` reduces them.

The routines are inlined at Numba-IR level (``inline="always"``) once per chunk, so they compile with the calling
kernel's flags (fast-math in the streaming kernels, strict in the map kernels; the float64 results depend on them)
and the branch not taken is removed. Each request calls ``_kernels_rng._draw``, an ordinary compiled function (IR
inlining copies the callee's IR at every call site, which once made most of the compile time). They compile only
inside a kernel; importing this module compiles nothing. An edit here recompiles the
kernels that inline it: their cache stamp covers every module of the package they import
(``varsim._common.numba_cache``).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from varsim._common.numba_cache import install as _install_cache

from ._kernel_args import KEY_BLOCK, LOGIT_BLOCK
from ._kernels_rng import GAUSSIAN, SPHERE, _draw, _exp_shifted, _scratch

_install_cache()  # before any @njit(cache=True): the cache stamp covers the modules a kernel compiles in

_INLINE = dict(nogil=True, cache=True, inline="always")


@nb.njit(**_INLINE)
def _rescale(acc, c):
    for j in range(acc.size):
        acc[j] *= c


@nb.njit(**_INLINE)
def _block_buffers(n_keys, block, keep, d_v):
    """The logits of the sequence (``keep``) or block, the kept value rows, ``e`` and ``_exp_shifted``'s bits."""
    n, bits = n_keys if keep else block, np.empty(block, np.uint64)
    return np.empty(n), np.empty((n if keep else 0, d_v)), np.empty(block), bits, bits.view(np.float64)


@nb.njit(**_INLINE)
def _raise_max(m, mb, s1, s2, acc_v, acc_k, coupled):
    """Online softmax: a block maximum ``mb`` above ``m`` rescales the sums by ``exp(m - mb)``; new (m, s1, s2)."""
    if mb > m:
        c = math.exp(m - mb)
        s1 *= c
        s2 *= c * c
        _rescale(acc_v, c)
        if coupled:
            _rescale(acc_k, c)
        m = mb
    return m, s1, s2


@nb.njit(**_INLINE)
def _normalise(seq, s1, s2, acc_v, acc_k, a_mat, noise, sigma, coupled, o_out, y2_out):
    """Once per sequence: ``sum w^2`` and ``o - mu = sigma (A acc_k + noise acc_v) / s1`` (A = 0 uncoupled)."""
    inv = 1.0 / s1
    y2_out[seq] = s2 * inv * inv
    for c_ in range(o_out.shape[1]):
        if coupled:
            ak = 0.0
            for j in range(acc_k.size):
                ak += a_mat[c_, j] * acc_k[j]
            o_out[seq, c_] = sigma * (ak + noise * acc_v[c_]) * inv
        else:
            o_out[seq, c_] = sigma * acc_v[c_] * inv


@nb.njit(**_INLINE)
def _f32_buffer(n):
    """A float32 draw buffer of ``n`` and its bits."""
    buf = np.empty(n, np.float32)
    return buf, buf.view(np.uint32)


@nb.njit(**_INLINE)
def _scale_into(q, scale, x):
    """``q = scale * x`` in float64 (the sequence's scaled query)."""
    for j in range(q.size):
        q[j] = scale * np.float64(x[j])


@nb.njit(**_INLINE)
def _add_scaled(acc, c, buf, row):
    """``acc += c * buf[row : row + acc.size]`` in float64 (one key's term of a weighted sum)."""
    for j in range(acc.size):
        acc[j] += c * np.float64(buf[row + j])


@nb.njit(**_INLINE)
def _value_rows(core, start, nb_, d_k, d_v, kbuf, vbuf, a_mat, noise, coupled):
    """The kept value rows ``A k_i + c eps_i`` of a block of ``nb_`` keys from key ``start`` (``eps`` alone
    uncoupled)."""
    for i in range(nb_):
        for c_ in range(d_v):
            val = np.float64(vbuf[i * d_v + c_])
            if coupled:
                ak = 0.0
                for j in range(d_k):
                    ak += a_mat[c_, j] * np.float64(kbuf[i * d_k + j])
                val = ak + noise * val
            core[start + i, c_] = val


@nb.njit(nogil=True, cache=True)
def _to_sphere(kbuf, n_rows, d_k):
    """Scale each of the ``n_rows`` Gaussian keys in ``kbuf`` (row-major, ``d_k`` each) to norm ``sqrt(d_k)``: a
    uniform direction, coordinates of unit variance (the sum of squares in index order, as the twin)."""
    for i in range(n_rows):
        row = i * d_k
        r2 = 0.0
        for j in range(d_k):
            g = np.float64(kbuf[row + j])
            r2 += g * g
        f = math.sqrt(d_k / r2)
        for j in range(d_k):
            kbuf[row + j] = np.float32(np.float64(kbuf[row + j]) * f)


@nb.njit(nogil=True, cache=True)
def _sphere_cosine(gbuf, row, d_k):
    """``sqrt(d_k) z_1 / |z|`` for the Gaussian vector ``z = gbuf[row:row + d_k]`` (squares summed in index order)."""
    r2 = 0.0
    for j in range(d_k):
        g = np.float64(gbuf[row + j])
        r2 += g * g
    return math.sqrt(d_k / r2) * np.float64(gbuf[row])


@nb.njit(**_INLINE)
def full_sampler(state, p, tables, o_out, y2_out, keep, finish, extra):
    """Run a full-sampler chunk (``p`` a ``FullSampler``): ``o_out`` float64[n_seq, d_v], ``y2_out`` float64[n_seq];
    ``keep``, ``finish`` and ``extra`` as in the module docstring (``finish`` is not called without ``keep``)."""
    n_seq, d_v = o_out.shape
    d_k = p.q_fixed.size
    n_keys = p.n_keys
    q_fixed = p.q_fixed
    random_query = p.random_query
    scale = p.scale
    key_dist = p.key_dist
    value_dist = p.value_dist
    coupled = p.coupled
    a_mat = p.a_mat
    noise = p.noise
    sigma = p.sigma
    zw, zk, zf = tables
    scratch = _scratch(max(KEY_BLOCK * max(d_k, d_v), d_k))
    slots = 2 * scratch[0].size  # variates of the largest request, padding included
    kbuf, kbuf_bits = _f32_buffer(slots)
    vbuf, vbuf_bits = _f32_buffer(slots)
    qbuf, qbuf_bits = _f32_buffer(slots)
    q = np.empty(d_k)
    s, core, e, bits, pw = _block_buffers(n_keys, KEY_BLOCK, keep, d_v)
    acc_v = np.empty(d_v)
    acc_k = np.empty(d_k)
    for seq in range(n_seq):
        # -- phase 1: the (scaled) query of this sequence
        if random_query:
            _draw(state, scratch, qbuf, qbuf_bits, d_k, GAUSSIAN, zw, zk, zf)
            _scale_into(q, scale, qbuf)
        else:
            _scale_into(q, scale, q_fixed)
        m = -np.inf
        s1 = 0.0
        s2 = 0.0
        acc_v[:] = 0.0
        acc_k[:] = 0.0
        for start in range(0, n_keys, KEY_BLOCK):
            # -- phase 2: draw a block of keys and form its logits q.k_i
            nb_ = min(KEY_BLOCK, n_keys - start)
            off = start if keep else 0
            _draw(state, scratch, kbuf, kbuf_bits, nb_ * d_k, GAUSSIAN if key_dist == SPHERE else key_dist, zw, zk,
                  zf)
            if key_dist == SPHERE:
                _to_sphere(kbuf, nb_, d_k)
            mb = -np.inf
            for i in range(nb_):
                dot = 0.0
                row = i * d_k
                for j in range(d_k):
                    dot += q[j] * np.float64(kbuf[row + j])
                s[off + i] = dot
                mb = max(mb, dot)
            # -- phase 3: draw the block's value noise
            _draw(state, scratch, vbuf, vbuf_bits, nb_ * d_v, value_dist, zw, zk, zf)
            if keep:  # -- phase 4 (keep): the value rows A k_i + c eps_i
                _value_rows(core, start, nb_, d_k, d_v, kbuf, vbuf, a_mat, noise, coupled)
                continue
            # -- phase 4: online softmax; the running maximum grows: rescale what was accumulated under the old one
            m, s1, s2 = _raise_max(m, mb, s1, s2, acc_v, acc_k, coupled)
            # -- phase 5: accumulate e_i = exp(logit_i - m), e_i^2, e_i eps_i and (coupling) e_i k_i
            _exp_shifted(s, m, e, bits, pw, nb_)
            for i in range(nb_):
                ei = e[i]
                s1 += ei
                s2 += ei * ei
                _add_scaled(acc_v, ei, vbuf, i * d_v)
                if coupled:
                    _add_scaled(acc_k, ei, kbuf, i * d_k)
        if keep:
            finish(seq, s, core, p, o_out, y2_out, extra)
            continue
        # -- phase 6: normalise once per sequence
        _normalise(seq, s1, s2, acc_v, acc_k, a_mat, noise, sigma, coupled, o_out, y2_out)


@nb.njit(**_INLINE)
def logits_sampler(state, p, tables, o_out, y2_out, keep, finish, extra):
    """Run a logits-sampler chunk (``p`` a ``LogitsSampler``): ``o_out`` float64[n_seq, d_v] (``d_v = 0``: no values
    are drawn at all, the Rao-Blackwell path), ``y2_out`` float64[n_seq]; ``keep``, ``finish``, ``extra`` as in the
    module docstring."""
    n_seq, d_v = o_out.shape
    n_keys = p.n_keys
    d_k = p.d_k
    beta_fixed = p.beta_fixed
    random_query = p.random_query
    scale = p.scale
    value_dist = p.value_dist
    sigma = p.sigma
    sphere = p.key_dist == SPHERE
    zw, zk, zf = tables
    scratch = _scratch(max(LOGIT_BLOCK * max(d_v, d_k if sphere else 1), d_k))
    slots = 2 * scratch[0].size  # variates of the largest request, padding included
    gbuf, gbuf_bits = _f32_buffer(slots)
    vbuf, vbuf_bits = _f32_buffer(slots)
    s, core, e, bits, pw = _block_buffers(n_keys, LOGIT_BLOCK, keep, d_v)
    acc_v = np.empty(max(d_v, 1))
    for seq in range(n_seq):
        # -- phase 1: the logit scale of this sequence (random query: beta = scale |q|, |q|^2 ~ chi^2_{d_k})
        beta = beta_fixed
        if random_query:
            _draw(state, scratch, gbuf, gbuf_bits, d_k, GAUSSIAN, zw, zk, zf)
            r2 = 0.0
            for j in range(d_k):
                g = np.float64(gbuf[j])
                r2 += g * g
            beta = scale * math.sqrt(r2)
        m = -np.inf
        s1 = 0.0
        s2 = 0.0
        acc_v[:] = 0.0
        for start in range(0, n_keys, LOGIT_BLOCK):
            # -- phase 2: draw a block of logits beta g_i (and the block's value noise)
            nb_ = min(LOGIT_BLOCK, n_keys - start)
            off = start if keep else 0
            block_max = -np.inf
            if sphere:
                _draw(state, scratch, gbuf, gbuf_bits, nb_ * d_k, GAUSSIAN, zw, zk, zf)
                for i in range(nb_):
                    si = beta * _sphere_cosine(gbuf, i * d_k, d_k)
                    s[off + i] = si
                    block_max = max(block_max, si)
            else:
                _draw(state, scratch, gbuf, gbuf_bits, nb_, GAUSSIAN, zw, zk, zf)
                for i in range(nb_):
                    si = beta * np.float64(gbuf[i])
                    s[off + i] = si
                    block_max = max(block_max, si)
            if d_v > 0:
                _draw(state, scratch, vbuf, vbuf_bits, nb_ * d_v, value_dist, zw, zk, zf)
            if keep:  # -- phase 3 (keep): the value rows eps_i
                _value_rows(core, start, nb_, 0, d_v, vbuf, vbuf, core, 0.0, False)
                continue
            # -- phase 3: online softmax; the running maximum grows: rescale what was accumulated under the old one
            m, s1, s2 = _raise_max(m, block_max, s1, s2, acc_v, acc_v, False)
            # -- phase 4: accumulate e_i, e_i^2 and e_i eps_i
            _exp_shifted(s, m, e, bits, pw, nb_)
            t1 = 0.0
            t2 = 0.0
            for i in range(nb_):
                t1 += e[i]
                t2 += e[i] * e[i]
            s1 += t1
            s2 += t2
            if d_v > 0:
                for i in range(nb_):
                    _add_scaled(acc_v, e[i], vbuf, i * d_v)
        if keep:
            finish(seq, s, core, p, o_out, y2_out, extra)
            continue
        # -- phase 5: normalise once per sequence
        _normalise(seq, s1, s2, acc_v, acc_v, core, 0.0, sigma, False, o_out, y2_out)
