"""How far a correct attention backward of a given precision may be from the exact gradients: the error model of
:func:`varsim.testing.check_gradients`.

The model extends the forward's (:mod:`varsim.testing.precision`) through the backward of
:mod:`varsim.testing.grad_reference`, to first order in the rounding errors, treating rounding errors as independent
random variables of standard deviation ``u |x|`` (``u`` the unit roundoff of the precision ``x`` is rounded to), so
that they add as a root-sum-square, except where one error is shared by a whole row (the log-sum-exp, ``D``): those
add coherently. With ``u`` the unit roundoff of the kernel's dtype, ``u_a`` that of its accumulation (float32 for
float16/bfloat16, the dtype itself for float32/float64), ``a_ij = scale sum_d |q_id k_jd|``, ``G_ij = dP_ij - D_i``
and ``g_ij = 1 - tanh^2(s_ij / cap)`` (1 without softcap; computed from a rounded tanh, ``g`` has the absolute
error ``2 u_a tanh^2``, which cancellation makes large where the cap saturates), a fused (flash-style) kernel makes
these errors::

    logit s_ij                    var: sigma_ij^2 = (u_a (sqrt(d_k) + 1) a_ij)^2         (as the forward)
    log-sum-exp z_i (one per row) var: c_i = N u_a^2 + (u_a max_j a_ij)^2                  (relative on every P_ij)
    O (the forward's, rounded)    var: (E(o) / 3)^2, E(o) the forward model's error scale
    dP_ij = dO_i . V_j            var: d_v u_a^2 sum_m (dO_im V_jm)^2   (times the dropout scale^2)
    D_i = dO_i . O_i  (one/row)   var: v_D,i = sum_m dO_im^2 var(O_im) + d_v u_a^2 sum_m (dO_im O_im)^2
    dS_ij = g P (dP - D), rounded to the dtype before the products with K and q:
        independent part          var: v_ij = g^2 P^2 (sigma_ij^2 G_ij^2 + var dP_ij) + (u dS_ij)^2
                                           + (2 u_a tanh^2 P G_ij)^2 + t^2
    dq_ik = scale sum_j dS_ij K_jk
        var = scale^2 [sum_j v_ij K_jk^2 + N u_a^2 sum_j (dS_ij K_jk)^2]
              + c_i dq_ik^2 + v_D,i (scale sum_j g P_ij K_jk)^2         (the row's shared errors, coherent)
    dK_jk = scale sum_{group heads, i} dS_ij q_ik
        var = scale^2 sum_i [v_ij + (c_i G_ij^2 + v_D,i) g^2 P_ij^2 + L u_a^2 dS_ij^2] q_ik^2
              + r u_a^2 sum_{group heads} dK_jk^2                       (rows are independent here)
    dV_jm = sum_{group heads, i} Pd_ij dO_im, P rounded to the dtype before the product
        var = sum_i Pd_ij^2 dO_im^2 (sigma_ij^2 + c_i + u^2 + L u_a^2)
    dsink_h = -sum_{b, i} P_sink D
        var = sum P_sink^2 (c_i D_i^2 + v_D,i) + B L u_a^2 sum (P_sink D)^2
    dbias_hij = sum_b dS_bhij  (with a bias, the logits' error gains (u_a s_ij)^2 from the addition)
        var = sum_b [v_ij + (c_i G_ij^2 + v_D,i) g^2 P_ij^2] + B u_a^2 sum_b dS_ij^2

and each output is rounded to the dtype. The error scale of a gradient ``x`` is ``E(x) = 3 sd(x) + u |x|`` plus
``t scale sum |G K|`` over the entries whose ``P < 2t`` (``t`` the smallest number the kernel keeps: subnormals of the
dtype, or the smallest normal of the accumulation when it flushes subnormals), since such weights may vanish; the
check allows ``tol_factor * E`` (default 4, like the forward). ``profile="eager"`` models autograd through unfused
operations in the dtype (Hugging Face's eager attention): the logits, ``P`` and ``dP`` are rounded to the dtype too,
adding ``(u c_ij)^2`` to ``sigma_ij^2``, ``(u dP_ij)^2`` to ``var dP_ij`` and ``u^2`` to every relative error of
``P``. ``tests/test_testing_backward.py`` checks the model both ways: correct emulated kernels stay well inside it in
every dtype, and it is not loose (their worst error is a sizeable share of it).
"""

from __future__ import annotations

import math

import numpy as np

from .grad_reference import sum_groups
from .precision import MIN_NORMAL, TOLERANCES, error_scale, tiny, unit_roundoff

__all__ = ["gradient_error_scale", "GRAD_PROFILES"]

GRAD_PROFILES = ("fused", "eager")
"""The precision profiles of the backward model: ``"fused"`` (flash-style, accumulation in float32 at 16 bits, P and
dS rounded to the dtype before their products) and ``"eager"`` (unfused operations, every intermediate in the
dtype)."""


def _relative_terms(ref, q, dtype, profile):
    """The logits' variance sigma^2 (the independent relative error of each P) and the rows' shared one c."""
    u, ua = unit_roundoff(dtype), unit_roundoff(TOLERANCES["calibrated"](dtype))
    a = ref["scale"] * np.matmul(np.abs(q), np.swapaxes(np.abs(ref["Kh"]), -1, -2))
    sig2 = (ua * (math.sqrt(q.shape[-1]) + 1.0) * a) ** 2
    if ref.get("bias") is not None:  # the bias added in the accumulation precision
        sig2 = sig2 + (ua * np.abs(ref["s"])) ** 2
    if profile == "eager":  # logits and P rounded to the dtype
        sig2 = sig2 + (u * np.abs(ref["s"])) ** 2 + u * u
    amax = np.where(ref["mask"], a, 0.0).max(axis=-1, keepdims=True)
    common = ref["Kh"].shape[-2] * ua**2 + (ua * amax) ** 2
    return sig2, common


def _output_error(q, ref, dtype):
    """The forward output's error scale E(o) from the forward model, with the dropout-scaled weights."""
    tau = ref["scale"] * math.sqrt(q.shape[-1])
    e_o, _ = error_scale(q, ref["Kh"], ref["Vh"], ref["Pd"], ref["O"], tau=tau, dtype=dtype, model="calibrated")
    return np.broadcast_to(e_o, ref["O"].shape)


def gradient_error_scale(ref: dict, q, dO, *, dtype: str, profile: str = "fused") -> dict:
    """The error scale ``E`` of a correct backward of ``dtype``, per element of each output.

    Parameters
    ----------
    ref : dict
        :func:`~varsim.testing.grad_reference.attention_backward_reference` on the inputs (already rounded to
        ``dtype``).
    q, dO : numpy.ndarray
        The queries ``(B, H, L, d_k)`` and output gradient ``(B, H, L, d_v)``.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The kernel's dtype.
    profile : {"fused", "eager"}
        See :data:`GRAD_PROFILES`.

    Returns
    -------
    dict
        ``o``, ``dq``, ``dk``, ``dv`` (shaped like the reference's), ``dsink`` (or None) and, with a bias,
        ``dbias``.

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.testing.grad_reference import attention_backward_reference
    >>> from varsim.testing.grad_precision import gradient_error_scale
    >>> rng = np.random.default_rng(0)
    >>> q, K, V, dO = (rng.normal(size=s) for s in [(1, 1, 3, 4), (1, 1, 5, 4), (1, 1, 5, 2), (1, 1, 3, 2)])
    >>> ref = attention_backward_reference(q, K, V, dO)
    >>> e16, e32 = (gradient_error_scale(ref, q, dO, dtype=d)["dq"].max() for d in ("bfloat16", "float32"))
    >>> bool(e16 > 1000 * e32)
    True
    """
    u, ua = unit_roundoff(dtype), unit_roundoff(TOLERANCES["calibrated"](dtype))
    t = max(tiny(dtype), MIN_NORMAL[TOLERANCES["calibrated"](dtype)])
    sig2, common = _relative_terms(ref, q, dtype, profile)
    e_o = _output_error(q, ref, dtype)
    var_o = (e_o / 3.0) ** 2
    P, Pd, Kh, Vh, scale, G_kv = ref["P"], ref["Pd"], ref["Kh"], ref["Vh"], ref["scale"], ref["dk"].shape[1]
    B, H, L, N = P.shape
    gp = np.ones_like(P) if ref["th"] is None else 1.0 - ref["th"] ** 2
    Gm = ref["dP"] - ref["D"][..., None]
    var_dP = Vh.shape[-1] * ua**2 * np.matmul(dO**2, np.swapaxes(Vh**2, -1, -2)) * ref["drop"] ** 2
    if profile == "eager":
        var_dP = var_dP + (u * ref["dP"]) ** 2
    var_D = (dO**2 * var_o).sum(axis=-1) + dO.shape[-1] * ua**2 * ((dO * ref["O"]) ** 2).sum(axis=-1)
    dS = ref["dS"]
    m = ref["mask"]
    v_ind = gp**2 * P**2 * (sig2 * Gm**2 + var_dP) + (u * dS) ** 2 + t * t * m  # dS rounded (or flushed)
    if ref["th"] is not None:  # 1 - tanh^2 from a rounded tanh: absolute error 2 u_a tanh^2 (cancellation)
        v_ind = v_ind + (P * Gm * 2.0 * (u if profile == "eager" else ua) * ref["th"] ** 2) ** 2
    small = (P < 2.0 * t) & m
    floor = t * scale * np.abs(Gm) * small
    K2, q2 = Kh**2, q**2
    var_dq = scale**2 * (np.matmul(v_ind, K2) + N * ua**2 * np.matmul(dS**2, K2)) + common * ref["dq"] ** 2 \
        + var_D[..., None] * (scale * np.matmul(gp * P, Kh)) ** 2
    e_dq = 3.0 * np.sqrt(var_dq) + u * np.abs(ref["dq"]) + np.matmul(floor, np.abs(Kh))
    rows = v_ind + (common * Gm**2 + var_D[..., None]) * (gp * P) ** 2 + L * ua**2 * dS**2
    var_dk = sum_groups(scale**2 * np.matmul(np.swapaxes(rows, -1, -2), q2), G_kv)
    var_dk = var_dk + (H // G_kv) * ua**2 * sum_groups((scale * np.matmul(np.swapaxes(dS, -1, -2), q)) ** 2, G_kv)
    e_dk = 3.0 * np.sqrt(var_dk) + u * np.abs(ref["dk"]) + sum_groups(np.matmul(np.swapaxes(floor, -1, -2),
                                                                                np.abs(q)), G_kv)
    rel = sig2 + common + u * u + L * ua**2
    var_dv = sum_groups(np.matmul(np.swapaxes(Pd**2 * rel + t * t * m, -1, -2), dO**2), G_kv)
    e_dv = 3.0 * np.sqrt(var_dv) + u * np.abs(ref["dv"]) + t * sum_groups(
        np.matmul(np.swapaxes(small.astype(float), -1, -2), np.abs(dO)), G_kv)
    # every output is rounded to the dtype: at most half its smallest subnormal below the normal range
    out = dict(o=e_o, dq=e_dq + tiny(dtype), dk=e_dk + tiny(dtype), dv=e_dv + tiny(dtype), dsink=None)
    if ref["dsink"] is not None:
        Ps, D = ref["P_sink"], ref["D"]
        var_s = (Ps**2 * (common[..., 0] * D**2 + var_D)).sum(axis=(0, 2)) + B * L * ua**2 * ((Ps * D) ** 2).sum(
            axis=(0, 2))
        out["dsink"] = 3.0 * np.sqrt(var_s) + u * np.abs(ref["dsink"])
    if ref.get("dbias") is not None:  # dS summed over the batch
        var_b = (rows - L * ua**2 * dS**2).sum(axis=0) + B * ua**2 * (dS**2).sum(axis=0)
        out["dbias"] = 3.0 * np.sqrt(var_b) + u * np.abs(ref["dbias"]) + tiny(dtype)
    return out
