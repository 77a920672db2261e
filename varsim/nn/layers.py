"""Elementary layers as explicit forward/backward pairs (no autograd).

Notation (shared by every module of varsim.nn):
    B batch, N set size (items), T = N + 1 tokens (the query token is token 0), D model width,
    H heads, Dh = D / H head width, F hidden width of an MLP, C classes (outputs), V vocabulary size.

Convention, after karpathy/llm.c: ``xxx_forward(inputs..., params...) -> (out, cache)`` and
``xxx_backward(dout, cache) -> gradients`` with respect to the inputs and parameters, in the order in which
``xxx_forward`` takes them (inputs first, then parameters; integer inputs get no gradient). The cache holds exactly
what the backward pass needs. Every function works in float32 and float64: the dtype follows the parameters, and
the caller passes inputs of that dtype.
"""

from __future__ import annotations

import math

import numpy as np

from varsim._common.registry import lookup

__all__ = [
    "linear_forward",
    "linear_backward",
    "linear_bias_relu",
    "embedding_forward",
    "embedding_backward",
    "relu_forward",
    "relu_backward",
    "gelu_forward",
    "gelu_backward",
    "activation_forward",
    "activation_backward",
    "ACTIVATIONS",
    "mlp_forward",
    "mlp_backward",
    "residual_forward",
    "residual_backward",
    "softmax_cross_entropy_forward",
    "softmax_cross_entropy_backward",
    "log_softmax",
]

ACTIVATIONS = ("relu", "gelu")


def _check_width(name: str, a: np.ndarray, width: int, what: str) -> None:
    """Cheap shape check for the hot path: the last axis of ``a`` must be ``width``."""
    if a.ndim < 1 or a.shape[-1] != width:
        raise ValueError(f"{name} must end in an axis of size {width} ({what}), got shape {a.shape}")


# ----------------------------------------------------------------------------------------------------------------------
# Linear: out = x @ w + b


def linear_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray | None):
    """``x`` (..., Din), ``w`` (Din, Dout), ``b`` (Dout,) or None -> ``out`` (..., Dout)."""
    if w.ndim != 2:
        raise ValueError(f"w must be a (Din, Dout) matrix, got shape {w.shape}")
    din, dout_dim = w.shape
    _check_width("x", x, din, "w.shape[0]")
    if b is not None:
        _check_width("b", b, dout_dim, "w.shape[1]")
    # one 2-D BLAS gemm: a stacked (B, T, Din) @ (Din, Dout) matmul would loop over B small gemms
    out = (x.reshape(-1, din) @ w).reshape(*x.shape[:-1], dout_dim)  # (..., Dout)
    if b is not None:
        out += b
    return out, (x, w, b is not None)


def linear_backward(dout: np.ndarray, cache):
    """-> ``(dx, dw, db)``; ``db`` is None when the forward pass had no bias."""
    x, w, has_bias = cache
    din, dout_dim = w.shape
    x2 = x.reshape(-1, din)  # (B*, Din)
    d2 = dout.reshape(-1, dout_dim)  # (B*, Dout)
    dx = (d2 @ w.T).reshape(*dout.shape[:-1], din)  # (..., Din)
    dw = x2.T @ d2  # (Din, Dout)
    db = d2.sum(axis=0) if has_bias else None  # (Dout,)
    return dx, dw, db


def linear_bias_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray):
    """``relu(linear_forward(x, w, b))`` bit for bit, the bias add and the ReLU fused into one pass over the output
    -> ``(out, linear cache)``; ``out`` is also ReLU's cache."""
    from ._layer_kernels import bias_relu

    out, cache = linear_forward(x, w, None)
    _check_width("b", b, w.shape[1], "w.shape[1]")
    bias_relu(out.reshape(-1, w.shape[1]), b)
    return out, (x, w, True)


# ----------------------------------------------------------------------------------------------------------------------
# Embedding: out = table[ids]


def embedding_forward(ids: np.ndarray, table: np.ndarray):
    """``ids`` int (...,) in [0, V), ``table`` (V, E) -> ``out`` (..., E)."""
    ids = np.asarray(ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must be integers, got {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise ValueError(f"ids must lie in [0, {table.shape[0]})")
    return table[ids], (ids, table.shape)


def embedding_backward(dout: np.ndarray, cache):
    """-> ``dtable`` (V, E): rows of ``dout`` summed into the rows they were read from."""
    ids, shape = cache
    dtable = np.zeros(shape, dtype=dout.dtype)
    np.add.at(dtable, ids.reshape(-1), dout.reshape(-1, shape[1]))  # repeated ids accumulate
    return dtable


# ----------------------------------------------------------------------------------------------------------------------
# Activations (elementwise, any shape)


def relu_forward(x: np.ndarray, *, overwrite: bool = False):
    """``max(x, 0)``; ``overwrite``: computed in place in ``x`` (a fresh array of the caller's)."""
    out = np.maximum(x, 0, out=x if overwrite else None)
    return out, out  # out > 0 exactly where x > 0, so the output doubles as the cache


def relu_backward(dout: np.ndarray, cache, *, overwrite: bool = False):
    """``dout * (out > 0)``; ``overwrite``: computed in place in ``dout``."""
    out = cache
    return np.multiply(dout, out > 0, out=dout if overwrite else None)


_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def gelu_forward(x: np.ndarray, *, overwrite: bool = False):
    """GELU, tanh approximation (as GPT-2 and llm.c): 0.5 x (1 + tanh(c (x + a x^3))); ``x`` stays in the cache, so
    ``overwrite`` leaves it alone."""
    t = np.tanh(_GELU_C * (x + _GELU_A * x**3))
    return 0.5 * x * (1.0 + t), (x, t)


def gelu_backward(dout: np.ndarray, cache, *, overwrite: bool = False):
    """``overwrite``: the product computed in place in ``dout``."""
    x, t = cache
    dudx = _GELU_C * (1.0 + 3.0 * _GELU_A * x * x)
    return np.multiply(dout, 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dudx, out=dout if overwrite else None)


_ACT_FORWARD = {"relu": relu_forward, "gelu": gelu_forward}
_ACT_BACKWARD = {"relu": relu_backward, "gelu": gelu_backward}


def activation_forward(x: np.ndarray, name: str, *, overwrite: bool = False):
    """Dispatch to ``relu_forward`` or ``gelu_forward`` by name (``overwrite``: may compute in place in ``x``)."""
    return lookup(_ACT_FORWARD, name, param="activation")(x, overwrite=overwrite)


def activation_backward(dout: np.ndarray, cache, name: str, *, overwrite: bool = False):
    """Dispatch to ``relu_backward`` or ``gelu_backward`` by name (``overwrite``: may compute in place in ``dout``)."""
    return lookup(_ACT_BACKWARD, name, param="activation")(dout, cache, overwrite=overwrite)


# ----------------------------------------------------------------------------------------------------------------------
# MLP: Linear (-> activation -> Linear)*; no activation after the last layer


def mlp_forward(x: np.ndarray, layers, activation: str = "relu", *, fused: bool = False):
    """``x`` (..., D0), ``layers`` a sequence of ``(w, b)`` with w (D_i, D_{i+1}) -> ``out`` (..., D_last).

    The activation sits between consecutive Linear layers, not after the last one, so a depth-1 MLP is a Linear
    layer and the output can be read as logits or added to a residual stream. ``fused``: the backward pass takes
    ReLU's backward and the bias gradient below it in one Numba pass (:func:`varsim.nn.fused.relu_backward_bias`).
    """
    lookup(_ACT_FORWARD, activation, param="activation")
    caches = []
    h = x
    last = len(layers) - 1
    for i, (w, b) in enumerate(layers):
        act_cache = None
        if i < last and activation == "relu" and b is not None:  # bias and ReLU in one pass (same bits)
            h, lin_cache = linear_bias_relu(h, w, b)
            act_cache = h
        else:
            h, lin_cache = linear_forward(h, w, b)  # (..., D_{i+1})
            if i < last:
                h, act_cache = _ACT_FORWARD[activation](h, overwrite=True)  # h: linear_forward's fresh output
        caches.append((lin_cache, act_cache))
    return h, (caches, activation, fused and activation == "relu")


def mlp_backward(dout: np.ndarray, cache):
    """-> ``(dx, [(dw, db), ...])`` in layer order."""
    caches, activation, fused_relu = cache
    grads = [None] * len(caches)
    dh = dout
    for i in range(len(caches) - 1, -1, -1):
        lin_cache, act_cache = caches[i]
        if act_cache is not None and fused_relu and lin_cache[2]:  # ReLU's backward with this layer's bias grad
            from .fused import relu_backward_bias

            db = relu_backward_bias(dh, act_cache)  # in place in dh: linear_backward's fresh dx
            dh, dw, _ = linear_backward(dh, (*lin_cache[:2], False))
            grads[i] = (dw, db)
            continue
        if act_cache is not None:
            dh = _ACT_BACKWARD[activation](dh, act_cache, overwrite=True)  # dh: linear_backward's fresh dx
        dh, dw, db = linear_backward(dh, lin_cache)
        grads[i] = (dw, db)
    return dh, grads


# ----------------------------------------------------------------------------------------------------------------------
# Residual connection: out = x + fx (the gradient is copied to both branches)


def residual_forward(x: np.ndarray, fx: np.ndarray):
    return x + fx, None


def residual_backward(dout: np.ndarray, cache):
    """-> ``(dx, dfx)``; both are ``dout`` (not copies: callers must not modify them in place)."""
    return dout, dout


# ----------------------------------------------------------------------------------------------------------------------
# Softmax cross-entropy, mean over the batch


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Max-subtracted log-softmax over the last axis (finite for any finite logits)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def softmax_cross_entropy_forward(logits: np.ndarray, target: np.ndarray):
    """``logits`` (B, C), ``target`` int (B,) in [0, C) -> ``loss`` (a float: mean over B of -log p[target])."""
    target = np.asarray(target)
    if logits.ndim != 2 or target.shape != logits.shape[:1] or not np.issubdtype(target.dtype, np.integer):
        raise ValueError(
            f"logits must be (B, C) and target int (B,), got {logits.shape} and {target.dtype}{target.shape}"
        )
    if target.size and (target.min() < 0 or target.max() >= logits.shape[1]):
        raise ValueError(f"target must lie in [0, {logits.shape[1]})")
    logp = log_softmax(logits)  # (B, C)
    rows = np.arange(logits.shape[0])
    loss = float(-logp[rows, target].mean())
    return loss, (logp, target)


def softmax_cross_entropy_backward(dloss: float, cache):
    """-> ``dlogits`` (B, C) = dloss * (softmax - onehot(target)) / B."""
    logp, target = cache
    n = logp.shape[0]
    dlogits = np.exp(logp)  # (B, C) probabilities
    dlogits[np.arange(n), target] -= 1.0
    dlogits *= dloss / n
    return dlogits
