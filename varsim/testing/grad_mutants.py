"""A catalogue of attention backward kernels at a given precision: correct ones, and the bugs people write in real
backward kernels, each planted into an emulation of a correct fused kernel.

Every entry is a :class:`GradKernel`, a function of the gradient check's protocol
(:func:`varsim.testing.check_gradients`): called as ``kernel(q, K, V, dO, tau=, mask=, causal=, window=, softcap=,
sink=, bias=, dropout_p=, seed=)`` on float64 NumPy arrays holding values of its ``dtype`` (``q (B, H, L, d_k)``,
``K``/``V`` with ``G`` KV heads), it emulates a kernel of that dtype and returns float64 ``{"o", "dq", "dk", "dv",
"dsink", "dbias", "dropout_mask"}`` rounded to the dtype. The default pipeline is flash-style: logits and sums in
the accumulation precision (float32 at 16 bits), ``P`` recomputed from the forward's log-sum-exp, ``P`` and ``dS``
rounded to the dtype before their products, ``D = rowsum(dO * O)`` from the rounded output, dropout from a seeded
generator (``numpy.random.default_rng(seed)``, True = kept, ``>= dropout_p``). :data:`CORRECT_BACKWARD` are correct
kernels; :data:`BACKWARD_MUTANTS` the bug classes, each the default pipeline with one stage changed.
:func:`varsim.testing.backward_power_report` runs them.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .arrays import causal_mask
from .grad_reference import attention_backward_reference, expand_heads, sum_groups, top_left_mask, window_mask
from .precision import round_to

__all__ = ["GradKernel", "CORRECT_BACKWARD", "BACKWARD_MUTANTS", "grad_kernel", "dropout_keep"]


def dropout_keep(seed: int, shape, dropout_p: float) -> np.ndarray:
    """The emulated kernels' dropout mask: ``numpy.random.default_rng(seed).random(shape) >= dropout_p``."""
    return np.random.default_rng(seed).random(shape) >= dropout_p


def _masks(L, N, mask, causal, window, top_left):
    m = None if mask is None else np.asarray(mask, dtype=bool)
    if window:
        w = window_mask(L, N, window)
        m = w if m is None else m & w
    elif causal:
        c = top_left_mask(L, N) if top_left else causal_mask(L, N)
        m = c if m is None else m & c
    return m


@dataclasses.dataclass(frozen=True)
class GradKernel:
    """One catalogue entry: an attention forward and backward, correct or with one bug, emulated at ``dtype``.

    Parameters
    ----------
    name, description : str
        The catalogue key and one line on what it does.
    bug : str
        ``""`` (the correct fused pipeline) or the stage changed (see :data:`BACKWARD_MUTANTS`).
    style : {"fused", "reference", "eager", "float32"}
        The correct kernel the bug is planted into: flash-style fused (default), the float64 reference rounded,
        unfused operations in the dtype (Hugging Face's eager attention under autograd), or every intermediate in
        the accumulation precision.
    needs : frozenset of str
        What the case must have for the bug to show (``"softcap"``, ``"sink"``, ``"dropout"``, ``"mask"``,
        ``"grouped"``, ``"causal"``, ``"causal_tiles"``: a causal case with fewer queries than keys and more than
        128 keys).
    dtype : str
        The emulated precision (set with :meth:`at`).

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing.grad_mutants import grad_kernel
    >>> rng = np.random.default_rng(0)
    >>> q, K, V, dO = (rng.normal(size=s) for s in [(1, 2, 3, 8), (1, 1, 5, 8), (1, 1, 5, 4), (1, 2, 3, 4)])
    >>> g = grad_kernel("group_grads_not_summed").at("float32")(q, K, V, dO)
    >>> g["dk"].shape
    (1, 1, 5, 8)
    """

    name: str
    description: str
    bug: str = ""
    style: str = "fused"
    needs: frozenset = frozenset()
    dtype: str = "float64"

    def at(self, dtype: str) -> "GradKernel":
        """The same kernel emulated at ``dtype``."""
        return dataclasses.replace(self, dtype=dtype)

    @property
    def label(self) -> str:
        """How the check names it."""
        return f"{self.name}[{self.dtype}]"

    def __call__(self, q, K, V, dO, *, tau=1.0, mask=None, causal=False, window=0, softcap=None, sink=None,
                 bias=None, dropout_p=0.0, seed=0):
        L, N = q.shape[-2], K.shape[-2]
        m = _masks(L, N, mask, causal, window, False)
        keep = dropout_keep(seed, (q.shape[0], q.shape[1], L, N), dropout_p) if dropout_p else None
        if self.style == "reference":
            g = attention_backward_reference(q, K, V, dO, tau=tau, mask=m, softcap=softcap, sink=sink, keep=keep,
                                             dropout_p=dropout_p, bias=bias)
            out = {k: g[k] for k in ("o", "dq", "dk", "dv", "dsink", "dbias")}
        else:
            m_bwd = _masks(L, N, mask, causal, window, True) if self.bug == "backward_causal_top_left" else m
            m_bwd = None if self.bug == "backward_mask_ignored" else m_bwd
            keep_bwd = keep
            if keep is not None and self.bug == "dropout_mask_differs":
                keep_bwd = dropout_keep(seed + 1, keep.shape, dropout_p)
            tiled = causal or window or self.bug != "kv_tile_start_top_left"
            kern = self if tiled else dataclasses.replace(self, bug="")
            out = _emulate(kern, q, K, V, dO, tau, m, m_bwd, softcap, sink, keep, keep_bwd, dropout_p, bias)
        with np.errstate(over="ignore", invalid="ignore"):
            out = {k: (None if v is None else round_to(v, self.dtype)) for k, v in out.items()}
        out["dropout_mask"] = keep
        return out


def _acc(dtype):
    return np.float64 if dtype in ("float64",) else np.float32


def _logits(kern, q, Kh, tau, softcap, acc, bias=None):
    r = (lambda x: round_to(x, kern.dtype).astype(acc)) if kern.style == "eager" else (lambda x: x)
    s = r(np.matmul(q.astype(acc), np.swapaxes(Kh, -1, -2).astype(acc)) * acc(tau / math.sqrt(q.shape[-1])))
    s = s if bias is None else r(s + np.asarray(bias, dtype=acc))
    th = np.tanh(s / acc(softcap)) if softcap else None
    return s, th, (r(acc(softcap) * th) if softcap else s)


def _probabilities(c, m, sink, acc):
    """Masked softmax with an optional sink, the forward's log-sum-exp, and fully masked rows set to 0."""
    cm = c if m is None else np.where(m, c, -np.inf)
    mx = cm.max(axis=-1)
    if sink is not None:
        mx = np.maximum(mx, np.asarray(sink, dtype=acc)[None, :, None])
    empty = ~np.isfinite(mx)
    mx = np.where(empty, 0.0, mx).astype(acc)
    total = np.exp(cm - mx[..., None]).sum(axis=-1, dtype=acc)
    if sink is not None:
        total = total + np.exp(np.asarray(sink, dtype=acc)[None, :, None] - mx)
    lse = np.where(empty, np.inf, mx + np.log(np.where(empty, 1.0, total))).astype(acc)
    return lse


def _emulate(kern, q, K, V, dO, tau, m, m_bwd, softcap, sink, keep, keep_bwd, p, bias=None):
    """Forward and backward of the fused pipeline with ``kern.bug`` planted (see the module docstring)."""
    acc = np.float64 if kern.style == "float32" and kern.dtype == "float64" else _acc(kern.dtype)
    rd = (lambda x: x) if kern.style == "float32" else (lambda x: round_to(x, kern.dtype).astype(acc))
    H, G = q.shape[1], K.shape[1]
    Kh, Vh = expand_heads(K, H), expand_heads(V, H)
    if kern.bug == "group_heads_tiled":  # KV head h % G instead of h // r (tile, not repeat_interleave)
        Kh, Vh = np.tile(K, (1, H // G, 1, 1)), np.tile(V, (1, H // G, 1, 1))
    s, th, c = _logits(kern, q, Kh, tau, softcap, acc, bias)
    lse = _probabilities(c, m, sink, acc)
    cb = c
    if bias is not None and kern.bug == "backward_bias_ignored":  # P recomputed from the logits without the bias
        _, th, cb = _logits(kern, q, Kh, tau, softcap, acc)
    with np.errstate(invalid="ignore"):
        P = np.exp((c if m is None else np.where(m, c, -np.inf)) - lse[..., None]).astype(acc)
        Pb = np.exp((cb if m_bwd is None else np.where(m_bwd, cb, -np.inf)) - lse[..., None]).astype(acc)
    if kern.style == "eager":  # softmax output cast to the dtype
        P, Pb = rd(P), rd(Pb)
    drop = 1.0 if keep is None else keep / acc(1.0 - p)
    drop_b = 1.0 if keep_bwd is None else (keep_bwd if kern.bug == "dropout_not_rescaled" else
                                           keep_bwd / acc(1.0 - p))
    O = round_to(np.matmul(rd(P * drop), Vh.astype(acc)), kern.dtype).astype(acc)
    Pdb = Pb if kern.bug == "dv_without_dropout" else Pb * drop_b
    dv_h = np.matmul(np.swapaxes(rd(Pdb), -1, -2), dO.astype(acc))
    dP = np.matmul(dO.astype(acc), np.swapaxes(Vh, -1, -2).astype(acc))
    dP = rd(dP) if kern.style == "eager" else dP
    dP = dP * drop_b
    D = _delta(kern.bug, dO.astype(acc), O, Pb, dP, c, m_bwd)
    dS = Pb * (dP - D[..., None])
    if softcap and kern.bug != "softcap_derivative_missing":
        dS = dS * (1 - th * th)
    dS = rd(dS)
    scale = acc(tau / math.sqrt(q.shape[-1]))
    dq = np.matmul(dS, Kh.astype(acc)) * (1.0 if kern.bug == "dq_missing_scale" else scale)
    if kern.bug == "dq_accumulated_in_dtype":
        dq = _sum_in_dtype(dS[..., :, None] * Kh.astype(acc)[..., None, :, :], kern.dtype, acc) * scale
    if kern.bug == "kv_tile_start_top_left":  # dK, dV: query tiles before the key tile skipped (causal kernels)
        Pdb, dS = Pdb * _tile_reached(*dS.shape[-2:]), dS * _tile_reached(*dS.shape[-2:])
        dv_h = np.matmul(np.swapaxes(rd(Pdb), -1, -2), dO.astype(acc))
    dk_h = np.matmul(np.swapaxes(dS, -1, -2), q.astype(acc)) * (1.0 if kern.bug == "dk_missing_scale" else scale)
    dk, dv = (_group(kern.bug, x, G) for x in (dk_h, dv_h))
    if kern.bug == "group_heads_tiled":
        dk, dv = (x.reshape(x.shape[0], H // G, G, *x.shape[2:]).sum(axis=1) for x in (dk_h, dv_h))
    dsink = None
    if sink is not None:
        Ps = np.exp(np.asarray(sink, dtype=acc)[None, :, None] - lse)
        dsink = np.zeros(H) if kern.bug == "dsink_missing" else -(Ps * D).sum(axis=(0, 2))
    dbias = None
    if bias is not None:
        dbias = np.zeros(dS.shape[1:]) if kern.bug == "dbias_missing" else dS.sum(axis=0)
    return dict(o=O, dq=dq, dk=dk, dv=dv, dsink=dsink, dbias=dbias)


def _tile_reached(L: int, N: int, tile: int = 128) -> np.ndarray:
    """``(L, N)``: True where the dK/dV loop of key tile ``j // tile`` reaches query ``l`` when it starts at query
    tile ``j // tile`` (the top-left causal rule) instead of the bottom-right one: queries of earlier tiles are
    skipped, which is harmless when ``L == N`` and loses gradient when the queries are the last ``L`` of ``N``."""
    return (np.arange(L)[:, None] // tile) >= (np.arange(N)[None, :] // tile)


def _delta(bug, dO, O, P, dP, c, m):
    """``D = rowsum(dO * O)``, or the bug's wrong term."""
    if bug == "delta_rowsum_dO":
        return dO.sum(axis=-1)
    if bug == "delta_omitted":
        return np.zeros(dO.shape[:-1], dtype=dO.dtype)
    if bug == "delta_unnormalised_P":  # rowsum(P~ dP) with P~ = exp(c - rowmax), not divided by the sum
        cm = c if m is None else np.where(m, c, -np.inf)
        mx = cm.max(axis=-1, keepdims=True)
        Pu = np.exp(cm - np.where(np.isfinite(mx), mx, 0.0))
        return (Pu * dP).sum(axis=-1)
    return (dO * O).sum(axis=-1)


def _sum_in_dtype(terms, dtype, acc):
    """Sum over axis -2 (the keys) with a running sum rounded to ``dtype`` at every term."""
    total = np.zeros(terms.shape[:-2] + terms.shape[-1:], dtype=acc)
    for j in range(terms.shape[-2]):
        total = round_to(total + terms[..., j, :], dtype).astype(acc)
    return total


def _group(bug, x, G):
    if bug == "group_grads_not_summed":  # the last query head of each group overwrites the others
        B, H = x.shape[:2]
        return x.reshape(B, G, H // G, *x.shape[2:])[:, :, -1]
    if bug == "group_grads_averaged":
        return sum_groups(x, G) / (x.shape[1] // G)
    return sum_groups(x, G)


def _k(name, description, bug="", style="fused", needs=()):
    return GradKernel(name, description, bug=bug, style=style, needs=frozenset(needs))


CORRECT_BACKWARD = {k.name: k for k in (
    _k("reference", "the float64 reference, outputs rounded to the dtype", style="reference"),
    _k("fused", "flash-style: float32 accumulation at 16 bits, P and dS rounded to the dtype before their products"),
    _k("float32_math", "every intermediate in the accumulation precision, outputs rounded", style="float32"),
)}
"""The correct backward kernels: name -> :class:`GradKernel` (a check that fails one is a false alarm)."""

EAGER_BACKWARD = _k("eager", "unfused operations with every intermediate rounded to the dtype (eager autograd)",
                    style="eager")
"""Autograd through unfused operations in the dtype: correct, and checked under ``profile="eager"``."""

BACKWARD_MUTANTS = {k.name: k for k in (
    _k("dq_missing_scale", "dq not multiplied by the softmax scale tau / sqrt(d_k)", "dq_missing_scale"),
    _k("dk_missing_scale", "dK not multiplied by the softmax scale", "dk_missing_scale"),
    _k("delta_rowsum_dO", "D = rowsum(dO) instead of rowsum(dO * O)", "delta_rowsum_dO"),
    _k("delta_unnormalised_P", "D = rowsum(P~ * dP) with P~ the unnormalised exp(s - rowmax)", "delta_unnormalised_P"),
    _k("delta_omitted", "dS = P * dP: the rowsum(dO * O) term dropped", "delta_omitted"),
    _k("backward_mask_ignored", "the backward recomputes P without the mask", "backward_mask_ignored",
       needs={"mask"}),
    _k("backward_causal_top_left", "the backward's causal mask aligned top-left, the forward's bottom-right",
       "backward_causal_top_left", needs={"causal"}),
    _k("softcap_derivative_missing", "softcap's 1 - tanh^2 factor missing from dS", "softcap_derivative_missing",
       needs={"softcap"}),
    _k("group_grads_not_summed", "dK, dV of a KV head: the last query head of its group overwrites the others",
       "group_grads_not_summed", needs={"grouped"}),
    _k("group_grads_averaged", "dK, dV of a KV head averaged over its group instead of summed",
       "group_grads_averaged", needs={"grouped"}),
    _k("group_heads_tiled", "query head h reads KV head h % G (tile) instead of h // (H / G) (repeat_interleave)",
       "group_heads_tiled", needs={"grouped"}),
    _k("dropout_mask_differs", "the backward regenerates the dropout mask from another seed/offset",
       "dropout_mask_differs", needs={"dropout"}),
    _k("dropout_not_rescaled", "the backward's dropout mask not divided by 1 - p", "dropout_not_rescaled",
       needs={"dropout"}),
    _k("dv_without_dropout", "dV from the weights before dropout", "dv_without_dropout", needs={"dropout"}),
    _k("dsink_missing", "no gradient for the sink logits", "dsink_missing", needs={"sink"}),
    _k("dbias_missing", "no gradient for the additive bias", "dbias_missing", needs={"bias"}),
    _k("backward_bias_ignored", "the backward recomputes P without the additive bias", "backward_bias_ignored",
       needs={"bias"}),
    _k("kv_tile_start_top_left", "dK, dV: the loop over 128-query tiles of key tile n starts at query tile n "
       "(top-left) instead of the bottom-right tile, when queries are fewer than keys", "kv_tile_start_top_left",
       needs={"causal_tiles"}),
    _k("dq_accumulated_in_dtype", "dq summed over the keys in the dtype (low-precision accumulation)",
       "dq_accumulated_in_dtype"),
)}
"""The backward bug classes: name -> :class:`GradKernel`, each the fused pipeline with one stage changed."""


def grad_kernel(name: str) -> GradKernel:
    """The catalogue entry ``name`` (correct, ``"eager"``, or a mutant); an unknown name raises ``ValueError``."""
    if name in CORRECT_BACKWARD:
        return CORRECT_BACKWARD[name]
    if name == EAGER_BACKWARD.name:
        return EAGER_BACKWARD
    if name in BACKWARD_MUTANTS:
        return BACKWARD_MUTANTS[name]
    known = sorted(CORRECT_BACKWARD) + [EAGER_BACKWARD.name] + sorted(BACKWARD_MUTANTS)
    raise ValueError(f"name: unknown backward kernel {name!r}; expected one of {known}")
