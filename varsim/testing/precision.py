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

import math

import numpy as np

__all__ = ["TOLERANCES", "DEFAULT_TOL_FACTOR", "round_to", "unit_roundoff", "tiny", "error_scale",
           "FLOAT_DTYPES", "PRECISION_ORDER"]

FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")
# fewer significand bits first: the lower precision of two dtypes is the one with the larger index
PRECISION_ORDER = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3}
_MANTISSA = {"float64": 52, "float32": 23, "float16": 10, "bfloat16": 7}
_TINY = {"float64": 5e-324, "float32": 1.4e-45, "float16": 2.0**-24, "bfloat16": 9.2e-41}
_MIN_NORMAL = {"float64": 2.0**-1022, "float32": 2.0**-126, "float16": 2.0**-14, "bfloat16": 2.0**-126}

TOLERANCES = {
    "calibrated": lambda dtype: "float64" if dtype == "float64" else "float32",
    "low_precision": lambda dtype: dtype,
    "worst_case": None,
}
"""The tolerance models of the same-draw checks: model name -> the precision a kernel of a given dtype accumulates
in (``dtype -> dtype name``), or None for the worst-case bound. See the module docstring for each model."""
DEFAULT_TOL_FACTOR = {"calibrated": 4.0, "low_precision": 4.0, "worst_case": 16.0}
"""The default multiple of the error model allowed, per model (the worst-case bound keeps its historical 16)."""


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
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The dtype to round to; another name is a ValueError.

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
    if dtype != "bfloat16":
        raise ValueError(f"dtype: expected one of {FLOAT_DTYPES}, got {dtype!r}")
    with np.errstate(over="ignore"):
        f = np.ascontiguousarray(x.astype(np.float32))
    bits = f.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000))
    out = rounded.view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


def error_scale(q, K, V, w, o, *, tau: float, dtype: str, model: str, logit_abs=None, logit_extra=None):
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
    if logit_abs is None:
        logit_abs = scale * np.matmul(np.abs(q), np.swapaxes(np.abs(K), -1, -2))  # (..., L, N)
    a = np.asarray(logit_abs, dtype=np.float64)
    extra = 0.0 if logit_extra is None else np.asarray(logit_extra, dtype=np.float64)
    acc = TOLERANCES[model]
    if acc is None:
        eps = 2.0 * unit_roundoff(dtype)
        growth = eps * (1.0 + a.max(axis=-1) + math.sqrt(n))  # (..., L)
        vmax = np.abs(V).max(axis=(-1, -2))[..., None]
        return (growth * vmax)[..., None], growth[..., None]
    # weights below t may vanish: subnormals of the dtype, or of the accumulation when it flushes them (XLA, GPUs)
    u, ua, t = unit_roundoff(dtype), unit_roundoff(acc(dtype)), max(tiny(dtype), _MIN_NORMAL[acc(dtype)])
    sig2 = (ua * (math.sqrt(d_k) + 1.0) * a) ** 2 + (ua * extra) ** 2  # (..., L, N)
    w2 = w * w
    c = w2 * sig2
    V2 = V * V
    logit = np.matmul(c, V2) - 2.0 * o * np.matmul(c, V) + o * o * c.sum(axis=-1, keepdims=True)
    # masked keys take no part in the log-sum-exp
    amax = np.where(w > 0.0, a + extra, 0.0).max(axis=-1, keepdims=True, initial=0.0)
    common = n * ua**2 + (ua * amax) ** 2  # (..., L, 1): normaliser and log-sum-exp
    var_o = np.maximum(logit, 0.0) + (u * u + n * ua * ua) * np.matmul(w2, V2) + common * o * o
    small = w < 2.0 * t
    e_o = 3.0 * np.sqrt(var_o) + u * np.abs(o) + t * np.matmul(small.astype(np.float64), np.abs(V))
    rel_w = np.sqrt(sig2 + c.sum(axis=-1, keepdims=True) + common + u * u)  # relative: w^2 may underflow
    e_w = 3.0 * w * rel_w + u * w + t
    return e_o, e_w
