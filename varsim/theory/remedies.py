"""Remedies for the vanishing variance (THEORY.md 4b, 4c): standardisation and SSMax.

* Fixed statistics calibrated at ``N0`` only rescale: ``Var = E[Y2](N) / E[Y2](N0)``.
* Per-sample IPR normalisation ``(o - mu_v)/sqrt(Y2)`` has variance ``sigma_v^2`` exactly, for every N.
* SSMax (temperature ``s ln N``) on Gaussian logits of scale ``beta0``: ``beta = s beta0 ln N``, so
  ``E[Y2] -> 1`` for every ``s > 0`` (non-monotone in N; no critical ``s``).
* The attention variants of ``varsim.variants`` (REMEDIES.md 3): exact ``E[sum w^2]`` for softmax with an
  N-dependent temperature (ssmax, logn, critical) at the effective scale; sigmoid attention's two terms of
  ``Var(o) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)``; the top-k bound; adaptive temperature's switch-off entropy.
  :func:`variant_theory` gives what applies to a variant, by the theory kind its registry entry declares
  (``Variant.theory``): the one place that turns a kind into numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from varsim._common.validate import check_real
from varsim.theory._args import real_array, scalar_or_array
from varsim.theory.ipr import BETA_MAX, N_MAX, expected_ipr

__all__ = [
    "ipr_normalized_variance", "fixed_standardized_variance", "ssmax_beta", "ssmax_ipr", "variant_beta", "variant_ipr",
    "VariantTheory", "variant_theory", "sigmoid_moments", "sigmoid_variance", "topk_ipr_bounds",
    "adaptive_switch_off_entropy",
]


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


# ----------------------------------------------------------------------------------------------------------------------
# Attention variants of varsim.variants (REMEDIES.md 3)


def variant_beta(name: str, n, beta, **params):
    """Effective logit scale ``f(N) beta`` of a softmax with an N-dependent temperature (``softmax``, ``ssmax``,
    ``logn``, ``critical``; ``f`` from :meth:`varsim.variants.Variant.beta_factor`) applied to logits ``beta g``.

    ``ssmax``: ``s beta ln N``; ``logn``: ``max(1, ln N / ln N0) beta``; ``critical``: ``c sqrt(2 ln N) beta / beta0``.
    Other variants raise ``ValueError`` (they are not a softmax at any scale).
    """
    from varsim.variants import get_variant

    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    beta = check_real("beta", beta)
    factor = np.asarray(get_variant(name).beta_factor(n_arr, **params), dtype=np.float64)
    return scalar_or_array(n, factor * abs(beta))


def variant_ipr(name: str, n, beta, **params):
    """Exact ``E[sum w^2]`` of the weight map ``name`` over ``N`` i.i.d. logits ``beta g``, ``g ~ N(0, 1)``.

    Theory kind ``exact_ipr`` (softmax with an N-dependent temperature): :func:`expected_ipr` at
    :func:`variant_beta` (one quadrature per N). ``sigmoid_moments``: ``N E[sigmoid(beta g - ln N)^2]``
    (:func:`sigmoid_moments`). The other kinds (topk's bound, Monte Carlo only) have no closed form: ``ValueError``
    (use the simulator; for topk see :func:`topk_ipr_bounds`, for everything a kind gives :func:`variant_theory`).
    """
    from varsim.variants import get_variant

    spec = get_variant(name)
    if spec.theory == "sigmoid_moments":
        spec.check_params(params)
        return sigmoid_moments(n, beta)[0]
    if spec.theory != "exact_ipr":
        raise ValueError(f"attention {name!r} has no exact E[sum w^2] here (only softmax with an N-dependent "
                         f"temperature and sigmoid do); estimate it with varsim.sim.simulate(attention={name!r})")
    betas = np.asarray(variant_beta(name, n, beta, **params), dtype=np.float64)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.float64), betas.shape)
    out = np.array([expected_ipr(float(v), float(b)) for v, b in zip(n_arr.ravel(), betas.ravel())])
    return scalar_or_array(n, out.reshape(betas.shape))


@dataclass(frozen=True)
class VariantTheory:
    """What exact theory says about a weight map over ``N`` i.i.d. logits ``beta g``, ``g ~ N(0, 1)``, per N.

    :func:`variant_theory` builds it. The per-N fields are tuples, None where the quantity is not defined there; a
    field the kind does not give is None.

    Parameters
    ----------
    attention : str
        The weight map's name in :data:`varsim.variants.VARIANTS`.
    kind : str
        The registry entry's theory kind (:data:`varsim.variants.THEORY_KINDS`): ``"exact_ipr"``, ``"bound"``,
        ``"sigmoid_moments"`` ...
    params : dict
        The map's parameters, defaults filled in.
    beta : float
        The logit scale.
    n : tuple of int
        The sequence lengths.
    ipr : tuple of float
        The exact ``E[sum w^2]`` per N.
    beta_n : tuple of float, optional
        The effective scale ``f(N) beta`` (kind ``"exact_ipr"``).
    ipr_lower, ipr_upper : tuple of float, optional
        The bound on ``sum w^2`` (kind ``"bound"``).
    wsum, wsum_var : tuple of float, optional
        ``E[sum w]`` and ``Var(sum w)`` (kind ``"sigmoid_moments"``; None for maps whose weights sum to 1).

    See Also
    --------
    variant_theory : computes it.
    variant_ipr : the exact ``E[sum w^2]`` alone.

    Examples
    --------
    >>> from varsim.theory import variant_theory
    >>> th = variant_theory("ssmax", [16, 256], beta=1.0)
    >>> th.kind, len(th.ipr), th.exact_var(sigma_v2=2.0) == [2.0 * y for y in th.ipr]
    ('exact_ipr', 2, True)
    """

    attention: str
    kind: str
    params: dict
    beta: float
    n: tuple
    ipr: tuple
    beta_n: tuple | None = None
    ipr_lower: tuple | None = None
    ipr_upper: tuple | None = None
    wsum: tuple | None = None
    wsum_var: tuple | None = None

    def exact_var(self, sigma_v2: float = 1.0, mu_v2: float = 0.0) -> list:
        """The exact output variance ``Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)`` per N (REMEDIES 1).

        Values are independent of the keys; the second term counts only for maps whose weights do not sum to 1.

        Parameters
        ----------
        sigma_v2 : float
            The values' variance ``sigma_v^2``.
        mu_v2 : float
            The square of the values' mean ``mu_v^2``.

        Returns
        -------
        list of float or None
            Per N; None where ``E[sum w^2]`` is not exact.
        """
        if self.wsum_var is None:
            return [None if y is None else sigma_v2 * y for y in self.ipr]
        return [None if y is None or v is None else sigma_v2 * y + mu_v2 * v for y, v in zip(self.ipr, self.wsum_var)]


def _softmax_ipr(n: float, beta: float):
    """Exact softmax ``E[sum w^2]`` at (n, beta), None beyond the quadrature's range ``beta > BETA_MAX``."""
    return float(expected_ipr(n, beta)) if beta <= BETA_MAX else None


def _theory_exact_ipr(spec, n_arr, beta, params) -> dict:
    beta_n = np.atleast_1d(np.asarray(variant_beta(spec.name, n_arr, beta, **params), dtype=np.float64))
    return {"beta_n": tuple(float(b) for b in beta_n),
            "ipr": tuple(_softmax_ipr(float(n), float(b)) for n, b in zip(n_arr, beta_n))}


def _theory_sigmoid_moments(spec, n_arr, beta, params) -> dict:
    y2, var_s1, s1 = (np.atleast_1d(np.asarray(a, dtype=np.float64)) for a in sigmoid_moments(n_arr, beta))
    # sigmoid > 0, so E[sum w^2] > 0 (and Var(sum w) > 0 for beta != 0): an exact 0 is the quadrature's underflow at
    # huge N (N E[s^2] ~ e^{2 beta^2}/N needs E[s^2] below 1e-308), not a value
    return {"ipr": tuple(None if a == 0.0 else float(a) for a in y2),
            "wsum_var": tuple(None if v == 0.0 and beta != 0.0 else float(v) for v in var_s1),
            "wsum": tuple(float(m) for m in s1)}


def _theory_bound(spec, n_arr, beta, params) -> dict:
    lower, upper = topk_ipr_bounds(params["k"])
    return {"ipr_lower": (lower,) * len(n_arr), "ipr_upper": (upper,) * len(n_arr),
            # k >= N keeps every key: the map is softmax there
            "ipr": tuple(_softmax_ipr(float(n), beta) if params["k"] >= n else None for n in n_arr)}


def _theory_none(spec, n_arr, beta, params) -> dict:
    return {"ipr": (None,) * len(n_arr)}


#: theory kind of a registry entry -> the function giving its fields of :class:`VariantTheory`
_THEORIES = {"exact_ipr": _theory_exact_ipr, "sigmoid_moments": _theory_sigmoid_moments, "bound": _theory_bound,
             "none": _theory_none}


def variant_theory(name: str, n, beta, **params) -> VariantTheory:
    """Everything exact theory gives for the weight map ``name`` (parameters ``params``, defaults filled in) over
    ``N`` i.i.d. logits ``beta g`` at each ``n`` (``1 <= n <= 1e300``), by the theory kind its registry entry
    declares: see :class:`VariantTheory`. An unknown name, a bad parameter or a ``beta`` outside what the kind's
    quadrature accepts (sigmoid: ``|beta| <= 50``) raises ``ValueError``; an effective scale beyond ``BETA_MAX``
    gives None in that cell."""
    from varsim.variants import get_variant

    spec = get_variant(name)
    p = spec.check_params(params)
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX).ravel()
    beta = abs(check_real("beta", beta))
    fields = _THEORIES[spec.theory](spec, n_arr, beta, p)
    return VariantTheory(spec.name, spec.theory, p, beta, tuple(float(v) for v in n_arr), **fields)


def _gauss_expect(fn, center: float, beta: float) -> float:
    """``E[fn(beta g)]`` for ``g ~ N(0,1)``, ``0 <= fn <= 1``, by adaptive quadrature on ``|g| <= 40`` (beyond, the
    density is below 1e-300) split where the integrand's mass can sit: at 0, at the tilted peaks ``beta`` and
    ``2 beta`` of ``e^{k beta g} phi(g)`` and at the sigmoid's transition ``g = center / beta``."""
    from scipy import integrate

    if beta == 0.0:
        return fn(0.0)

    def integrand(g):
        return fn(beta * g) * math.exp(-0.5 * g * g) / math.sqrt(2.0 * math.pi)

    cuts = sorted({-40.0, 40.0, *(min(max(p, -40.0), 40.0) for p in (0.0, beta, 2.0 * beta, center / beta))})
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        val, _err = integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-12, limit=200)
        total += val
    return total


def sigmoid_moments(n, beta):
    """Sigmoid attention ``w_i = sigmoid(beta g_i - ln N)``, ``g_i`` i.i.d. ``N(0, 1)`` (REMEDIES 3), exact:
    ``(E[sum w^2], Var(sum w), E[sum w])`` ``= (N E[s^2], N Var(s), N E[s])`` with ``s = sigmoid(beta g - ln N)``,
    each a one-dimensional Gaussian integral (adaptive quadrature, relative accuracy ~1e-10).

    By REMEDIES 1, ``Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)`` for values independent of the keys.
    Scalars or arrays of ``n`` (``1 <= n <= 1e300``); ``|beta| <= 50``.
    """
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    beta = abs(check_real("beta", beta, minimum=-50.0, maximum=50.0))
    out = np.empty((3,) + n_arr.shape)
    for idx, v in np.ndenumerate(n_arr):
        ln_n = math.log(v)

        def sig(x, ln_n=ln_n):
            y = x - ln_n
            return 1.0 / (1.0 + math.exp(-y)) if y >= 0 else math.exp(y) / (1.0 + math.exp(y))

        m1 = _gauss_expect(sig, ln_n, beta)
        m2 = _gauss_expect(lambda x: sig(x) ** 2, ln_n, beta)
        out[(0,) + idx] = v * m2
        out[(1,) + idx] = v * max(m2 - m1 * m1, 0.0)
        out[(2,) + idx] = v * m1
    return tuple(scalar_or_array(n, out[i]) for i in range(3))


def sigmoid_variance(n, beta, sigma_v=1.0, mu_v=0.0):
    """``Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)`` for sigmoid attention (REMEDIES 1 and 3)."""
    sigma_v = check_real("sigma_v", sigma_v, minimum=0.0)
    mu_v = check_real("mu_v", mu_v)
    y2, var_s1, _ = sigmoid_moments(n, beta)
    return scalar_or_array(n, sigma_v**2 * np.asarray(y2) + mu_v**2 * np.asarray(var_s1))


def topk_ipr_bounds(k) -> tuple[float, float]:
    """``1/k <= sum w^2 <= 1`` for top-k softmax (any logits, any N), so ``Var(o_j) >= sigma_v^2 / k`` (THEORY 4d)."""
    from varsim.variants import check_params

    k = check_params("topk", k=k)["k"]
    return 1.0 / k, 1.0


def adaptive_switch_off_entropy() -> float:
    """The entropy (nats) above which adaptive temperature stops sharpening: the largest root of ``P(H) = 1``
    (about 5.94; REMEDIES 3). Diffuse heads, ``H ~ ln N - beta^2/2`` for Gaussian logits, pass it at large N."""
    from varsim.variants import ADAPTIVE_POLY

    coeffs = np.array(ADAPTIVE_POLY, dtype=np.float64)
    coeffs[-1] -= 1.0
    roots = np.roots(coeffs)
    real = roots[np.abs(roots.imag) < 1e-12].real
    return float(np.max(real))
