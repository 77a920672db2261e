"""NumPy twins of ``_kernels_attn``: replay the kernels' draws, materialise q, K, V, and attend directly.

Each ``*_chunk`` twin takes exactly the arguments of its kernel (so a test can call either through one fixture) and
fills the same output arrays. ``attention_stats`` is the reference computation, ``o = softmax(scale q.K^T) V`` with a
max-subtracted softmax over the key axis, in float64 on explicit arrays; the twins feed it the exact variates the
kernels draw (same generator state, same request order), so kernel and twin agree to rounding (~1e-13). Like the
kernels they return ``o - mu``; the twin forms it from the materialised values, so it is only accurate when ``mu`` is
not much larger than the value scale (the kernels are exact there, see ``_kernels_attn``).
"""

from __future__ import annotations

import numpy as np

from . import _twins_rng as R
from ._kernels_attn import KEY_BLOCK, LOGIT_BLOCK
from ._kernels_rng import GAUSSIAN


def attention_stats(q: np.ndarray, K: np.ndarray, V: np.ndarray, scale: float):
    """Per sequence ``o`` (``(S, d_v)``) and IPR ``sum_i w_i^2`` (``(S,)``) for ``q (S, d_k)``, ``K (S, N, d_k)``,
    ``V (S, N, d_v)``, logits ``scale q.k_i`` (``scale = tau / sqrt(d_k)``)."""
    logits = scale * np.einsum("snd,sd->sn", K, q)
    w = softmax_weights(logits)
    return np.einsum("sn,snc->sc", w, V), np.sum(w * w, axis=1)


def softmax_weights(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, max-subtracted (finite for any finite logits)."""
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def sample_full(state, n_keys, n_seq, q_fixed, random_query, key_dist, value_dist, a_mat, noise, mu, sigma):
    """Replay ``full_chunk``'s draws: explicit ``q (S, d_k)``, ``K (S, N, d_k)``, ``V (S, N, d_v)`` (float64).

    ``a_mat`` is None without coupling; values are ``mu + sigma (A k + noise eps)`` or ``mu + sigma eps``.
    """
    d_k = q_fixed.size
    d_v = mu.size
    q = np.empty((n_seq, d_k))
    K = np.empty((n_seq, n_keys, d_k))
    V = np.empty((n_seq, n_keys, d_v))
    for s in range(n_seq):
        q[s] = R.draw(state, d_k, GAUSSIAN) if random_query else q_fixed
        for start in range(0, n_keys, KEY_BLOCK):
            nb = min(KEY_BLOCK, n_keys - start)
            k = R.draw(state, nb * d_k, key_dist).astype(np.float64).reshape(nb, d_k)
            eps = R.draw(state, nb * d_v, value_dist).astype(np.float64).reshape(nb, d_v)
            K[s, start : start + nb] = k
            core = eps if a_mat is None else k @ a_mat.T + noise * eps
            V[s, start : start + nb] = mu + sigma * core
    return q, K, V


def full_chunk(state, n_keys, q_fixed, random_query, scale, key_dist, value_dist, coupled, a_mat, noise,
               mu, sigma, zw, zk, zf, o_out, y2_out):
    """Twin of ``_kernels_attn.full_chunk`` (same arguments; the ziggurat tables are the twin RNG's own)."""
    q, K, V = sample_full(state, n_keys, y2_out.size, q_fixed, random_query, key_dist, value_dist,
                          a_mat if coupled else None, noise, mu, sigma)
    o, y2 = attention_stats(q, K, V, scale)
    o_out[:] = o - mu
    y2_out[:] = y2


def logits_chunk(state, n_keys, beta_fixed, random_query, d_k, scale, value_dist, mu, sigma, zw, zk, zf,
                 o_out, y2_out):
    """Twin of ``_kernels_attn.logits_chunk`` (same arguments): logits ``beta g`` drawn directly."""
    n_seq, d_v = o_out.shape
    logits = np.empty((n_seq, n_keys))
    V = np.empty((n_seq, n_keys, d_v))
    for s in range(n_seq):
        beta = beta_fixed
        if random_query:
            beta = scale * np.sqrt(np.sum(R.draw(state, d_k, GAUSSIAN).astype(np.float64) ** 2))
        for start in range(0, n_keys, LOGIT_BLOCK):
            nb = min(LOGIT_BLOCK, n_keys - start)
            logits[s, start : start + nb] = beta * R.draw(state, nb, GAUSSIAN).astype(np.float64)
            if d_v:
                eps = R.draw(state, nb * d_v, value_dist).astype(np.float64).reshape(nb, d_v)
                V[s, start : start + nb] = mu + sigma * eps
    w = softmax_weights(logits)
    if d_v:
        o_out[:] = np.einsum("sn,snc->sc", w, V) - mu
    y2_out[:] = np.sum(w * w, axis=1)
