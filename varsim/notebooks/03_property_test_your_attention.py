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
# # 3. Property-test your own attention
#
# **Goals.** After this notebook you can
#
# * test an attention implementation against the exact theory with `varsim.testing.assert_variance_matches`, and
#   read its failure message (z-score, configuration, how to reproduce);
# * say which bugs a *statistical* test catches (a wrong scale such as $1/d_k$ instead of $1/\sqrt{d_k}$, mean
#   pooling) and which it cannot (anything that leaves the distribution of the output unchanged);
# * write a Hypothesis property test that draws many valid configurations for you.
#
# **Prerequisites.** Notebook 1 (the variance identity and the 5 SE rule); writing a `pytest` test; NumPy
# broadcasting (`einsum`). Hypothesis is explained as we go.
#
# **Time.** About 20 seconds to run; 30 minutes with the exercises.
#
# You wrote an attention variant. Does it behave like softmax attention where it should? `varsim.testing` turns the
# exact theory into tests:
#
# * `assert_variance_matches(attention_fn, expected, n, ...)` samples queries, keys and values, measures
#   $\mathrm{Var}(o_j)$ with a budget sized for a 3% standard error, and asserts
#   $|\text{estimate} - \text{expected}| \le 5\,\text{SE} + 1\%$ at every length;
# * `softmax_variance(n, d_k=..., tau=...)` is the exact expected value for softmax attention;
# * `attention_configs()` is a Hypothesis strategy drawing valid, cheap test configurations;
# * `mc_settings()` (and the `varsim-mc` Hypothesis profile) switches off Hypothesis's 200 ms deadline, which Monte
#   Carlo checks would exceed.

# %%
import numpy as np
from hypothesis import given

from varsim.testing import (assert_ipr_matches, assert_variance_matches, attention_configs, mc_settings,
                            softmax_attention, softmax_ipr, softmax_variance)

# %% [markdown]
# ## Parameters
# **This is the one cell to change**; then run all cells again. The checks below compute what to expect at your
# values.

# %% tags=["parameters"]
# PARAMETERS: change these, then re-run the notebook
D_K = 16  # key dimension (8 to 128)
D_V = 8  # value dimension (1 to 64)
N_GRID = [64, 256]  # sequence lengths to check (2 to about 2000)
TAU = 1.0  # temperature of the logits q.k / sqrt(d_k); with the fixed query of norm sqrt(d_k), beta = TAU
SEED = 0  # seed of the Monte Carlo runs
MAX_EXAMPLES = 3  # configurations the Hypothesis property test draws (each takes about a second)

# %%
# checks of the parameters
N_GRID = sorted({int(n) for n in np.atleast_1d(N_GRID)})
if N_GRID[0] < 2:
    raise ValueError(f"N_GRID: lengths must be at least 2; got {N_GRID}")
if D_K < 8:
    print(f"D_K = {D_K}: with d_k < 8 the 1/d_k bug below is hard to tell from 1/sqrt(d_k)")
TAU = float(TAU)
print(f"d_k = {D_K}, d_v = {D_V}, N in {N_GRID}, tau = beta = {TAU:g}")

# %% [markdown]
# ## An attention function
# It takes a batch: `q (S, d_k)`, `K (S, N, d_k)`, `V (S, N, d_v)` and returns `o (S, d_v)` (optionally with the
# weights `w (S, N)`).


# %%
def my_attention(q, K, V, tau=TAU):
    logits = tau * np.einsum("sd,snd->sn", q, K) / np.sqrt(q.shape[1])
    logits -= logits.max(axis=1, keepdims=True)  # max-subtraction: no overflow at large logits
    w = np.exp(logits)
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("sn,snd->sd", w, V), w


# %% [markdown]
# ## One check
# With the default fixed query of norm $\sqrt{d_k}$, the logit scale is $\beta = \tau$ and the exact variance is
# `softmax_variance(n, d_k=D_K, tau=TAU)`.
#
# **Predict, then run.** The check passes when the z-score is small. For a correct implementation, what values
# of $z$ do you expect to see, roughly?

# %%
expected = lambda n: softmax_variance(n, d_k=D_K, tau=TAU)  # noqa: E731
results = assert_variance_matches(my_attention, expected, N_GRID, d_k=D_K, d_v=D_V, rng=SEED)
for r in results:
    print(r.describe())

# %% [markdown]
# A correct implementation gives $|z|$ of order 1 (a standard normal number); the check allows 5 plus 1% of the
# expected value, so a correct implementation fails it about once in a million runs.
#
# ## A bug, caught
# A classic slip: dividing the logits by $d_k$ instead of $\sqrt{d_k}$. That is the same as a temperature
# $\tau/\sqrt{d_k}$, so $\beta$ shrinks by $\sqrt{d_k}$ and the weights are flatter.
#
# **Predict, then run.** Will the bug make the variance larger or smaller than expected?


# %%
def buggy_attention(q, K, V):
    return my_attention(q, K, V, tau=TAU / np.sqrt(q.shape[1]))  # logits / d_k


# how far apart the two are at these parameters: the check resolves about 5 x 3% + 1% = 16%
gap = np.max(np.abs(softmax_variance(N_GRID, d_k=D_K, tau=TAU / np.sqrt(D_K)) / expected(np.array(N_GRID)) - 1))
print(f"the bug changes the expected variance by up to {gap:.0%} at these parameters")
try:
    assert_variance_matches(buggy_attention, expected, N_GRID, d_k=D_K, d_v=D_V, rng=SEED)
    caught = False
except AssertionError as exc:
    print(exc)
    caught = True
if gap > 0.3:
    assert caught, "the 1/d_k bug should have been caught"
elif not caught:
    print(f"Not caught: at tau = {TAU:g} the weights are nearly uniform either way, so the variances differ by only "
          f"{gap:.0%}, within the check's resolution. Make tau (beta) larger to expose the bug.")

# %% [markdown]
# The message says by how many standard errors the estimate missed, in which configuration, and which `rng` value
# reproduces the run. A statistical test checks a *property* (here the output variance); it catches every bug that
# changes that property by more than its resolution, whatever the code looks like.
#
# ## A property test with Hypothesis
# [Hypothesis](https://hypothesis.readthedocs.io) runs a test function on many generated inputs. The strategy
# `attention_configs()` draws lengths, dimensions, a logit scale $\beta$ split between the temperature and the query
# norm, value laws with non-zero means, and a seed, all in the annealed regime where the checks are cheap. Each
# draw knows its exact variance (`cfg.expected_variance`) and the keyword arguments of the check
# (`cfg.check_kwargs()`). Calling the decorated function runs the property test.
#
# **Predict, then run.** The temperature and the query norm change from one draw to the next. Does
# `my_attention` need to know the query norm?


# %%
@mc_settings(max_examples=MAX_EXAMPLES, derandomize=True)
@given(attention_configs())
def test_my_attention(cfg):
    print(f"N = {cfg.n_grid}, d_k = {cfg.d_k}, d_v = {cfg.d_v}, beta = {cfg.beta:.2f}, tau = {cfg.tau:.2f}, "
          f"values {cfg.value_dist} (mean {cfg.value_mean:.2f}, scale {cfg.value_scale:.2f})")
    attn = lambda q, K, V: my_attention(q, K, V, tau=cfg.tau)  # noqa: E731
    assert_variance_matches(attn, cfg.expected_variance, **cfg.check_kwargs())


test_my_attention()

# %% [markdown]
# It does not: the query is an input like the keys, and the logit scale $\beta = \tau |q|/\sqrt{d_k}$ follows from
# it. In a test suite, put the same function in a `test_*.py` file and run `pytest`; load the Monte Carlo profile
# once (e.g. in `conftest.py`) with `settings.load_profile("varsim-mc")` after `import varsim.testing`.
#
# ## Exercises
# Try each one in a new cell before opening its solution. The solutions are checked by varsim's tests.
#
# **Exercise 3.1 (mean pooling).** Write `mean_pooling(q, K, V)` that ignores the keys and averages the values
# (uniform weights). What variance does it have? Show that `assert_variance_matches` rejects it as softmax attention
# at $\tau = 1$, $d_k = 16$.
#
# <details><summary>Solution 3.1</summary>
#
# Uniform weights have $\sum w^2 = 1/N$ exactly, against $\approx e/N$ for softmax at $\beta = 1$: a factor of
# about 2.7, tens of standard errors.
#
# ```python
# def mean_pooling(q, K, V):
#     w = np.full(K.shape[:2], 1.0 / K.shape[1])
#     return np.einsum("sn,snd->sd", w, V), w
#
#
# try:
#     assert_variance_matches(mean_pooling, lambda n: softmax_variance(n, d_k=16, tau=1.0), [64, 256],
#                             d_k=16, d_v=8, rng=31)
#     caught_31 = False
# except AssertionError as exc:
#     caught_31 = True
#     print(str(exc).splitlines()[0])
# assert caught_31
# # ... and it is exactly what the theory says for uniform weights (beta = 0):
# assert_variance_matches(mean_pooling, lambda n: 1.0 / n, [64, 256], d_k=16, d_v=8, rng=31)
# ```
#
# </details>
#
# **Exercise 3.2 (a change that is not a bug).** Remove the max-subtraction line from `my_attention`. Does the
# variance check still pass at $\tau = 1$? Why was the line there?
#
# <details><summary>Solution 3.2</summary>
#
# It passes: softmax is unchanged when a constant is added to every logit, so the max-subtraction does not change
# the result, only the arithmetic. It protects against overflow: `np.exp(800.0)` is `inf`, and a sequence with a
# logit of 800 would give `nan` weights without it. A variance test at moderate $\tau$ cannot see that; a test with
# huge logits can.
#
# ```python
# def no_max_subtraction(q, K, V):
#     w = np.exp(np.einsum("sd,snd->sn", q, K) / np.sqrt(q.shape[1]))
#     w /= w.sum(axis=1, keepdims=True)
#     return np.einsum("sn,snd->sd", w, V), w
#
#
# assert_variance_matches(no_max_subtraction, lambda n: softmax_variance(n, d_k=16, tau=1.0), [64, 256],
#                         d_k=16, d_v=8, rng=32)
# q_32 = np.full((1, 4), 400.0)  # logits 800, 400 and 0
# K_32, V_32 = np.ones((1, 3, 4)) * [[[1.0], [0.5], [0.0]]], np.eye(3)[None]
# with np.errstate(over="ignore", invalid="ignore"):
#     assert np.isnan(no_max_subtraction(q_32, K_32, V_32)[0]).any()
# assert np.allclose(my_attention(q_32, K_32, V_32, tau=1.0)[0], [[1.0, 0.0, 0.0]])
# ```
#
# </details>
#
# **Exercise 3.3 (a bug no statistical test can catch).** Write an attention that applies the correct weights to
# the values *in reverse order* (`V[:, ::-1]`). Does it pass the variance check? The IPR check
# (`assert_ipr_matches` with `softmax_ipr`)? How would you catch it?
#
# <details><summary>Solution 3.3</summary>
#
# It passes both: keys and values are independent and identically distributed across positions, so reversing the
# values does not change the *distribution* of the output, only which value goes with which key. A statistical test
# checks a distribution; to check the function itself, compare with a reference on fixed inputs
# (`varsim.testing.softmax_attention`). Use both kinds of test.
#
# ```python
# def reversed_values(q, K, V):
#     o, w = my_attention(q, K, V, tau=1.0)
#     return np.einsum("sn,snd->sd", w, V[:, ::-1]), w
#
#
# assert_variance_matches(reversed_values, lambda n: softmax_variance(n, d_k=16, tau=1.0), [64], d_k=16, d_v=8,
#                         rng=33)
# assert_ipr_matches(reversed_values, lambda n: softmax_ipr(n, d_k=16, tau=1.0), [64], d_k=16, d_v=8, rng=33)
# gen_33 = np.random.default_rng(33)
# q_33, K_33, V_33 = gen_33.standard_normal((2, 16)), gen_33.standard_normal((2, 5, 16)), gen_33.standard_normal((2, 5, 8))
# o_ref_33, _ = softmax_attention(q_33, K_33, V_33, tau=1.0)
# assert np.allclose(my_attention(q_33, K_33, V_33, tau=1.0)[0], o_ref_33)
# assert not np.allclose(reversed_values(q_33, K_33, V_33)[0], o_ref_33)
# ```
#
# </details>

# %% [markdown]
# ## Takeaways
# * `assert_variance_matches(fn, expected, n, ...)` is a one-line statistical test against the exact theory; a
#   correct implementation gives $|z| \sim 1$, and the check fails only beyond 5 SE + 1%.
# * It catches any bug that changes the variance by more than its resolution ($1/d_k$ scaling, mean pooling) and
#   tells you how to reproduce the failure. Whether a bug is visible depends on the parameters: at small $\beta$
#   flat and sharp weights look alike.
# * It cannot catch bugs that leave the output's distribution unchanged; pair it with a comparison against a
#   reference implementation on fixed inputs.
# * `attention_configs()` + `mc_settings()` turn the check into a Hypothesis property test over many valid
#   configurations.
#
# Next: notebook 4 trains a small transformer and watches the vanishing variance break it at long sequences.
