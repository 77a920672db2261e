"""The transformer's Numba kernels against their NumPy references (``varsim.nn._kernels``) and the registry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varsim import variants as VR
from varsim.nn import _kernels as K

NO_MASK = np.zeros((0, 0), dtype=bool)


@st.composite
def rows_case(draw):
    r, t = draw(st.integers(1, 6)), draw(st.integers(1, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.01, 1.0, 30.0]))  # diffuse rows (support = all keys) to one-hot rows
    z = scale * rng.standard_normal((r, t))
    if draw(st.booleans()):
        z = np.round(z, 1)  # exact ties
    mask = NO_MASK
    if draw(st.booleans()):
        mask = rng.random((r, t)) < 0.6
        mask[np.arange(r), rng.integers(0, t, size=r)] = True
        z = np.where(mask, z, -np.inf)
    return z, mask


@settings(max_examples=80, deadline=None)
@given(rows_case(), st.sampled_from([np.float64, np.float32]))
def test_entmax15_kernel_equals_reference_and_registry(case, dtype):
    """Kernel == NumPy reference == the registry's sorted 1.5-entmax, masked keys exactly 0, rows summing to 1.
    Catches a kernel that takes the max over masked keys, counts them in the support, or skips the exact finish
    (Newton alone stops short of the root)."""
    z, mask = case
    z = z.astype(dtype)
    got, ref = np.empty_like(z), np.empty_like(z)
    tol = 1e-7 if dtype == np.float32 else 1e-10
    K.entmax15_rows(z, mask, tol, got)
    K.entmax15_rows_reference(z, mask, tol, ref)
    rtol, atol = (2e-5, 1e-6) if dtype == np.float32 else (1e-10, 1e-12)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    np.testing.assert_allclose(got, VR.weights("entmax15", z.astype(np.float64)), rtol=rtol, atol=atol)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=rtol * 10)
    if mask.shape[0]:
        assert np.all(got[~mask] == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_relu_kernel_equals_reference_bitwise(dtype):
    """The fused bias + ReLU pass gives NumPy's two passes bit for bit, NaN, infinities and signed zeros included
    (catches a kernel that adds in another dtype, or keeps -0.0 where ``np.maximum`` writes +0.0, or drops a NaN)."""
    from varsim.nn._layer_kernels import bias_relu, bias_relu_reference

    rng = np.random.default_rng(3)
    out = rng.standard_normal((37, 11)).astype(dtype) * 1e3
    out[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45]
    b = rng.standard_normal(11).astype(dtype)
    b[:6] = [1.0, -np.inf, np.inf, -0.0, -0.0, -0.0]
    got, want = out.copy(), out.copy()
    bias_relu(got, b)
    with np.errstate(invalid="ignore"):  # inf - inf
        bias_relu_reference(want, b)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


def test_linear_bias_relu_equals_linear_then_relu_bitwise():
    """``linear_bias_relu`` is ``relu(linear_forward(...))`` bit for bit, with the same caches."""
    from varsim.nn.layers import linear_bias_relu, linear_forward, relu_forward

    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    w = rng.standard_normal((7, 9)).astype(np.float32)
    b = rng.standard_normal(9).astype(np.float32)
    got, cache = linear_bias_relu(x, w, b)
    want, _ = relu_forward(linear_forward(x, w, b)[0])
    assert got.shape == want.shape and got.tobytes() == want.tobytes()
    assert cache[0] is x and cache[1] is w and cache[2] is True
