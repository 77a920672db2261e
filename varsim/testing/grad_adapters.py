"""Adapters that turn a forward attention of PyTorch or JAX into the gradient check's protocol through automatic
differentiation (:mod:`varsim.testing.backward`).

```python
grads = torch_gradients(my_attention, dtype="bfloat16")                 # q, k, v (B, H, L, d) like SDPA
grads = torch_gradients(my_flash_attention, dtype="float16", layout="blhd")   # (B, L, H, d) like flash-attn
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

__all__ = ["torch_gradients", "jax_gradients", "TorchGradients", "JaxGradients", "GRAD_LAYOUTS"]

GRAD_LAYOUTS = ("bhld", "blhd")
"""``"bhld"``: ``q (B, H, L, d_k)`` (PyTorch's SDPA); ``"blhd"``: ``q (B, L, H, d_k)`` (FlashAttention)."""


def _to_layout(x, layout):
    return x if layout == "bhld" else np.swapaxes(x, 1, 2)


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

    def __call__(self, q, K, V, dO, **kw):
        import torch

        tdt = getattr(torch, self.dtype)

        def leaf(x, grad=True):
            return _torch_like(torch, x, self.layout, tdt, self.device).requires_grad_(grad)

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
        back = lambda t: None if t is None else _to_layout(t.detach().float().cpu().numpy(), self.layout)  # noqa
        grads = {"o": back(o), "dq": back(qt.grad), "dk": back(kt.grad), "dv": back(vt.grad)}
        if any(g is None for g in grads.values()):
            missing = [k for k, g in grads.items() if g is None]
            raise TypeError(f"{', '.join(missing)} is None: the output does not depend on that input (detached?)")
        for name, t in params.items():
            grads["d" + name] = None if t.grad is None else t.grad.double().cpu().numpy()
        if keep is not None:
            grads["dropout_mask"] = _to_layout(keep.detach().cpu().numpy(), self.layout).astype(bool)
        # the leaves as they are now: the check reports a function that changed them in place
        grads["_inputs_after"] = tuple(_to_layout(t.detach().double().cpu().numpy(), self.layout)
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
    layout : {"bhld", "blhd"}
        See :data:`GRAD_LAYOUTS`.
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
    check_choice("layout", layout, GRAD_LAYOUTS)
    return JaxGradients(fn, dtype, layout, accepts)
