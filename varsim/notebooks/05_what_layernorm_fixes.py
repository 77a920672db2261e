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
# # 5. What LayerNorm after attention does and does not fix, and the remedies
#
# Notebook 1 showed that the attention output $o = \sum_i w_i v_i$ has variance $\sigma_v^2\,\mathbb{E}[\sum_i w_i^2]$,
# which falls like $1/N$. Two kinds of fix are on offer:
#
# * **on the output**: normalise $o$ after attention (LayerNorm, or divide by $\sqrt{\sum_i w_i^2}$, "ipr_norm");
# * **on the logits**: change how the weights are made so they do not spread out as $N$ grows (scalable softmax,
#   $\log N$ scaling, a critical temperature, top-$k$, sigmoid attention).
#
# The question this notebook answers: a model usually needs attention to **pick out** one item (the "correct" key,
# whose logit beats the others by a margin). Which fixes keep the **scale** of the output, and which keep the
# **selection**? Runs in well under a minute.

# %%
import matplotlib.pyplot as plt
import numpy as np

from varsim.sim import measure_variance, simulate
from varsim.theory import expected_ipr, ipr_normalized_variance, layernorm_moments
from varsim.theory.remedies import topk_ipr_bounds, variant_ipr
from varsim.variants import ipr_norm, weights

# Okabe-Ito colours (distinguishable with the common colour-vision deficiencies)
COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000"]
plt.rcParams.update({"font.size": 11, "axes.titlesize": 12, "legend.fontsize": 9})

BETA, D = 1.0, 16          # logit scale beta = tau |q| / sqrt(d_k) (fixed query of norm sqrt(d_k)); d_k = d_v = 16
N_GRID = [16, 64, 256, 1024, 4096]


def within_5se(est, se, exact):
    """varsim's rule for a Monte Carlo estimate: |est - exact| <= 5 SE + 1%."""
    est, se, exact = map(np.asarray, (est, se, exact))
    return bool(np.all(np.abs(est - exact) <= 5 * se + 0.01 * np.abs(exact)))


# %% [markdown]
# ## (a) LayerNorm restores the variance
# `measure_variance` runs our own NumPy attention on sampled queries, keys and values (the same sampling and standard
# errors as `simulate`). We compare plain softmax attention with the same output passed through a LayerNorm across its
# $d_v$ coordinates, $\mathrm{LN}(o)_c = (o_c - \bar o)/S$ ($\epsilon = 0$, no affine part).
#
# Theory: without LayerNorm $\mathrm{Var}(o_c) = \mathbb{E}[\sum_i w_i^2]$ (`expected_ipr`). With LayerNorm and Gaussian
# values, $\mathrm{LN}(o)$ is $\sqrt{d_v}$ times a uniformly random unit vector, whatever $N$ and $\beta$, so
# $\mathrm{Var}(\mathrm{LN}_c) = 1$ exactly (`layernorm_moments`).

# %%
def softmax_attention(q, K, V):
    """o (S, d_v) and w (S, N) of softmax(beta q.K^T / sqrt(d_k)) V for a batch q (S, d_k), K (S, N, d_k), V."""
    s = BETA * np.einsum("sd,snd->sn", q, K) / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("sn,snd->sd", w, V), w


def layernorm_after_attention(q, K, V):
    o, w = softmax_attention(q, K, V)
    return (o - o.mean(axis=1, keepdims=True)) / o.std(axis=1, keepdims=True), w


plain = measure_variance(softmax_attention, N_GRID, d_k=D, d_v=D, n_sequences=400, seed=1)
normed = measure_variance(layernorm_after_attention, N_GRID, d_k=D, d_v=D, n_sequences=400, seed=1)
exact_plain = expected_ipr(plain.n, BETA)
exact_ln = layernorm_moments(D)[0]
for n, a, b in zip(plain.n, plain.var, normed.var):
    print(f"N = {n:5d}: Var(o_c) = {a:.5f}   Var(LN(o)_c) = {b:.4f}")
assert within_5se(plain.var, plain.var_se, exact_plain), "plain attention disagrees with expected_ipr"
assert within_5se(normed.var, normed.var_se, exact_ln), "LayerNorm output variance is not 1"
assert plain.var[-1] < plain.var[0] / 30  # vanishes ...
assert abs(normed.var[-1] - normed.var[0]) < 0.05  # ... and is restored

# %% [markdown]
# ## ... but not the selection
# Plant a "correct" key: its logit is $\beta g_0 + m$ with a margin $m = 3$, the $N - 1$ others are $\beta g_i$,
# all $g \sim N(0, 1)$. LayerNorm acts **after** the weights, so it cannot change the weight $w_0$ on the correct key.
# For softmax, $w_0 = e^{\beta g_0 + m}/(e^{\beta g_0 + m} + \sum_{i>0} e^{\beta g_i})$ and, with the sum close to
# $(N-1)e^{\beta^2/2}$, $N\,\mathbb{E}[w_0] \to e^m$: **the correct key's weight decays like $1/N$.**
#
# What LayerNorm does to the output: it rescales $o = w_0 v_0 + (\text{the rest})$, so the correct value's share of
# $\mathrm{LN}(o)$ is the cosine between $o$ and $v_0$, about $w_0/\sqrt{\sum_i w_i^2} \sim N^{-1/2}$. The output
# has the right size, but it is mostly the average of the wrong values.

# %%
MARGIN = 3.0
N_PLANT = [16, 64, 256, 1024, 4096, 16384]
gen = np.random.default_rng(5)


def planted_logits(n, size):
    """(size, n) logits beta g with the correct key (index 0) raised by MARGIN."""
    z = BETA * gen.standard_normal((size, n))
    z[:, 0] += MARGIN
    return z


D_SHARE = 64  # value dimension for the cosine (a larger d_v makes the cosine less noisy)
w0_mean, w0_se, share = [], [], []
for n in N_PLANT:
    size = max(500, 1_000_000 // n)
    w = weights("softmax", planted_logits(n, size))
    w0 = w[:, 0]
    w0_mean.append(w0.mean())
    w0_se.append(w0.std(ddof=1) / np.sqrt(size))
    # o = w_0 v_0 + sum_{i>0} w_i v_i with Gaussian values: given w the second term is N(0, sum_{i>0} w_i^2 I),
    # so we draw it directly instead of N value vectors. Then LayerNorm, and the cosine with the correct value v_0.
    v0 = gen.standard_normal((size, D_SHARE))
    rest = np.sqrt(np.sum(w[:, 1:] ** 2, axis=1, keepdims=True)) * gen.standard_normal((size, D_SHARE))
    o = w0[:, None] * v0 + rest
    ln = (o - o.mean(1, keepdims=True)) / o.std(1, keepdims=True)
    v0n = (v0 - v0.mean(1, keepdims=True)) / v0.std(1, keepdims=True)
    share.append(np.mean(np.sum(ln * v0n, axis=1) / D_SHARE))
w0_mean, w0_se, share = map(np.array, (w0_mean, w0_se, share))
n_arr = np.array(N_PLANT)
for n, m, s in zip(N_PLANT, w0_mean, share):
    print(f"N = {n:5d}: E[w_0] = {m:.5f}  N E[w_0] = {n * m:6.2f}   cos(LN(o), v_0) = {s:.3f}")
slope_w0 = np.polyfit(np.log(n_arr[2:]), np.log(w0_mean[2:]), 1)[0]
slope_share = np.polyfit(np.log(n_arr[3:]), np.log(share[3:]), 1)[0]
print(f"log-log slopes: E[w_0] {slope_w0:.3f} (N >= 256), correct value's share after LayerNorm {slope_share:.3f} "
      f"(N >= 1024)")
# N E[w_0] -> e^m (within 5 SE and 3%: the finite-N corrections are ~ e^m/N and (e^{beta^2} - 1)/N)
assert abs(n_arr[-1] * w0_mean[-1] - np.exp(MARGIN)) <= 5 * n_arr[-1] * w0_se[-1] + 0.03 * np.exp(MARGIN)
assert -1.05 < slope_w0 < -0.9       # the planted weight decays like 1/N, LayerNorm or not
assert -0.65 < slope_share < -0.35   # its share of the normalised output like N^(-1/2) (once it is small)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
ax = axes[0]
ax.errorbar(plain.n, plain.var, yerr=plain.var_se, fmt="o", color=COLORS[0], label="no LayerNorm (Monte Carlo)")
ax.plot(plain.n, exact_plain, "-", color=COLORS[0], label="exact E[sum w^2]")
ax.errorbar(normed.n, normed.var, yerr=normed.var_se, fmt="s", color=COLORS[1], label="LayerNorm (Monte Carlo)")
ax.axhline(exact_ln, ls="--", color=COLORS[1], label="exact: 1")
ax.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="Var of one output coordinate",
       title="LayerNorm restores the scale")
ax.legend()
ax = axes[1]
ax.errorbar(n_arr, w0_mean, yerr=w0_se, fmt="o", color=COLORS[2], label="weight on the correct key E[w_0]")
ax.plot(n_arr, np.exp(MARGIN) / n_arr, "--", color=COLORS[2], label="e^m / N")
ax.plot(n_arr, share, "s-", color=COLORS[3], label="cos(LN(o), v_0): correct value's share")
ax.set(xscale="log", yscale="log", xlabel="sequence length N", title=f"... not the selection (margin m = {MARGIN:g})")
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## (b) Remedies on the logits
# Each remedy is a weight map in `varsim.variants`; `simulate(..., attention=NAME)` runs it. With the `"logits"`
# sampler (draw the $N$ logits $\beta g_i$ directly) and the Rao-Blackwell estimator
# ($\mathrm{Var}(o_c) = \sigma_v^2\,\mathbb{E}[\sum_i w_i^2]$, no values drawn) long sequences are cheap.
# `variant_ipr` gives the exact $\mathbb{E}[\sum_i w_i^2]$ where one exists:
#
# | remedy | weights | exact |
# |---|---|---|
# | softmax | $\mathrm{softmax}(z)$ | `expected_ipr` |
# | ssmax (scalable softmax) | $\mathrm{softmax}(s \ln N\, z)$, default $s = 1/\ln 16$ | softmax at $\beta s \ln N$ |
# | critical | $\mathrm{softmax}(c\sqrt{2\ln N}\,z/\beta_0)$ | softmax at that $\beta$ |
# | sigmoid | $\mathrm{sigmoid}(z - \ln N)$ | one integral (`sigmoid_moments`) |
# | topk ($k = 8$) | softmax over the $k$ largest | none; $1/k \le \sum w^2 \le 1$ |
#
# (`logn`, $\max(1, \ln N/\ln N_0)$, is the same map as ssmax with $s = 1/\ln N_0$ once $N \ge N_0$.)

# %%
REMEDIES = {"softmax": {}, "ssmax": {}, "critical": {}, "sigmoid": {}, "topk": {"k": 8}}
N_LONG = [16, 128, 1024, 8192]
runs, exact = {}, {}
for name, params in REMEDIES.items():
    runs[name] = simulate(N_LONG, tau=BETA, sampler="logits", estimator="rao_blackwell", attention=name,
                          n_sequences=800, seed=2, **params)
    try:
        exact[name] = variant_ipr(name, runs[name].n, BETA, **params)
    except ValueError:  # topk has no closed form
        exact[name] = None
for name, res in runs.items():
    line = f"{name:9s} E[sum w^2] = {np.array2string(res.ipr, precision=4)}"
    if exact[name] is not None:
        z = (res.ipr - exact[name]) / res.ipr_se
        line += f"  z-scores vs exact {np.round(z, 1)}"
        assert within_5se(res.ipr, res.ipr_se, exact[name]), f"{name}: Monte Carlo disagrees with variant_ipr"
    print(line)
lo, hi = topk_ipr_bounds(8)
assert np.all((runs["topk"].ipr >= lo) & (runs["topk"].ipr <= hi))
logn = simulate(N_LONG, tau=BETA, sampler="logits", estimator="rao_blackwell", attention="logn", n0=16.0,
                n_sequences=800, seed=2)
assert np.allclose(logn.ipr, runs["ssmax"].ipr, rtol=1e-9)  # the same map on the same draws (up to rounding)
# softmax and sigmoid still vanish; the others do not
for name in ("softmax", "sigmoid"):
    assert runs[name].ipr[-1] < runs[name].ipr[0] / 100
for name in ("ssmax", "critical", "topk"):
    assert runs[name].ipr[-1] > runs[name].ipr[0] / 4

# %% [markdown]
# And the planted key under each remedy (same margin $m = 3$ on the raw logit; each map applies its own $N$-dependent
# scaling to all logits, margin included):

# %%
planted = {name: [] for name in REMEDIES}
for n in N_PLANT:
    z = planted_logits(n, max(200, 400_000 // n))
    for name, params in REMEDIES.items():
        planted[name].append(weights(name, z, **params)[:, 0].mean())
planted = {k: np.array(v) for k, v in planted.items()}
for name, v in planted.items():
    print(f"{name:9s} E[w_0] = {np.array2string(v, precision=3)}")
tail = {name: np.polyfit(np.log(N_PLANT[2:]), np.log(v[2:]), 1)[0] for name, v in planted.items()}
print("log-log slopes of E[w_0] for N >= 256:", {k: round(float(v), 2) for k, v in tail.items()})
for name in ("softmax", "sigmoid"):
    assert tail[name] < -0.9              # sigmoid(z - ln N) decays like 1/N, as softmax does
for name in ("ssmax", "critical", "topk"):
    assert tail[name] > -0.5              # much slower ...
    assert planted[name][-1] > 20 * planted["softmax"][-1]
    assert planted[name][-1] < planted[name][2] / 2  # ... but with a fixed margin it still decays

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for (name, res), color in zip(runs.items(), COLORS):
    axes[0].errorbar(res.n, res.ipr, yerr=res.ipr_se, fmt="o", color=color, label=f"{name} (Monte Carlo)")
    if exact[name] is not None:
        axes[0].plot(res.n, exact[name], "-", color=color)
    axes[1].plot(N_PLANT, planted[name], "o-", color=color, label=name)
axes[0].axhspan(lo, hi, color=COLORS[4], alpha=0.1, label="topk bounds [1/k, 1]")
axes[0].set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="E[sum w^2] = Var(o_c) / sigma_v^2",
            title="Remedies on the logits (lines: exact)")
axes[1].set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="E[w_0]",
            title="Weight on the planted correct key")
axes[0].legend()
axes[1].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# Sigmoid attention keeps each weight independent of the others, but its $-\ln N$ bias makes every weight, the
# correct one included, shrink like $1/N$: at fixed $\beta$ it fixes neither problem. Scalable softmax, the critical
# temperature and top-$k$ keep $\mathbb{E}[\sum w^2]$ from vanishing and slow the loss of the correct key a lot
# (slope about $-0.3$ instead of $-1$), but with a **fixed** margin no weight map keeps it for ever: the largest of
# $N - 1$ Gaussian distractors grows like $\sqrt{2\ln N}$ and eventually beats $g_0 + m/\beta$ (sharpening then helps
# the wrong key). Retrieval at any length needs a margin that grows with $N$, which is what training has to learn.
#
# ## (c) ipr_norm: the exact scale, still no selection
# Dividing the output by $\sqrt{\sum_i w_i^2}$ (the weights are known inside the layer) gives, for values independent
# of the keys with known mean $\mu_v$, $\mathrm{Var}((o_c - \mu_c)/\sqrt{\sum w^2}) = \sigma_v^2$ **exactly**, at every
# $N$ (`ipr_normalized_variance`). The registry's `ipr_norm` centres with the example's own value mean $\bar v$
# instead of $\mu_v$; then the variance is $\sigma_v^2(1 - \mathbb{E}[1/(N\sum_i w_i^2)])$, which tends to the
# constant $\sigma_v^2(1 - e^{-\beta^2})$ at large $N$, not to $\sigma_v^2$. Neither touches the weights, so the
# planted key's weight is exactly the softmax one from part (a).

# %%
def ipr_known_mean(q, K, V):
    o, w = softmax_attention(q, K, V)
    return o / np.sqrt(np.sum(w * w, axis=1, keepdims=True)), w  # mu_v = 0 here


def ipr_norm_registry(q, K, V):
    o, w = softmax_attention(q, K, V)
    return ipr_norm(o, w, V), w


known = measure_variance(ipr_known_mean, N_GRID, d_k=D, d_v=D, n_sequences=400, seed=1)  # the draws of part (a)
reg = measure_variance(ipr_norm_registry, N_GRID, d_k=D, d_v=D, n_sequences=400, seed=1)
print("known mean:", np.round(known.var, 3), "+-", np.round(known.var_se, 3))
print("ipr_norm  :", np.round(reg.var, 3), "+-", np.round(reg.var_se, 3),
      f"(large-N limit 1 - e^-beta^2 = {1 - np.exp(-BETA**2):.3f})")
assert within_5se(known.var, known.var_se, ipr_normalized_variance(1.0))
assert within_5se(reg.var[-1], reg.var_se[-1], 1 - np.exp(-BETA**2))
assert np.array_equal(known.ipr, plain.ipr) and np.array_equal(reg.ipr, plain.ipr)  # the weights are untouched

# %% [markdown]
# ## Summary
#
# | fix | output scale at long $N$ | weight on the correct key |
# |---|---|---|
# | none (softmax) | vanishes, $\sim 1/N$ | vanishes, $\sim e^m/N$ |
# | LayerNorm after attention | restored (exactly 1) | vanishes; the output is mostly the wrong values |
# | ipr_norm | restored ($\sigma_v^2$ with the known mean) | vanishes |
# | sigmoid | vanishes | vanishes, $\sim 1/N$ |
# | ssmax / logn, topk | kept | decays much more slowly (here $\sim N^{-0.3}$), not kept at a fixed margin |
# | critical | decays, but slowly (beta held at the frozen-phase edge) | as ssmax |
#
# Output-side normalisation fixes what a **downstream** layer sees (its input distribution), not what attention
# **retrieves**. Whether a trained model generalises better with one or the other is an experiment:
# `varsim reproduce --preset remedies` trains the tiny transformer with each variant. Its results are not committed
# to the repository yet, so this notebook makes no claim about them.
