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
- ``query_softmax_attention(u, x, mask, scale, w, xbar)``: the query row of each head over a small set:
  ``w[b, h] = softmax(scale u[b, h] . x[b, t])`` over the keys ``t`` with ``mask[b, t]`` (a (0, 0) mask: all), into
  ``w`` (B, H, T), and ``xbar[b, h] = sum_t w[b, h, t] x[b, t]`` (B, H, D).
- ``query_softmax_attention_backward(dxbar, w, x, u, scale, du, dx)``: its backward: ``dw = dxbar . x[t]``,
  ``ds = scale w (dw - sum w dw)``, ``du[b, h] = sum_t ds[t] x[b, t]`` (B, H, D) and
  ``dx[b, t] = sum_h w[b, h, t] dxbar[b, h] + ds[b, h, t] u[b, h]`` (B, T, D).
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
    "query_softmax_attention", "query_softmax_attention_reference",
    "query_softmax_attention_backward", "query_softmax_attention_backward_reference",
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


# ----------------------------------------------------------------------------------------------------------------------
# The query row's softmax attention over a small set (the set transformer's last block)


@nb.njit(nogil=True, cache=True)
def query_softmax_attention(u, x, mask, scale, w, xbar):
    b_n, h_n, d = u.shape
    t_n = x.shape[1]
    has_mask = mask.shape[0] > 0
    for b in range(b_n):
        for h in range(h_n):
            m = -np.inf
            for t in range(t_n):
                if has_mask and not mask[b, t]:
                    w[b, h, t] = -np.inf
                    continue
                s = 0.0
                for k in range(d):
                    s += u[b, h, k] * np.float64(x[b, t, k])
                w[b, h, t] = scale * s
                m = max(m, w[b, h, t])
            tot = 0.0
            for t in range(t_n):
                e = np.exp(w[b, h, t] - m)
                w[b, h, t] = e
                tot += e
            for k in range(d):
                xbar[b, h, k] = 0.0
            for t in range(t_n):
                wt = w[b, h, t] / tot
                w[b, h, t] = wt
                if wt != 0.0:
                    for k in range(d):
                        xbar[b, h, k] += wt * x[b, t, k]


def query_softmax_attention_reference(u, x, mask, scale, w, xbar):
    """NumPy reference of :func:`query_softmax_attention` (same arguments)."""
    z = scale * np.einsum("bhk,btk->bht", u.astype(np.float64), x)
    if mask.shape[0]:
        z[~np.broadcast_to(mask[:, None, :], z.shape)] = -np.inf
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    w[...] = z / z.sum(axis=-1, keepdims=True)
    xbar[...] = np.einsum("bht,btk->bhk", w.astype(np.float64), x)


@nb.njit(nogil=True, cache=True)
def query_softmax_attention_backward(dxbar, w, x, u, scale, du, dx):
    b_n, h_n, d = u.shape
    t_n = x.shape[1]
    ds = np.empty(t_n)
    for b in range(b_n):
        for t in range(t_n):
            for k in range(d):
                dx[b, t, k] = 0.0
        for h in range(h_n):
            tot = 0.0
            for t in range(t_n):
                s = 0.0
                if w[b, h, t] != 0.0:
                    for k in range(d):
                        s += dxbar[b, h, k] * np.float64(x[b, t, k])
                ds[t] = s
                tot += w[b, h, t] * s
            for k in range(d):
                du[b, h, k] = 0.0
            for t in range(t_n):
                wt = w[b, h, t]
                if wt == 0.0:
                    continue
                g = scale * wt * (ds[t] - tot)
                for k in range(d):
                    du[b, h, k] += g * x[b, t, k]
                    dx[b, t, k] += wt * dxbar[b, h, k] + g * u[b, h, k]


def query_softmax_attention_backward_reference(dxbar, w, x, u, scale, du, dx):
    """NumPy reference of :func:`query_softmax_attention_backward` (same arguments)."""
    w64 = w.astype(np.float64)
    dw = np.einsum("bhk,btk->bht", dxbar.astype(np.float64), x)
    ds = scale * w64 * (dw - (w64 * dw).sum(axis=-1, keepdims=True))
    du[...] = np.einsum("bht,btk->bhk", ds, x)
    dx[...] = np.einsum("bht,bhk->btk", w64, dxbar) + np.einsum("bht,bhk->btk", ds, u)
