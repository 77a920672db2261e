for dtype in ("float64", "float32", "float16", "bfloat16"):
    assert_matches_reference(adapt(sdpa_fixed, array="torch", dtype=dtype, layout="bhld", device="cuda"))
assert_variance_matches(adapt(sdpa_fixed, array="torch", dtype="bfloat16", layout="bhld", device="cuda"),
                        lambda n: softmax_variance(n, d_k=16), [64], d_k=16, d_v=8, rng=0)
