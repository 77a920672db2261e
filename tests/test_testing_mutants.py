"""A mutant suite for varsim.testing: realistic attention bugs must fail the docs' example tests, correct
implementations written differently must pass them.

The batch-layout functions replace ``my_attention`` in the docs' example file (docs/site/examples/
test_my_attention.py) and run its three tests exactly as pytest would; the (B, H, L, d) functions go through
``adapt(fn, layout="bhld")`` as the docs' layout section shows.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from kit_checks import EXAMPLE_TESTS, load_example
from scipy.special import logsumexp, softmax

from varsim.testing import adapt, assert_matches_reference, attention_cases, mc_settings


def _logits(q, K, tau, scale=None):
    return tau * np.einsum("sd,snd->sn", q, K) / (math.sqrt(q.shape[1]) if scale is None else scale)


def _finish(logits, V, mask):
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("sn,snd->sd", w, V), w


# --- bugs, batch layout (q (S, d_k), K (S, N, d_k), V (S, N, d_v), mask (S, N)) -------------------------------------

def one_over_d(q, K, V, tau=1.0, mask=None):
    return _finish(_logits(q, K, tau, scale=q.shape[1]), V, mask)


def scaled_by_d_v(q, K, V, tau=1.0, mask=None):
    return _finish(_logits(q, K, tau, scale=math.sqrt(V.shape[2])), V, mask)


def sqrt_d_k_plus_one(q, K, V, tau=1.0, mask=None):
    return _finish(_logits(q, K, tau, scale=math.sqrt(q.shape[1] + 1)), V, mask)


def temperature_ignored(q, K, V, tau=1.0, mask=None):
    return _finish(_logits(q, K, 1.0), V, mask)


def temperature_divides(q, K, V, tau=1.0, mask=None):
    return _finish(_logits(q, K, 1.0 / tau), V, mask)


def one_biased_logit(q, K, V, tau=1.0, mask=None):
    logits = _logits(q, K, tau)
    logits[:, 0] += 1e-3
    return _finish(logits, V, mask)


def float32_inside(q, K, V, tau=1.0, mask=None):
    o, w = _finish(_logits(q.astype(np.float32), K.astype(np.float32), np.float32(tau)), V.astype(np.float32), mask)
    return o.astype(np.float64), w.astype(np.float64)


def epsilon_in_normaliser(q, K, V, tau=1.0, mask=None):
    logits = _logits(q, K, tau)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    w = e / (e.sum(axis=1, keepdims=True) + 1e-9)
    return np.einsum("sn,snd->sd", w, V), w


def drops_last_key(q, K, V, tau=1.0, mask=None):
    if K.shape[1] == 1:
        return _finish(_logits(q, K, tau), V, mask)
    o, w = _finish(_logits(q, K[:, :-1], tau), V[:, :-1], None if mask is None else mask[:, :-1])
    return o, np.concatenate([w, np.zeros((w.shape[0], 1))], axis=1)


def duplicates_first_key(q, K, V, tau=1.0, mask=None):
    K2, V2 = np.concatenate([K[:, :1], K], axis=1), np.concatenate([V[:, :1], V], axis=1)
    m2 = None if mask is None else np.concatenate([mask[:, :1], mask], axis=1)
    o, w = _finish(_logits(q, K2, tau), V2, m2)
    w = w[:, 1:].copy()
    w[:, 0] += _finish(_logits(q, K2, tau), V2, m2)[1][:, 0]
    return o, w


def weights_disagree(q, K, V, tau=1.0, mask=None):
    o, _ = _finish(_logits(q, K, tau), V, mask)
    return o, _finish(_logits(q, K, 1.0), V, mask)[1]  # the weights of another temperature


def keys_of_first_sequence(q, K, V, tau=1.0, mask=None):
    K0 = np.broadcast_to(K[:1], K.shape)
    return _finish(_logits(q, K0, tau), V, mask)


def max_added_not_subtracted(q, K, V, tau=1.0, mask=None):
    logits = _logits(q, K, tau)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits + logits.max(axis=1, keepdims=True))
        w = e / e.sum(axis=1, keepdims=True)
    return np.einsum("sn,snd->sd", w, V), w


def output_one_percent_off(q, K, V, tau=1.0, mask=None):
    o, w = _finish(_logits(q, K, tau), V, mask)
    return 1.01 * o, w


def values_centred(q, K, V, tau=1.0, mask=None):
    return _finish(_logits(q, K, tau), V - V.mean(axis=1, keepdims=True), mask)


def mask_ignored(q, K, V, tau=1.0, mask=None):
    return _finish(_logits(q, K, tau), V, None)


def mask_multiplies_logits(q, K, V, tau=1.0, mask=None):
    logits = _logits(q, K, tau)
    return _finish(logits if mask is None else logits * mask, V, None)  # masked keys get logit 0, not -inf


def softmax_over_the_batch(q, K, V, tau=1.0, mask=None):
    logits = _logits(q, K, tau)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    w = softmax(logits, axis=0)
    return np.einsum("sn,snd->sd", w, V), w


def float16_weights(q, K, V, tau=1.0, mask=None):
    o, w = _finish(_logits(q, K, tau), V, mask)
    w = w.astype(np.float16).astype(np.float64)
    return np.einsum("sn,snd->sd", w, V), w


def no_max_subtraction(q, K, V, tau=1.0, mask=None):
    logits = _logits(q, K, tau)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits) if mask is None else np.where(mask, np.exp(logits), 0.0)
        w = e / e.sum(axis=1, keepdims=True)
    return np.einsum("sn,snd->sd", w, V), w


BATCH_BUGS = [one_over_d, scaled_by_d_v, sqrt_d_k_plus_one, temperature_ignored, temperature_divides,
              one_biased_logit, float32_inside, epsilon_in_normaliser, drops_last_key, duplicates_first_key,
              weights_disagree, keys_of_first_sequence, max_added_not_subtracted, output_one_percent_off,
              values_centred, mask_ignored, mask_multiplies_logits, softmax_over_the_batch, float16_weights,
              no_max_subtraction]


# --- correct implementations written differently (batch layout) -------------------------------------------------

def loop_per_sequence(q, K, V, tau=1.0, mask=None):
    o, w = np.empty((q.shape[0], V.shape[2])), np.zeros(K.shape[:2])
    for s in range(q.shape[0]):
        keep = np.arange(K.shape[1]) if mask is None else np.flatnonzero(mask[s])
        logits = np.array([tau * float(np.dot(q[s], K[s, i])) / math.sqrt(q.shape[1]) for i in keep])
        e = np.exp(logits - logits.max())
        w[s, keep] = e / e.sum()
        o[s] = w[s, keep] @ V[s, keep]
    return o, w


def online_softmax(q, K, V, tau=1.0, mask=None, block=7):
    """Flash-attention style: blocks of keys with a running max and a rescaled running sum."""
    S, N = K.shape[:2]
    m, den, acc = np.full(S, -np.inf), np.zeros(S), np.zeros((S, V.shape[2]))
    logits = _logits(q, K, tau)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    for start in range(0, N, block):
        blk = logits[:, start:start + block]
        new_m = np.maximum(m, blk.max(axis=1))
        scale = np.exp(m - new_m)
        e = np.exp(blk - new_m[:, None])
        den = den * scale + e.sum(axis=1)
        acc = acc * scale[:, None] + np.einsum("sn,snd->sd", e, V[:, start:start + block])
        m = new_m
    w = np.exp(logits - m[:, None]) / den[:, None]
    return acc / den[:, None], w


def scipy_softmax_with_bias(q, K, V, tau=1.0, mask=None):
    bias = 0.0 if mask is None else np.where(mask, 0.0, -np.inf)
    w = softmax(np.einsum("sd,snd->sn", q * (tau / math.sqrt(q.shape[1])), K) + bias, axis=1)
    return np.einsum("sn,snd->sd", w, V), w


def log_domain_matmul(q, K, V, tau=1.0, mask=None):
    logits = np.matmul(K, q[:, :, None])[:, :, 0] * (tau / math.sqrt(q.shape[1]))
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    w = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return np.matmul(w[:, None, :], V)[:, 0, :], w


BATCH_CONTROLS = [loop_per_sequence, online_softmax, scipy_softmax_with_bias, log_domain_matmul]


# --- (B, H, L, d) layout: the bugs of multi-head, multi-query and causal code -----------------------------------------

def _bhld(q, K, V, tau, mask):
    logits = tau * np.einsum("bhld,bhnd->bhln", q, K) / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    w = np.exp(logits - logits.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("bhln,bhnd->bhld", w, V), w


def bhld_correct(q, K, V, tau=1.0, mask=None, causal=False):
    if causal:
        L, N = q.shape[2], K.shape[2]
        mask = np.arange(N)[None, :] <= (N - L + np.arange(L))[:, None]  # bottom-right aligned
    return _bhld(q, K, V, tau, mask)


def causal_top_left(q, K, V, tau=1.0, mask=None, causal=False):
    if causal:
        mask = np.tril(np.ones((q.shape[2], K.shape[2]), dtype=bool))  # query l sees keys 0..l: wrong with a cache
    return _bhld(q, K, V, tau, mask)


def heads_and_queries_swapped(q, K, V, tau=1.0, mask=None, causal=False):
    o, w = bhld_correct(q, K, V, tau, mask, causal)
    B, H, L, d_v = o.shape
    return o.transpose(0, 2, 1, 3).reshape(B, H, L, d_v), w.transpose(0, 2, 1, 3).reshape(w.shape)


def first_query_only(q, K, V, tau=1.0, mask=None, causal=False):
    o, w = bhld_correct(q[:, :, :1], K, V, tau, None if mask is None else mask[:, :, :1], causal and False)
    return np.broadcast_to(o, (*q.shape[:3], V.shape[-1])), np.broadcast_to(w, (*q.shape[:3], K.shape[2]))


BHLD_BUGS = [causal_top_left, heads_and_queries_swapped, first_query_only]


def _run_docs_tests(fn):
    """The docs' example file with ``my_attention`` replaced by ``fn``: the name of the first test that fails
    (and its message), or None when all three pass."""
    mod = load_example("varsim_docs_example_mutants")
    mod.my_attention = fn
    for name in EXAMPLE_TESTS:
        try:
            getattr(mod, name)()
        except AssertionError as exc:
            return name, str(exc)
    return None


def _run_bhld(fn):
    attn = adapt(fn, layout="bhld")

    @mc_settings(max_examples=20, derandomize=True)
    @given(attention_cases())
    def drawn(case):
        assert_matches_reference(attn, case)

    for test in (lambda: assert_matches_reference(attn), drawn):
        try:
            test()
        except AssertionError as exc:
            return str(exc)
    return None


@pytest.mark.parametrize("bug", BATCH_BUGS, ids=lambda f: f.__name__)
def test_docs_example_catches_the_bug(bug):
    caught = _run_docs_tests(bug)
    assert caught is not None, f"{bug.__name__} passed the docs' example tests"
    assert "x tolerance" in caught[1] or "non-finite" in caught[1] or "z = " in caught[1], caught[1]


@pytest.mark.parametrize("control", BATCH_CONTROLS, ids=lambda f: f.__name__)
def test_docs_example_passes_a_correct_implementation(control):
    assert _run_docs_tests(control) is None


@pytest.mark.parametrize("bug", BHLD_BUGS, ids=lambda f: f.__name__)
def test_bhld_layout_catches_the_bug(bug):
    assert _run_bhld(bug) is not None, f"{bug.__name__} passed"


def test_bhld_layout_passes_a_correct_implementation():
    assert _run_bhld(bhld_correct) is None


def test_same_draw_battery_takes_an_output_only_function():
    """Without weights the outputs alone are compared (and a 1% output error still fails)."""
    only_o = lambda q, K, V, tau=1.0, mask=None: log_domain_matmul(q, K, V, tau, mask)[0]
    assert assert_matches_reference(only_o).passed
    with pytest.raises(AssertionError, match="x tolerance"):
        assert_matches_reference(lambda q, K, V, tau=1.0, mask=None: 1.01 * only_o(q, K, V, tau, mask))


def test_causal_top_left_is_caught_by_the_single_query_case():
    """The SDPA pitfall: with one query and is_causal-style top-left alignment the query sees key 0 only. The
    failure names the single-query causal case and a weight that should be positive."""
    msg = _run_bhld(causal_top_left)
    assert "causal" in msg and "L=1" in msg or "causal-kv-cache" in msg, msg
    from varsim.testing import REFERENCE_CASES, check_against_reference

    one = [c for c in REFERENCE_CASES if c.name == "causal-one-query"]
    report = check_against_reference(adapt(causal_top_left, layout="bhld"), one)
    assert not report.passed and report.worst.case.n_queries == 1
