"""Multi-head softmax attention as forward/backward pairs, with masking and a query-row shortcut.

Notation: B batch, T tokens (keys/values), Tq query rows, D width, H heads, Dh = D / H.
Masks are boolean with True = "this key may be attended to"; masked keys get a -inf logit before the
max-subtracted softmax, so their weight is exactly 0 and they receive no gradient. Every query row must see at
least one key. There is no positional encoding anywhere: attention is permutation-equivariant over the keys.

Parameters (the layout of torch.nn.MultiheadAttention's fused input projection, transposed):
    w_qkv (D, 3D), b_qkv (3D,): columns [0, D) make the queries, [D, 2D) the keys, [2D, 3D) the values; inside each
    block of D columns, head h owns columns [h Dh, (h+1) Dh).
    w_o (D, D), b_o (D,): the output projection of the concatenated heads.

The head outputs are returned concatenated, *before* the output projection, so that a per-head normalization can
sit between the two (``multihead_attention_forward`` composes both when no such normalization is wanted).

``query_attention_forward`` computes the output for one query row per example only (the query token of the model).
It never forms the T x T matrix, nor even the keys and values: the query is pulled back through the key projection
and the weighted mean token pushed through the value projection, O(T D H) per example. It equals the corresponding
row of ``self_attention_forward`` (a test checks this).

Weight maps: every function takes ``attention``, an :class:`~varsim.nn.weightmaps.AttentionSpec` (``None``: plain
softmax, the original fast path) and ``theta``, the learned per-head parameter of maps that have one (ssmax's ``s``,
shape (H,)). With such a map the backward functions append ``dtheta`` (H,) to the gradients they return. Every map
acts row by row, so the query-row shortcut stays O(T D H) per example for all of them; for maps that are not
shift-invariant (sigmoid) the shortcut adds back the key-bias term of the logits, and for weights that do not sum to 1
(sigmoid) or sum to 0 (ipr_norm's effective weights) it scales the value bias by their sum.
"""

from __future__ import annotations

import math

import numpy as np

from .fused import softmax_forward_inplace, softmax_vjp_inplace
from .layers import linear_backward, linear_forward
from .weightmaps import AttentionSpec, softmax_inplace, softmax_vjp

__all__ = [
    "attention_forward",
    "attention_backward",
    "self_attention_forward",
    "self_attention_backward",
    "self_attention_rows",
    "ROW_BLOCK_ELEMENTS",
    "query_attention_forward",
    "query_attention_backward",
    "attention_weights",
    "multihead_attention_forward",
    "multihead_attention_backward",
]


def _check_heads(d: int, n_heads: int) -> int:
    if not isinstance(n_heads, (int, np.integer)) or n_heads < 1 or d % n_heads:
        raise ValueError(f"n_heads must be a positive integer dividing the width {d}, got {n_heads!r}")
    return d // n_heads


def _check_qkv_params(d: int, w_qkv: np.ndarray, b_qkv: np.ndarray) -> None:
    if w_qkv.shape != (d, 3 * d):
        raise ValueError(f"w_qkv must have shape {(d, 3 * d)} for width {d}, got {w_qkv.shape}")
    if b_qkv.shape != (3 * d,):
        raise ValueError(f"b_qkv must have shape {(3 * d,)}, got {b_qkv.shape}")


# ----------------------------------------------------------------------------------------------------------------------
# Scaled dot-product attention on per-head arrays


def _check_spec(attention, theta, n_heads):
    """None for plain softmax (the fast path), else the spec; checks that ``theta`` fits the map."""
    if attention is None:
        if theta is not None:
            raise ValueError("theta is given but the attention is plain softmax, which has no learned parameter")
        return None
    if not isinstance(attention, AttentionSpec):
        raise ValueError(f"attention must be an AttentionSpec (varsim.nn.weightmaps.make_attention) or None, "
                         f"got {type(attention).__name__}")
    if attention.trained_param is None:
        if theta is not None:
            raise ValueError(f"theta is given but attention {attention.name!r} has no learned parameter")
    elif theta is None or np.shape(theta) != (n_heads,):
        raise ValueError(f"attention {attention.name!r} needs theta of shape ({n_heads},) (its learned per-head "
                         f"{attention.trained_param!r}), got {None if theta is None else np.shape(theta)}")
    return None if attention.is_plain_softmax else attention


def _with_dtheta(grads: tuple, attention, dtheta) -> tuple:
    return grads if attention is None or attention.trained_param is None else (*grads, dtheta)


def attention_forward(q: np.ndarray, k: np.ndarray, v: np.ndarray, key_mask: np.ndarray | None = None,
                      attention: AttentionSpec | None = None, theta: np.ndarray | None = None, *,
                      fused: bool = False):
    """``q`` (B, H, Tq, Dh), ``k``/``v`` (B, H, T, Dh), ``key_mask`` bool broadcastable to (B, H, Tq, T).

    Returns ``out`` (B, H, Tq, Dh) = map(q k^T / sqrt(Dh)) v (softmax by default); the cache keeps the weights.
    ``fused``: plain softmax and its backward in a Numba pass (:mod:`varsim.nn.fused`; other float32 bits).
    """
    if k.shape[-1] != q.shape[-1] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"q (.., Tq, Dh), k (.., T, Dh), v (.., T, Dv) do not fit: {q.shape}, {k.shape}, {v.shape}")
    spec = _check_spec(attention, theta, q.shape[1])
    scale = 1.0 / math.sqrt(q.shape[-1])
    w = q @ k.swapaxes(-1, -2)  # (B, H, Tq, T) logits, then (in place) the weights
    w *= scale
    if key_mask is not None:
        if not np.all(np.any(key_mask, axis=-1)):
            raise ValueError("key_mask leaves a query row with no key to attend to")
        np.copyto(w, -np.inf, where=~key_mask)
    if spec is None:  # plain softmax, in place (max-subtracted: exp never overflows, whatever the logits)
        u, map_cache = (softmax_forward_inplace(w) if fused else softmax_inplace(w)), None
    else:
        u, w, map_cache = spec.forward(w, key_mask, theta)  # u: effective weights (ipr_norm), else u = w
    out = u @ v  # (B, H, Tq, Dh)
    return out, (q, k, v, w, scale, u, spec, attention, map_cache, fused)


def attention_backward(dout: np.ndarray, cache):
    """-> ``(dq, dk, dv)``, shaped like ``q``, ``k``, ``v`` (then ``dtheta`` (H,) for a map with a learned
    parameter)."""
    q, k, v, w, scale, u, spec, attention, map_cache, fused = cache
    dw = dout @ v.swapaxes(-1, -2)  # (B, H, Tq, T)
    dv = u.swapaxes(-1, -2) @ dout  # (B, H, T, Dh)
    dtheta = None
    if spec is None:  # softmax backward, in place: ds = w * (dw - sum_j w_j dw_j)
        ds = softmax_vjp_inplace(w, dw) if fused else softmax_vjp(w, dw, overwrite=True)
    else:
        ds, dtheta = spec.backward(dw, map_cache)
    ds *= scale
    dq = ds @ k  # (B, H, Tq, Dh)
    dk = ds.swapaxes(-1, -2) @ q  # (B, H, T, Dh)
    return _with_dtheta((dq, dk, dv), attention, dtheta)


# ----------------------------------------------------------------------------------------------------------------------
# Self-attention over all T tokens (every token is a query row)


def _head_mask(key_mask, b: int, tq: int, t: int):
    """(B, T) or (B, Tq, T) bool -> broadcastable (B, 1, Tq|1, T), or None."""
    if key_mask is None:
        return None
    key_mask = np.asarray(key_mask, dtype=bool)
    if key_mask.shape == (b, t):
        return key_mask[:, None, None, :]
    if key_mask.shape == (b, tq, t):
        return key_mask[:, None, :, :]
    raise ValueError(f"key_mask must have shape {(b, t)} or {(b, tq, t)}, got {key_mask.shape}")


def self_attention_forward(x: np.ndarray, w_qkv: np.ndarray, b_qkv: np.ndarray, n_heads: int, key_mask=None,
                           attention: AttentionSpec | None = None, theta: np.ndarray | None = None, *,
                           fused: bool = False):
    """``x`` (B, T, D) -> concatenated head outputs (B, T, D), before the output projection.

    ``key_mask``: (B, T) (the same keys for every query row) or (B, T, T) (row i may attend to key j), True = allowed.
    ``attention``/``theta``: the weight map (module docstring). ``fused``: as :func:`attention_forward`.
    """
    if x.ndim != 3:
        raise ValueError(f"x must be (B, T, D), got shape {x.shape}")
    b, t, d = x.shape
    dh = _check_heads(d, n_heads)
    _check_qkv_params(d, w_qkv, b_qkv)
    qkv, lin_cache = linear_forward(x, w_qkv, b_qkv)  # (B, T, 3D)
    q, k, v = qkv.reshape(b, t, 3, n_heads, dh).transpose(2, 0, 3, 1, 4)  # 3 x (B, H, T, Dh), views
    out, att_cache = attention_forward(q, k, v, _head_mask(key_mask, b, t, t), attention, theta,
                                       fused=fused)  # (B, H, T, Dh)
    heads = out.transpose(0, 2, 1, 3).reshape(b, t, d)  # (B, T, H*Dh)
    return heads, (lin_cache, att_cache, n_heads)


#: Logits per block of query rows in ``self_attention_rows``: a block passes through the weight map's passes (max,
#: exp, sum, divide) while it is still in cache, where a whole (B, H, T, T) chunk at T = 1025 (118 MiB) streams from
#: memory on every pass. 2^17 is the size the committed remedies run used; ``benchmarks/bench_eval_chunks.py``
#: compares sizes (on the idle machine 2^20 was faster still, left for a change that reruns the grid, since the
#: block size changes float32 rounding).
ROW_BLOCK_ELEMENTS = 1 << 17


def self_attention_rows(x: np.ndarray, w_qkv: np.ndarray, b_qkv: np.ndarray, n_heads: int, key_mask=None,
                        attention: AttentionSpec | None = None, theta: np.ndarray | None = None, *,
                        block_elements: int | None = None, fused: bool = False):
    """``self_attention_forward`` for inference: the same head outputs (B, T, D), computed for a block of query rows
    at a time so that the (B, H, rows, T) logits stay in cache, and no cache for a backward pass.

    Returns ``(heads, w0)``: ``w0`` (B, H, 1, T) the weights of query row 0 (the model's query token), as
    ``attention_weights`` would give them. Every row goes through the same arithmetic as in
    ``self_attention_forward`` (the weight maps act row by row), so the outputs agree with it to rounding.
    ``block_elements``: logits per block (default ``ROW_BLOCK_ELEMENTS``). ``fused``: as :func:`attention_forward`.
    """
    if x.ndim != 3:
        raise ValueError(f"x must be (B, T, D), got shape {x.shape}")
    b, t, d = x.shape
    dh = _check_heads(d, n_heads)
    _check_qkv_params(d, w_qkv, b_qkv)
    per = max(1, (ROW_BLOCK_ELEMENTS if block_elements is None else block_elements) // max(1, b * n_heads * t))
    qkv, _ = linear_forward(x, w_qkv, b_qkv)  # (B, T, 3D)
    q, k, v = qkv.reshape(b, t, 3, n_heads, dh).transpose(2, 0, 3, 1, 4)  # 3 x (B, H, T, Dh), views
    mask = _head_mask(key_mask, b, t, t)  # (B, 1, T|1, T) or None
    out = np.empty((b, n_heads, t, dh), dtype=qkv.dtype)  # (B, H, T, Dh)
    w0 = None
    for r0 in range(0, t, per):  # blocks of query rows
        r1 = min(t, r0 + per)
        m = mask if mask is None or mask.shape[2] == 1 else mask[:, :, r0:r1]
        out[:, :, r0:r1], cache = attention_forward(q[:, :, r0:r1], k, v, m, attention, theta, fused=fused)
        if w0 is None:
            w0 = cache[3][:, :, :1].copy()
    return out.transpose(0, 2, 1, 3).reshape(b, t, d), w0


def self_attention_backward(dheads: np.ndarray, cache):
    """-> ``(dx, dw_qkv, db_qkv)`` (then ``dtheta`` for a map with a learned parameter)."""
    lin_cache, att_cache, n_heads = cache
    b, t, d = dheads.shape
    dh = d // n_heads
    dout = dheads.reshape(b, t, n_heads, dh).transpose(0, 2, 1, 3)  # (B, H, T, Dh)
    dq, dk, dv, *dtheta = attention_backward(dout, att_cache)  # 3 x (B, H, T, Dh)
    dqkv = np.empty((b, t, 3, n_heads, dh), dtype=dheads.dtype)  # (B, T, 3, H, Dh)
    dqkv[:, :, 0] = dq.transpose(0, 2, 1, 3)
    dqkv[:, :, 1] = dk.transpose(0, 2, 1, 3)
    dqkv[:, :, 2] = dv.transpose(0, 2, 1, 3)
    return (*linear_backward(dqkv.reshape(b, t, 3 * d), lin_cache), *dtheta)


# ----------------------------------------------------------------------------------------------------------------------
# Query-row shortcut: one query row per example attends over all T tokens


#: at most this many examples, :func:`_few_products` multiplies them one by one
FEW_EXAMPLES = 8


def _few_products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for (B, M, K) @ (B, K, N), the same bits. NumPy's matmul keeps the GIL when its output is small, as
    the query row's (B, H, D) is, while ``np.dot`` lets it go; so for a few examples of many tokens (the long-set
    evaluation, one example per chunk) each is one ``np.dot``, and the worker threads of ``Model.predict(workers=)``
    multiply at once. Many examples, or operands not C-contiguous per example, take the one matmul."""
    if a.shape[0] > FEW_EXAMPLES or not (a[0].flags.c_contiguous and b[0].flags.c_contiguous):
        return a @ b
    out = np.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=np.result_type(a, b))
    for i in range(a.shape[0]):
        np.dot(a[i], b[i], out=out[i])
    return out


def query_attention_forward(
    xq: np.ndarray,
    x: np.ndarray,
    w_qkv: np.ndarray,
    b_qkv: np.ndarray,
    n_heads: int,
    key_mask=None,
    attention: AttentionSpec | None = None,
    theta: np.ndarray | None = None,
    *,
    fused: bool = False,
):
    """``xq`` (B, D) query rows, ``x`` (B, T, D) tokens, ``key_mask`` (B, T) -> head outputs (B, D).

    The same parameters and result as row-wise ``self_attention_forward``, computed without projecting the tokens:
    with q_h the query of head h and Wk_h, Wv_h that head's key and value columns,
        logit_h[t] = x[t] . (Wk_h q_h) + bk_h . q_h        (the last term is the same for every t: a shift-invariant
                                                           map such as softmax drops it; sigmoid keeps it)
        out_h      = sum_t u_h[t] (x[t] Wv_h + bv_h) = (sum_t u_h[t] x[t]) Wv_h + (sum_t u_h[t]) bv_h
    (``u`` the effective weights; their sum is 1 for normalized maps, 0 with ipr_norm), so the per-token work is two
    (H x D) products instead of a (D x 2D) projection: O(T D H) per example. ``fused``: as
    :func:`attention_forward`.
    """
    if x.ndim != 3:
        raise ValueError(f"x must be (B, T, D), got shape {x.shape}")
    b, t, d = x.shape
    dh = _check_heads(d, n_heads)
    _check_qkv_params(d, w_qkv, b_qkv)
    h = n_heads
    if xq.shape != (b, d):
        raise ValueError(f"xq must have shape {(b, d)} (one query row per example), got {xq.shape}")
    spec = _check_spec(attention, theta, h)
    q, _ = linear_forward(xq, w_qkv[:, :d], b_qkv[:d])  # (B, D)
    qh = q.reshape(b, h, dh).transpose(1, 0, 2)  # (H, B, Dh)
    wk = w_qkv[:, d : 2 * d].reshape(d, h, dh).transpose(1, 2, 0)  # (H, Dh, D)
    u = (qh @ wk).transpose(1, 0, 2)  # (B, H, D): the query of head h pulled back to token space
    scale = 1.0 / math.sqrt(dh)
    key_mask = _query_key_mask(key_mask, b, t)
    w, uw, xbar, map_cache = _query_weights(u, x, qh, b_qkv[d : 2 * d], key_mask, spec, theta, scale, fused)
    wv = w_qkv[:, 2 * d :].reshape(d, h, dh).transpose(1, 0, 2)  # (H, D, Dh)
    out = (xbar.transpose(1, 0, 2) @ wv).transpose(1, 0, 2)  # (B, H, Dh)
    usum = None
    if spec is None or spec.weight_sum == "one":
        out += b_qkv[2 * d :].reshape(h, dh)
    elif spec.weight_sum == "free":
        usum = uw.sum(axis=-1)  # (B, H)
        out += usum[:, :, None] * b_qkv[2 * d :].reshape(h, dh)
    # weight_sum "zero" (ipr_norm): the value bias cancels exactly
    out = out.reshape(b, d)
    return out, (xq, x, w_qkv, b_qkv, qh, u, w, xbar, scale, h, uw, usum, spec, attention, map_cache, fused)


def _query_key_mask(key_mask, b: int, t: int):
    """The query rows' key mask as a (B, T) bool array (None: every key); ValueError for a wrong shape or a row
    with no key."""
    if key_mask is None:
        return None
    key_mask = np.asarray(key_mask, dtype=bool)
    if key_mask.shape != (b, t):
        raise ValueError(f"key_mask must have shape {(b, t)}, got {key_mask.shape}")
    if not np.all(np.any(key_mask, axis=-1)):
        raise ValueError("key_mask leaves a query row with no key to attend to")
    return key_mask


def _query_weights(u, x, qh, b_k, key_mask, spec, theta, scale, fused=False):
    """The query rows' logits ``scale u x^T`` (B, H, T) (with the key-bias term ``b_k . q_h`` for a map that is not
    shift-invariant), masked, through the weight map -> ``(w, uw, xbar, map_cache)``: the map's weights, the
    effective weights (ipr_norm; else ``w``), the weighted mean token (B, H, D) and the map's cache. ``fused``: plain
    softmax in the Numba kernel."""
    h = qh.shape[0]
    w = u @ x.swapaxes(1, 2)  # (B, H, T) logits (without the constant bias term), then the weights
    if spec is not None and not spec.shift_invariant:  # the key-bias term bk_h . q_h matters: add it back
        w += np.einsum("hbk,hk->bh", qh, b_k.reshape(h, -1))[:, :, None]
    w *= scale
    if key_mask is not None:
        np.copyto(w, -np.inf, where=~key_mask[:, None, :])
    map_cache = None
    if spec is None:  # plain softmax, in place
        uw = softmax_forward_inplace(w) if fused else softmax_inplace(w)
    else:  # the maps act on (B, H, Tq, T): one query row
        m4 = None if key_mask is None else key_mask[:, None, None, :]
        uw4, w4, map_cache = spec.forward(w[:, :, None, :], m4, theta)
        uw, w = uw4[:, :, 0], w4[:, :, 0]
    return w, uw, _few_products(uw, x), map_cache  # xbar (B, H, D): attention-weighted mean token of each head


def query_attention_backward(dheads: np.ndarray, cache):
    """-> ``(dxq, dx, dw_qkv, db_qkv)`` (then ``dtheta`` for a map with a learned parameter)."""
    xq, x, w_qkv, b_qkv, qh, u, w, xbar, scale, h, uw, usum, spec, attention, map_cache, fused = cache
    b, t, d = x.shape
    dh = d // h
    do = dheads.reshape(b, h, dh).transpose(1, 0, 2)  # (H, B, Dh)
    dw_qkv = np.empty_like(w_qkv)  # (D, 3D)
    db_qkv = np.zeros(3 * d, dtype=dheads.dtype)  # a shift-invariant map ignores the key bias: its gradient is 0
    # values: out_h = xbar_h Wv_h + (sum u_h) bv_h
    if spec is None or spec.weight_sum == "one":
        db_qkv[2 * d :] = dheads.sum(axis=0)
    elif spec.weight_sum == "free":
        db_qkv[2 * d :] = (usum[:, :, None] * dheads.reshape(b, h, dh)).sum(axis=0).reshape(d)
    dw_qkv[:, 2 * d :] = (xbar.transpose(1, 2, 0) @ do).transpose(1, 0, 2).reshape(d, d)  # (D, H, Dh) -> (D, D)
    wv = w_qkv[:, 2 * d :].reshape(d, h, dh).transpose(1, 2, 0)  # (H, Dh, D)
    dxbar = (do @ wv).transpose(1, 0, 2)  # (B, H, D)
    # xbar = uw x (B, H, T) @ (B, T, D)
    du, dx, ds, dtheta = _query_weights_backward(dxbar, dheads, x, u, w, uw, usum, b_qkv[2 * d :], scale, spec,
                                                 map_cache, fused)
    # u_h = Wk_h q_h
    duh = du.transpose(1, 0, 2)  # (H, B, D)
    dw_qkv[:, d : 2 * d] = (duh.transpose(0, 2, 1) @ qh).transpose(1, 0, 2).reshape(d, d)  # (H, D, Dh) -> (D, D)
    wk = w_qkv[:, d : 2 * d].reshape(d, h, dh).transpose(1, 0, 2)  # (H, D, Dh)
    dqh = duh @ wk  # (H, B, Dh)
    if spec is not None and not spec.shift_invariant:  # the key-bias term scale * bk_h . q_h of every logit
        dc = ds.sum(axis=-1).T  # (H, B), already scaled
        db_qkv[d : 2 * d] = np.einsum("hb,hbk->hk", dc, qh).reshape(d)
        dqh += dc[:, :, None] * b_qkv[d : 2 * d].reshape(h, 1, dh)
    dq = dqh.transpose(1, 0, 2).reshape(b, d)  # (B, D)
    # q = xq Wq + bq
    dxq = dq @ w_qkv[:, :d].T
    dw_qkv[:, :d] = xq.reshape(b, d).T @ dq
    db_qkv[:d] = dq.sum(axis=0)
    return _with_dtheta((dxq, dx, dw_qkv, db_qkv), attention, dtheta)


def _query_weights_backward(dxbar, dheads, x, u, w, uw, usum, b_v, scale, spec, map_cache, fused=False):
    """The backward of :func:`_query_weights` from ``dxbar`` (B, H, D) -> ``(du (B, H, D), dx (B, T, D), ds (B, H, T)
    the logits' gradient, dtheta or None)``; ``b_v`` the value bias (D,), whose term reaches the logits when the
    weights' sum is free."""
    b, h, _ = dxbar.shape
    dw = dxbar @ x.swapaxes(1, 2)  # (B, H, T)
    dtheta = None
    if spec is None:  # softmax backward in place, then the logits w = scale * u x^T
        ds = softmax_vjp_inplace(w, dw) if fused else softmax_vjp(w, dw, overwrite=True)
    else:
        if usum is not None:  # d(sum u)/du = 1 for every key
            dw += (dheads.reshape(b, h, -1) * b_v.reshape(h, -1)).sum(axis=-1)[:, :, None]
        ds4, dtheta = spec.backward(dw[:, :, None, :], map_cache)
        ds = ds4[:, :, 0]
    ds *= scale
    du = ds @ x  # (B, H, D)
    dx = uw.swapaxes(1, 2) @ dxbar  # (B, T, D)
    dx += ds.swapaxes(1, 2) @ u
    return du, dx, ds, dtheta


def attention_weights(cache) -> np.ndarray:
    """The weight map's weights kept in a cache of ``self_attention_forward`` (B, H, T, T) or of
    ``query_attention_forward`` (B, H, 1, T) (before ipr_norm, which only rescales the output)."""
    if len(cache) == 3:  # self-attention: (linear cache, attention cache, n_heads)
        return cache[1][3]
    return cache[6][:, :, None, :]


# ----------------------------------------------------------------------------------------------------------------------
# Full multi-head attention (with the output projection)


def multihead_attention_forward(
    x: np.ndarray,
    w_qkv: np.ndarray,
    b_qkv: np.ndarray,
    w_o: np.ndarray,
    b_o: np.ndarray,
    n_heads: int,
    key_mask=None,
    xq: np.ndarray | None = None,
    attention: AttentionSpec | None = None,
    theta: np.ndarray | None = None,
):
    """Self-attention of ``x`` (B, T, D) -> (B, T, D); or, given query rows ``xq`` (B, D), the shortcut -> (B, D)."""
    if xq is None:
        heads, att_cache = self_attention_forward(x, w_qkv, b_qkv, n_heads, key_mask, attention, theta)
    else:
        heads, att_cache = query_attention_forward(xq, x, w_qkv, b_qkv, n_heads, key_mask, attention, theta)
    out, o_cache = linear_forward(heads, w_o, b_o)
    return out, (att_cache, o_cache, xq is not None)


def multihead_attention_backward(dout: np.ndarray, cache):
    """-> ``(dx, dw_qkv, db_qkv, dw_o, db_o)``, or with query rows ``(dxq, dx, dw_qkv, db_qkv, dw_o, db_o)``; then
    ``dtheta`` for a map with a learned parameter."""
    att_cache, o_cache, shortcut = cache
    dheads, dw_o, db_o = linear_backward(dout, o_cache)
    grads = query_attention_backward(dheads, att_cache) if shortcut else self_attention_backward(dheads, att_cache)
    n = 4 if shortcut else 3
    return (*grads[:n], dw_o, db_o, *grads[n:])
