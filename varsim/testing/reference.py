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
    """The logit scale ``beta = tau |q| / sqrt(d_k)`` of softmax attention with a fixed query.

    Parameters
    ----------
    d_k : int
        Key dimension.
    tau : float
        Temperature multiplying the logits.
    query_norm : float, optional
        ``|q|`` (default ``sqrt(d_k)``, so ``beta = tau``).

    Returns
    -------
    float
        ``beta``.

    Examples
    --------
    >>> from varsim.testing import softmax_beta
    >>> softmax_beta(d_k=16, tau=0.5, query_norm=8.0)
    1.0
    """
    d_k = check_int("d_k", d_k, minimum=1)
    tau = check_real("tau", tau, minimum=0.0)
    norm = math.sqrt(d_k) if query_norm is None else check_real("query_norm", query_norm, minimum=0.0)
    return tau * norm / math.sqrt(d_k)


def softmax_ipr(n, *, d_k: int, tau: float = 1.0, query: str = "fixed", query_norm: float | None = None):
    """Exact ``E[sum_i w_i^2]`` of ``w = softmax(tau q.K^T / sqrt(d_k))`` over ``n`` Gaussian keys.

    Parameters
    ----------
    n : int or array_like of int
        Sequence length(s).
    d_k : int
        Key dimension.
    tau : float
        Temperature multiplying the logits.
    query : {"fixed", "random"}
        ``"fixed"``: a query of norm ``query_norm``, :func:`varsim.theory.expected_ipr` at :func:`softmax_beta`;
        ``"random"``: ``q ~ N(0, I)`` per sequence, :func:`varsim.theory.random_query_ipr` (about 1 s).
    query_norm : float, optional
        ``|q|`` of a fixed query (default ``sqrt(d_k)``); must be None for a random query.

    Returns
    -------
    float or numpy.ndarray
        ``E[sum w^2]``, shaped like ``n``.

    See Also
    --------
    softmax_variance : the output variance, ``value_scale^2`` times this.
    varsim.testing.assert_ipr_matches : checks an attention against it.

    Examples
    --------
    >>> from varsim.testing import softmax_ipr
    >>> [round(float(x), 4) for x in softmax_ipr([16, 256], d_k=16)]
    [0.1325, 0.0103]
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
    """Exact output variance ``Var(o_j) = value_scale^2 E[sum w^2]`` of softmax attention over Gaussian keys.

    Parameters
    ----------
    n, d_k, tau, query, query_norm
        As for :func:`softmax_ipr`.
    value_scale : float
        Standard deviation of the values (any value law independent of the keys).

    Returns
    -------
    float or numpy.ndarray
        ``Var(o_j)``, shaped like ``n``.

    See Also
    --------
    varsim.testing.assert_variance_matches : checks an attention against it.

    Examples
    --------
    >>> from varsim.testing import softmax_variance
    >>> round(float(softmax_variance(64, d_k=16, value_scale=2.0)), 4)
    0.1552
    """
    scale = check_real("value_scale", value_scale, minimum=0.0, strict_min=True)
    return scale**2 * softmax_ipr(n, d_k=d_k, tau=tau, query=query, query_norm=query_norm)
