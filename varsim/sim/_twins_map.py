"""NumPy twins of ``_kernels_map``: replay the draws, materialise the logits and values, and apply the registry's
NumPy reference of the weight map (``varsim.variants``). Same arguments as the kernels; outputs filled in place."""

from __future__ import annotations

import numpy as np

from varsim.variants import get_variant

from . import _twins_rng as R
from ._kernels_attn import LOGIT_BLOCK
from ._kernels_rng import GAUSSIAN
from ._twins_attn import sample_full
from ._variant_codes import unpack


def _reduce(code, vparams, logits, V, mu, o_out, y2_out, s1_out):
    name, params, factor = unpack(code, vparams)
    n_keys = logits.shape[1]
    w = get_variant(name).weights(factor * logits, n=n_keys, **params)  # (S, N)
    s1_out[:] = w.sum(axis=1)
    y2_out[:] = np.sum(w * w, axis=1)
    if o_out.shape[1]:
        o_out[:] = np.einsum("sn,snc->sc", w, V) - mu


def map_full_chunk(state, n_keys, q_fixed, random_query, scale, key_dist, value_dist, coupled, a_mat, noise, mu,
                   sigma, code, vparams, zw, zk, zf, o_out, y2_out, s1_out):
    """Twin of ``_kernels_map.map_full_chunk``."""
    q, K, V = sample_full(state, n_keys, y2_out.size, q_fixed, random_query, key_dist, value_dist,
                          a_mat if coupled else None, noise, mu, sigma)
    _reduce(code, vparams, scale * np.einsum("snd,sd->sn", K, q), V, mu, o_out, y2_out, s1_out)


def map_logits_chunk(state, n_keys, beta_fixed, random_query, d_k, scale, value_dist, mu, sigma, code, vparams,
                     zw, zk, zf, o_out, y2_out, s1_out):
    """Twin of ``_kernels_map.map_logits_chunk``."""
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
    _reduce(code, vparams, logits, V, mu, o_out, y2_out, s1_out)
