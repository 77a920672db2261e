"""varsim.train.probes on stand-in models whose attention statistics are known exactly."""

import math

import numpy as np
import pytest

from varsim.tasks import make_batch
from varsim.train import probes

D, H, C = 8, 2, 10


class _MeanModel:
    """Uniform attention over items whose value vector is a fixed embedding of the item's label.

    The attention output is the mean of N i.i.d. label embeddings, so coordinate c has
    std sqrt(Var_label(E[:, c]) / N) exactly; after standardization across features it stays O(1).
    With ``hard=True`` all the weight sits on the largest-priority item instead (a one-hot selection).
    """

    def __init__(self, hard=False):
        E = np.random.default_rng(0).normal(size=(C, D)) * np.arange(1, D + 1)  # distinct spreads
        # Zero-mean values: otherwise the output tends to the fixed mean vector and even its
        # standardization stops varying (the per-feature decay that LayerNorm does not remove).
        self.E = E - E.mean(axis=0)
        self.hard = hard

    def analysis(self, batch):
        b, n = batch["label"].shape
        if self.hard:
            w = np.zeros((b, H, n))
            w[np.arange(b), :, np.argmax(batch["priority"], axis=1)] = 1.0
        else:
            w = np.full((b, H, n), 1.0 / n)
        vals = self.E[batch["label"]]  # (b, n, D)
        pre = np.einsum("bn,bnd->bd", w[:, 0], vals)
        post = (pre - pre.mean(1, keepdims=True)) / np.sqrt(pre.var(1, keepdims=True))
        return {"block0.attn_pre_norm": pre, "block0.attn_post_norm": post,
                "block0.attn_weights": w, "block0.next_input": pre + 1.0}


def test_std_matches_exact_per_coordinate_and_slope():
    """std over *sets* of each coordinate equals sqrt(Var_c / N) within 5 SE; slope -1/2 before, ~0 after.

    Catches a std across features instead of across sets, a variance instead of a std (slope -1), or ddof slips
    that matter at small n_sets."""
    model = _MeanModel()
    lengths = [16, 64, 256, 1024]
    res = probes.probe_length_shift(model, "argmax", lengths=lengths, n_sets=400, seed=3, hist_lengths=(16, 256))
    var_c = model.E.var(axis=0)  # labels uniform on C classes
    for n, std in zip(lengths, res["std_pre"]):
        exact = np.sqrt(var_c / n)
        se = exact / math.sqrt(2 * (res["n_sets"] - 1))
        assert np.all(np.abs(np.array(std) - exact) <= 5 * se + 0.01 * exact)
    assert res["coordinate"] == int(np.argmax(var_c))  # the largest spread at the shortest length
    assert res["slopes"]["pre_coordinate"]["slope"] == pytest.approx(-0.5, abs=0.05)
    assert res["slopes"]["pre_median"]["slope"] == pytest.approx(-0.5, abs=0.05)
    assert abs(res["slopes"]["post_median"]["slope"]) < 0.1
    # Figure-3 statistics: the post-norm vector has mean 0 and variance ~1 across features for every N.
    assert np.allclose(res["global"]["post"]["mean"], 0.0, atol=1e-9)
    assert np.allclose(res["global"]["post"]["var"], 1.0, atol=1e-3)
    assert np.allclose(np.array(res["global"]["next"]["mean"]) - res["global"]["pre"]["mean"], 1.0)
    # Histograms keep the raw values of the chosen coordinate, one list per requested length.
    assert res["hist"]["lengths"] == [16, 256]
    assert all(len(v) == 400 for v in res["hist"]["pre"])
    # Uniform attention puts exactly 1/N on the correct item.
    assert np.allclose(res["attn_correct"]["max_head"], 1.0 / np.array(lengths))


def test_attention_on_correct_item_and_chunking():
    """A hard argmax selection gives weight 1 on the correct item (catches argmin / wrong axis indexing);
    chunking the sets into small forward passes changes nothing but the grouping of the same draws' order."""
    model = _MeanModel(hard=True)
    res = probes.probe_length_shift(model, "argmax", lengths=[8, 32], n_sets=50, seed=1, hist_lengths=())
    assert np.allclose(res["attn_correct"]["per_head"], 1.0)
    a = probes.probe_length_shift(_MeanModel(), "argmax", lengths=[8], n_sets=20, seed=2, max_items=1 << 18)
    b = probes.probe_length_shift(_MeanModel(), "argmax", lengths=[8], n_sets=20, seed=2, max_items=1 << 18)
    assert a == b  # a pure function of its arguments


def test_correct_item_dictionary():
    batch = make_batch("dictionary", 64, 20, np.random.default_rng(0))
    idx = probes.correct_item("dictionary", batch)
    assert np.all(batch["key"][np.arange(64), idx] == batch["query"])
    bad = dict(batch, query=np.full(64, -1))
    with pytest.raises(ValueError, match="query"):
        probes.correct_item("dictionary", bad)


def test_probe_validation():
    with pytest.raises(ValueError, match="lengths"):
        probes.probe_length_shift(_MeanModel(), "argmax", lengths=[32, 16], seed=0)
    with pytest.raises(ValueError, match="task"):
        probes.probe_length_shift(_MeanModel(), "sorting", lengths=[16], seed=0)
    with pytest.raises(ValueError, match="analysis"):
        probes.probe_length_shift(object(), "argmax", lengths=[16], seed=0)
