"""Exact reference values for plain softmax attention on Gaussian keys (wrappers over :mod:`varsim.theory`).

They translate the sampling options of :func:`varsim.sim.measure_variance` (``d_k``, ``query``, ``query_norm``,
``value_scale``) and the attention's temperature ``tau`` into the logit scale ``beta = tau |q| / sqrt(d_k)`` of the
theory. Valid for Gaussian keys (``key_dist="gaussian"``) and values independent of the keys, for any value law:
``Var(o_j) = value_scale^2 E[sum w^2]`` (THEORY.md 1.1).
"""

from __future__ import annotations

import math

from varsim._common.validate import check_choice, check_int, check_real

__all__ = ["softmax_beta", "softmax_ipr", "softmax_variance"]


def softmax_beta(*, d_k: int, tau: float = 1.0, query_norm: float | None = None) -> float:
    """``beta = tau |q| / sqrt(d_k)`` for a fixed query of norm ``query_norm`` (default ``sqrt(d_k)``, so
    ``beta = tau``)."""
    d_k = check_int("d_k", d_k, minimum=1)
    tau = check_real("tau", tau, minimum=0.0)
    norm = math.sqrt(d_k) if query_norm is None else check_real("query_norm", query_norm, minimum=0.0)
    return tau * norm / math.sqrt(d_k)


def softmax_ipr(n, *, d_k: int, tau: float = 1.0, query: str = "fixed", query_norm: float | None = None):
    """Exact ``E[sum_i w_i^2]`` of ``w = softmax(tau q.K^T / sqrt(d_k))`` over ``n`` Gaussian keys.

    ``query="fixed"``: :func:`varsim.theory.expected_ipr` at :func:`softmax_beta`; ``query="random"``
    (``q ~ N(0, I)`` per sequence, ``query_norm`` must be None): :func:`varsim.theory.random_query_ipr` (~1 s).
    ``n`` is a length or an array of lengths; the result has its shape.
    """
    from varsim.theory import expected_ipr, random_query_ipr

    query = check_choice("query", query, ("fixed", "random"))
    if query == "random":
        if query_norm is not None:
            raise ValueError("query_norm applies to query='fixed' only")
        return random_query_ipr(n, check_int("d_k", d_k, minimum=1), check_real("tau", tau, minimum=0.0))
    return expected_ipr(n, softmax_beta(d_k=d_k, tau=tau, query_norm=query_norm))


def softmax_variance(n, *, d_k: int, tau: float = 1.0, query: str = "fixed", query_norm: float | None = None,
                     value_scale: float = 1.0):
    """Exact ``Var(o_j) = value_scale^2 E[sum w^2]`` (same arguments as :func:`softmax_ipr`)."""
    scale = check_real("value_scale", value_scale, minimum=0.0, strict_min=True)
    return scale**2 * softmax_ipr(n, d_k=d_k, tau=tau, query=query, query_norm=query_norm)
