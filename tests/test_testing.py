"""varsim.testing: the checks pass on correct attention and fail on known-wrong ones; strategies, profiles, rng."""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varsim.sim import measure_variance
from varsim.testing import (
    MC_PROFILE,
    MC_PROFILE_DERANDOMIZED,
    AttentionConfig,
    annealed_beta_max,
    assert_ipr_matches,
    assert_mean_matches,
    assert_variance_matches,
    attention_configs,
    attention_fn,
    check_statistic,
    mc_settings,
    n_grids,
    softmax_attention,
    softmax_ipr,
    softmax_variance,
)

D_K, D_V = 16, 8
REF = attention_fn("softmax")


def _var(d_k=D_K, **kw):
    return lambda n: softmax_variance(n, d_k=d_k, **kw)


# --- known-wrong attention functions ------------------------------------------------------------------------------

def scale_one_over_d(q, K, V):
    """Logits divided by d_k instead of sqrt(d_k)."""
    logits = np.matmul(K, q[:, :, None])[:, :, 0] / q.shape[1]
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return np.matmul(w[:, None, :], V)[:, 0, :], w


def mean_pooling(q, K, V):
    """Uniform weights whatever the logits."""
    w = np.full(K.shape[:2], 1.0 / K.shape[1])
    return V.mean(axis=1), w


def no_max_subtraction(q, K, V):
    """exp of the raw logits: overflows to inf/inf = NaN once a logit exceeds ~709."""
    logits = np.matmul(K, q[:, :, None])[:, :, 0] / math.sqrt(q.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits)
        w = e / e.sum(axis=1, keepdims=True)
    return np.matmul(w[:, None, :], V)[:, 0, :], w


def ignores_temperature(tau):
    def attn(q, K, V):
        """Claims temperature tau, applies 1."""
        return softmax_attention(q, K, V, tau=1.0)
    return attn


def unnormalised(q, K, V):
    """exp(logits - max) without dividing by the sum: weights do not sum to 1."""
    logits = np.matmul(K, q[:, :, None])[:, :, 0] / math.sqrt(q.shape[1])
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    return np.matmul(w[:, None, :], V)[:, 0, :]


# --- the reference passes -----------------------------------------------------------------------------------------

def test_reference_attention_passes_variance_ipr_and_mean_checks():
    """Var(o_j) = E[sum w^2] (beta = 1), E[sum w^2] itself, and E[o_j] = value_mean, at N = 64 and 256, with a
    non-Gaussian value law and a non-zero mean (neither enters Var(o_j)). A check that is too strict (an SE
    estimate that is too small, a wrong reference) fails here."""
    opts = dict(d_k=D_K, d_v=D_V, value_dist="uniform", value_mean=2.5, value_scale=1.5, rng=3)
    res = assert_variance_matches(REF, _var(value_scale=1.5), [64, 256], **opts)
    assert [r.n for r in res] == [64, 256] and all(r.passed and abs(r.z) < 5 for r in res)
    assert all(r.se / r.estimate < 0.08 for r in res)  # the budget reached roughly the 3% target
    assert_ipr_matches(REF, lambda n: softmax_ipr(n, d_k=D_K), [64, 256], **opts)
    assert_mean_matches(REF, 2.5, [64], **opts)


# varsim.theory.expected_ipr(16, 1000): ~10 s of quadrature (the grid grows with beta), so the default tests use the
# value and test_slow_reference_constants recomputes it.
IPR_16_BETA_1000 = 0.9982340100613076
# THEORY.md 2.1: random query, d_k = 16, N = 64: N E[sum w^2] = 2.53779 (random_query_ipr, ~2 s)
NIPR_RANDOM_16_64 = 2.53779


def test_reference_passes_at_huge_logits_and_random_query():
    """beta = 1000 (logits ~ +-1000: frozen phase, attention ~ argmax) stays finite and matches the exact
    E[sum w^2]; a random query matches the exact chi-mixture at d_k = 16, N = 64."""
    assert_variance_matches(REF, IPR_16_BETA_1000, [16], d_k=D_K, d_v=D_V, query_norm=1000 * math.sqrt(D_K), rng=1)
    assert_variance_matches(REF, NIPR_RANDOM_16_64 / 64, [64], d_k=D_K, d_v=D_V, query="random", rng=2)


@pytest.mark.slow
def test_slow_reference_constants():
    """The constants above are what softmax_ipr (fixed query at |q| = 1000 sqrt(d_k); random query) computes."""
    assert softmax_ipr(16, d_k=16, query_norm=1000 * math.sqrt(16)) == pytest.approx(IPR_16_BETA_1000, rel=1e-10)
    assert softmax_ipr(64, d_k=16, query="random") == pytest.approx(NIPR_RANDOM_16_64 / 64, rel=1e-5)


@mc_settings(max_examples=3, derandomize=True)
@given(cfg=attention_configs())
def test_reference_passes_on_drawn_configurations(cfg):
    """Property: plain softmax at the drawn temperature matches the exact Var(o_j) on every drawn configuration
    (lengths, dimensions, beta split into tau and |q|, value laws and means). Catches a reference or check that
    mishandles tau, |q|, the value scale or the mean."""
    assert_variance_matches(attention_fn("softmax", tau=cfg.tau), cfg.expected_variance, **cfg.check_kwargs())


# --- known-wrong attention fails ----------------------------------------------------------------------------------

@pytest.mark.parametrize("wrong, kwargs, expected", [
    (scale_one_over_d, {}, _var()),
    (mean_pooling, {}, _var()),
    (ignores_temperature(0.5), {}, _var(tau=0.5)),
])
def test_wrong_attention_fails_the_variance_check(wrong, kwargs, expected):
    """1/d scaling (beta 1 -> 1/4), mean pooling (E[sum w^2] = 1/N) and an ignored temperature (beta 0.5 -> 1)
    each fail at N = 64, 256 with |z| >> 5, while the reference passes the same configuration and seed."""
    opts = dict(d_k=D_K, d_v=D_V, rng=11, **kwargs)
    assert_variance_matches(attention_fn("softmax", tau=0.5 if "temperature" in wrong.__qualname__ else 1.0),
                            expected, [64, 256], **opts)
    with pytest.raises(AssertionError) as info:
        assert_variance_matches(wrong, expected, [64, 256], **opts)
    zs = [float(z) for z in re.findall(r"z = ([+-][0-9.]+)", str(info.value))]
    assert len(zs) == 2 and min(abs(z) for z in zs) > 8, str(info.value)


def test_missing_max_subtraction_fails_with_an_overflow_message():
    """Without max-subtraction the softmax overflows at beta = 1000: the check fails (not crashes), names the
    non-finite output and the likely cause, and the reference passes the same configuration."""
    opts = dict(d_k=D_K, d_v=D_V, query_norm=1000 * math.sqrt(D_K), rng=5)
    expected = IPR_16_BETA_1000
    with pytest.raises(AssertionError, match="non-finite value.*max-subtraction"):
        assert_variance_matches(no_max_subtraction, expected, [16], **opts)
    with pytest.raises(AssertionError, match="non-finite"):
        assert_ipr_matches(no_max_subtraction, IPR_16_BETA_1000, [16], **opts)


def test_unnormalised_weights_fail_the_mean_check():
    """Weights that do not sum to 1 shift E[o_j] away from value_mean (here 2.0)."""
    with pytest.raises(AssertionError, match=r"E\[o_j\]"):
        assert_mean_matches(unnormalised, 2.0, [64], d_k=D_K, d_v=D_V, value_mean=2.0, rng=0)


def test_failure_message_is_actionable_and_reproducible():
    """The message names the statistic, the attention, every N with estimate, SE, reference and z, the
    configuration and the rng; measure_variance with the printed seed and budget gives the same estimate bitwise."""
    with pytest.raises(AssertionError) as info:
        assert_variance_matches(mean_pooling, _var(), [64], d_k=D_K, d_v=D_V, value_mean=1.0,
                                rng=np.random.SeedSequence(7))
    msg = str(info.value)
    for part in ("Var(o_j)", "mean_pooling", "N=64", "expected 0.0388", "z = -", "value_mean=1.0", "rerun with rng=7",
                 "tolerance 5 SE + 1%"):
        assert part in msg, (part, msg)
    budget = int(re.search(r"n_sequences=(\d+)", msg).group(1))
    seed = eval(re.search(r"seed=(.*)\)$", msg).group(1), {"numpy": np})  # the pilot's stream: it stopped early
    assert "stopped after the pilot" in msg and budget == 64 and seed.spawn_key
    res = measure_variance(mean_pooling, [64], d_k=D_K, d_v=D_V, value_mean=1.0, n_sequences=budget, seed=seed)
    assert f"Var(o_j) = {res.var[0]:.6g}" in msg
    with pytest.raises(AssertionError) as info:  # without the early stop: the full budget on the root stream
        assert_variance_matches(mean_pooling, _var(), [64], d_k=D_K, d_v=D_V, value_mean=1.0, early_stop=None, rng=7)
    msg = str(info.value)
    budget = int(re.search(r"n_sequences=(\d+)", msg).group(1))
    res = measure_variance(mean_pooling, [64], d_k=D_K, d_v=D_V, value_mean=1.0, n_sequences=budget, seed=7)
    assert f"Var(o_j) = {res.var[0]:.6g}" in msg and "seed=7)" in msg


def test_rng_forms_spec7():
    """An int, the equal SeedSequence and the same-state Generator are reproducible; different seeds differ."""
    run = lambda rng: check_statistic(REF, "var", _var(), [32], d_k=8, d_v=2, n_sequences=64, rng=rng)[0]
    a, b = run(4), run(np.random.SeedSequence(4))
    assert a.estimate == b.estimate and a.rng == "4"
    g1, g2 = run(np.random.default_rng(9)), run(np.random.default_rng(9))
    assert g1.estimate == g2.estimate and g1.rng == g2.rng
    assert run(5).estimate != a.estimate
    assert run(int(g1.rng)).estimate == g1.estimate  # the printed rng reproduces a Generator-seeded run


@pytest.mark.parametrize("kwargs, name", [
    ({"statistic": "median"}, "statistic"),
    ({"expected": math.nan}, "expected"),
    ({"expected": "x"}, "expected"),
    ({"n": [0]}, "n"),
    ({"rel_se": 0.0}, "rel_se"),
    ({"n_sigma": -1.0}, "n_sigma"),
    ({"n_sequences": 10}, "n_sequences"),
    ({"max_sequences": 4}, "max_sequences"),
    ({"rng": -1}, "rng"),
    ({"rng": "seed"}, "rng"),
    ({"attention_fn": 3}, "attention_fn"),
    ({"d_k": 0}, "d_k"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = dict(attention_fn=REF, statistic="var", expected=0.1, n=[16], d_k=8, d_v=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        check_statistic(args.pop("attention_fn"), args.pop("statistic"), args.pop("expected"), args.pop("n"), **args)


@pytest.mark.parametrize("check, statistic", [(assert_variance_matches, "var"), (assert_ipr_matches, "ipr")])
@pytest.mark.parametrize("expected", [-0.25, lambda n: -1.0 / n])
def test_a_negative_expected_variance_or_ipr_is_a_value_error(check, statistic, expected):
    """A variance and E[sum w^2] are never negative: a negative reference is a mistake in the caller's formula,
    refused before any simulation (ValueError naming ``expected``), not reported as a mismatch (AssertionError)."""
    with pytest.raises(ValueError, match="expected must be >= 0"):
        check(REF, expected, [16], d_k=8, d_v=2, n_sequences=32)
    check_statistic(lambda q, K, V: softmax_attention(q, K, V), "mean", -0.25, [16], d_k=8, d_v=2,
                    n_sequences=32, value_mean=-0.25)  # a mean may be negative


@pytest.mark.parametrize("shapes, name", [
    (((4,), (2, 3, 4), (2, 3, 1)), "q"),
    (((2, 4), (2, 3), (2, 3, 1)), "K"),
    (((2, 4), (2, 3, 5), (2, 3, 1)), "K"),
    (((2, 4), (3, 3, 4), (2, 3, 1)), "K"),
    (((2, 4), (2, 0, 4), (2, 0, 1)), "K"),
    (((2, 4), (2, 3, 4), (2, 5, 1)), "V"),
    (((2, 4), (2, 3, 4), (2, 3)), "V"),
])
def test_softmax_attention_refuses_wrong_shapes_naming_the_argument(shapes, name):
    """Wrongly shaped input is a ValueError naming the argument (it was an IndexError or a matmul message)."""
    q, K, V = (np.zeros(s) for s in shapes)
    with pytest.raises(ValueError, match=f"^{name} must"):
        softmax_attention(q, K, V)


def test_ipr_needs_weights_and_registry_refuses_unknown_names():
    with pytest.raises(ValueError, match="returns? \\(o, w\\)"):
        check_statistic(lambda q, K, V: V.mean(axis=1), "ipr", 0.1, [16], d_k=8, d_v=2, n_sequences=32)
    with pytest.raises(ValueError, match="name"):
        attention_fn("linear")
    with pytest.raises(ValueError, match="tau"):
        attention_fn("softmax", tau=-1.0)


# --- reference attention, strategies, profiles (no Monte Carlo) ---------------------------------------------------

def test_softmax_attention_reference_values():
    """Weights sum to 1, equal the textbook softmax on small logits, are uniform at tau = 0 or q = 0, and stay
    finite at logits ~ 1e6 where the argmax takes all the weight."""
    rng = np.random.default_rng(0)
    q, K, V = rng.standard_normal((3, 4)), rng.standard_normal((3, 5, 4)), rng.standard_normal((3, 5, 2))
    o, w = softmax_attention(q, K, V, tau=0.7)
    s = 0.7 * np.einsum("sd,snd->sn", q, K) / 2.0
    ref = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(w, ref, rtol=1e-12)
    np.testing.assert_allclose(o, np.einsum("sn,snd->sd", ref, V), rtol=1e-12)
    np.testing.assert_allclose(softmax_attention(q, K, V, tau=0.0)[1], 0.2)
    o, w = softmax_attention(q * 1e6, K, V)
    assert np.all(np.isfinite(o)) and np.allclose(w.max(axis=1), 1.0)
    assert softmax_attention(q, K, V, return_weights=False).shape == (3, 2)


@settings(max_examples=100)
@given(cfg=attention_configs(queries=("fixed", "random"), params={"s": st.floats(0.1, 2.0)}))
def test_drawn_configurations_are_valid_and_cheap(cfg):
    """Every draw is accepted by measure_variance's validation, stays within the bounds and the work budget, and
    (annealed regime) has ln N_min >= 3 beta^2/2 + 2 beta at its realised beta."""
    assert isinstance(cfg, AttentionConfig) and 0.1 <= cfg.params["s"] <= 2.0
    assert list(cfg.n_grid) == sorted(set(cfg.n_grid)) and 16 <= cfg.n_grid[0] and cfg.n_grid[-1] <= 512
    assert 8 <= cfg.d_k <= 32 and 1 <= cfg.d_v <= 8 and cfg.n_grid[-1] * (cfg.d_k + cfg.d_v) <= 20_000
    b = cfg.beta if cfg.query == "fixed" else cfg.tau
    assert b <= annealed_beta_max(cfg.n_grid[0]) + 1e-9 and b <= 3.0 + 1e-9
    if cfg.query == "fixed":  # beta near 0 is mean pooling: the default keeps beta >= 0.5 and tau away from 1
        assert cfg.beta >= 0.5 - 1e-9 and abs(cfg.tau - 1.0) >= 0.1 - 1e-9
    if cfg.query == "random":
        assert cfg.d_k >= 4 * cfg.tau**2 - 1e-9
    kw = cfg.check_kwargs()
    assert kw["rng"] == cfg.seed and kw["n"] == list(cfg.n_grid)
    from varsim.sim._config import make_config  # validation only: no sampling

    make_config(cfg.n_grid, tau=1.0, coupling=None, coupling_noise=1.0, n_sequences=32, sampler="full",
                estimator="sample", coordinate=0, chunk_size=None, query_vector=None, **cfg.measure_kwargs())


@given(grid=n_grids(2, 10_000, 4))
def test_n_grids_are_sorted_distinct_and_in_range(grid):
    assert 1 <= len(grid) <= 4 and list(grid) == sorted(set(grid)) and 2 <= grid[0] and grid[-1] <= 10_000


def test_strategy_arguments_are_validated():
    for kwargs, name in [({"n": (0, 10)}, "n"), ({"d_k": (8, 4)}, "d_k"), ({"regime": "hot"}, "regime"),
                         ({"queries": ("learned",)}, "queries"), ({"params": 3}, "params"),
                         ({"tau": (0.0, 1.0)}, "tau"), ({"max_work": 10}, "max_work")]:
        with pytest.raises(ValueError, match=name):
            attention_configs(**kwargs)


def test_mc_profiles_are_registered():
    """The profiles users load by name: no deadline, bounded examples; one derandomized."""
    mc = settings.get_profile(MC_PROFILE)
    assert mc.deadline is None and mc.max_examples <= 20 and not mc.derandomize
    assert settings.get_profile(MC_PROFILE_DERANDOMIZED).derandomize
    assert mc_settings(max_examples=3).max_examples == 3


def test_expected_mean_and_key_law_guard():
    cfg = AttentionConfig(n_grid=(16,), d_k=8, d_v=2, value_mean=1.5, key_dist="uniform")
    assert cfg.expected_mean(16) == 1.5
    with pytest.raises(ValueError, match="key_dist"):
        cfg.expected_variance(16)


def test_more_precise_still_works_with_a_deprecation_warning():
    """0.1.0's ``varsim.testing.precision.more_precise`` (in its ``__all__``, removed as unused) answers as it did,
    with a DeprecationWarning, until 0.3.0."""
    from varsim.testing import precision

    with pytest.warns(DeprecationWarning, match="PRECISION_ORDER"):
        assert precision.more_precise("float16", "float32") == "float32"
    with pytest.warns(DeprecationWarning):
        assert precision.more_precise("float64", "bfloat16") == "float64"
