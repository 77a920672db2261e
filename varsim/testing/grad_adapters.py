"""Adapters that turn a forward attention of PyTorch or JAX into the gradient check's protocol through automatic
differentiation (:mod:`varsim.testing.backward`).

```python
grads = torch_gradients(my_attention, dtype="bfloat16")                 # q, k, v (B, H, L, d) like SDPA
grads = torch_gradients(my_flash_attention, dtype="float16", layout="blhd")   # (B, L, H, d) like flash-attn
grads = torch_gradients(my_varlen_attention, layout="packed")   # (T, H, d) with cu_seqlens_q, cu_seqlens_k
```

Your forward gets torch tensors of ``dtype`` (leaves with ``requires_grad``; non-contiguous in the cases that hand
over strided views, with the check's memory order), ``mask`` as a boolean tensor
``(B, 1, L, N)`` (True = attend), ``sink`` (``(H,)``) and ``bias`` (``(H, L, N)``) as tensors with
``requires_grad``, and the other keywords as
Python numbers; it returns ``o``, or ``(o, dropout_mask)`` when it applies dropout. ``o.backward(dO)`` gives the
gradients. Neither library is a dependency of varsim: each is imported when its adapter is called.
"""

from __future__ import annotations

import numpy as np

from varsim._common.validate import check_choice

from .arrays import fn_name
from .backward import accepted_keywords
from .grad_packed import PACKED_MASKS, pack, packed_lengths, unpack

__all__ = ["torch_gradients", "jax_gradients", "TorchGradients", "JaxGradients", "GRAD_LAYOUTS"]

GRAD_LAYOUTS = ("bhld", "blhd", "packed")
"""``"bhld"``: ``q (B, H, L, d_k)`` (PyTorch's SDPA); ``"blhd"``: ``q (B, L, H, d_k)`` (FlashAttention);
``"packed"`` (torch only): variable-length sequences packed along one axis, ``q (T_q, H, d_k)``,
``K (T_k, G, d_k)``, with ``cu_seqlens_q`` and ``cu_seqlens_k`` (int32 tensors) as keywords (flash-attn's
``flash_attn_varlen_func``; :mod:`varsim.testing.grad_packed`)."""


def _to_layout(x, layout):
    return np.swapaxes(x, 1, 2) if layout == "blhd" else x


def _torch_like(torch, x, layout, dtype, device):
    """``x`` in ``layout`` as a torch tensor of ``dtype``: contiguous when ``x`` is, else with ``x``'s memory order
    (the same strides, so a non-contiguous case reaches the function non-contiguous)."""
    y = _to_layout(x, layout)
    if x.flags.c_contiguous:
        return torch.from_numpy(np.ascontiguousarray(y)).to(device=device, dtype=dtype)
    t = torch.empty_strided(y.shape, tuple(st // y.itemsize for st in y.strides), dtype=dtype, device=device)
    with torch.no_grad():
        t.copy_(torch.from_numpy(np.array(y)))
    return t


class TorchGradients:
    """A torch forward wrapped as a backward of the gradient check's protocol (see :func:`torch_gradients`)."""

    def __init__(self, fn, dtype, layout, accepts, device):
        self.fn, self.dtype, self.layout, self.device = fn, dtype, layout, device
        self.accepts = accepted_keywords(fn) if accepts is None else frozenset(accepts)
        self.label = f"{fn_name(fn)} (torch autograd, {dtype})"
        self.mask_kinds = None
        if layout == "packed":  # masks reach the function as sequence lengths, causal within them as causal=True
            causal = "causal" in self.accepts
            self.mask_kinds = tuple(k for k in PACKED_MASKS if causal or k not in ("causal", "window", "varlen"))
            self.accepts = self.accepts | {"mask"}

    def __call__(self, q, K, V, dO, **kw):
        if self.layout == "packed":
            return self._call_packed(q, K, V, dO, kw)
        return self._autograd(q, K, V, dO, kw, self.layout)

    def _call_packed(self, q, K, V, dO, kw):
        """The case packed along one axis (:mod:`varsim.testing.grad_packed`), the gradients unpacked."""
        import torch

        (B, _, L, _), N = q.shape, K.shape[2]
        n_q, n_k, within = packed_lengths(kw.pop("mask", None), B, L, N)
        if within:
            kw["causal"] = True
        for name, n in (("cu_seqlens_q", n_q), ("cu_seqlens_k", n_k)):
            kw[name] = torch.from_numpy(np.concatenate([[0], np.cumsum(n)]).astype(np.int32)).to(self.device)
        grads = self._autograd(pack(q, n_q), pack(K, n_k), pack(V, n_k), pack(dO, n_q), kw, "packed")
        for name, n, size in (("o", n_q, L), ("dq", n_q, L), ("dk", n_k, N), ("dv", n_k, N)):
            grads[name] = unpack(grads[name], n, size)
        after = [unpack(t, n, x.shape[2]) for t, n, x in zip(grads["_inputs_after"][:3], (n_q, n_k, n_k), (q, K, V))]
        valid = [np.arange(x.shape[2])[None, None, :, None] < n[:, None, None, None] for x, n in
                 zip((q, K, V), (n_q, n_k, n_k))]
        grads["_inputs_after"] = tuple(np.where(v, a, x) for v, a, x in zip(valid, after, (q, K, V))) + (dO,)
        return grads

    def _autograd(self, q, K, V, dO, kw, layout):
        import torch

        tdt = getattr(torch, self.dtype)

        def leaf(x, grad=True):
            return _torch_like(torch, x, layout, tdt, self.device).requires_grad_(grad)

        qt, kt, vt = leaf(q), leaf(K), leaf(V)
        if "mask" in kw:
            kw["mask"] = torch.from_numpy(np.ascontiguousarray(kw["mask"])).to(self.device)
        params = {}
        for name in ("sink", "bias"):  # learned parameters: leaves with requires_grad
            if name in kw:
                params[name] = torch.from_numpy(kw[name]).to(device=self.device, dtype=tdt).requires_grad_(True)
                kw[name] = params[name]
        out = self.fn(qt, kt, vt, **kw)
        o, keep = out if isinstance(out, (tuple, list)) else (out, None)
        if not isinstance(o, torch.Tensor):
            raise TypeError(f"returned {type(o).__qualname__}; expected a torch.Tensor o (or (o, dropout_mask))")
        o.backward(leaf(dO, grad=False).to(o.dtype))
        back = lambda t: None if t is None else _to_layout(t.detach().float().cpu().numpy(), layout)  # noqa
        grads = {"o": back(o), "dq": back(qt.grad), "dk": back(kt.grad), "dv": back(vt.grad)}
        if any(g is None for g in grads.values()):
            missing = [k for k, g in grads.items() if g is None]
            raise TypeError(f"{', '.join(missing)} is None: the output does not depend on that input (detached?)")
        for name, t in params.items():
            grads["d" + name] = None if t.grad is None else t.grad.double().cpu().numpy()
        if keep is not None:
            grads["dropout_mask"] = _to_layout(keep.detach().cpu().numpy(), layout).astype(bool)
        # the leaves as they are now: the check reports a function that changed them in place
        grads["_inputs_after"] = tuple(_to_layout(t.detach().double().cpu().numpy(), layout)
                                       for t in (qt, kt, vt)) + (dO,)
        return grads


def torch_gradients(fn, *, dtype: str = "float32", layout: str = "bhld", accepts=None, device="cpu"):
    """Wrap a torch attention forward so that :func:`~varsim.testing.check_gradients` differentiates it.

    Parameters
    ----------
    fn : callable
        ``fn(q, k, v, **keywords) -> o`` (or ``(o, dropout_mask)``), torch tensors in ``layout``.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The dtype of the tensors ``fn`` gets (and of the check's tolerances).
    layout : {"bhld", "blhd", "packed"}
        See :data:`GRAD_LAYOUTS`. Packed, the function gets ``cu_seqlens_q`` and ``cu_seqlens_k``; a case's padding
        becomes the sequences' lengths, and the ``varlen`` case's mask also ``causal=True`` (bottom-right within
        each sequence); the cases whose mask cannot be packed (``rows``) are skipped.
    accepts : iterable of str, optional
        The keywords ``fn`` takes (default: read from its signature).
    device : str
        torch device.

    Returns
    -------
    TorchGradients
        A callable of the check's protocol, with ``dtype``, ``accepts`` and ``label``.
    """
    check_choice("dtype", dtype, ("float64", "float32", "float16", "bfloat16"))
    check_choice("layout", layout, GRAD_LAYOUTS)
    return TorchGradients(fn, dtype, layout, accepts, device)


class JaxGradients:
    """A JAX forward wrapped as a backward of the gradient check's protocol (see :func:`jax_gradients`)."""

    def __init__(self, fn, dtype, layout, accepts):
        self.fn, self.dtype, self.layout = fn, dtype, layout
        self.accepts = accepted_keywords(fn) if accepts is None else frozenset(accepts)
        self.label = f"{fn_name(fn)} (jax.vjp, {dtype})"

    def __call__(self, q, K, V, dO, **kw):
        import jax
        import jax.numpy as jnp

        jdt = getattr(jnp, self.dtype)
        args = [jnp.asarray(_to_layout(x, self.layout), dtype=jdt) for x in (q, K, V)]
        names = [n for n in ("sink", "bias") if n in kw]  # learned parameters: differentiated too
        args += [jnp.asarray(kw.pop(n), dtype=jdt) for n in names]
        if "mask" in kw:
            kw["mask"] = jnp.asarray(kw["mask"])
        keep_box = []

        def forward(*a):
            extra = dict(zip(names, a[3:]))
            out = self.fn(a[0], a[1], a[2], **kw, **extra)
            if isinstance(out, (tuple, list)):
                keep_box.append(out[1])
                return out[0]
            return out

        o, vjp = jax.vjp(forward, *args)
        grads = vjp(jnp.asarray(_to_layout(dO, self.layout), dtype=o.dtype))
        back = lambda t: _to_layout(np.asarray(t, dtype=np.float64), self.layout)  # noqa: E731
        out = {"o": back(o), "dq": back(grads[0]), "dk": back(grads[1]), "dv": back(grads[2])}
        for n, g in zip(names, grads[3:]):
            out["d" + n] = np.asarray(g, dtype=np.float64)
        if keep_box:
            out["dropout_mask"] = _to_layout(np.asarray(keep_box[0]), self.layout).astype(bool)
        return out


def jax_gradients(fn, *, dtype: str = "float32", layout: str = "bhld", accepts=None):
    """Wrap a JAX attention forward so that :func:`~varsim.testing.check_gradients` differentiates it with
    ``jax.vjp``; arguments as for :func:`torch_gradients` (float64 needs ``jax_enable_x64``)."""
    check_choice("dtype", dtype, ("float64", "float32", "float16", "bfloat16"))
    check_choice("layout", layout, GRAD_LAYOUTS[:2])
    return JaxGradients(fn, dtype, layout, accepts)
