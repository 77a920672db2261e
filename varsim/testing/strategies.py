"""Hypothesis strategies for valid attention test configurations, bounded so that each draw stays cheap.

The central one is :func:`attention_configs`, which draws an :class:`~varsim.testing.AttentionConfig`: lengths,
dimensions, a logit scale ``beta`` split into a temperature ``tau`` and a query norm, the value law, the query law,
the parameters of your variant, and a seed. By default it stays in the annealed phase of the theory
(``ln N >= 3 beta^2/2 + 2 beta`` at the shortest length), where Monte Carlo standard errors are reliable at small
budgets; ``regime="any"`` lifts that.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from .cases import CASE_DTYPES, KEY_LAWS, MASKS, AttentionCase
from .config import AttentionConfig

__all__ = [
    "DISTRIBUTIONS",
    "n_grids",
    "value_laws",
    "seeds",
    "annealed_beta_max",
    "attention_configs",
    "attention_cases",
]

DISTRIBUTIONS = ("gaussian", "uniform", "rademacher")
"""The key and value laws the Monte Carlo strategies draw from (those of :func:`varsim.sim.measure_variance`)."""
_REGIMES = ("annealed", "any")


def _check_range(name, value, lo_min, integer=False):
    if not (isinstance(value, tuple) and len(value) == 2):
        raise ValueError(f"{name} must be a (min, max) pair, got {value!r}")
    lo, hi = value
    if (integer and not all(isinstance(v, int) for v in value)) or not lo_min <= lo <= hi:
        raise ValueError(f"{name} must be a ({'integer ' if integer else ''}min, max) pair with "
                         f"{lo_min} <= min <= max, got {value!r}")
    return lo, hi


def n_grids(min_n: int = 16, max_n: int = 512, max_points: int = 2) -> st.SearchStrategy:
    """A strategy of sequence-length grids: increasing tuples of distinct lengths, log-uniform.

    Parameters
    ----------
    min_n, max_n : int
        The range of the lengths (``1 <= min_n <= max_n``).
    max_points : int
        At most this many lengths per grid (at least 1).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Tuples of 1 to ``max_points`` lengths in ``[min_n, max_n]``; short and long lengths are equally likely.
    """
    lo, hi = _check_range("(min_n, max_n)", (min_n, max_n), 1, integer=True)
    if not (isinstance(max_points, int) and max_points >= 1):
        raise ValueError(f"max_points must be an integer >= 1, got {max_points!r}")
    log_n = st.floats(math.log(lo), math.log(hi)).map(lambda x: min(hi, max(lo, int(round(math.exp(x))))))
    return st.lists(log_n, min_size=1, max_size=max_points, unique=True).map(lambda v: tuple(sorted(v)))


def value_laws(dists=DISTRIBUTIONS, mean=(-3.0, 3.0), scale=(0.25, 4.0)) -> st.SearchStrategy:
    """A strategy of value laws: dicts with ``value_dist``, ``value_mean`` and ``value_scale``.

    A constant mean and any law leave ``Var(o_j) = value_scale^2 E[sum w^2]`` unchanged, so every draw has an exact
    reference.

    Parameters
    ----------
    dists : sequence of str
        Laws to draw from, some of :data:`DISTRIBUTIONS`.
    mean, scale : (float, float)
        ``(min, max)`` of the mean and of the scale (``> 0``).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Dicts to pass as keyword arguments of :func:`varsim.sim.measure_variance`.
    """
    bad = [d for d in dists if d not in DISTRIBUTIONS]
    if bad or not dists:
        raise ValueError(f"unknown value distribution(s) {bad}; expected some of {DISTRIBUTIONS}")
    m_lo, m_hi = _check_range("mean", mean, -1e6)
    s_lo, s_hi = _check_range("scale", scale, 1e-6)
    return st.fixed_dictionaries({
        "value_dist": st.sampled_from(tuple(dists)),
        "value_mean": st.floats(m_lo, m_hi, allow_nan=False),
        "value_scale": st.floats(s_lo, s_hi, allow_nan=False),
    })


def seeds() -> st.SearchStrategy:
    """A strategy of seeds for the Monte Carlo runs: 32-bit integers, shrinking towards 0.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Integers in ``[0, 2^32)``.
    """
    return st.integers(0, 2**32 - 1)


def annealed_beta_max(n: int) -> float:
    """The largest logit scale ``beta`` with ``ln n >= 3 beta^2/2 + 2 beta`` at length ``n``.

    That is the annealed side of the phase diagram with a margin (THEORY.md 3), where ``E[sum w^2] ~ e^{beta^2}/N``
    and short runs estimate it reliably.

    Parameters
    ----------
    n : int
        The shortest sequence length of a run.

    Returns
    -------
    float
        The largest ``beta`` in the annealed regime with its margin.

    Examples
    --------
    >>> from varsim.testing import annealed_beta_max
    >>> round(annealed_beta_max(16), 2), round(annealed_beta_max(512), 2)
    (0.85, 1.48)
    """
    ln_n = math.log(n)
    return (-2.0 + math.sqrt(4.0 + 6.0 * ln_n)) / 3.0


@st.composite
def _configs(draw, n, grid_points, d_k, d_v, beta, tau, queries, key_dists, values, regime, params, max_work, seed):
    grid = draw(n_grids(n[0], n[1], grid_points))
    dk = draw(st.integers(*d_k))
    dv = draw(st.integers(*d_v))
    # keep one sequence's draws (N (d_k + d_v) numbers at the longest N) within max_work
    if grid[-1] * (dk + dv) > max_work:
        grid = tuple(v for v in grid if v * (dk + dv) <= max_work) or (max(n[0], int(max_work // (dk + dv))),)
    query = draw(st.sampled_from(queries))
    b_hi = beta[1] if regime == "any" else min(beta[1], annealed_beta_max(grid[0]))
    b_hi = max(b_hi, beta[0])
    t = draw(st.floats(*tau))
    t = _away_from_one(t) if tau[0] <= _away_from_one(t) <= tau[1] else t
    if query == "fixed":
        b = draw(st.floats(beta[0], b_hi))
        norm = b * math.sqrt(dk) / t  # beta = tau |q| / sqrt(d_k)
        query_norm = float(norm)
    else:  # beta^2 = tau^2 chi2_d / d has mean tau^2: bound tau like beta, and keep d_k > 4 tau^2
        t = min(t, b_hi, 0.5 * math.sqrt(dk))
        query_norm = None
    law = draw(values)
    return AttentionConfig(
        n_grid=grid, d_k=dk, d_v=dv, tau=float(t), query=query, query_norm=query_norm,
        key_dist=draw(st.sampled_from(key_dists)), params=draw(params), seed=draw(seed), **law,
    )


def attention_configs(
    *,
    n=(16, 512),
    grid_points: int = 2,
    d_k=(8, 32),
    d_v=(1, 8),
    beta=(0.5, 3.0),
    tau=(0.5, 2.0),
    queries=("fixed",),
    key_dists=("gaussian",),
    value_dists=DISTRIBUTIONS,
    value_mean=(-3.0, 3.0),
    value_scale=(0.25, 4.0),
    regime: str = "annealed",
    params=None,
    max_work: int = 20_000,
    seed=None,
) -> st.SearchStrategy:
    """A strategy of valid Monte Carlo test configurations (:class:`~varsim.testing.AttentionConfig`).

    Parameters
    ----------
    n : (int, int)
        ``(min, max)`` sequence lengths.
    grid_points : int
        At most this many lengths per configuration.
    d_k, d_v : (int, int)
        ``(min, max)`` dimensions (``d_k >= 8`` keeps a 1/d scale distinguishable from 1/sqrt(d)).
    beta : (float, float)
        ``(min, max)`` logit scale ``tau |q| / sqrt(d_k)`` of a fixed query, capped by the regime (at the default
        lengths the annealed cap is 0.85 at N = 16 and 1.48 at N = 512). Near 0 every attention is mean pooling
        and a temperature or scale bug is invisible, hence the default minimum 0.5.
    tau : (float, float)
        ``(min, max)`` temperature, kept 0.1 away from 1 when the range allows; the query norm is set so that
        ``tau |q| / sqrt(d_k) = beta``.
    queries : sequence of {"fixed", "random"}
        Query laws to draw from (``"random"``: the exact reference costs about 1 s per length).
    key_dists : sequence of str
        Key laws, some of :data:`DISTRIBUTIONS` (the exact references need ``"gaussian"``).
    value_dists : sequence of str
        Value laws, some of :data:`DISTRIBUTIONS`.
    value_mean, value_scale : (float, float)
        ``(min, max)`` of the values' constant mean and scale.
    regime : {"annealed", "any"}
        ``"annealed"``: ``ln N_min >= 3 beta^2/2 + 2 beta`` (:func:`annealed_beta_max`), where short runs are
        reliable.
    params : dict or hypothesis.strategies.SearchStrategy, optional
        Name -> strategy (or a strategy of dicts) for your variant's parameters (``AttentionConfig.params``).
    max_work : int
        Bound on ``N (d_k + d_v)``, the numbers drawn per sequence at the longest length.
    seed : hypothesis.strategies.SearchStrategy, optional
        Strategy for the run's seed (default :func:`seeds`).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Draws :class:`~varsim.testing.AttentionConfig`.

    Raises
    ------
    ValueError
        A bad range or choice, naming the parameter.

    See Also
    --------
    attention_cases : same-draw cases, which catch smaller bugs.
    varsim.testing.mc_settings : Hypothesis settings for these slow examples.

    Examples
    --------
    >>> from hypothesis import given
    >>> from varsim.testing import (assert_variance_matches, attention_configs, attention_fn, mc_settings)
    >>> @mc_settings(max_examples=2, derandomize=True)
    ... @given(attention_configs(n=(16, 64), d_k=(8, 16), d_v=(1, 4)))
    ... def test_softmax_variance(cfg):
    ...     assert_variance_matches(attention_fn("softmax", tau=cfg.tau), cfg.expected_variance,
    ...                             **cfg.check_kwargs())
    >>> test_softmax_variance()
    """
    n = _check_range("n", n, 1, integer=True)
    d_k = _check_range("d_k", d_k, 1, integer=True)
    d_v = _check_range("d_v", d_v, 1, integer=True)
    beta = _check_range("beta", beta, 0.0)
    tau = _check_range("tau", tau, 0.0)
    if tau[0] <= 0:
        raise ValueError(f"tau must be a (min, max) pair with min > 0, got {tau!r}")
    if regime not in _REGIMES:
        raise ValueError(f"unknown regime {regime!r}; expected one of {_REGIMES}")
    for name, items in (("queries", queries), ("key_dists", key_dists)):
        allowed = ("fixed", "random") if name == "queries" else DISTRIBUTIONS
        if not items or any(v not in allowed for v in items):
            raise ValueError(f"{name} must be a non-empty subset of {allowed}, got {items!r}")
    if not (isinstance(max_work, int) and max_work >= n[0] * (d_k[1] + d_v[1])):
        raise ValueError(f"max_work must be an integer >= min n * (max d_k + max d_v) = {n[0] * (d_k[1] + d_v[1])}, "
                         f"got {max_work!r}")
    if params is None:
        params = st.just({})
    elif isinstance(params, dict):
        params = st.fixed_dictionaries(params)
    elif not isinstance(params, st.SearchStrategy):
        raise ValueError(f"params must be a dict of strategies or a strategy of dicts, got {type(params).__name__}")
    return _configs(n, grid_points, d_k, d_v, beta, tau, tuple(queries), tuple(key_dists),
                    value_laws(value_dists, value_mean, value_scale), regime, params, max_work,
                    seeds() if seed is None else seed)


def _away_from_one(t: float) -> float:
    """A temperature at least 0.1 away from 1 (tau = 1 cannot tell an ignored temperature from a correct one)."""
    return t if abs(t - 1.0) >= 0.1 else (0.9 if t < 1.0 else 1.1)


@st.composite
def _cases(draw, batch, heads, n_queries, n_keys, d_k, d_v, tau, beta, huge_beta, value_mean, key_laws, masks,
           dtypes):
    dk = draw(st.integers(*d_k))
    dv = draw(st.integers(*d_v))
    if dv == dk:  # d_k = d_v hides a 1/sqrt(d_v) scale
        dv = dv + 1 if dv < d_v[1] else dv - 1
    lo, hi = math.log(n_keys[0]), math.log(n_keys[1])
    n = min(n_keys[1], max(n_keys[0], int(round(math.exp(draw(st.floats(lo, hi)))))))
    b = draw(st.floats(*huge_beta)) if huge_beta and draw(st.integers(0, 4)) == 0 else draw(st.floats(*beta))
    mean = draw(st.floats(*value_mean)) * draw(st.sampled_from((1.0, -1.0)))
    mask = draw(st.sampled_from(masks))
    L = draw(st.integers(*n_queries))
    L = min(L, n) if mask == "causal" else L
    return AttentionCase(
        name="drawn", batch=draw(st.integers(*batch)), heads=draw(st.integers(*heads)), n_queries=L, n_keys=n,
        d_k=dk, d_v=max(dv, 1), tau=_away_from_one(draw(st.floats(*tau))), beta=b, value_mean=mean,
        value_scale=draw(st.floats(0.25, 4.0)), key_law=draw(st.sampled_from(key_laws)), mask=mask,
        dtype=draw(st.sampled_from(dtypes)), seed=draw(seeds()),
    )


def attention_cases(
    *,
    batch=(2, 4),
    heads=(1, 3),
    n_queries=(1, 4),
    n_keys=(1, 512),
    d_k=(2, 32),
    d_v=(1, 16),
    tau=(0.25, 4.0),
    beta=(0.5, 3.0),
    huge_beta=(300.0, 3000.0),
    value_mean=(0.25, 3.0),
    key_laws=KEY_LAWS,
    masks=MASKS,
    dtypes=CASE_DTYPES,
) -> st.SearchStrategy:
    """A strategy of same-draw cases (:class:`~varsim.testing.AttentionCase`) for
    :func:`~varsim.testing.assert_matches_reference`.

    Every draw has ``d_k != d_v``, ``tau`` at least 0.1 away from 1 (the query norm carries the rest of ``beta``)
    and a value mean of magnitude in ``value_mean``; one draw in five has a huge logit scale.

    Parameters
    ----------
    batch, heads, n_queries, n_keys, d_k, d_v : (int, int)
        ``(min, max)`` of the case's shape; ``n_keys`` is drawn log-uniform.
    tau, beta : (float, float)
        ``(min, max)`` temperature and logit scale.
    huge_beta : (float, float) or None
        ``(min, max)`` of the huge logit scale of one draw in five (None: never).
    value_mean : (float, float)
        ``(min, max)`` magnitude of the values' mean (its sign is drawn).
    key_laws, masks, dtypes : sequence of str
        Choices drawn from: some of :data:`~varsim.testing.KEY_LAWS`, :data:`~varsim.testing.MASKS` (pass
        ``masks=("none",)`` for a function without a mask) and :data:`~varsim.testing.CASE_DTYPES`.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Draws :class:`~varsim.testing.AttentionCase`.

    See Also
    --------
    varsim.testing.REFERENCE_CASES : the fixed battery.

    Examples
    --------
    >>> from hypothesis import given
    >>> from varsim.testing import assert_matches_reference, attention_cases, mc_settings, softmax_attention
    >>> @mc_settings(max_examples=5, derandomize=True)
    ... @given(attention_cases(masks=("none",)))
    ... def test_same_draw(case):
    ...     assert_matches_reference(softmax_attention, case)
    >>> test_same_draw()
    """
    ranges = {}
    for name, value, lo_min, integer in (("batch", batch, 1, True), ("heads", heads, 1, True),
                                         ("n_queries", n_queries, 1, True), ("n_keys", n_keys, 1, True),
                                         ("d_k", d_k, 1, True), ("d_v", d_v, 1, True), ("tau", tau, 1e-6, False),
                                         ("beta", beta, 0.0, False), ("value_mean", value_mean, 0.0, False)):
        ranges[name] = _check_range(name, value, lo_min, integer)
    if huge_beta is not None:
        huge_beta = _check_range("huge_beta", huge_beta, 0.0)
    if d_k == d_v and d_k[0] == d_k[1]:
        raise ValueError(f"d_k and d_v must allow different values, got {d_k!r} and {d_v!r}")
    for name, items, allowed in (("key_laws", key_laws, KEY_LAWS), ("masks", masks, MASKS),
                                 ("dtypes", dtypes, CASE_DTYPES)):
        if not items or any(v not in allowed for v in items):
            raise ValueError(f"{name} must be a non-empty subset of {allowed}, got {items!r}")
    return _cases(ranges["batch"], ranges["heads"], ranges["n_queries"], ranges["n_keys"], ranges["d_k"],
                  ranges["d_v"], ranges["tau"], ranges["beta"], huge_beta, ranges["value_mean"], tuple(key_laws),
                  tuple(masks), tuple(dtypes))
