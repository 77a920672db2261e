"""Map kernels (``_kernels_map``, Numba weight maps) against their NumPy twins (the registry's references), and the
variant path of ``simulate``."""

import math

import numpy as np
import pytest

from varsim.sim import _kernels_map as KM
from varsim.sim import _twins_map as TM
from varsim.sim import simulate
from varsim.sim._kernel_args import FullSampler, LogitsSampler
from varsim.sim._rngstate import new_state
from varsim.sim._variant_codes import pack
from varsim.sim._ziggurat import kernel_tables
from varsim.variants import VARIANTS, WEIGHT_MAPS

TABLES = kernel_tables()
PARAMS = {"topk": {"k": 5}, "ssmax": {"s": 0.7}, "logn": {"n0": 4.0}, "critical": {"c": 0.8}}


@pytest.mark.parametrize("name", WEIGHT_MAPS)
@pytest.mark.parametrize("random_query, coupled", [(False, False), (True, True)])
def test_map_full_kernel_matches_twin(name, random_query, coupled):
    """Numba weight map + reduction == the registry's NumPy reference on the twin's explicit q, K, V, to 1e-10, for
    every variant, with ragged key blocks (N = 70), random query and matrix coupling; generator states end equal.
    Catches a Numba map that differs from the reference (wrong sort order, support off by one, sigmoid bias), or
    draws that diverge from the softmax kernel's request order."""
    rng = np.random.default_rng(11)
    d_k, d_v, n_keys, n_seq = 6, 3, 70, 4
    q = rng.normal(size=d_k)
    a_mat = rng.normal(size=(d_v, d_k)) if coupled else np.zeros((d_v, d_k))
    mu = rng.normal(size=d_v)
    wmap = pack(name, PARAMS.get(name, {}), n_keys)
    p = FullSampler(n_keys, q, random_query, 1.3 / math.sqrt(d_k), 0, 0, coupled, a_mat, 0.6, mu, 1.7)
    outs = []
    for impl in (KM, TM):
        state = new_state(9, int(random_query))
        o, y2, s1 = np.empty((n_seq, d_v)), np.empty(n_seq), np.empty(n_seq)
        impl.map_full_chunk(state, p, wmap, TABLES, o, y2, s1)
        outs.append((o, y2, s1, state))
    (o, y2, s1, a), (ot, y2t, s1t, b) = outs
    np.testing.assert_allclose(o, ot, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y2, y2t, rtol=1e-10)
    np.testing.assert_allclose(s1, s1t, rtol=1e-10)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", [k for k, v in VARIANTS.items() if v.kernel != "scaled_softmax"])
@pytest.mark.parametrize("d_v", [0, 2])
def test_map_logits_kernel_matches_twin(name, d_v):
    """Logits-sampler map kernel == twin across a logit-block boundary (N = 1100 > 1024), with values and without
    (the Rao-Blackwell path). Catches block offsets in the stored logits and sigmoid's mean term mu (sum w - 1)."""
    mu = np.array([3.0, -1.0])[:d_v]
    wmap = pack(name, PARAMS.get(name, {}), 1100)
    p = LogitsSampler(1100, 1.5, True, 7, 0.5, 1, mu, 0.8)
    outs = []
    for impl in (KM, TM):
        state = new_state(4, d_v)
        o, y2, s1 = np.empty((3, d_v)), np.empty(3), np.empty(3)
        impl.map_logits_chunk(state, p, wmap, TABLES, o, y2, s1)
        outs.append((o, y2, s1, state))
    for x, y in zip(outs[0], outs[1]):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def test_full_sampler_pairs_variants_on_the_same_draws():
    """Under one seed every variant sees the same keys and values: ssmax with s = 1/ln N at a single N equals
    softmax (to rounding) in the streaming kernels, and the map kernel's topk with k >= N equals softmax to 1e-12.
    Catches a variant path that consumes the random stream differently (unpaired comparisons)."""
    kw = dict(d_k=8, d_v=4, n_sequences=64, seed=3, keep_samples=True)
    base = simulate([32], **kw)
    ss = simulate([32], attention="ssmax", s=1 / math.log(32), **kw)
    np.testing.assert_allclose(ss.samples["o"][0], base.samples["o"][0], rtol=1e-12)
    tk = simulate([32], attention="topk", k=32, **kw)
    np.testing.assert_allclose(tk.samples["o"][0], base.samples["o"][0], rtol=1e-12)
    np.testing.assert_allclose(tk.samples["ipr"][0], base.samples["ipr"][0], rtol=1e-12)


def test_variant_argument_errors():
    """Unknown attention and bad / foreign parameters raise naming them (through simulate's **params)."""
    with pytest.raises(ValueError, match="softmax.*sigmoid"):
        simulate([16], n_sequences=32, attention="soft")
    with pytest.raises(ValueError, match="'k'"):
        simulate([16], n_sequences=32, attention="topk", k=0)
    with pytest.raises(ValueError, match="no parameter.*s"):
        simulate([16], n_sequences=32, s=0.5)
    with pytest.raises(ValueError, match="no parameter.*kk"):
        simulate([16], n_sequences=32, attention="topk", kk=3)
