"""NumPy twins of ``_kernels_attn``: replay the kernels' draws, materialise q, K, V, and attend directly.

Each ``*_chunk`` twin takes exactly the arguments of its kernel (so a test can call either through one fixture) and
fills the same output arrays. ``attention_stats`` is the reference computation, ``o = softmax(scale q.K^T) V`` with a
max-subtracted softmax over the key axis, in float64 on explicit arrays; the twins feed it the exact variates the
kernels draw (``_twins_draws``: same generator state, same request order), so kernel and twin agree to rounding
(~1e-13). Like the kernels they return ``o - mu``; the twin forms it from the materialised values, so it is only
accurate when ``mu`` is not much larger than the value scale (the kernels are exact there, see ``_kernels_attn``).
"""

from __future__ import annotations

import numpy as np

from ._twins_draws import sample_full, sample_logits


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


def full_chunk(state, p, tables, o_out, y2_out):
    """Twin of ``_kernels_attn.full_chunk`` (same arguments; the ziggurat tables are the twin RNG's own)."""
    q, K, V = sample_full(state, p, y2_out.size)
    o, y2 = attention_stats(q, K, V, p.scale)
    o_out[:] = o - p.mu
    y2_out[:] = y2


def logits_chunk(state, p, tables, o_out, y2_out):
    """Twin of ``_kernels_attn.logits_chunk`` (same arguments): logits ``beta g`` drawn directly."""
    logits, V = sample_logits(state, p, *o_out.shape)
    w = softmax_weights(logits)
    if o_out.shape[1]:
        o_out[:] = np.einsum("sn,snc->sc", w, V) - p.mu
    y2_out[:] = np.sum(w * w, axis=1)
