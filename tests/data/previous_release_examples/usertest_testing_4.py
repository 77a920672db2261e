"""Test a JAX attention with varsim.testing (run it with pytest; needs jax)."""
import math

import pytest

from varsim.testing import adapt, assert_matches_reference

jax = pytest.importorskip("jax")
jnp = jax.numpy


@jax.jit  # one compilation per case shape instead of one per operation
def jax_attention(q, K, V, tau=1.0, mask=None):
    """q (B, H, L, d_k), K (B, H, N, d_k), V (B, H, N, d_v), mask (B, 1, L, N) True = attend."""
    s = tau * jnp.einsum("bhld,bhnd->bhln", q, K) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = jnp.where(mask, s, -jnp.inf)
    w = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bhln,bhnd->bhld", w, V), w


def test_float32_as_jax_runs_by_default():
    report = assert_matches_reference(adapt(jax_attention, array=jnp, layout="bhld"))
    print(report.describe())  # "... so the inputs are rounded to float32 and compared at float32 tolerances"


def test_float64_with_x64():
    with jax.enable_x64(True):
        assert_matches_reference(adapt(jax_attention, array=jnp, layout="bhld"))
