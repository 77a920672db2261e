"""A catalogue of attention kernels at a given precision: correct ones written differently, and the bugs people
write in real kernels, each planted into an emulation of a correct kernel.

Every entry is a :class:`Kernel`: called as ``kernel(q, K, V, tau=, mask=, causal=, dtype=)`` on float64 NumPy arrays
``q (B, H, L, d_k)``, ``K (B, H, N, d_k)``, ``V (B, H, N, d_v)`` (``mask (..., L, N)`` boolean, True = attend;
``causal`` bottom-right aligned) holding values of ``dtype``, it emulates a kernel of that dtype -- float32
accumulation for float16/bfloat16 (float64 at float64), probabilities rounded to the dtype before the product with
the values, output and weights rounded to the dtype -- and returns float64 ``(o, w)``. :data:`CORRECT` are correct
kernels (the float64 reference rounded, float32 math, rounded probabilities, a flash-style tiled online softmax, a
log-domain softmax); :data:`MUTANTS` are the bug classes, each the default pipeline with one stage changed.
:func:`varsim.testing.power_report` plants them into your configuration.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from .arrays import causal_mask
from .attention import expand_kv_heads
from .families import softmax_rows
from .precision import round_to

__all__ = ["Kernel", "CORRECT", "MUTANTS", "kernel"]


def _acc(dtype: str):
    return np.float64 if dtype == "float64" else np.float32


def _r(x, dtype: str, acc):
    """``x`` rounded to ``dtype``, held in the accumulation type."""
    return round_to(x, dtype).astype(acc)


def _scale(tau, d_k, d_v):
    return tau / math.sqrt(d_k)


def _mask(mask, causal, L, N):
    return causal_mask(L, N) if causal else mask


def _apply_mask(s, m, value=-np.inf):
    """Masked logits ``s + value`` (``-inf``: removed; a finite value: an additive mask)."""
    return s if m is None else np.where(m, s, s + s.dtype.type(value))


def _softmax(s, dtype, acc):
    """Max-subtracted softmax over the keys; a row with no key (a window past every valid key) gets zeros."""
    mx = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(mx), mx, 0.0).astype(s.dtype))
    den = e.sum(axis=-1, keepdims=True, dtype=acc)
    return e / np.where(den > 0, den, 1.0).astype(acc)


def _combine(w, V, dtype, acc):
    """Probabilities rounded to the dtype, then the product with the values accumulated in ``acc``."""
    return np.matmul(_r(w, dtype, acc), V.astype(acc))


def _pairwise_sum(x, dtype: str):
    """Sum over the last axis in ``dtype``: pairwise (a tree), every partial sum rounded (float64 out)."""
    x = round_to(x, dtype)
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = np.concatenate([x, np.zeros(x.shape[:-1] + (1,))], axis=-1)
        x = round_to(x[..., 0::2] + x[..., 1::2], dtype)
    return x


def _softmax_in_dtype(s, dtype, acc):
    """Softmax with the exponentials, their sum (pairwise) and the division rounded to the dtype."""
    mx = s.max(axis=-1, keepdims=True)
    e = round_to(np.exp(s - np.where(np.isfinite(mx), mx, 0.0)), dtype)
    den = _pairwise_sum(e, dtype)
    return round_to(e / np.where(den > 0, den, 1.0), dtype).astype(acc)


def _combine_in_dtype(w, V, dtype, acc):
    """``w V`` with the products and their pairwise sum over the keys rounded to the dtype."""
    prod = round_to(w, dtype)[..., :, :, None] * V[..., None, :, :]  # (..., L, N, d_v)
    return _pairwise_sum(np.swapaxes(prod, -1, -2), dtype).astype(acc)[..., 0]


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One catalogue entry: an attention kernel, correct or with one bug, emulated at a given precision.

    The default pipeline computes the logits in the accumulation precision, masks with ``-inf``, takes a
    max-subtracted softmax, rounds the probabilities to the dtype before the product with ``V`` and rounds the
    output; an entry replaces some of these stages. Call it as ``kernel(q, K, V, tau=1.0, mask=None, causal=False,
    dtype="float64")`` on float64 arrays ``q (B, H, L, d_k)``, ``K (B, H, N, d_k)``, ``V (B, H, N, d_v)`` holding
    values of ``dtype``; it returns float64 ``(o, w)`` rounded to ``dtype``. :attr:`outside_softmax` entries change
    only what a library attention call receives (inputs, scale, a boolean or additive mask) or returns.

    Parameters
    ----------
    name : str
        The catalogue key.
    description : str
        What the kernel does, in one line.
    scale : callable
        ``(tau, d_k, d_v) -> float``: the logit scale (default ``tau / sqrt(d_k)``).
    inputs : callable, optional
        Maps ``(q, K, V, mask)`` before the logits.
    logits : callable, optional
        Maps the logits ``(s, dtype, acc)``.
    mask : callable
        ``(mask, causal, L, N) -> mask``: the mask applied.
    mask_value : float
        Added to the logits of masked keys (``-inf``: removed).
    bias : callable, optional
        ``(L, N) -> array`` added to the logits.
    apply_mask, softmax, combine : callable
        The masking, the softmax and the product with ``V``.
    after_softmax : callable, optional
        Maps ``(w, mask)`` after the softmax.
    output : callable, optional
        Maps ``(o, w)`` at the end.
    whole : callable, optional
        Replaces the softmax and the product with the values: ``(s, V, dtype, acc) -> (o, w)`` with ``s`` the masked
        logits (``-inf`` where masked).
    exact : bool
        Logits in float64 whatever the dtype (the float64 reference rounded at the end).
    expand : callable
        ``(q, K, V) -> (K, V)`` with the query heads, for grouped-query keys and values (default
        :func:`~varsim.testing.attention.expand_kv_heads`, ``repeat_interleave``).
    family_change : callable, optional
        ``Family -> Family``: the bug changes the reference family it is planted into (a window one key too wide,
        a softcap or a sink left out); such a bug exists only where the family has that stage (``needs``).
    needs : frozenset of str
        What the planted function must have for the bug to exist: keywords (``"mask"``: it builds on a mask it
        receives; ``"causal"``: it builds the causal mask itself) or stages of the reference family (``"window"``,
        ``"cap"``, ``"sinks"``).
    axes : frozenset of str
        The axes its arrays must have (``"batch"``, ``"heads"``, ``"queries"``: a layout without a head axis cannot
        swap it; ``"gqa"``: it receives grouped-query keys, ``adapt(..., gqa=True)``).

    See Also
    --------
    kernel : an entry by name.
    varsim.testing.power_report : plants every entry into your configuration.

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing.mutants import kernel
    >>> rng = np.random.default_rng(0)
    >>> q, K, V = rng.normal(size=(1, 1, 2, 8)), rng.normal(size=(1, 1, 5, 8)), rng.normal(size=(1, 1, 5, 4))
    >>> o, w = kernel("dropped_key")(q, K, V, dtype="float16")
    >>> float(w[..., -1].max())
    0.0
    """

    name: str
    description: str
    scale: Callable = _scale
    inputs: Callable | None = None
    logits: Callable | None = None
    mask: Callable = _mask
    mask_value: float = -np.inf
    bias: Callable | None = None
    apply_mask: Callable = _apply_mask
    softmax: Callable = _softmax
    after_softmax: Callable | None = None
    combine: Callable = _combine
    output: Callable | None = None
    whole: Callable | None = None
    exact: bool = False
    expand: Callable = expand_kv_heads
    family_change: Callable | None = None
    needs: frozenset = frozenset()
    axes: frozenset = frozenset()

    def __call__(self, q, K, V, *, tau=1.0, mask=None, causal=False, dtype="float64", family=None,
                 profile="sdpa"):
        acc = _acc(dtype)
        rounds = not self.exact and dtype != "float64"  # the profile's stages change nothing at float64
        K, V = self.expand(q, K, V)
        if family is not None and self.family_change is not None:
            family = self.family_change(family)
        if family is not None:  # the family's stages in the accumulation precision, or the dtype (positions)
            q, K, V = family.inputs(q, K, V)
            if not self.exact:
                stage = dtype if profile == "positions" else acc
                q, K, V = (round_to(a, stage) if isinstance(stage, str) else a.astype(stage).astype(np.float64)
                           for a in (q, K, V))
        given = (mask, causal, q.shape[-2], K.shape[-2])
        if self.inputs is not None:
            q, K, V, mask = self.inputs(q, K, V, mask)
        L, N = q.shape[-2], K.shape[-2]
        m = self.mask(mask, causal, L, N)
        if family is not None:
            m = family.mask(m, L, N)
        prof = profile if rounds else "sdpa"
        s = self._logits(q, K, V, tau, m, dtype, np.float64 if self.exact else acc, family, prof)
        p_dtype = "tfloat32" if prof == "tf32" and dtype == "float32" else dtype
        if p_dtype == "tfloat32":
            V = round_to(V, p_dtype)
        n_real = s.shape[-1]
        if family is not None and family.sinks:  # the sink: one more key of logit sink_h and value 0
            s, V = family.with_sinks(s, np.broadcast_to(V, s.shape[:-2] + V.shape[-2:]))
            s = s.astype(np.float64 if self.exact else acc)
        softmax, combine = self.softmax, self.combine
        if prof == "low_precision":  # exp, sums and products rounded to the dtype, sums pairwise
            softmax = _softmax_in_dtype if softmax is _softmax else softmax
            combine = _combine_in_dtype if combine is _combine else combine
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if self.whole is not None:
                o, w = self.whole(s, V, p_dtype, acc)
                w = w[..., :n_real]
            else:
                w = softmax(s, dtype, acc)[..., :n_real]  # the sink's value is 0: its column drops out of w V
                if self.after_softmax is not None:
                    w = self.after_softmax(w, _mask(*given))
                o = combine(w, V[..., :n_real, :], p_dtype, acc)
        if self.output is not None:
            o, w = self.output(o, w)
        with np.errstate(over="ignore", invalid="ignore"):
            return round_to(o, dtype), round_to(w, dtype)

    def _logits(self, q, K, V, tau, m, dtype, acc, family, profile):
        """The masked logits in ``acc``: products, scale, the bug's logit stage and bias, the family's bias and cap,
        the mask; with the roundings of ``profile`` (:data:`varsim.testing.precision.PROFILES`)."""
        L, N = q.shape[-2], K.shape[-2]
        scale = self.scale(tau, q.shape[-1], V.shape[-1])
        if profile == "prescaled":
            q, scale = round_to(q * scale, dtype), 1.0
        elif profile == "tf32" and dtype == "float32":
            q, K = round_to(q, "tfloat32"), round_to(K, "tfloat32")
        if profile == "low_precision":  # every partial sum of the products rounded to the dtype
            s = np.zeros(q.shape[:-1] + (N,))
            for d in range(q.shape[-1]):
                s = round_to(s + round_to(q[..., d:d + 1] * np.swapaxes(K[..., d:d + 1], -1, -2), dtype), dtype)
            s = s.astype(acc)
        else:
            s = np.matmul(q.astype(acc), np.swapaxes(K, -1, -2).astype(acc))
        s = _r(_r(s, dtype, acc) * acc(scale), dtype, acc) if profile in ("eager", "low_precision") else s * acc(scale)
        if self.logits is not None:
            s = self.logits(s, dtype, acc)
        if self.bias is not None:
            s = s + self.bias(L, N).astype(acc)
        if family is not None:
            b = family.bias(q.shape[-3], L, N)
            if b is not None:
                b = round_to(b, dtype) if profile in ("positions", "eager") else b
                s = _r(s + b, dtype, acc) if profile == "eager" else s + b.astype(acc)
            s = family.capped(s).astype(acc)
        if profile == "low_precision":
            s = _r(s, dtype, acc)
        with np.errstate(over="ignore", invalid="ignore"):
            return self.apply_mask(s, m, self.mask_value)

    @property
    def outside_softmax(self) -> bool:
        """Whether the bug can be planted around a library attention call (inputs, scale, boolean or additive mask,
        output)."""
        return (self.whole is None and self.logits is None and self.apply_mask is _apply_mask and
                self.softmax is _softmax and self.after_softmax is None and self.combine is _combine)

    def library_mask(self, mask, causal, L, N):
        """The mask a library attention call gets with the bug planted (for :attr:`outside_softmax` entries).

        Parameters
        ----------
        mask : numpy.ndarray or None
            The boolean mask the function received.
        causal : bool
            Whether it was asked for the causal mask.
        L, N : int
            Queries and keys.

        Returns
        -------
        numpy.ndarray or None
            A boolean mask (None: none) or an additive float bias ``(..., L, N)``.
        """
        m = self.mask(mask, causal, L, N)
        if self.mask_value == -np.inf and self.bias is None:
            return m
        bias = np.zeros((L, N)) if self.bias is None else self.bias(L, N)
        return bias if m is None else np.where(m, bias, self.mask_value + bias)


# --- correct kernels -------------------------------------------------------------------------------------------------

def _reference(s, V, dtype, acc):
    o, w = softmax_rows(s, V)
    return o, w


def _float32_math(s, V, dtype, acc):
    w = _softmax(s, dtype, acc)
    return np.matmul(w, V.astype(acc)), w


def _log_domain(s, V, dtype, acc):
    mx = s.max(axis=-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0).astype(s.dtype)
    total = np.exp(s - mx).sum(axis=-1, keepdims=True)
    lse = mx + np.log(np.where(total > 0, total, 1.0))
    w = np.where(total > 0, np.exp(s - lse), 0.0).astype(s.dtype)
    return np.matmul(w, V.astype(acc)), w


def _flash(block=32, rescale_acc=True, rescale_den=True):
    """Flash-attention style: blocks of keys, a running max, a running sum and an accumulator rescaled when the max
    grows; probabilities rounded to the dtype before the product with the values; one division at the end."""

    def run(s, V, dtype, acc):
        N = s.shape[-1]
        run_max = np.full(s.shape[:-1], -np.inf, dtype=acc)
        den = np.zeros(s.shape[:-1], dtype=acc)
        out = np.zeros((*s.shape[:-1], V.shape[-1]), dtype=acc)
        for start in range(0, N, block):
            blk = s[..., start:start + block]
            new_max = np.maximum(run_max, blk.max(axis=-1))
            safe = np.where(np.isfinite(new_max), new_max, 0.0).astype(acc)
            alpha = np.exp(run_max - safe)
            p = np.exp(blk - safe[..., None])
            den = (den * alpha if rescale_den else den) + p.sum(axis=-1)
            pv = np.matmul(_r(p, dtype, acc), np.broadcast_to(V, (*s.shape[:-2], N, V.shape[-1]))[
                ..., start:start + block, :].astype(acc))
            out = (out * alpha[..., None] if rescale_acc else out) + pv
            run_max = new_max
        safe_den = np.where(den > 0, den, 1.0)[..., None]  # a row with no key: zeros
        w = np.exp(s - np.where(np.isfinite(run_max), run_max, 0.0)[..., None]) / safe_den
        return out / safe_den, w

    return run


CORRECT = {k.name: k for k in (
    Kernel("reference", "the float64 reference, output rounded to the dtype", whole=_reference, exact=True),
    Kernel("float32_math", "softmax and the product with V in the accumulation precision, unrounded weights",
           whole=_float32_math),
    Kernel("rounded_probabilities", "normalised weights rounded to the dtype before the product with V "
                                    "(memory-efficient style)"),
    Kernel("flash_tiled", "flash-style online softmax over blocks of 32 keys, probabilities rounded to the dtype",
           whole=_flash(32)),
    Kernel("log_domain", "weights exp(s - logsumexp(s)) in the accumulation precision", whole=_log_domain),
)}
"""The correct kernels of the catalogue: name -> :class:`Kernel` (the float64 reference rounded, float32 math,
rounded probabilities, a flash-style tiled online softmax, a log-domain softmax): a check that fails one of them is a
false alarm."""


# --- bugs ------------------------------------------------------------------------------------------------------------

def _shift_right(m):
    out = m.copy()
    out[..., 1:] |= m[..., :-1]
    return out


def _drop_last(mask, causal, L, N):
    """The mask of a kernel that never reads the last key (kept where it is a query's only key)."""
    m = _mask(mask, causal, L, N)
    m = np.ones((L, N), dtype=bool) if m is None else np.array(np.broadcast_to(m, (*np.shape(m)[:-2], L, N)))
    if N > 1:
        keep = m[..., :-1].any(axis=-1)
        m[..., -1] &= ~keep
    return m


def _repeat_first(q, K, V, mask):
    cat = lambda a: np.concatenate([a[..., :1, :], a], axis=-2)  # noqa: E731
    m = None if mask is None else np.concatenate([mask[..., :1], mask], axis=-1)
    return q, cat(K), cat(V), m


def _merge_repeated(o, w):
    """The weights of the first key counted twice, summed back into one column."""
    merged = w[..., 1:].copy()
    merged[..., 0] += w[..., 0]
    return o, merged


def _first(axis):
    def inputs(q, K, V, mask):
        idx = [slice(None)] * K.ndim
        idx[axis] = slice(0, 1)
        return q, np.broadcast_to(K[tuple(idx)], K.shape), V, mask
    return inputs


def _mask_first_sequence(mask, causal, L, N):
    m = _mask(mask, causal, L, N)
    return m if m is None or m.ndim < 4 else np.broadcast_to(m[:1], m.shape)


def _low_precision_lse(s, dtype, acc):
    mx = s.max(axis=-1, keepdims=True)
    lse = _r(mx + np.log(np.exp(s - mx).sum(axis=-1, keepdims=True)), dtype, acc)
    return np.exp(s - lse)


def _low_precision_sum(s, dtype, acc):
    e = _r(np.exp(s - s.max(axis=-1, keepdims=True)), dtype, acc)
    total = np.zeros(e.shape[:-1] + (1,), dtype=acc)
    for i in range(e.shape[-1]):  # a running sum rounded to the dtype at every key
        total = _r(total + e[..., i:i + 1], dtype, acc)
    return e / total


def _no_max(s, dtype, acc):
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def _epsilon(s, dtype, acc):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / (e.sum(axis=-1, keepdims=True) + acc(1e-6))


def _softmax_over_queries(s, dtype, acc):
    w = np.exp(s - s.max(axis=-2, keepdims=True))
    return np.nan_to_num(w / w.sum(axis=-2, keepdims=True))


def _heads_queries_swapped(o):
    B, H, L, d = o.shape
    return o.transpose(0, 2, 1, 3).reshape(B, H, L, d)


def _first_query(q, K, V, mask):
    return np.broadcast_to(q[..., :1, :], q.shape), K, V, mask


def _alibi(L, N):
    return -(2.0**-8) * (N - 1 - np.arange(N)) * np.ones((L, 1))  # a leaked ALiBi bias, slope 2^-8 (8th head of 8)


def _rope_mismatch(q, K, V, mask):
    """Rotary embedding at one shared position, interleaved pairs for q and half-split pairs for K: a convention
    mismatch (the same convention on both leaves every logit unchanged)."""
    d = q.shape[-1] - q.shape[-1] % 2
    theta = 10000.0 ** (-np.arange(d // 2) / (d // 2))
    c, s = np.cos(theta), np.sin(theta)

    def interleaved(x):
        x = x.copy()
        a, b = x[..., 0:d:2].copy(), x[..., 1:d:2].copy()
        x[..., 0:d:2], x[..., 1:d:2] = a * c - b * s, a * s + b * c
        return x

    def half(x):
        x = x.copy()
        a, b = x[..., : d // 2].copy(), x[..., d // 2: d].copy()
        x[..., : d // 2], x[..., d // 2: d] = a * c - b * s, a * s + b * c
        return x

    return interleaved(q), half(K), V, mask


def _tile_kv(q, K, V):
    """Grouped-query keys repeated as a whole (``repeat``/``tile``: query head ``h`` reads key head
    ``h % H_kv``) instead of interleaved (``h // (H / H_kv)``)."""
    if K.shape[-3] == q.shape[-3]:
        return K, V
    reps = q.shape[-3] // K.shape[-3]
    tile = [1] * K.ndim
    tile[-3] = reps
    return np.tile(K, tile), np.tile(V, tile)


def _skip_diagonal_tile(block):
    """A causal kernel that skips a tile of keys starting at the query's own position (``start >= p`` instead of
    ``start > p``): a query at a multiple of ``block`` loses its own key (it keeps key 0)."""

    def mask(m, causal, L, N):
        if not causal:
            return m
        pos = N - L + np.arange(L)
        keep = causal_mask(L, N) & ~((np.arange(N)[None, :] == pos[:, None]) & (pos[:, None] % block == 0))
        keep[:, 0] |= ~keep.any(axis=1)
        return keep
    return mask


def _last_partial_tile_dropped(block):
    """A tiled kernel that never visits the last partial tile of keys (``N // block`` tiles) when there are more
    keys than one tile; a query left with no key keeps its first."""

    def mask(m, causal, L, N):
        m = _mask(m, causal, L, N)
        if N <= block or N % block == 0:
            return m
        full = np.arange(N) < (N // block) * block
        out = np.broadcast_to(full, (L, N)) if m is None else np.logical_and(m, full)
        out = np.array(np.broadcast_to(out, np.broadcast_shapes(out.shape, (L, N))))
        out[..., 0] |= ~out.any(axis=-1)
        return out
    return mask


def _causal_top_left(mask, causal, L, N):
    return np.tril(np.ones((L, N), dtype=bool)) if causal else mask


def _causal_no_diagonal(mask, causal, L, N):
    if not causal:
        return mask
    m = np.arange(N)[None, :] < (N - L + np.arange(L))[:, None]  # query l sees keys 0 .. N - L + l - 1
    m[:, 0] = True  # (a first query that sees nothing would be nan; keep key 0)
    return m


_MUTANT_LIST = (
    Kernel("scale_1_over_d", "logits divided by d_k instead of sqrt(d_k)", scale=lambda t, dk, dv: t / dk),
    Kernel("scale_sqrt_d_v", "logits divided by sqrt(d_v)", scale=lambda t, dk, dv: t / math.sqrt(dv)),
    Kernel("scale_sqrt_d_k_plus_1", "logits divided by sqrt(d_k + 1) (3% at d_k = 16)",
           scale=lambda t, dk, dv: t / math.sqrt(dk + 1)),
    Kernel("temperature_ignored", "temperature not applied", scale=lambda t, dk, dv: 1.0 / math.sqrt(dk)),
    Kernel("temperature_divides", "logits divided by the temperature",
           scale=lambda t, dk, dv: 1.0 / (t * math.sqrt(dk))),
    Kernel("logits_doubled", "logits doubled (scale applied to q and k)",
           scale=lambda t, dk, dv: 2.0 * t / math.sqrt(dk)),
    Kernel("scale_applied_twice", "scale applied twice (tau^2 / d_k)", scale=lambda t, dk, dv: t * t / dk),
    Kernel("mask_ignored", "mask not applied", mask=lambda m, c, L, N: None, needs=frozenset({"mask"})),
    Kernel("mask_off_by_one", "every run of attended keys one key too long (valid length + 1, causal diagonal + 1)",
           mask=lambda m, c, L, N: None if _mask(m, c, L, N) is None else _shift_right(_mask(m, c, L, N)),
           needs=frozenset({"mask"})),
    Kernel("mask_after_softmax", "masked weights zeroed after the softmax, not renormalised",
           mask=lambda m, c, L, N: None, after_softmax=lambda w, m: w if m is None else w * m,
           needs=frozenset({"mask"})),
    Kernel("additive_mask_1e4", "mask added as -1e4 to the logits (leaks when a masked logit is large)",
           mask_value=-1e4, needs=frozenset({"mask"})),
    Kernel("mask_multiplies_logits", "logits multiplied by the mask (masked logits 0, not -inf)",
           apply_mask=lambda s, m, value: s if m is None else s * m, needs=frozenset({"mask"})),
    Kernel("mask_of_first_sequence", "mask broadcast over the wrong axis: the first sequence's mask for the batch",
           mask=_mask_first_sequence, needs=frozenset({"mask"}), axes=frozenset({"batch"})),
    Kernel("causal_top_left", "causal mask aligned top-left (is_causal with L < N)", mask=_causal_top_left,
           needs=frozenset({"causal"})),
    Kernel("kv_cache_offset", "decoding with a KV cache, the current token's own key not yet written (query l sees "
                              "keys 0 .. N - L + l - 1)", mask=_causal_no_diagonal, needs=frozenset({"causal"})),
    Kernel("heads_queries_swapped", "head and query axes swapped in a reshape",
           output=lambda o, w: (_heads_queries_swapped(o), _heads_queries_swapped(w)),
           axes=frozenset({"heads", "queries"})),
    Kernel("keys_of_first_head", "keys of head 0 used for every head (a grouped-query mapping bug)",
           inputs=_first(1), axes=frozenset({"heads"})),
    Kernel("keys_of_first_sequence", "keys of the first sequence reused for the whole batch", inputs=_first(0),
           axes=frozenset({"batch"})),
    Kernel("first_query_only", "the first query's result broadcast to every query", inputs=_first_query,
           axes=frozenset({"queries"})),
    Kernel("softmax_over_queries", "softmax over the query axis instead of the keys", softmax=_softmax_over_queries),
    Kernel("alibi_leaked", "an ALiBi bias of slope 2^-8 applied where there is none", bias=_alibi),
    Kernel("rope_convention_mismatch", "rotary embedding with interleaved pairs for q, half-split pairs for K",
           inputs=_rope_mismatch),
    Kernel("online_softmax_no_rescale", "flash-style kernel that never rescales its accumulator and sum when the "
                                        "running max grows", whole=_flash(32, rescale_acc=False, rescale_den=False)),
    Kernel("online_softmax_sum_not_rescaled", "flash-style kernel that rescales the accumulator but not the sum",
           whole=_flash(32, rescale_den=False)),
    Kernel("low_precision_lse", "log-sum-exp rounded to the dtype, weights exp(s - lse)", softmax=_low_precision_lse),
    Kernel("low_precision_logits", "logits rounded to the dtype before the softmax (low-precision accumulation)",
           logits=lambda s, dtype, acc: _r(s, dtype, acc)),
    Kernel("low_precision_sum", "softmax denominator summed key by key in the dtype", softmax=_low_precision_sum),
    Kernel("no_max_subtraction", "exp of the raw logits (overflows at large logits)", softmax=_no_max),
    Kernel("epsilon_in_normaliser", "1e-6 added to the softmax denominator", softmax=_epsilon),
    Kernel("dropped_key", "last key dropped", mask=_drop_last),
    Kernel("repeated_key", "first key counted twice", inputs=_repeat_first, output=_merge_repeated),
    Kernel("output_scaled_1.3", "output 1.3 times too large", output=lambda o, w: (1.3 * o, w)),
    Kernel("output_scaled_1.03", "output 3% too large", output=lambda o, w: (1.03 * o, w)),
    Kernel("gqa_repeat_not_interleave", "grouped-query keys repeated (h % H_kv) instead of interleaved "
                                        "(h // group)", expand=_tile_kv, axes=frozenset({"gqa"})),
    Kernel("causal_tile_skips_diagonal", "causal kernel skipping the 64-key tile that starts at the query's own "
                                         "position", mask=_skip_diagonal_tile(64), needs=frozenset({"causal"})),
    Kernel("last_partial_tile_dropped", "tiled kernel that never visits the last partial 64-key tile",
           mask=_last_partial_tile_dropped(64)),
    Kernel("window_off_by_one", "sliding window one key too wide", needs=frozenset({"window"}),
           family_change=lambda f: dataclasses.replace(f, window=f.window + 1)),
    Kernel("softcap_missing", "logit softcapping not applied", needs=frozenset({"cap"}),
           family_change=lambda f: dataclasses.replace(f, cap=0.0)),
    Kernel("sink_ignored", "attention sink left out of the softmax", needs=frozenset({"sinks"}),
           family_change=lambda f: dataclasses.replace(f, sinks=())),
)
MUTANTS = {k.name: k for k in _MUTANT_LIST}
"""The bug classes of the catalogue: name -> :class:`Kernel`, each the default pipeline with one stage changed."""


def kernel(name: str) -> Kernel:
    """The catalogue entry ``name``, correct or mutant.

    Parameters
    ----------
    name : str
        A key of :data:`CORRECT` or :data:`MUTANTS`; an unknown name raises ``ValueError`` listing them.

    Returns
    -------
    Kernel
        The entry.

    Examples
    --------
    >>> from varsim.testing.mutants import kernel
    >>> kernel("output_scaled_1.03").description
    'output 3% too large'
    """
    if name in CORRECT:
        return CORRECT[name]
    if name in MUTANTS:
        return MUTANTS[name]
    raise ValueError(f"name: unknown kernel {name!r}; expected one of {sorted(CORRECT) + sorted(MUTANTS)}")
