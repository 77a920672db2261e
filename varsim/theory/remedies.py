"""Remedies for the vanishing variance (THEORY.md 4b, 4c): standardisation and SSMax.

* Fixed statistics calibrated at ``N0`` only rescale: ``Var = E[Y2](N) / E[Y2](N0)``.
* Per-sample IPR normalisation ``(o - mu_v)/sqrt(Y2)`` has variance ``sigma_v^2`` exactly, for every N.
* SSMax (temperature ``s ln N``) on Gaussian logits of scale ``beta0``: ``beta = s beta0 ln N``, so
  ``E[Y2] -> 1`` for every ``s > 0`` (non-monotone in N; no critical ``s``).
"""

from __future__ import annotations


import numpy as np

from varsim._common.validate import check_real
from varsim.theory._args import real_array, scalar_or_array
from varsim.theory.ipr import N_MAX, expected_ipr

__all__ = ["ipr_normalized_variance", "fixed_standardized_variance", "ssmax_beta", "ssmax_ipr"]


def ipr_normalized_variance(sigma_v=1.0) -> float:
    """``Var((o_c - mu_c)/sqrt(Y2)) = sigma_v^2`` exactly (any N, beta, value law; values independent of keys)."""
    sigma_v = check_real("sigma_v", sigma_v, minimum=0.0)
    return sigma_v * sigma_v


def fixed_standardized_variance(n, n0, beta):
    """Variance of ``(o_c - mu_c)/s_c`` with ``s_c`` calibrated at length ``n0``: ``E[Y2](n)/E[Y2](n0)``."""
    n0 = check_real("n0", n0, minimum=1.0, maximum=N_MAX)
    return scalar_or_array(n, np.asarray(expected_ipr(n, beta)) / expected_ipr(n0, beta))


def ssmax_beta(n, s, beta0):
    """Effective logit scale under SSMax, ``beta = s * beta0 * ln N`` (``n >= 1``, ``s``, ``beta0`` finite)."""
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    s = check_real("s", s)
    beta0 = check_real("beta0", beta0)
    return scalar_or_array(n, np.abs(s * beta0) * np.log(n_arr))


def ssmax_ipr(n, s, beta0):
    """Exact ``E[sum w^2]`` under SSMax: :func:`expected_ipr` at ``beta = s beta0 ln N`` (one quadrature per N)."""
    betas = np.asarray(ssmax_beta(n, s, beta0), dtype=np.float64)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.float64), betas.shape)
    out = np.array([expected_ipr(float(v), float(b)) for v, b in zip(n_arr.ravel(), betas.ravel())])
    return scalar_or_array(n, out.reshape(betas.shape))
