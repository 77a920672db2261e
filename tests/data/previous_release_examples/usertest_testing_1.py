"""Test a user-written attention with varsim.testing (run it with pytest)."""
import numpy as np
from hypothesis import given
from scipy.special import logsumexp

from varsim.testing import (
    assert_ipr_matches,
    assert_matches_reference,
    assert_variance_matches,
    attention_cases,
    attention_configs,
    mc_settings,
)


def my_attention(q, K, V, tau=1.0, mask=None):
    """q (S, d_k), K (S, N, d_k), V (S, N, d_v), mask (S, N) True = attend -> o (S, d_v), w (S, N)."""
    logits = tau * np.einsum("sd,snd->sn", q, K) / np.sqrt(q.shape[1])
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    w = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return np.einsum("sn,snd->sd", w, V), w


def test_same_draw_battery():  # yours and a float64 reference on identical q, K, V, masks: 16 cases
    assert_matches_reference(my_attention)


@mc_settings(max_examples=20, derandomize=True)  # no deadline, no shrinking: a failing example fails at once
@given(attention_cases())  # shapes, beta in [0.5, 3] or huge, tau != 1, d_k != d_v, masks, key laws, float32
def test_same_draw_drawn_cases(case):
    assert_matches_reference(my_attention, case)


@mc_settings(max_examples=3, derandomize=True)
@given(attention_configs())  # lengths, dimensions, beta = tau |q| / sqrt(d_k), value laws, a seed
def test_my_attention_matches_the_theory(cfg):
    attn = lambda q, K, V: my_attention(q, K, V, tau=cfg.tau)  # noqa: E731
    # Var(o_j) = value_scale^2 E[sum w^2] and E[sum w^2] itself, within 5 SE + 1% of the exact values
    assert_variance_matches(attn, cfg.expected_variance, **cfg.check_kwargs())
    assert_ipr_matches(attn, cfg.expected_ipr, **cfg.check_kwargs())
