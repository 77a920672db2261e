"""Chunk kernels vs their NumPy twins (which materialise q, K, V), P1, P6 and thread-count invariance."""

import math

import numba
import numpy as np
import pytest

from varsim.sim import _kernels_attn as KA
from varsim.sim import _twins_attn as TA
from varsim.sim import simulate
from varsim.sim._kernel_args import FullSampler, LogitsSampler
from varsim.sim._rngstate import new_state
from varsim.sim._twins_draws import sample_full
from varsim.sim._ziggurat import kernel_tables

TABLES = kernel_tables()


def _full(impl, state, n_keys, n_seq, q, random_query, tau, key_dist, value_dist, a_mat, noise, mu, sigma):
    """Run ``impl.full_chunk`` (kernel or twin: the same arguments) and return ``(o, y2)`` with ``o`` (not o - mu)."""
    d_v = mu.size
    dev = np.empty((n_seq, d_v))
    y2 = np.empty(n_seq)
    impl.full_chunk(state, _sampler(n_keys, q, random_query, tau, key_dist, value_dist, a_mat, noise, mu, sigma),
                    TABLES, dev, y2)
    return mu + dev, y2


def _sampler(n_keys, q, random_query, tau, key_dist, value_dist, a_mat, noise, mu, sigma):
    d_k, d_v = q.size, mu.size
    coupled = a_mat is not None
    return FullSampler(n_keys, q, random_query, tau / math.sqrt(d_k), key_dist, value_dist, coupled,
                       a_mat if coupled else np.zeros((d_v, d_k)), noise, mu, sigma)


def _full_kernel(*args):
    return _full(KA, *args)


@pytest.fixture(params=["kernel", "twin"])
def impl(request):
    """The Numba kernel module or its NumPy twin module (identical signatures)."""
    return KA if request.param == "kernel" else TA


@pytest.mark.parametrize(
    "random_query, key_dist, value_dist, coupled",
    [(False, 0, 0, False), (False, 1, 2, True), (True, 2, 1, False), (True, 0, 0, True), (False, 3, 0, True),
     (True, 3, 1, False)],
)
def test_full_kernel_matches_twin(random_query, key_dist, value_dist, coupled):
    """Online block softmax + linear value accumulation (kernel) == direct softmax on explicit q, K, V (twin) to
    1e-12, with ragged blocks (N = 70 = 2 * 32 + 6), every key/value law (sphere keys: code 3), random query and
    matrix coupling; the generator states end equal. Catches a dropped rescale when the running max grows, a wrong
    block offset, or coupling applied to the wrong axis."""
    rng = np.random.default_rng(4)
    d_k, d_v, n_keys, n_seq = 12, 5, 70, 4
    q = rng.normal(size=d_k)
    a_mat = rng.normal(size=(d_v, d_k)) if coupled else None
    mu = rng.normal(size=d_v)
    a = new_state(1, key_dist, value_dist)
    b = a.copy()
    o, y2 = _full(KA, a, n_keys, n_seq, q, random_query, 2.5, key_dist, value_dist, a_mat, 0.7, mu, 1.3)
    ot, y2t = _full(TA, b, n_keys, n_seq, q, random_query, 2.5, key_dist, value_dist, a_mat, 0.7, mu, 1.3)
    np.testing.assert_allclose(o, ot, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y2, y2t, rtol=1e-12)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("key_dist", [0, 3])
@pytest.mark.parametrize("n_keys, n_seq", [(1500, 3), (100, 23)])
@pytest.mark.parametrize("random_query, d_v", [(False, 0), (True, 0), (False, 3), (True, 3)])
def test_logits_kernel_matches_twin(random_query, d_v, n_keys, n_seq, key_dist):
    """Logits sampler kernel == twin to 1e-12 across a block boundary (N = 1500 > 1024) and for many short
    sequences, with and without values (d_v = 0 is the Rao-Blackwell path that draws no values at all), Gaussian and
    sphere keys (code 3). Catches a dropped rescale when a later block raises the maximum, or accumulators not reset
    between sequences."""
    mu = np.array([0.5, -1.0, 2.0])[:d_v]
    a = new_state(2, d_v, int(random_query))
    b = a.copy()
    o, ot = np.empty((n_seq, d_v)), np.empty((n_seq, d_v))
    y2, y2t = np.empty(n_seq), np.empty(n_seq)
    p = LogitsSampler(n_keys, 1.7, random_query, 9, 0.6, 1, mu, 1.4, key_dist)
    KA.logits_chunk(a, p, TABLES, o, y2)
    TA.logits_chunk(b, p, TABLES, ot, y2t)
    np.testing.assert_allclose(y2, y2t, rtol=1e-12)
    if d_v:
        np.testing.assert_allclose(o, ot, rtol=1e-12, atol=1e-12)
    assert np.array_equal(a, b)


def test_p1_zero_query_gives_uniform_weights(impl):
    """THEORY.md 7 P1: q = 0 => w uniform, o = mean of the values over the keys, sum w^2 = 1/N (to 1e-12),
    M=50, N=37, d=16, for the kernel and the twin alike. Catches softmax over the wrong (batch) axis, which would
    average across sequences."""
    d, n_keys, n_seq = 16, 37, 50
    mu = np.linspace(-1, 1, d)
    a = new_state(3)
    b = a.copy()
    o, y2 = _full(impl, a, n_keys, n_seq, np.zeros(d), False, 1.0, 0, 0, None, 1.0, mu, 2.0)
    _, _, V = sample_full(b, _sampler(n_keys, np.zeros(d), False, 1.0, 0, 0, None, 1.0, mu, 2.0), n_seq)
    np.testing.assert_allclose(o, V.mean(axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y2, 1.0 / n_keys, rtol=1e-12)
    res = simulate([n_keys], d_k=d, d_v=d, query_norm=0.0, n_sequences=64, seed=0)
    assert res.ipr[0] == pytest.approx(1.0 / n_keys, rel=1e-12) and res.ipr_se[0] < 1e-15


def test_p6_overflow_guard_returns_argmax_value():
    """THEORY.md 7 P6: logit scale 1000 (tau = 1000, |q| = sqrt(d_k)): every output is finite, and where the gap
    between the top two logits exceeds 40, o equals v_argmax to 1e-9 (N=128). Catches a softmax without
    max-subtraction (exp overflow -> inf/NaN) and an online rescale that forgets earlier blocks."""
    d_k, d_v, n_keys, n_seq, tau = 16, 8, 128, 60, 1000.0
    q = np.ones(d_k)
    mu = np.zeros(d_v)
    a = new_state(6)
    b = a.copy()
    o, y2 = _full_kernel(a, n_keys, n_seq, q, False, tau, 0, 0, None, 1.0, mu, 1.0)
    qs, K, V = sample_full(b, _sampler(n_keys, q, False, tau, 0, 0, None, 1.0, mu, 1.0), n_seq)
    assert np.all(np.isfinite(o)) and np.all(np.isfinite(y2))
    logits = tau * np.einsum("snd,sd->sn", K, qs) / math.sqrt(d_k)
    top2 = np.sort(logits, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 40
    assert clear.sum() > n_seq // 2
    arg = np.argmax(logits, axis=1)
    np.testing.assert_allclose(o[clear], V[np.arange(n_seq), arg][clear], rtol=0, atol=1e-9)
    np.testing.assert_allclose(y2[clear], 1.0, atol=1e-9)
    for sampler in ("full", "logits"):
        res = simulate([128, 1024, 5000], d_k=d_k, d_v=d_v, tau=tau, n_sequences=64, seed=1, sampler=sampler)
        for name in ("var", "var_se", "ipr", "mean", "global_var"):
            assert np.all(np.isfinite(getattr(res, name))), (sampler, name)
        assert np.all(res.ipr > 0.9)  # deep in the frozen phase: nearly one-hot weights


def _fingerprint(res):
    d = res.to_dict()
    d.pop("provenance")
    d.pop("elapsed_s")
    return d, [None if x is None else x.tobytes() for k in ("ipr", "o") for x in res.samples[k]]


@pytest.mark.parametrize("sampler, estimator", [("full", "sample"), ("logits", "rao_blackwell")])
def test_thread_count_invariance_bitwise(sampler, estimator):
    """numba.set_num_threads(1) vs (2): the same seed gives bitwise-identical statistics and per-sequence samples,
    because each chunk's stream is keyed by (N, chunk), never by the thread, and chunks combine in fixed order."""
    before = numba.get_num_threads()
    kwargs = dict(d_k=16, d_v=8, tau=1.5, query="random", n_sequences=96, sampler=sampler, estimator=estimator,
                  seed=123, keep_samples=True)
    try:
        numba.set_num_threads(1)
        one = _fingerprint(simulate([33, 300], **kwargs))
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = _fingerprint(simulate([33, 300], **kwargs))
    finally:
        numba.set_num_threads(before)
    assert one == two
    assert _fingerprint(simulate([33, 300], threads=3, **kwargs)) == one
