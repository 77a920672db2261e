def sdpa_naive(q, K, V, tau=1.0, causal=False):
    return F.scaled_dot_product_attention(q, K, V, is_causal=causal, scale=tau / math.sqrt(q.shape[-1]))
