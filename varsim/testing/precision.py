"""How far a correct attention kernel of a given precision may be from the exact result: the tolerance models of the
same-draw checks, and rounding to float16/bfloat16 without those libraries.

The same-draw check compares your output with a float64 reference computed on the very inputs your function sees
(rounded to its dtype), so the only legitimate differences are the rounding errors your kernel makes *after* the
inputs. :data:`TOLERANCES` models them per output element. For the calibrated models, with ``w`` the exact weights
of the row, ``o`` the exact output, ``a_i = scale sum_d |q_d k_id|`` the absolute logit, ``u`` the unit roundoff of
the kernel's dtype (float16 ``2^-11``, bfloat16 ``2^-8``) and ``u_a`` that of its accumulation::

    sigma_i^2 (logit i)   = (u_a (sqrt(d_k) + 1) a_i)^2
    sd(o_j)^2             = sum_i w_i^2 [sigma_i^2 (v_ij - o_j)^2 + (u^2 + N u_a^2) v_ij^2]
                            + (N u_a^2 + (u_a max_i a_i)^2) o_j^2
    E(o_j)                = 3 sd(o_j) + u |o_j| + t sum_{i: w_i < 2t} |v_ij|

(``t`` is the smallest positive number of the dtype, or the smallest normal number of the accumulation when that
is larger, since kernels may flush subnormals to zero: weights below it may vanish) and ``E(w_i)`` likewise with
``w_i`` in place of the values. The tolerance is ``tol_factor * E``. The terms are: logits computed in the
accumulation precision (error of a dot product of ``d_k`` terms); probabilities rounded to the dtype before the
product with ``V`` (what flash and memory-efficient kernels do); sums over ``N`` keys in the accumulation precision;
a log-sum-exp in the accumulation precision; the output rounded to the dtype. Random rounding errors add up as a
root-sum-square, which is why this is hundreds of times tighter than a worst-case bound at long lengths.

* ``"calibrated"`` (default): accumulation in float32 for float16/bfloat16 (as PyTorch's SDPA backends, flash and
  memory-efficient kernels do), in the dtype itself for float32 and float64.
* ``"low_precision"``: accumulation in the dtype (logits, sums and log-sum-exp rounded to float16/bfloat16): the
  error of a kernel that accumulates in low precision. Under the default model, a case that fails ``"calibrated"``
  but passes this one gets the verdict *low precision* (neither a pass nor a plain mismatch).
* ``"worst_case"``: the earlier bound ``eps (1 + Lmax + sqrt(N)) max_i |V_i|`` (``eps`` the machine epsilon,
  ``Lmax = max_i a_i``), far looser at low precision.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from varsim._common.registry import Registry

__all__ = ["TOLERANCES", "DEFAULT_TOL_FACTOR", "round_to", "unit_roundoff", "tiny", "more_precise", "error_scale",
           "FLOAT_DTYPES", "PRECISION_ORDER", "MIN_NORMAL", "Profile", "PROFILES", "DEFAULT_PROFILE", "profile",
           "emulated_logits"]

FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")
# fewer significand bits first: the lower precision of two dtypes is the one with the larger index
PRECISION_ORDER = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3}
_MANTISSA = {"float64": 52, "float32": 23, "float16": 10, "bfloat16": 7, "tfloat32": 10}
_TINY = {"float64": 5e-324, "float32": 1.4e-45, "float16": 2.0**-24, "bfloat16": 9.2e-41}
#: the smallest normal number of each dtype (below it, a value loses significand bits)
MIN_NORMAL = {"float64": 2.0**-1022, "float32": 2.0**-126, "float16": 2.0**-14, "bfloat16": 2.0**-126}

TOLERANCES = {
    "calibrated": lambda dtype: "float64" if dtype == "float64" else "float32",
    "low_precision": lambda dtype: dtype,
    "worst_case": None,
}
"""The tolerance models of the same-draw checks: model name -> the precision a kernel of a given dtype accumulates
in (``dtype -> dtype name``), or None for the worst-case bound. See the module docstring for each model."""
DEFAULT_TOL_FACTOR = {"calibrated": 4.0, "low_precision": 4.0, "worst_case": 16.0}
"""The default multiple of the error model allowed, per model (the worst-case bound keeps its historical 16)."""


def more_precise(a: str, b: str) -> str:
    """Deprecated since 0.2.0 (removed in 0.3.0): the more precise of two dtype names; compare
    ``PRECISION_ORDER[a]`` and ``PRECISION_ORDER[b]`` instead (lower is more precise)."""
    import warnings

    warnings.warn("varsim.testing.precision.more_precise is deprecated since 0.2.0: compare PRECISION_ORDER[a] "
                  "and PRECISION_ORDER[b] (lower is more precise)", DeprecationWarning, stacklevel=2)
    return a if PRECISION_ORDER[a] <= PRECISION_ORDER[b] else b


@dataclasses.dataclass(frozen=True)
class Profile:
    """How a correct kernel computes, as far as its rounding errors go: one entry of :data:`PROFILES`.

    Each field adds the rounding of one stage to the model of :func:`error_scale` (module docstring):

    Parameters
    ----------
    name : str
        The registry key (``profile=`` of the checks).
    description : str
        What kernels compute this way, in one line.
    accumulate_in_dtype : bool
        Logits, sums and log-sum-exp in the dtype (``u_a = u``) rather than float32 (float64 at float64).
    logit_roundings : int
        How often the logit *value* ``s_i`` is rounded to the dtype (``sigma_i^2 += k (u s_i)^2``): 2 for
        Hugging Face eager attention (the product ``q.k`` in the dtype, then the scale in the dtype).
    operand_roundings : int
        How many operands of ``q.k`` are rounded to the dtype after a transform (``sigma_i^2 += k (u r_i)^2`` with
        ``r_i = scale sqrt(sum_d q_d^2 k_id^2)``): 1 for ``q`` pre-scaled in the dtype, 2 for rotary positions
        applied to ``q`` and ``k`` in the dtype.
    bias_in_dtype : bool
        A bias (ALiBi) computed in the dtype: ``sigma_i^2 += (u extra_i)^2``.
    product_unit : callable, optional
        ``dtype -> unit roundoff`` of the operands of both products when lower than the dtype's (TF32 tensor cores
        at float32: ``2^-11``): ``sigma_i^2 += 2 (u_p r_i)^2`` and ``2 u_p^2 w_i^2 v_ij^2`` in the output.
    emulate : callable, optional
        ``(q, K, scale, dtype) -> (s, delta)``: the logits such a kernel computes, emulated exactly (its roundings to
        the dtype applied to the float64 products) and, per logit, how far another rounding may put it (``delta``,
        nonzero only where the float32 products or the scale lie that close to a rounding boundary of the dtype).
        The default check accepts a kernel that matches these logits within the default model
        (:func:`emulated_logits`); a profile without it is only named.
    """

    name: str
    description: str
    accumulate_in_dtype: bool = False
    logit_roundings: int = 0
    operand_roundings: int = 0
    bias_in_dtype: bool = False
    product_unit: Callable | None = None
    emulate: Callable | None = None

    def accumulation(self, dtype: str) -> str:
        """The dtype this profile accumulates in at ``dtype``."""
        return dtype if self.accumulate_in_dtype else TOLERANCES["calibrated"](dtype)

    def applies(self, dtype: str) -> bool:
        """Whether the profile differs from the default at ``dtype`` (TF32 only at float32; nothing at float64)."""
        if dtype == "float64":
            return False
        if self.product_unit is not None:
            return self.product_unit(dtype) > unit_roundoff(dtype)
        return True


PROFILES = Registry("profile", kind=Profile)
"""The precision profiles: name -> :class:`Profile`. The checks take ``profile=`` (default ``"sdpa"``); a kernel that
fails the default but passes another profile gets a verdict naming it."""
PROFILES.add(Profile("sdpa", "PyTorch SDPA, flash and memory-efficient kernels: products and softmax accumulated in "
                             "float32, probabilities rounded to the dtype before the product with V"))
PROFILES.add(Profile("prescaled", "q multiplied by the scale in the dtype before the product (q * scale, then q.k)",
                     operand_roundings=1))
PROFILES.add(Profile("positions", "rotary positions applied to q and k, and an ALiBi bias computed, in the dtype",
                     operand_roundings=2, bias_in_dtype=True))
PROFILES.add(Profile("tf32", "float32 inputs multiplied on TF32 tensor cores (10-bit significands), accumulated in "
                             "float32", product_unit=lambda dtype: max(unit_roundoff(dtype), 2.0**-11)))
PROFILES.add(Profile("eager", "Hugging Face eager attention: q.k and the scale in the dtype, softmax in float32, "
                              "probabilities cast to the dtype", logit_roundings=2, bias_in_dtype=True,
                     emulate=lambda q, K, scale, dtype: emulated_logits(q, K, scale, dtype)))
PROFILES.add(Profile("low_precision", "products, sums and the softmax accumulated in the dtype itself (sums "
                                      "pairwise)", accumulate_in_dtype=True, logit_roundings=2, bias_in_dtype=True))
DEFAULT_PROFILE = "sdpa"
"""The profile of the checks unless told otherwise."""


def profile(name) -> Profile:
    """The profile ``name`` of :data:`PROFILES` (a :class:`Profile` is returned as it is); an unknown name is a
    ValueError naming ``profile`` and listing the known ones."""
    return name if isinstance(name, Profile) else PROFILES.find(name)


def emulated_logits(q, K, scale: float, dtype: str):
    """The logits of a Hugging Face-style eager kernel, ``rd(rd(q.k) * scale)`` (``rd``: rounding to ``dtype``), from
    the float64 products, and how far the kernel's own may lie from them.

    The kernel sums the products in float32 (exact products of float16 or bfloat16 numbers), rounds to the dtype,
    multiplies by the scale in float32 and rounds again. Its float32 sum lies within ``(d_k + 1) u_32 sum_d |q_d
    k_d|`` of the float64 one (any summation order) and its scaled value within ``3 u_32`` of the exact product, so
    its logit is one of the dtype's numbers that those intervals round to; ``delta`` is the farthest of them from
    ``s`` (zero for most logits: only a product that close to a rounding boundary of the dtype can round the other
    way).

    Parameters
    ----------
    q, K : numpy.ndarray
        ``q (..., L, d_k)``, ``K (..., N, d_k)`` in float64, holding values of ``dtype``.
    scale : float
        ``tau / sqrt(d_k)``.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The kernel's dtype.

    Returns
    -------
    s, delta : numpy.ndarray
        ``(..., L, N)``: the emulated logits and the largest distance of another admissible rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing.precision import emulated_logits
    >>> s, delta = emulated_logits(np.array([[1.0, 2.0]]), np.array([[0.5, 0.25]]), 0.7, "bfloat16")
    >>> s.tolist(), delta.tolist()
    ([[0.69921875]], [[0.0]])
    """
    acc = TOLERANCES["calibrated"](dtype)
    x = np.matmul(q, np.swapaxes(K, -1, -2))
    m1 = (q.shape[-1] + 1) * unit_roundoff(acc) * np.matmul(np.abs(q), np.swapaxes(np.abs(K), -1, -2))
    with np.errstate(over="ignore", invalid="ignore"):
        s = round_to(round_to(x, dtype) * scale, dtype)
        ends = [round_to(x - m1, dtype) * scale, round_to(x + m1, dtype) * scale]
        lo, hi = np.minimum(*ends), np.maximum(*ends)
        slack = 3.0 * unit_roundoff(acc)
        lo, hi = round_to(lo - slack * np.abs(lo), dtype), round_to(hi + slack * np.abs(hi), dtype)
        delta = np.nan_to_num(np.maximum(s - lo, hi - s), nan=0.0, posinf=0.0)
    return s, delta


def unit_roundoff(dtype: str) -> float:
    """The unit roundoff of a floating-point dtype: half its machine epsilon.

    Parameters
    ----------
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The dtype's name.

    Returns
    -------
    float
        ``2^-(p+1)`` for a dtype with ``p`` stored significand bits.

    See Also
    --------
    round_to : rounds to these dtypes.

    Examples
    --------
    >>> from varsim.testing.precision import unit_roundoff
    >>> unit_roundoff("float16"), unit_roundoff("bfloat16")
    (0.00048828125, 0.00390625)
    """
    return 2.0 ** -(_MANTISSA[dtype] + 1)


def tiny(dtype: str) -> float:
    """The smallest positive (subnormal) number of the dtype."""
    return _TINY[dtype]


def round_to(x, dtype: str) -> np.ndarray:
    """Round to a floating-point dtype (to nearest, ties to even) and return float64.

    bfloat16 needs no extra library: it is rounded from float32 by its bit pattern.

    Parameters
    ----------
    x : array_like
        The values.
    dtype : {"float64", "float32", "float16", "bfloat16", "tfloat32"}
        The dtype to round to (``"tfloat32"``: float32 with a 10-bit significand, what TF32 tensor cores multiply);
        another name is a ValueError.

    Returns
    -------
    numpy.ndarray
        ``x`` rounded to ``dtype``, as float64 (a copy, also at float64). Values beyond the dtype's range become
        ``inf``, NaN stays NaN.

    See Also
    --------
    unit_roundoff : the relative error of this rounding.

    Examples
    --------
    >>> from varsim.testing.precision import round_to
    >>> round_to([1.0 + 2**-9, 3.14159], "bfloat16").tolist()
    [1.0, 3.140625]
    """
    x = np.asarray(x, dtype=np.float64)
    if dtype == "float64":
        return x.copy()
    if dtype in ("float32", "float16"):
        with np.errstate(over="ignore"):
            return x.astype(dtype).astype(np.float64)
    if dtype not in ("bfloat16", "tfloat32"):
        raise ValueError(f"dtype: expected one of {FLOAT_DTYPES} or 'tfloat32', got {dtype!r}")
    drop = 16 if dtype == "bfloat16" else 13  # bits of float32's significand dropped: bfloat16 keeps 7, TF32 10
    with np.errstate(over="ignore"):
        f = np.ascontiguousarray(x.astype(np.float32))
    bits = f.view(np.uint32)
    half, keep = np.uint32((1 << (drop - 1)) - 1), np.uint32((0xFFFFFFFF >> drop) << drop)
    rounded = (bits + half + ((bits >> np.uint32(drop)) & np.uint32(1))) & keep
    out = rounded.view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


def error_scale(q, K, V, w, o, *, tau: float, dtype: str, model: str, logit_abs=None, logit_extra=None,
                logits=None, profile="sdpa", logit_var=None):
    """The error scale ``E`` of a correct kernel of ``dtype``, per output element and per weight.

    The same-draw checks allow ``tol_factor * E`` (plus ``atol``); the model is described in the module docstring.

    Parameters
    ----------
    q, K, V : numpy.ndarray
        ``q (..., L, d_k)``, ``K (..., N, d_k)``, ``V (..., N, d_v)``, float64 holding values already rounded to
        ``dtype``.
    w, o : numpy.ndarray
        The exact float64 weights ``(..., L, N)`` and output ``(..., L, d_v)`` on these inputs.
    tau : float
        The temperature: the logits are ``tau q.k / sqrt(d_k)``.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The kernel's dtype.
    model : {"calibrated", "low_precision", "worst_case"}
        A key of :data:`TOLERANCES`.
    logit_abs : numpy.ndarray, optional
        ``a_i``, broadcastable to ``(..., L, N)``: the absolute size of the products behind each logit (default
        ``tau sum_d |q_d k_id| / sqrt(d_k)`` from ``q`` and ``K``). A reference that transforms its inputs (rotary
        positions, grouped heads, a temperature per head) passes the size of *its* products.
    logit_extra : numpy.ndarray, optional
        The absolute size of what is added to a logit after the products (an ALiBi or other bias), broadcastable to
        ``(..., L, N)``: rounded once more in the accumulation precision, ``sigma_i^2 += (u_a extra_i)^2``.
    logits : numpy.ndarray, optional
        The float64 logits ``s_i`` (bias included), for profiles that round their value (default
        ``tau q.k / sqrt(d_k)``, plus ``logit_extra``, when ``logit_abs`` is not given, else the bound
        ``a_i + extra_i``).
    profile : str or Profile
        A key of :data:`PROFILES` (default ``"sdpa"``): the stages a correct kernel rounds (``model="low_precision"``
        is ``profile="low_precision"``).
    logit_var : numpy.ndarray, optional
        Added to ``sigma_i^2``, broadcastable to ``(..., L, N)``: the squared distance of another admissible
        rounding of each logit (``delta^2`` of :func:`emulated_logits`).

    Returns
    -------
    e_o : numpy.ndarray
        ``E(o)``, broadcastable to ``(..., L, d_v)``.
    e_w : numpy.ndarray
        ``E(w)``, broadcastable to ``(..., L, N)``.

    See Also
    --------
    varsim.testing.check_against_reference : the check that uses these tolerances.
    """
    d_k, n = q.shape[-1], K.shape[-2]
    scale = tau / math.sqrt(d_k)
    extra = 0.0 if logit_extra is None else np.asarray(logit_extra, dtype=np.float64)
    prof = _profile_of(profile, model)
    if logit_abs is None:
        a = scale * np.matmul(np.abs(q), np.swapaxes(np.abs(K), -1, -2))  # (..., L, N)
        if prof.operand_roundings or prof.product_unit is not None:
            r = scale * np.sqrt(np.matmul(q * q, np.swapaxes(K * K, -1, -2)))
        if prof.logit_roundings and logits is None:
            logits = scale * np.matmul(q, np.swapaxes(K, -1, -2)) + extra
    else:
        a = r = np.asarray(logit_abs, dtype=np.float64)
        logits = a + extra if logits is None else logits
    if TOLERANCES[model] is None:
        eps = 2.0 * unit_roundoff(dtype)
        growth = eps * (1.0 + a.max(axis=-1) + math.sqrt(n))  # (..., L)
        vmax = np.abs(V).max(axis=(-1, -2))[..., None]
        return (growth * vmax)[..., None], growth[..., None]
    # weights below t may vanish: subnormals of the dtype, or of the accumulation when it flushes them (XLA, GPUs)
    acc = prof.accumulation(dtype)
    u, ua, t = unit_roundoff(dtype), unit_roundoff(acc), max(tiny(dtype), MIN_NORMAL[acc])
    sig2, u_out = _logit_variance(prof, dtype, d_k, a, r if prof.operand_roundings or prof.product_unit else None,
                                  logits, extra, u, ua)
    if logit_var is not None:
        sig2 = sig2 + logit_var
    w2 = w * w
    c = w2 * sig2
    V2 = V * V
    logit = np.matmul(c, V2) - 2.0 * o * np.matmul(c, V) + o * o * c.sum(axis=-1, keepdims=True)
    # masked keys take no part in the log-sum-exp
    amax = np.where(w > 0.0, a + extra, 0.0).max(axis=-1, keepdims=True, initial=0.0)
    # sums over the keys: float32 accumulation adds N u_a^2; a kernel summing in its dtype sums pairwise
    n_sum = math.ceil(math.log2(n)) + 1 if prof.accumulate_in_dtype else n
    common = n_sum * ua**2 + (ua * amax) ** 2  # (..., L, 1): normaliser and log-sum-exp
    var_o = np.maximum(logit, 0.0) + (u_out + n_sum * ua * ua) * np.matmul(w2, V2) + common * o * o
    small = w < 2.0 * t
    e_o = 3.0 * np.sqrt(var_o) + u * np.abs(o) + t * np.matmul(small.astype(np.float64), np.abs(V))
    rel_w = np.sqrt(sig2 + c.sum(axis=-1, keepdims=True) + common + u * u)  # relative: w^2 may underflow
    # a logit error of delta moves a weight by a factor exp(delta): linear while small, exponential beyond (a
    # weight of 1e-17 behind logits of 1e3 rounded in bfloat16 is off by orders of magnitude)
    with np.errstate(over="ignore", invalid="ignore"):
        e_w = np.where(w > 0.0, w * np.expm1(3.0 * rel_w), 0.0) + u * w + t
    return e_o, e_w


def _profile_of(profile_, model: str) -> Profile:
    """The profile of the model: ``model="low_precision"`` is the low-precision profile (its historical name)."""
    prof = profile(profile_)
    return PROFILES.find("low_precision") if model == "low_precision" and prof.name == DEFAULT_PROFILE else prof


def _logit_variance(prof: Profile, dtype: str, d_k: int, a, r, logits, extra, u: float, ua: float):
    """``sigma_i^2`` of the logits under ``prof`` and the per-weight output term ``u_out`` (``u^2``, plus the
    product operands' rounding under TF32)."""
    sig2 = (ua * (math.sqrt(d_k) + 1.0) * a) ** 2 + (ua * extra) ** 2  # (..., L, N)
    u_out = u * u
    if not prof.applies(dtype):
        return sig2, u_out
    if prof.operand_roundings:
        sig2 = sig2 + prof.operand_roundings * (u * r) ** 2
    if prof.bias_in_dtype:
        sig2 = sig2 + (u * extra) ** 2
    if prof.logit_roundings:
        sig2 = sig2 + prof.logit_roundings * (u * np.nan_to_num(np.abs(logits), posinf=0.0)) ** 2
    if prof.product_unit is not None:
        up = prof.product_unit(dtype)
        sig2 = sig2 + 2.0 * (up * r) ** 2
        u_out = u_out + 2.0 * up * up
    return sig2, u_out
