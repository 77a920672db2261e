from varsim.sim import simulate
from varsim.theory import expected_ipr

res = simulate([16, 256, 4096], d_k=64, d_v=64, tau=1.0, n_sequences=4000, seed=1)
print(res.table())                            # Var(o_j) with standard errors, E[sum w^2], ...
print(res.var / expected_ipr(res.n, 1.0))     # ~1: Var(o_j) = sigma_v^2 E[sum w^2]
