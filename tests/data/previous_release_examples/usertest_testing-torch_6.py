"""Test a PyTorch scaled_dot_product_attention wrapper with varsim.testing (run it with pytest; needs torch)."""
import math

import pytest

from varsim.testing import (
    adapt,
    assert_matches_reference,
    assert_variance_matches,
    check_against_reference,
    softmax_variance,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional
DTYPES = ["float64", "float32", "float16", "bfloat16"]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


def sdpa_naive(q, K, V, tau=1.0, causal=False):
    """q (B, H, L, d_k), K (B, H, N, d_k), V (B, H, N, d_v) -> (B, H, L, d_v). Looks right; is wrong for L < N."""
    return F.scaled_dot_product_attention(q, K, V, is_causal=causal, scale=tau / math.sqrt(q.shape[-1]))


def sdpa_fixed(q, K, V, tau=1.0, causal=False, mask=None):
    """Causal means: query l of L sees keys 0 .. N - L + l (the last query sees every key, as with a KV cache)."""
    if causal:
        L, N = q.shape[-2], K.shape[-2]
        mask = torch.ones(L, N, dtype=torch.bool, device=q.device).tril(diagonal=N - L)
    return F.scaled_dot_product_attention(q, K, V, attn_mask=mask, scale=tau / math.sqrt(q.shape[-1]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_naive_wrapper_fails_where_the_causal_mask_is_misaligned(dtype, device):
    report = check_against_reference(adapt(sdpa_naive, array="torch", dtype=dtype, layout="bhld", device=device))
    print(report.describe())
    assert {r.case.name for r in report.results if not r.passed} == {"causal-one-query", "causal-kv-cache",
                                                                      "causal-masked-huge-logit"}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fixed_wrapper_matches_the_reference(dtype, device):
    assert_matches_reference(adapt(sdpa_fixed, array="torch", dtype=dtype, layout="bhld", device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_fixed_wrapper_matches_the_theory_in_bfloat16(device):
    attn = adapt(sdpa_fixed, array="torch", dtype="bfloat16", layout="bhld", device=device)
    assert_variance_matches(attn, lambda n: softmax_variance(n, d_k=16), [64], d_k=16, d_v=8, rng=0)
