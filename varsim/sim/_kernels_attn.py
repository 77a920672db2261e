"""Numba chunk kernels: sample sequences and reduce each to its attention output ``o`` and IPR ``sum_i w_i^2``.

Private. A chunk kernel runs ``n_seq`` independent sequences of ``n_keys`` keys from one generator state (see
``_kernels_rng``) and writes per-sequence results; the driver turns them into statistics. Keys are processed in
blocks with an *online*, max-subtracted softmax: the running maximum ``m`` of the logits only grows, and whenever a
block raises it, the accumulated sums are rescaled by ``exp(m_old - m_new)``. Every exponent is therefore <= 0, so
logits of any size give finite outputs (a logit scale of 1000 returns ``v_argmax`` when the top gap is large).
Neither K nor V is stored beyond one block.

Values enter linearly, ``v_i = mu + sigma (A k_i + c eps_i)`` (``A = 0``, ``c = 1`` without coupling), so the kernel
accumulates ``sum_i e_i eps_i`` and ``sum_i e_i k_i`` and applies ``mu``, ``sigma``, ``A`` once per sequence:
the same ``o`` as materialising every ``v_i``, at a fraction of the cost.

Outputs are *deviations* ``o - mu`` from the (known) value mean: with weights summing to 1, ``o - mu = sigma sum_i w_i
(A k_i + c eps_i)`` does not involve ``mu`` at all, so a value mean of 1e8 with a value scale of 1e-8 keeps every digit
of the variance (forming ``mu + deviation`` first would round the deviation away). The driver adds ``mu`` back where a
mean is reported.

Each kernel has a NumPy twin in ``_twins_attn.py`` with the same arguments that draws the same variates, materialises
q, K and V explicitly and evaluates ``softmax(scale q.K^T) V - mu`` directly.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ._kernels_rng import GAUSSIAN, _draw, _exp_shifted, _scratch

KEY_BLOCK = 32  # keys per block in the full sampler (a block of keys and values stays in L1)
LOGIT_BLOCK = 1024  # logits per block in the logits sampler

_FAST = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})


@nb.njit(nogil=True, cache=True, inline="always")
def _rescale(acc, c):
    for j in range(acc.size):
        acc[j] *= c


@nb.njit(**_FAST)
def full_chunk(
    state, n_keys, q_fixed, random_query, scale, key_dist, value_dist, coupled, a_mat, noise,
    mu, sigma, zw, zk, zf, o_out, y2_out,
):
    """Full sampler: draw q (if random), K and V for each sequence; ``o_out[s]`` and ``y2_out[s]`` per sequence.

    Arguments: generator ``state``; ``n_keys`` = N; ``q_fixed`` (float64[d_k], ignored with ``random_query``);
    ``scale = tau / sqrt(d_k)``; distribution codes ``key_dist``, ``value_dist``; ``coupled`` with ``a_mat``
    (float64[d_v, d_k]) and ``noise``; value mean ``mu`` (float64[d_v]; it cancels from ``o - mu`` and is taken for
    the twin's sake) and scale ``sigma``; ziggurat tables; outputs ``o_out`` (float64[n_seq, d_v], ``o - mu``) and
    ``y2_out`` (float64[n_seq]).

    Per sequence the draws are, in order: ``d_k`` Gaussian query coordinates (random query only), then per block
    of ``nb <= KEY_BLOCK`` keys one request of ``nb * d_k`` key variates (row-major, key by key) followed by one
    request of ``nb * d_v`` value variates (row-major).
    """
    n_seq, d_v = o_out.shape
    d_k = q_fixed.size
    raw, r32, bad, flags = _scratch(max(KEY_BLOCK * max(d_k, d_v), d_k))
    kbuf = np.empty(bad.size, np.float32)
    vbuf = np.empty(bad.size, np.float32)
    qbuf = np.empty(bad.size, np.float32)
    kbuf_bits = kbuf.view(np.uint32)
    vbuf_bits = vbuf.view(np.uint32)
    qbuf_bits = qbuf.view(np.uint32)
    q = np.empty(d_k)
    s = np.empty(KEY_BLOCK)
    e = np.empty(KEY_BLOCK)
    bits = np.empty(KEY_BLOCK, np.uint64)
    pw = bits.view(np.float64)
    acc_v = np.empty(d_v)
    acc_k = np.empty(d_k)
    for seq in range(n_seq):
        # -- phase 1: the (scaled) query of this sequence
        if random_query:
            _draw(state, raw, r32, bad, flags, qbuf, qbuf_bits, d_k, GAUSSIAN, zw, zk, zf)
            for j in range(d_k):
                q[j] = scale * np.float64(qbuf[j])
        else:
            for j in range(d_k):
                q[j] = scale * q_fixed[j]
        m = -np.inf
        s1 = 0.0
        s2 = 0.0
        acc_v[:] = 0.0
        acc_k[:] = 0.0
        for start in range(0, n_keys, KEY_BLOCK):
            # -- phase 2: draw a block of keys and form its logits q.k_i
            nb_ = min(KEY_BLOCK, n_keys - start)
            _draw(state, raw, r32, bad, flags, kbuf, kbuf_bits, nb_ * d_k, key_dist, zw, zk, zf)
            mb = -np.inf
            for i in range(nb_):
                dot = 0.0
                row = i * d_k
                for j in range(d_k):
                    dot += q[j] * np.float64(kbuf[row + j])
                s[i] = dot
                mb = max(mb, dot)
            # -- phase 3: draw the block's value noise
            _draw(state, raw, r32, bad, flags, vbuf, vbuf_bits, nb_ * d_v, value_dist, zw, zk, zf)
            # -- phase 4: online softmax; the running maximum grows: rescale what was accumulated under the old one
            if mb > m:
                c = math.exp(m - mb)
                s1 *= c
                s2 *= c * c
                _rescale(acc_v, c)
                if coupled:
                    _rescale(acc_k, c)
                m = mb
            # -- phase 5: accumulate e_i = exp(logit_i - m), e_i^2, e_i eps_i and (coupling) e_i k_i
            _exp_shifted(s, m, e, bits, pw, nb_)
            for i in range(nb_):
                ei = e[i]
                s1 += ei
                s2 += ei * ei
                row = i * d_v
                for c_ in range(d_v):
                    acc_v[c_] += ei * np.float64(vbuf[row + c_])
                if coupled:
                    row = i * d_k
                    for j in range(d_k):
                        acc_k[j] += ei * np.float64(kbuf[row + j])
        # -- phase 6: normalise once per sequence: sum w^2 and o - mu = sigma (A acc_k + noise acc_v) / s1
        inv = 1.0 / s1
        y2_out[seq] = s2 * inv * inv
        if coupled:
            for c_ in range(d_v):
                ak = 0.0
                for j in range(d_k):
                    ak += a_mat[c_, j] * acc_k[j]
                o_out[seq, c_] = sigma * (ak + noise * acc_v[c_]) * inv
        else:
            for c_ in range(d_v):
                o_out[seq, c_] = sigma * acc_v[c_] * inv


@nb.njit(**_FAST)
def logits_chunk(
    state, n_keys, beta_fixed, random_query, d_k, scale, value_dist, mu, sigma, zw, zk, zf, o_out, y2_out,
):
    """Logits sampler (i.i.d. Gaussian keys): given q, draw the logits ``beta g_i`` directly.

    ``beta = scale * |q|`` with ``|q|^2`` a sum of ``d_k`` squared Gaussians per sequence (random query, an exact
    chi^2_{d_k} draw) or ``beta_fixed``; ``value_dist``, ``mu`` (float64[d_v], cancels from ``o - mu``) and
    ``sigma`` describe the values; ``o_out`` is float64[n_seq, d_v] (``o - mu``; ``d_v = 0``: no values are drawn at
    all, the Rao-Blackwell path) and ``y2_out`` float64[n_seq].

    Per sequence the draws are: one request of ``d_k`` query variates (random query only); then per block of
    ``nb <= LOGIT_BLOCK`` keys one request of ``nb`` logit variates and, with values, one request of ``nb * d_v``
    value variates (key-major).
    """
    n_seq, d_v = o_out.shape
    raw, r32, bad, flags = _scratch(max(LOGIT_BLOCK * max(d_v, 1), d_k))
    gbuf = np.empty(bad.size, np.float32)
    vbuf = np.empty(bad.size, np.float32)
    gbuf_bits = gbuf.view(np.uint32)
    vbuf_bits = vbuf.view(np.uint32)
    s = np.empty(LOGIT_BLOCK)
    e = np.empty(LOGIT_BLOCK)
    bits = np.empty(LOGIT_BLOCK, np.uint64)
    pw = bits.view(np.float64)
    acc_v = np.empty(max(d_v, 1))
    for seq in range(n_seq):
        # -- phase 1: the logit scale of this sequence (random query: beta = scale |q|, |q|^2 ~ chi^2_{d_k})
        beta = beta_fixed
        if random_query:
            _draw(state, raw, r32, bad, flags, gbuf, gbuf_bits, d_k, GAUSSIAN, zw, zk, zf)
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
            _draw(state, raw, r32, bad, flags, gbuf, gbuf_bits, nb_, GAUSSIAN, zw, zk, zf)
            block_max = -np.inf
            for i in range(nb_):
                si = beta * np.float64(gbuf[i])
                s[i] = si
                block_max = max(block_max, si)
            if d_v > 0:
                _draw(state, raw, r32, bad, flags, vbuf, vbuf_bits, nb_ * d_v, value_dist, zw, zk, zf)
            # -- phase 3: online softmax; the running maximum grows: rescale what was accumulated under the old one
            if block_max > m:
                c = math.exp(m - block_max)
                s1 *= c
                s2 *= c * c
                _rescale(acc_v, c)
                m = block_max
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
                    ei = e[i]
                    row = i * d_v
                    for c_ in range(d_v):
                        acc_v[c_] += ei * np.float64(vbuf[row + c_])
        # -- phase 5: normalise once per sequence
        inv = 1.0 / s1
        y2_out[seq] = s2 * inv * inv
        for c_ in range(d_v):
            o_out[seq, c_] = sigma * acc_v[c_] * inv
