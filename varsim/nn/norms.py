"""Normalization layers as forward/backward pairs: LayerNorm, standardization, and their per-head versions.

Notation: B batch, T tokens, D width, H heads, Dh = D / H. Inputs are (..., D); every statistic is per token.

- ``layernorm``: (x - mean) / sqrt(var + eps) over the D features, then a learned gain and bias (D,).
- ``standardize``: the same without gain and bias (the paper's "standardization", as varsim reads it).
- ``*_per_head``: the features are split into H groups of Dh (one per attention head, in the head-concatenated
  layout that the attention layer returns) and each group is normalized on its own; the gain and bias stay (D,),
  i.e. one value per feature of each head.

The variance is the biased one (divide by the number of features), as in torch.nn.LayerNorm.

:data:`NORMS` is the registry of the normalizations after attention that the model can use: name ->
:class:`Normalization` (a forward/backward pair with the model's calling convention, the parameters it owns and
where it acts). The model looks its ``norm`` up there and nowhere else, so a normalization added with
:func:`register_norm` is the one that runs; an unknown name is a ValueError listing the registered ones.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from varsim._common.registry import Registry
from varsim._common.validate import check_positive_int, check_real

from .fused import rows_view

__all__ = [
    "NORMS",
    "Normalization",
    "register_norm",
    "get_norm",
    "standardize_forward",
    "standardize_backward",
    "layernorm_forward",
    "layernorm_backward",
    "standardize_per_head_forward",
    "standardize_per_head_backward",
    "layernorm_per_head_forward",
    "layernorm_per_head_backward",
    "layernorm_fused_forward",
    "layernorm_fused_backward",
]

DEFAULT_EPS = 1e-5


def _check_affine(x, gamma, beta) -> None:
    for name, a in (("gamma", gamma), ("beta", beta)):
        if a.shape != x.shape[-1:]:
            raise ValueError(f"{name} must have shape {x.shape[-1:]} (the width of x), got {a.shape}")


# ----------------------------------------------------------------------------------------------------------------------
# Core: standardize over the last axis


def standardize_forward(x: np.ndarray, eps: float = DEFAULT_EPS):
    """``x`` (..., D) -> ``xhat`` (..., D) with zero mean and unit (biased) variance over the last axis."""
    check_real("eps", eps, minimum=0.0)  # eps < 0 gives NaN; eps = 0 is exact standardization (THEORY.md 4a)
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    xc = x - mean  # (..., D)
    var = np.mean(xc * xc, axis=-1, keepdims=True)  # (..., 1)
    rstd = 1.0 / np.sqrt(var + eps)  # (..., 1)
    xhat = xc * rstd  # (..., D)
    return xhat, (xhat, rstd)


def standardize_backward(dout: np.ndarray, cache):
    """-> ``dx`` = rstd * (dout - mean(dout) - xhat * mean(dout * xhat)), means over the last axis."""
    xhat, rstd = cache
    m1 = dout.mean(axis=-1, keepdims=True)  # (..., 1)
    m2 = np.mean(dout * xhat, axis=-1, keepdims=True)  # (..., 1)
    return (dout - m1 - xhat * m2) * rstd


def layernorm_forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = DEFAULT_EPS):
    """``x`` (..., D), ``gamma`` (D,), ``beta`` (D,) -> ``xhat * gamma + beta`` (..., D)."""
    _check_affine(x, gamma, beta)
    xhat, std_cache = standardize_forward(x, eps)
    out = xhat * gamma
    out += beta
    return out, (std_cache, gamma)


def layernorm_backward(dout: np.ndarray, cache):
    """-> ``(dx, dgamma, dbeta)``."""
    std_cache, gamma = cache
    xhat = std_cache[0]
    d = dout.shape[-1]
    d2 = dout.reshape(-1, d)  # (B*, D)
    dgamma = np.einsum("ij,ij->j", d2, xhat.reshape(-1, d))  # (D,)
    dbeta = d2.sum(axis=0)  # (D,)
    dx = standardize_backward(dout * gamma, std_cache)
    return dx, dgamma, dbeta


# The fused pair (ModelConfig(fused=True), varsim.nn.fused): the same layer in one Numba pass each way


def layernorm_fused_forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = DEFAULT_EPS):
    """``x`` (..., D), ``gamma``/``beta`` (D,) -> ``xhat * gamma + beta`` (..., D), as
    :func:`varsim.nn.norms.layernorm_forward`; cache ``(xhat (R, D), rstd (R,), gamma)``."""
    from ._fused_kernels import layernorm_rows

    _check_affine(x, gamma, beta)
    x2 = rows_view(np.ascontiguousarray(x))
    out = np.empty_like(x2)
    xhat = np.empty_like(x2)
    rstd = np.empty(x2.shape[0], dtype=x2.dtype)
    layernorm_rows(x2, gamma, beta, float(eps), out, xhat, rstd)
    return out.reshape(x.shape), (xhat, rstd, gamma)


def layernorm_fused_backward(dout: np.ndarray, cache):
    """-> ``(dx (..., D), dgamma (D,), dbeta (D,))``."""
    from ._fused_kernels import layernorm_backward_rows

    xhat, rstd, gamma = cache
    d2 = rows_view(np.ascontiguousarray(dout))
    dx = np.empty_like(d2)
    dgamma = np.empty_like(gamma)
    dbeta = np.empty_like(gamma)
    layernorm_backward_rows(d2, xhat, rstd, gamma, dx, dgamma, dbeta)
    return dx.reshape(dout.shape), dgamma, dbeta


# ----------------------------------------------------------------------------------------------------------------------
# Per-head versions: (..., D) viewed as (..., H, Dh)


def _split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    d = x.shape[-1]
    if d % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide the width {d}")
    return x.reshape(*x.shape[:-1], n_heads, d // n_heads)  # (..., H, Dh), a view for contiguous x


def standardize_per_head_forward(x: np.ndarray, n_heads: int, eps: float = DEFAULT_EPS):
    """``x`` (..., D) -> each head's Dh features standardized separately, (..., D)."""
    n_heads = check_positive_int("n_heads", n_heads)
    xhat, cache = standardize_forward(_split_heads(x, n_heads), eps)  # (..., H, Dh)
    return xhat.reshape(x.shape), cache


def standardize_per_head_backward(dout: np.ndarray, cache):
    xhat = cache[0]
    dx = standardize_backward(dout.reshape(xhat.shape), cache)  # (..., H, Dh)
    return dx.reshape(dout.shape)


def layernorm_per_head_forward(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, n_heads: int, eps: float = DEFAULT_EPS
):
    """``x`` (..., D), ``gamma``/``beta`` (D,) -> per-head standardization, then gain and bias per feature."""
    _check_affine(x, gamma, beta)
    xhat, std_cache = standardize_per_head_forward(x, n_heads, eps)  # (..., D)
    out = xhat * gamma
    out += beta
    return out, (std_cache, xhat, gamma)


def layernorm_per_head_backward(dout: np.ndarray, cache):
    """-> ``(dx, dgamma, dbeta)``."""
    std_cache, xhat, gamma = cache
    d = dout.shape[-1]
    d2 = dout.reshape(-1, d)
    dgamma = np.einsum("ij,ij->j", d2, xhat.reshape(-1, d))  # (D,)
    dbeta = d2.sum(axis=0)  # (D,)
    dx = standardize_per_head_backward(dout * gamma, std_cache)
    return dx, dgamma, dbeta


# ----------------------------------------------------------------------------------------------------------------------
# The registry the model dispatches through


@dataclasses.dataclass(frozen=True)
class Normalization:
    """A normalization after attention, as the model calls it.

    ``forward(x, params, n_heads) -> (out, cache)``: ``x`` (..., D); ``params`` maps each name of ``params`` to
    the model's (D,) array. ``backward(dout, cache) -> (dx, param_grads)``: ``param_grads`` maps the same names to
    their (D,) gradients. ``params`` lists ``(name, init)`` pairs, ``init`` "ones" or "zeros"; the model stores
    them as ``block{b}.attn_norm.<name>``. ``per_head``: the normalization acts on the concatenated head outputs
    before the output projection W_o (otherwise on the attention output after it). ``fused``: the pair of the
    fused path (``ModelConfig(fused=True)``, :mod:`varsim.nn.fused`) with the same conventions, or None when the
    normalization has none (the fused model then runs ``forward``/``backward``).
    """

    name: str
    forward: Callable
    backward: Callable
    params: tuple = ()
    per_head: bool = False
    fused: tuple | None = None

    def pair(self, fused: bool) -> tuple:
        """``(forward, backward)`` of the default path, or of the fused path when ``fused`` and it has one."""
        return self.fused if fused and self.fused is not None else (self.forward, self.backward)


#: name -> Normalization, in registration order; the model's only way to find a normalization.
NORMS = Registry("norm", what="normalization", kind=Normalization)


def register_norm(norm: Normalization) -> Normalization:
    """Add ``norm`` to :data:`NORMS` under ``norm.name``; a name already registered is refused."""
    if not isinstance(norm, Normalization):
        raise ValueError(f"norm must be a Normalization, got {type(norm).__name__}")
    for pname, init in norm.params:
        if init not in ("ones", "zeros"):
            raise ValueError(f"norm {norm.name!r}: parameter {pname!r} has init {init!r}; expected 'ones' or 'zeros'")
    return NORMS.add(norm)


get_norm = NORMS.find
"""The normalization named ``name``; ValueError naming the parameter for an unknown name."""


_AFFINE = (("gamma", "ones"), ("beta", "zeros"))


def _affine_backward(back):
    def backward(dout, cache):
        dx, dgamma, dbeta = back(dout, cache)
        return dx, {"gamma": dgamma, "beta": dbeta}

    return backward


register_norm(Normalization(
    "none",
    forward=lambda x, params, n_heads: (x, None),
    backward=lambda dout, cache: (dout, {}),
))
register_norm(Normalization(
    "layernorm",
    forward=lambda x, params, n_heads: layernorm_forward(x, params["gamma"], params["beta"]),
    backward=_affine_backward(layernorm_backward),
    params=_AFFINE,
    fused=(lambda x, params, n_heads: layernorm_fused_forward(x, params["gamma"], params["beta"]),
           _affine_backward(layernorm_fused_backward)),
))
register_norm(Normalization(
    "standardize",
    forward=lambda x, params, n_heads: standardize_forward(x),
    backward=lambda dout, cache: (standardize_backward(dout, cache), {}),
))
register_norm(Normalization(
    "layernorm_per_head",
    forward=lambda x, params, n_heads: layernorm_per_head_forward(x, params["gamma"], params["beta"], n_heads),
    backward=_affine_backward(layernorm_per_head_backward),
    params=_AFFINE,
    per_head=True,
))
register_norm(Normalization(
    "standardize_per_head",
    forward=lambda x, params, n_heads: standardize_per_head_forward(x, n_heads),
    backward=lambda dout, cache: (standardize_per_head_backward(dout, cache), {}),
    per_head=True,
))
