"""Same-draw test cases: shapes, logit scale, temperature, value law, key law, mask and precision of one batch.

An :class:`AttentionCase` describes one batch; :meth:`AttentionCase.arrays` draws it. :data:`REFERENCE_CASES` is the
standard battery that :func:`varsim.testing.assert_matches_reference` runs by default: every case has a temperature
``tau != 1`` split from the query norm (``beta = tau |q| / sqrt(d_k)``), ``d_k != d_v``, a non-zero value mean and
several sequences with their own keys; between them they cover huge logits (``beta = 400``: logits beyond the
float64 range of ``exp``), one key, long sequences, several queries and heads, padding and causal masks
(including a single query), masked keys whose logits exceed every unmasked one by more than 1e4 (an additive
``-1e4`` mask leaks there), non-Gaussian keys (uniform, Rademacher with tied logits, Student-t), float32 inputs,
grouped-query and multi-query heads (4 query heads over 2 or 1 key heads: ``repeat`` and ``repeat_interleave``
differ), causal lengths across 64- and 128-key tiles (65, 128, 129, 257 keys; queries at positions 64, 128, 192,
256) and a fully masked row (run when the check is told the convention).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from varsim._common.seeding import child_generator, resolve_seed
from varsim._common.validate import check_choice, check_int, check_real

from .arrays import causal_mask

__all__ = ["AttentionCase", "REFERENCE_CASES", "reference_cases", "KEY_LAWS", "MASKS", "CASE_DTYPES"]

KEY_LAWS = ("gaussian", "uniform", "rademacher", "student_t")
"""The laws of a case's standardised key coordinates (``student_t``: 3 degrees of freedom, unit variance)."""
MASKS = ("none", "padding", "causal")
"""The masks of a case: none, padding (each sequence its own number of valid keys), causal (bottom-right aligned)."""
CASE_DTYPES = ("float64", "float32")
"""The input precisions of a case (the catalogue of :mod:`varsim.testing.mutants` emulates lower ones)."""


def _standardised(rng: np.random.Generator, law: str, shape) -> np.ndarray:
    if law == "gaussian":
        return rng.standard_normal(shape)
    if law == "uniform":
        return rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), shape)
    if law == "rademacher":
        return rng.choice(np.array([-1.0, 1.0]), size=shape)
    return rng.standard_t(3.0, shape) / math.sqrt(3.0)  # student_t: 3 degrees of freedom, unit variance


@dataclasses.dataclass(frozen=True)
class AttentionCase:
    """One batch for a same-draw comparison.

    Attributes
    ----------
    name : str
        A label shown in failure messages.
    batch, heads, n_queries, n_keys : int
        ``B``, ``H``, ``L`` and ``N``: queries ``(B, H, L, d_k)``, keys ``(B, H, N, d_k)``.
    d_k, d_v : int
        Key and value dimensions.
    tau : float
        Temperature passed to functions that take ``tau=`` (others get 1 and the query norm carries ``beta``).
    beta : float
        Logit scale ``tau |q| / sqrt(d_k)`` (every query has this norm, in a random direction).
    value_mean, value_scale : float
        Values are ``value_mean + value_scale * N(0, 1)``.
    key_law : {"gaussian", "uniform", "rademacher", "student_t"}
        Standardised key coordinates (the same-draw check needs no theory, so any law works).
    mask : {"none", "padding", "causal"}
        ``"padding"``: sequence ``b`` has a random number of valid keys (at least 1); ``"causal"``: bottom-right
        aligned (query ``l`` sees keys ``0 .. N - L + l``).
    dtype : {"float64", "float32"}
        Precision of the inputs (and of the tolerance).
    masked_logit : float
        0, or (with a mask) the margin by which every masked key's logit exceeds the largest unmasked logit of its
        query: the queries of a sequence share one direction and the masked keys point along it; padded sequences
        keep at least one masked key and the second sequence only one valid key.
    seed : int
        Stream of this case's draws (combined with the check's ``rng``).
    kv_heads : int
        Heads of the keys and values (0: ``heads``). Fewer than ``heads`` is grouped-query attention (1:
        multi-query): query head ``h`` reads key head ``h // (heads // kv_heads)`` (``repeat_interleave``, the
        convention of PyTorch's ``enable_gqa`` and of flash kernels); ``heads`` must be a multiple of it.
    empty_rows : bool
        With a padding mask: the last sequence has no valid key at all (a fully masked row); run only when the
        check is told the convention (``masked_rows="zeros"`` or ``"nan"``).

    See Also
    --------
    REFERENCE_CASES : the standard battery of cases.
    varsim.testing.check_against_reference : runs cases on your function and a reference.
    varsim.testing.attention_cases : a Hypothesis strategy drawing cases.

    Examples
    --------
    >>> from varsim.testing import AttentionCase, check_against_reference, softmax_attention
    >>> case = AttentionCase("long-hot", n_keys=2048, beta=3.0, tau=0.5, value_mean=1.0)
    >>> q, K, V, mask = case.arrays(rng=0)
    >>> q.shape, K.shape, V.shape, mask
    ((2, 1, 1, 16), (2, 1, 2048, 16), (2, 1, 2048, 8), None)
    >>> check_against_reference(softmax_attention, case).passed
    True
    """

    name: str = "case"
    batch: int = 2
    heads: int = 1
    n_queries: int = 1
    n_keys: int = 16
    d_k: int = 16
    d_v: int = 8
    tau: float = 1.0
    beta: float = 1.0
    value_mean: float = 0.0
    value_scale: float = 1.0
    key_law: str = "gaussian"
    mask: str = "none"
    dtype: str = "float64"
    seed: int = 0
    masked_logit: float = 0.0
    kv_heads: int = 0
    empty_rows: bool = False

    @property
    def n_kv_heads(self) -> int:
        """The heads of the keys and values."""
        return self.kv_heads or self.heads

    def __post_init__(self):
        for field in ("batch", "heads", "n_queries", "n_keys", "d_k", "d_v"):
            check_int(field, getattr(self, field), minimum=1)
        check_int("seed", self.seed, minimum=0)
        check_real("tau", self.tau, minimum=0.0, strict_min=True)
        check_real("beta", self.beta, minimum=0.0)
        check_real("value_mean", self.value_mean)
        check_real("value_scale", self.value_scale, minimum=0.0, strict_min=True)
        check_choice("key_law", self.key_law, KEY_LAWS)
        check_choice("mask", self.mask, MASKS)
        check_choice("dtype", self.dtype, CASE_DTYPES)
        check_real("masked_logit", self.masked_logit, minimum=0.0)
        if self.masked_logit and (self.mask == "none" or self.n_keys < 2 or self.batch < 2):
            raise ValueError("masked_logit needs a mask, n_keys >= 2 and batch >= 2")
        check_int("kv_heads", self.kv_heads, minimum=0, maximum=self.heads)
        if self.heads % self.n_kv_heads:
            raise ValueError(f"kv_heads: heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.masked_logit and self.n_kv_heads != self.heads:
            raise ValueError("masked_logit needs kv_heads == heads")
        if self.empty_rows and (self.mask != "padding" or self.batch < 2 or self.masked_logit):
            raise ValueError("empty_rows needs a padding mask, batch >= 2 and no masked_logit")
        if self.mask == "causal" and self.n_queries > self.n_keys:
            raise ValueError(f"n_queries: a causal case needs n_queries <= n_keys (bottom-right alignment), got "
                             f"{self.n_queries} > {self.n_keys}")

    def describe(self) -> str:
        """One line: the case's name and every field that shapes it."""
        kv = f", kv heads {self.n_kv_heads}" if self.n_kv_heads != self.heads else ""
        return (f"case {self.name!r} (B={self.batch}, H={self.heads}{kv}, L={self.n_queries}, N={self.n_keys}, "
                f"d_k={self.d_k}, d_v={self.d_v}, tau={self.tau:g}, beta={self.beta:g}, value_mean={self.value_mean:g}"
                f", value_scale={self.value_scale:g}, keys {self.key_law}, mask {self.mask}"
                f"{f', masked logits +{self.masked_logit:g}' if self.masked_logit else ''}, {self.dtype}, "
                f"seed={self.seed})")

    def arrays(self, rng, tau: float | None = None):
        """Draw the case's arrays from the stream ``(rng, seed)``.

        Parameters
        ----------
        rng : int, SeedSequence or Generator
            The check's stream, combined with the case's ``seed``.
        tau : float, optional
            The temperature actually applied (default: the case's); the queries have ``|q| = beta sqrt(d_k) / tau``.

        Returns
        -------
        q, K, V : numpy.ndarray
            ``q (B, H, L, d_k)``, ``K (B, H_kv, N, d_k)``, ``V (B, H_kv, N, d_v)``, float64 (``H_kv`` the
            :attr:`n_kv_heads`).
        mask : numpy.ndarray or None
            Boolean ``(B, 1, L, N)``, True where a query may attend a key; None without a mask.
        """
        tau = self.tau if tau is None else tau
        g = child_generator(resolve_seed(None, rng), self.seed)
        B, H, L, N = self.batch, self.heads, self.n_queries, self.n_keys
        q = g.standard_normal((B, H, L, self.d_k))
        if self.masked_logit:
            q[:] = q[:, :, :1]  # one direction per sequence, so one key can be far above every query's others
        q *= (self.beta * math.sqrt(self.d_k) / tau) / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), 1e-300)
        K = _standardised(g, self.key_law, (B, self.n_kv_heads, N, self.d_k))
        V = self.value_mean + self.value_scale * g.standard_normal((B, self.n_kv_heads, N, self.d_v))
        mask = None
        if self.mask == "padding":
            valid = g.integers(1, N + 1, size=B)
            valid[0] = N if B > 1 else valid[0]  # one full sequence, the others padded
            if self.masked_logit:
                valid[1:] = np.minimum(valid[1:], N - 1)
                valid[1] = 1
            if self.empty_rows:
                valid[-1] = 0
            mask = np.broadcast_to((np.arange(N)[None, :] < valid[:, None])[:, None, None, :], (B, 1, L, N)).copy()
        elif self.mask == "causal":
            mask = np.broadcast_to(causal_mask(L, N), (B, 1, L, N)).copy()
        if self.masked_logit:
            K = self._plant_masked(q, K, mask, tau)
        return q, K, V, mask

    def _plant_masked(self, q, K, mask, tau):
        """Keys masked for some query of their sequence point along the sequence's query direction, with logit
        ``masked_logit`` above the largest logit that query may see (in a causal case, key ``i`` masked for some
        query has ``r * masked_logit`` with ``r`` its rank among those keys)."""
        scale = tau / math.sqrt(self.d_k)
        q0 = q[:, :, 0]  # (B, H, d_k)
        logits = scale * np.einsum("bhd,bhnd->bhn", q0, K)
        masked = ~mask[:, 0].all(axis=1)  # (B, N): masked for at least one query
        top = np.where(~masked[:, None, :], logits, -np.inf).max(axis=-1, keepdims=True)  # (B, H, 1)
        top = np.where(np.isfinite(top), top, logits.max(axis=-1, keepdims=True))
        # causal: a key masked for query l is visible to later queries, so each later key climbs another margin
        rank = np.cumsum(masked, axis=1) if self.mask == "causal" else np.ones_like(masked, dtype=np.int64)
        target = top + self.masked_logit * rank[:, None, :]  # (B, H, N)
        k_new = (target / (scale * np.sum(q0 * q0, axis=-1, keepdims=True)))[..., None] * q0[:, :, None, :]
        return np.where(masked[:, None, :, None], k_new, K)


REFERENCE_CASES = (
    AttentionCase("moderate", batch=3, n_keys=24, d_k=16, d_v=6, tau=0.7, beta=1.5, value_mean=1.5, value_scale=2.0,
                  seed=1),
    AttentionCase("huge-logits", batch=3, n_keys=20, d_k=8, d_v=5, tau=1.6, beta=400.0, value_mean=-2.0, seed=2),
    AttentionCase("one-key", batch=2, n_keys=1, d_k=4, d_v=3, tau=1.3, beta=2.0, value_mean=0.5, seed=3),
    AttentionCase("long", batch=2, n_keys=1024, d_k=32, d_v=3, tau=2.0, beta=2.5, value_mean=1.0, seed=4),
    AttentionCase("multi-query", batch=2, n_queries=5, n_keys=12, d_k=12, d_v=7, tau=0.8, beta=2.0,
                  value_mean=-1.0, seed=5),
    AttentionCase("multi-head", batch=2, heads=3, n_queries=4, n_keys=9, d_k=10, d_v=6, tau=1.3, beta=1.2,
                  value_mean=0.7, seed=6),
    AttentionCase("padding-mask", batch=3, heads=2, n_queries=2, n_keys=15, d_k=8, d_v=4, tau=0.9, beta=2.0,
                  value_mean=1.2, mask="padding", seed=7),
    AttentionCase("causal", batch=2, heads=2, n_queries=6, n_keys=6, d_k=8, d_v=5, tau=1.5, beta=1.5,
                  value_mean=-0.8, mask="causal", seed=8),
    AttentionCase("causal-one-query", batch=3, n_queries=1, n_keys=10, d_k=8, d_v=3, tau=0.6, beta=1.8,
                  value_mean=2.0, mask="causal", seed=9),
    AttentionCase("causal-kv-cache", batch=2, heads=2, n_queries=3, n_keys=11, d_k=6, d_v=9, tau=1.1, beta=2.2,
                  value_mean=0.3, mask="causal", seed=10),
    AttentionCase("uniform-keys", batch=3, n_keys=40, d_k=9, d_v=4, tau=0.5, beta=3.0, value_mean=-1.5,
                  key_law="uniform", seed=11),
    AttentionCase("rademacher-keys", batch=3, n_keys=32, d_k=4, d_v=6, tau=1.4, beta=0.8, value_mean=1.0,
                  key_law="rademacher", seed=12),
    AttentionCase("heavy-tailed-keys", batch=3, n_keys=48, d_k=16, d_v=5, tau=0.9, beta=1.0, value_mean=0.4,
                  key_law="student_t", seed=13),
    AttentionCase("masked-huge-logit", batch=3, heads=2, n_queries=2, n_keys=12, d_k=4, d_v=5, tau=1.5, beta=1.5,
                  value_mean=0.9, mask="padding", masked_logit=1.2e4, seed=15),
    AttentionCase("causal-masked-huge-logit", batch=2, n_queries=3, n_keys=8, d_k=4, d_v=3, tau=1.5, beta=1.5,
                  value_mean=-1.1, mask="causal", masked_logit=1.2e4, seed=16),
    AttentionCase("float32", batch=3, n_keys=64, d_k=16, d_v=8, tau=1.2, beta=3.0, value_mean=-0.6, dtype="float32",
                  seed=14),
    AttentionCase("grouped-query", batch=2, heads=4, kv_heads=2, n_queries=3, n_keys=13, d_k=8, d_v=6, tau=1.2,
                  beta=1.6, value_mean=0.6, seed=17),
    AttentionCase("multi-query-causal", batch=2, heads=4, kv_heads=1, n_queries=2, n_keys=10, d_k=6, d_v=5, tau=0.8,
                  beta=1.9, value_mean=-0.9, mask="causal", seed=18),
    AttentionCase("causal-65", batch=2, heads=2, kv_heads=1, n_queries=2, n_keys=65, d_k=8, d_v=4, tau=1.3, beta=1.7,
                  value_mean=0.8, mask="causal", seed=19),
    AttentionCase("causal-128", batch=1, heads=2, n_queries=3, n_keys=128, d_k=8, d_v=3, tau=0.9, beta=2.1,
                  value_mean=-1.3, mask="causal", seed=20),
    AttentionCase("causal-129", batch=1, heads=1, n_queries=129, n_keys=129, d_k=8, d_v=4, tau=1.4, beta=1.4,
                  value_mean=1.1, mask="causal", seed=21),
    AttentionCase("causal-257", batch=1, heads=2, kv_heads=1, n_queries=66, n_keys=257, d_k=8, d_v=3, tau=0.7,
                  beta=2.4, value_mean=-0.7, mask="causal", seed=22),
    AttentionCase("fully-masked-row", batch=3, heads=2, n_queries=2, n_keys=9, d_k=6, d_v=4, tau=1.2, beta=1.5,
                  value_mean=0.5, mask="padding", empty_rows=True, seed=23),
)
"""The standard battery of same-draw cases (the module docstring lists what they cover). Each catches its own family
of bugs; all have ``tau != 1``, ``d_k != d_v`` and a non-zero value mean."""


def reference_cases(*, masks: bool = True, float32: bool = True) -> tuple[AttentionCase, ...]:
    """The standard battery :data:`REFERENCE_CASES`, optionally without the masked or the float32 cases.

    Parameters
    ----------
    masks : bool
        Keep the cases with a padding or causal mask (for a function that takes no mask, leave them out).
    float32 : bool
        Keep the float32 case.

    Returns
    -------
    tuple of AttentionCase
        The cases, in the battery's order.

    Examples
    --------
    >>> from varsim.testing import reference_cases
    >>> len(reference_cases()) > len(reference_cases(masks=False))
    True
    """
    return tuple(c for c in REFERENCE_CASES if (masks or c.mask == "none") and (float32 or c.dtype == "float64"))


MAX_LOGITS = 2**25
"""The most logits ``B*H*L*N`` one case may have (each float64 array of that size is 256 MiB)."""


def as_cases(cases) -> tuple[AttentionCase, ...]:
    """``cases`` as a non-empty tuple of :class:`AttentionCase`: one case, a sequence of them, or None (the standard
    battery); anything else is a ValueError."""
    if cases is None:
        cases = reference_cases()
    elif isinstance(cases, AttentionCase):
        cases = (cases,)
    elif isinstance(cases, (str, bytes)) or not hasattr(cases, "__iter__"):
        raise ValueError(f"cases must be an AttentionCase, a non-empty sequence of them, or None, got {cases!r}")
    cases = tuple(cases)
    if not cases or not all(isinstance(c, AttentionCase) for c in cases):
        raise ValueError("cases must be an AttentionCase, a non-empty sequence of them, or None")
    for c in cases:  # refused before anything is drawn: the check holds several float64 arrays of the logits' size
        size = c.batch * c.heads * c.n_queries * c.n_keys
        if size > MAX_LOGITS:
            raise ValueError(f"cases: case {c.name!r} has B*H*L*N = {size:.3g} logits, above the limit of "
                             f"{MAX_LOGITS:.3g} (the check holds several float64 arrays of that size, "
                             f"{8 * MAX_LOGITS / 2**30:.1f} GiB each at the limit); make it smaller")
    return cases
