from varsim.testing import assert_variance_matches, softmax_variance

def my_attention(q, K, V):   # q (S, d_k), K (S, N, d_k), V (S, N, d_v) -> o (S, d_v)
    ...

assert_variance_matches(my_attention, lambda n: softmax_variance(n, d_k=16), [64, 256], d_k=16, d_v=8, rng=0)
