"""Numba chunk kernels for attention variants that need every logit of a sequence at once.

Private. ``map_full_chunk`` and ``map_logits_chunk`` draw exactly what ``_kernels_attn.full_chunk`` /
``logits_chunk`` draw (same requests in the same order, so one seed gives the same keys and values for every variant
in the full sampler), but keep the sequence's logits and value rows, apply the weight map of code ``code`` (see
``_variant_codes``) to all logits, and then reduce: ``sum w^2``, ``sum w`` and the deviation ``o - mu``, which is
``sigma sum_i w_i eps_i / sum w`` for maps that sum to 1 (renormalised, so it is exact however large ``mu`` is) and
``mu (sum w - 1) + sigma sum_i w_i eps_i`` for sigmoid attention (the mean term of REMEDIES 1).

The weight maps here are written for Numba; the NumPy twins in ``_twins_map.py`` use the registry's references
(``varsim.variants``) instead, so a kernel-vs-twin test checks one implementation against the other.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ._kernels_attn import KEY_BLOCK, LOGIT_BLOCK
from ._kernels_rng import GAUSSIAN, _draw, _scratch
from ._variant_codes import ADAPTIVE, ENTMAX15, SCALED_SOFTMAX, SIGMOID, SPARSEMAX, TOPK

_JIT = dict(nogil=True, cache=True)
# adaptive temperature polynomial (varsim.variants.ADAPTIVE_POLY), highest power first
_P4, _P3, _P2, _P1, _P0 = -0.037, 0.481, -2.3, 4.917, -1.791


@nb.njit(**_JIT)
def _softmax_into(s, n, f, w):
    """``w[:n] = softmax(f * s[:n])``, max-subtracted (``f >= 0``)."""
    m = -np.inf
    for i in range(n):
        m = max(m, s[i])
    tot = 0.0
    for i in range(n):
        e = math.exp(f * (s[i] - m))
        w[i] = e
        tot += e
    inv = 1.0 / tot
    for i in range(n):
        w[i] *= inv


@nb.njit(**_JIT)
def _sorted_threshold(x, n, power):
    """Threshold ``t`` with ``sum [x - t]_+^power = 1`` (``power`` 1: sparsemax, 2: 1.5-entmax on ``x = z/2``)."""
    srt = np.sort(x[:n])[::-1]
    csum = 0.0
    csq = 0.0
    t = srt[0] - 1.0
    for j in range(1, n + 1):
        v = srt[j - 1]
        csum += v
        csq += v * v
        if power == 1:
            if 1.0 + j * v > csum:
                t = (csum - 1.0) / j
        else:
            mean = csum / j
            delta = (1.0 - j * (csq / j - mean * mean)) / j
            tj = mean - math.sqrt(max(delta, 0.0))
            if tj <= v:
                t = tj
    return t


@nb.njit(**_JIT)
def weight_map(code, vparams, s, n, w):
    """Fill ``w[:n]`` with the weights of map ``code`` (parameters ``vparams``) for the logits ``s[:n]``."""
    if code == SCALED_SOFTMAX:
        _softmax_into(s, n, vparams[0], w)
    elif code == ADAPTIVE:
        # entropy of softmax(s): H = ln Z - sum_i p_i (s_i - m), then b = max(P(H), 1) above H = 0.5
        m = -np.inf
        for i in range(n):
            m = max(m, s[i])
        z = 0.0
        a = 0.0
        for i in range(n):
            e = math.exp(s[i] - m)
            z += e
            a += e * (s[i] - m)
        h = math.log(z) - a / z
        b = 1.0
        if h > 0.5:
            b = max((((_P4 * h + _P3) * h + _P2) * h + _P1) * h + _P0, 1.0)
        _softmax_into(s, n, b, w)
    elif code == TOPK:
        k = int(vparams[0])
        if k >= n:
            _softmax_into(s, n, 1.0, w)
        else:
            thr = np.partition(s[:n].copy(), n - k)[n - k]  # the k-th largest logit
            above = 0
            for i in range(n):
                if s[i] > thr:
                    above += 1
            ties = k - above  # logits equal to the threshold that are kept, first ones first
            m = -np.inf
            for i in range(n):
                m = max(m, s[i])
            tot = 0.0
            for i in range(n):
                keep = s[i] > thr
                if not keep and s[i] == thr and ties > 0:
                    keep = True
                    ties -= 1
                w[i] = math.exp(s[i] - m) if keep else 0.0
                tot += w[i]
            for i in range(n):
                w[i] /= tot
    elif code == SPARSEMAX or code == ENTMAX15:
        m = -np.inf
        for i in range(n):
            m = max(m, s[i])
        half = 0.5 if code == ENTMAX15 else 1.0
        x = np.empty(n)
        for i in range(n):
            x[i] = half * (s[i] - m)
        power = 2 if code == ENTMAX15 else 1
        t = _sorted_threshold(x, n, power)
        for i in range(n):
            d = max(x[i] - t, 0.0)
            w[i] = d * d if power == 2 else d
    else:  # SIGMOID: sigmoid(s - ln n), written so that exp never overflows
        ln_n = math.log(n)
        for i in range(n):
            x = s[i] - ln_n
            if x >= 0.0:
                w[i] = 1.0 / (1.0 + math.exp(-x))
            else:
                e = math.exp(x)
                w[i] = e / (1.0 + e)


@nb.njit(**_JIT)
def _reduce(code, w, core, n, d_v, mu, sigma, o_out, y2_out, s1_out, seq):
    """Per-sequence outputs from the weights and the value rows ``core`` (``v_i = mu + sigma core_i``)."""
    s1 = 0.0
    s2 = 0.0
    for i in range(n):
        s1 += w[i]
        s2 += w[i] * w[i]
    s1_out[seq] = s1
    for c_ in range(d_v):
        acc = 0.0
        for i in range(n):
            acc += w[i] * core[i, c_]
        if code == SIGMOID:
            o_out[seq, c_] = mu[c_] * (s1 - 1.0) + sigma * acc
        else:
            o_out[seq, c_] = sigma * acc / s1
    y2_out[seq] = s2 if code == SIGMOID else s2 / (s1 * s1)


@nb.njit(**_JIT)
def map_full_chunk(
    state, n_keys, q_fixed, random_query, scale, key_dist, value_dist, coupled, a_mat, noise, mu, sigma,
    code, vparams, zw, zk, zf, o_out, y2_out, s1_out,
):
    """Full sampler with weight map ``code``: the arguments of ``_kernels_attn.full_chunk`` plus ``code``,
    ``vparams`` (float64) and ``s1_out`` (float64[n_seq], ``sum w``); ``o_out`` receives ``o - mu``.
    Holds ``n_keys`` logits and ``n_keys x d_v`` value rows per sequence."""
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
    logits = np.empty(n_keys)
    w = np.empty(n_keys)
    core = np.empty((n_keys, d_v))
    for seq in range(n_seq):
        # -- phase 1: the (scaled) query of this sequence
        if random_query:
            _draw(state, raw, r32, bad, flags, qbuf, qbuf_bits, d_k, GAUSSIAN, zw, zk, zf)
            for j in range(d_k):
                q[j] = scale * np.float64(qbuf[j])
        else:
            for j in range(d_k):
                q[j] = scale * q_fixed[j]
        for start in range(0, n_keys, KEY_BLOCK):
            # -- phase 2: a block of keys -> logits q.k_i, then the block's value noise -> value rows
            nb_ = min(KEY_BLOCK, n_keys - start)
            _draw(state, raw, r32, bad, flags, kbuf, kbuf_bits, nb_ * d_k, key_dist, zw, zk, zf)
            for i in range(nb_):
                dot = 0.0
                for j in range(d_k):
                    dot += q[j] * np.float64(kbuf[i * d_k + j])
                logits[start + i] = dot
            _draw(state, raw, r32, bad, flags, vbuf, vbuf_bits, nb_ * d_v, value_dist, zw, zk, zf)
            for i in range(nb_):
                for c_ in range(d_v):
                    val = np.float64(vbuf[i * d_v + c_])
                    if coupled:
                        ak = 0.0
                        for j in range(d_k):
                            ak += a_mat[c_, j] * np.float64(kbuf[i * d_k + j])
                        val = ak + noise * val
                    core[start + i, c_] = val
        # -- phase 3: the weight map over all N logits
        weight_map(code, vparams, logits, n_keys, w)
        # -- phase 4: reduce to sum w^2, sum w and o - mu
        _reduce(code, w, core, n_keys, d_v, mu, sigma, o_out, y2_out, s1_out, seq)


@nb.njit(**_JIT)
def map_logits_chunk(
    state, n_keys, beta_fixed, random_query, d_k, scale, value_dist, mu, sigma, code, vparams, zw, zk, zf,
    o_out, y2_out, s1_out,
):
    """Logits sampler with weight map ``code``: the arguments of ``_kernels_attn.logits_chunk`` plus ``code``,
    ``vparams`` and ``s1_out``; ``d_v = 0`` draws no values (Rao-Blackwell path)."""
    n_seq, d_v = o_out.shape
    raw, r32, bad, flags = _scratch(max(LOGIT_BLOCK * max(d_v, 1), d_k))
    gbuf = np.empty(bad.size, np.float32)
    vbuf = np.empty(bad.size, np.float32)
    gbuf_bits = gbuf.view(np.uint32)
    vbuf_bits = vbuf.view(np.uint32)
    logits = np.empty(n_keys)
    w = np.empty(n_keys)
    core = np.empty((n_keys, d_v))
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
        for start in range(0, n_keys, LOGIT_BLOCK):
            # -- phase 2: a block of logits beta g_i and, with values, the block's value rows
            nb_ = min(LOGIT_BLOCK, n_keys - start)
            _draw(state, raw, r32, bad, flags, gbuf, gbuf_bits, nb_, GAUSSIAN, zw, zk, zf)
            for i in range(nb_):
                logits[start + i] = beta * np.float64(gbuf[i])
            if d_v > 0:
                _draw(state, raw, r32, bad, flags, vbuf, vbuf_bits, nb_ * d_v, value_dist, zw, zk, zf)
                for i in range(nb_):
                    for c_ in range(d_v):
                        core[start + i, c_] = np.float64(vbuf[i * d_v + c_])
        # -- phase 3: the weight map over all N logits
        weight_map(code, vparams, logits, n_keys, w)
        # -- phase 4: reduce to sum w^2, sum w and o - mu
        _reduce(code, w, core, n_keys, d_v, mu, sigma, o_out, y2_out, s1_out, seq)
