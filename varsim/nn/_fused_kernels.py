"""Fused Numba kernels of the training step outside the matrix products, each beside its plain NumPy reference
(same arguments; the tests compare every pair in float32 and float64).

Private: the layers call them only for a model with ``ModelConfig(fused=True)`` (opt-in: a kernel sums in another
order than NumPy, so float32 bits differ from the default path; :mod:`varsim.nn.fused` holds the calls). Compiled
on first call (``cache=True`` keeps the machine code on disk), never at import. Every kernel works on C-contiguous
arrays of one float dtype, writes its outputs in that dtype and accumulates its sums in float64, row after row in
index order (the references sum in float64 too, NumPy's pairwise order); none allocates more than a row.

Notation: R rows, T keys, D features, B batch, H heads.

- ``softmax_rows(y)``: in place, each row of ``y`` (R, T) becomes ``exp(y - max) / sum exp(y - max)``; ``-inf``
  entries (masked keys) become exactly 0 (every row holds at least one finite entry).
- ``softmax_vjp_rows(w, dw)``: in place, ``dw <- w (dw - sum_j w_j dw_j)`` per row (R, T).
- ``layernorm_rows(x, gamma, beta, eps, out, xhat, rstd)``: ``x`` (R, D) -> ``xhat = (x - mean) rstd``,
  ``rstd = 1 / sqrt(var + eps)`` (R,) (biased variance), ``out = xhat gamma + beta``; one pass for the statistics,
  one for the outputs.
- ``layernorm_backward_rows(dout, xhat, rstd, gamma, dx, dgamma, dbeta)``: ``g = dout gamma``,
  ``dx = rstd (g - mean g - xhat mean(g xhat))`` (R, D); ``dgamma = sum_rows dout xhat``, ``dbeta = sum_rows dout``
  (D,).
- ``relu_backward_colsum(dh, out, db)``: in place ``dh <- dh (out > 0)`` (R, K) and ``db = sum_rows dh`` (K,): ReLU's
  backward and the bias gradient of the linear layer below it in one pass.

The set transformer's query row over its small set keeps NumPy's batched products around the softmax kernels: a
kernel doing the logits, the softmax and the weighted mean in one pass measured 2-3x slower than those products on
this machine (B = 64, H = 4, T = 17, D = 64; ``benchmarks/bench_train.py``'s notes), so it is not here.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from varsim._common.numba_cache import install as _install_cache

_install_cache()  # before any @njit(cache=True): the cache stamp covers the modules a kernel compiles in

__all__ = [
    "softmax_rows", "softmax_rows_reference",
    "softmax_vjp_rows", "softmax_vjp_rows_reference",
    "layernorm_rows", "layernorm_rows_reference",
    "layernorm_backward_rows", "layernorm_backward_rows_reference",
    "relu_backward_colsum", "relu_backward_colsum_reference",
]


# ----------------------------------------------------------------------------------------------------------------------
# Softmax and its vector-Jacobian product, row by row


@nb.njit(nogil=True, cache=True)
def softmax_rows(y):
    r, t = y.shape
    for i in range(r):
        m = y[i, 0]
        for j in range(1, t):
            if y[i, j] > m:
                m = y[i, j]
        s = 0.0
        for j in range(t):
            e = np.exp(y[i, j] - m)
            y[i, j] = e
            s += e
        for j in range(t):
            y[i, j] = y[i, j] / s


def softmax_rows_reference(y):
    """NumPy reference of :func:`softmax_rows` (same arguments)."""
    y -= y.max(axis=-1, keepdims=True)
    np.exp(y, out=y)
    y[...] = y / y.sum(axis=-1, keepdims=True, dtype=np.float64)


@nb.njit(nogil=True, cache=True)
def softmax_vjp_rows(w, dw):
    r, t = w.shape
    for i in range(r):
        s = 0.0
        for j in range(t):
            s += w[i, j] * dw[i, j]
        for j in range(t):
            dw[i, j] = w[i, j] * (dw[i, j] - s)


def softmax_vjp_rows_reference(w, dw):
    """NumPy reference of :func:`softmax_vjp_rows` (same arguments)."""
    s = np.sum(w.astype(np.float64) * dw, axis=-1, keepdims=True)
    dw[...] = w * (dw - s)


# ----------------------------------------------------------------------------------------------------------------------
# Layer norm, forward and backward


@nb.njit(nogil=True, cache=True)
def layernorm_rows(x, gamma, beta, eps, out, xhat, rstd):
    r, d = x.shape
    for i in range(r):
        s = 0.0
        for j in range(d):
            s += x[i, j]
        mean = s / d
        v = 0.0
        for j in range(d):
            c = x[i, j] - mean
            v += c * c
        rs = 1.0 / np.sqrt(v / d + eps)
        rstd[i] = rs
        for j in range(d):
            xh = (x[i, j] - mean) * rs
            xhat[i, j] = xh
            out[i, j] = xh * gamma[j] + beta[j]


def layernorm_rows_reference(x, gamma, beta, eps, out, xhat, rstd):
    """NumPy reference of :func:`layernorm_rows` (same arguments)."""
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float64)
    c = x - mean
    rs = 1.0 / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + eps)
    rstd[...] = rs[:, 0]
    xhat[...] = c * rs
    out[...] = xhat.astype(np.float64) * gamma + beta


@nb.njit(nogil=True, cache=True)
def layernorm_backward_rows(dout, xhat, rstd, gamma, dx, dgamma, dbeta):
    r, d = dout.shape
    sg = np.zeros(d)
    sb = np.zeros(d)
    for i in range(r):
        m1 = 0.0
        m2 = 0.0
        for j in range(d):
            g = dout[i, j] * np.float64(gamma[j])
            m1 += g
            m2 += g * xhat[i, j]
            sg[j] += dout[i, j] * np.float64(xhat[i, j])
            sb[j] += dout[i, j]
        m1 /= d
        m2 /= d
        for j in range(d):
            dx[i, j] = (dout[i, j] * np.float64(gamma[j]) - m1 - xhat[i, j] * m2) * rstd[i]
    for j in range(d):
        dgamma[j] = sg[j]
        dbeta[j] = sb[j]


def layernorm_backward_rows_reference(dout, xhat, rstd, gamma, dx, dgamma, dbeta):
    """NumPy reference of :func:`layernorm_backward_rows` (same arguments)."""
    g = dout.astype(np.float64) * gamma
    m1 = g.mean(axis=-1, keepdims=True)
    m2 = (g * xhat).mean(axis=-1, keepdims=True)
    dx[...] = (g - m1 - xhat * m2) * rstd[:, None]
    dgamma[...] = (dout.astype(np.float64) * xhat).sum(axis=0)
    dbeta[...] = dout.sum(axis=0, dtype=np.float64)


# ----------------------------------------------------------------------------------------------------------------------
# ReLU's backward with the bias gradient of the layer below


@nb.njit(nogil=True, cache=True)
def relu_backward_colsum(dh, out, db):
    r, k = dh.shape
    s = np.zeros(k)
    for i in range(r):
        for j in range(k):
            v = dh[i, j] * (1.0 if out[i, j] > 0 else 0.0)
            dh[i, j] = v
            s[j] += v
    for j in range(k):
        db[j] = s[j]


def relu_backward_colsum_reference(dh, out, db):
    """NumPy reference of :func:`relu_backward_colsum` (same arguments)."""
    np.multiply(dh, out > 0, out=dh)
    db[...] = dh.sum(axis=0, dtype=np.float64)
