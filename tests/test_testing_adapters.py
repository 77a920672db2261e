"""varsim.testing with other array libraries, layouts and return types: array-api-strict (always), torch (when
installed), one sequence at a time; clear errors for anything else; the same-draw cases and strategies."""

import inspect
import math

import numpy as np
import pytest
from hypothesis import Phase, given, settings

from varsim.testing import (
    REFERENCE_CASES,
    AttentionCase,
    adapt,
    assert_matches_reference,
    assert_variance_matches,
    attention_cases,
    check_against_reference,
    check_statistic,
    mc_settings,
    softmax_attention_nd,
    softmax_variance,
    to_numpy,
)

xp = pytest.importorskip("array_api_strict")


def xp_attention(q, K, V, tau=1.0, mask=None):
    """Array-API softmax attention, (B, H, L, d) layout: only functions of the standard."""
    logits = xp.matmul(q, xp.permute_dims(K, (0, 1, 3, 2))) * (tau / math.sqrt(q.shape[-1]))
    if mask is not None:
        logits = xp.where(mask, logits, xp.full_like(logits, -xp.inf))
    e = xp.exp(logits - xp.max(logits, axis=-1, keepdims=True))
    w = e / xp.sum(e, axis=-1, keepdims=True)
    return xp.matmul(w, V), w


def xp_attention_sqrt_dv(q, K, V, tau=1.0, mask=None):
    return xp_attention(q, K, V, tau=tau * math.sqrt(q.shape[-1] / V.shape[-1]), mask=mask)


def test_array_api_strict_function_passes_and_its_bug_fails():
    """A correct array-API attention passes the battery (float64) and a statistical check through the batch
    layout; the same code scaled by 1/sqrt(d_v) fails with the worst element named."""
    attn = adapt(xp_attention, array=xp, layout="bhld")
    report = assert_matches_reference(attn)
    assert report.passed and not any(r.skipped for r in report.results if not r.case.empty_rows)
    assert_variance_matches(attn, lambda n: softmax_variance(n, d_k=16), [64], d_k=16, d_v=8, rng=1)
    n = len(REFERENCE_CASES) - 1  # the fully masked row runs only with masked_rows=
    pattern = rf"(?s)({n - 1}|{n}) of {n} same-draw case.* fail.*worst: case .*[ow]\[b=.*x tol"
    with pytest.raises(AssertionError, match=pattern):
        assert_matches_reference(adapt(xp_attention_sqrt_dv, array=xp, layout="bhld"))


def test_array_api_strict_float32_inputs_get_float32_tolerances():
    attn = adapt(xp_attention, array=xp, dtype="float32", layout="bhld")
    report = check_against_reference(attn)
    assert report.passed, report.describe()
    assert 1e-4 < max(r.ratio for r in report.results) <= 1.0  # float32 rounding is visible, within tolerance


def _rows(q, K, V, tau=1.0, mask=None):
    o, w = softmax_attention_nd(q[None], K, V, tau=tau, mask=None if mask is None else mask[None])
    return o[0], w[0]


@pytest.mark.parametrize("layout, fn", [
    ("sequence", _rows),
    ("bld", lambda q, K, V, tau=1.0, mask=None: softmax_attention_nd(q, K, V, tau=tau, mask=mask)),
    ("bhld", lambda q, K, V, tau=1.0, mask=None: softmax_attention_nd(q, K, V, tau=tau, mask=mask)),
])
def test_layouts_pass_the_battery(layout, fn):
    report = assert_matches_reference(adapt(fn, layout=layout))
    assert len(report.results) == len(REFERENCE_CASES)
    assert [r.case.name for r in report.results if r.skipped] == ["fully-masked-row"]  # no convention stated


def test_keywords_are_read_from_the_signature_and_missing_mask_skips():
    """No tau parameter: compared at tau = 1 (the query norm carries beta); no mask parameter: masked cases are
    skipped and listed."""
    plain = lambda q, K, V: softmax_attention_nd(q[:, None], K, V)[0][:, 0]  # noqa: E731
    report = assert_matches_reference(plain)
    skipped = [r.case.name for r in report.results if r.skipped]
    assert set(skipped) == {c.name for c in REFERENCE_CASES if c.mask != "none"}
    assert "skipped padding-mask" in report.describe()
    assert adapt(xp_attention).accepts == {"tau", "mask"}
    assert adapt(plain, accepts=("tau",)).accepts == {"tau"}


@pytest.mark.parametrize("returned, pattern", [
    ("o", r"attention_fn .*bad returned output str"),
    (None, r"attention_fn .*bad returned output NoneType"),
    (object(), r"attention_fn .*bad returned output object"),
    (np.array(["a", "b"]), r"dtype <U1"),
])
def test_unknown_return_types_name_the_function_and_the_value(returned, pattern):
    def bad(q, K, V):
        return returned

    with pytest.raises(TypeError, match=pattern):
        assert_matches_reference(bad, REFERENCE_CASES[0])
    with pytest.raises(TypeError, match=pattern):
        check_statistic(bad, "var", 0.1, [16], d_k=8, d_v=2, n_sequences=32)


def test_wrong_output_shape_is_an_assertion_naming_the_layout():
    with pytest.raises(AssertionError, match=r"shape \(2, 8\).*expected \(2, 6\).*layout 'batch'"):
        assert_matches_reference(lambda q, K, V: np.zeros((q.shape[0], 8)), AttentionCase(batch=2, d_k=16, d_v=6))


def test_adapter_arguments_are_validated():
    for kwargs, name in [({"layout": "bthd"}, "layout"), ({"array": "mxnet"}, "array"), ({"dtype": "int8"}, "dtype"),
                         ({"dtype": "bfloat16", "array": xp}, "bfloat16"), ({"accepts": ("scale",)}, "accepts")]:
        with pytest.raises(ValueError, match=name):
            adapt(xp_attention, **kwargs)
    with pytest.raises(ValueError, match="attention_fn"):
        adapt(3)


def test_cases_are_validated():
    for kwargs, name in [({"n_keys": 0}, "n_keys"), ({"tau": 0.0}, "tau"), ({"mask": "random"}, "mask"),
                         ({"key_law": "cauchy"}, "key_law"), ({"dtype": "float16"}, "dtype"),
                         ({"mask": "causal", "n_queries": 5, "n_keys": 3}, "n_queries")]:
        with pytest.raises(ValueError, match=name):
            AttentionCase(**kwargs)
    with pytest.raises(ValueError, match="cases"):
        check_against_reference(xp_attention, [])
    with pytest.raises(ValueError, match="tol_factor"):
        check_against_reference(xp_attention, tol_factor=0.0)


@settings(max_examples=200, deadline=None)
@given(case=attention_cases())
def test_drawn_cases_test_something(case):
    """Every drawn case has d_k != d_v, tau away from 1, a value mean away from 0, beta in [0.5, 3] or huge, a
    batch of at least two sequences, and a causal mask only with L <= N; its arrays have the stated beta."""
    assert case.d_k != case.d_v and abs(case.tau - 1.0) >= 0.1 - 1e-12 and abs(case.value_mean) >= 0.25
    assert 0.5 <= case.beta <= 3.0 or 300.0 <= case.beta <= 3000.0
    assert case.batch >= 2 and (case.mask != "causal" or case.n_queries <= case.n_keys)
    q, K, V, mask = case.arrays(0)
    beta = case.tau * np.linalg.norm(q, axis=-1) / math.sqrt(case.d_k)
    np.testing.assert_allclose(beta, case.beta, rtol=1e-12)
    assert (mask is None) == (case.mask == "none") and (mask is None or mask.any(axis=-1).all())


def test_mc_settings_do_not_shrink():
    assert Phase.shrink not in mc_settings().phases
    assert Phase.shrink in mc_settings(shrink=True).phases


def test_early_stop_spends_only_the_pilot_and_can_be_switched_off():
    mean_pooling = lambda q, K, V: V.mean(axis=1)  # noqa: E731
    expected = lambda n: softmax_variance(n, d_k=16, query_norm=2.0 * 4)  # beta = 2: E[sum w^2] >> 1/N
    fast = check_statistic(mean_pooling, "var", expected, [64], d_k=16, d_v=8, query_norm=8.0, rng=0)[0]
    assert not fast.passed and fast.n_sequences == 64 and "stopped after the pilot" in fast.note
    full = check_statistic(mean_pooling, "var", expected, [64], d_k=16, d_v=8, query_norm=8.0, early_stop=None,
                           rng=0)[0]
    assert not full.passed and full.n_sequences >= 256 and not full.note  # the smallest measurement
    with pytest.raises(ValueError, match="early_stop"):
        check_statistic(mean_pooling, "var", expected, [64], early_stop=2.0)


# --- torch (optional) -----------------------------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


def _sdpa(q, K, V, tau=1.0, mask=None):
    torch = _torch()
    return torch.nn.functional.scaled_dot_product_attention(q, K, V, attn_mask=mask, scale=tau / math.sqrt(q.shape[-1]))


def test_torch_sdpa_passes_in_float64_and_float32():
    _torch()
    assert_matches_reference(adapt(_sdpa, array="torch", layout="bhld"))
    report = assert_matches_reference(adapt(_sdpa, array="torch", dtype="float32", layout="bhld"))
    assert report.passed


def test_torch_low_precision_outputs_reach_the_checks():
    """bfloat16 and float16 tensors come back as NumPy in the statistical checks (no raw TypeError)."""
    _torch()
    for dtype in ("bfloat16", "float16"):
        attn = adapt(_sdpa, array="torch", dtype=dtype, layout="bhld")
        res = check_statistic(attn, "var", lambda n: softmax_variance(n, d_k=16), [64], d_k=16, d_v=8, rng=0)[0]
        assert math.isfinite(res.estimate) and abs(res.estimate / res.expected - 1) < 0.2
    o, dtype = to_numpy(_torch().ones(2, dtype=_torch().bfloat16))
    assert dtype == "bfloat16" and o.dtype == np.float64


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_torch_sdpa_passes_and_its_two_classic_bugs_fail_in_every_dtype(dtype):
    """Correct SDPA passes all cases at the calibrated tolerance; the naive is_causal wrapper (top-left causal
    mask) and a 1/d scale fail, also in bfloat16 (where the worst-case bound let both pass)."""
    torch = _torch()
    F = torch.nn.functional

    def naive(q, K, V, tau=1.0, causal=False):
        return F.scaled_dot_product_attention(q, K, V, is_causal=causal, scale=tau / math.sqrt(q.shape[-1]))

    def one_over_d(q, K, V, tau=1.0, mask=None):
        return _sdpa(q, K, V, tau=tau / math.sqrt(q.shape[-1]), mask=mask)

    assert assert_matches_reference(adapt(_sdpa, array="torch", dtype=dtype, layout="bhld")).passed
    for bug in (naive, one_over_d):
        assert check_against_reference(adapt(bug, array="torch", dtype=dtype, layout="bhld")).verdict == "fail"


def _float32_namespace():
    """An array-API-like namespace whose default floating dtype is float32, as jax.numpy without x64."""
    import types

    ns = types.ModuleType("float32_numpy")
    ns.asarray = lambda a, dtype=None: np.asarray(a, dtype=np.float32 if np.asarray(a).dtype.kind == "f" else None)
    return ns


def test_a_float32_default_namespace_is_tested_at_float32_with_a_note():
    """What JAX without x64 does: the inputs are rounded to float32 (so the reference sees what the function
    sees), the tolerance is float32's, and the report says why; float64 requested there is refused."""
    ns = _float32_namespace()

    def fn(q, K, V, tau=1.0, mask=None):
        assert q.dtype == np.float32
        o, w = softmax_attention_nd(q, K, V, tau=tau, mask=mask)
        return o.astype(np.float32), w.astype(np.float32)

    report = assert_matches_reference(adapt(fn, array=ns, layout="bhld"))
    assert "makes float32 arrays by default" in report.describe() and "jax_enable_x64" in report.describe()
    assert {r.dtype for r in report.results if not r.skipped} == {"float32"}
    with pytest.raises(ValueError, match="dtype 'float64': namespace float32_numpy turns float64 arrays into float32"):
        adapt(fn, array=ns, dtype="float64")
    bug = lambda q, K, V, tau=1.0, mask=None: tuple(1.001 * a for a in fn(q, K, V, tau, mask))  # noqa: E731
    report = check_against_reference(adapt(bug, array=ns, layout="bhld"))
    assert not report.passed and report.verdict in ("fail", "profile")  # 0.1% is within TF32 rounding


def test_jax_example_runs():
    """docs/site/examples/test_jax_attention.py: float32 by default (with the note), float64 with x64; skipped
    without JAX (never a test dependency)."""
    pytest.importorskip("jax")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "site" / "examples" / "test_jax_attention.py"
    spec = importlib.util.spec_from_file_location("varsim_docs_jax_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    report = assert_matches_reference(adapt(mod.jax_attention, array=mod.jnp, layout="bhld"))
    assert {r.dtype for r in report.results if not r.skipped} == {"float32"} and "jax_enable_x64" in report.describe()
    mod.test_float64_with_x64()


def test_torch_tutorial_example_runs():
    """docs/site/examples/test_torch_sdpa.py (the PyTorch tutorial's code): the naive is_causal wrapper fails on
    exactly the three causal cases with fewer queries than keys in every dtype, the fixed one passes in every dtype,
    also in bfloat16 statistically (on the CPU; the CUDA parameters run where a GPU is)."""
    _torch()
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "site" / "examples" / "test_torch_sdpa.py"
    spec = importlib.util.spec_from_file_location("varsim_docs_torch_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in dir(mod):
        if name.startswith("test_"):
            params = inspect.signature(getattr(mod, name)).parameters
            for dtype in mod.DTYPES if "dtype" in params else [None]:
                kwargs = {"device": "cpu"} | ({"dtype": dtype} if dtype else {})
                getattr(mod, name)(**kwargs)


def test_case_precision_reaches_every_library():
    """Without a fixed dtype the float32 case hands float32 arrays to NumPy, array-API and torch functions alike."""
    seen = {}

    def recorder(name):
        def fn(q, K, V, tau=1.0, mask=None):
            seen.setdefault(name, set()).add(str(q.dtype).split(".")[-1])
            return softmax_attention_nd(*(np.asarray(a, dtype=np.float64) for a in (q, K, V)), tau=tau,
                                        mask=None if mask is None else np.asarray(mask))[0]
        return fn

    libs = [("numpy", "numpy"), ("xp", xp)]
    try:
        import torch  # noqa: F401

        libs.append(("torch", "torch"))
    except ImportError:
        pass
    for name, array in libs:
        assert_matches_reference(adapt(recorder(name), array=array, layout="bhld"))
        assert seen[name] == {"float64", "float32"}, seen


def test_reproduce_line_recreates_the_worst_draw():
    """The arrays printed by the reproduce line are those the failing function saw (tau = 1 without a tau
    parameter), so the user can debug the worst element directly."""
    seen = []

    def wrong(q, K, V):
        seen.append(q.copy())
        return 1.01 * softmax_attention_nd(q[:, None], K, V)[0][:, 0]

    case = AttentionCase(batch=2, d_k=8, d_v=3, tau=0.7, beta=1.5, seed=4)
    with pytest.raises(AssertionError, match=r"case.arrays\(rng=9, tau=1\)") as info:
        assert_matches_reference(wrong, case, rng=9)
    assert "tau=0.7" in str(info.value)  # the case itself still says which tau it would apply
    q = case.arrays(9, tau=1.0)[0]
    np.testing.assert_array_equal(q[:, 0, 0], seen[0])
