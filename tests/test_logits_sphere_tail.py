"""The logits sampler's sphere law where the physics lives (issue 48 item 3 for the laws of issue 47): the tail
probabilities of its logits against the exact CDF of ``T = sqrt(d) cos(angle)`` with binomial standard errors, and
the maximum of N draws against ``F(x)^N``, through the kernel the simulator runs (``_kernels_tail.logits_maxima``:
the logits sampler with ``key_dist`` code 3, ``beta = 1``).

Exact law: ``(1 + T/sqrt d)/2 ~ Beta((d-1)/2, (d-1)/2)``, so ``P(T >= t) = I_{(1 - t/sqrt d)/2}((d-1)/2, (d-1)/2)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from varsim.sim import _kernels_tail as KT
from varsim.sim._kernel_args import LogitsSampler
from varsim.sim._kernels_rng import GAUSSIAN, SPHERE
from varsim.sim._rngstate import new_state
from varsim.sim._ziggurat import kernel_tables

TABLES = kernel_tables()
INV_STEP, N_BINS = 8.0, 64  # |T| binned on 1/8 up to 8 (T <= sqrt(d) < 8 for d <= 63)


def _sf(t, d):
    """``P(T >= t)`` of the sphere law in dimension d."""
    a = 0.5 * (d - 1)
    return special.betainc(a, a, np.clip(0.5 * (1.0 - np.asarray(t) / math.sqrt(d)), 0.0, 1.0))


def _draws(d, n_keys, n_seq, seed):
    p = LogitsSampler(n_keys, 1.0, False, d, 1.0, GAUSSIAN, np.empty(0), 1.0, SPHERE)
    return KT.logits_maxima(new_state(seed, d), p, n_seq, TABLES, INV_STEP, N_BINS)


def _tail_z_scores(hist, d):
    """Per threshold ``t = b/8`` (both signs): (count of T >= t or T <= -t - expected) / binomial SE, where the
    expectation is at least 5 (smaller ones have too little power to matter and no normal approximation)."""
    n = int(hist.sum())
    z = []
    for row in (0, 1):
        above = np.cumsum(hist[row, ::-1])[::-1][1:N_BINS]  # count of |T| >= b/8 with that sign, b = 1..63
        q = _sf(np.arange(1, N_BINS) / INV_STEP, d)
        keep = n * q >= 5.0
        z.extend((above[keep] - n * q[keep]) / np.sqrt(n * q[keep] * (1.0 - q[keep])))
    return np.array(z)


@pytest.mark.parametrize("d", [3, 8, 24])
def test_sphere_logit_tails_match_the_exact_cdf(d):
    """2^21 logits of the logits sampler's sphere law: every tail count within 5 binomial SE of ``n P(T >= t)``
    (thresholds 1/8 apart on both sides), and the maximum of N = 4096 draws (512 maxima) gives ``U = F(M)^N``
    uniform (KS p >= 1e-4) with ``E[-ln U] = 1`` within 5 SE. Seen failing on a planted defect: the squares summed
    from the second coordinate (``z_1/|z_{2..d}|``, heavy-tailed) fails every d."""
    n_keys, n_seq = 4096, 512
    maxima, hist = _draws(d, n_keys, n_seq, seed=47)
    z = _tail_z_scores(hist, d)
    assert z.size > 20 and np.max(np.abs(z)) <= 5.0, np.max(np.abs(z))
    u = np.exp(n_keys * np.log1p(-_sf(maxima, d)))  # F(M)^N
    assert stats.kstest(u, "uniform").pvalue >= 1e-4
    assert abs(np.mean(-np.log(u)) - 1.0) <= 5.0 / math.sqrt(u.size)


def test_tail_check_has_power():
    """The statistic above rejects a law 1% too wide in its tail: logits drawn as ``1.01 T`` (NumPy, the exact law
    scaled) give tail z-scores beyond 5 at d = 8 on 2^22 draws, while the exact law drawn the same way passes."""
    rng = np.random.default_rng(5)
    d, n = 8, 1 << 22
    a = 0.5 * (d - 1)
    t = math.sqrt(d) * (2.0 * rng.beta(a, a, n) - 1.0)
    for scale, fails in ((1.0, False), (1.01, True)):
        x = np.minimum(np.abs(scale * t) * INV_STEP, N_BINS).astype(np.int64)
        hist = np.stack([np.bincount(x[t >= 0], minlength=N_BINS + 1), np.bincount(x[t < 0], minlength=N_BINS + 1)])
        assert (np.max(np.abs(_tail_z_scores(hist, d))) > 5.0) == fails
