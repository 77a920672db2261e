"""Ready-made ``attention_fn``s for :func:`varsim.sim.measure_variance` and the checks of :mod:`varsim.testing`.

An ``attention_fn`` maps a batch ``q (S, d_k)``, ``K (S, N, d_k)``, ``V (S, N, d_v)`` to ``o (S, d_v)`` or to
``(o, w)`` with the weights ``w (S, N)``. :func:`softmax_attention` is the plain NumPy reference; the registry
:data:`ATTENTION_FNS` maps a name to a factory ``(**params) -> attention_fn`` and :func:`attention_fn` looks one up,
so registering another variant is one line in that dict.
"""

from __future__ import annotations

import math

import numpy as np

from varsim._common.validate import check_choice, check_real

__all__ = ["softmax_attention", "softmax_attention_nd", "SoftmaxAttention", "ATTENTION_FNS", "attention_fn",
           "expand_kv_heads"]


def softmax_attention(q, K, V, *, tau: float = 1.0, return_weights: bool = True):
    """Reference softmax attention ``o = softmax(tau q.K^T / sqrt(d_k)) V``, batched over sequences.

    Parameters
    ----------
    q : array (S, d_k)
        One query per sequence.
    K : array (S, N, d_k)
        Keys.
    V : array (S, N, d_v)
        Values.
    tau : float
        Temperature multiplying the logits (>= 0; 0 gives uniform weights).
    return_weights : bool
        Also return the weights.

    Returns
    -------
    o : array (S, d_v)
        The outputs.
    w : array (S, N)
        The weights; returned (as ``(o, w)``) only when ``return_weights``.

    Raises
    ------
    ValueError
        Arrays of other shapes, naming the argument.

    See Also
    --------
    softmax_attention_nd : several queries, any batch axes, a mask.
    SoftmaxAttention : this function with its temperature bound.

    Notes
    -----
    The logits are max-subtracted per sequence before ``exp``, so logits of any finite size give finite weights
    (the largest becomes ``exp(0) = 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing import softmax_attention
    >>> rng = np.random.default_rng(0)
    >>> q, K, V = rng.normal(size=(2, 8)), rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 3))
    >>> o, w = softmax_attention(q, K, V, tau=2.0)
    >>> o.shape, w.shape, np.allclose(w.sum(axis=1), 1.0)
    ((2, 3), (2, 5), True)
    """
    q = np.asarray(q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    _check_shapes(q, K, V)
    d_k = q.shape[-1]
    # phase 1: scaled logits (S, N)
    logits = np.matmul(K, q[:, :, None])[:, :, 0] * (tau / math.sqrt(d_k))
    # phase 2: max-subtracted softmax over the keys
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    w = e / e.sum(axis=1, keepdims=True)
    # phase 3: weighted sum of the values (S, d_v)
    o = np.matmul(w[:, None, :], V)[:, 0, :]
    return (o, w) if return_weights else o


def _check_shapes(q: np.ndarray, K: np.ndarray, V: np.ndarray) -> None:
    """ValueError naming the argument unless ``q (S, d_k)``, ``K (S, N, d_k)``, ``V (S, N, d_v)`` with N >= 1."""
    for name, a, dims in (("q", q, "(S, d_k)"), ("K", K, "(S, N, d_k)"), ("V", V, "(S, N, d_v)")):
        if a.ndim != len(dims.split(",")):
            raise ValueError(f"{name} must have shape {dims}, got an array of shape {a.shape}")
    S, d_k = q.shape
    if K.shape[0] != S or K.shape[2] != d_k:
        raise ValueError(f"K must have shape (S, N, d_k) = ({S}, N, {d_k}) to match q {q.shape}, got {K.shape}")
    if K.shape[1] < 1:
        raise ValueError(f"K must hold at least one key (N >= 1), got shape {K.shape}")
    if V.shape[:2] != K.shape[:2]:
        raise ValueError(f"V must have shape (S, N, d_v) = ({K.shape[0]}, {K.shape[1]}, d_v) to match K {K.shape}, "
                         f"got {V.shape}")


def softmax_attention_nd(q, K, V, *, tau: float = 1.0, mask=None):
    """Reference softmax attention with any leading batch axes, several queries and a boolean mask (float64).

    Parameters
    ----------
    q : array (..., L, d_k)
        Queries.
    K : array (..., N, d_k)
        Keys; with fewer heads than ``q`` (axis -3), grouped-query attention (:func:`expand_kv_heads`).
    V : array (..., N, d_v)
        Values, with the heads of ``K``.
    tau : float
        Temperature multiplying the logits ``q.K^T / sqrt(d_k)``.
    mask : array of bool, optional
        Broadcastable to ``(..., L, N)``, True where a query may attend a key; every query must see at least one
        key (else ValueError).

    Returns
    -------
    o : array (..., L, d_v)
        The outputs.
    w : array (..., L, N)
        ``softmax(tau q.K^T / sqrt(d_k))`` over the unmasked keys, max-subtracted.

    See Also
    --------
    softmax_attention : one query per sequence, the batch layout.
    varsim.testing.check_against_reference : uses this as its default reference.

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing import softmax_attention_nd
    >>> rng = np.random.default_rng(0)
    >>> q, K, V = rng.normal(size=(2, 4, 3, 8)), rng.normal(size=(2, 4, 6, 8)), rng.normal(size=(2, 4, 6, 5))
    >>> causal = np.tril(np.ones((3, 6), dtype=bool), k=3)  # bottom-right aligned
    >>> o, w = softmax_attention_nd(q, K, V, mask=causal)
    >>> o.shape, bool(w[..., 0, 4:].max() == 0.0)
    ((2, 4, 3, 5), True)
    """
    q = np.asarray(q, dtype=np.float64)
    K, V = expand_kv_heads(q, np.asarray(K, dtype=np.float64), np.asarray(V, dtype=np.float64))
    logits = np.matmul(q, np.swapaxes(K, -1, -2)) * (tau / math.sqrt(q.shape[-1]))
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if not np.all(np.any(np.broadcast_to(mask, logits.shape), axis=-1)):
            raise ValueError("mask: every query must attend at least one key")
        logits = np.where(mask, logits, -np.inf)
    logits -= logits.max(axis=-1, keepdims=True)
    e = np.exp(logits)
    w = e / e.sum(axis=-1, keepdims=True)
    return np.matmul(w, V), w


def expand_kv_heads(q, K, V):
    """Grouped-query keys and values expanded to the query heads: query head ``h`` of ``H`` reads key head
    ``h // (H // H_kv)`` (``repeat_interleave``, PyTorch's ``enable_gqa`` and flash kernels' convention). Arrays
    ``(..., H, L, d)``; ``K`` and ``V`` returned unchanged when they have the query heads (or fewer than 3 axes).

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing.attention import expand_kv_heads
    >>> K = np.arange(2.0).reshape(1, 2, 1, 1)
    >>> expand_kv_heads(np.zeros((1, 4, 1, 1)), K, K)[0].ravel().tolist()
    [0.0, 0.0, 1.0, 1.0]
    """
    if q.ndim < 3 or K.ndim < 3 or K.shape[-3] == q.shape[-3]:
        return K, V
    H, Hk = q.shape[-3], K.shape[-3]
    if Hk < 1 or H % Hk:
        raise ValueError(f"K must have a number of heads dividing the queries' {H}, got {Hk}")
    return np.repeat(K, H // Hk, axis=-3), np.repeat(V, H // Hk, axis=-3)


class SoftmaxAttention:
    """:func:`softmax_attention` with its temperature bound: a picklable ``attention_fn`` with a readable name.

    Parameters
    ----------
    tau : float
        Temperature (>= 0).
    return_weights : bool
        Return ``(o, w)`` rather than ``o``.

    Examples
    --------
    >>> from varsim.testing import SoftmaxAttention
    >>> SoftmaxAttention(tau=2.0)
    softmax_attention(tau=2)
    """

    def __init__(self, tau: float = 1.0, return_weights: bool = True):
        self.tau = check_real("tau", tau, minimum=0.0)
        self.return_weights = bool(return_weights)
        self.__qualname__ = f"softmax_attention(tau={self.tau:g})"

    def __call__(self, q, K, V):
        return softmax_attention(q, K, V, tau=self.tau, return_weights=self.return_weights)

    def __repr__(self) -> str:
        return self.__qualname__


ATTENTION_FNS = {
    "softmax": SoftmaxAttention,
}
"""The registry of ready-made attention functions: name -> factory ``(**params) -> attention_fn``.

Register a variant with one line, e.g. ``ATTENTION_FNS["ssmax"] = lambda s=1.0: SSMaxAttention(s)``.
"""


def attention_fn(name: str, **params):
    """The ready-made ``attention_fn`` registered as ``name`` in :data:`ATTENTION_FNS`.

    Parameters
    ----------
    name : str
        A key of :data:`ATTENTION_FNS`; an unknown name raises ``ValueError`` listing the registered ones.
    **params
        Passed to the factory (e.g. ``tau=2.0``).

    Returns
    -------
    callable
        An ``attention_fn`` in the batch layout.

    Examples
    --------
    >>> from varsim.testing import attention_fn
    >>> attention_fn("softmax", tau=0.5)
    softmax_attention(tau=0.5)
    """
    check_choice("name", name, sorted(ATTENTION_FNS))
    return ATTENTION_FNS[name](**params)
