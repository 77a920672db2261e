def sdpa_fixed(q, K, V, tau=1.0, causal=False, mask=None):
    if causal:
        L, N = q.shape[-2], K.shape[-2]
        mask = torch.ones(L, N, dtype=torch.bool, device=q.device).tril(diagonal=N - L)
    return F.scaled_dot_product_attention(q, K, V, attn_mask=mask, scale=tau / math.sqrt(q.shape[-1]))
