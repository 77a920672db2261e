"""The theory functions broadcast over (N, beta): a table from one call equals the scalar calls element by element
(bitwise: the same quadrature per element), shapes follow NumPy's rules, and bad grids name the argument.

Catches a table whose rows are mixed up (the beta of one row used for another), a beta grid that silently takes only
its first value, and phase boundaries that disagree with :func:`phase`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from varsim.theory import (
    BETA_MAX,
    decay_exponent,
    effective_exponent,
    expected_ipr,
    frozen_ipr,
    ipr_and_exponent,
    ipr_second_moment,
    phase,
    phase_boundaries,
)

NS = np.array([2.0, 16.0, 1000.0, 1e12])
BETAS = np.array([0.0, 5e-5, 0.7, 2.0, 3.0])


@pytest.mark.parametrize("fn", [expected_ipr, decay_exponent, ipr_second_moment, effective_exponent, frozen_ipr])
def test_table_equals_scalar_calls(fn):
    betas = BETAS[BETAS > 0] if fn is frozen_ipr else BETAS
    table = fn(NS, betas[:, None])
    assert table.shape == (len(betas), len(NS))
    want = np.array([[fn(float(n), float(b)) for n in NS] for b in betas])
    assert np.array_equal(table, want)


def test_scalars_give_floats_and_pairs_share_one_quadrature():
    assert isinstance(expected_ipr(16, 1.0), float) and isinstance(decay_exponent(16.0, 2), float)
    e, g = ipr_and_exponent(NS, BETAS[:, None])
    assert np.array_equal(e, expected_ipr(NS, BETAS[:, None]))
    assert np.array_equal(g, decay_exponent(NS, BETAS[:, None]))
    # a beta array with scalar n: one value per beta, in beta's order (not sorted, not deduplicated)
    betas = [3.0, 1.0, 3.0]
    assert np.array_equal(expected_ipr(64, betas), [expected_ipr(64, b) for b in betas])


def test_phase_table_and_boundaries_agree():
    lo, hi = phase_boundaries(2.0)
    assert (lo, hi) == (2.0, 6.0)
    labels = phase(np.exp([lo - 0.01, lo + 0.01, hi - 0.01, hi + 0.01]), 2.0)
    assert list(labels) == ["frozen", "intermediate", "intermediate", "annealed"]
    lo_arr, hi_arr = phase_boundaries(BETAS)
    assert lo_arr.shape == BETAS.shape and np.allclose(hi_arr, 3 * lo_arr)
    table = phase(NS, BETAS[:, None])
    assert table.shape == (len(BETAS), len(NS))
    assert all(table[i, j] == phase(float(n), float(b)) for i, b in enumerate(BETAS) for j, n in enumerate(NS))


def test_the_crossover_is_broad_at_finite_beta():
    """Just past 3 beta^2/2 (beta = 2, N = 4096) the mean IPR is still well below e^{beta^2}/N (the docstring's
    number), so the boundary is not where the asymptote is reached."""
    ratio = expected_ipr(4096, 2.0) / (math.exp(4.0) / 4096)
    assert phase(4096, 2.0) == "annealed" and 0.70 < ratio < 0.75


@pytest.mark.parametrize("n, beta, words", [
    ([1, 2, 3], [1.0, 2.0], ("n", "beta", "broadcast")),
    ([16], [1.0, 2 * BETA_MAX], ("beta",)),
    ([0.5], 1.0, ("n",)),
    ([16], [1.0, float("nan")], ("beta",)),
])
def test_bad_grids_name_the_argument(n, beta, words):
    with pytest.raises(ValueError) as info:
        expected_ipr(n, beta)
    assert all(w in str(info.value) for w in words), str(info.value)
