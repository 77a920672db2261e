"""A Hugging Face-style eager attention in torch, with every feature of the gradient battery: products in the
dtype, the softmax in float32 (as ``transformers``' ``eager_attention_forward``), grouped heads by
``repeat_interleave``, a bottom-right causal mask and window, softcapping, sinks, an additive bias and dropout.

Checked with ``check_gradients(torch_gradients(eager_attention, dtype=...), profile="eager")``; the test suite
(``tests/test_testing_backward.py``) and the benchmark (``benchmarks/bench_testing_backward.py``) import it from here.
"""

import math

import torch


def eager_attention(q, k, v, tau=1.0, mask=None, causal=False, window=0, softcap=None, sink=None, bias=None,
                    dropout_p=0.0, seed=0):
    """``q (B, H, L, d_k)``, ``k (B, G, N, d_k)``, ``v (B, G, N, d_v)`` -> ``o (B, H, L, d_v)`` (and the dropout
    mask, True = kept, when ``dropout_p``)."""
    H, G = q.shape[1], k.shape[1]
    k, v = k.repeat_interleave(H // G, 1), v.repeat_interleave(H // G, 1)
    L, N = q.shape[-2], k.shape[-2]
    s = (q @ k.transpose(-1, -2)).float() * (tau / math.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias.float()
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    m = torch.ones(L, N, dtype=torch.bool)
    if causal:
        pos, j = N - L + torch.arange(L)[:, None], torch.arange(N)[None]
        m = (j <= pos) & ((j > pos - window) if window else True)
    if mask is not None:
        m = m & mask
    s = s.masked_fill(~m, float("-inf"))
    if sink is not None:
        s = torch.cat([s, sink.float()[None, :, None, None].expand(*s.shape[:-1], 1)], -1)
    p = torch.softmax(s, -1)
    p = torch.nan_to_num(p[..., :-1] if sink is not None else p)  # a fully masked row: zeros
    keep = None
    if dropout_p:
        keep = torch.rand(p.shape, generator=torch.Generator().manual_seed(seed)) >= dropout_p
        p = p * keep / (1 - dropout_p)
    o = p.to(q.dtype) @ v
    return (o, keep) if dropout_p else o
