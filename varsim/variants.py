"""Registry of attention variants: weight maps (logits -> weights) and output-side normalizations.

One home for the variants of REMEDIES.md 2, shared by the simulator (``varsim.sim``), the transformer (``varsim.nn``)
and the CLI. Pure NumPy: importing it compiles nothing, and it imports neither ``varsim.sim`` nor ``varsim.nn``.

Notation: ``z`` logits with the keys on the last axis (any leading batch axes), ``n`` the number of keys that take
part (default: the number of finite logits of the row, so a ``-inf`` mask entry is not counted), ``w`` weights of the
same shape as ``z``. Masked positions are given as ``-inf`` logits and always get weight exactly 0.

Weight maps (:data:`WEIGHT_MAPS`):

============================  ========================================================================  ==========
name                          weights                                                                    sum w = 1
============================  ========================================================================  ==========
``softmax``                   ``softmax(z)``                                                             yes
``ssmax``                     ``softmax(s ln(n) z)``                                                     yes
``logn``                      ``softmax(ln(n)/ln(n0) z)``, the factor clamped to >= 1 when ``clamp``     yes
``critical``                  ``softmax(c sqrt(2 ln n) z / beta0)`` (REM scaling, THEORY 4c)             yes
``adaptive_temperature``      ``softmax(b(H) z)``, ``H`` the entropy (nats) of ``softmax(z)``,           yes
                              ``b = max(P(H), 1)`` for ``H > 0.5`` else 1 (REMEDIES 2)
``topk``                      softmax over the ``k`` largest logits, 0 elsewhere                         yes
``entmax15``                  ``[z/2 - t]_+^2``, ``t`` such that the weights sum to 1 (exact, sort-based)  yes
``sparsemax``                 ``[z - t]_+``, ``t`` such that the weights sum to 1 (exact, sort-based)      yes
``sigmoid``                   ``sigmoid(z - ln n)`` (no normalization)                                   no
``permuted_softmax``          ``softmax(z)``, its normalizer summed over a fixed permutation of the      yes
                              keys (:func:`key_permutation`): softmax up to summation order
============================  ========================================================================  ==========

``permuted_softmax`` is the negative control of the remedies grid: mathematically softmax, so any difference to
softmax is float rounding. It permutes the keys, takes the max-subtracted exponentials (elementwise, exactly
softmax's), sums them in the permuted order and divides; the weights are returned in the original key order, so the
product with the values is softmax's own (the same as permuting keys and values together, except that this sum
keeps softmax's order). The only difference is the rounding of the normalizer's sum: a relative change of the
weights of order the float epsilon. Applied at inference to a softmax model it checks the pairing of a comparison
(its differences are 0 up to that rounding). It is also trainable (softmax's backward pass, its sum in the same
permuted order): a model trained with it has softmax's initialization and data and differs from the softmax model
only by rounding that training may amplify; in a 600-step tiny argmax model that stayed within one example of 512 at
N <= 1024, so it is close to a pairing check too, not an independent draw of the null.

Controls (:data:`CONTROLS`) say how the remedies grid's assay must behave by construction: ``oracle`` (positive: the
query token attends only to the task's correct item, in every block; the ceiling of any attention-side remedy; it
needs the correct item, ``needs_correct_item``, which :meth:`varsim.nn.model.Transformer.with_attention` arranges)
and ``permuted_softmax`` (negative, the weight map above).

``ssmax``, ``logn`` and ``critical`` are softmax with an N-dependent inverse temperature:
:meth:`Variant.beta_factor` gives the factor ``f(n)`` multiplying the logits, so for logits of scale ``beta`` the
effective scale is ``f(n) beta`` and the exact theory of softmax applies at that scale (``varsim.theory.remedies``).

Each entry declares what it can do, and consumers ask the entry instead of comparing names: ``theory``, its theory
kind (:data:`THEORY_KINDS`; :func:`varsim.theory.remedies.variant_theory` turns a kind into numbers for the CLI, the
sweeps and the figures); ``kernel`` and ``kernel_params``, the simulator's kernel branch and the parameters packed for
it (``varsim.sim._variant_codes``); ``trainable``, whether the transformer has a backward pass for it
(:data:`TRAINABLE_MAPS`; the others, :data:`INFERENCE_ONLY_MAPS`, are applied to trained models only). The CLI flags
of its parameters are generated from ``params`` (``varsim.cli._options``).

Adding a variant: its entry here (reference, parameters, capabilities, and the legend ``label``, ``family`` and
``marker`` of ``fig_variants_ipr``, which shows every map but the controls); a Numba branch in
``varsim/sim/_kernels_map.py`` (with its name in :data:`KERNELS` and its code in ``varsim/sim/_variant_codes.py``)
unless it is a softmax with an N-dependent temperature (``beta_factor_fn``) or reuses a branch; a forward/backward
pair in ``varsim/nn/weightmaps.py`` if it is trainable (an inference-only map runs this reference unless it gets a
faster forward there); a function in ``varsim/theory/remedies.py`` and a table view in ``varsim/cli/theory.py`` only
for a new theory kind. The registry-parametrised tests (``tests/registry_checks.py`` and the tests calling it) then
cover it with no test edited (DEVELOPING.md).

Output normalizations (:data:`OUTPUT_NORMALIZATIONS`): ``ipr_norm``, ``o' = (o - (sum_i w_i) vbar) / sqrt(sum_i
w_i^2)`` with ``vbar`` the per-example mean of the values (THEORY 4b); it complements the model's existing
normalizations (``layernorm``, ``standardize``, per-head versions), which stay in ``varsim.nn.norms``.

Usage::

    from varsim.variants import get_variant, weights
    w = weights("ssmax", logits, s=0.5)                 # (..., N)
    spec = get_variant("topk"); params = spec.check_params({"k": 8})
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from varsim._common.registry import Registry
from varsim._common.validate import check_int, check_real

__all__ = [
    "Param",
    "Variant",
    "Control",
    "CONTROLS",
    "get_control",
    "key_permutation",
    "OutputNormalization",
    "VARIANTS",
    "FAMILIES",
    "BASELINE",
    "register_variant",
    "WEIGHT_MAPS",
    "TRAINABLE_MAPS",
    "INFERENCE_ONLY_MAPS",
    "THEORY_KINDS",
    "KERNELS",
    "OUTPUT_NORMALIZATIONS",
    "get_variant",
    "get_output_normalization",
    "check_params",
    "weights",
    "ipr_norm",
    "adaptive_temperature_factor",
    "entropy",
    "ADAPTIVE_POLY",
]

# P(H) of adaptive temperature, highest power first (REMEDIES 2): -0.037 H^4 + 0.481 H^3 - 2.3 H^2 + 4.917 H - 1.791
ADAPTIVE_POLY = (-0.037, 0.481, -2.3, 4.917, -1.791)
_ADAPTIVE_MIN_ENTROPY = 0.5  # at or below this entropy the temperature is left alone


# ----------------------------------------------------------------------------------------------------------------------
# Parameters


@dataclass(frozen=True)
class Param:
    """One parameter of a variant: ``kind`` is ``"real"``, ``"int"`` or ``"bool"``; bounds apply to numbers
    (``strict``: the minimum itself is excluded). ``default`` None means required. ``flag``: its command-line flag
    when not the generated ``--VARIANT-PARAM`` (``varsim.cli._options.variant_option``)."""

    name: str
    kind: str
    default: object = None
    minimum: float | None = None
    maximum: float | None = None
    strict: bool = False
    help: str = ""
    flag: str | None = None
    #: the parameter is the logits' own scale (critical's ``beta0``): a sweep over the logit scale ``beta`` sets it
    #: to ``beta``
    logit_scale: bool = False

    def check(self, variant: str, value):
        """``value`` converted to the parameter's type, or ``ValueError`` naming ``variant`` and the parameter."""
        label = f"{variant} parameter {self.name!r}"
        if self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{label} must be True or False, got {value!r}")
            return bool(value)
        fvalue = check_real(label, value, minimum=self.minimum, maximum=self.maximum, strict_min=self.strict)
        return check_int(label, value) if self.kind == "int" else fvalue


def _check_param_values(label: str, owner: str, params: tuple[Param, ...], given: dict) -> dict:
    """``given`` checked against the declared ``params`` of ``owner`` (a weight map or an output normalization,
    ``label`` its name in messages): every parameter converted and bounded, defaults filled in; an unknown or a
    missing required parameter raises ``ValueError``. A value of None means "the default"."""
    names = tuple(p.name for p in params)
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(f"{label} has no parameter(s) {', '.join(unknown)}; its parameters: "
                         f"{', '.join(names) if names else 'none'}")
    out = {}
    for p in params:
        if given.get(p.name) is not None:
            out[p.name] = p.check(owner, given[p.name])
        elif p.default is not None:
            out[p.name] = p.default
        else:
            raise ValueError(f"{label} needs parameter {p.name!r} ({p.help})")
    return out


# ----------------------------------------------------------------------------------------------------------------------
# Input handling shared by the references


def _logits_and_n(logits, n):
    """Float64 logits (NaN/+inf refused, ``-inf`` = masked) and the key count per row, shape ``logits.shape[:-1]``."""
    try:
        z = np.asarray(logits, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"logits must be a numeric array, got {type(logits).__name__}") from None
    if z.ndim == 0 or z.shape[-1] == 0:
        raise ValueError(f"logits must have at least one key on the last axis, got shape {z.shape}")
    if np.isnan(z).any() or np.isposinf(z).any():
        raise ValueError("logits must be finite or -inf (masked), got NaN or +inf")
    finite = np.isfinite(z)
    count = finite.sum(axis=-1)
    if np.any(count == 0):
        raise ValueError("logits: every row needs at least one unmasked (finite) entry")
    if n is None:
        n_arr = count.astype(np.float64)
    else:
        try:
            n_arr = np.broadcast_to(np.asarray(n, dtype=np.float64), z.shape[:-1])
        except (TypeError, ValueError):
            raise ValueError(f"n must be a number or an array broadcastable to {z.shape[:-1]}, got {n!r}") from None
        if not np.all(np.isfinite(n_arr)) or np.any(n_arr < 1):
            raise ValueError(f"n must be finite and >= 1, got {n!r}")
    return z, n_arr


def _shifted(z: np.ndarray) -> np.ndarray:
    """``z - max(z)`` over the last axis (masked entries stay ``-inf``)."""
    return z - np.max(z, axis=-1, keepdims=True)


def _softmax(z: np.ndarray) -> np.ndarray:
    """Max-subtracted softmax over the last axis (``-inf`` entries get 0)."""
    e = np.exp(_shifted(z))
    return e / e.sum(axis=-1, keepdims=True)


#: Seed of the fixed key permutation of ``permuted_softmax`` (one permutation per key count).
PERMUTATION_SEED = 16


def key_permutation(t: int) -> np.ndarray:
    """The fixed permutation of ``t`` keys that ``permuted_softmax`` applies (the same for every call)."""
    return np.random.default_rng([PERMUTATION_SEED, int(t)]).permutation(int(t))


def _w_permuted_softmax(z, n):
    perm = key_permutation(z.shape[-1])
    w = np.empty(z.shape, dtype=np.result_type(z, np.float64))
    w[..., perm] = _softmax(z[..., perm])
    return w


def entropy(logits) -> np.ndarray:
    """Shannon entropy (nats) of ``softmax(logits)`` over the last axis; shape ``logits.shape[:-1]``."""
    z, _ = _logits_and_n(logits, None)
    zs = _shifted(z)
    e = np.exp(zs)
    total = e.sum(axis=-1)
    # H = ln Z - sum p zs  with  Z = sum e^{zs}; masked entries (p = 0) contribute nothing
    weighted = np.where(np.isfinite(zs), e * np.where(np.isfinite(zs), zs, 0.0), 0.0).sum(axis=-1)
    return np.log(total) - weighted / total


# ----------------------------------------------------------------------------------------------------------------------
# Weight maps: plain NumPy references (batched over leading axes)


def _w_scaled(factor_fn):
    def ref(z, n, **params):
        f = np.asarray(factor_fn(n, **params), dtype=np.float64)[..., None]
        # f >= 0 and max-subtraction happens after scaling: f * (z - max z) keeps -inf masked and every exponent <= 0
        zs = _shifted(z)
        return _softmax(np.where(np.isfinite(zs), f * np.where(np.isfinite(zs), zs, 0.0), -np.inf))

    return ref


def _factor_softmax(n):
    return np.ones_like(np.asarray(n, dtype=np.float64))


def _factor_ssmax(n, s):
    return s * np.log(n)


def _factor_logn(n, n0, clamp):
    f = np.log(n) / math.log(n0)
    return np.maximum(f, 1.0) if clamp else f


def _factor_critical(n, c, beta0):
    return c * np.sqrt(2.0 * np.log(n)) / beta0


def adaptive_temperature_factor(h) -> np.ndarray:
    """``b(H) = max(P(H), 1)`` for ``H > 0.5``, else 1 (REMEDIES 2), elementwise over entropies ``h`` (nats)."""
    h = np.asarray(h, dtype=np.float64)
    return np.where(h > _ADAPTIVE_MIN_ENTROPY, np.maximum(np.polyval(ADAPTIVE_POLY, h), 1.0), 1.0)


def _w_adaptive(z, n):
    b = adaptive_temperature_factor(entropy(z))[..., None]
    zs = _shifted(z)
    return _softmax(np.where(np.isfinite(zs), b * np.where(np.isfinite(zs), zs, 0.0), -np.inf))


def _w_topk(z, n, k):
    size = z.shape[-1]
    if k >= size:
        return _softmax(z)
    # the k largest per row (ties broken by position, as argpartition does); others masked
    idx = np.argpartition(-z, k - 1, axis=-1)[..., :k]
    keep = np.full(z.shape, -np.inf)
    np.put_along_axis(keep, idx, np.take_along_axis(z, idx, axis=-1), axis=-1)
    return _softmax(keep)


def _finite_sorted_desc(z):
    """Max-subtracted logits with masked entries replaced by -2 (the threshold is >= max - 1 = -1, so they never
    enter the support), and the same sorted descending along the last axis."""
    zs = _shifted(z)
    zs = np.where(np.isfinite(zs), zs, -2.0)
    return zs, -np.sort(-zs, axis=-1)


def _w_sparsemax(z, n):
    # Exact threshold (Martins & Astudillo 2016): support = {j : 1 + j z_(j) > sum_{i<=j} z_(i)}, t = (S_k - 1)/k.
    # After max-subtraction t >= -1, so the -2 placeholders of masked entries are never in the support.
    zs, srt = _finite_sorted_desc(z)
    j = np.arange(1, z.shape[-1] + 1, dtype=np.float64)
    csum = np.cumsum(srt, axis=-1)
    support = (1.0 + j * srt > csum).sum(axis=-1, keepdims=True)  # >= 1: j = 1 always qualifies
    t = (np.take_along_axis(csum, support - 1, axis=-1) - 1.0) / support
    return np.maximum(zs - t, 0.0)


def _w_entmax15(z, n):
    # alpha = 1.5: w = [x - t]_+^2 with x = z/2. For a support of the k largest x, sum (x - t)^2 = 1 gives
    # t_k = mean_k - sqrt((1 - k (meansq_k - mean_k^2)) / k); the support is {k : t_k <= x_(k)} (Peters et al. 2019).
    # After max-subtraction x_max = 0 and t >= x_max - 1 = -1, so a masked entry placed at x = -2 is never in the
    # support: the result equals the map of the unmasked entries alone.
    zs = _shifted(z)
    x = np.where(np.isfinite(zs), 0.5 * np.where(np.isfinite(zs), zs, 0.0), -2.0)
    srt = -np.sort(-x, axis=-1)
    j = np.arange(1, z.shape[-1] + 1, dtype=np.float64)
    mean = np.cumsum(srt, axis=-1) / j
    meansq = np.cumsum(srt * srt, axis=-1) / j
    delta = (1.0 - j * (meansq - mean * mean)) / j
    t_all = mean - np.sqrt(np.maximum(delta, 0.0))
    support = (t_all <= srt).sum(axis=-1, keepdims=True)
    t = np.take_along_axis(t_all, support - 1, axis=-1)
    w = np.maximum(x - t, 0.0) ** 2
    return w


def _w_sigmoid(z, n):
    x = z - np.log(n)[..., None]
    # stable sigmoid: exp(-log(1 + e^{-x})); -inf (masked) gives exactly 0
    return np.exp(-np.logaddexp(0.0, -x))


# ----------------------------------------------------------------------------------------------------------------------
# Specs


#: What exact theory says about a weight map (``Variant.theory``; :func:`varsim.theory.remedies.variant_theory`):
#: ``exact_ipr`` softmax at the effective scale ``f(N) beta`` (needs ``beta_factor_fn``), ``sigmoid_moments`` the exact
#: moments of ``sigmoid(beta g - ln N)``, ``bound`` the top-k bound ``1/k <= sum w^2 <= 1`` (exact softmax where
#: ``k >= N``), ``none`` Monte Carlo only.
THEORY_KINDS: tuple[str, ...] = ("exact_ipr", "sigmoid_moments", "bound", "none")

#: The branches of the simulator's ``map_*`` kernels (``Variant.kernel``; ``varsim.sim._variant_codes`` numbers them):
#: ``scaled_softmax`` streams ``softmax(f(N) z)`` with the factor packed; the others apply the map to all logits.
#: The families of weight maps, the rows of ``fig_variants_ipr`` (``Variant.family``): softmax of the logits times a
#: factor (of N or of the entropy), and the maps of another form.
FAMILIES: tuple[str, ...] = ("rescaled softmax", "other weight maps")
#: The map every remedy is compared with (drawn in every family's panel).
BASELINE = "softmax"

KERNELS: tuple[str, ...] = ("scaled_softmax", "adaptive_temperature", "topk", "entmax15", "sparsemax", "sigmoid")


@dataclass(frozen=True)
class Variant:
    """A weight map and what it can do: its parameters, whether its weights sum to 1, its NumPy reference, its theory
    kind, its simulator kernel and whether the transformer can train with it.

    ``beta_factor_fn`` is set for softmax with an N-dependent inverse temperature (``softmax``, ``ssmax``, ``logn``,
    ``critical``): the weights are ``softmax(beta_factor(n) * z)``. ``theory``: one of :data:`THEORY_KINDS`.
    ``kernel``: one of :data:`KERNELS`; ``kernel_params`` the parameters packed, in order, into the kernel's float
    vector (the scaled softmax packs its factor instead). ``trainable``: the transformer has a backward pass for it
    (``varsim.nn.weightmaps``); the others are inference-only, applied to trained softmax models (REMEDIES 4).
    ``sparse``: the map gives exact zeros. ``label``: its legend label at its default parameters (a ``logit_scale``
    parameter at the logits' beta; Matplotlib mathtext), ``family``: one of :data:`FAMILIES` (a scaled softmax is
    ``"rescaled softmax"``), ``marker``: its Matplotlib marker, unique in the registry (:func:`register_variant`),
    ``color``: its colour in every figure, unique in the registry; empty: one given out by
    :func:`varsim.figures.series.assign` (distinct from every registered map's).
    """

    name: str
    description: str
    params: tuple[Param, ...]
    sums_to_one: bool
    reference: Callable = field(repr=False)
    theory: str
    kernel: str
    trainable: bool
    beta_factor_fn: Callable | None = field(default=None, repr=False)
    kernel_params: tuple[str, ...] = ()
    sparse: bool = False
    label: str = ""
    family: str = ""
    marker: str = ""
    color: str = ""

    def __post_init__(self):
        if not (self.label and self.marker) or self.family not in FAMILIES:
            raise ValueError(f"attention {self.name!r}: needs a label, a marker and a family, one of "
                             f"{', '.join(FAMILIES)}; got {self.label!r}, {self.marker!r}, {self.family!r}")
        if self.is_scaled_softmax and self.family != FAMILIES[0]:
            raise ValueError(f"attention {self.name!r}: a scaled softmax belongs to the family {FAMILIES[0]!r}")
        if self.theory not in THEORY_KINDS:
            raise ValueError(f"attention {self.name!r}: theory must be one of {', '.join(THEORY_KINDS)}, "
                             f"got {self.theory!r}")
        if self.kernel not in KERNELS:
            raise ValueError(f"attention {self.name!r}: kernel must be one of {', '.join(KERNELS)}, "
                             f"got {self.kernel!r}")
        if (self.beta_factor_fn is not None) != (self.kernel == "scaled_softmax"):
            raise ValueError(f"attention {self.name!r}: the scaled_softmax kernel goes with a beta_factor_fn")
        if self.theory == "exact_ipr" and self.beta_factor_fn is None:
            raise ValueError(f"attention {self.name!r}: theory 'exact_ipr' needs a beta_factor_fn")
        unknown = set(self.kernel_params) - {p.name for p in self.params}
        if unknown:
            raise ValueError(f"attention {self.name!r}: kernel_params {sorted(unknown)} are not its parameters")

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params if p.default is not None}

    @property
    def is_scaled_softmax(self) -> bool:
        """True when the weights are ``softmax(f(n) z)`` (exact softmax theory applies at scale ``f(n) beta``)."""
        return self.beta_factor_fn is not None

    def check_params(self, params: dict | None = None, **kwargs) -> dict:
        """All parameters, validated and with defaults filled in; unknown or missing ones raise ``ValueError``."""
        return _check_param_values(f"attention {self.name!r}", self.name, self.params, {**(params or {}), **kwargs})

    def weights(self, logits, n=None, **params) -> np.ndarray:
        """Reference weights, same shape as ``logits`` (keys on the last axis; ``-inf`` masks an entry).

        ``n``: key count (scalar or per row, broadcast to ``logits.shape[:-1]``); default: the finite entries per row.
        """
        p = self.check_params(params)
        z, n_arr = _logits_and_n(logits, n)
        return self.reference(z, n_arr, **p)

    def beta_factor(self, n, **params):
        """The factor ``f(n)`` of a scaled softmax (``weights = softmax(f(n) z)``), elementwise over ``n >= 1``;
        ``ValueError`` for variants that are not a scaled softmax."""
        if self.beta_factor_fn is None:
            raise ValueError(f"attention {self.name!r} is not a softmax with an N-dependent temperature; scaled ones: "
                             f"{', '.join(k for k, v in VARIANTS.items() if v.is_scaled_softmax)}")
        p = self.check_params(params)
        n_arr = np.asarray(n, dtype=np.float64)
        if not np.all(np.isfinite(n_arr)) or np.any(n_arr < 1):
            raise ValueError(f"n must be finite and >= 1, got {n!r}")
        out = np.asarray(self.beta_factor_fn(n_arr, **p), dtype=np.float64)
        return float(out) if out.ndim == 0 else out


_S = Param("s", "real", default=1.0 / math.log(16.0), minimum=0.0, maximum=1e4, strict=True,
           help="SSMax scale: weights softmax(s ln(N) z); default 1/ln 16 (equal to softmax at N = 16)")
_N0 = Param("n0", "real", default=16.0, minimum=1.0, maximum=1e300, strict=True,
            help="logn reference length N0 > 1 (the largest training length); default 16")
_CLAMP = Param("clamp", "bool", default=True, help="logn: clamp the factor ln N / ln N0 to >= 1 (Qwen-style)")
_C = Param("c", "real", default=1.0, minimum=0.0, maximum=1e4,
           help="critical: c in softmax(c sqrt(2 ln N) z / beta0); frozen for c > 1")
_BETA0 = Param("beta0", "real", default=1.0, minimum=0.0, maximum=1e30, strict=True,
               help="critical: base logit scale beta0 > 0 (the standard deviation of z)", logit_scale=True)
_K = Param("k", "int", default=8, minimum=1, maximum=2**62, help="topk: number of kept logits k >= 1", flag="--topk")

_RESCALED, _OTHER = FAMILIES
VARIANTS = Registry("attention", kind=Variant)


def register_variant(variant: Variant) -> Variant:
    """Add ``variant`` to :data:`VARIANTS`; a name, a marker or a colour already registered raises ``ValueError``."""
    for key in ("marker", "color"):
        taken = {getattr(v, key): k for k, v in VARIANTS.items() if getattr(v, key)}
        mine = getattr(variant, key, "")
        if isinstance(variant, Variant) and mine in taken:
            raise ValueError(f"attention {variant.name!r}: {key} {mine!r} is already {taken[mine]}'s")
    return VARIANTS.add(variant)


for _variant in (
    Variant("softmax", "softmax(z)", (), True, _w_scaled(_factor_softmax), theory="exact_ipr",
            kernel="scaled_softmax", trainable=True, beta_factor_fn=_factor_softmax, label="softmax",
            family=_RESCALED, marker="o", color="#0072B2"),
    Variant("ssmax", "softmax(s ln(N) z) (scalable softmax)", (_S,), True, _w_scaled(_factor_ssmax),
            theory="exact_ipr", kernel="scaled_softmax", trainable=True, beta_factor_fn=_factor_ssmax,
            label=r"ssmax ($s = 1/\ln 16$)", family=_RESCALED, marker="s", color="#D55E00"),
    Variant("logn", "softmax(ln(N)/ln(N0) z), factor clamped to >= 1 when clamp", (_N0, _CLAMP), True,
            _w_scaled(_factor_logn), theory="exact_ipr", kernel="scaled_softmax", trainable=True,
            beta_factor_fn=_factor_logn, label=r"logn ($N_0 = 16$, clamped)",
            family=_RESCALED, marker="^", color="#009E73"),
    Variant("critical", "softmax(c sqrt(2 ln N) z / beta0) (REM scaling)", (_C, _BETA0), True,
            _w_scaled(_factor_critical), theory="exact_ipr", kernel="scaled_softmax", trainable=False,
            beta_factor_fn=_factor_critical, label=r"critical ($c = 1$, $\beta_0 = \beta$)", family=_RESCALED,
            marker="D", color="#CC79A7"),
    Variant("adaptive_temperature", "softmax(b(H) z), b from the entropy H of softmax(z)", (), True, _w_adaptive,
            theory="none", kernel="adaptive_temperature", trainable=False, label="adaptive temperature",
            family=_RESCALED, marker="v", color="#999933"),
    Variant("topk", "softmax over the k largest logits", (_K,), True, _w_topk, theory="bound", kernel="topk",
            trainable=False, kernel_params=("k",), sparse=True, label=rf"top-$k$ ($k = {_K.default}$)",
            family=_OTHER, marker="P", color="#56B4E9"),
    Variant("entmax15", "1.5-entmax: [z/2 - t]_+^2, sum 1", (), True, _w_entmax15, theory="none",
            kernel="entmax15", trainable=True, sparse=True, label="1.5-entmax",
            family=_OTHER, marker="X", color="#000000"),
    Variant("sparsemax", "sparsemax: [z - t]_+, sum 1", (), True, _w_sparsemax, theory="none",
            kernel="sparsemax", trainable=True, sparse=True, label="sparsemax",
            family=_OTHER, marker="*", color="#7F7F7F"),
    Variant("sigmoid", "sigmoid(z - ln N), not normalized", (), False, _w_sigmoid, theory="sigmoid_moments",
            kernel="sigmoid", trainable=True, label=r"sigmoid ($z - \ln N$)",
            family=_OTHER, marker="h", color="#8C564B"),
    Variant("permuted_softmax", "softmax(z) computed over a fixed permutation of the keys (negative control)", (),
            True, _w_permuted_softmax, theory="exact_ipr", kernel="scaled_softmax", trainable=True,
            beta_factor_fn=_factor_softmax, label="permuted softmax", family=_RESCALED, marker="p"),
):
    register_variant(_variant)
WEIGHT_MAPS: tuple[str, ...] = tuple(VARIANTS)
#: The maps the transformer trains with (a backward pass), and the inference-only ones.
TRAINABLE_MAPS: tuple[str, ...] = tuple(k for k, v in VARIANTS.items() if v.trainable)
INFERENCE_ONLY_MAPS: tuple[str, ...] = tuple(k for k, v in VARIANTS.items() if not v.trainable)


@dataclass(frozen=True)
class Control:
    """A control of the remedies grid, evaluated like an inference-only map (``evaluate(..., attention=name)``).

    ``kind``: ``"positive"`` (must raise accuracy wherever the model's value path is right) or ``"negative"`` (must
    leave it unchanged). ``weight_map``: the registered weight map it evaluates with, or None when it is not a map of
    the logits. ``needs_correct_item``: the evaluation must supply each example's correct item
    (:meth:`varsim.tasks.Task.correct_item`); the query token then attends only to that item, in every block."""

    name: str
    description: str
    kind: str
    weight_map: str | None
    needs_correct_item: bool


CONTROLS = Registry("control", kind=Control)
for _control in (
    Control("oracle", "the query token attends only to the correct item (weight 1), in every block", "positive",
            None, True),
    Control("permuted_softmax", "softmax up to the summation order of its normalizer", "negative",
            "permuted_softmax", False),
):
    CONTROLS.add(_control)


#: the control registered as a name, or the weight map; an unknown name raises ``ValueError`` listing the valid ones
get_control = CONTROLS.find
"""The control named ``name``; ValueError naming the parameter for an unknown name."""
get_variant = VARIANTS.find
"""The attention weight map named ``name``; ValueError naming the parameter for an unknown name."""


def check_params(name: str, params: dict | None = None, **kwargs) -> dict:
    """Validated parameters (defaults filled in) of the weight map ``name``."""
    return get_variant(name).check_params(params, **kwargs)


def weights(name: str, logits, n=None, **params) -> np.ndarray:
    """Reference weights of the map ``name`` for ``logits (..., N)``: see :meth:`Variant.weights`."""
    return get_variant(name).weights(logits, n, **params)


# ----------------------------------------------------------------------------------------------------------------------
# Output-side normalizations


def ipr_norm(o, w, v, eps: float = 0.0) -> np.ndarray:
    """IPR normalization of an attention output (THEORY 4b): ``(o - (sum_i w_i) vbar) / sqrt(sum_i w_i^2 + eps)``.

    ``o (..., d_v)``, ``w (..., N)``, ``v (..., N, d_v)``; ``vbar`` is the mean of the N values of each example.
    With values independent of the keys, ``eps = 0`` and weights summing to 1, ``o - vbar = sum_i (w_i - 1/N)(v_i -
    mu_v)``, so each output coordinate has variance ``sigma_v^2 (1 - E[1 / (N sum_i w_i^2)])``: exactly
    ``sigma_v^2`` only with the known mean ``mu_v`` in place of ``vbar`` (THEORY 4b). Centring on the example's own
    mean costs a fraction that does not vanish with N for diffuse softmax weights (``-> e^{-beta^2}`` in the annealed
    phase, e.g. 0.37 at beta = 1; notebook 5 measures it).
    """
    o = np.asarray(o, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if v.shape[:-1] != w.shape or o.shape != v.shape[:-2] + v.shape[-1:]:
        raise ValueError(f"ipr_norm: shapes o {o.shape}, w {w.shape}, v {v.shape} do not match (..., d_v), (..., N), "
                         f"(..., N, d_v)")
    eps = check_real("ipr_norm parameter 'eps'", eps, minimum=0.0)
    vbar = v.mean(axis=-2)
    y2 = np.sum(w * w, axis=-1, keepdims=True)
    return (o - w.sum(axis=-1, keepdims=True) * vbar) / np.sqrt(y2 + eps)


@dataclass(frozen=True)
class OutputNormalization:
    """A normalization of the attention output that needs the weights (so it lives next to the weight maps)."""

    name: str
    description: str
    params: tuple[Param, ...]
    reference: Callable = field(repr=False)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def check_params(self, params: dict | None = None, **kwargs) -> dict:
        """All parameters, validated and with defaults filled in; unknown or missing ones raise ``ValueError``
        (the same rules as :meth:`Variant.check_params`)."""
        return _check_param_values(f"attention_output {self.name!r}", self.name, self.params,
                                   {**(params or {}), **kwargs})


OUTPUT_NORMALIZATIONS = Registry("output normalization", kind=OutputNormalization)
OUTPUT_NORMALIZATIONS.add(OutputNormalization(
    "ipr_norm", "(o - sum(w) vbar) / sqrt(sum w^2 + eps)",
    (Param("eps", "real", default=0.0, minimum=0.0, help="added to sum w^2 under the square root"),), ipr_norm,
))
get_output_normalization = OUTPUT_NORMALIZATIONS.find
"""The output normalization named ``name``; ValueError naming the parameter for an unknown name."""
