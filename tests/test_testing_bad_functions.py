"""The same-draw check on functions that misbehave rather than compute wrongly: one that writes to its inputs, one
that hangs. Each fails in one line naming the case, never with a traceback from the kit.

Wrong implementations caught here: inputs handed over as copies and never compared afterwards (a kernel that updates
``K`` in place passed every case), no time limit on the call (a hanging kernel hung the test suite).
"""

import threading
import time

import numpy as np
import pytest

from varsim.testing import REFERENCE_CASES, adapt, check_against_reference, power_report, softmax_attention_nd

MODERATE = REFERENCE_CASES[0]


def _mutates(q, K, V, tau=1.0, mask=None):
    """A correct output, then K zeroed in place (a kernel reusing its input buffer as scratch)."""
    o, _ = softmax_attention_nd(q, K, V, tau=tau, mask=mask)
    K[...] = 0.0
    return o


def test_a_function_that_writes_to_its_inputs_fails_naming_the_input_and_the_case():
    report = check_against_reference(adapt(_mutates, layout="bhld"))
    assert report.verdict == "fail"
    assert all(r.detail == "attention_fn _mutates changed its input K in place" for r in report.results
               if not r.skipped)
    text = report.describe()
    assert "worst: case 'moderate'" in text and "changed its input K in place" in text
    assert "Traceback" not in text


def test_a_torch_function_that_writes_to_its_inputs_fails():
    torch = pytest.importorskip("torch")

    def scales_q(q, K, V, tau=1.0, mask=None):
        q.mul_(2.0)  # the caller's q is changed; the output is of the changed q
        scale = 0.5 * tau / q.shape[-1] ** 0.5
        return torch.nn.functional.scaled_dot_product_attention(q, K, V, attn_mask=mask, scale=scale)

    report = check_against_reference(adapt(scales_q, array="torch", layout="bhld"), MODERATE)
    assert not report.passed and report.worst.detail.endswith("scales_q changed its input q in place")


def test_a_function_that_hangs_fails_its_case_in_one_line_and_skips_the_rest():
    release = threading.Event()

    def hangs(q, K, V):
        release.wait(30.0)
        return q[:, :V.shape[-1]]

    start = time.perf_counter()
    try:
        report = check_against_reference(hangs, timeout=0.2)
    finally:
        release.set()
    assert time.perf_counter() - start < 5.0
    first, rest = report.results[0], report.results[1:]
    assert not first.passed and first.detail.startswith("attention_fn test_a_function_that_hangs")
    assert first.detail.endswith("hangs did not return within 0.2 s (a hang? it is left running in a background "
                                 "thread)")
    assert all(r.skipped == "not run: attention_fn hung on case 'moderate'" for r in rest)
    assert report.verdict == "fail" and "worst: case 'moderate'" in report.describe()


def test_timeout_is_validated_and_none_runs_in_this_thread():
    for bad in (0, -1.0, float("nan"), "1"):
        with pytest.raises(ValueError, match="timeout"):
            check_against_reference(adapt(_mutates, layout="bhld"), MODERATE, timeout=bad)
        with pytest.raises(ValueError, match="timeout"):
            power_report(dtype="float16", seeds=1, kernels=["reference"], timeout=bad)
    seen = []

    def records_thread(q, K, V):
        seen.append(threading.current_thread() is threading.main_thread())
        o, _ = softmax_attention_nd(q[:, None], K, V)
        return o[:, 0]

    assert check_against_reference(records_thread, MODERATE, timeout=None).passed
    assert check_against_reference(records_thread, MODERATE).passed
    assert seen == [True, False]
    assert np.isfinite(check_against_reference(records_thread, MODERATE).worst.ratio)
