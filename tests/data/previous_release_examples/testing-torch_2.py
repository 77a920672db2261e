report = check_against_reference(adapt(sdpa_naive, array="torch", layout="bhld"))
print(report.describe())
