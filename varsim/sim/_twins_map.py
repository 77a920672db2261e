"""NumPy twins of ``_kernels_map``: replay the draws (``_twins_draws``), materialise the logits and values, and apply
the registry's NumPy reference of the weight map (``varsim.variants``). Same arguments as the kernels; outputs filled
in place."""

from __future__ import annotations

import numpy as np

from varsim.variants import get_variant

from ._twins_draws import sample_full, sample_logits
from ._variant_codes import unpack


def _reduce(wmap, logits, V, mu, o_out, y2_out, s1_out):
    name, params, factor = unpack(*wmap)
    n_keys = logits.shape[1]
    w = get_variant(name).weights(factor * logits, n=n_keys, **params)  # (S, N)
    s1_out[:] = w.sum(axis=1)
    y2_out[:] = np.sum(w * w, axis=1)
    if o_out.shape[1]:
        o_out[:] = np.einsum("sn,snc->sc", w, V) - mu


def map_full_chunk(state, p, wmap, tables, o_out, y2_out, s1_out):
    """Twin of ``_kernels_map.map_full_chunk``."""
    q, K, V = sample_full(state, p, y2_out.size)
    _reduce(wmap, p.scale * np.einsum("snd,sd->sn", K, q), V, p.mu, o_out, y2_out, s1_out)


def map_logits_chunk(state, p, wmap, tables, o_out, y2_out, s1_out):
    """Twin of ``_kernels_map.map_logits_chunk``."""
    logits, V = sample_logits(state, p, *o_out.shape)
    _reduce(wmap, logits, V, p.mu, o_out, y2_out, s1_out)
