"""Precision profiles: the rounding models of the kernels people write (Hugging Face eager, q pre-scaled, positions in
the dtype, TF32, low-precision accumulation), each tested like the default on emulated correct and buggy kernels.

Wrong implementations caught here: one tolerance for every kernel (HF-style eager attention failed the default in
bfloat16; TF32 float32 failed with a bare "fail"), advice recommending tolerance='low_precision' (real bugs with
12-220x a correct kernel's error pass it), a profile model that leaves out one of its roundings (false alarms).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from varsim.testing import check_against_reference, families, power_report
from varsim.testing.arrays import Adapted
from varsim.testing.mutants import kernel
from varsim.testing.power import _Emulated
from varsim.testing.precision import PROFILES, emulated_logits, error_scale, round_to

TIGHT = [p for p in PROFILES if p != "low_precision"]


def _planted(name, dtype, profile, family=None):
    k = kernel(name)

    def fn(q, K, V, tau=1.0, mask=None, causal=False):
        return k(q, K, V, tau=tau, mask=mask, causal=causal, dtype=dtype, family=family, profile=profile)

    fn.__qualname__ = f"{name}_{profile}"
    like = Adapted(fn, layout="bhld")
    like.lib, like.dtype = _Emulated(dtype), dtype
    return like


@pytest.mark.parametrize("profile", TIGHT)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_every_profile_has_no_false_alarm_and_misses_no_10x_bug(profile, dtype):
    """Correct kernels written in the profile pass it; every bug with 10x their error fails; the bugs the issue
    saw pass the low-precision advice (ignored temperature, a skipped rescale) fail every profile."""
    family = families.rope() + families.alibi() if profile == "positions" else None
    report = power_report(dtype=dtype, seeds=2, profile=profile, reference=family, returns_weights=False)
    assert report.false_alarms[0] == 0, report.table()
    assert report.missed == (), report.table()
    for bug in ("temperature_ignored", "online_softmax_no_rescale", "output_scaled_1.3", "dropped_key"):
        assert bug in report.caught, (bug, report.table())
    assert f"profile {profile}" in report.config


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_profile_has_no_false_alarm(dtype):
    """A kernel accumulating in its dtype (products, sums pairwise, softmax) passes profile='low_precision'."""
    report = power_report(dtype=dtype, seeds=3, profile="low_precision", kernels=["rounded_probabilities",
                                                                                     "flash_tiled"])
    assert report.false_alarms == (0, 6), report.table()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_eager_passes_the_default_naming_its_profile(dtype):
    """HF-style eager (q.k and the scale rounded to the dtype, softmax in float32) passes the default check, the
    cases it passes only through the emulated eager logits named in the message; with profile='eager' it passes
    too. (It failed the default with the verdict 'profile' at rng=0 in bfloat16 before the emulation.)"""
    eager = _planted("rounded_probabilities", dtype, "eager")
    reports = [check_against_reference(eager, rng=seed) for seed in range(4)]
    assert all(r.passed for r in reports), [r.describe() for r in reports if not r.passed][0]
    named = [r for r in reports if any(c.profile == "eager" for c in r.results)]
    assert named, "no case needed the eager emulation: the test does not exercise it"
    text = named[0].describe()
    assert "as a kernel of profile 'eager' rounds" in text and "Hugging Face eager" in text
    assert check_against_reference(eager, rng=0, profile="eager").passed


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_default_check_misses_no_10x_bug_of_eager_or_sdpa_kernels(dtype):
    """The default check (which accepts eager's exactly emulated logits) keeps its power: every bug with 10x a
    correct kernel's error, planted into kernels written as SDPA or as HF eager, fails it, and neither kind of
    correct kernel fails it."""
    for written in ("sdpa", "eager"):
        report = power_report(dtype=dtype, seeds=2, kernel_profile=written, returns_weights=False)
        assert report.false_alarms[0] == 0, report.table()
        assert report.missed == (), report.table()
        for bug in ("temperature_ignored", "online_softmax_no_rescale", "output_scaled_1.03", "dropped_key"):
            assert bug in report.caught, (written, bug, report.table())
        assert ("kernels written in profile eager" in report.config) == (written == "eager")


def test_emulated_eager_logits_and_their_rounding_ambiguity():
    """rd(rd(q.k) * scale) from the float64 products; delta is nonzero only where float32 sums could round the
    other way (a product exactly halfway between two bfloat16 numbers)."""
    q = np.array([[1.0, 2.0**-8], [1.0, 0.0]])
    K = np.array([[1.0, 1.0]])
    s, delta = emulated_logits(q, K, 1.0, "bfloat16")
    np.testing.assert_array_equal(s, [[1.0], [1.0]])  # 1 + 2^-8 ties to even
    np.testing.assert_array_equal(delta, [[2.0**-7], [0.0]])
    rng = np.random.default_rng(1)
    q, K = round_to(rng.normal(size=(3, 8)), "float16"), round_to(rng.normal(size=(5, 8)), "float16")
    s, delta = emulated_logits(q, K, 0.3, "float16")
    np.testing.assert_array_equal(s, round_to(round_to(q @ K.T, "float16") * 0.3, "float16"))
    assert np.all(delta < 1e-2 * np.abs(s) + 1e-6)


def test_torch_eager_and_flex_attention_pass_the_default():
    """Real torch kernels on the CPU under default options: Hugging Face-style eager in float16 and bfloat16, and
    FlexAttention (eager mode, unfused) in bfloat16."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_testing_fp as bench

    styles = bench.torch_styles()
    for name in ("HF eager float16 (torch)", "HF eager bfloat16 (torch)"):
        fn, options = styles[name]
        for seed in range(3):
            report = check_against_reference(fn, rng=seed, **options)
            assert report.passed, report.describe()
    flex = [name for name in styles if name.startswith("FlexAttention")]
    if not flex:
        pytest.skip(f"torch {torch.__version__} has no torch.nn.attention.flex_attention")
    fn, options = styles[flex[0]]
    assert check_against_reference(fn, rng=0, **options).passed


def test_tf32_float32_is_named():
    tf32 = _planted("flash_tiled", "float32", "tf32")
    report = check_against_reference(tf32)
    assert report.verdict == "profile" and "profile='tf32'" in report.describe()
    for seed in range(3):
        assert check_against_reference(tf32, profile="tf32", rng=seed).passed


def test_no_message_recommends_a_profile_under_which_a_10x_bug_passes():
    """Wherever a bug gets the verdict 'profile', every profile its message names catches that bug when the bug
    is planted into a kernel of that profile, or the bug's error is below 10x that profile's correct kernels'."""
    for bug in ("scale_sqrt_d_k_plus_1", "output_scaled_1.03", "low_precision_lse", "temperature_ignored"):
        report = check_against_reference(_planted(bug, "bfloat16", "sdpa"))
        names = {n for r in report.results for n in r.profiles}
        assert "low_precision" not in report.describe().split("matches")[-1].split("reproduce")[0] or \
            report.verdict == "low_precision"
        for name in names - {"low_precision"}:
            power = power_report(dtype="bfloat16", seeds=1, profile=name, kernels=[bug], returns_weights=False)
            assert power.missed == (), (bug, name, power.table())


def test_tf32_rounding_and_terms():
    x = np.array([1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 1.0 + 2.0**-10])
    np.testing.assert_array_equal(round_to(x, "tfloat32"), [1.0, 1.0 + 2.0**-9, 1.0 + 2.0**-10])
    rng = np.random.default_rng(0)
    q, K, V = rng.normal(size=(1, 1, 1, 16)), rng.normal(size=(1, 1, 32, 16)), rng.normal(size=(1, 1, 32, 4))
    from varsim.testing import softmax_attention_nd

    o, w = softmax_attention_nd(q, K, V)
    kw = dict(tau=1.0, model="calibrated")
    base = error_scale(q, K, V, w, o, dtype="float32", **kw)[0]
    tf32 = error_scale(q, K, V, w, o, dtype="float32", profile="tf32", **kw)[0]
    assert np.all(tf32 > 10 * base)  # 2^-11 against 2^-24
    same = error_scale(q, K, V, w, o, dtype="float16", profile="tf32", **kw)[0]
    np.testing.assert_array_equal(same, error_scale(q, K, V, w, o, dtype="float16", **kw)[0])


def test_an_unknown_profile_is_refused_naming_it():
    with pytest.raises(ValueError, match="profile 'bogus'"):
        check_against_reference(lambda q, K, V: q, profile="bogus")
    with pytest.raises(ValueError, match="profile 'bogus'"):
        power_report(dtype="float16", profile="bogus")
