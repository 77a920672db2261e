report = check_against_reference(adapt(sdpa_naive, array="torch", dtype="bfloat16", layout="bhld", device="cuda"))
