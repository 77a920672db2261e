from varsim.testing import adapt, assert_matches_reference
import array_api_strict as xp

assert_matches_reference(adapt(my_torch_attention, array="torch", dtype="bfloat16", layout="bhld"))
assert_matches_reference(adapt(my_array_api_attention, array=xp, layout="bhld"))
assert_matches_reference(adapt(one_sequence_attention, layout="sequence"))
