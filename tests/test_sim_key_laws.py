"""The samplers' keys against the exact theory of their logit law (``varsim.theory.laws``; issue 47).

With a fixed query, sphere keys (``key_dist="sphere"``: QK-norm) give i.i.d. logits of the ``sphere`` law with
``d = d_k`` at the simulator's ``beta = tau |q| / sqrt(d_k)``; the simulated ``E[sum w^2]`` (its own standard error)
must match ``law_ipr`` within 5 SE + 1%, from the full sampler (keys drawn) and from the logits sampler (the cosine
drawn directly). Hypothesis draws N, beta and d_k.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from varsim.sim import simulate
from varsim.testing import mc_settings
from varsim.theory import expected_ipr
from varsim.theory.laws import law_ipr, logit_law


def _check(res, ref):
    assert abs(res.ipr[0] - ref) <= 5.0 * res.ipr_se[0] + 0.01 * ref, (res.ipr[0], res.ipr_se[0], ref)


@mc_settings(max_examples=5, derandomize=True)
@given(n=st.integers(2, 400), beta=st.floats(0.3, 4.0), d_k=st.integers(2, 24), seed=st.integers(0, 2**31))
def test_sphere_keys_match_the_sphere_law(n, beta, d_k, seed):
    """Sphere keys under a fixed query: the simulated ``E[sum w^2]`` equals the sphere law's exact value. Catches
    keys normalised to norm 1 instead of ``sqrt(d_k)`` (beta divided by sqrt(d_k)) and keys left Gaussian (the
    Gaussian theory, rejected below at small d_k)."""
    res = simulate([n], d_k=d_k, d_v=1, beta=beta, key_dist="sphere", n_sequences=3000, seed=seed)
    _check(res, law_ipr(logit_law("sphere", d=d_k), n, beta))


@mc_settings(max_examples=5, derandomize=True)
@given(n=st.integers(2, 3000), beta=st.floats(0.3, 4.0), d_k=st.integers(2, 24), seed=st.integers(0, 2**31))
def test_logits_sampler_draws_the_sphere_law(n, beta, d_k, seed):
    """The logits sampler with sphere keys (the cosine drawn directly, Rao-Blackwell estimator) against the exact
    sphere law. Catches the cosine of the wrong scale (z_1/|z| without sqrt(d_k)) and a Gaussian logit in its place."""
    res = simulate([n], d_k=d_k, d_v=1, beta=beta, key_dist="sphere", sampler="logits", estimator="rao_blackwell",
                   n_sequences=3000, seed=seed)
    _check(res, law_ipr(logit_law("sphere", d=d_k), n, beta))


def test_sphere_keys_are_not_gaussian_keys():
    """The power of the check above: at d_k = 3, N = 256, beta = 3 the sphere law and the Gaussian theory differ by
    far more than the simulation's 5 SE, and the simulation sides with the sphere law."""
    res = simulate([256], d_k=3, d_v=1, beta=3.0, key_dist="sphere", n_sequences=3000, seed=11)
    sphere, gauss = law_ipr(logit_law("sphere", d=3), 256, 3.0), expected_ipr(256, 3.0)
    _check(res, sphere)
    assert abs(res.ipr[0] - gauss) > 5.0 * res.ipr_se[0] + 0.01 * gauss


def test_sphere_keys_have_unit_norm_sqrt_d():
    """``measure_variance``'s NumPy keys of the sphere law: every key has norm sqrt(d_k) and mean-zero coordinates."""
    from varsim.sim._driver import _standardised

    k = _standardised(np.random.default_rng(0), "sphere", (50, 40, 7))
    np.testing.assert_allclose(np.linalg.norm(k, axis=-1), math.sqrt(7), rtol=1e-12)
    assert abs(k.mean()) < 0.05
