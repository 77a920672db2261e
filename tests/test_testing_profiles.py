"""Precision profiles: the rounding models of the kernels people write (Hugging Face eager, q pre-scaled, positions in
the dtype, TF32, low-precision accumulation), each tested like the default on emulated correct and buggy kernels.

Wrong implementations caught here: one tolerance for every kernel (HF-style eager attention failed the default in
bfloat16; TF32 float32 failed with a bare "fail"), advice recommending tolerance='low_precision' (real bugs with
12-220x a correct kernel's error pass it), a profile model that leaves out one of its roundings (false alarms).
"""

import numpy as np
import pytest

from varsim.testing import check_against_reference, families, power_report
from varsim.testing.arrays import Adapted
from varsim.testing.mutants import kernel
from varsim.testing.power import _Emulated
from varsim.testing.precision import PROFILES, error_scale, round_to

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


def test_eager_bfloat16_fails_the_default_naming_its_profile_and_passes_it():
    """HF-style eager in bfloat16 at rng=0: not a bare fail but a verdict naming the profiles it fits, 'eager'
    among them, never the low-precision one; with profile='eager' it passes."""
    eager = _planted("rounded_probabilities", "bfloat16", "eager")
    report = check_against_reference(eager, rng=0)
    text = report.describe()
    assert report.verdict == "profile" and not report.passed
    assert "'eager': Hugging Face eager" in text and "low_precision" not in text
    assert "profile 'sdpa'" in text.splitlines()[0]
    assert check_against_reference(eager, rng=0, profile="eager").passed


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
