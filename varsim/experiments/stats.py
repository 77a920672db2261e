"""Interval estimates and paired tests for comparing trained variants over seeds.

The reproduction trains every normalization with the same seeds and the same data stream, so the
natural unit of replication is the seed and comparisons are *paired* by seed:

- :func:`wilson_interval` -- score interval for one accuracy measured on ``n`` test examples
  (Bernoulli counts; well behaved near 0 and 1, where the Wald interval collapses).
- :func:`t_interval` -- mean over seeds with a Student-t interval (seed-to-seed variation
  includes the evaluation noise of each seed, so no separate binomial term is needed).
- :func:`paired_difference` -- mean paired difference over seeds with its t interval, the paired
  t-test p-value and the exact sign-flip (randomization) p-value. The t-test assumes roughly normal
  differences; the sign-flip test assumes only that each difference is symmetric about 0 under the
  null, but with ``n`` seeds its smallest two-sided p-value is ``2 / 2**n`` (0.0625 for 5 seeds).
- :func:`pooled_bernoulli` -- all seeds' test examples pooled into one Wilson interval; this
  treats seeds as exchangeable and ignores seed-to-seed variation, so it is a description of the
  pooled data, not the interval to compare variants with.

The Student-t quantiles, the t-test and the sign-flip enumeration are SciPy's (``scipy.stats``); the Wilson
interval is varsim's one vectorised implementation, :func:`varsim._common.intervals.wilson_interval` (re-exported
here and by ``varsim.train``), checked against ``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` in the
tests and many times faster on arrays of counts (``benchmarks/bench_wilson.py``). Log-log slope fits live in
``varsim._common.fits``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

from varsim._common.intervals import wilson_interval
from varsim._common.seeding import SEED_DEFAULT, child_generator, resolve_seed
from varsim._common.validate import check_finite_array, check_real

__all__ = [
    "wilson_interval",
    "t_interval",
    "sign_flip_pvalue",
    "paired_t_pvalue",
    "paired_difference",
    "pooled_bernoulli",
    "holm",
    "clip_interval",
    "t_interval_series",
]

#: Largest number of paired differences for which the sign-flip test enumerates all 2**n flips (2**16 takes about
#: 2 s with scipy; the reproduction has 6).
EXACT_SIGN_FLIP_MAX = 16


def _check_confidence(confidence) -> float:
    c = check_real("confidence", confidence, minimum=0.0, strict_min=True)
    if c >= 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _sample(name: str, values, *, minimum: int = 1) -> np.ndarray:
    return check_finite_array(name, values, ndim=1, min_size=minimum)


def t_interval(values, *, confidence: float = 0.95) -> dict:
    """Mean of ``values`` (one per seed) with a two-sided Student-t interval.

    Returns ``{"n", "mean", "sd", "ci_low", "ci_high"}``; with a single value the spread is
    unknown and ``sd``, ``ci_low`` and ``ci_high`` are NaN.
    """
    confidence = _check_confidence(confidence)
    x = _sample("values", values)
    n = x.size
    mean = float(x.mean())
    if n < 2:
        return {"n": n, "mean": mean, "sd": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    sd = float(x.std(ddof=1))
    if sd == 0.0:  # every value equal: scipy refuses a zero scale, the interval is the point
        return {"n": n, "mean": mean, "sd": sd, "ci_low": mean, "ci_high": mean}
    low, high = _st.t.interval(confidence, n - 1, loc=mean, scale=sd / math.sqrt(n))
    return {"n": n, "mean": mean, "sd": sd, "ci_low": float(low), "ci_high": float(high)}


def paired_t_pvalue(differences) -> float:
    """Two-sided p-value of the paired t-test (one-sample t-test of the differences against 0).

    Differences that are all 0 give p = 1; identical non-zero differences (zero spread, the t statistic
    undefined) and fewer than two differences give NaN: the t-test has nothing to say there, and the sign-flip
    p-value still applies.
    """
    d = _sample("differences", differences)
    n = d.size
    if n < 2:
        return math.nan
    sd = float(d.std(ddof=1))
    mean = float(d.mean())
    if sd == 0.0 or sd <= 1e-14 * abs(mean):
        return 1.0 if mean == 0.0 else math.nan
    return float(_st.ttest_1samp(d, 0.0).pvalue)


def sign_flip_pvalue(differences, *, n_random: int = 1 << 16, seed=SEED_DEFAULT, rng=None) -> float:
    """Two-sided sign-flip (paired randomization) p-value for "the differences are symmetric about 0".

    The statistic is ``|sum d_i|``; the p-value is the fraction of sign assignments ``s`` with
    ``|sum s_i d_i| >= |sum d_i|``, counted with a tolerance of ``1e-9 sum |d_i|`` so that ties (e.g. identical
    ``|d_i|``) are not lost to rounding. ``scipy.stats.permutation_test`` (``permutation_type="samples"`` on the one
    sample of differences flips their signs) enumerates all ``2**n`` assignments up to
    :data:`EXACT_SIGN_FLIP_MAX` differences (exact, no randomness); beyond, ``n_random`` random assignments drawn
    from ``seed`` (or ``rng``, SPEC 7) plus the observed one are used (the standard Monte Carlo p-value).
    """
    d = _sample("differences", differences)
    root = resolve_seed(seed, rng)
    n = d.size
    if n == 1:  # both signs give the same |d|
        return 1.0
    exact = n <= EXACT_SIGN_FLIP_MAX
    if not exact:
        n_random = int(n_random)
        if n_random < 1:
            raise ValueError(f"n_random must be >= 1, got {n_random}")

    def abs_sum(x, axis):
        return np.abs(np.sum(x, axis=axis))

    res = _st.permutation_test((d,), abs_sum, permutation_type="samples", vectorized=True,
                               n_resamples=np.inf if exact else n_random, alternative="greater", batch=1 << 14,
                               rng=None if exact else child_generator(root, n))
    # Count the extreme assignments ourselves: scipy's tie tolerance is relative to the observed statistic, which
    # misses ties when that statistic is a rounding residue of an exact 0.
    tol = 1e-9 * max(float(np.abs(d).sum()), 1e-300)
    count = int(np.count_nonzero(res.null_distribution >= abs(float(d.sum())) - tol))
    if exact:
        return count / res.null_distribution.size
    return (count + 1) / (res.null_distribution.size + 1)


def paired_difference(treatment, control, *, confidence: float = 0.95) -> dict:
    """Paired comparison over seeds: ``treatment[i] - control[i]`` for each seed ``i``.

    Returns ``{"n", "mean_diff", "sd", "ci_low", "ci_high", "p_ttest", "p_signflip"}``: the mean
    difference with its Student-t interval, the two-sided paired t-test p-value and the exact
    two-sided sign-flip p-value (see the module docstring for what each assumes).
    """
    t = _sample("treatment", treatment)
    c = _sample("control", control)
    if t.shape != c.shape:
        raise ValueError(f"treatment and control must have the same length, got {t.size} and {c.size}")
    d = t - c
    ci = t_interval(d, confidence=confidence)
    return {
        "n": ci["n"],
        "mean_diff": ci["mean"],
        "sd": ci["sd"],
        "ci_low": ci["ci_low"],
        "ci_high": ci["ci_high"],
        "p_ttest": paired_t_pvalue(d),
        "p_signflip": sign_flip_pvalue(d),
    }


def pooled_bernoulli(successes, trials, *, confidence: float = 0.95) -> dict:
    """Pool Bernoulli counts (e.g. correct answers of every seed at one N) into one Wilson interval.

    Seeds are treated as exchangeable replicates of one experiment: the interval describes the
    pooled test examples and ignores seed-to-seed variation of the trained models.
    """
    k = np.asarray(successes).ravel()
    n = np.asarray(trials).ravel()
    if k.shape != n.shape or k.size == 0:
        raise ValueError("successes and trials must be non-empty and of the same length")
    wilson_interval(k, n, confidence=confidence)  # validates every (successes, trials) pair
    ks, ns = int(k.sum()), int(n.sum())
    lo, hi = wilson_interval(ks, ns, confidence=confidence)
    return {"successes": ks, "trials": ns, "accuracy": ks / ns, "ci_low": lo, "ci_high": hi}


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (same shape as ``pvalues``; NaN entries are left out of the family).

    The k-th smallest of m p-values is multiplied by m - k + 1, then a running maximum keeps the order; a hypothesis
    is rejected at level alpha when its adjusted p-value is <= alpha (family-wise error rate alpha).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    flat, res = p.ravel(), out.ravel()
    ok = np.flatnonzero(np.isfinite(flat))
    m = ok.size
    if m:
        order = ok[np.argsort(flat[ok], kind="stable")]
        adj = np.minimum(1.0, np.maximum.accumulate(flat[order] * (m - np.arange(m))))
        res[order] = adj
    return out


def clip_interval(d: dict, lo: float, hi: float) -> dict:
    """An accuracy lies in [0, 1] (a difference of two in [-1, 1]): a t interval reaching past that is cut there."""
    out = dict(d)
    for k in ("ci_low", "ci_high"):
        if out[k] is not None and math.isfinite(out[k]):
            out[k] = min(max(out[k], lo), hi)
    return out


def t_interval_series(rows, *, confidence: float = 0.95, keys=("mean", "sd", "ci_low", "ci_high")) -> dict:
    """Per column of ``rows`` (one row per seed, one column per N): :func:`t_interval` of the values the column has
    (None: a seed without one) cut to [0, 1]; returns ``{key: [value per column]}`` for ``keys`` (``"n"``: how many
    values; a column without any gives None, and ``n`` 0)."""
    empty = {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    cols = []
    for j in range(len(rows[0])):
        vals = [r[j] for r in rows if r[j] is not None]
        cols.append(clip_interval(t_interval(vals, confidence=confidence), 0.0, 1.0) if vals else empty)
    return {k: [c[k] for c in cols] for k in keys}
