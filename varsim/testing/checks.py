"""Monte Carlo checks of an attention function against a reference value, with the 5 SE rule.

Each check runs :func:`varsim.sim.measure_variance` at every length ``N`` with a sample budget chosen for a target
relative standard error (a 64-sequence pilot run on its own stream estimates the spread; at least 256 sequences),
then compares the estimate with the reference:

```text
|estimate - expected| <= n_sigma * SE + rel_tol * |expected|          (default: 5 SE + 1%)
```

where SE is the batch-means standard error that ``measure_variance`` reports. A failure message gives, per N, the
estimate, its SE, the reference and the z-score, the configuration, and the ``rng`` value that reproduces the run.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers

import numpy as np

from varsim._common.seeding import child_sequence, resolve_seed
from varsim._common.validate import check_choice, check_int, check_int_grid, check_real

from ._rng import describe_seed
from .arrays import fn_name, to_numpy

__all__ = [
    "CheckResult",
    "STATISTICS",
    "check_statistic",
    "assert_statistic_matches",
    "assert_variance_matches",
    "assert_ipr_matches",
    "assert_mean_matches",
]

STATISTICS = {
    "var": ("var", "var_se", "Var(o_j)"),
    "ipr": ("ipr", "ipr_se", "E[sum w^2]"),
    "mean": ("mean", "mean_se", "E[o_j]"),
}
"""The statistics the checks measure: name -> (its field of the simulation result, its SE field, its label in
messages)."""
#: the statistics that are never negative (an expected value below 0 is a mistake in the reference)
_NON_NEGATIVE = ("var", "ipr")
_PILOT_SEQUENCES = 64
# the smallest measurement: 16 batch-means chunks of 16 sequences, so that chunk means of a skewed statistic
# (E[sum w^2] near the annealed edge) are close enough to normal for the 5 SE rule
_MIN_SEQUENCES = 256
_PILOT_KEY = 0x70696C6F  # the pilot's stream: child of the root, never equal to a (N, chunk, 1) stream of the run
_ROUND = 32  # budgets are multiples of 32: whole chunks for the batch-means SEs
#: the options of :func:`check_statistic` that go to :func:`varsim.sim.measure_variance`
_SAMPLING = ("d_k", "d_v", "query", "query_norm", "key_dist", "value_dist", "value_mean", "value_scale",
             "coordinate")


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The outcome of one length of one Monte Carlo check (:func:`check_statistic` returns one per length).

    Parameters
    ----------
    statistic : {"var", "ipr", "mean"}
        The statistic measured (a key of :data:`STATISTICS`).
    n : int
        The sequence length.
    estimate, se : float
        The estimate and its batch-means standard error from ``measure_variance`` (nan when the attention returned
        non-finite values, see ``note``).
    expected : float
        The reference value at this length.
    z : float
        ``(estimate - expected) / se``.
    tolerance : float
        ``n_sigma * se + rel_tol * |expected|``.
    passed : bool
        ``|estimate - expected| <= tolerance``.
    n_sequences : int
        The budget used.
    capped : bool
        Whether ``max_sequences`` or ``max_work`` limited the budget below the target.
    rng : str
        Recreates the run (pass it back as ``rng=``).
    note : str
        Why the length failed without a full measurement ("" otherwise).
    seed : str
        The ``measure_variance`` seed of the numbers reported (the pilot's stream when the check stopped early).
    """

    statistic: str
    n: int
    estimate: float
    se: float
    expected: float
    z: float
    tolerance: float
    passed: bool
    n_sequences: int
    capped: bool
    rng: str
    note: str = ""
    seed: str = ""

    def describe(self) -> str:
        """One line: estimate +- SE, reference, z-score, verdict."""
        label = STATISTICS[self.statistic][2]
        if self.note:
            return f"N={self.n}: {self.note}  FAIL"
        verdict = "ok" if self.passed else f"|diff| {abs(self.estimate - self.expected):.4g} > tolerance " \
                                           f"{self.tolerance:.4g}  FAIL"
        capped = ", budget capped" if self.capped else ""
        return (f"N={self.n}: {label} = {self.estimate:.6g} +- {self.se:.3g} (SE, {self.n_sequences} sequences"
                f"{capped}), expected {self.expected:.6g}, z = {self.z:+.1f}; {verdict}")


class _NonFinite(Exception):
    pass


class _Guarded:
    """Wraps the attention under test: outputs of any array library come back as NumPy (else a ``TypeError``
    naming the function); non-finite outputs stop the run with a reportable reason."""

    def __init__(self, fn):
        self.fn = fn
        self.__qualname__ = fn_name(fn)

    def __call__(self, q, K, V):
        out = self.fn(q, K, V)
        if isinstance(out, tuple) and len(out) == 2:
            out = tuple(to_numpy(a, fn=self.fn, what=what)[0] for a, what in zip(out, ("output", "weights")))
        elif not isinstance(out, tuple):
            out = to_numpy(out, fn=self.fn, what="output")[0]
        parts = out if isinstance(out, tuple) else (out,)
        for label, arr in zip(("o", "w"), parts):
            if not np.all(np.isfinite(arr)):
                bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
                raise _NonFinite(
                    f"attention_fn returned {bad} non-finite value(s) in {label} out of {arr.size} (an overflow? a "
                    f"softmax without max-subtraction overflows at large logits)"
                )
        return out


def _expected_at(expected, n: int, statistic: str) -> float:
    value = expected(n) if callable(expected) else expected
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.item()
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)) or not math.isfinite(value):
        raise ValueError(f"expected must be a finite real number or a callable n -> number, got {value!r} at N={n}")
    if statistic in _NON_NEGATIVE and value < 0:
        raise ValueError(f"expected must be >= 0 for {STATISTICS[statistic][2]}, which is never negative, got "
                         f"{value!r} at N={n}")
    return float(value)


def _budget(statistic, pilot, expected, rel_se, cap) -> tuple[int, bool]:
    """Sequences for a target SE of ``rel_se`` times the statistic's scale, from the pilot's SE (SE ~ 1/sqrt(M))."""
    field, se_field, _ = STATISTICS[statistic]
    est, se = float(getattr(pilot, field)[0]), float(getattr(pilot, se_field)[0])
    if statistic == "mean":  # a mean near 0 has no relative scale: compare with the output's own spread
        scale = max(abs(expected), math.sqrt(max(float(pilot.var_coord[0]), 0.0)))
    else:
        scale = abs(expected) if expected != 0 else abs(est)
    if not (se > 0 and scale > 0 and math.isfinite(se)):
        want = _MIN_SEQUENCES
    else:
        want = _PILOT_SEQUENCES * (se / (rel_se * scale)) ** 2
        want = int(math.ceil(max(want, _MIN_SEQUENCES) / _ROUND) * _ROUND)
    return (cap, True) if want > cap else (want, False)


def check_statistic(
    attention_fn,
    statistic: str,
    expected,
    n,
    *,
    d_k: int = 16,
    d_v: int = 8,
    query: str = "fixed",
    query_norm: float | None = None,
    key_dist: str = "gaussian",
    value_dist: str = "gaussian",
    value_mean: float = 0.0,
    value_scale: float = 1.0,
    coordinate: int = 0,
    rel_se: float = 0.03,
    n_sigma: float = 5.0,
    rel_tol: float = 0.01,
    n_sequences: int | None = None,
    max_sequences: int = 20_000,
    max_work: float = 5e7,
    early_stop: float | None = 10.0,
    rng=0,
) -> list[CheckResult]:
    """Measure ``statistic`` of ``attention_fn`` at each length in ``n`` and compare it with ``expected``.

    Parameters
    ----------
    attention_fn : callable
        ``attention_fn(q (S, d_k), K (S, N, d_k), V (S, N, d_v)) -> o (S, d_v)`` or ``(o, w (S, N))``.
    statistic : {"var", "ipr", "mean"}
        Pooled ``Var(o_j)``, ``E[sum w^2]`` (needs the weights) or the mean of ``o_coordinate``.
    expected : float or callable
        The reference: a number, or ``expected(N) -> number`` (e.g. ``lambda n: expected_ipr(n, 1.0)``).
    n : int or sequence of int
        Sequence lengths.
    d_k, d_v, query, query_norm, key_dist, value_dist, value_mean, value_scale, coordinate : optional
        Sampling options of :func:`varsim.sim.measure_variance`.
    rel_se : float
        Target standard error relative to ``|expected|`` (for ``"mean"``: to ``max(|expected|, sd(o_j))``). This
        is the knob that trades time for power: the budget grows as ``1/rel_se^2`` and the smallest relative error
        detected with 95% probability is about ``(n_sigma + 1.645) rel_se + rel_tol`` (measured in
        ``benchmarks/bench_testing_power.py``; table in the docs, "Test your attention").
    n_sigma, rel_tol : float
        Tolerance ``n_sigma * SE + rel_tol * |expected|``.
    n_sequences : int, optional
        A fixed budget (>= 32) instead of the pilot-based one.
    max_sequences, max_work : int, float
        Caps on the budget: sequences, and ``sequences * N * (d_k + d_v)`` numbers drawn.
    early_stop : float or None
        When the pilot (64 sequences, 16 batch-means chunks) is already more than ``early_stop`` of its own SEs off
        and outside the tolerance, the length fails on the pilot alone (``note`` says so) instead of spending the
        budget. None always runs the full budget.
    rng : int, SeedSequence or Generator
        Seed of the run (SPEC 7). Each length's numbers depend only on ``rng`` and that length.

    Returns
    -------
    list of CheckResult
        One per length (increasing N). Nothing is asserted: see :func:`assert_statistic_matches`.

    See Also
    --------
    assert_variance_matches, assert_ipr_matches, assert_mean_matches : the checks as assertions.
    varsim.testing.check_against_reference : the same-draw check, which catches smaller bugs at less cost.

    Examples
    --------
    >>> from varsim.testing import attention_fn, check_statistic, softmax_ipr
    >>> results = check_statistic(attention_fn("softmax"), "ipr", lambda n: softmax_ipr(n, d_k=16), [32, 128])
    >>> [(r.n, r.passed) for r in results]
    [(32, True), (128, True)]
    """
    if not callable(attention_fn):
        raise ValueError(f"attention_fn must be callable, got {type(attention_fn).__name__}")
    statistic = check_choice("statistic", statistic, tuple(STATISTICS))
    if not callable(expected):
        _expected_at(expected, 1, statistic)  # validate a plain number up front
    grid = sorted(set(int(v) for v in check_int_grid("n", n, minimum=1)))
    rel_se = check_real("rel_se", rel_se, minimum=0.0, maximum=1.0, strict_min=True)
    n_sigma = check_real("n_sigma", n_sigma, minimum=0.0, strict_min=True)
    rel_tol = check_real("rel_tol", rel_tol, minimum=0.0)
    if n_sequences is not None:
        n_sequences = check_int("n_sequences", n_sequences, minimum=_ROUND)
    max_sequences = check_int("max_sequences", max_sequences, minimum=_ROUND)
    max_work = check_real("max_work", max_work, minimum=0.0, strict_min=True)
    if early_stop is not None:
        early_stop = check_real("early_stop", early_stop, minimum=n_sigma)
    root = resolve_seed(None, rng)
    sampling = dict(d_k=d_k, d_v=d_v, query=query, query_norm=query_norm, key_dist=key_dist, value_dist=value_dist,
                    value_mean=value_mean, value_scale=value_scale, coordinate=coordinate)
    fn = _Guarded(attention_fn)
    tolerance = {"n_sigma": n_sigma, "rel_tol": rel_tol, "early_stop": early_stop}
    budget = {"n_sequences": n_sequences, "max_sequences": max_sequences, "max_work": max_work, "rel_se": rel_se}
    return [_check_length(fn, statistic, n_keys, _expected_at(expected, n_keys, statistic), root, sampling,
                          **tolerance, **budget) for n_keys in grid]


def _check_length(fn, statistic: str, n_keys: int, ref: float, root, sampling: dict, *, n_sigma: float,
                  rel_tol: float, early_stop, n_sequences, max_sequences: int, max_work: float,
                  rel_se: float) -> CheckResult:
    """:func:`check_statistic` at one length: the budget (a pilot run on its own stream unless ``n_sequences`` is
    given; a pilot already far off ends the check), the measurement on the root stream (reproducible with
    ``measure_variance(..., seed=root)``), the verdict."""
    from varsim.sim import measure_variance

    seed_text = describe_seed(root)
    field, se_field, _ = STATISTICS[statistic]
    budget, capped = _PILOT_SEQUENCES, False  # what had run when a non-finite output stops the check
    try:
        if n_sequences is None:
            width = int(sampling["d_k"]) + int(sampling["d_v"])  # numbers drawn per key
            cap = max(_ROUND, min(max_sequences, int(max_work // (n_keys * width))))
            pilot = measure_variance(fn, [n_keys], n_sequences=_PILOT_SEQUENCES,
                                     seed=child_sequence(root, _PILOT_KEY), **sampling)
            _need_field(pilot, statistic)
            est, se = float(getattr(pilot, field)[0]), float(getattr(pilot, se_field)[0])
            if early_stop is not None and se > 0 and abs(est - ref) > max(early_stop * se,
                                                                          n_sigma * se + rel_tol * abs(ref)):
                return CheckResult(
                    statistic, n_keys, est, se, ref, (est - ref) / se, n_sigma * se + rel_tol * abs(ref), False,
                    _PILOT_SEQUENCES, False, seed_text, seed=describe_seed(child_sequence(root, _PILOT_KEY)),
                    note=f"stopped after the pilot: {STATISTICS[statistic][2]} = {est:.6g} +- {se:.3g} (SE, "
                         f"{_PILOT_SEQUENCES} sequences), expected {ref:.6g}, z = {(est - ref) / se:+.1f} "
                         f"(|z| > early_stop = {early_stop:g})")
            budget, capped = _budget(statistic, pilot, ref, rel_se, cap)
        else:
            budget, capped = n_sequences, False
        res = measure_variance(fn, [n_keys], n_sequences=budget, seed=root, **sampling)
        _need_field(res, statistic)
    except _NonFinite as exc:
        return CheckResult(statistic, n_keys, math.nan, math.nan, ref, math.nan, math.nan, False, budget, capped,
                           seed_text, note=str(exc))
    est, se = float(getattr(res, field)[0]), float(getattr(res, se_field)[0])
    tol = n_sigma * se + rel_tol * abs(ref)
    diff = est - ref
    z = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    return CheckResult(statistic, n_keys, est, se, ref, z, tol, bool(abs(diff) <= tol), budget, capped, seed_text)


def _need_field(res, statistic):
    if getattr(res, STATISTICS[statistic][0]) is None:
        raise ValueError(f"statistic {statistic!r} needs attention_fn to return (o, w) with the weights w (S, N)")


def assert_statistic_matches(attention_fn, statistic: str, expected, n, **options) -> list[CheckResult]:
    """Assert that ``statistic`` of ``attention_fn`` matches ``expected`` at every length in ``n``.

    Parameters
    ----------
    attention_fn : callable
        As for :func:`check_statistic`.
    statistic : {"var", "ipr", "mean"}
        The statistic (a key of :data:`STATISTICS`).
    expected : float or callable
        The reference: a number, or ``expected(N) -> number``.
    n : int or sequence of int
        Sequence lengths.
    **options
        Those of :func:`check_statistic`.

    Returns
    -------
    list of CheckResult
        The results, when every length passes.

    Raises
    ------
    AssertionError
        When any length fails: the message gives, per N, the estimate, its SE, the reference and the z-score, the
        configuration, and the ``rng`` that reproduces the run.

    See Also
    --------
    check_statistic : the results without the assertion.
    """
    results = check_statistic(attention_fn, statistic, expected, n, **options)
    failed = [r for r in results if not r.passed]
    if failed:
        raise AssertionError(_failure_message(attention_fn, statistic, results, failed, options))
    return results


def _failure_message(attention_fn, statistic, results, failed, options) -> str:
    label = STATISTICS[statistic][2]
    defaults = {k: p.default for k, p in inspect.signature(check_statistic).parameters.items()}
    n_sigma, rel_tol = (options.get(k, defaults[k]) for k in ("n_sigma", "rel_tol"))
    sampling = {k: options.get(k, defaults[k]) for k in _SAMPLING}
    config = ", ".join(f"{k}={v!r}" for k, v in sampling.items())
    first = failed[0]
    lines = [
        f"{label} of attention_fn {fn_name(attention_fn)} does not match the reference at {len(failed)} of "
        f"{len(results)} length(s) (tolerance {n_sigma:g} SE + {100 * rel_tol:g}% of the reference):",
        *("  " + r.describe() for r in results),
        f"configuration: {config}",
        f"reproduce: rerun with rng={first.rng}, or varsim.sim.measure_variance(attention_fn, [{first.n}], {config}, "
        f"n_sequences={first.n_sequences}, seed={first.seed or first.rng})",
    ]
    return "\n".join(lines)


def assert_variance_matches(attention_fn, expected, n, **options) -> list[CheckResult]:
    """Assert that the pooled output variance ``Var(o_j)`` of ``attention_fn`` matches ``expected`` at every length.

    The tolerance is 5 SE + 1% of the reference by default.

    Parameters
    ----------
    attention_fn : callable
        ``attention_fn(q (S, d_k), K (S, N, d_k), V (S, N, d_v)) -> o (S, d_v)`` or ``(o, w)``.
    expected, n, **options
        As for :func:`assert_statistic_matches`: the reference, the lengths, and the options of
        :func:`check_statistic` (sampling, budget, tolerance, ``rng``).

    Returns
    -------
    list of CheckResult
        The results, when every length passes (else ``AssertionError``, with a message that says where and how to
        reproduce it).

    See Also
    --------
    softmax_variance : the exact reference for softmax.
    check_statistic : the results without the assertion.

    Examples
    --------
    >>> from varsim.testing import assert_variance_matches, attention_fn, softmax_variance
    >>> results = assert_variance_matches(attention_fn("softmax", tau=1.0), lambda n: softmax_variance(n, d_k=16),
    ...                                   [64, 256], d_k=16, d_v=8, rng=0)
    >>> all(r.passed for r in results)
    True
    """
    return assert_statistic_matches(attention_fn, "var", expected, n, **options)


def assert_ipr_matches(attention_fn, expected, n, **options) -> list[CheckResult]:
    """Assert that ``E[sum_i w_i^2]`` of ``attention_fn`` matches ``expected`` at every length.

    Parameters
    ----------
    attention_fn : callable
        Must return ``(o, w)`` with the weights ``w (S, N)``.
    expected, n, **options
        As for :func:`assert_statistic_matches`: the reference, the lengths, and the options of
        :func:`check_statistic`.

    Returns
    -------
    list of CheckResult
        The results, when every length passes (else ``AssertionError``).

    See Also
    --------
    softmax_ipr : the exact reference for softmax.

    Examples
    --------
    >>> from varsim.testing import assert_ipr_matches, attention_fn, softmax_ipr
    >>> len(assert_ipr_matches(attention_fn("softmax"), lambda n: softmax_ipr(n, d_k=16), [16, 64]))
    2
    """
    return assert_statistic_matches(attention_fn, "ipr", expected, n, **options)


def assert_mean_matches(attention_fn, expected, n, **options) -> list[CheckResult]:
    """Assert that the mean of the output coordinate ``o_coordinate`` matches ``expected`` at every length.

    For weights that sum to 1 the reference is ``value_mean``; the budget targets an SE of ``rel_se`` times
    ``max(|expected|, sd(o_j))``.

    Parameters
    ----------
    attention_fn : callable
        As for :func:`check_statistic`.
    expected, n, **options
        As for :func:`assert_statistic_matches`: the reference, the lengths, and the options of
        :func:`check_statistic` (``coordinate`` picks the coordinate).

    Returns
    -------
    list of CheckResult
        The results, when every length passes (else ``AssertionError``).

    Examples
    --------
    >>> from varsim.testing import assert_mean_matches, attention_fn
    >>> len(assert_mean_matches(attention_fn("softmax"), 0.5, [16, 64], value_mean=0.5))
    2
    """
    return assert_statistic_matches(attention_fn, "mean", expected, n, **options)
