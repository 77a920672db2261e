"""Packed variable-length batches for the gradient check's adapters (``layout="packed"``, as flash-attn's
``flash_attn_varlen_func``): a case's dense arrays and mask become sequences packed along one axis with their
cumulative lengths, and the gradients come back dense.

Notation: a case has ``B`` sequences padded to ``L`` queries and ``N`` keys; sequence ``b`` has ``n_q[b]`` queries
and ``n_k[b]`` keys (a prefix of each). Packed::

    q (T_q, H, d_k)   K (T_k, G, d_k)   V (T_k, G, d_v)   dO, o (T_q, H, d_v)
    cu_seqlens_q = [0, n_q[0], n_q[0] + n_q[1], ...]  (B + 1,) int32, likewise cu_seqlens_k

A case's mask is expressible when it is the sequences' lengths, optionally causal (bottom-right) within each
sequence: the masks of :data:`PACKED_MASKS`. A padded query row of the dense case has zero output and gradients, as
the reference says of a fully masked row; a padded key has zero ``dK`` and ``dV``.
"""

from __future__ import annotations

import numpy as np

from .grad_cases import varlen_mask

__all__ = ["PACKED_MASKS", "packed_lengths", "pack", "unpack"]

PACKED_MASKS = ("none", "causal", "window", "padding", "varlen")
"""The gradient cases' masks a packed function can take (``rows``, a random mask, cannot be packed)."""


def packed_lengths(mask, B: int, L: int, N: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(n_q, n_k, causal)`` of a dense mask ``(B, 1, L, N)`` (None: every sequence full, not causal); a mask that
    is not a prefix of queries and keys per sequence, optionally causal within, is a ValueError."""
    if mask is None:
        return np.full(B, L), np.full(B, N), False
    m = np.asarray(mask, dtype=bool)[:, 0]
    n_q, n_k = m.any(axis=2).sum(axis=1), m.any(axis=1).sum(axis=1)
    prefix = (np.arange(L)[None, :, None] < n_q[:, None, None]) & (np.arange(N)[None, None, :] < n_k[:, None, None])
    if np.array_equal(m, prefix):
        return n_q, n_k, False
    if np.array_equal(m, varlen_mask(n_q, n_k, L, N)[:, 0]):
        return n_q, n_k, True
    raise ValueError("layout 'packed': the mask is not sequence lengths (optionally causal within each sequence)")


def pack(x: np.ndarray, lengths) -> np.ndarray:
    """``x (B, H, S, d)`` -> ``(sum(lengths), H, d)``: the first ``lengths[b]`` positions of each sequence."""
    return np.concatenate([np.swapaxes(x[b, :, :n], 0, 1) for b, n in enumerate(lengths)])


def unpack(x: np.ndarray, lengths, size: int) -> np.ndarray:
    """The inverse of :func:`pack`: ``(T, H, d)`` -> ``(B, H, size, d)``, zeros past each sequence's length."""
    out = np.zeros((len(lengths), x.shape[1], size, x.shape[2]))
    starts = np.concatenate([[0], np.cumsum(lengths)])
    for b, n in enumerate(lengths):
        out[b, :, :n] = np.swapaxes(x[starts[b]:starts[b] + n], 0, 1)
    return out
