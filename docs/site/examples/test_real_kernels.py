"""Test kernels as they are written: a reference family (ALiBi + sliding window), grouped-query heads in the flash
layout, a precision profile (Hugging Face eager), fully masked rows. Run it with pytest."""
import math

import numpy as np
import pytest

from varsim.testing import adapt, assert_matches_reference, families, power_report

ALIBI_WINDOW = families.alibi(max_bias=8.0) + families.sliding_window(32)


def my_alibi_kernel(q, K, V, tau=1.0, mask=None, causal=False):
    """(B, L, H, d) queries, (B, N, H_kv, d) keys: ALiBi slopes 2^(-8 (h+1) / H), a 32-key window, zeros on a row
    with no key."""
    q, K, V = (np.swapaxes(a, 1, 2) for a in (q, K, V))  # -> (B, H, L, d)
    H, L, N = q.shape[1], q.shape[2], K.shape[2]
    K, V = np.repeat(K, H // K.shape[1], axis=1), np.repeat(V, H // V.shape[1], axis=1)
    dist = (N - L + np.arange(L))[:, None] - np.arange(N)[None, :]
    slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)[:, None, None]
    s = q @ np.swapaxes(K, -1, -2) * (tau / math.sqrt(q.shape[-1])) - slopes * np.abs(dist)
    keep = dist < 32
    keep = keep & (dist >= 0) if causal else (keep if mask is None else keep & mask)
    s = np.where(keep, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return np.swapaxes(w @ V, 1, 2)


def test_alibi_window_kernel():
    attn = adapt(my_alibi_kernel, layout="blhd", gqa=True)
    assert_matches_reference(attn, reference=ALIBI_WINDOW, masked_rows="zeros")


def test_alibi_window_power():
    report = power_report(adapt(my_alibi_kernel, layout="blhd", gqa=True), reference=ALIBI_WINDOW, seeds=2)
    assert report.false_alarms[0] == 0 and not report.missed
    assert {"window_off_by_one", "gqa_repeat_not_interleave", "causal_tile_skips_diagonal"} <= set(report.caught)


def test_hf_eager_bfloat16():
    torch = pytest.importorskip("torch")

    def eager(q, K, V, tau=1.0, mask=None):  # products and the scale in bfloat16, softmax in float32
        s = torch.matmul(q, K.transpose(-1, -2)) * (tau / math.sqrt(q.shape[-1]))
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        return torch.matmul(torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype), V)

    assert_matches_reference(adapt(eager, array="torch", dtype="bfloat16", layout="bhld"), profile="eager")
