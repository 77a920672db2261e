"""Adapters: test an attention written for another array library, another layout, or one sequence at a time.

The kit draws NumPy float64 arrays. :func:`adapt` wraps your function so that it receives what it expects and the
kit gets NumPy back:

```python
attn = adapt(my_torch_attention, array="torch", dtype="bfloat16", layout="bhld")
```

* ``array``: ``"numpy"`` (default), ``"torch"``, or any array-API namespace (``array_api_strict``, ``jax.numpy``,
  ``cupy``...): inputs are made with ``xp.asarray``; outputs come back through DLPack or ``__array__``.
* ``dtype``: the floating dtype your function receives (``"float64"``, ``"float32"``, ``"float16"``,
  ``"bfloat16"`` for torch, or NumPy with ml_dtypes installed); None keeps the kit's (float64, or a case's own
  precision), except for a namespace whose default floating dtype is lower (JAX without x64: float32), which gets
  that dtype and a note in the report. A dtype the library cannot hold (bfloat16 in NumPy without ml_dtypes or in
  an array-API namespace, float64 in JAX without x64) raises ``ValueError`` naming ``dtype``.
* ``layout``: how one batch is laid out (:data:`LAYOUTS`): ``"batch"`` (varsim's ``q (S, d_k)``, ``K (S, N, d_k)``,
  ``V (S, N, d_v)``), ``"bhld"`` (``q (B, H, L, d_k)``, ``K (B, H, N, d_k)``: PyTorch's
  ``scaled_dot_product_attention``), ``"bld"`` (heads folded into the batch: ``q (B*H, L, d_k)``) or
  ``"sequence"`` (one sequence at a time: ``q (d_k,)``, ``K (N, d_k)``; the kit loops).

Keyword arguments: the kit passes ``tau=``, ``mask=`` and ``causal=`` to your function when its signature has a
parameter of that name (or the ones listed in ``accepts=``). ``mask`` is boolean, True where a query may attend a key
(PyTorch's convention), shaped like the logits of the layout: ``(S, N)``, ``(B, 1, L, N)``, ``(B*H, L, N)`` or
``(N,)``. ``causal=True`` means the bottom-right-aligned causal mask: query ``l`` of ``L`` attends keys
``0 .. N - L + l`` (a single query attends every key, as when decoding with a KV cache).

A function returning anything but an array of these libraries raises ``TypeError`` naming the function and what it
returned.
"""

from __future__ import annotations

import inspect
import types
import warnings

import numpy as np

from varsim._common.validate import check_choice

from .attention import expand_kv_heads

__all__ = ["adapt", "Adapted", "to_numpy", "LAYOUTS", "KEYWORDS", "fn_name"]

LAYOUTS = ("batch", "bhld", "blhd", "bld", "sequence", "packed")
"""The layouts :func:`adapt` knows: ``"batch"`` (``q (S, d_k)``, ``K (S, N, d_k)``, ``V (S, N, d_v)``), ``"bhld"``
(``q (B, H, L, d_k)``: SDPA), ``"blhd"`` (``q (B, L, H, d_k)``: flash-attn), ``"bld"`` (heads folded into the
batch), ``"sequence"`` (one sequence at a time) and ``"packed"`` (variable-length sequences packed along one axis,
``q (total_q, H, d_k)``, ``K (total_k, H_kv, d_k)``, with ``cu_seqlens_q`` and ``cu_seqlens_k``: flash-attn's
``varlen`` functions)."""
KEYWORDS = ("tau", "mask", "causal")
#: layouts whose functions receive keys and values with their own (possibly fewer) heads when ``gqa=True``
GQA_LAYOUTS = ("bhld", "blhd", "packed")
"""The keywords the kit passes to a function whose signature names them (or that lists them in ``accepts=``)."""
_FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


def fn_name(fn) -> str:
    """A readable name for a user function (its qualified name, else its repr)."""
    return getattr(fn, "__qualname__", None) or getattr(type(fn), "__qualname__", None) or repr(fn)


def _describe(value) -> str:
    shape = getattr(value, "shape", None)
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    where = type(value).__module__
    kind = f"{where}.{type(value).__qualname__}" if where not in ("builtins", None) else type(value).__qualname__
    return kind + (f" of shape {tuple(shape)}" if shape is not None else "") + f" ({text})"


def _dtype_name(value) -> str:
    dt = getattr(value, "dtype", None)
    return str(dt).split(".")[-1] if dt is not None else "float64"


def to_numpy(value, *, fn="attention_fn", what="output") -> tuple[np.ndarray, str]:
    """Read an array of any supported library back as a float64 NumPy array.

    Parameters
    ----------
    value : array
        A NumPy array, a torch tensor, or an array with ``__dlpack__`` or ``__array__``.
    fn : callable or str
        The function that returned ``value``, named in errors.
    what : str
        What ``value`` is (``"output"``, ``"weights"``), named in errors.

    Returns
    -------
    array : numpy.ndarray
        ``value`` as float64.
    dtype : str
        The name of its dtype (``"bfloat16"``, ``"float32"``, ...).

    Raises
    ------
    TypeError
        ``value`` is not an array of a floating dtype; the message names ``fn`` and what it returned.

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing import to_numpy
    >>> arr, dtype = to_numpy(np.ones(3, dtype=np.float16))
    >>> arr.dtype.name, dtype
    ('float64', 'float16')
    """
    if isinstance(value, np.ndarray):
        arr, dtype = value, value.dtype.name
    elif type(value).__module__.split(".")[0] == "torch":
        dtype = _dtype_name(value)
        t = value.detach().cpu()
        if dtype in ("bfloat16", "float16"):
            t = t.float()
        arr = t.numpy()
    elif isinstance(value, (float, np.floating)):
        arr, dtype = np.asarray(value), np.asarray(value).dtype.name
    elif hasattr(value, "__dlpack__") or hasattr(value, "__array__"):
        dtype = _dtype_name(value)
        try:
            arr = np.from_dlpack(value) if hasattr(value, "__dlpack__") else np.asarray(value)
        except (TypeError, ValueError, BufferError, RuntimeError):
            try:
                arr = np.asarray(value)
            except (TypeError, ValueError):
                raise TypeError(f"{_name_of(fn)} returned {what} {_describe(value)}, which NumPy cannot read "
                                f"(DLPack and __array__ failed)") from None
    else:
        raise TypeError(f"{_name_of(fn)} returned {what} {_describe(value)}; expected a NumPy array, a torch tensor "
                        f"or an array-API array (wrap other functions with varsim.testing.adapt)")
    if arr.dtype.kind != "f" and dtype != "bfloat16":
        raise TypeError(f"{_name_of(fn)} returned {what} {_describe(value)} of dtype {arr.dtype}; expected a floating "
                        f"dtype (an integer or boolean result cannot be an attention output)")
    return np.asarray(arr, dtype=np.float64), dtype


def _name_of(fn) -> str:
    return fn if isinstance(fn, str) else f"attention_fn {fn_name(fn)}"


def _accepted(fn) -> frozenset:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(k for k, p in params.items() if k in KEYWORDS and p.kind is not p.VAR_POSITIONAL)


class _Numpy:
    name = "numpy"

    def __init__(self, dtype):
        if dtype == "bfloat16":
            try:
                import ml_dtypes
            except ImportError:
                raise ValueError("dtype 'bfloat16' with array='numpy' needs ml_dtypes (pip install ml-dtypes), or "
                                 "array='torch'") from None
            self.dtype = np.dtype(ml_dtypes.bfloat16)
        else:
            self.dtype = None if dtype is None else np.dtype(dtype)

    def asarray(self, arr, floating=True):
        if floating and self.dtype is not None:
            arr = arr.astype(self.dtype)
        return arr

    def rounding(self, arr):
        return arr if self.dtype is None else arr.astype(self.dtype)


class _Torch:
    name = "torch"

    def __init__(self, dtype, device):
        import torch

        self.torch = torch
        self.dtype = None if dtype is None else getattr(torch, dtype)
        self.device = device or "cpu"

    def asarray(self, arr, floating=True):
        t = self.torch.from_numpy(np.array(arr))  # a writable copy
        if floating and self.dtype is not None:
            return t.to(device=self.device, dtype=self.dtype)
        return t.to(self.device)

    def rounding(self, arr):
        """What the tensor will hold, computed in NumPy (round to nearest even, as torch's casts)."""
        from .precision import round_to

        return round_to(arr, str(self.dtype).split(".")[-1])


class _Namespace:
    def __init__(self, xp, dtype):
        if dtype == "bfloat16":
            raise ValueError(f"dtype 'bfloat16' is not an array-API dtype (namespace {xp.__name__})")
        self.xp = xp
        self.name = xp.__name__
        with warnings.catch_warnings():  # JAX warns when it truncates float64
            warnings.simplefilter("ignore")
            self.default = _dtype_name(xp.asarray(0.0))  # JAX without x64: float32
            got = None if dtype is None else _dtype_name(xp.asarray(np.zeros(1, dtype=dtype)))
        if got is not None and got != dtype:
            raise ValueError(f"dtype {dtype!r}: namespace {xp.__name__} turns {dtype} arrays into {got} (JAX: enable "
                             f"float64 with jax.config.update('jax_enable_x64', True))")
        self.np_dtype = None if dtype is None else np.dtype(dtype)

    def asarray(self, arr, floating=True):
        if floating and self.np_dtype is not None:
            arr = arr.astype(self.np_dtype)
        return self.xp.asarray(arr)

    def rounding(self, arr):
        return arr.astype(self.np_dtype)


# array library name -> converter factory (dtype, device) -> object with .asarray / .rounding
ARRAY_LIBRARIES = {
    "numpy": lambda dtype, device: _Numpy(dtype),
    "torch": lambda dtype, device: _Torch(dtype, device),
}


class Adapted:
    """A user attention wrapped by :func:`adapt` (build it with :func:`adapt`; the parameters are its).

    Called as ``attn(q (S, d_k), K (S, N, d_k), V (S, N, d_v))`` it behaves like a NumPy ``attention_fn`` of the
    kit's batch layout (for :func:`varsim.sim.measure_variance` and the statistical checks). :meth:`call4` is the
    general form the same-draw checks use: ``q (B, H, L, d_k)``, ``K (B, H, N, d_k)``, ``V (B, H, N, d_v)``,
    keywords ``tau``, ``mask (B, 1, L, N)``, ``causal``, returning float64 ``o (B, H, L, d_v)`` and ``w`` or None.

    Parameters
    ----------
    fn : callable
        Your attention.
    array : {"numpy", "torch"} or module
        The library of the arrays ``fn`` receives (a module: an array-API namespace).
    dtype : {"float64", "float32", "float16", "bfloat16"}, optional
        The dtype ``fn`` receives.
    layout : {"batch", "bhld", "bld", "sequence"}
        How ``fn`` lays out one batch.
    accepts : iterable of str, optional
        The keywords ``fn`` takes, of ``"tau"``, ``"mask"``, ``"causal"``.
    device : str, optional
        torch device.
    gqa : bool
        ``fn`` takes keys and values with fewer heads than the queries (grouped-query attention) in the layouts with
        a head axis; otherwise the kit repeats them to the query heads first.
    """

    def __init__(self, fn, array="numpy", dtype=None, layout="batch", accepts=None, device=None, gqa=False):
        if not callable(fn):
            raise ValueError(f"attention_fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.layout = check_choice("layout", layout, LAYOUTS)
        if dtype is not None:
            check_choice("dtype", dtype, _FLOAT_DTYPES)
        self.dtype = dtype
        self.dtype_note = ""
        if isinstance(array, types.ModuleType):
            self.lib = _Namespace(array, dtype)
            if dtype is None and self.lib.default in ("float32", "float16"):
                self.dtype = self.lib.default
                self.lib.np_dtype = np.dtype(self.dtype)
                self.dtype_note = (f"namespace {self.lib.name} makes {self.dtype} arrays by default (JAX unless "
                                   f"jax_enable_x64 is set), so the inputs are rounded to {self.dtype} and compared "
                                   f"at {self.dtype} tolerances")
        else:
            check_choice("array", array, sorted(ARRAY_LIBRARIES))
            self.lib = ARRAY_LIBRARIES[array](dtype, device)
        if accepts is None:
            self.accepts = _accepted(fn)
        else:
            bad = [k for k in accepts if k not in KEYWORDS]
            if bad:
                raise ValueError(f"accepts: unknown keyword(s) {bad}; expected some of {KEYWORDS}")
            self.accepts = frozenset(accepts)
        self.gqa = bool(gqa)
        if self.gqa and self.layout not in GQA_LAYOUTS:
            raise ValueError(f"gqa: layout {self.layout!r} has no head axis; gqa=True needs one of {GQA_LAYOUTS}")
        if self.layout == "packed":  # padding is expressed by the sequence lengths
            self.accepts = self.accepts | {"mask"}
        self.__qualname__ = fn_name(fn)

    def __repr__(self) -> str:
        return f"adapt({self.__qualname__}, array={self.lib.name!r}, dtype={self.dtype!r}, layout={self.layout!r})"

    def rounding(self, arr: np.ndarray, case_dtype: str = "float64") -> np.ndarray:
        """``arr`` as the function will see it (rounded to its dtype), in float64."""
        if self.dtype is None:
            return arr.astype(case_dtype).astype(np.float64)
        return np.asarray(self.lib.rounding(arr), dtype=np.float64)

    def input_dtype(self, case_dtype: str = "float64") -> str:
        return self.dtype or case_dtype

    def __call__(self, q, K, V):
        o, w = self.call4(np.asarray(q)[:, None, None, :], np.asarray(K)[:, None], np.asarray(V)[:, None])
        return (o[:, 0, 0, :], w[:, 0, 0, :]) if w is not None else o[:, 0, 0, :]

    def call4(self, q, K, V, *, tau=None, mask=None, causal=False, case_dtype="float64"):
        """Call the function in its layout and library; returns float64 ``(o (B, H, L, d_v), w or None)`` and the
        dtype name of ``o``."""
        B, H, L, _ = q.shape
        N, d_v = K.shape[2], V.shape[3]
        if not (self.gqa and self.layout in GQA_LAYOUTS):
            K, V = expand_kv_heads(q, K, V)
        kw = self._keywords(tau, mask, causal, B, L, N)
        cast = self.dtype is None and case_dtype != "float64"
        conv = (lambda a: self.lib.asarray(a.astype(case_dtype))) if cast else self.lib.asarray
        if self.layout == "sequence":
            os, ws = [], []
            for b in range(B):
                for h in range(H):
                    for l_ in range(L):
                        k1 = dict(kw)
                        if "mask" in kw:
                            k1["mask"] = self.lib.asarray(kw["mask"][b, 0, l_], floating=False)
                        out = self._invoke((conv(q[b, h, l_].copy()), conv(K[b, h].copy()), conv(V[b, h].copy())),
                                           k1)
                        o, w = self._unpack(out, (d_v,), (N,))
                        os.append(o)
                        ws.append(w)
            o = np.stack(os).reshape(B, H, L, d_v)
            w = None if any(x is None for x in ws) else np.stack(ws).reshape(B, H, L, N)
            return o, w
        if self.layout == "packed":
            return self._call_packed(q, K, V, kw, conv)
        if self.layout == "blhd":
            args = tuple(np.swapaxes(a, 1, 2) for a in (q, K, V))
            out = self._invoke(tuple(conv(np.array(a)) for a in args), self._lib_mask(kw))
            o, w = self._unpack(out, (B, L, H, d_v), (B, H, L, N))
            return np.swapaxes(o, 1, 2), w
        if self.layout == "bhld":
            args, o_shape, w_shape = (q, K, V), (B, H, L, d_v), (B, H, L, N)
            m = kw.get("mask")
        elif self.layout == "bld":
            args = (q.reshape(B * H, L, -1), K.reshape(B * H, N, -1), V.reshape(B * H, N, d_v))
            o_shape, w_shape = (B * H, L, d_v), (B * H, L, N)
            m = None if "mask" not in kw else np.broadcast_to(kw["mask"], (B, H, L, N)).reshape(B * H, L, N)
        else:  # batch: every (b, h, l) is a sequence of its own with one query
            S = B * H * L
            args = (q.reshape(S, -1), np.broadcast_to(K[:, :, None], (B, H, L, N, K.shape[3])).reshape(S, N, -1),
                    np.broadcast_to(V[:, :, None], (B, H, L, N, d_v)).reshape(S, N, d_v))
            o_shape, w_shape = (S, d_v), (S, N)
            m = None if "mask" not in kw else np.broadcast_to(kw["mask"], (B, H, L, N)).reshape(S, N)
        if m is not None:
            kw["mask"] = self.lib.asarray(np.array(m), floating=False)
        out = self._invoke(tuple(conv(np.array(a)) for a in args), kw)
        o, w = self._unpack(out, o_shape, w_shape)
        return o.reshape(B, H, L, d_v), (None if w is None else w.reshape(B, H, L, N))

    def _invoke(self, arrays: tuple, kw: dict):
        """``fn(q, K, V, **kw)`` on copies of the inputs, then :class:`InputChanged` if it wrote to one of them."""
        before = [to_numpy(a, fn=self, what="input")[0].copy() for a in arrays]  # may share the input's memory
        out = self.fn(*arrays, **kw)
        for label, arr, was in zip(("q", "K", "V"), arrays, before):
            if not np.array_equal(to_numpy(arr, fn=self, what="input")[0], was, equal_nan=True):
                raise InputChanged(f"attention_fn {self.__qualname__} changed its input {label} in place")
        return out

    def _keywords(self, tau, mask, causal, B, L, N) -> dict:
        """The keywords the function takes: ``tau``, ``causal=True`` or the causal mask, the padding mask."""
        kw = {}
        if tau is not None and "tau" in self.accepts:
            kw["tau"] = tau
        if causal and "causal" in self.accepts:
            kw["causal"] = True
        elif causal or mask is not None:
            if "mask" not in self.accepts:
                raise ValueError(f"attention_fn {self.__qualname__} takes no mask= (nor causal=) keyword")
            kw["mask"] = np.broadcast_to(causal_mask(L, N) if causal else mask, (B, 1, L, N))
        return kw

    def _lib_mask(self, kw):
        if "mask" in kw:
            kw = dict(kw, mask=self.lib.asarray(np.array(kw["mask"]), floating=False))
        return kw

    def _call_packed(self, q, K, V, kw, conv):
        """Variable-length sequences packed along one axis: the valid keys of each sequence (its padding mask, a
        prefix), every query; ``cu_seqlens_q``, ``cu_seqlens_k`` the cumulative lengths (int32, from 0)."""
        B, H, L, _ = q.shape
        N, d_v = K.shape[2], V.shape[3]
        mask = kw.pop("mask", None)
        valid = np.full(B, N) if mask is None else np.asarray(mask)[:, 0, -1].sum(axis=-1)
        if mask is not None and not np.array_equal(np.asarray(mask)[:, 0],
                                                   np.broadcast_to(np.arange(N) < valid[:, None, None], (B, L, N))):
            raise ValueError("layout 'packed': the padding mask must keep a prefix of the keys of each sequence")
        cu_q = np.arange(B + 1, dtype=np.int32) * L
        cu_k = np.concatenate([[0], np.cumsum(valid)]).astype(np.int32)
        pack = lambda a, lengths: np.concatenate([np.swapaxes(a[b, :, :n], 0, 1) for b, n in enumerate(lengths)])  # noqa: E731
        args = (pack(q, [L] * B), pack(K, valid), pack(V, valid))
        out = self._invoke(tuple(conv(np.array(a)) for a in args),
                           dict(kw, cu_seqlens_q=self.lib.asarray(cu_q, floating=False),
                                cu_seqlens_k=self.lib.asarray(cu_k, floating=False)))
        if isinstance(out, tuple):
            out = out[0]  # weights are not read back from packed sequences
        o, _ = self._unpack(out, (B * L, H, d_v), None)
        return np.swapaxes(o.reshape(B, L, H, d_v), 1, 2), None

    def _unpack(self, out, o_shape, w_shape):
        w = None
        if isinstance(out, tuple):
            if len(out) != 2:
                raise TypeError(f"attention_fn {self.__qualname__} returned a tuple of {len(out)} items; expected o "
                                f"or (o, w)")
            out, w = out
        o, self.out_dtype = to_numpy(out, fn=self, what="output")
        if o.shape != tuple(o_shape):
            raise AssertionError(f"attention_fn {self.__qualname__} returned output of shape {o.shape}; expected "
                                 f"{tuple(o_shape)} (layout {self.layout!r})")
        if w is not None:
            w, _ = to_numpy(w, fn=self, what="weights")
            if w.shape != tuple(w_shape):
                raise AssertionError(f"attention_fn {self.__qualname__} returned weights of shape {w.shape}; "
                                     f"expected {tuple(w_shape)} (layout {self.layout!r})")
        return o, w


class InputChanged(Exception):
    """The function under test wrote to an input array (a kernel updating ``q`` in place, say): the checks report it
    as a failing case, in one line naming the input."""


def causal_mask(n_queries: int, n_keys: int) -> np.ndarray:
    """Bottom-right-aligned causal mask ``(L, N)``: query ``l`` attends keys ``0 .. N - L + l``."""
    return np.arange(n_keys)[None, :] <= (n_keys - n_queries + np.arange(n_queries))[:, None]


def adapt(fn, *, array="numpy", dtype: str | None = None, layout: str = "batch", accepts=None, device=None,
          gqa: bool = False) -> Adapted:
    """Wrap an attention of another library or layout so that the kit can call it.

    The module documentation above says what each layout and library means for your function.

    Parameters
    ----------
    fn : callable
        Your attention, returning ``o`` or ``(o, w)`` in its layout and library.
    array : {"numpy", "torch"} or module
        The library of the arrays ``fn`` receives: ``"numpy"``, ``"torch"`` or an array-API namespace module
        (``array_api_strict``, ``jax.numpy``, ``cupy`` ...).
    dtype : {"float64", "float32", "float16", "bfloat16"}, optional
        The dtype ``fn`` receives (None: float64, or a same-draw case's own precision; bfloat16 needs torch, or
        NumPy with ml_dtypes).
    layout : {"batch", "bhld", "bld", "sequence"}
        How ``fn`` lays out one batch (:data:`LAYOUTS`).
    accepts : iterable of str, optional
        The keywords ``fn`` takes, of ``"tau"``, ``"mask"``, ``"causal"`` (default: read from its signature).
    device : str, optional
        torch device (default ``"cpu"``).
    gqa : bool
        ``fn`` takes grouped-query keys and values (fewer heads than the queries; layouts ``"bhld"``, ``"blhd"``,
        ``"packed"``), as SDPA with ``enable_gqa=True`` or flash-attn do; otherwise the kit repeats them to the
        query heads before the call (and the grouped-query cases test nothing of the head mapping).

    Returns
    -------
    Adapted
        The wrapped function; ``fn`` itself when it is already one.

    Raises
    ------
    ValueError
        An unknown library, layout or keyword, or a dtype the library cannot hold, naming the parameter.

    See Also
    --------
    check_against_reference : takes the adapted function.
    to_numpy : how outputs come back.

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing import adapt, check_against_reference, softmax_attention_nd
    >>> def one_sequence(q, K, V, tau=1.0):  # q (d_k,), K (N, d_k), V (N, d_v)
    ...     o, w = softmax_attention_nd(q[None], K, V, tau=tau)
    ...     return o[0]
    >>> attn = adapt(one_sequence, layout="sequence")
    >>> attn
    adapt(one_sequence, array='numpy', dtype=None, layout='sequence')
    >>> check_against_reference(attn).verdict
    'pass'
    """
    if isinstance(fn, Adapted):
        return fn
    return Adapted(fn, array=array, dtype=dtype, layout=layout, accepts=accepts, device=device, gqa=gqa)
