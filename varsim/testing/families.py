"""Reference families: softmax attention with the position encodings, biases, windows, head mappings, per-head
temperatures and logit caps that real kernels add, as references the same-draw check and :func:`power_report`
understand.

A :class:`Family` is a float64 reference in the ``(B, H, L, d)`` layout (``tau=``, ``mask=``, ``causal=``, returning
``(o, w)``) that also tells the kit *how* it differs from plain softmax, so that

* :func:`~varsim.testing.check_against_reference` builds its tolerances from this family's own logits, weights and
  output (a RoPE weight of ``1e-32`` gets a tolerance relative to itself, not to the plain softmax's weight);
* :func:`~varsim.testing.power_report` plants its correct kernels and bug classes *into the family* (a correct ALiBi
  kernel is a correct kernel, not a false alarm).

Notation (one batch): ``q (B, H, L, d_k)``, ``K (B, H, N, d_k)``, ``V (B, H, N, d_v)``; query ``l`` sits at position
``p_l = N - L + l`` (bottom-right alignment, as the kit's causal mask), key ``i`` at position ``i``::

    q', K', V' = inputs(q, K, V)                  RoPE, grouped heads, per-head temperature
    s_hli      = tau q'_hl . k'_hi / sqrt(d_k) + bias_hli       ALiBi: bias = -m_h |p_l - i|
    s_hli      = cap tanh(s_hli / cap)            logit softcapping (when ``softcap``)
    w          = softmax over the keys the mask and the window (p_l - W < i) leave, and a sink key of logit
                 sink_h and value 0 (when ``sinks``); a row with no key: zeros
    o          = w V'

Families combine: ``alibi() + sliding_window(8)`` is ALiBi with a window. Constructors: :func:`alibi`,
:func:`rope`, :func:`sliding_window`, :func:`grouped_heads`, :func:`head_temperature`, :func:`softcap`,
:func:`sinks`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from varsim._common.validate import check_int, check_real

from .attention import expand_kv_heads

__all__ = ["Family", "alibi", "rope", "sliding_window", "grouped_heads", "head_temperature", "softcap", "sinks",
           "FAMILIES"]


def _positions(L: int, N: int) -> np.ndarray:
    """``p_l - i`` ``(L, N)``: how far key ``i`` is behind query ``l`` (bottom-right alignment)."""
    return (N - L + np.arange(L))[:, None] - np.arange(N)[None, :]


def _rotate(x: np.ndarray, pos: np.ndarray, base: float) -> np.ndarray:
    """Rotary embedding, half-split pairs ``(x_j, x_{j + d/2})`` rotated by ``pos * base^(-j / (d/2))``; an odd
    last coordinate is left as it is."""
    d = x.shape[-1] - x.shape[-1] % 2
    if d == 0:
        return x.copy()
    theta = pos[:, None] * base ** (-np.arange(d // 2) / (d // 2))  # (n, d/2)
    c, s = np.cos(theta), np.sin(theta)
    out = x.copy()
    a, b = x[..., : d // 2], x[..., d // 2: d]
    out[..., : d // 2], out[..., d // 2: d] = a * c - b * s, a * s + b * c
    return out


@dataclasses.dataclass(frozen=True)
class Family:
    """A reference family: plain softmax attention with some of the stages of the module docstring.

    Build one with the constructors (:func:`alibi`, :func:`rope`, ...) and combine them with ``+``. Pass it as
    ``reference=`` to the same-draw checks and to :func:`~varsim.testing.power_report`; call it like a ``(B, H, L, d)``
    attention (``family(q, K, V, tau=, mask=, causal=) -> (o, w)``, float64).

    Parameters
    ----------
    name : str
        Shown in reports.
    alibi_max_bias : float
        ALiBi with slopes ``m_h = 2^(-alibi_max_bias (h + 1) / H)`` (0: none).
    rope_base : float
        Rotary embedding of q and K at their positions with this base (0: none).
    window : int
        Sliding window: query ``l`` sees keys ``i > p_l - window`` (0: none).
    group : int
        Grouped-query heads: query head ``h`` uses the keys and values of head ``(h // group) * group`` (1: none).
    head_scales : tuple of float
        Per-head temperature factors, head ``h`` multiplies its logits by ``head_scales[h % len]`` (empty: none).
    cap : float
        Logit softcapping ``cap tanh(s / cap)`` (0: none).
    sinks : tuple of float
        Attention sinks: head ``h`` has a virtual key of logit ``sinks[h % len]`` and value 0 in its softmax (the
        weights of the real keys then sum to less than 1); empty: none.
    """

    name: str = "softmax"
    alibi_max_bias: float = 0.0
    rope_base: float = 0.0
    window: int = 0
    group: int = 1
    head_scales: tuple = ()
    cap: float = 0.0
    sinks: tuple = ()

    def __add__(self, other: Family) -> Family:
        if not isinstance(other, Family):
            return NotImplemented
        merged = {}
        for f in dataclasses.fields(self):
            if f.name == "name":
                continue
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if mine != f.default and theirs != f.default and mine != theirs:
                raise ValueError(f"reference: families {self.name!r} and {other.name!r} both set {f.name}")
            merged[f.name] = mine if mine != f.default else theirs
        return Family(name=f"{self.name}+{other.name}", **merged)

    def describe(self) -> str:
        """The name reports show: ``family <name>``."""
        return f"family {self.name}"

    # --- the stages, float64 -------------------------------------------------------------------------------------
    def inputs(self, q, K, V):
        """``q', K', V'``: grouped heads, per-head temperature (folded into q), rotary embedding."""
        H, L, N = q.shape[-3], q.shape[-2], K.shape[-2]
        if self.group > 1:
            src = (np.arange(K.shape[-3]) // self.group) * self.group
            K, V = K[..., src, :, :], V[..., src, :, :]
        if self.head_scales:
            factors = np.array([self.head_scales[h % len(self.head_scales)] for h in range(H)], dtype=np.float64)
            q = q * factors[:, None, None]
        if self.rope_base:
            q = _rotate(q, (N - L + np.arange(L)).astype(np.float64), self.rope_base)
            K = _rotate(K, np.arange(N, dtype=np.float64), self.rope_base)
        return q, K, V

    def bias(self, H: int, L: int, N: int):
        """The additive logit bias ``(H, L, N)``, or None."""
        if not self.alibi_max_bias:
            return None
        slopes = 2.0 ** (-self.alibi_max_bias * (np.arange(H) + 1.0) / H)
        return -slopes[:, None, None] * np.abs(_positions(L, N))[None].astype(np.float64)

    def mask(self, mask, L: int, N: int):
        """The given boolean mask (or None) with the window applied."""
        if not self.window:
            return mask
        win = _positions(L, N) < self.window
        return win if mask is None else np.logical_and(mask, win)

    def sink_logits(self, H: int):
        """The sink logit of each head ``(H, 1, 1)``, or None."""
        if not self.sinks:
            return None
        return np.array([self.sinks[h % len(self.sinks)] for h in range(H)], dtype=np.float64)[:, None, None]

    def with_sinks(self, s, V):
        """``s`` and ``V`` with the sink as one more key (logit per head, value 0); unchanged without sinks."""
        sink = self.sink_logits(s.shape[-3])
        if sink is None:
            return s, V
        col = np.broadcast_to(sink.astype(s.dtype), s.shape[:-1] + (1,))
        zero = np.zeros(V.shape[:-2] + (1, V.shape[-1]))
        return np.concatenate([s, col], axis=-1), np.concatenate([V, zero], axis=-2)

    def capped(self, s):
        """``cap tanh(s / cap)`` (``s`` itself without a cap)."""
        return self.cap * np.tanh(s / self.cap) if self.cap else s

    # --- the reference -------------------------------------------------------------------------------------------
    def logits(self, q, K, tau: float, mask):
        """Float64 logits ``(..., L, N)`` of already transformed ``q', K'`` with bias, cap and ``-inf`` where masked,
        and the mask applied (with the window)."""
        H, L, N = q.shape[-3], q.shape[-2], K.shape[-2]
        s = np.matmul(q, np.swapaxes(K, -1, -2)) * (tau / math.sqrt(q.shape[-1]))
        b = self.bias(H, L, N)
        if b is not None:
            s = s + b
        s = self.capped(s)
        m = self.mask(mask, L, N)
        if m is not None:
            s = np.where(m, s, -np.inf)
        return s, m

    def __call__(self, q, K, V, tau: float = 1.0, mask=None, causal: bool = False):
        q, K, V = (np.asarray(a, dtype=np.float64) for a in (q, K, V))
        L, N = q.shape[-2], K.shape[-2]
        if causal:
            from .arrays import causal_mask

            mask = causal_mask(L, N) if mask is None else np.logical_and(mask, causal_mask(L, N))
        K, V = expand_kv_heads(q, K, V)
        q, K, V = self.inputs(q, K, V)
        s, _ = self.logits(q, K, tau, None if mask is None else np.asarray(mask, dtype=bool))
        s, V2 = self.with_sinks(s, V)
        o, w = softmax_rows(s, V2)
        return o, (w[..., :-1] if self.sinks else w)


def softmax_rows(s, V):
    """``(o, w)`` of float64 logits ``s (..., L, N)`` with ``-inf`` where masked; a row with no key gets zero weights
    and a zero output (the convention of flash kernels)."""
    mx = s.max(axis=-1, keepdims=True)
    empty = ~np.isfinite(mx)
    with np.errstate(invalid="ignore"):
        e = np.where(empty, 0.0, np.exp(s - np.where(empty, 0.0, mx)))
    den = e.sum(axis=-1, keepdims=True)
    w = e / np.where(den > 0, den, 1.0)
    return np.matmul(w, V), w


def alibi(max_bias: float = 8.0) -> Family:
    """ALiBi (Press et al., 2022): logits biased by ``-m_h |p_l - i|`` with slopes ``m_h = 2^(-max_bias (h+1) / H)``.

    Examples
    --------
    >>> from varsim.testing import adapt, check_against_reference, families
    >>> fam = families.alibi()
    >>> check_against_reference(adapt(fam, layout="bhld"), reference=fam).verdict
    'pass'
    >>> def no_bias(q, K, V, tau=1.0, mask=None, causal=False):  # an ALiBi kernel that forgot its bias
    ...     return families.Family()(q, K, V, tau=tau, mask=mask, causal=causal)
    >>> check_against_reference(adapt(no_bias, layout="bhld"), reference=fam).verdict
    'fail'
    """
    return Family("alibi", alibi_max_bias=check_real("max_bias", max_bias, minimum=0.0, strict_min=True))


def rope(base: float = 10000.0) -> Family:
    """Rotary position embedding (Su et al., 2021), half-split pairs, q at ``p_l`` and key ``i`` at ``i``."""
    return Family("rope", rope_base=check_real("base", base, minimum=1.0, strict_min=True))


def sliding_window(size: int) -> Family:
    """A sliding window: query ``l`` sees keys ``i`` with ``p_l - size < i`` (and what the mask allows)."""
    return Family(f"window{size}", window=check_int("size", size, minimum=1))


def grouped_heads(group: int) -> Family:
    """Grouped-query heads: query head ``h`` reads the keys and values of head ``(h // group) * group``."""
    return Family(f"grouped{group}", group=check_int("group", group, minimum=2))


def head_temperature(factors=(0.5, 1.0, 2.0)) -> Family:
    """A temperature per head: head ``h`` multiplies its logits by ``factors[h % len(factors)]``."""
    factors = tuple(check_real("factors", f, minimum=0.0, strict_min=True) for f in factors)
    if not factors:
        raise ValueError("factors: need at least one factor")
    return Family("head_temperature", head_scales=factors)


def softcap(cap: float = 30.0) -> Family:
    """Logit softcapping ``cap tanh(s / cap)`` (Gemma 2)."""
    return Family(f"softcap{cap:g}", cap=check_real("cap", cap, minimum=0.0, strict_min=True))


def sinks(logits=(0.5, -1.0, 2.0)) -> Family:
    """Attention sinks (as gpt-oss): head ``h`` adds a virtual key of logit ``logits[h % len]`` and value 0."""
    logits = tuple(check_real("logits", x) for x in logits)
    if not logits:
        raise ValueError("logits: need at least one sink logit")
    return Family("sinks", sinks=logits)


FAMILIES = {
    "alibi": alibi,
    "rope": rope,
    "sliding_window": sliding_window,
    "grouped_heads": grouped_heads,
    "head_temperature": head_temperature,
    "softcap": softcap,
    "sinks": sinks,
}
"""The family constructors: name -> function returning a :class:`Family`."""
