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
# # 2. Exact theory and the phase diagram
#
# **Goals.** After this notebook you can
#
# * describe the three regimes of softmax attention over $N$ random logits, *annealed*, *intermediate* and
#   *frozen*, in machine-learning words (mean pooling, a few items, a hard lookup);
# * read the phase diagram in the plane ($\ln N$, $\beta$), and say why its boundaries are *asymptotic* lines with
#   broad crossovers rather than sharp switches;
# * compute the exact $\mathbb{E}[\sum_i w_i^2]$ and its local decay exponent at any $N$ and $\beta$ with
#   `varsim.theory`, and know when the simple formulas are good enough.
#
# **Prerequisites.** Notebook 1 (the variance identity $\mathrm{Var}(o_j) = \sigma_v^2\,\mathbb{E}[\sum_i w_i^2]$, the
# logit scale $\beta$, the effective number of attended items $1/\sum_i w_i^2$). Some calculus (an integral, a
# derivative of a logarithm).
#
# **Time.** A few seconds to run; about 40 minutes with the exercises.

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import brentq

from varsim.theory import decay_exponent, effective_exponent, expected_ipr, frozen_a_n, frozen_ipr, phase

# %% [markdown]
# ## Parameters
# **This is the one cell to change**; then run all cells again. `BETA` and `N` are the point you study (it is
# marked on every figure); the checks below follow them.

# %% tags=["parameters"]
# PARAMETERS: change these, then re-run the notebook
CURVE_BETAS = (0.5, 1.0, 2.0, 3.0)  # logit scales drawn as curves (each between 0 and about 10)
BETA = 2.5  # the logit scale of the point you study (0 to about 10)
N = 1000.0  # the sequence length of the point you study (2 to N_MAX)
N_MAX = 1e8  # the curves run from N = 2 to N_MAX (at most 1e300)

# %%
# checks of the parameters
CURVE_BETAS = tuple(sorted({abs(float(b)) for b in np.atleast_1d(CURVE_BETAS)}))
BETA, N, N_MAX = abs(float(BETA)), float(N), float(N_MAX)
if not 10 <= N_MAX <= 1e300:
    raise ValueError(f"N_MAX must be between 10 and 1e300 (the exact quadrature's range); got {N_MAX:g}")
if not 2 <= N <= N_MAX:
    raise ValueError(f"N must be between 2 and N_MAX = {N_MAX:g}; got {N:g}")
if max(CURVE_BETAS + (BETA,)) > 20:
    print("beta > 20: deep in the frozen phase for every N up to 1e86; the quadrature is slower there")
print(f"the point: beta = {BETA:g}, N = {N:g} (ln N = {np.log(N):.2f}): {phase(N, BETA)} phase")

# %% [markdown]
# ## 1. Intuition: three ways attention can look
# Notebook 1 showed sorted softmax weights. Fix a large logit scale, $\beta = 3$, and let $N$ grow:
#
# **Predict, then run.** At $\beta = 3$: at $N = 10$, how many items carry most of the weight? At $N = 10^5$?

# %%
draw = np.random.default_rng(0)
fig, ax = plt.subplots(figsize=(6.5, 4))
for n in (10, 1_000, 100_000):
    z = 3.0 * draw.standard_normal((50, n))
    w = np.exp(z - z.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    top = np.sort(w, axis=1)[:, ::-1][:, :30].mean(axis=0)
    n_eff = np.median(1 / np.sum(w**2, axis=1))
    ax.plot(np.arange(1, top.size + 1), top, "o-", ms=3, label=f"N = {n:,}: {phase(n, 3.0)}, median N_eff = {n_eff:.1f}")
ax.set(xscale="log", yscale="log", xlabel="rank of the item (1 = largest weight)",
       ylabel="weight (mean over 50 draws)", title="beta = 3: the 30 largest softmax weights")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The three regimes, in machine-learning words:
#
# * **frozen** (small $N$ for this $\beta$): attention acts like a **hard lookup**, an argmax: the largest logit
#   takes most of the weight, $\sum_i w_i^2$ stays near 1 and the output is about one value vector, so its variance
#   does not shrink with $N$. *Which* item wins is decided by the random draw of the logits.
# * **annealed** (large $N$): attention acts like **mean pooling** with mild reweighting: a fixed fraction of all
#   items shares the weight, so $\sum_i w_i^2 \approx e^{\beta^2}/N$ and the output variance falls like $1/N$.
# * **intermediate**: a handful of items share the weight, and the handful grows with $N$.
#
# The names come from statistical physics. With $N$ "configurations" of random Gaussian energies, the Boltzmann
# weights at inverse temperature $\beta$ are exactly a softmax of Gaussian logits: this is Derrida's **random energy
# model** (REM), the simplest model of a glass. Below a critical temperature the weights *freeze* onto the few
# lowest-energy configurations; above it, the partition function $Z = \sum_j e^{\beta g_j}$ behaves like its mean, an
# *annealed* average. For attention, "temperature" is $1/\beta$ and the number of configurations is the sequence
# length.
#
# ## 2. The exact mean, in three lines
# Write $X_i = e^{\beta g_i}$ (so $w_i = X_i/Z$ with $Z = \sum_j X_j$) and define the **Laplace transform**
# $L(t) = \mathbb{E}\, e^{-t X}$ of one term (so $L''(t) = \mathbb{E}[X^2 e^{-tX}]$):
#
# 1. $1/Z^2 = \int_0^\infty t\, e^{-tZ}\, dt$ (the integral of $t e^{-tZ}$);
# 2. $\mathbb{E}[X_i^2/Z^2] = \int_0^\infty t\, \mathbb{E}[X_i^2 e^{-tX_i}] \prod_{j \ne i} \mathbb{E}[e^{-tX_j}]\, dt
#    = \int_0^\infty t\, L''(t) L(t)^{N-1} dt$ (independence);
# 3. sum over the $N$ items:
#
# $$\mathbb{E}\Big[\sum_i w_i^2\Big] = N \int_0^\infty t\, L''(t)\, L(t)^{N-1}\, dt.$$
#
# `expected_ipr(n, beta)` evaluates this to about 13 digits for any real $N$ up to $10^{300}$;
# `decay_exponent(n, beta)` is its **local decay exponent** $d \ln \mathbb{E}[\sum w^2] / d \ln N$ (the slope of the
# curve on a log-log plot at that $N$: $-1$ for a $1/N$ law, $0$ for no decay). A quick check against Monte Carlo at
# your point (when $N$ is small enough to sample):

# %%
exact_point = expected_ipr(N, BETA)
if N <= 20_000:
    n_int = int(round(N))
    size = max(200, 2_000_000 // n_int)
    z = BETA * draw.standard_normal((size, n_int))
    w = np.exp(z - z.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    y2 = np.sum(w**2, axis=1)
    mc, se = y2.mean(), y2.std(ddof=1) / np.sqrt(size)
    exact_int = expected_ipr(n_int, BETA)
    print(f"N = {n_int}, beta = {BETA:g}: Monte Carlo {mc:.5f} +- {se:.5f} ({size} draws), exact {exact_int:.5f}, "
          f"z = {(mc - exact_int) / se:.1f}")
    assert abs(mc - exact_int) <= 5 * se + 0.01 * exact_int
else:
    print(f"N = {N:g} is too long to sample here; exact E[sum w^2] = {exact_point:.4g}")

# %% [markdown]
# ## 3. The exact curves
# $\mathbb{E}[\sum w^2]$ is $1/N$ for uniform weights ($\beta = 0$) and 1 for a one-hot lookup.
#
# **Predict, then run.** Which curve reaches the slope $-1$ first (at the smallest $N$): $\beta = 0.5$ or $\beta = 3$?

# %%
n = np.geomspace(2, N_MAX, 60)
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for beta in CURVE_BETAS:
    axes[0].loglog(n, expected_ipr(n, beta), label=f"beta = {beta:g}")
    axes[1].semilogx(n, decay_exponent(n, beta), label=f"beta = {beta:g}")
for ax in axes:
    ax.axvline(N, color="r", lw=0.8, ls=":", label=f"your N = {N:g}")
axes[0].plot(N, exact_point, "r*", ms=12, label=f"your point (beta = {BETA:g})")
axes[0].set(xlabel="sequence length N", ylabel="E[sum w^2] (exact)", title="exact mean IPR")
axes[1].set(xlabel="sequence length N", ylabel="d ln E[sum w^2] / d ln N", title="exact local decay exponent",
            ylim=(-1.05, 0.05))
axes[1].axhline(-1, color="k", lw=0.5)
axes[0].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# checks: the annealed limit, the frozen-phase formula deep in the frozen phase, the exponents at the two ends
assert abs(1e8 * expected_ipr(1e8, 1.0) / np.e - 1) < 1e-3
assert abs(expected_ipr(100, 8.0) - frozen_ipr(100, 8.0)) < 0.02
assert decay_exponent(1e8, 1.0) < -0.99 and decay_exponent(10, 10.0) > -0.1
assert [phase(1e4, b) for b in (1.0, 3.0, 5.0)] == ["annealed", "intermediate", "frozen"]
# ... and at your point: the exponent lies between -1 and 0, and the mean IPR between 1/N and 1
g_point = decay_exponent(N, BETA)
assert -1 - 1e-9 <= g_point <= 1e-9 and 1 / N * (1 - 1e-9) <= exact_point <= 1
print(f"your point: E[sum w^2] = {exact_point:.4g} (N_eff = 1/E = {1 / exact_point:.3g}), local exponent {g_point:.3f}")

# %% [markdown]
# ## 4. The phases and their formulas
# With $b = \beta/\sqrt{\ln N}$, the limits of large $N$ *and* large $\beta$ (at fixed $b$) give:
#
# | phase | condition | $\mathbb{E}[\sum w^2]$ | attention looks like |
# |---|---|---|---|
# | annealed | $\ln N > 3\beta^2/2$ | $\to e^{\beta^2}/N$ (exponent $-1$) | mean pooling |
# | intermediate | $\beta^2/2 < \ln N < 3\beta^2/2$ | local exponent $\approx 1/2 - \ln N/\beta^2$ | a few items |
# | frozen | $\ln N < \beta^2/2$ | $\approx 1 - a_N/\beta$ (`frozen_ipr`) | a hard lookup |
#
# In the frozen row, $a_N = \sqrt{2\ln N} - \dfrac{\ln\ln N + \ln 4\pi}{2\sqrt{2\ln N}}$ is where the largest of $N$
# standard Gaussians sits (`frozen_a_n`). Its leading term alone, $1 - \sqrt{2\ln N}/\beta$, is a poor
# approximation at the $N$ of real sequences, because $\sqrt{2 \ln N}$ overestimates the maximum a lot:
#
# **Predict, then run.** At $\beta = 3$, $N = 10$: is the exact value closer to $1 - \sqrt{2\ln N}/\beta$ or to
# $1 - a_N/\beta$?

# %%
for beta, n_ in ((3.0, 10.0), (5.0, 100.0), (6.0, 1000.0), (BETA, N)):
    crude = 1 - np.sqrt(2 * np.log(n_)) / beta if beta > 0 else -np.inf
    refined = frozen_ipr(n_, beta) if beta > 0 and n_ > 1 else -np.inf
    print(f"beta = {beta:g}, N = {n_:g} ({phase(n_, beta)}): exact {expected_ipr(n_, beta):.3f}, "
          f"1 - a_N/beta = {refined:.3f}, 1 - sqrt(2 ln N)/beta = {crude:.3f}")
exact_310 = expected_ipr(10.0, 3.0)
assert abs(frozen_ipr(10.0, 3.0) - exact_310) < 0.01 and abs(1 - np.sqrt(2 * np.log(10.0)) / 3.0 - exact_310) > 0.2

# %% [markdown]
# Outside the frozen phase both formulas go wrong (they even turn negative); use `expected_ipr` there.
#
# ## 5. The boundaries are asymptotic; the crossovers are broad
# The table's conditions are limits: the exponent of the intermediate phase, clamped to $[-1, 0]$, is the
# $\beta \to \infty$ limit of the exact exponent at fixed $\ln N/\beta^2$ (`effective_exponent`). At any finite
# $\beta$ the exact exponent moves smoothly from 0 to $-1$, and at $\beta \lesssim 3$ the crossover spans the whole
# "intermediate" band and beyond. Plotted against $x = \ln N/\beta^2$ (so the boundaries sit at $x = 1/2$ and
# $x = 3/2$):

# %%
x = np.linspace(0.05, 3.0, 80)
fig, ax = plt.subplots(figsize=(6.5, 4))
for beta in (1.0, 2.0, 4.0, 8.0):
    ax.plot(x, decay_exponent(np.exp(x * beta**2), beta), label=f"exact, beta = {beta:g}")
ax.plot(x, np.clip(0.5 - x, -1, 0), "k--", label="beta -> infinity: clamp(1/2 - x, -1, 0)")
for xb in (0.5, 1.5):
    ax.axvline(xb, color="grey", lw=0.6)
ax.set(xlabel="x = ln N / beta^2", ylabel="local decay exponent", title="Phase boundaries (grey) are asymptotic")
ax.legend(fontsize=8)
plt.show()
spread = decay_exponent(np.exp(1.5 * 4.0), 2.0)
print(f"at the annealed boundary ln N = 3 beta^2/2, beta = 2: exponent {spread:.2f} (the limit says -1), "
      f"N E[sum w^2] / e^(beta^2) = {np.exp(6.0) * expected_ipr(np.exp(6.0), 2.0) / np.e**4:.2f} (the limit says 1)")
assert -0.9 < spread < -0.5

# %% [markdown]
# ## 6. The phase diagram
# Colour: the exact local decay exponent over the plane ($\ln N$, $\beta$); white lines: the phase boundaries
# $\ln N = 3\beta^2/2$ and $\ln N = \beta^2/2$; red star: your point.

# %%
betas = np.linspace(0.25, max(5.0, BETA + 0.5), 16)
log_n = np.linspace(0.5, max(30.0, np.log(N) + 2), 30)
gamma = np.array([decay_exponent(np.exp(log_n), b) for b in betas])


def phase_diagram(ax, beta_point=None, n_point=None):
    mesh = ax.pcolormesh(log_n, betas, gamma, vmin=-1, vmax=0, cmap="viridis", shading="auto")
    b = np.linspace(betas[0], betas[-1], 100)
    ax.plot(1.5 * b**2, b, "w-", label="ln N = 3 beta^2/2 (annealed to the right)")
    ax.plot(0.5 * b**2, b, "w--", label="ln N = beta^2/2 (frozen to the left)")
    if beta_point is not None:
        ax.plot(np.log(n_point), beta_point, "r*", ms=14, label=f"beta = {beta_point:g}, N = {n_point:.3g}: "
                f"{phase(n_point, beta_point)}")
    ax.set(xlim=(log_n[0], log_n[-1]), ylim=(betas[0], betas[-1]), xlabel="ln N", ylabel="beta")
    ax.legend(loc="lower right", fontsize=8)
    return mesh


fig, ax = plt.subplots(figsize=(7, 4.5))
fig.colorbar(phase_diagram(ax, BETA, N), ax=ax, label="d ln E[sum w^2] / d ln N")
plt.show()
# the clamped rule approximates the exact exponent, better at large beta (the crossovers get sharper)
err = np.abs(gamma - np.array([effective_exponent(np.exp(log_n), b) for b in betas]))
print(f"max |exact - rule|: beta <= 2: {err[betas <= 2].max():.2f}, beta >= 4: {err[betas >= 4].max():.2f}")
assert err[betas >= 4].max() < 0.3

# %% [markdown]
# ## 7. Explore: move $\beta$ and $N$
# With a live notebook (and `ipywidgets`) the sliders move the point on the diagram and redraw
# $\mathbb{E}[\sum w^2]$ against $N$. On a static page the same figure is drawn below for a few fixed values.


# %%
def explore(beta=BETA, log10_n=float(np.log10(N))):
    n_point = 10.0**log10_n
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    phase_diagram(axes[0], beta, n_point)
    grid = np.geomspace(2, 1e12, 40)
    axes[1].loglog(grid, expected_ipr(grid, beta), label="exact E[sum w^2]")
    axes[1].loglog(grid, np.exp(beta**2) / grid, "--", label="e^(beta^2)/N")
    axes[1].plot(n_point, expected_ipr(n_point, beta), "r*", ms=14)
    axes[1].set(ylim=(1e-12, 2), xlabel="N", ylabel="E[sum w^2]",
                title=f"beta = {beta:.2f}, N = {n_point:.3g}: {phase(n_point, beta)}")
    axes[1].legend()
    plt.show()


from varsim.notebooks import interact  # sliders in a live notebook; the static figures below stand in elsewhere

interact(explore, lambda widgets: {
    "beta": widgets.FloatSlider(value=min(BETA, 5.0), min=0.25, max=5.0, step=0.25),
    "log10_n": widgets.FloatSlider(value=min(np.log10(N), 12.0), min=0.5, max=12.0, step=0.5, description="log10 N")})

# %%
# static fallback: the three phases at N = 1000
for beta in (1.0, 2.5, 4.5):
    explore(beta, 3.0)
assert [phase(1000.0, b) for b in (1.0, 2.5, 4.5)] == ["annealed", "intermediate", "frozen"]

# %% [markdown]
# ## Exercises
# Try each one in a new cell before opening its solution. The solutions are checked by varsim's tests.
#
# **Exercise 2.1 (halfway).** At $\beta = 3$, find the $N$ at which the exact local exponent is $-1/2$ (hint:
# `brentq` on $\ln N$). What does the large-$\beta$ rule $1/2 - \ln N/\beta^2$ predict?
#
# <details><summary>Solution 2.1</summary>
#
# The rule predicts $\ln N = \beta^2 = 9$; the exact answer is $\ln N \approx 9.9$ ($N \approx 20\,000$): close, and
# the rule improves as $\beta$ grows.
#
# ```python
# log_n_21 = brentq(lambda l: decay_exponent(np.exp(l), 3.0) + 0.5, 0.1, 200.0)
# print(f"exact: ln N = {log_n_21:.2f} (N = {np.exp(log_n_21):.0f}); rule: ln N = 9")
# assert 9.0 < log_n_21 < 11.0
# ```
#
# </details>
#
# **Exercise 2.2 (which frozen formula?).** At $\beta = 5$, $N = 100$ ($\ln N = 4.6 < \beta^2/2 = 12.5$, frozen),
# compare the exact value with $1 - \sqrt{2\ln N}/\beta$ and with `frozen_ipr`.
#
# <details><summary>Solution 2.2</summary>
#
# Exact 0.523, refined 0.527, crude 0.393: the correction term of $a_N$ matters at every practical $N$.
#
# ```python
# exact_22 = expected_ipr(100.0, 5.0)
# crude_22, refined_22 = 1 - np.sqrt(2 * np.log(100.0)) / 5.0, frozen_ipr(100.0, 5.0)
# print(f"exact {exact_22:.3f}, refined {refined_22:.3f}, crude {crude_22:.3f}")
# assert abs(refined_22 - exact_22) < 0.02 and abs(crude_22 - exact_22) > 0.1
# ```
#
# </details>
#
# **Exercise 2.3 (mean vs typical).** Draw 20 000 sequences of $N = 1000$ logits at $\beta = 2.5$ and compute
# $\sum w^2$ for each. Check the mean against `expected_ipr` (5 SE). Is the median above or below the mean, and why?
#
# <details><summary>Solution 2.3</summary>
#
# The median is well below the mean: $\sum w^2$ is skewed, and the mean is pulled up by rare sequences in which one
# logit is unusually large (the "one big jump" behind the phase thresholds). The phases in this notebook are those
# of the *mean*, which is what the output variance measures; a typical sequence is more diffuse.
#
# ```python
# z_23 = 2.5 * np.random.default_rng(23).standard_normal((20_000, 1000))
# w_23 = np.exp(z_23 - z_23.max(axis=1, keepdims=True))
# w_23 /= w_23.sum(axis=1, keepdims=True)
# y2_23 = np.sum(w_23**2, axis=1)
# mean_23, se_23, exact_23 = y2_23.mean(), y2_23.std(ddof=1) / np.sqrt(y2_23.size), expected_ipr(1000, 2.5)
# print(f"mean {mean_23:.4f} +- {se_23:.4f}, exact {exact_23:.4f}, median {np.median(y2_23):.4f}")
# assert abs(mean_23 - exact_23) <= 5 * se_23 + 0.01 * exact_23
# assert np.median(y2_23) < 0.8 * mean_23
# ```
#
# </details>
#
# **Exercise 2.4 (does QK-norm stop the variance from vanishing?).** With QK-norm, queries and keys are normalised,
# so a logit is $s\cos\theta$ with a learned temperature $s$: it can never exceed $s$. Take head dimension
# $d = 64$ and $s = 32$, so the logit's standard deviation is $\beta = s/\sqrt d = 4$. With
# `varsim.theory.laws.logit_law("sphere", d=64)` compute the limit $A = \lim_N N\,\mathbb{E}[\sum_i w_i^2]$
# (`annealed_limit`) and the local exponent at $N = 10^9$ (`law_decay_exponent`), compare with Gaussian logits of the
# same $\beta$, and draw $N\,\mathbb{E}[\sum_i w_i^2]$ against $N$ with
# `plotting.plot_theory(..., quantity="n_ipr", law="sphere", law_params={"d": 64})`. Does the variance still vanish?
#
# <details><summary>Solution 2.4</summary>
#
# No, QK-norm does not stop it: bounded logits always end in the $1/N$ law, because $N\,\mathbb{E}[\sum_i w_i^2]$
# tends to the finite $A = \mathbb{E}[e^{2X}]/\mathbb{E}[e^X]^2 \approx 1.7\cdot 10^4$. At $N = 10^9$ the local
# exponent is already $-1.00$, while Gaussian logits of the same $\beta$ are still at $-0.64$ (their
# $A = e^{16} \approx 8.9\cdot 10^6$): without the Gaussian's tail the weights spread out *sooner*. A larger $s$
# only delays the $1/N$ law (the crossover is at $N \approx A$, which grows like $s^{(d-1)/2}$).
#
# ```python
# from varsim import plotting
# from varsim.theory.laws import annealed_limit, law_decay_exponent, logit_law
#
# qk_24, beta_24 = logit_law("sphere", d=64), 32 / np.sqrt(64)
# a_24, slope_24 = annealed_limit(qk_24, beta_24), law_decay_exponent(qk_24, 1e9, beta_24)
# print(f"QK-norm: A = {a_24:.3g}, exponent at N = 1e9: {slope_24:.2f}; "
#       f"Gaussian logits: A = {np.exp(beta_24**2):.3g}, exponent {decay_exponent(1e9, beta_24):.2f}")
# assert np.isfinite(a_24) and a_24 < 1e-2 * np.exp(beta_24**2)
# assert slope_24 < -0.99 and decay_exponent(1e9, beta_24) > -0.7
# plotting.plot_theory(np.geomspace(2, 1e12, 60), [2.0, beta_24], quantity="n_ipr", law="sphere",
#                      law_params={"d": 64})
# plt.show()
# ```
#
# </details>

# %% [markdown]
# ## Takeaways
# * Softmax over $N$ random logits of scale $\beta$ is the random energy model: frozen (a hard lookup) when
#   $\ln N < \beta^2/2$, annealed (mean pooling, $e^{\beta^2}/N$) when $\ln N > 3\beta^2/2$, intermediate between.
# * For every fixed $\beta$ the annealed phase is reached eventually: the variance always vanishes. But the
#   boundaries are asymptotic and the crossovers broad; at moderate $\beta$ use the exact `expected_ipr` and
#   `decay_exponent`, not the table.
# * In the frozen phase the refined $1 - a_N/\beta$ (`frozen_ipr`) is the usable formula; its leading term
#   $1 - \sqrt{2\ln N}/\beta$ is off by a lot at practical $N$.
# * The phases describe the *mean* of $\sum w^2$, dominated by rare sequences; a typical sequence is more diffuse.
# * Bounded logits (QK-norm, keys on the sphere) do not stop the variance from vanishing: it reaches the $1/N$ law
#   sooner than Gaussian logits of the same $\beta$ (exercise 2.4; the "Logit laws" page of the theory).
#
# Next: notebook 3 turns this theory into tests for your own attention code.
