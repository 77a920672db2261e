"""The float64 reference of attention's backward pass, and the masks of the gradient battery.

Notation and shapes (``r = H / G`` query heads share one key/value head; query head ``h`` reads KV head ``h // r``,
as ``repeat_interleave`` does)::

    q (B, H, L, d_k)   K (B, G, N, d_k)   V (B, G, N, d_v)   dO (B, H, L, d_v)   sink (H,) or None
    bias (H, L, N) or None: an additive logit bias (ALiBi, relative positions), learned
    mask (B or 1, 1 or H, L, N) bool, True = attend     keep (B, H, L, N) bool, the forward's dropout mask

    forward                                             backward (llm.c style: each line the adjoint of one above)
    s  = scale q K^T + bias   (B, H, L, N)              dq = scale dS K;  dK = sum over the group of scale dS^T q
                                                        dbias = sum over the batch of dS
    c  = cap tanh(s / cap)    (softcap; c = s without)  dS = dC (1 - tanh^2(s / cap))
    c  = -inf where masked                              (masked entries: P = 0, so dC = 0 there)
    z  = log(sum_j exp(c_j) + exp(sink_h))  (B, H, L)   dsink_h = -sum_{b, l} P_sink D
    P  = exp(c - z);  P_sink = exp(sink_h - z)          dC = P (dP - D),  D = rowsum(dO * O)  (B, H, L)
    Pd = P keep / (1 - p)                               dP = (dO V^T) keep / (1 - p)
    O  = Pd V                 (B, H, L, d_v)            dV = sum over the group of Pd^T dO

``scale = tau / sqrt(d_k)``. ``D = rowsum(dO * O) = rowsum(P * dP)`` holds with dropout too, which is why kernels
use it (they never store ``P``). A row that attends no key and has no sink (fully masked) has ``P = 0``, ``O = 0`` and
zero gradients: the convention of PyTorch's SDPA since 2.5, FlashAttention and MLX.
"""

from __future__ import annotations

import math

import numpy as np

from .arrays import causal_mask

__all__ = ["attention_backward_reference", "expand_heads", "sum_groups", "window_mask", "top_left_mask", "full_mask"]


def expand_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """``x (B, G, ...)`` repeated to ``(B, heads, ...)``: head ``h`` is ``x[:, h // (heads // G)]``."""
    return np.repeat(x, heads // x.shape[1], axis=1)


def sum_groups(x: np.ndarray, groups: int) -> np.ndarray:
    """``x (B, H, ...)`` summed over each group of ``H / groups`` consecutive heads: ``(B, groups, ...)``."""
    B, H = x.shape[:2]
    return x.reshape(B, groups, H // groups, *x.shape[2:]).sum(axis=2)


def window_mask(n_queries: int, n_keys: int, window: int) -> np.ndarray:
    """Causal sliding window, bottom-right aligned: query ``l`` (at position ``p = N - L + l``) attends the
    ``window`` keys ``p - window + 1 .. p``."""
    pos = n_keys - n_queries + np.arange(n_queries)[:, None]
    j = np.arange(n_keys)[None, :]
    return (j <= pos) & (j > pos - window)


def top_left_mask(n_queries: int, n_keys: int) -> np.ndarray:
    """Causal mask aligned top-left (PyTorch's ``is_causal``): query ``l`` attends keys ``0 .. l``."""
    return np.tril(np.ones((n_queries, n_keys), dtype=bool))


def _forward(q, K, V, *, tau, mask, softcap, sink, keep, dropout_p, bias=None):
    H, d_k = q.shape[1], q.shape[-1]
    Kh, Vh = expand_heads(K, H), expand_heads(V, H)
    scale = tau / math.sqrt(d_k)
    s = scale * np.matmul(q, np.swapaxes(Kh, -1, -2))
    if bias is not None:
        s = s + bias
    th = np.tanh(s / softcap) if softcap else None
    c = softcap * th if softcap else s
    m = np.ones(s.shape, dtype=bool) if mask is None else np.broadcast_to(mask, s.shape)
    cm = np.where(m, c, -np.inf)
    mx = cm.max(axis=-1)
    if sink is not None:
        mx = np.maximum(mx, np.broadcast_to(np.asarray(sink)[None, :, None], mx.shape))
    empty = ~np.isfinite(mx)  # no key and no sink: P = 0
    mx = np.where(empty, 0.0, mx)
    e = np.where(m, np.exp(cm - mx[..., None]), 0.0)
    total = e.sum(axis=-1)
    e_sink = np.exp(np.asarray(sink)[None, :, None] - mx) if sink is not None else np.zeros_like(mx)
    total = total + e_sink
    safe = np.where(empty, 1.0, total)
    P = e / safe[..., None]
    P_sink = np.where(empty, 0.0, e_sink / safe)
    drop = np.ones(s.shape) if keep is None else keep / (1.0 - dropout_p)
    Pd = P * drop
    O = np.matmul(Pd, Vh)
    return dict(s=s, th=th, P=P, P_sink=P_sink, Pd=Pd, drop=drop, O=O, Kh=Kh, Vh=Vh, scale=scale, mask=m,
                lse=np.where(empty, -np.inf, mx + np.log(safe)))


def attention_backward_reference(q, K, V, dO, *, tau=1.0, mask=None, softcap=None, sink=None, keep=None,
                                 dropout_p=0.0, bias=None) -> dict:
    """The exact (float64) forward and backward of softmax attention on the given inputs.

    Parameters
    ----------
    q, K, V, dO : numpy.ndarray
        ``q (B, H, L, d_k)``, ``K (B, G, N, d_k)``, ``V (B, G, N, d_v)``, ``dO (B, H, L, d_v)``; ``G`` divides ``H``.
    tau : float
        Temperature: logits ``tau q.k / sqrt(d_k)``.
    mask : numpy.ndarray, optional
        Boolean, broadcastable to ``(B, H, L, N)``, True = attend (causal and window masks included).
    softcap : float, optional
        Logit softcapping ``cap tanh(s / cap)`` before the mask.
    sink : numpy.ndarray, optional
        A learned sink logit per query head ``(H,)``: an extra key with no value in the softmax's denominator.
    bias : numpy.ndarray, optional
        An additive logit bias ``(H, L, N)`` (shared by the batch, added before the softcap), learned: its
        gradient ``dbias`` is ``dS`` summed over the batch.
    keep, dropout_p : numpy.ndarray, float
        The forward's dropout mask ``(B, H, L, N)`` (True = kept) and probability; kept weights are divided by
        ``1 - dropout_p``.

    Returns
    -------
    dict
        ``o``, ``dq``, ``dk``, ``dv`` (shaped like ``q``... ``V``), ``dsink`` (``(H,)``, or None without a sink),
        ``dbias`` (``(H, L, N)``, or None without a bias), and
        the intermediates the error model reads (``P``, ``P_sink``, ``Pd``, ``dP``, ``D``, ``dS``, ``s``, ``th``,
        ``drop``, ``Kh``, ``Vh``, ``scale``).

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing.grad_reference import attention_backward_reference
    >>> rng = np.random.default_rng(0)
    >>> q, K, V, dO = (rng.normal(size=s) for s in [(1, 2, 3, 4), (1, 1, 5, 4), (1, 1, 5, 2), (1, 2, 3, 2)])
    >>> g = attention_backward_reference(q, K, V, dO)
    >>> g["dk"].shape, g["dv"].shape
    ((1, 1, 5, 4), (1, 1, 5, 2))
    """
    f = _forward(q, K, V, tau=tau, mask=mask, softcap=softcap, sink=sink, keep=keep, dropout_p=dropout_p, bias=bias)
    G = K.shape[1]
    P, Pd, O = f["P"], f["Pd"], f["O"]
    dv = sum_groups(np.matmul(np.swapaxes(Pd, -1, -2), dO), G)
    dP = np.matmul(dO, np.swapaxes(f["Vh"], -1, -2)) * f["drop"]
    D = (dO * O).sum(axis=-1)
    dC = P * (dP - D[..., None])
    dS = dC * (1.0 - f["th"] ** 2) if softcap else dC
    dq = f["scale"] * np.matmul(dS, f["Kh"])
    dk = sum_groups(f["scale"] * np.matmul(np.swapaxes(dS, -1, -2), q), G)
    dsink = None if sink is None else -(f["P_sink"] * D).sum(axis=(0, 2))
    dbias = None if bias is None else dS.sum(axis=0)
    return dict(f, o=O, dq=dq, dk=dk, dv=dv, dsink=dsink, dbias=dbias, dP=dP, D=D, dS=dS, bias=bias)


def full_mask(kind: str, n_queries: int, n_keys: int, *, window: int = 0, given=None):
    """The boolean mask ``(.., L, N)`` of a mask kind: ``"none"`` (None), ``"causal"`` (bottom-right),
    ``"top_left"``, ``"window"`` (causal sliding window), or the ``given`` mask (``"padding"``, ``"rows"``)."""
    if kind == "none":
        return None
    if kind == "causal":
        return causal_mask(n_queries, n_keys)
    if kind == "top_left":
        return top_left_mask(n_queries, n_keys)
    if kind == "window":
        return window_mask(n_queries, n_keys, window)
    return given
