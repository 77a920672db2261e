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
    # sigmoid > 0, so E[sum w^2] > 0 (and Var(sum w) > 0 for beta != 0): an exact 0 is a true value below the smallest
    # float (Var(sum w) ~ beta^2 / N at tiny beta), marked None rather than printed as 0
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


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: half-width of the quadrature window around a log-integrand's peak: its second derivative is <= -1, so beyond the
#: window it is below e^{-14^2/2} = e^-98 of the peak value (derivations/remedies_theory.py)
_WINDOW = 14.0


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def _scaled_integral(log_f, peak_lo: float, peak_hi: float, domain: tuple, marks: tuple) -> tuple[float, float]:
    """``(top, I)`` with ``int_domain exp(log_f(g)) dg = e^top I``, for a log-integrand whose second derivative is
    ``<= -1`` and whose peak lies in ``[peak_lo, peak_hi]``: ``top`` is its value at the peak (bounded Brent), ``I``
    the adaptive quadrature of ``exp(log_f - top)`` over the window around the peak, split there and at ``marks``.
    ``I`` is of order one, so neither factor under- nor overflows whatever the scale of the integral."""
    from scipy import integrate, optimize

    peak = optimize.minimize_scalar(lambda v: -log_f(v), bounds=(peak_lo, peak_hi), method="bounded",
                                    options={"xatol": 1e-6}).x
    top = log_f(peak)
    if not math.isfinite(top):
        return -math.inf, 0.0
    lo, hi = max(domain[0], peak - _WINDOW), min(domain[1], peak + _WINDOW)
    cuts = sorted({lo, hi, peak, *(m for m in marks if lo < m < hi)})
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        val, _err = integrate.quad(lambda v: math.exp(log_f(v) - top), a, b, epsabs=0.0, epsrel=1e-12, limit=200)
        total += val
    return top, total


def _sigmoid_moments_at(ln_n: float, beta: float) -> tuple[float, float, float]:
    """``(N E[s^2], N Var(s), N E[s])`` for ``s = sigmoid(beta g - ln N)``, ``beta > 0``, from scaled integrals
    (derivations/remedies_theory.py): ``E[s]`` directly; ``Var(s) = E[d^2] - E[d]^2`` with ``d = s(g) - s(0)``, the
    product ``sigmoid(beta g - L) sigmoid(L) (1 - e^{-beta g})`` for ``g > 0`` and ``-sigmoid(-L)
    sigmoid(L - beta g) (1 - e^{beta g})`` for ``g < 0`` (no cancellation; at large N ``E[d]^2`` is at most 0.09 of
    ``Var(s)``, where ``E[s^2] - E[s]^2`` would cancel all but ~beta^2 of ``E[s^2]``); ``E[s^2] = Var(s) + E[s]^2``,
    two positive terms. Each scaled integral keeps its relative accuracy when the value is ``1e-600``."""
    # peaks: of s phi within [0, beta] (the peak condition); of |d|^k phi within |g| <= span, where the derivative of
    # its log, at most k (beta + 1/g) - g, turns negative
    span = beta + math.sqrt(beta * beta + 2.0)
    marks = (ln_n / beta,)
    log_s0, log_s0_neg = _log_sigmoid(ln_n), _log_sigmoid(-ln_n)

    def log_s(v):
        return _log_sigmoid(beta * v - ln_n) - 0.5 * v * v

    def log_d_pos(v):
        y = beta * v
        return _log_sigmoid(y - ln_n) + log_s0 + math.log(-math.expm1(-y)) if y > 0 else -math.inf

    def log_d_neg(v):
        y = beta * v
        return log_s0_neg + _log_sigmoid(ln_n - y) + math.log(-math.expm1(y)) if y < 0 else -math.inf

    pos, neg = (0.0, math.inf), (-math.inf, 0.0)
    t1, i1 = _scaled_integral(log_s, 0.0, beta, (-math.inf, math.inf), marks)
    tp2, ip2 = _scaled_integral(lambda v: 2.0 * log_d_pos(v) - 0.5 * v * v, 0.0, span, pos, marks)
    tn2, in2 = _scaled_integral(lambda v: 2.0 * log_d_neg(v) - 0.5 * v * v, -span, 0.0, neg, marks)
    tp1, ip1 = _scaled_integral(lambda v: log_d_pos(v) - 0.5 * v * v, 0.0, span, pos, marks)
    tn1, in1 = _scaled_integral(lambda v: log_d_neg(v) - 0.5 * v * v, -span, 0.0, neg, marks)
    shift = ln_n - _LOG_SQRT_2PI
    n_d2 = math.exp(shift + tp2) * ip2 + math.exp(shift + tn2) * in2
    top = max(tp1, tn1)
    d_mean = math.exp(tp1 - top) * ip1 - math.exp(tn1 - top) * in1  # E[d] sqrt(2 pi) e^-top
    n_var = max(n_d2 - math.exp(ln_n + 2.0 * (top - _LOG_SQRT_2PI)) * d_mean * d_mean, 0.0)
    log_n_mean = shift + t1 + math.log(i1)
    return n_var + math.exp(2.0 * log_n_mean - ln_n), n_var, math.exp(log_n_mean)


def sigmoid_moments(n, beta):
    """Sigmoid attention ``w_i = sigmoid(beta g_i - ln N)``, ``g_i`` i.i.d. ``N(0, 1)`` (REMEDIES 3), exact:
    ``(E[sum w^2], Var(sum w), E[sum w])`` ``= (N E[s^2], N Var(s), N E[s])`` with ``s = sigmoid(beta g - ln N)``,
    by one-dimensional Gaussian integrals scaled at their peaks (adaptive quadrature, relative accuracy ~1e-10 for
    every ``N`` and ``beta``, down to values of 1e-300; derived in ``derivations/remedies_theory.py``).

    By REMEDIES 1, ``Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)`` for values independent of the keys.
    Scalars or arrays of ``n`` (``1 <= n <= 1e300``); ``|beta| <= 50``.
    """
    n_arr = real_array("n", n, minimum=1.0, maximum=N_MAX)
    beta = abs(check_real("beta", beta, minimum=-50.0, maximum=50.0))
    out = np.empty((3,) + n_arr.shape)
    for idx, v in np.ndenumerate(n_arr):
        if beta == 0.0:  # every weight is 1/(N+1)
            mean = v / (v + 1.0)
            out[(slice(None),) + idx] = (mean / (v + 1.0), 0.0, mean)
        else:
            out[(slice(None),) + idx] = _sigmoid_moments_at(math.log(v), beta)
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
