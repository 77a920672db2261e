"""The fused path of the training step (``ModelConfig(fused=True)``): layers whose work outside the matrix products
runs in one Numba pass each (:mod:`varsim.nn._fused_kernels`, every kernel beside its NumPy reference).

Opt-in, because a kernel sums in another order than NumPy (and in float64), so float32 bits differ from the default
path: a fused model trains to other bits than the same model unfused (the same math; the gradient checks and the
kernel-against-reference tests hold both). The default path, the golden fingerprints and the committed grids never
call this module. What the fused path covers (anything else runs the default code):

- the softmax of attention and its backward (the plain softmax weight map; other maps run their own code), in the
  full self-attention blocks and in the set transformer's query row alike (whose small products stay NumPy's: a
  kernel fusing them with the softmax measured slower);
- layer norm with its backward (pre-LN's norms, the final norm and ``norm="layernorm"`` after attention), in
  :mod:`varsim.nn.norms` (``layernorm_fused_forward``, ``layernorm_fused_backward``);
- ReLU's backward fused with the bias gradient of the linear layer below it (the MLPs).

Notation as :mod:`varsim.nn.layers`: R rows (every axis but the last, flattened), D width, K a layer's width.
Pairs ``xxx_forward(...) -> (out, cache)`` / ``xxx_backward(dout, cache) -> grads``, as everywhere in varsim.nn.
Importing this module compiles nothing: each function imports its kernel when it first runs.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "softmax_forward_inplace",
    "softmax_vjp_inplace",
    "rows_view",
    "relu_backward_bias",
]


def rows_view(a: np.ndarray) -> np.ndarray:
    """(..., K) -> (R, K), a view: the kernels write in place, so a copy would lose their work."""
    if not a.flags.c_contiguous:
        raise ValueError(f"the fused kernels need C-contiguous arrays, got strides {a.strides} for shape {a.shape}")
    return a.reshape(-1, a.shape[-1])


def softmax_forward_inplace(y: np.ndarray) -> np.ndarray:
    """``y`` (..., T) logits (``-inf`` for masked keys) -> their max-subtracted softmax over the last axis, in place."""
    from ._fused_kernels import softmax_rows

    softmax_rows(rows_view(y))
    return y


def softmax_vjp_inplace(w: np.ndarray, dw: np.ndarray) -> np.ndarray:
    """``w (dw - sum_j w_j dw_j)`` over the last axis, computed in place in ``dw`` (..., T)."""
    from ._fused_kernels import softmax_vjp_rows

    softmax_vjp_rows(rows_view(np.ascontiguousarray(w)), rows_view(dw))
    return dw


def relu_backward_bias(dh: np.ndarray, out: np.ndarray) -> np.ndarray:
    """ReLU's backward in place in ``dh`` (..., K) (``out`` the ReLU's output, its cache), returning the bias
    gradient (K,) of the linear layer whose output went into the ReLU: the column sums of the new ``dh``."""
    from ._fused_kernels import relu_backward_colsum

    db = np.empty(dh.shape[-1], dtype=dh.dtype)
    relu_backward_colsum(rows_view(dh), rows_view(out), db)
    return db

