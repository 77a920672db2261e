"""The theory's (N, beta) grids (``varsim.theory.ipr``): one vectorised quadrature per beta against the per-point
reference (``varsim.theory._ipr_reference``, the quadrature checked against mpmath and the N = 2 closed form), over
the whole domain: N from 1 to 1e300, beta from the small-beta cut (1e-4) to 100, across the phase boundaries.

Catches a vectorised path that drops accuracy somewhere (too few region-B nodes, a coarser u step, a window that
cuts the integrand's tails, a misplaced Gaussian for narrow beta), and a grid entry that depends on what else is in
the grid (it must equal the scalar call bit for bit).
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict

import numpy as np
import pytest

from varsim.theory import decay_exponent, expected_ipr, ipr_and_exponent, ipr_second_moment
from varsim.theory import ipr as ipr_module
from varsim.theory._ipr_reference import reference_ipr_and_exponent, reference_second_moment

NS = np.array([1.0, 1.5, 2.0, 3.0, 16.0, 1e3, 1e6, 1e12, 1e40, 1e100, 1e300])
# the small-beta cut and just above, narrow Gaussians, where region B's window first covers [Y_LO, Y_HI] (~0.41),
# the annealed (ln N = 3 beta^2 / 2) and frozen (ln N = beta^2 / 2) boundaries at N = 1e6, and deep frozen
BETAS = np.array([1e-4, 3e-4, 0.01, 0.3, 0.4, 0.42, 1.0, math.sqrt(2 * math.log(1e6) / 3),
                  math.sqrt(2 * math.log(1e6)), 8.0, 20.0, 100.0])
RTOL = 1e-13  # observed worst 4e-14 (beta = 1e-4, whose Gaussian is narrower than the double spacing allows)


@functools.lru_cache(maxsize=None)
def _reference(beta: float) -> tuple[np.ndarray, np.ndarray]:
    return reference_ipr_and_exponent(NS, beta)


def _deviations() -> tuple[float, float]:
    """Worst relative deviation of ``expected_ipr`` and worst absolute deviation of ``decay_exponent`` (a number in
    [-1, 0]) of one grid call from the reference, over NS x BETAS."""
    e, g = ipr_and_exponent(NS, BETAS[:, None])
    ref_e = np.array([_reference(float(b))[0] for b in BETAS])
    ref_g = np.array([_reference(float(b))[1] for b in BETAS])
    return float(np.max(np.abs(e / ref_e - 1.0))), float(np.max(np.abs(g - ref_g)))


@pytest.fixture
def fresh_cache(monkeypatch):
    """An empty grid cache for this test alone (a planted defect must not leak into other tests' grids)."""
    monkeypatch.setattr(ipr_module, "_CACHE", OrderedDict())


def test_grid_matches_the_per_point_reference(fresh_cache):
    dev_e, dev_g = _deviations()
    assert dev_e <= RTOL and dev_g <= RTOL, (dev_e, dev_g)


@pytest.mark.parametrize("name, value", [
    ("_GL_X", np.polynomial.legendre.leggauss(4)[0]),  # 4 nodes per panel where 10 are needed
    ("_DROP", 12.0),  # the sums stop e^-12 below the peak
    ("_H_U", 0.75),  # a u step past the integrand's strip of analyticity
    ("_WINDOW_SD", 2.0),  # region B's Gaussian window cut at 2 standard deviations
])
def test_a_planted_defect_fails_the_comparison(fresh_cache, monkeypatch, name, value):
    """The comparison above can fail: each defect moves some grid point beyond RTOL."""
    if name == "_GL_X":
        monkeypatch.setattr(ipr_module, "_GL_W", np.polynomial.legendre.leggauss(4)[1])
    monkeypatch.setattr(ipr_module, name, value)
    dev_e, dev_g = _deviations()
    assert max(dev_e, dev_g) > RTOL, (name, dev_e, dev_g)


def test_second_moment_grid_matches_the_reference(fresh_cache):
    ns = NS[NS >= 2.0][:-1]  # E[Y2^2] underflows at N = 1e300
    for beta in (1e-4, 0.3, 1.0, 4.0, 20.0):
        got = ipr_second_moment(ns, beta)
        assert np.max(np.abs(got / reference_second_moment(ns, beta) - 1.0)) <= 1e-12, beta


def test_an_entry_does_not_depend_on_the_rest_of_the_grid(fresh_cache):
    """A table equals its scalar calls bit for bit, whatever else the table holds and in whatever order the grid
    was built (the cache grows differently each time)."""
    rng = np.random.default_rng(7)
    ns = np.concatenate([NS, rng.uniform(1.0, 1e4, 20), 10.0 ** rng.uniform(0, 300, 20)])
    betas = np.array([0.0, 5e-5, 2e-4, 0.35, 1.7, 6.0])
    table_e, table_g = ipr_and_exponent(ns, betas[:, None])
    for beta_row, e_row, g_row in zip(betas, table_e, table_g):
        for i in rng.permutation(ns.size)[:12]:
            ipr_module._CACHE.clear()
            assert expected_ipr(float(ns[i]), float(beta_row)) == e_row[i]
            assert decay_exponent(float(ns[i]), float(beta_row)) == g_row[i]
        subset = rng.permutation(ns.size)[:7]
        assert np.array_equal(expected_ipr(ns[subset], float(beta_row)), e_row[subset])


def test_tiny_beta_meets_the_small_beta_expansion():
    """At the cut (beta = 1e-4) the quadrature agrees with ``1/N + beta^2 (N-1)/N^2`` (exact there to ~1e-16) to
    1e-13, and its exponent with ``-1 + beta^2/N`` to 1e-13: no step in either at the switch."""
    beta = 1e-4
    e, g = ipr_and_exponent(NS[:-1], beta)  # N = 1e300 carries ~1e-13 of log-space rounding
    small_e = (1.0 + beta * beta * (NS[:-1] - 1.0) / NS[:-1]) / NS[:-1]
    small_g = -1.0 + beta * beta / NS[:-1] / (1.0 + beta * beta * (NS[:-1] - 1.0) / NS[:-1])
    assert np.max(np.abs(e / small_e - 1.0)) <= 1e-13
    assert np.max(np.abs(g - small_g)) <= 1e-13
