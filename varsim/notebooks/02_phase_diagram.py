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
# With Gaussian keys the logits $s_i = \beta g_i$ are i.i.d. normal with standard deviation $\beta$, and
# $Y_2 = \sum_i w_i^2$ (the *inverse participation ratio*) has an exact mean for any $N$:
#
# $$\mathbb{E}[Y_2] = N \int_0^\infty t\, L''(t)\, L(t)^{N-1}\, dt,\qquad L(t) = \mathbb{E}\, e^{-t e^{\beta g}}.$$
#
# How fast it decays with $N$ depends on $\beta$ relative to $\sqrt{\ln N}$, like the phases of Derrida's random
# energy model:
#
# | phase | condition | $\mathbb{E}[Y_2]$ |
# |---|---|---|
# | annealed | $\ln N > 3\beta^2/2$ | $\approx e^{\beta^2}/N$ (decay exponent $-1$) |
# | intermediate | $\beta^2/2 < \ln N < 3\beta^2/2$ | exponent $\approx 1/2 - \ln N/\beta^2$ |
# | frozen | $\ln N < \beta^2/2$ | $\approx 1 - \sqrt{2\ln N}/\beta$: attention stays sharp |

# %%
import matplotlib.pyplot as plt
import numpy as np

from varsim.theory import decay_exponent, effective_exponent, expected_ipr, frozen_ipr, phase

# %% [markdown]
# ## The exact curves
# $N\,\mathbb{E}[Y_2]$ is $1$ for uniform weights and tends to $e^{\beta^2}$ in the annealed phase.

# %%
n = np.geomspace(2, 1e8, 50)
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for beta in (0.5, 1.0, 2.0, 3.0):
    e = expected_ipr(n, beta)
    axes[0].loglog(n, e, label=f"beta = {beta:g}")
    axes[1].semilogx(n, decay_exponent(n, beta), label=f"beta = {beta:g}")
axes[0].set(xlabel="N", ylabel="E[sum w^2]", title="exact E[sum w^2]")
axes[1].set(xlabel="N", ylabel="d ln E / d ln N", title="exact local decay exponent")
axes[1].axhline(-1, color="k", lw=0.5)
axes[0].legend()
plt.show()

# %%
# checks: annealed limit, frozen-phase formula, exponents at the ends of the diagram
assert abs(1e8 * expected_ipr(1e8, 1.0) / np.e - 1) < 1e-3
assert abs(expected_ipr(100, 8.0) - frozen_ipr(100, 8.0)) < 0.02
assert decay_exponent(1e8, 1.0) < -0.99 and decay_exponent(10, 10.0) > -0.1
assert [phase(1e4, b) for b in (1.0, 3.0, 5.0)] == ["annealed", "intermediate", "frozen"]

# %% [markdown]
# ## The phase diagram
# Colour: the exact local decay exponent over the plane ($\ln N$, $\beta$); lines: the phase boundaries
# $\ln N = 3\beta^2/2$ and $\ln N = \beta^2/2$.

# %%
betas = np.linspace(0.25, 5.0, 16)
log_n = np.linspace(0.5, 30, 30)
gamma = np.array([decay_exponent(np.exp(log_n), b) for b in betas])


def phase_diagram(ax, beta_point=None, n_point=None):
    mesh = ax.pcolormesh(log_n, betas, gamma, vmin=-1, vmax=0, cmap="viridis", shading="auto")
    b = np.linspace(0.25, 5.0, 100)
    ax.plot(1.5 * b**2, b, "w-", label="ln N = 3 beta^2/2 (annealed to the right)")
    ax.plot(0.5 * b**2, b, "w--", label="ln N = beta^2/2 (frozen to the left)")
    if beta_point is not None:
        ax.plot(np.log(n_point), beta_point, "r*", ms=14, label=f"{phase(n_point, beta_point)}")
    ax.set(xlim=(log_n[0], log_n[-1]), ylim=(betas[0], betas[-1]), xlabel="ln N", ylabel="beta")
    ax.legend(loc="lower right", fontsize=8)
    return mesh


fig, ax = plt.subplots(figsize=(7, 4.5))
fig.colorbar(phase_diagram(ax), ax=ax, label="d ln E[sum w^2] / d ln N")
plt.show()
# the simple rule clamp(1/2 - ln N / beta^2, -1, 0) approximates the exact exponent, better at large beta
err = np.abs(gamma - np.array([effective_exponent(np.exp(log_n), b) for b in betas]))
print(f"max |exact - rule| at beta >= 4: {err[betas >= 4].max():.2f}")
assert err[betas >= 4].max() < 0.3

# %% [markdown]
# ## Explore: move beta and N
# With a notebook front end, the sliders move the point on the diagram and redraw $\mathbb{E}[Y_2]$ against $N$.
# Without one (a static page, or `ipywidgets` missing), the same figure is drawn for a few fixed values below.


# %%
def explore(beta=2.0, log10_n=3.0):
    n_point = 10.0**log10_n
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    phase_diagram(axes[0], beta, n_point)
    grid = np.geomspace(2, 1e12, 40)
    axes[1].loglog(grid, expected_ipr(grid, beta), label="exact E[sum w^2]")
    axes[1].loglog(grid, np.exp(beta**2) / grid, "--", label="e^{beta^2}/N")
    axes[1].plot(n_point, expected_ipr(n_point, beta), "r*", ms=14)
    axes[1].set(ylim=(1e-12, 2), xlabel="N", title=f"beta = {beta:.2f}, N = {n_point:.3g}: {phase(n_point, beta)}")
    axes[1].legend()
    plt.show()


try:
    import ipywidgets as widgets

    widgets.interact(explore, beta=widgets.FloatSlider(2.0, min=0.25, max=5.0, step=0.25),
                     log10_n=widgets.FloatSlider(3.0, min=0.5, max=12.0, step=0.5))
except ImportError:
    print("ipywidgets is not installed: static figures only")

# %%
# static fallback: the three phases at N = 1000
for beta in (1.0, 2.5, 4.5):
    explore(beta, 3.0)
assert [phase(1000.0, b) for b in (1.0, 2.5, 4.5)] == ["annealed", "intermediate", "frozen"]
