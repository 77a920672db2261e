"""The in-kernel generator: Numba kernel vs NumPy twin (bitwise), ziggurat tables, and statistical validation."""

import math

import numpy as np
import pytest
from scipy import stats

from varsim.sim import _kernels_rng as K
from varsim.sim import _twins_rng as T
from varsim.sim._rngstate import FIX, LANES, new_state, padded_words
from varsim.sim._ziggurat import BITS, LAYERS, kernel_tables, ziggurat_tables

GAUSSIAN, UNIFORM, RADEMACHER = K.GAUSSIAN, K.UNIFORM, K.RADEMACHER


def _kernel_draw(state, n, dist):
    return K.draw_variates(state, n, dist, *kernel_tables())


@pytest.mark.parametrize("dist", [GAUSSIAN, UNIFORM, RADEMACHER])
def test_kernel_matches_twin_bitwise(dist):
    """Same state -> identical float32 bit patterns and identical final state, for ragged request sizes (odd n,
    n below one vector step, several steps). Catches any divergence in lane order, word halves, padding, or in the
    order in which rejected ziggurat slots are repaired from the fix-up lane."""
    for n in (1, 7, 64, 65, 1000, 4099):
        a = new_state(11, dist, n)
        b = a.copy()
        for _ in range(3):  # consecutive requests continue the same streams
            x = _kernel_draw(a, n, dist)
            y = T.draw(b, n, dist)
            assert x.dtype == np.float32 and y.dtype == np.float32
            assert np.array_equal(x.view(np.uint32), y.view(np.uint32)), (dist, n)
        assert np.array_equal(a, b)


def test_slow_path_is_exercised_and_matches_twin():
    """Tail draws (|x| > r) and wedge repairs both occur in a 200k request, and the kernel and twin still agree
    bit for bit; the fix-up lane has moved (a repair that ignored it would leave it untouched)."""
    r = ziggurat_tables()[0]
    a = new_state(5)
    b = a.copy()
    x = _kernel_draw(a, 200_000, GAUSSIAN)
    y = T.draw(b, 200_000, GAUSSIAN)
    assert np.array_equal(x.view(np.uint32), y.view(np.uint32))
    assert np.sum(np.abs(x) > r) > 0
    assert not np.array_equal(a[:, FIX], new_state(5)[:, FIX])


def test_request_consumes_whole_vector_steps():
    """A request for n variates advances the bulk lanes by padded_words(n) / LANES steps, whatever the law."""
    for n in (1, 2 * LANES, 2 * LANES + 1):
        for dist in (UNIFORM, RADEMACHER):
            a = new_state(1)
            b = a.copy()
            _kernel_draw(a, n, dist)
            T.fill_words(b, padded_words(n))
            assert np.array_equal(a, b)


def test_ziggurat_constants_match_marsaglia_tsang():
    """The table construction, run for 256 layers, reproduces the published constants (Marsaglia & Tsang 2000:
    r = 3.6541528853610088, v = 4.92867323399e-3); the kernels' 1024-layer strips tile the curve (edges decreasing
    to x[1024] = 0, equal areas x_i (f(x_{i+1}) - f(x_i)) = v) and ~99.6% of draws take the fast path."""
    r, v, *_ = ziggurat_tables(256, 23)
    assert r == pytest.approx(3.6541528853610088, rel=1e-14)
    assert v == pytest.approx(4.92867323399e-3, rel=1e-10)
    r, v, x, w, k, f = ziggurat_tables()
    assert x.size == LAYERS + 1 and np.all(np.diff(x) < 0) and x[-1] == 0.0
    np.testing.assert_allclose(x[1:-1] * (f[2:] - f[1:-1]), v, rtol=1e-9)
    assert 0.995 < np.mean(k / 2.0**BITS) < 0.997


def test_state_keyed_by_work_not_by_call_order():
    """The state for key (N, chunk) is the same however many other states were made before (no hidden counter),
    and different keys give different states."""
    s1 = new_state(3, 64, 5)
    new_state(3, 64, 6)
    assert np.array_equal(s1, new_state(3, 64, 5))
    assert not np.array_equal(s1, new_state(3, 64, 6))
    assert s1.shape == (4, LANES + 1) and s1.dtype == np.uint64


def test_normal_moments_and_ks():
    """2^20 kernel normals: mean 0, variance 1, fourth moment 3 within 5 SE, and a KS test against N(0, 1)
    (p > 1e-3, fixed seed). Catches wrong table scaling (variance off), a lost sign bit (mean +0.8), a broken tail
    (kurtosis) or layer mix-ups (KS)."""
    x = _kernel_draw(new_state(2024), 1 << 20, GAUSSIAN).astype(np.float64)
    n = x.size
    assert abs(x.mean()) <= 5 / math.sqrt(n)
    assert abs(x.var() - 1) <= 5 * math.sqrt(2 / n)
    assert abs(np.mean(x**4) - 3) <= 5 * math.sqrt(96 / n)
    assert stats.kstest(x[:200_000], "norm").pvalue > 1e-3
    assert np.abs(x).max() > 4.5  # the tail beyond r = 3.65 is reachable


@pytest.mark.parametrize("dist, kurt", [(UNIFORM, 1.8), (RADEMACHER, 1.0)])
def test_uniform_and_rademacher_are_standardised(dist, kurt):
    """Unit variance and the right fourth moment (uniform 9/5, Rademacher 1); uniform also passes a KS test on
    [-sqrt3, sqrt3]. Catches an unstandardised uniform (variance 1/12 or 1/3) or a biased sign bit."""
    x = _kernel_draw(new_state(7, dist), 1 << 18, dist).astype(np.float64)
    n = x.size
    var4 = kurt - 1  # Var(X^2) for unit-variance X with E X^4 = kurt
    assert abs(x.mean()) <= 5 / math.sqrt(n)
    assert abs(np.mean(x**2) - 1) <= 5 * math.sqrt(var4 / n) + 1e-9
    assert abs(np.mean(x**4) - kurt) <= 0.05
    if dist == UNIFORM:
        assert stats.kstest(x[:100_000], "uniform", args=(-math.sqrt(3), 2 * math.sqrt(3))).pvalue > 1e-3
    else:
        assert set(np.unique(x)) == {-1.0, 1.0}


def test_fast_exp_matches_numpy():
    """The vectorised exp used by the softmax equals np.exp to 1e-15 relative on (-708, 0] and is exactly 1 at 0."""
    rng = np.random.default_rng(0)
    s = np.concatenate([[0.0, -1e-300, -0.5 * math.log(2), -700.0], -rng.exponential(30.0, 5000)])
    e = K.exp_shifted(s, 0.0)
    assert e[0] == 1.0
    np.testing.assert_allclose(e, np.exp(s), rtol=1e-15, atol=0)
    assert np.all(K.exp_shifted(np.array([-800.0, -1e308]), 0.0) < 1e-300)
