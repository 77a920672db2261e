from varsim.testing import assert_matches_reference
assert_matches_reference(my_attention)   # my_attention(q, K, V, tau=1.0, mask=None) -> o or (o, w)
