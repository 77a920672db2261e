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
# You wrote an attention variant. Does it behave like softmax attention where it should? `varsim.testing` turns the
# exact theory into tests:
#
# * `assert_variance_matches(attention_fn, expected, n, ...)` samples queries, keys and values, measures
#   $\mathrm{Var}(o_j)$ with a budget sized for a 3% standard error, and asserts
#   $|\text{estimate} - \text{expected}| \le 5\,\text{SE} + 1\%$;
# * `attention_configs()` is a Hypothesis strategy drawing valid, cheap test configurations;
# * `mc_settings()` and the `varsim-mc` profile switch off Hypothesis's 200 ms deadline.

# %%
import numpy as np
from hypothesis import given

from varsim.testing import assert_variance_matches, attention_configs, mc_settings, softmax_variance

# %% [markdown]
# ## An attention function
# It takes a batch: `q (S, d_k)`, `K (S, N, d_k)`, `V (S, N, d_v)` and returns `o (S, d_v)` (optionally with the
# weights `w (S, N)`).


# %%
def my_attention(q, K, V, tau=1.0):
    logits = tau * np.einsum("sd,snd->sn", q, K) / np.sqrt(q.shape[1])
    logits -= logits.max(axis=1, keepdims=True)  # max-subtraction: no overflow at large logits
    w = np.exp(logits)
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("sn,snd->sd", w, V), w


# %% [markdown]
# ## One check
# With a fixed query of norm $\sqrt{d_k}$ and $\tau = 1$, $\beta = 1$ and the exact variance is
# `softmax_variance(n, d_k=16)`.

# %%
results = assert_variance_matches(my_attention, lambda n: softmax_variance(n, d_k=16), [64, 256],
                                  d_k=16, d_v=8, rng=0)
for r in results:
    print(r.describe())

# %% [markdown]
# ## A bug, caught
# A classic slip: dividing the logits by $d_k$ instead of $\sqrt{d_k}$. The check fails with a message that says by
# how many standard errors, in which configuration, and how to reproduce it.


# %%
def buggy_attention(q, K, V):
    return my_attention(q, K, V, tau=1.0 / np.sqrt(q.shape[1]))  # logits / d_k


try:
    assert_variance_matches(buggy_attention, lambda n: softmax_variance(n, d_k=16), [64, 256], d_k=16, d_v=8, rng=0)
    caught = False
except AssertionError as exc:
    print(exc)
    caught = True
assert caught, "the 1/d_k bug should have been caught"

# %% [markdown]
# ## A property test with Hypothesis
# `attention_configs()` draws lengths, dimensions, a logit scale $\beta$ split between the temperature and the query
# norm, value laws with non-zero means, and a seed. Each draw knows its exact variance
# (`cfg.expected_variance`) and the keyword arguments of the check (`cfg.check_kwargs()`). Calling the decorated
# function runs the property test, here on three configurations.


# %%
@mc_settings(max_examples=3, derandomize=True)
@given(attention_configs())
def test_my_attention(cfg):
    print(f"N = {cfg.n_grid}, d_k = {cfg.d_k}, d_v = {cfg.d_v}, beta = {cfg.beta:.2f}, tau = {cfg.tau:.2f}, "
          f"values {cfg.value_dist} (mean {cfg.value_mean:.2f}, scale {cfg.value_scale:.2f})")
    attn = lambda q, K, V: my_attention(q, K, V, tau=cfg.tau)  # noqa: E731
    assert_variance_matches(attn, cfg.expected_variance, **cfg.check_kwargs())


test_my_attention()

# %% [markdown]
# In a test suite, put the same function in a `test_*.py` file and run `pytest`; load the Monte Carlo profile once
# (e.g. in `conftest.py`) with `settings.load_profile("varsim-mc")` after `import varsim.testing`.
