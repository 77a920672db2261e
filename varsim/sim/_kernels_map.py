"""Numba chunk kernels for attention variants that need every logit of a sequence at once.

Private. ``map_full_chunk`` and ``map_logits_chunk`` run the same sampler routines as ``_kernels_attn.full_chunk`` /
``logits_chunk`` (``_kernels_draws``: one seed gives the same keys and values for every variant in the full
sampler), but keep the sequence's logits and value rows, apply the weight map of code ``code`` (see
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

from varsim._common.numba_cache import install as _install_cache

from ._kernels_draws import full_sampler, logits_sampler
from ._variant_codes import ADAPTIVE, ENTMAX15, SCALED_SOFTMAX, SIGMOID, SPARSEMAX, TOPK

_install_cache()  # before any @njit(cache=True): the cache stamp covers the modules a kernel compiles in

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
def _finish(seq, logits, core, p, o_out, y2_out, extra):
    """Sequence ``seq``'s outputs from all its logits and value rows: apply the map, then reduce."""
    wmap, w, s1_out = extra
    weight_map(wmap[0], wmap[1], logits, p.n_keys, w)
    _reduce(wmap[0], w, core, p.n_keys, o_out.shape[1], p.mu, p.sigma, o_out, y2_out, s1_out, seq)


@nb.njit(**_JIT)
def map_full_chunk(state, p, wmap, tables, o_out, y2_out, s1_out):
    """Full sampler (``p`` a ``FullSampler``) with the weight map ``wmap = (code, vparams)``: the outputs of
    ``_kernels_attn.full_chunk`` plus ``s1_out`` (float64[n_seq], ``sum w``); ``o_out`` receives ``o - mu``.
    Holds ``n_keys`` logits and ``n_keys x d_v`` value rows per sequence."""
    full_sampler(state, p, tables, o_out, y2_out, True, _finish, (wmap, np.empty(p.n_keys), s1_out))


@nb.njit(**_JIT)
def map_logits_chunk(state, p, wmap, tables, o_out, y2_out, s1_out):
    """Logits sampler (``p`` a ``LogitsSampler``) with the weight map ``wmap = (code, vparams)``: the outputs of
    ``_kernels_attn.logits_chunk`` plus ``s1_out``; ``d_v = 0`` draws no values (Rao-Blackwell path)."""
    logits_sampler(state, p, tables, o_out, y2_out, True, _finish, (wmap, np.empty(p.n_keys), s1_out))
