"""NumPy form of the samplers' routines (``_kernels_draws``): the same requests in the same order, materialised.

``sample_full`` and ``sample_logits`` replay a chunk's draws and return explicit arrays, which every twin of a chunk
kernel (``_twins_attn``, ``_twins_map``) attends over. Variates come from ``_twins_rng.draw``, bit for bit those of
the kernels, so the generator states end equal.
"""

from __future__ import annotations

import numpy as np

from . import _twins_rng as R
from ._kernel_args import KEY_BLOCK, LOGIT_BLOCK
from ._kernels_rng import GAUSSIAN, SPHERE


def sample_full(state, p, n_seq: int):
    """Replay a full-sampler chunk (``p`` a ``FullSampler``) of ``n_seq`` sequences: the unscaled queries
    ``q (S, d_k)``, keys ``K (S, N, d_k)`` and values ``V (S, N, d_v)`` (``mu + sigma (A k + noise eps)`` when
    coupled, else ``mu + sigma eps``), float64."""
    d_k, d_v, n_keys = p.q_fixed.size, p.mu.size, p.n_keys
    q = np.empty((n_seq, d_k))
    K = np.empty((n_seq, n_keys, d_k))
    V = np.empty((n_seq, n_keys, d_v))
    for s in range(n_seq):
        q[s] = R.draw(state, d_k, GAUSSIAN) if p.random_query else p.q_fixed
        for start in range(0, n_keys, KEY_BLOCK):
            nb = min(KEY_BLOCK, n_keys - start)
            k = R.draw(state, nb * d_k, GAUSSIAN if p.key_dist == SPHERE else p.key_dist).reshape(nb, d_k)
            k = to_sphere(k) if p.key_dist == SPHERE else k.astype(np.float64)
            eps = R.draw(state, nb * d_v, p.value_dist).astype(np.float64).reshape(nb, d_v)
            K[s, start : start + nb] = k
            core = k @ p.a_mat.T + p.noise * eps if p.coupled else eps
            V[s, start : start + nb] = p.mu + p.sigma * core
    return q, K, V


def to_sphere(k32: np.ndarray) -> np.ndarray:
    """Twin of ``_kernels_draws._to_sphere``: each float32 row scaled to norm ``sqrt(d_k)`` (sum of squares in index
    order, rounded to float32 as the kernel stores it), returned as float64."""
    k = k32.astype(np.float64)
    r2 = np.zeros(k.shape[0])
    for j in range(k.shape[1]):
        r2 += k[:, j] * k[:, j]
    return (k * np.sqrt(k.shape[1] / r2)[:, None]).astype(np.float32).astype(np.float64)


def sample_logits(state, p, n_seq: int, d_v: int):
    """Replay a logits-sampler chunk (``p`` a ``LogitsSampler``): the logits ``(S, N)`` and values ``V (S, N, d_v)``
    (``mu + sigma eps``; none drawn when ``d_v = 0``)."""
    n_keys = p.n_keys
    logits = np.empty((n_seq, n_keys))
    V = np.empty((n_seq, n_keys, d_v))
    for s in range(n_seq):
        beta = p.beta_fixed
        if p.random_query:
            beta = p.scale * np.sqrt(np.sum(R.draw(state, p.d_k, GAUSSIAN).astype(np.float64) ** 2))
        for start in range(0, n_keys, LOGIT_BLOCK):
            nb = min(LOGIT_BLOCK, n_keys - start)
            if p.key_dist == SPHERE:
                z = R.draw(state, nb * p.d_k, GAUSSIAN).astype(np.float64).reshape(nb, p.d_k)
                r2 = np.zeros(nb)
                for j in range(p.d_k):
                    r2 += z[:, j] * z[:, j]
                logits[s, start : start + nb] = beta * (np.sqrt(p.d_k / r2) * z[:, 0])
            else:
                logits[s, start : start + nb] = beta * R.draw(state, nb, GAUSSIAN).astype(np.float64)
            if d_v:
                eps = R.draw(state, nb * d_v, p.value_dist).astype(np.float64).reshape(nb, d_v)
                V[s, start : start + nb] = p.mu + p.sigma * eps
    return logits, V
