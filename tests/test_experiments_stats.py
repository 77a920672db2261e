"""Intervals and paired tests of varsim.experiments.stats against independent references."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from varsim.experiments import stats


def test_wilson_matches_published_values():
    """Catches a Wald interval (8/10 -> (0.552, 1.048)) or a wrong z (e.g. 1.645 for 95%).

    Reference: Wilson interval for 8/10 at 95%: (0.4902, 0.9433) (Newcombe 1998, method 3)."""
    lo, hi = stats.wilson_interval(8, 10)
    assert lo == pytest.approx(0.49016, abs=5e-5)
    assert hi == pytest.approx(0.94332, abs=5e-5)
    # Edges: the interval touches 0 (1) exactly when there are no successes (failures).
    lo0, hi0 = stats.wilson_interval(0, 20)
    assert lo0 == 0.0 and hi0 == pytest.approx(3.8415 / (20 + 3.8415), rel=1e-4)
    lo1, hi1 = stats.wilson_interval(20, 20)
    assert hi1 == 1.0 and lo1 == pytest.approx(1 - 3.8415 / (20 + 3.8415), rel=1e-4)


@given(n=st.integers(1, 5000), frac=st.floats(0, 1), conf=st.sampled_from([0.5, 0.8, 0.95, 0.999]))
@settings(max_examples=40)
def test_wilson_matches_scipy_binomtest(n, frac, conf):
    """The vectorised formula equals scipy's Wilson interval (no continuity correction) at every count and level;
    catches a continuity-corrected or Wald interval, a one-sided quantile, or clipping that moves the bounds."""
    k = int(round(frac * n))
    ref = sps.binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    lo, hi = stats.wilson_interval(k, n, confidence=conf)
    assert lo == pytest.approx(ref.low, rel=1e-9, abs=1e-12)
    assert hi == pytest.approx(ref.high, rel=1e-9, abs=1e-12)


@given(n=st.integers(1, 5000), frac=st.floats(0, 1), conf=st.sampled_from([0.5, 0.9, 0.95, 0.99]))
@settings(max_examples=40)
def test_wilson_contains_estimate_and_vectorizes(n, frac, conf):
    k = int(round(frac * n))
    lo, hi = stats.wilson_interval(k, n, confidence=conf)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    los, his = stats.wilson_interval(np.array([k, k]), np.array([n, n]), confidence=conf)
    assert los[0] == lo and his[1] == hi


def test_wilson_coverage_is_nominal():
    """Coverage of the 95% interval at p = 0.3, n = 60 over 20000 binomial draws is close to 0.95.

    A Wald interval has ~0.94 here and a wrong z (1.645) ~0.90; tolerance is 5 SE of the coverage."""
    rng = np.random.default_rng(7)
    k = rng.binomial(60, 0.3, size=20000)
    lo, hi = stats.wilson_interval(k, np.full_like(k, 60))
    cover = np.mean((lo <= 0.3) & (0.3 <= hi))
    # The exact coverage for Wilson at (60, 0.3) is 0.9536 (sum of binomial pmf over covered k).
    covered = [j for j in range(61) if stats.wilson_interval(j, 60)[0] <= 0.3 <= stats.wilson_interval(j, 60)[1]]
    exact = sps.binom.pmf(covered, 60, 0.3).sum()
    assert abs(exact - 0.95) < 0.02
    se = math.sqrt(exact * (1 - exact) / k.size)
    assert abs(cover - exact) <= 5 * se


def test_wilson_rejects_bad_counts():
    for k, n in [(-1, 10), (11, 10), (1, 0), (0.5, 3), (math.nan, 3), ("a", 3), (1, math.inf)]:
        with pytest.raises(ValueError):
            stats.wilson_interval(k, n)
    with pytest.raises(ValueError, match="confidence"):
        stats.wilson_interval(1, 2, confidence=1.0)


def test_t_interval_matches_scipy():
    """Catches a normal quantile (1.96) in place of Student t with n-1 df, or ddof=0."""
    x = np.array([0.71, 0.64, 0.80, 0.77, 0.69])
    res = stats.t_interval(x)
    lo, hi = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert res["ci_low"] == pytest.approx(lo, rel=1e-12)
    assert res["ci_high"] == pytest.approx(hi, rel=1e-12)
    assert res["n"] == 5 and res["mean"] == pytest.approx(x.mean())
    one = stats.t_interval([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["ci_low"])


def test_t_interval_series_takes_each_column_over_the_seeds_that_have_a_value():
    """Per column the t interval of that column's values (None: a seed without one) cut to [0, 1], and a column with
    none is None with n 0. Catches a None counted as a value, a column taken over one seed or the wrong axis, and an
    uncut interval."""
    rows = [[0.71, 0.99, None], [0.64, None, None], [0.80, 0.98, None], [0.77, 0.999, None]]
    out = stats.t_interval_series(rows, keys=("mean", "ci_low", "ci_high", "n"))
    first = stats.t_interval([0.71, 0.64, 0.80, 0.77])
    assert out["mean"][0] == first["mean"] and out["ci_low"][0] == first["ci_low"] and out["n"] == [4, 3, 0]
    assert stats.t_interval([0.99, 0.98, 0.999])["ci_high"] > 1.0 and out["ci_high"][1] == 1.0
    assert out["mean"][2] is None and out["ci_low"][2] is None


def test_paired_t_matches_scipy_ttest_rel():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=7), rng.normal(size=7)
    res = stats.paired_difference(a, b)
    ref = sps.ttest_rel(a, b)
    assert res["p_ttest"] == pytest.approx(ref.pvalue, rel=1e-10)
    assert res["mean_diff"] == pytest.approx(np.mean(a - b))
    assert res["ci_low"] <= res["mean_diff"] <= res["ci_high"]
    # Identical differences: degenerate but well defined.
    assert stats.paired_difference([1, 1, 1], [1, 1, 1])["p_ttest"] == 1.0
    assert math.isnan(stats.paired_difference([2, 2, 2], [1, 1, 1])["p_ttest"])
    assert stats.paired_difference([2, 2, 2], [1, 1, 1])["p_signflip"] == pytest.approx(2 / 8)


def _brute_sign_flip(d):
    obs = abs(sum(d))
    flips = [abs(sum(s * x for s, x in zip(signs, d))) for signs in itertools.product((1, -1), repeat=len(d))]
    return sum(f >= obs - 1e-9 for f in flips) / len(flips)


@given(st.lists(st.floats(-1, 1, allow_nan=False).map(lambda v: round(v, 3)), min_size=1, max_size=14))
@settings(max_examples=30)
def test_sign_flip_is_exact_enumeration(d):
    """Against a plain enumeration; catches a one-sided statistic or a count that drops ties."""
    assert stats.sign_flip_pvalue(d) == pytest.approx(_brute_sign_flip(d), abs=1e-12)


def test_sign_flip_known_values():
    # All five differences positive: only the all-plus and all-minus flips are as extreme.
    assert stats.sign_flip_pvalue([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(2 / 32)
    assert stats.sign_flip_pvalue([0.0, 0.0, 0.0]) == 1.0
    # Block enumeration path (n > 12) against the brute force on a fixed vector.
    d = list(np.round(np.random.default_rng(1).normal(size=15), 3))
    assert stats.sign_flip_pvalue(d) == pytest.approx(_brute_sign_flip(d), abs=1e-12)
    # A rounding residue of an exact 0 is a tie with every assignment: p = 1, not a small p-value.
    assert stats.sign_flip_pvalue([0.1, 0.2, -0.3, 0.0]) == 1.0
    assert stats.sign_flip_pvalue([1.5]) == 1.0
    # Monte Carlo path beyond EXACT_SIGN_FLIP_MAX: reproducible and close to the large-n normal limit.
    big = np.full(stats.EXACT_SIGN_FLIP_MAX + 4, 0.1)
    p1 = stats.sign_flip_pvalue(big, seed=5)
    assert p1 == stats.sign_flip_pvalue(big, seed=5)
    assert p1 < 1e-3


def test_sign_flip_monte_carlo_agrees_with_enumeration():
    """Beyond the exact range the Monte Carlo p-value is within 5 SE of the enumerated one; catches a one-sided
    count, a statistic without the absolute value, or resamples that never flip signs."""
    d = np.random.default_rng(4).normal(0.3, 1.0, size=stats.EXACT_SIGN_FLIP_MAX + 2)
    signs = 1 - 2 * ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1)  # every assignment, (2**n, n)
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-9)
    p = stats.sign_flip_pvalue(d, n_random=1 << 14, seed=1)
    se = math.sqrt(exact * (1 - exact) / (1 << 14))
    assert abs(p - exact) <= 5 * se + 1e-4


def test_pooled_bernoulli():
    res = stats.pooled_bernoulli([8, 9, 10], [10, 10, 10])
    assert res["successes"] == 27 and res["trials"] == 30
    assert (res["ci_low"], res["ci_high"]) == stats.wilson_interval(27, 30)
    with pytest.raises(ValueError):
        stats.pooled_bernoulli([11], [10])
