import numpy as np
from varsim.sim import simulate
from varsim.theory import expected_ipr, decay_exponent, phase_boundaries

res = simulate([16, 256, 4096], d_k=64, d_v=64, tau=1.0, n_sequences=4000, seed=1)   # seconds
print(res.table())                                   # Var(o_j) with SEs, E[sum w^2], global statistics
print(res.var / expected_ipr(res.n, 1.0))            # ~1 within a few SE: Var(o_j) = sigma_v^2 E[sum w^2]
print(expected_ipr([16, 4096], np.array([[1.0], [2.0]])))   # exact, broadcast over (beta, N)
print(decay_exponent(4096, 2.0), phase_boundaries(2.0))     # -0.83 at ln N = 8.3, past the boundary ln N = 6
# one logit per key and a Rao-Blackwellised estimator: exact for Gaussian keys, fast at N = 2^20
print(simulate([2**20], tau=2.0, sampler="logits", estimator="rao_blackwell", n_sequences=256, seed=0).table())
