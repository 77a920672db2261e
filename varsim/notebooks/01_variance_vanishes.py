# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1. The variance vanishes
#
# One query attends over $N$ keys: $o = \sum_i w_i v_i$ with $w = \mathrm{softmax}(\tau\, q \cdot K^\top/\sqrt{d_k})$.
# With keys and values drawn independently, a fixed coordinate $o_j$ of the output has variance
#
# $$\mathrm{Var}(o_j) = \sigma_v^2\, \mathbb{E}\Big[\sum_i w_i^2\Big] \approx \sigma_v^2\, \frac{e^{\beta^2}}{N},
# \qquad \beta = \tau\,|q|/\sqrt{d_k},$$
#
# so it shrinks like $1/N$: a layer trained on short sequences sees a narrower input on long ones.
# In this notebook we **sample** attention outputs, **plot** their variance against $N$ and **compare** with
# $e^{\beta^2}/N$ and with the exact value. Runs in a few seconds.

# %%
import matplotlib.pyplot as plt
import numpy as np

from varsim.sim import simulate
from varsim.theory import expected_ipr

# %% [markdown]
# ## Sample
# `simulate` draws `n_sequences` independent sets of keys and values for each length $N$ and reports
# $\mathrm{Var}(o_j)$ (pooled over the $d_v$ coordinates) with a standard error (SE). With the default fixed query of
# norm $\sqrt{d_k}$, $\beta = \tau$.

# %%
n_grid = [16, 64, 256, 1024, 4096]
runs = {beta: simulate(n_grid, d_k=32, d_v=32, tau=beta, n_sequences=1000, seed=1, keep_samples=True)
        for beta in (1.0, 2.0)}
print(runs[1.0].table())

# %% [markdown]
# ## Compare with the theory
# The exact value $\mathbb{E}[\sum_i w_i^2]$ comes from a one-dimensional integral (`varsim.theory.expected_ipr`);
# $e^{\beta^2}/N$ is its large-$N$ limit. Every Monte Carlo point must lie within 5 standard errors (+1%) of the exact
# value; that is the rule all of varsim's statistical tests use.

# %%
for beta, res in runs.items():
    exact = expected_ipr(res.n, beta)
    z = (res.var - exact) / res.var_se
    print(f"beta = {beta}: z-scores {np.round(z, 1)}, Monte Carlo / exact "
          f"{np.round(res.var / exact, 3)}")
    assert np.all(np.abs(res.var - exact) <= 5 * res.var_se + 0.01 * exact), "Monte Carlo disagrees with the theory"

# %%
fig, ax = plt.subplots(figsize=(6, 4))
n_fine = np.geomspace(16, 4096, 60)
for (beta, res), color in zip(runs.items(), ("C0", "C1")):
    ax.errorbar(res.n, res.var, yerr=res.var_se, fmt="o", color=color, label=f"Monte Carlo, beta = {beta:g}")
    ax.plot(n_fine, expected_ipr(n_fine, beta), "-", color=color, label="exact E[sum w^2]")
    ax.plot(n_fine, np.exp(beta**2) / n_fine, "--", color=color, alpha=0.6, label="e^{beta^2}/N")
ax.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="Var(o_j)",
       title="The attention output variance vanishes")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# At $\beta = 1$ the points follow $e/N$ closely. At $\beta = 2$ they lie well **below** $e^4/N$ at short lengths:
# the large-$N$ law is reached only once $\ln N > 3\beta^2/2$ (notebook 2 explains these phases).
# The log-log slope of $\mathrm{Var}(o_j)$ against $N$:

# %%
for beta, res in runs.items():
    print(f"beta = {beta}: slope {res.slope:.3f} +- {res.slope_se:.3f}")
assert -1.05 < runs[1.0].slope < -0.9          # close to the 1/N law
assert runs[2.0].slope > runs[1.0].slope + 0.1  # a larger beta decays more slowly over this range

# %% [markdown]
# ## What a downstream layer sees
# The distribution of one output coordinate narrows as $N$ grows: the histogram at $N = 4096$ is much tighter than at
# $N = 16$.

# %%
res = runs[1.0]
fig, ax = plt.subplots(figsize=(6, 3.5))
for i in (0, 2, 4):
    ax.hist(res.samples["o"][i], bins=60, density=True, histtype="step", label=f"N = {res.n[i]}")
ax.set(xlabel="o_0", ylabel="density", title="One output coordinate, beta = 1")
ax.legend()
plt.show()
sd = [np.std(res.samples["o"][i]) for i in range(len(res.n))]
assert sd[-1] < sd[0] / 8  # sqrt(E[sum w^2]) falls by ~16x from N = 16 to 4096
