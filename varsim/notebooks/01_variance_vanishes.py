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
# **Goals.** After this notebook you can
#
# * say what "attention spreads out" means, by looking at sorted softmax weights and at the *effective number of
#   attended items*;
# * derive, in three lines, why the variance of an attention output is $\sigma_v^2\,\mathbb{E}[\sum_i w_i^2]$;
# * measure that variance by Monte Carlo, compare it with the exact theory using standard errors, and explain why
#   it falls like $1/N$ only *eventually*.
#
# **Prerequisites.** Python and NumPy; the softmax function; mean, variance and the idea of a standard error. No
# machine learning beyond "attention is a weighted average of value vectors".
#
# **Time.** About a minute to run; 30-45 minutes to work through with the exercises.
#
# **Setting.** One query attends over $N$ keys: $o = \sum_i w_i v_i$ with
# $w = \mathrm{softmax}(\tau\, q \cdot K^\top/\sqrt{d_k})$, keys and values drawn independently at random. With
# Gaussian keys the logits are independent normal numbers with standard deviation $\beta = \tau\,|q|/\sqrt{d_k}$,
# the *logit scale*: the one number that controls how peaked the weights are.

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import brentq

from varsim.sim import simulate
from varsim.theory import expected_ipr, phase

# %% [markdown]
# ## Parameters
# **This is the one cell to change.** Any sensible values work: the checks further down compare with the exact
# theory *at your values*. Then run all cells again (Run > Run All Cells).

# %% tags=["parameters"]
# PARAMETERS: change these, then re-run the notebook
BETAS = (1.0, 2.0)  # logit scales beta to compare (each between 0 and about 4)
N_GRID = [16, 64, 256, 1024, 4096]  # sequence lengths N (at least two distinct values, each >= 2)
D_K = 32  # key dimension: only beta matters for the answer, d_k only sets the cost
D_V = 32  # value dimension: the variance is pooled over the d_v output coordinates
N_SEQUENCES = 1000  # independent sequences per length (>= 32); more: smaller error bars, slower
SEED = 1  # change it to see how much the Monte Carlo points move

# %%
# checks of the parameters: a value that cannot work is explained here, not deep inside a library call
BETAS = tuple(sorted({abs(float(b)) for b in np.atleast_1d(BETAS)}))
N_GRID = sorted({int(n) for n in np.atleast_1d(N_GRID)})
if len(N_GRID) < 2 or N_GRID[0] < 2:
    raise ValueError(f"N_GRID needs at least two distinct lengths >= 2 to show a decay; got {N_GRID}")
if max(BETAS) > 5:
    print(f"beta = {max(BETAS)}: far in the frozen phase every N here shows almost no decay (notebook 2 explains).")
if N_SEQUENCES < 32:
    raise ValueError(f"N_SEQUENCES must be at least 32 (the standard errors need 16 batches of 2); got {N_SEQUENCES}")
print(f"beta in {BETAS}, N in {N_GRID}, {N_SEQUENCES} sequences per length")

# %% [markdown]
# ## 1. Intuition first: what do softmax weights look like?
# Draw $N$ logits $\beta g_i$ with $g_i \sim N(0, 1)$, take the softmax, and sort the weights from largest to
# smallest. At $\beta = 0$ every weight is $1/N$ (a flat line); the larger $\beta$, the more the first few items
# dominate.
#
# One number summarises how many items share the weight: the **inverse participation ratio** (IPR)
# $Y_2 = \sum_i w_i^2$. If attention is spread *evenly over $k$ items* (weight $1/k$ each), $Y_2 = k \cdot 1/k^2 = 1/k$.
# So $N_{\text{eff}} = 1/Y_2$ is the **effective number of attended items**: $N$ for uniform weights, 1 when all
# the weight sits on one item.
#
# **Predict, then run.** At $\beta = 1$, do you expect $N_\text{eff}$ to stay about constant as $N$ grows from 16
# to 4096, or to grow? If it grows, like $N$, like $\sqrt N$, or like $\ln N$?

# %%
show_betas = sorted({0.5, 1.0, 2.0, 3.0} | set(BETAS))
show_n = [N_GRID[0], N_GRID[len(N_GRID) // 2], N_GRID[-1]]
draw = np.random.default_rng(SEED)


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


fig, axes = plt.subplots(1, len(show_n), figsize=(4 * len(show_n), 3.6), sharey=True)
print("effective number of attended items N_eff = 1 / sum w^2 (median over 200 draws), and as a fraction of N")
for ax, n in zip(axes, show_n):
    for beta in show_betas:
        w = softmax(beta * draw.standard_normal((200, n)))
        n_eff = np.median(1.0 / np.sum(w**2, axis=1))
        ax.loglog(np.arange(1, n + 1), np.sort(w[0])[::-1], label=f"beta = {beta:g}: N_eff = {n_eff:.3g}")
        print(f"  N = {n:6d}, beta = {beta:3g}: N_eff = {n_eff:9.1f}  ({n_eff / n:.3f} of N)")
    ax.axhline(1.0 / n, color="k", lw=0.6, ls=":")
    ax.set(title=f"N = {n} (dotted: 1/N)", xlabel="rank of the item (1 = largest weight)")
    ax.legend(fontsize=7)
axes[0].set_ylabel("softmax weight (one draw, sorted)")
fig.tight_layout()
plt.show()

# %% [markdown]
# At small $\beta$, $N_\text{eff}$ grows in proportion to $N$: a fixed *fraction* of the items (about
# $e^{-\beta^2}$, see below) shares the weight, so every single weight shrinks like $1/N$. At large $\beta$ and
# small $N$ one item takes most of the weight ($N_\text{eff}$ near 1), but as $N$ grows the fraction takes over
# again. Attention is a weighted *average*, and an average over more and more effective items fluctuates less:
# that is the whole story of this notebook.
#
# ## 2. Why the variance is $\sigma_v^2\,\mathbb{E}[\sum_i w_i^2]$: three lines
# Condition on the keys (and the query), so the weights are fixed numbers, and let the values have mean $\mu$ and
# variance $\sigma_v^2$ per coordinate, independent of the keys:
#
# 1. $\mathbb{E}[o_j \mid K] = \sum_i w_i \mu = \mu$ (the weights sum to 1), the same for every $K$;
# 2. $\mathrm{Var}(o_j \mid K) = \sum_i w_i^2 \sigma_v^2$ (a weighted sum of independent values);
# 3. the law of total variance: $\mathrm{Var}(o_j) = \mathbb{E}[\mathrm{Var}(o_j \mid K)] +
#    \mathrm{Var}(\mathbb{E}[o_j \mid K]) = \sigma_v^2\,\mathbb{E}[\sum_i w_i^2] + 0$.
#
# This is exact, for any $N$, any value distribution and any constant value mean. The $1/N$ law is an
# *approximation* on top of it: with $X_i = e^{\beta g_i}$ (log-normal, $\mathbb{E}X = e^{\beta^2/2}$,
# $\mathbb{E}X^2 = e^{2\beta^2}$) and $N$ large enough that the sums behave like $N$ times their means,
#
# $$\mathbb{E}\Big[\sum_i w_i^2\Big] = \mathbb{E}\Big[\frac{\sum_i X_i^2}{(\sum_j X_j)^2}\Big]
# \approx \frac{N\,\mathbb{E}X^2}{(N\,\mathbb{E}X)^2} = \frac{e^{\beta^2}}{N}.$$
#
# So $N_\text{eff} \approx N e^{-\beta^2}$: at $\beta = 1$ about 37% of the items are effectively attended. The
# exact value of $\mathbb{E}[\sum_i w_i^2]$ at finite $N$ is a one-dimensional integral
# (`varsim.theory.expected_ipr`, derived in notebook 2).
#
# ## 3. Sample and compare
# `simulate` draws `N_SEQUENCES` independent sets of keys and values at each length and reports
# $\mathrm{Var}(o_j)$ (pooled over the $d_v$ coordinates) with its **standard error** (SE, the uncertainty of the
# Monte Carlo estimate itself). With its default fixed query of norm $\sqrt{d_k}$, $\beta = \tau$, and
# $\sigma_v = 1$.
#
# **Predict, then run.** Before running the next two cells: on a log-log plot, what slope do you expect for
# $\beta = 1$? For $\beta = 2$, will the points lie on $e^{4}/N$, above it, or below it at $N = 16$?

# %%
runs = {beta: simulate(N_GRID, d_k=D_K, d_v=D_V, tau=beta, n_sequences=N_SEQUENCES, seed=SEED, keep_samples=True)
        for beta in BETAS}
print(runs[BETAS[0]].table())

# %% [markdown]
# The columns: `N`; `Var(o_j)`, the output variance pooled over the $d_v$ coordinates, and its `SE`; `N*Var`, which
# tends to $e^{\beta^2}$ if the $1/N$ law holds; `E[sum w^2]`, the mean IPR measured on the same sequences;
# `mean(o_j)`, the mean of one output coordinate (0 here: the values have mean 0); `glob.mean` and `glob.var`, the
# mean and variance *across* the $d_v$ coordinates of one output, averaged over sequences (the quantities a
# LayerNorm would compute; `glob.var` is close to `Var(o_j)` because the coordinates are independent given the
# keys). The last lines: the fitted log-log slope (section 4) and the configuration that reproduces the run.
#
# Every Monte Carlo point must lie within 5 standard errors (+1%) of the exact value: the rule all of varsim's
# statistical tests use. The *z-score* is (estimate - exact) / SE; with a correct simulator it behaves like a
# standard normal number, so $|z| > 5$ would mean a bug, not bad luck.

# %%
for beta, res in runs.items():
    exact = expected_ipr(res.n, beta)
    z = (res.var - exact) / res.var_se
    print(f"beta = {beta:g}: z-scores {np.round(z, 1)}, Monte Carlo / exact {np.round(res.var / exact, 3)}")
    assert np.all(np.abs(res.var - exact) <= 5 * res.var_se + 0.01 * exact), f"beta = {beta}: disagrees with theory"

# %%
fig, ax = plt.subplots(figsize=(6.5, 4.3))
n_fine = np.geomspace(N_GRID[0], N_GRID[-1], 60)
for k, (beta, res) in enumerate(runs.items()):
    color = f"C{k}"
    ax.errorbar(res.n, res.var, yerr=res.var_se, fmt="o", color=color, label=f"beta = {beta:g}: Monte Carlo")
    ax.plot(n_fine, expected_ipr(n_fine, beta), "-", color=color, label=f"beta = {beta:g}: exact")
    ax.plot(n_fine, np.exp(beta**2) / n_fine, "--", color=color, alpha=0.6, label=f"beta = {beta:g}: e^(beta^2)/N")
ax.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="Var(o_j) = E[sum w^2]  (sigma_v = 1)",
       title="The attention output variance vanishes")
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# ## 4. When is $e^{\beta^2}/N$ a good approximation?
# The derivation above assumed the sums behave like $N$ times their means. For a heavy-tailed $X = e^{\beta g}$
# that needs many items: the largest of $N$ terms must be small compared with the whole sum. Notebook 2 shows that
# $N\,\mathbb{E}[\sum w^2] \to e^{\beta^2}$ only as $\ln N$ grows well past $3\beta^2/2$; the phase boundary
# $\ln N = 3\beta^2/2$ marks where the approach *starts*, not where it is complete. The crossover is broad:
#
# **Predict, then run.** At $\beta = 2$ and $N = 4096$ ($\ln N = 8.3$, past $3\beta^2/2 = 6$), how far below
# $e^{\beta^2}/N$ is the exact value: 1%, 10%, 30%?

# %%
check_betas = sorted(set(BETAS) | {2.0})
for beta in check_betas:
    for n in (N_GRID[-1], np.exp(1.5 * beta**2)):
        ratio = n * expected_ipr(n, beta) / np.exp(beta**2)
        print(f"beta = {beta:g}, N = {n:10.4g} (ln N = {np.log(n):5.2f}, 3 beta^2/2 = {1.5 * beta**2:5.2f}, "
              f"{phase(n, beta)}): N E[sum w^2] / e^(beta^2) = {ratio:.3f}")
ratio_2 = 4096 * expected_ipr(4096, 2.0) / np.exp(4.0)
print(f"beta = 2, N = 4096: the exact value is {1 - ratio_2:.0%} below e^4/N")
assert 0 < ratio_2 < 0.9  # the large-N law is not reached at N = 4096 although ln N > 3 beta^2/2

# %% [markdown]
# The log-log slope of $\mathrm{Var}(o_j)$ against $N$ over your grid, fitted to the Monte Carlo points (weighted
# by their errors) and to the exact curve with the same weights: the slope is $-1$ only once the whole grid is in
# the large-$N$ regime; over a grid that starts at small $N$ a larger $\beta$ decays more slowly.


# %%
def wls_slope(n, y, weights):
    """Weighted least-squares slope of log y against log n."""
    x, y = np.log(n), np.log(y)
    xm, ym = np.average(x, weights=weights), np.average(y, weights=weights)
    return np.sum(weights * (x - xm) * (y - ym)) / np.sum(weights * (x - xm) ** 2)


slopes = {}
for beta, res in runs.items():
    exact_slope = wls_slope(res.n, expected_ipr(res.n, beta), (res.var / res.var_se) ** 2)
    slopes[beta] = exact_slope
    print(f"beta = {beta:g}: Monte Carlo slope {res.slope:.3f} +- {res.slope_se:.3f}, exact curve {exact_slope:.3f}")
    assert abs(res.slope - exact_slope) <= 5 * res.slope_se + 0.02, f"beta = {beta}: slope disagrees with theory"
    assert -1.0 - 1e-9 <= exact_slope <= 0.0

# %% [markdown]
# ## 5. Explore: move $\beta$ and $N$
# With a live notebook (and `ipywidgets`), the sliders redraw one draw of sorted weights and the point
# $(N, \mathbb{E}[\sum w^2])$ on the exact curve. On a static page (or without `ipywidgets`) the same figure is
# drawn below for a few fixed values.


# %%
def explore(beta=1.0, log2_n=10):
    n = int(2**log2_n)
    w = np.sort(softmax(beta * np.random.default_rng(SEED).standard_normal(n)))[::-1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    axes[0].loglog(np.arange(1, n + 1), w, "o-", ms=2)
    axes[0].axhline(1.0 / n, color="k", ls=":", lw=0.8, label="1/N (uniform)")
    axes[0].set(xlabel="rank of the item", ylabel="softmax weight (sorted)",
                title=f"one draw: N_eff = 1/sum w^2 = {1 / np.sum(w**2):.1f} of N = {n}")
    axes[0].legend()
    grid = np.geomspace(2, 2**20, 60)
    axes[1].loglog(grid, expected_ipr(grid, beta), label="exact E[sum w^2]")
    axes[1].loglog(grid, np.exp(beta**2) / grid, "--", label="e^(beta^2)/N")
    axes[1].plot(n, expected_ipr(n, beta), "r*", ms=14, label=f"N = {n}")
    axes[1].set(xlabel="N", ylabel="E[sum w^2]", ylim=(1e-7, 2), title=f"beta = {beta:.2f}: {phase(n, beta)} phase")
    axes[1].legend()
    fig.tight_layout()
    plt.show()


from varsim.notebooks import interact  # sliders in a live notebook; the static figures below stand in elsewhere

interact(explore, lambda widgets: {"beta": widgets.FloatSlider(value=1.0, min=0.0, max=4.0, step=0.1),
                                   "log2_n": widgets.IntSlider(value=10, min=1, max=20, description="log2 N")})

# %%
# static fallback: the same figure at a few fixed values
for beta, log2_n in ((1.0, 4), (1.0, 12), (3.0, 12)):
    explore(beta, log2_n)

# %% [markdown]
# ## 6. What a downstream layer sees
# The distribution of one output coordinate narrows as $N$ grows. A layer after attention that was trained on
# short sequences sees a narrower input on long ones.
#
# **Predict, then run.** By what factor does the standard deviation of $o_0$ shrink from the shortest to the
# longest $N$ of your grid? (Hint: the square root of the ratio of the variances.)

# %%
beta0 = BETAS[0]
res = runs[beta0]
fig, ax = plt.subplots(figsize=(6, 3.5))
for i in sorted({0, len(res.n) // 2, len(res.n) - 1}):
    ax.hist(res.samples["o"][i], bins=60, density=True, histtype="step", label=f"N = {res.n[i]}")
ax.set(xlabel="o_0 (one output coordinate)", ylabel="probability density", title=f"beta = {beta0:g}")
ax.legend()
plt.show()
sd = np.array([np.std(res.samples["o"][i]) for i in range(len(res.n))])
predicted = np.sqrt(expected_ipr(res.n, beta0))
print("sd of o_0:       ", np.round(sd, 4))
print("sqrt(E[sum w^2]):", np.round(predicted, 4))
print(f"shrinks by {sd[0] / sd[-1]:.1f}x; theory {predicted[0] / predicted[-1]:.1f}x")
# the sample sd of N_SEQUENCES draws: relative SE about sqrt((kurtosis - 1) / (4 n)); 25% allows for the heavy tails
assert np.all(np.abs(sd / predicted - 1) < 0.25)

# %% [markdown]
# ## Exercises
# Try each one in a new cell before opening its solution. The solutions are checked by varsim's tests.
#
# **Exercise 1.1 (effective number of items).** Use `expected_ipr` to compute $1/\mathbb{E}[\sum w^2]$ at
# $\beta = 1$ and $N = 4096$. What fraction of the items is that? Compare with $e^{-\beta^2}$.
#
# <details><summary>Solution 1.1</summary>
#
# About $N/e$: 37% of the items are effectively attended, as the $e^{\beta^2}/N$ law says ($\ln 4096 = 8.3$ is far
# past $3\beta^2/2 = 1.5$ at $\beta = 1$, so the law is accurate here).
#
# ```python
# n_eff_11 = 1 / expected_ipr(4096, 1.0)
# print(f"N_eff = {n_eff_11:.0f}, fraction {n_eff_11 / 4096:.3f}, e^-1 = {np.exp(-1):.3f}")
# assert abs(n_eff_11 / 4096 - np.exp(-1)) < 0.01
# ```
#
# </details>
#
# **Exercise 1.2 (the value law does not matter).** Re-run `simulate` at $\beta = 1$ with uniform values of mean
# 3 and scale 2 (`value_dist="uniform", value_mean=3.0, value_scale=2.0`). What variance do you predict?
#
# <details><summary>Solution 1.2</summary>
#
# The derivation used only the variance of the values, $\sigma_v^2 = 2^2 = 4$: the mean cancels (step 1) and the
# shape of the distribution never enters. So $\mathrm{Var}(o_j) = 4\,\mathbb{E}[\sum w^2]$.
#
# ```python
# res_12 = simulate([16, 256], d_k=16, d_v=8, tau=1.0, value_dist="uniform", value_mean=3.0, value_scale=2.0,
#                   n_sequences=2000, seed=12)
# exact_12 = 4 * expected_ipr(res_12.n, 1.0)
# print("Monte Carlo", np.round(res_12.var, 4), "predicted", np.round(exact_12, 4))
# assert np.all(np.abs(res_12.var - exact_12) <= 5 * res_12.var_se + 0.01 * exact_12)
# ```
#
# </details>
#
# **Exercise 1.3 (only $\beta$ matters).** Temperature $\tau = 2$ with a query of norm $\sqrt{d_k}/2$: which
# $\beta$ is that? Check with `simulate(..., tau=2.0, query_norm=...)` that the variance is the one of $\beta = 1$.
#
# <details><summary>Solution 1.3</summary>
#
# $\beta = \tau |q|/\sqrt{d_k} = 2 \cdot (\sqrt{d_k}/2)/\sqrt{d_k} = 1$: the same logits, so the same variance.
#
# ```python
# d_13 = 16
# res_13 = simulate([16, 256], d_k=d_13, d_v=8, tau=2.0, query_norm=np.sqrt(d_13) / 2, n_sequences=2000, seed=13)
# exact_13 = expected_ipr(res_13.n, 1.0)
# assert np.all(np.abs(res_13.var - exact_13) <= 5 * res_13.var_se + 0.01 * exact_13)
# print("tau = 2, |q| = sqrt(d_k)/2 gives Var", np.round(res_13.var, 4), "= beta = 1's", np.round(exact_13, 4))
# ```
#
# </details>
#
# **Exercise 1.4 (how large is "large N"?).** At $\beta = 2$, find the $N$ at which $N\,\mathbb{E}[\sum w^2]$
# reaches 95% of $e^{\beta^2}$ (hint: `scipy.optimize.brentq` on $\ln N$). How does $\ln N$ compare with
# $3\beta^2/2 = 6$?
#
# <details><summary>Solution 1.4</summary>
#
# It takes $\ln N \approx 11$, nearly twice the phase boundary $3\beta^2/2 = 6$ ($N$ of about 70 000, not 400): the
# boundary is where the large-$N$ law starts to apply, and the crossover to it is broad.
#
# ```python
# beta_14 = 2.0
# gap_14 = lambda log_n: np.exp(log_n) * expected_ipr(np.exp(log_n), beta_14) / np.exp(beta_14**2) - 0.95
# log_n_14 = brentq(gap_14, 1.5 * beta_14**2, 40.0)
# print(f"ln N = {log_n_14:.2f} (N = {np.exp(log_n_14):.0f}); 3 beta^2/2 = {1.5 * beta_14**2}")
# assert 1.5 * beta_14**2 + 2 < log_n_14 < 3 * beta_14**2 + 2
# ```
#
# </details>

# %% [markdown]
# ## Takeaways
# * $\mathrm{Var}(o_j) = \sigma_v^2\,\mathbb{E}[\sum_i w_i^2]$ exactly (three lines: condition on the keys, law of
#   total variance). $1/\sum_i w_i^2$ is the effective number of attended items.
# * For a fixed logit scale $\beta$, that number eventually grows like $N e^{-\beta^2}$, so the variance falls like
#   $e^{\beta^2}/N$: the output of attention becomes an average over more and more items.
# * "Eventually" matters: the $1/N$ law is asymptotic, and at larger $\beta$ it needs far larger $N$ than the phase
#   boundary $\ln N = 3\beta^2/2$ suggests (27% off at $\beta = 2$, $N = 4096$). Use the exact `expected_ipr`.
# * Compare Monte Carlo with theory through z-scores: $|\text{est} - \text{exact}| \le 5\,\text{SE} + 1\%$.
#
# Next: notebook 2 (why the decay is slower at large $\beta$: the phase diagram).
