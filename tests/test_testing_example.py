"""The documentation's example test file (docs/site/examples/test_my_attention.py) runs, is short, and can fail."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from varsim.testing import AttentionConfig

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "site" / "examples" / "test_my_attention.py"


def _load():
    spec = importlib.util.spec_from_file_location("varsim_docs_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_is_under_30_lines_and_passes():
    assert len(EXAMPLE.read_text().splitlines()) < 30
    _load().test_my_attention_matches_the_theory()  # the Hypothesis test, as pytest would run it


def test_example_catches_a_one_over_d_scale():
    """The same test body fails when the variant divides the logits by d_k instead of sqrt(d_k) (beta 1 -> 1/4
    at d_k = 16): the example is a real test, not a smoke run."""
    mod = _load()
    right = mod.my_attention
    mod.my_attention = lambda q, K, V, tau=1.0: right(q, K, V, tau=tau / math.sqrt(q.shape[1]))
    cfg = AttentionConfig(n_grid=(64,), d_k=16, d_v=8, tau=1.0, seed=0)
    with pytest.raises(AssertionError, match="z = "):
        mod.test_my_attention_matches_the_theory.hypothesis.inner_test(cfg)
    np.testing.assert_equal(cfg.beta, 1.0)
