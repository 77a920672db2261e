"""Exact finite-N theory of softmax weights over i.i.d. logits of any registered law.

:func:`law_ipr` (``E[sum w^2]``), :func:`law_decay_exponent` (``d ln E / d ln N``), :func:`law_ipr_and_exponent`,
:func:`law_ipr_second_moment` (``E[(sum w^2)^2]``) for ``1 <= N <= 1e300`` (2 for the second moment) and
``|beta| <= 1e4``, and :func:`annealed_limit`, the ``N -> oo`` limit of ``N E[sum w^2]`` for a law with finite
``E[e^{2X}]``: ``E[e^{2X}] / E[e^X]^2`` (the law of large numbers in numerator and denominator of
``sum w_i^2 = sum e^{2X_i} / (sum e^{X_i})^2``). The Gaussian law is :mod:`varsim.theory.ipr` itself; every bounded
law goes through the lattice quadrature of :mod:`varsim.theory.laws._lattice` (relative accuracy ~1e-12, checked
against mpmath in ``tests/test_theory_laws.py``); a heavy-tailed law (``tail == "heavy"``: Student-t keys) through
:mod:`varsim.theory.laws._heavy`, the same representation on a core measure plus the tails' density and survival
function (checked against mpmath in ``tests/test_theory_laws_heavy.py``).

Phase picture of a heavy-tailed law (``P(T > t) ~ C t^-nu / nu``): ``N E[sum w^2]`` has no finite limit; at fixed
beta, ``E[sum w^2]`` first falls like a bounded law's (exponent near -1 while the largest logit is within a unit or
two of the rest), then rises back to 1 (frozen on the largest logit) with ``1 - E ~ nu Gamma(2 + 1/nu) / a_N``,
``a_N = beta (N C / nu)^{1/nu}`` the scale of the largest logit, and a positive local exponent ``~ (1 - E)/nu``:
there is no spread phase at large N for any beta.
"""

from __future__ import annotations

import inspect
import math
import threading
from collections import OrderedDict

import numpy as np

from varsim.theory import ipr as _gaussian
from varsim.theory._args import scalar_or_grid
from varsim.theory.laws import _heavy, _lattice
from varsim.theory.laws.families import LAWS, GaussianLaw, LogitLaw

__all__ = ["SUPPORT_WIDTH_MAX", "annealed_limit", "crossover_beta", "law_decay_exponent", "law_ipr",
           "law_ipr_and_exponent", "law_ipr_second_moment", "logit_law"]

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 512
_LOCK = threading.Lock()


def logit_law(name: str, **params) -> LogitLaw:
    """The law ``name`` of :data:`varsim.theory.laws.LAWS` with its parameters (``logit_law("sphere", d=64)``);
    an unknown name raises ``ValueError`` naming ``law``, a missing or unknown parameter one naming it."""
    family = LAWS.find(name)
    try:
        inspect.signature(family).bind(**params)
    except TypeError as exc:
        raise ValueError(f"law {name!r}: {exc}") from None
    return family(**params)


def _law(law) -> LogitLaw:
    if isinstance(law, str):
        return logit_law(law)
    if not isinstance(law, LogitLaw):
        raise ValueError(f"law must be a LogitLaw or a registered name, got {law!r}")
    return law


#: Largest width ``|beta| (max T - min T)`` of a bounded law's logit support: the quadrature holds ~50 nodes per
#: unit of it (2 M nodes here, ~0.4 GB of temporaries). Beyond it every N <= 1e300 at such a beta is frozen.
SUPPORT_WIDTH_MAX = 4e4


def _grid(law: LogitLaw, beta: float, n_max: float, fourth: bool) -> _lattice.Grid | _heavy.HeavyGrid:
    lo, hi = law.support(beta)
    if law.tail != "heavy" and hi - lo > SUPPORT_WIDTH_MAX:
        raise ValueError(f"beta must satisfy |beta| * (support width of the {law.name} law) <= {SUPPORT_WIDTH_MAX:g} "
                         f"(the quadrature holds ~50 nodes per unit of logit range), got {hi - lo:g} at "
                         f"beta={beta:g}")
    n_max = max(1e8, 10.0 ** math.ceil(math.log10(n_max)))
    key = (id(law), repr(law), beta, fourth)
    with _LOCK:
        entry = _CACHE.get(key)
        if entry is not None and entry[0] is law and entry[1].n_max >= n_max:
            _CACHE.move_to_end(key)
            return entry[1]
    if law.tail == "heavy":
        grid = _heavy.HeavyGrid(law, beta, n_max, fourth)
    else:
        grid = _lattice.Grid(_lattice.Measure(*law.measure(beta)), n_max, fourth)
    with _LOCK:
        _CACHE[key] = (law, grid)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return grid


def _ipr_exact(grid, v, want_exponent: bool):
    engine = _heavy if isinstance(grid, _heavy.HeavyGrid) else _lattice
    return engine.ipr_exact(grid, v, want_exponent)


def _second_moment_exact(grid, v):
    engine = _heavy if isinstance(grid, _heavy.HeavyGrid) else _lattice
    return engine.second_moment_exact(grid, v)


def _per_beta(law: LogitLaw, n, beta, n_min: float, compute):
    """Validate, broadcast, and apply ``compute(grid_getter, distinct_n, beta) -> tuple of arrays`` per distinct
    beta (``beta = 0``: ``compute`` is not called; the weights are uniform)."""
    n_b, b_b = _gaussian.broadcast_n_beta(n, beta, n_min=n_min) if law.symmetric else _signed(n, beta, n_min)
    outs = None
    for b in np.unique(b_b):
        mask = b_b == b
        distinct, where = np.unique(n_b[mask], return_inverse=True)
        vals = compute(distinct, float(b))
        if outs is None:
            outs = tuple(np.empty(n_b.shape) for _ in vals)
        for out, v in zip(outs, vals):
            out[mask] = v[where]
    return outs


def _signed(n, beta, n_min):
    n_b, b_b = _gaussian.broadcast_pair("n", n, "beta", beta, first_min=n_min, first_max=_gaussian.N_MAX)
    if np.any(np.abs(b_b) > _gaussian.BETA_MAX):
        raise ValueError(_gaussian._beta_max_message(float(np.abs(b_b).max())))
    return n_b, b_b


def law_ipr_and_exponent(law, n, beta) -> tuple[np.ndarray, np.ndarray]:
    """``(law_ipr, law_decay_exponent)`` as arrays of the broadcast shape of ``n`` and ``beta``."""
    law = _law(law)
    if isinstance(law, GaussianLaw):
        return _gaussian.ipr_and_exponent(n, beta)

    def compute(v, b):
        if b == 0.0:
            return 1.0 / v, np.full(v.shape, -1.0)
        return _ipr_exact(_grid(law, b, float(v.max()), False), v, True)

    return _per_beta(law, n, beta, 1.0, compute)


def law_ipr(law, n, beta):
    """Exact ``E[sum_i w_i^2]``, ``w = softmax(X_1..X_N)``, ``X_i`` i.i.d. ``beta T`` with ``T`` of ``law``.

    Parameters
    ----------
    law : LogitLaw or str
        A law of :data:`LAWS` (``logit_law("sphere", d=64)``) or the name of one without parameters.
    n : float or array_like
        Sequence length, real ``1 <= n <= 1e300``.
    beta : float or array_like
        Logit scale, ``|beta| <= 1e4`` (broadcast against ``n``); ``beta = 0`` gives ``1/n``.

    Returns
    -------
    float or ndarray
        A float when both are scalars. Equal to :func:`varsim.theory.expected_ipr` for the Gaussian law.
    """
    law = _law(law)
    if isinstance(law, GaussianLaw):
        return _gaussian.expected_ipr(n, beta)

    def compute(v, b):
        if b == 0.0:
            return (1.0 / v,)
        return _ipr_exact(_grid(law, b, float(v.max()), False), v, False)[:1]

    out, = _per_beta(law, n, beta, 1.0, compute)
    return scalar_or_grid(n, beta, out)


def law_decay_exponent(law, n, beta):
    """Exact local exponent ``d ln E[sum w^2] / d ln N`` (same arguments as :func:`law_ipr`): near 0 while the
    weights are frozen, tending to -1 for every law with finite ``E[e^{2X}]`` (it can pass slightly below -1 where
    ``N E[sum w^2]`` approaches its limit from above)."""
    law = _law(law)
    return scalar_or_grid(n, beta, law_ipr_and_exponent(law, n, beta)[1])


def law_ipr_second_moment(law, n, beta):
    """Exact ``E[(sum_i w_i^2)^2]`` (same arguments as :func:`law_ipr`, ``2 <= n <= 1e300``)."""
    law = _law(law)
    if isinstance(law, GaussianLaw):
        return _gaussian.ipr_second_moment(n, beta)

    def compute(v, b):
        if b == 0.0:
            return (1.0 / v / v,)
        return (_second_moment_exact(_grid(law, b, float(v.max()), True), v),)

    out, = _per_beta(law, n, beta, 2.0, compute)
    return scalar_or_grid(n, beta, out)


def annealed_limit(law, beta):
    """``lim_{N -> oo} N E[sum w^2] = E[e^{2X}] / E[e^X]^2 = exp(K(2 beta) - 2 K(beta))``, ``K = law.log_mgf``
    (finite for every bounded law and the Gaussian, where it is ``e^{beta^2}``; ``inf`` for a heavy-tailed law at
    every ``beta != 0``)."""
    law = _law(law)
    beta_arr = np.asarray(_gaussian.real_array("beta", beta))
    with np.errstate(over="ignore"):  # a heavy-tailed law's log limit is inf at every beta != 0
        out = np.exp(law.log_annealed_limit(beta_arr))
    return float(out) if np.ndim(beta) == 0 else out


def _log_limit(law: LogitLaw, beta: float) -> float:
    return float(law.log_annealed_limit(beta))


#: the largest crossover scale searched (beyond it, or where ``N`` exceeds a law's bounded ``A``, ``inf``)
_BETA_MAX = 1e280


def crossover_beta(law, n) -> float:
    """The logit scale ``beta*`` at which the annealed asymptote ``E[sum w^2] ~ A(beta)/N`` reaches 1 at this ``N``
    (``A`` = :func:`annealed_limit`, increasing in ``beta`` since the log-MGF is convex): below it ``N >> A`` and the
    weights are spread (local exponent near -1), well above it they are frozen on the top logits.

    Gaussian: ``sqrt(ln N)`` (between the REM boundaries ``sqrt(2 ln N / 3)`` and ``sqrt(2 ln N)``); sphere:
    ``~ N^{2/(d-1)}`` (``derivations/law_sphere.py``); uniform keys: ``~ N^{1/d}``; a law with an atom at its top
    (Rademacher, empirical) has ``A <= 1/P(top)``, and ``inf`` is returned when ``N`` exceeds it. A heavy-tailed
    law (Student-t) has ``A = inf`` at every ``beta > 0``, so 0 is returned: there the weights freeze at every
    beta as N grows, once the scale of the largest logit ``a_N = beta (N C / nu)^{1/nu}`` exceeds a few units
    (``1 - E[sum w^2] ~ nu Gamma(2 + 1/nu) / a_N``; ``derivations/law_student_t.py``)."""
    from scipy.optimize import brentq

    law = _law(law)
    n = _gaussian.check_real("n", n, minimum=1.0, maximum=_gaussian.N_MAX)
    target = math.log(n)
    if target == 0.0 or law.tail == "heavy":
        return 0.0
    hi = 1.0
    while _log_limit(law, hi) < target:
        if hi > _BETA_MAX:
            return math.inf
        hi *= 2.0
    return brentq(lambda b: _log_limit(law, b) - target, 0.0, hi, xtol=1e-14 * hi, rtol=1e-14)
