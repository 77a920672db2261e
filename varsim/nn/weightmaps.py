"""Attention weight maps of the transformer (logits -> weights) as forward/backward pairs, and the IPR output
normalization expressed on the weights.

The maps are the registered variants of :mod:`varsim.variants` (names, parameters and their validation live there;
REMEDIES.md 2 gives the formulas). This module adds what training needs: batched forward passes in the model's dtype
with a cache, and hand-written backward passes for the maps the registry declares trainable
(:attr:`varsim.variants.Variant.trainable`; the others are inference-only and have a forward pass only).

Shapes: logits ``z`` (B, H, Tq, T) -- batch, heads, query rows, keys -- already scaled by ``1/sqrt(Dh)``, with
``-inf`` at masked keys; ``key_mask`` a bool array broadcastable to ``z`` (True = the key takes part) or None (every
key takes part). ``n`` is the number of unmasked keys of each row (B, 1|H, Tq|1, 1). The forward functions may
overwrite ``z`` (the callers pass a fresh logits buffer).

============================  =================================================  ==================================
map                           forward                                            backward
============================  =================================================  ==================================
``softmax``                   max-subtracted softmax, in place                   ``w (dw - sum w dw)``
``ssmax``                     ``softmax(s_h ln(n) z)``, ``s_h`` learned per head  same, times ``f``; ``ds_h`` too
``logn``                      ``softmax(f(n) z)``, ``f = ln n / ln n0`` (>= 1    same, times ``f``
                              when clamped)
``sigmoid``                   ``sigmoid(z - ln n)`` (no normalization)           ``dw w (1 - w)``
``entmax15``                  ``[z/2 - t]_+^2``, sum 1 (t by Newton's method,    ``g dw - g (sum g dw)/(sum g)``,
                              then the registry's closed form on the support)    ``g = sqrt(w)`` (see below)
``sparsemax``                 ``[z - t]_+``, sum 1 (the registry's sort)         ``1_S (dw - mean_S dw)``
``critical``                  ``softmax(c sqrt(2 ln n) z / beta0)``              none
``adaptive_temperature``      ``softmax(b(H) z)``, ``H`` the entropy of          none
                              ``softmax(z)``
``topk``                      softmax over the k largest (partition; ties as     none
                              the registry's argpartition)
``permuted_softmax``          softmax of the keys in the registry's fixed        softmax's, its sum in the same
                              permutation, returned in key order (model dtype)   permuted order
============================  =================================================  ==================================

entmax15 backward: on the support S, ``w_i = g_i^2`` with ``g_i = z_i/2 - t`` and ``sum_S g_i^2 = 1``. Differentiating
the constraint, ``sum_S g_i (dz_i/2 - dt) = 0``, so ``dt = (sum_S g_i dz_i) / (2 sum_S g_i)`` and
``dw_i = 2 g_i (dz_i/2 - dt) = g_i dz_i - g_i (sum_S g_j dz_j) / (sum_S g_j)``. The Jacobian
``diag(g) - g g^T / sum g`` is symmetric, so the vector-Jacobian product is the same formula applied to ``dw``
(``g = sqrt(w)`` is 0 off the support, so masked and unsupported keys get no gradient).

IPR normalization (THEORY 4b) of a head's output ``o = sum_i w_i v_i``: ``o' = (o - (sum w) vbar) / sqrt(sum w^2 +
eps)`` with ``vbar`` the mean of the values over the row's unmasked keys. It is linear in the values, so it is the
attention output of the *effective weights* ``u = (w - (sum w) m / n) / sqrt(sum w^2 + eps)`` (``m`` the 0/1 key mask):
``o' = sum_i u_i v_i``. :func:`ipr_norm_forward` returns ``u``; working on the weights keeps the model's query-row
shortcut O(N) (``sum_i u_i = 0``, so the value bias drops out).

:class:`AttentionSpec` bundles a map, its validated parameters and the optional output normalization; the attention
layers (:mod:`varsim.nn.attention`) take one (``None`` = plain softmax, the fast path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from varsim._common.validate import check_choice
from varsim.variants import (
    INFERENCE_ONLY_MAPS,
    OUTPUT_NORMALIZATIONS,
    TRAINABLE_MAPS,
    adaptive_temperature_factor,
    get_output_normalization,
    get_variant,
    key_permutation,
)

from . import _kernels

__all__ = [
    "AttentionSpec",
    "make_attention",
    "TRAINABLE_MAPS",
    "INFERENCE_ONLY_MAPS",
    "OUTPUT_CHOICES",
    "key_counts",
    "weight_map_forward",
    "weight_map_backward",
    "ipr_norm_forward",
    "ipr_norm_backward",
]

OUTPUT_CHOICES = ("none",) + tuple(OUTPUT_NORMALIZATIONS)


# ----------------------------------------------------------------------------------------------------------------------
# Helpers


def key_counts(key_mask, z_shape, dtype) -> np.ndarray:
    """Number of unmasked keys per row, shape broadcastable to ``z_shape[:-1] + (1,)``, in ``dtype``."""
    if key_mask is None:
        return np.full((1,) * len(z_shape), z_shape[-1], dtype=dtype)
    return np.count_nonzero(key_mask, axis=-1, keepdims=True).astype(dtype)


def softmax_inplace(y: np.ndarray) -> np.ndarray:
    """Max-subtracted softmax over the last axis, in place (``-inf`` entries get exactly 0)."""
    y -= y.max(axis=-1, keepdims=True)
    np.exp(y, out=y)
    y /= y.sum(axis=-1, keepdims=True)
    return y


def softmax_vjp(w: np.ndarray, dw: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """``w (dw - sum_j w_j dw_j)``: the vector-Jacobian product of the softmax (masked keys: w = 0, so 0);
    ``overwrite``: computed in place in ``dw``."""
    dy = np.subtract(dw, np.sum(w * dw, axis=-1, keepdims=True), out=dw if overwrite else None)
    dy *= w
    return dy


def _remask(y: np.ndarray, key_mask) -> np.ndarray:
    if key_mask is not None:
        np.copyto(y, -np.inf, where=~np.broadcast_to(key_mask, y.shape))
    return y


def _head_view(theta: np.ndarray, ndim: int) -> np.ndarray:
    """A per-head vector (H,) shaped to broadcast against (B, H, ...) arrays of ``ndim`` dimensions."""
    return theta.reshape((1, -1) + (1,) * (ndim - 2))


# ----------------------------------------------------------------------------------------------------------------------
# Maps: forward(z, key_mask, n, params, theta) -> (w, cache); backward(dw, w, cache) -> (dz, dtheta | None)


def _fwd_softmax(z, key_mask, n, p, theta):
    return softmax_inplace(z), None


def _bwd_softmax(dw, w, cache):
    return softmax_vjp(w, dw), None


def _scaled_forward(z, key_mask, f):
    """``softmax(f z)`` for a factor ``f`` (broadcastable per row); masked keys stay masked whatever ``f`` (also 0)."""
    with np.errstate(invalid="ignore"):  # f = 0 (n = 1) times a masked -inf is NaN: re-masked next
        y = z * f
    return softmax_inplace(_remask(y, key_mask))


def _bwd_scaled(dw, w, f):
    dy = softmax_vjp(w, dw)
    dy *= f
    return dy, None


def _scale_factor(name, n, p, dtype):
    """The registry's factor ``f(n)`` of a scaled softmax (``logn``, ``critical``) on the key counts ``n``, in
    ``dtype`` (``p`` already validated)."""
    return np.asarray(get_variant(name).beta_factor_fn(n, **p)).astype(dtype, copy=False)


def _fwd_logn(z, key_mask, n, p, theta):
    f = _scale_factor("logn", n, p, z.dtype)
    return _scaled_forward(z, key_mask, f), f


def _fwd_ssmax(z, key_mask, n, p, theta):
    if theta is None:
        raise ValueError("attention 'ssmax' needs its per-head scale s (theta), got None")
    logn = np.log(n)
    f = _head_view(theta, z.ndim) * logn  # (B, H, Tq|1, 1)
    w = _scaled_forward(z, key_mask, f)
    if key_mask is not None:  # keep finite logits for ds (0 * -inf would be NaN); masked keys have dy = 0 anyway
        np.copyto(z, 0.0, where=~np.broadcast_to(key_mask, z.shape))
    return w, (z, f, logn)


def _bwd_ssmax(dw, w, cache):
    z, f, logn = cache
    dy = softmax_vjp(w, dw)
    # d/ds_h of softmax(s_h ln(n) z): dy . z ln(n), summed over rows and batch of head h
    ds = (np.sum(dy * z, axis=-1, keepdims=True) * logn).sum(axis=tuple(i for i in range(dy.ndim) if i != 1))
    dy *= f
    return dy, ds.astype(dw.dtype, copy=False)


def _fwd_sigmoid(z, key_mask, n, p, theta):
    z -= np.log(n)
    # stable sigmoid: e = exp(-|x|), w = 1/(1+e) for x >= 0 and e/(1+e) below; x = -inf (masked) gives exactly 0
    e = np.exp(-np.abs(z))
    w = np.where(z >= 0, 1.0, e)
    w /= 1.0 + e
    return w.astype(z.dtype, copy=False), None


def _bwd_sigmoid(dw, w, cache):
    return dw * w * (1.0 - w), None


def _fwd_critical(z, key_mask, n, p, theta):
    return _scaled_forward(z, key_mask, _scale_factor("critical", n, p, z.dtype)), None


def _fwd_adaptive(z, key_mask, n, p, theta):
    # Entropy of softmax(z) per row, H = ln S - sum_j e_j zs_j / S with zs = z - max z, e = exp(zs), S = sum e, then
    # softmax(b(H) z). Masked keys: e = 0 and zs is set to 0, so they add nothing (0 * -inf would be NaN).
    zs = z - z.max(axis=-1, keepdims=True)
    e = np.exp(zs)
    total = e.sum(axis=-1, keepdims=True)
    if key_mask is not None:
        np.copyto(zs, 0.0, where=~np.broadcast_to(key_mask, zs.shape))
    e *= zs
    h = np.log(total.astype(np.float64)) - e.sum(axis=-1, keepdims=True, dtype=np.float64) / total
    del zs, e
    b = adaptive_temperature_factor(h).astype(z.dtype, copy=False)
    return _scaled_forward(z, key_mask, b), None


def _fwd_topk(z, key_mask, n, p, theta):
    # Softmax over the k largest logits per row, the others masked. The k-th largest value by np.partition (values
    # only; ~10x faster than argpartition), keep z >= it. Exact ties at a finite k-th value would keep more than k
    # keys: in those rows only, the registry's rule (argpartition's choice among the tied keys) decides. A row with
    # fewer than k unmasked keys has k-th value -inf and keeps all of them, as the registry does.
    k = p["k"]
    size = z.shape[-1]
    if k >= size:
        return softmax_inplace(z), None
    kth = z.max(axis=-1, keepdims=True) if k == 1 else np.partition(z, size - k, axis=-1)[..., size - k:size - k + 1]
    keep = z >= kth
    tied = np.nonzero((np.count_nonzero(keep, axis=-1) > k) & np.isfinite(kth[..., 0]))  # rows with ties
    rows = z[tied]  # (R, T) copies of the tied rows, before masking
    np.copyto(z, -np.inf, where=~keep)
    if rows.shape[0]:
        idx = np.argpartition(-rows, k - 1, axis=-1)[:, :k]
        top = np.take_along_axis(rows, idx, axis=-1)
        rows.fill(-np.inf)
        np.put_along_axis(rows, idx, top, axis=-1)
        z[tied] = rows
    return softmax_inplace(z), None


def _fwd_entmax15(z, key_mask, n, p, theta):
    # Newton's method from below, then the closed form on the support, row by row in a Numba kernel
    # (varsim.nn._kernels; no sort: faster than the registry's reference, varsim.variants, which sorts every row;
    # benchmarks/bench_inference_maps.py measures both).
    t = z.shape[-1]
    z2 = np.ascontiguousarray(z.reshape(-1, t))
    mask = _NO_MASK if key_mask is None else np.ascontiguousarray(np.broadcast_to(key_mask, z.shape).reshape(-1, t))
    out = np.empty_like(z2)
    _kernels.entmax15_rows(z2, mask, 1e-7 if z.dtype == np.float32 else 1e-10, out)
    return out.reshape(z.shape), None


_NO_MASK = np.zeros((0, 0), dtype=bool)


def _reference(name):
    """Forward by the registry's NumPy reference (float64), cast back to the logits' dtype."""
    ref = get_variant(name).reference

    def fwd(z, key_mask, n, p, theta):
        n_rows = None if n is None else np.broadcast_to(n[..., 0], z.shape[:-1]).astype(np.float64)
        return ref(z.astype(np.float64, copy=False), n_rows, **p).astype(z.dtype, copy=False), None

    return fwd


def _fwd_permuted_softmax(z, key_mask, n, p, theta):
    perm = key_permutation(z.shape[-1])
    w = np.empty_like(z)
    w[..., perm] = softmax_inplace(z[..., perm])
    return w, perm


def _bwd_permuted_softmax(dw, w, perm):
    dz = np.empty_like(dw)
    dz[..., perm] = softmax_vjp(w[..., perm], dw[..., perm])  # its sum in the permuted order too
    return dz, None


def _bwd_entmax15(dw, w, cache):
    g = np.sqrt(w)  # 0 off the support
    gs = g.sum(axis=-1, keepdims=True)  # >= 1: sum g^2 = 1 with every g in [0, 1]
    dz = dw - np.sum(g * dw, axis=-1, keepdims=True) / gs
    dz *= g
    return dz, None


def _bwd_sparsemax(dw, w, cache):
    s = w > 0
    k = np.count_nonzero(s, axis=-1, keepdims=True)
    dz = dw - np.sum(np.where(s, dw, 0.0), axis=-1, keepdims=True) / k
    return np.where(s, dz, 0.0).astype(dw.dtype, copy=False), None


@dataclass(frozen=True)
class _MapImpl:
    forward: Callable
    backward: Callable | None  # None exactly for the registry's inference-only maps
    needs_n: bool
    shift_invariant: bool  # w(z + c) = w(z) for a per-row constant c
    trained_param: str | None = None  # the registry parameter that initialises a learned per-head vector


_IMPLS: dict[str, _MapImpl] = {
    "softmax": _MapImpl(_fwd_softmax, _bwd_softmax, False, True),
    "ssmax": _MapImpl(_fwd_ssmax, _bwd_ssmax, True, True, trained_param="s"),
    "logn": _MapImpl(_fwd_logn, _bwd_scaled, True, True),
    "sigmoid": _MapImpl(_fwd_sigmoid, _bwd_sigmoid, True, False),
    "entmax15": _MapImpl(_fwd_entmax15, _bwd_entmax15, False, True),
    "sparsemax": _MapImpl(_reference("sparsemax"), _bwd_sparsemax, False, True),
    "critical": _MapImpl(_fwd_critical, None, True, True),
    "adaptive_temperature": _MapImpl(_fwd_adaptive, None, False, True),
    "topk": _MapImpl(_fwd_topk, None, False, True),
    "permuted_softmax": _MapImpl(_fwd_permuted_softmax, _bwd_permuted_softmax, False, True),
}


def _impl(name: str) -> _MapImpl:
    """The map's implementation; an inference-only map without its own forward here runs the registry's NumPy
    reference (float64, with the key counts; not assumed shift-invariant, so the key bias is kept)."""
    spec = get_variant(name)  # unknown names: the registry's error, listing the valid ones
    if name in _IMPLS:
        return _IMPLS[name]
    if not spec.trainable:
        return _MapImpl(_reference(name), None, True, False)
    raise ValueError(f"attention {name!r} is registered as trainable but has no forward/backward pair here")


def weight_map_forward(name: str, z: np.ndarray, key_mask=None, theta=None, **params):
    """Weights of the map ``name`` for logits ``z`` (B, H, Tq, T) (``-inf`` at masked keys; overwritten).

    ``params``: the registry's parameters of the map (validated, defaults filled in); ``theta`` (H,): the learned
    per-head parameter of maps that have one (ssmax: ``s``). Returns ``(w, cache)``."""
    impl = _impl(name)
    p = get_variant(name).check_params(params)
    n = key_counts(key_mask, z.shape, z.dtype) if impl.needs_n else None
    w, c = impl.forward(z, key_mask, n, p, theta)
    return w, (name, w, c)


def weight_map_backward(dw: np.ndarray, cache):
    """-> ``(dz, dtheta)`` (``dtheta`` None for maps without a learned parameter); inference-only maps raise."""
    name, w, c = cache
    if not _impl(name).backward:
        raise ValueError(
            f"attention {name!r} is inference-only (no backward pass): train with one of {', '.join(TRAINABLE_MAPS)} "
            "and apply it to the trained model with Transformer.with_attention"
        )
    return _impl(name).backward(dw, w, c)


# ----------------------------------------------------------------------------------------------------------------------
# IPR normalization on the weights


def ipr_norm_forward(w: np.ndarray, key_mask=None, eps: float = 0.0):
    """Effective weights ``u = (w - (sum w) m/n) / sqrt(sum w^2 + eps)`` (same shape as ``w``, keys on the last axis),
    so that ``u @ v`` is the IPR-normalized attention output with ``vbar`` the mean value over the unmasked keys.
    Returns ``(u, cache)``."""
    n = key_counts(key_mask, w.shape, w.dtype)
    m_over_n = (1.0 / n) if key_mask is None else np.broadcast_to(key_mask, w.shape) / n  # (.., T) or scalar
    m_over_n = np.asarray(m_over_n, dtype=w.dtype)
    s = w.sum(axis=-1, keepdims=True)
    r = 1.0 / np.sqrt(np.sum(w * w, axis=-1, keepdims=True) + eps)
    a = w - s * m_over_n  # broadcasts to w's shape
    return a * r, (w, a, r, m_over_n)


def ipr_norm_backward(du: np.ndarray, cache) -> np.ndarray:
    """-> ``dw``: ``du r - sum_j(du_j r m_j / n) - w r^3 sum_j(du_j a_j)`` with ``a = w - (sum w) m/n``."""
    w, a, r, m_over_n = cache
    da = du * r
    dw = da - np.sum(da * m_over_n, axis=-1, keepdims=True)
    dw -= w * (r**3 * np.sum(du * a, axis=-1, keepdims=True))
    return dw


# ----------------------------------------------------------------------------------------------------------------------
# The bundle the attention layers take


@dataclass(frozen=True)
class AttentionSpec:
    """A weight map with validated parameters, and the output normalization (``"none"`` or ``"ipr_norm"``).

    Build it with :func:`make_attention`. ``forward(z, key_mask, theta) -> (u, w, cache)`` gives the effective
    weights ``u`` (the attention output is ``u @ v``) and the map's weights ``w``; ``backward(du, cache) -> (dz,
    dtheta)``.
    """

    name: str = "softmax"
    params: dict = field(default_factory=dict)
    output: str = "none"
    output_params: dict = field(default_factory=dict)

    @property
    def impl(self) -> _MapImpl:
        return _impl(self.name)

    @property
    def is_plain_softmax(self) -> bool:
        return self.name == "softmax" and self.output == "none"

    @property
    def trainable(self) -> bool:
        return get_variant(self.name).trainable

    @property
    def trained_param(self) -> str | None:
        """Name of the registry parameter that initialises a learned per-head vector (``"s"`` for ssmax), or None."""
        return self.impl.trained_param

    @property
    def shift_invariant(self) -> bool:
        """True when adding a constant to a row of logits leaves the weights unchanged (all maps but sigmoid)."""
        return self.impl.shift_invariant

    @property
    def weight_sum(self) -> str:
        """What the effective weights ``u`` sum to per row: ``"one"``, ``"zero"`` (ipr_norm) or ``"free"``."""
        if self.output == "ipr_norm":
            return "zero"
        return "one" if get_variant(self.name).sums_to_one else "free"

    def theta_init(self, n_heads: int, dtype) -> np.ndarray | None:
        """Initial learned per-head parameter (H,), or None for maps without one."""
        if self.trained_param is None:
            return None
        return np.full(n_heads, self.params[self.trained_param], dtype=dtype)

    def forward(self, z: np.ndarray, key_mask=None, theta=None):
        """``z`` (B, H, Tq, T) masked logits (overwritten) -> ``(u, w, cache)``."""
        impl = self.impl
        n = key_counts(key_mask, z.shape, z.dtype) if impl.needs_n else None
        w, c = impl.forward(z, key_mask, n, self.params, theta)
        if self.output == "none":
            return w, w, (w, c, None)
        u, ocache = ipr_norm_forward(w, key_mask, self.output_params["eps"])
        return u, w, (w, c, ocache)

    def backward(self, du: np.ndarray, cache):
        """-> ``(dz, dtheta)``; raises ``ValueError`` for an inference-only map."""
        w, c, ocache = cache
        dw = du if ocache is None else ipr_norm_backward(du, ocache)
        return weight_map_backward(dw, (self.name, w, c))


def make_attention(name: str = "softmax", params: dict | None = None, output: str = "none",
                   output_params: dict | None = None) -> AttentionSpec:
    """A validated :class:`AttentionSpec`: ``name`` a registered weight map (unknown names raise ``ValueError``),
    ``params`` its parameters (defaults filled in), ``output`` ``"none"`` or ``"ipr_norm"`` with ``output_params``
    (``eps``, default 0)."""
    impl = _impl(name)  # noqa: F841 -- validates the name
    p = get_variant(name).check_params(params)
    op = check_output_params(output, output_params)
    return AttentionSpec(name, p, output, op)


def check_output_params(output: str, output_params: dict | None = None) -> dict:
    """Validated parameters of the output normalization ``output`` (``"none"``: no parameters)."""
    if output == "none":
        if output_params:
            raise ValueError(f"attention_output 'none' takes no parameters, got {sorted(output_params)}")
        return {}
    check_choice("attention_output", output, OUTPUT_CHOICES)
    return get_output_normalization(output).check_params(output_params)
