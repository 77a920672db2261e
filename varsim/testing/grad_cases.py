"""The cases of the gradient check: small batches covering what real attention backward kernels get wrong.

A :class:`GradientCase` describes one batch (shapes, grouped heads, mask, softcap, sink, dropout) and draws it with
an output gradient ``dO``; :data:`GRADIENT_CASES` is the battery that :func:`varsim.testing.check_gradients` runs by
default. Between them the cases have a temperature ``tau != 1``, ``d_k != d_v`` both ways, grouped-query (4 query
heads over 2 KV heads) and multi-query heads (4 over 1), a causal mask with fewer queries than keys (bottom-right
aligned, as FlashAttention >= 2.1 and MLX), causal lengths across a 64-key tile (65), a 128-key tile (129) and a
256-key tile (255 queries and keys; 66 queries over 257 keys, so the queries' and the keys' tiles are offset), a
causal sliding window, padding (and padded keys and values holding NaN and inf, run when the check is told
``masked_inputs="any"``), a fully masked query row, logit softcapping with logits beyond the cap (under a causal mask,
so that softcapping after the mask shows), a learned sink logit per head, a learned additive bias, and dropout; two
cases hand ``q, K, V`` over as non-contiguous views.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from varsim._common.seeding import child_generator, resolve_seed

from .grad_reference import full_mask

__all__ = ["GradientCase", "GRADIENT_CASES", "GRAD_MASKS", "GRAD_KEYWORDS", "plant_nonfinite", "strided_view",
           "varlen_mask"]

GRAD_MASKS = ("none", "causal", "window", "padding", "rows", "varlen")
"""Masks of a gradient case: none; causal (bottom-right, or top-left when the check is told so); a causal sliding
window; padding (each sequence its own number of valid keys); rows (a random mask with one fully masked query);
varlen (each sequence its own number of queries and of keys, causal bottom-right within it: a packed batch of
``flash_attn_varlen_func(causal=True)``, given to a dense function as its mask, padded query rows fully masked)."""
GRAD_KEYWORDS = ("tau", "mask", "causal", "window", "softcap", "sink", "bias", "dropout_p", "seed")
"""The keywords the gradient check passes to a function whose signature names them."""


@dataclasses.dataclass(frozen=True)
class GradientCase:
    """One batch of the gradient check.

    Attributes
    ----------
    name : str
        Shown in failure messages.
    batch, heads, kv_heads, n_queries, n_keys, d_k, d_v : int
        ``q (B, H, L, d_k)``, ``K (B, G, N, d_k)``, ``V (B, G, N, d_v)``; ``G = kv_heads`` divides ``H``.
    tau, beta : float
        Temperature, and logit scale ``tau |q| / sqrt(d_k)`` (the queries' norm).
    mask : {"none", "causal", "window", "padding", "rows", "varlen"}
        See :data:`GRAD_MASKS`.
    window : int
        Keys in the sliding window (query and ``window - 1`` keys before it), for ``mask="window"``.
    softcap : float
        Logit softcap (0: none).
    sink : bool
        Whether each head has a learned sink logit.
    bias : bool
        Whether the logits get a learned additive bias ``(H, L, N)`` (passed as ``bias=``, its gradient ``dbias``).
    dropout_p : float
        Dropout probability (0: none).
    seed : int
        Stream of the draws (combined with the check's ``rng``).
    masked_nan : bool
        With ``mask="padding"``: the keys and values that no query of their sequence may attend (at least one per
        padded sequence) hold NaN and inf (:func:`plant_nonfinite`); the output and gradients must not change. Run
        only when the check is told ``masked_inputs="any"``.
    strided : bool
        ``q``, ``K`` and ``V`` are handed over as non-contiguous views (:func:`strided_view`), as they come out of a
        fused projection: memory ordered ``(B, L, H, d)`` with a gap after each head's ``d`` channels, so the
        ``(B, H, L, d)`` view is transposed and the ``(B, L, H, d)`` view sliced; the last axis stays contiguous.

    Examples
    --------
    >>> from varsim.testing import GRADIENT_CASES
    >>> [c.name for c in GRADIENT_CASES][:3]
    ['plain', 'grouped', 'multi_query_causal']
    """

    name: str
    batch: int = 1
    heads: int = 2
    kv_heads: int = 2
    n_queries: int = 5
    n_keys: int = 7
    d_k: int = 16
    d_v: int = 8
    tau: float = 0.8
    beta: float = 2.0
    mask: str = "none"
    window: int = 0
    softcap: float = 0.0
    sink: bool = False
    bias: bool = False
    dropout_p: float = 0.0
    seed: int = 0
    masked_nan: bool = False
    strided: bool = False

    @property
    def needs(self) -> frozenset:
        """The keywords a function must take for this case to run."""
        need = {"padding": {"mask"}, "rows": {"mask"}, "varlen": {"mask"}, "causal": {"causal"},
                "window": {"causal", "window"}}
        out = set(need.get(self.mask, ()))
        out |= {"softcap"} if self.softcap else set()
        out |= {"sink"} if self.sink else set()
        out |= {"bias"} if self.bias else set()
        out |= {"dropout_p", "seed"} if self.dropout_p else set()
        return frozenset(out)

    def describe(self) -> str:
        """The case in one line."""
        extra = [f"mask={self.mask}" + (f" window={self.window}" if self.window else "")]
        extra += [f"softcap={self.softcap:g}"] if self.softcap else []
        extra += ["sink"] if self.sink else []
        extra += ["bias"] if self.bias else []
        extra += [f"dropout_p={self.dropout_p:g}"] if self.dropout_p else []
        extra += ["NaN/inf in masked-out keys and values"] if self.masked_nan else []
        extra += ["non-contiguous q, K, V"] if self.strided else []
        return (f"case {self.name!r} (B={self.batch}, H={self.heads}, KV heads={self.kv_heads}, L={self.n_queries}, "
                f"N={self.n_keys}, d_k={self.d_k}, d_v={self.d_v}, tau={self.tau:g}, {', '.join(extra)})")

    def draw(self, rng, *, tau: float, causal: str = "bottom_right") -> dict:
        """The case's arrays from the stream ``(rng, seed)``: ``q, K, V, dO`` (float64), ``mask`` (boolean
        ``(B, 1, L, N)`` given to the function, or None), ``full`` (the mask the reference applies), ``sink``
        (``(H,)`` or None), ``bias`` (``(H, L, N)`` or None) and ``seed`` (the dropout seed)."""
        g = child_generator(resolve_seed(None, rng), self.seed)
        B, H, G, L, N = self.batch, self.heads, self.kv_heads, self.n_queries, self.n_keys
        q = g.standard_normal((B, H, L, self.d_k))
        q *= (self.beta * math.sqrt(self.d_k) / tau) / np.linalg.norm(q, axis=-1, keepdims=True)
        K = g.standard_normal((B, G, N, self.d_k))
        V = 0.5 + g.standard_normal((B, G, N, self.d_v))
        dO = g.standard_normal((B, H, L, self.d_v))
        sink = self.beta * g.standard_normal(H) if self.sink else None
        given = None
        if self.mask == "padding":
            valid = g.integers(1, N + 1, size=B)
            valid[0] = N
            if self.masked_nan:  # every other sequence keeps at least one padded key for the NaN
                valid[1:] = np.minimum(valid[1:], N - 1)
            given = np.broadcast_to((np.arange(N)[None, :] < valid[:, None])[:, None, None, :], (B, 1, L, N)).copy()
        elif self.mask == "varlen":
            given = varlen_mask(*_varlen_lengths(g, B, L, N), L, N)
        elif self.mask == "rows":
            given = g.random((B, 1, L, N)) < 0.7
            given[..., 0] |= ~given.any(axis=-1)  # every row attends some key ...
            given[0, 0, min(1, L - 1)] = False  # ... but one
        kind = "top_left" if (self.mask == "causal" and causal == "top_left") else self.mask
        full = full_mask(kind, L, N, window=self.window, given=given)
        seed = int(g.integers(2**31))
        bias = g.standard_normal((H, L, N)) if self.bias else None
        return dict(q=q, K=K, V=V, dO=dO, mask=given, full=full, sink=sink, seed=seed, bias=bias)


def _varlen_lengths(g: np.random.Generator, B: int, L: int, N: int):
    """Queries and keys per sequence: the first sequence full, the others at least one query, and at least as many
    keys as queries (a causal sequence's queries are its last tokens)."""
    n_q = g.integers(1, L + 1, size=B)
    n_k = np.array([g.integers(min(n, N), N + 1) for n in n_q])
    n_q[0], n_k[0] = L, N
    return n_q, n_k


def varlen_mask(n_q, n_k, L: int, N: int) -> np.ndarray:
    """``(B, 1, L, N)``: sequence ``b`` has queries ``l < n_q[b]`` and keys ``j < n_k[b]``, query ``l`` attends keys
    ``j <= n_k[b] - n_q[b] + l`` (causal, bottom-right within the sequence)."""
    l, j = np.arange(L)[None, :, None], np.arange(N)[None, None, :]
    n_q, n_k = np.asarray(n_q)[:, None, None], np.asarray(n_k)[:, None, None]
    return ((l < n_q) & (j < n_k) & (j <= n_k - n_q + l))[:, None]


def plant_nonfinite(K: np.ndarray, V: np.ndarray, mask) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``K (B, G, N, d_k)`` and ``V (B, G, N, d_v)`` with every key that no query of its sequence may attend
    (``mask (B, 1, L, N)`` all False over the queries) set to NaN in ``K`` and, alternately, NaN and +inf in ``V``:
    what padded slots of a KV cache or a packed buffer may hold. A kernel that multiplies masked weights (zero) by
    those values, or adds the mask to the logits instead of selecting, returns NaN."""
    K, V = K.copy(), V.copy()
    dead = ~np.asarray(mask, dtype=bool)[:, 0].any(axis=1)  # (B, N)
    b, j = np.nonzero(dead)
    K[b, :, j] = np.nan
    V[b, :, j] = np.where((j % 2 == 0)[:, None, None], np.nan, np.inf)
    return K, V


def strided_view(x: np.ndarray, gap: int = 3) -> np.ndarray:
    """``x (B, H, L, d)`` as a non-contiguous view with the same values: its memory is ordered ``(B, L, H, d + gap)``
    (a fused projection's output, the gaps NaN), so the view is transposed and sliced; ``x[..., -1]`` stays unit
    stride."""
    B, H, L, d = x.shape
    buf = np.full((B, L, H, d + gap), np.nan, dtype=x.dtype)
    view = np.swapaxes(buf[..., :d], 1, 2)
    view[...] = x
    return view


GRADIENT_CASES = (
    GradientCase("plain", batch=2, heads=2, kv_heads=2, n_queries=5, n_keys=7, d_k=16, d_v=8, seed=1, strided=True),
    GradientCase("grouped", heads=4, kv_heads=2, n_queries=6, n_keys=9, d_k=8, d_v=12, seed=2, strided=True),
    GradientCase("multi_query_causal", heads=4, kv_heads=1, n_queries=7, n_keys=7, d_k=8, d_v=8, mask="causal",
                 seed=3),
    GradientCase("decode_causal", batch=2, heads=2, kv_heads=2, n_queries=3, n_keys=12, d_k=8, d_v=16,
                 mask="causal", seed=4),
    GradientCase("padding", batch=2, heads=2, kv_heads=2, n_queries=4, n_keys=10, mask="padding", seed=5),
    GradientCase("padding_nan", batch=3, heads=2, kv_heads=2, n_queries=3, n_keys=9, d_k=8, d_v=8, mask="padding",
                 masked_nan=True, seed=15),
    GradientCase("varlen", batch=3, heads=4, kv_heads=2, n_queries=70, n_keys=70, d_k=8, d_v=8, mask="varlen",
                 seed=18),
    GradientCase("masked_row", heads=2, kv_heads=2, n_queries=4, n_keys=6, mask="rows", seed=6),
    GradientCase("window", heads=2, kv_heads=1, n_queries=12, n_keys=12, d_k=8, d_v=8, mask="window", window=4,
                 seed=7),
    GradientCase("softcap", heads=2, kv_heads=2, n_queries=5, n_keys=8, beta=12.0, softcap=6.0, mask="causal",
                 seed=8),
    GradientCase("sink", batch=2, heads=2, kv_heads=2, n_queries=5, n_keys=6, sink=True, seed=9),
    GradientCase("tile_65", heads=1, kv_heads=1, n_queries=65, n_keys=65, d_k=8, d_v=8, mask="causal", seed=10),
    GradientCase("tile_129", heads=1, kv_heads=1, n_queries=129, n_keys=129, d_k=8, d_v=8, mask="causal", seed=11),
    GradientCase("tile_255", heads=1, kv_heads=1, n_queries=255, n_keys=255, d_k=8, d_v=8, mask="causal", seed=16),
    GradientCase("tile_257", heads=2, kv_heads=1, n_queries=66, n_keys=257, d_k=8, d_v=8, mask="causal", seed=17),
    GradientCase("dropout", heads=2, kv_heads=2, n_queries=6, n_keys=8, dropout_p=0.25, seed=12),
    GradientCase("bias", batch=2, heads=2, kv_heads=1, n_queries=5, n_keys=7, mask="causal", bias=True, seed=14),
)
"""The default battery of :func:`varsim.testing.check_gradients` (see the module docstring for what it covers)."""
