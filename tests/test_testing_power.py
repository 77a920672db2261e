"""The precision model of the same-draw check, the catalogue of kernels and power_report.

Wrong implementations caught here: a tolerance as loose as the old worst-case bound (a 1.3x output passes in
bfloat16), an additive -1e4 mask (needs the masked-huge-logit cases), a kernel that rounds its logits to float16
(its own verdict), a JAX-style float32 result of float64 inputs compared at float64 tolerances (13 of 14 failed).
"""

import numpy as np
import pytest

from varsim.testing import (
    CORRECT,
    MUTANTS,
    REFERENCE_CASES,
    adapt,
    assert_matches_reference,
    check_against_reference,
    power_report,
)
from varsim.testing.mutants import kernel
from varsim.testing.precision import round_to


def _bhld(name, dtype):
    k = kernel(name)

    def fn(q, K, V, tau=1.0, mask=None, causal=False):
        return k(q, K, V, tau=tau, mask=mask, causal=causal, dtype=dtype)

    fn.__qualname__ = name
    return adapt(fn, layout="bhld", dtype=dtype)


def test_catalogue_has_25_bug_classes_and_5_correct_kernels():
    assert len(MUTANTS) >= 25 and len(CORRECT) >= 5
    with pytest.raises(ValueError, match="name: unknown kernel"):
        kernel("nope")


def test_bfloat16_rounding_is_round_to_nearest_even():
    x = np.array([1.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1.0 + 2.0**-9, -3.0e38, np.inf, np.nan])
    got = round_to(x, "bfloat16")
    np.testing.assert_array_equal(got[:4], [1.0, 1.0, 1.0 + 2.0**-6, 1.0])  # ties to even
    assert abs(got[4] / x[4] - 1) <= 2.0**-8 and got[4] % 2.0**120 == 0 and np.isinf(got[5]) and np.isnan(got[6])


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_correct_kernels_pass_and_use_a_fair_share_of_the_tolerance(dtype):
    """Correct emulated kernels pass every case; at float16 the worst one uses more than 5% of the tolerance (a
    tolerance hundreds of times too loose would not)."""
    worst = 0.0
    for name in CORRECT:
        report = assert_matches_reference(_bhld(name, dtype))
        worst = max(worst, report.worst.ratio)
    assert worst <= 0.5
    if dtype == "float16":
        assert worst >= 0.05


def test_worst_case_tolerance_is_blind_where_the_calibrated_one_sees():
    """The old bound lets a 1.3x output and doubled logits pass in bfloat16; the calibrated default fails them."""
    bugs = ["output_scaled_1.3", "logits_doubled"]
    old = power_report(dtype="bfloat16", seeds=1, kernels=bugs, returns_weights=False, tolerance="worst_case")
    assert [r.caught for r in old.rows if not r.correct] == [0, 0]
    new = power_report(dtype="bfloat16", seeds=1, kernels=bugs, returns_weights=False)
    assert [r.caught for r in new.rows if not r.correct] == [1, 1]
    report = check_against_reference(_bhld("output_scaled_1.3", "float16"))
    assert report.verdict == "fail"
    assert "x the rounding error of a correct float16 kernel accumulating in float32" in report.describe()


def test_low_precision_accumulation_gets_its_own_verdict():
    report = check_against_reference(_bhld("low_precision_sum", "float16"))
    assert report.verdict == "low_precision" and not report.passed
    assert "only as a kernel that accumulates in float16" in report.describe()
    assert "tolerance='low_precision'" not in report.describe()  # never recommended: real bugs pass it
    assert "profile='low_precision'" not in report.describe() and "does not accept it" in report.describe()
    assert check_against_reference(_bhld("low_precision_sum", "float16"), tolerance="low_precision").passed


def test_additive_minus_1e4_mask_is_caught_only_by_the_masked_huge_logit_cases():
    bug = _bhld("additive_mask_1e4", "float32")
    report = check_against_reference(bug)
    assert {r.case.name for r in report.results if not r.passed} == {"masked-huge-logit",
                                                                      "causal-masked-huge-logit"}
    for c in REFERENCE_CASES:
        if c.masked_logit:
            q, K, V, mask = c.arrays(0)
            s = c.tau / np.sqrt(c.d_k) * np.einsum("bhld,bhnd->bhln", q, K)
            m = np.broadcast_to(mask, s.shape)
            gap = np.where(~m, s, np.inf).min(axis=-1) - np.where(m, s, -np.inf).max(axis=-1)
            assert np.all(gap[(~m).any(axis=-1)] >= 1e4)


def test_float32_result_of_float64_inputs_is_compared_at_float32_with_a_note():
    """What JAX does without x64: the check says so instead of failing 13 of 14 cases."""
    def f32(q, K, V, tau=1.0, mask=None):
        o, w = kernel("float32_math")(q, K, V, tau=tau, mask=mask, dtype="float32")
        return o.astype(np.float32), w.astype(np.float32)

    report = assert_matches_reference(adapt(f32, layout="bhld"))
    assert "returned float32 for float64 inputs" in report.describe()


@pytest.mark.parametrize("value, dtype", [(np.ones((2, 3), dtype=np.int64), "int64"),
                                          (np.ones((2, 3), dtype=bool), "bool")])
def test_integer_output_is_refused_naming_the_function(value, dtype):
    def bad(q, K, V):
        return value

    pattern = rf"(?s)attention_fn .*bad returned output .*dtype {dtype}; expected a floating"
    with pytest.raises(TypeError, match=pattern):
        check_against_reference(bad)


def test_power_report_bfloat16_output_only_catches_every_big_bug_without_false_alarms():
    report = power_report(dtype="bfloat16", returns_weights=False, seeds=2)
    fa, runs = report.false_alarms
    assert fa == 0 and runs == 2 * len(CORRECT)
    assert not report.missed
    assert {"additive_mask_1e4", "causal_top_left", "logits_doubled", "output_scaled_1.3",
            "temperature_ignored", "dropped_key", "keys_of_first_sequence"} <= set(report.caught)
    assert "| `additive_mask_1e4` | yes | 2/2 |" in report.table()


def test_power_report_follows_the_users_configuration():
    """A function without causal= cannot misalign a causal mask; one without masks cannot misuse them; a folded
    layout has no head axis to confuse."""
    def mine(q, K, V, tau=1.0):
        return kernel("reference")(q[:, None], K[:, None], V[:, None], tau=tau)[0][:, 0]

    report = power_report(adapt(mine, layout="bld"), seeds=1, kernels=["reference", "causal_top_left",
                                                                       "mask_ignored", "heads_queries_swapped",
                                                                       "logits_doubled"])
    rows = {r.name: r for r in report.rows}
    assert "causal=" in rows["causal_top_left"].not_applicable and "mask" in rows["mask_ignored"].not_applicable
    assert "no heads axis" in rows["heads_queries_swapped"].not_applicable and rows["logits_doubled"].caught == 1
    assert "o only" in report.config


def test_power_report_with_torch_matches_the_emulated_table():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    def sdpa(q, K, V, tau=1.0, mask=None):
        return F.scaled_dot_product_attention(q, K, V, attn_mask=mask, scale=tau / q.shape[-1] ** 0.5)

    names = ["reference", "flash_tiled", "output_scaled_1.03", "scale_sqrt_d_k_plus_1", "additive_mask_1e4",
             "epsilon_in_normaliser"]
    mine = power_report(adapt(sdpa, array="torch", dtype="bfloat16", layout="bhld"), seeds=2, kernels=names)
    emulated = power_report(dtype="bfloat16", accepts=("tau", "mask"), returns_weights=False, seeds=2,
                            kernels=names)
    assert [(r.name, r.caught) for r in mine.rows] == [(r.name, r.caught) for r in emulated.rows]


def test_power_report_arguments_are_validated():
    with pytest.raises(ValueError, match="kernels: unknown"):
        power_report(dtype="float32", kernels=["nope"])
    with pytest.raises(ValueError, match="dtype"):
        power_report(dtype="float8")
    with pytest.raises(ValueError, match="seeds"):
        power_report(dtype="float32", seeds=0)


def test_a_reference_of_another_shape_or_type_is_refused_naming_the_reference():
    good = lambda q, K, V, tau=1.0, mask=None: kernel("reference")(q[:, None, None], K[:, None], V[:, None],  # noqa: E731
                                                                    tau=tau, mask=mask)[0][:, 0, 0]
    with pytest.raises(AssertionError, match=r"^reference: attention_fn .* returned output of shape"):
        check_against_reference(good, reference=lambda q, K, V: np.zeros((q.shape[0], 2)))
    with pytest.raises(TypeError, match=r"^reference: attention_fn .* returned output list"):
        check_against_reference(good, reference=lambda q, K, V: [1.0])
