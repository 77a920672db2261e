from varsim.testing import adapt, power_report

report = power_report(adapt(sdpa_fixed, array="torch", dtype="bfloat16", layout="bhld"), seeds=20)
print(report.describe())
print(report.table())
