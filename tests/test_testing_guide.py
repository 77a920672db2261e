"""The guide's example of real kernels (docs/site/examples/test_real_kernels.py) runs verbatim and is a real test:
its kernel with the window one key too wide, or without its ALiBi bias, fails it."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "site" / "examples" / "test_real_kernels.py"


def _load():
    spec = importlib.util.spec_from_file_location("varsim_real_kernels_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_example_passes():
    mod = _load()
    mod.test_alibi_window_kernel()
    mod.test_alibi_window_power()


def test_the_example_needs_torch_only_for_its_torch_test():
    pytest.importorskip("torch")
    _load().test_hf_eager_bfloat16()


@pytest.mark.parametrize("bug", ["window", "bias"])
def test_the_example_fails_a_wrong_kernel(bug):
    mod = _load()
    right = mod.my_alibi_kernel
    if bug == "window":
        mod.ALIBI_WINDOW = mod.families.alibi() + mod.families.sliding_window(31)
    else:
        def no_bias(q, K, V, tau=1.0, mask=None, causal=False):
            return mod.families.sliding_window(32)(*(np.swapaxes(a, 1, 2) for a in (q, K, V)), tau=tau, mask=mask,
                                                   causal=causal)[0].swapaxes(1, 2)
        mod.my_alibi_kernel = no_bias
    with pytest.raises(AssertionError, match="x tolerance"):
        mod.test_alibi_window_kernel()
    mod.my_alibi_kernel = right
