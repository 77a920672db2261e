"""The causal decoder (varsim.nn.decoder): every layer and the whole model gradchecked with central differences,
the causal mask, padding, the evaluation path, the positional encodings and the config's refusals."""

from __future__ import annotations

import numpy as np
import pytest
from nn_checks import batch_for, check_model_grads, numeric_grads
from registry_checks import (
    DECODER_TINY,
    check_positions_grads,
    check_positions_padding,
    check_positions_predict,
    tasks_read_by,
)

from varsim.nn import Decoder, ModelConfig, build_model
from varsim.nn.decoder import causal_attention_backward, causal_attention_forward, causal_attention_rows
from varsim.nn.positions import (
    POSITIONS,
    alibi_bias,
    get_positions,
    position_ids,
    rope_backward,
    rope_forward,
    rope_tables,
)
from varsim.nn.weightmaps import TRAINABLE_MAPS, make_attention
from varsim.tasks import make_batch

TINY = DECODER_TINY
PARAMS = {"logn": {"n0": 2.5}}
#: the positional encodings, from their registry: all, those acting inside attention (or nowhere: not a learned table
#: added to the embedding) and those acting inside attention
ALL_POSITIONS = list(POSITIONS)
ATTENTION_POSITIONS = [k for k, p in POSITIONS.items() if not p.table]
RELATIVE_POSITIONS = [k for k, p in POSITIONS.items() if p.rotary or p.bias]


def cfg(task="argmax", **kw):
    return ModelConfig(task=task, **{**TINY, **kw})


# ----------------------------------------------------------------------------------------------------------------------
# Layers


def test_rope_backward_matches_central_differences():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 6))
    cos, sin = rope_tables(position_ids(np.array([0, 2]), 5), 6, np.float64)
    dout = rng.standard_normal(x.shape)
    (num,) = numeric_grads(lambda a: rope_forward(a, cos, sin), [x], dout)
    np.testing.assert_allclose(rope_backward(dout, cos, sin), num, rtol=1e-6, atol=1e-8)


def test_rope_is_a_rotation_and_relative():
    """Norms are kept per pair, and q.k after rotation depends only on the distance of the two positions."""
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, 8))
    def rot(x, p):
        cos, sin = rope_tables(np.array([[p]]), 8, np.float64)
        return rope_forward(x[None, None, None], cos, sin)[0, 0, 0]
    np.testing.assert_allclose(np.linalg.norm(rot(q, 7)), np.linalg.norm(q))
    np.testing.assert_allclose(rot(q, 9) @ rot(k, 4), rot(q, 105) @ rot(k, 100), rtol=1e-10)
    assert abs(rot(q, 9) @ rot(k, 4) - rot(q, 9) @ rot(k, 5)) > 1e-3


def test_alibi_bias_is_minus_slope_times_distance():
    b = alibi_bias(4, 2, 5, 5, np.float64)  # rows 2..4 over keys 0..4
    assert b.shape == (1, 4, 3, 5)
    np.testing.assert_allclose(b[0, 0, 1], -2.0 ** -2 * np.array([3, 2, 1, 0, -1]))
    np.testing.assert_allclose(b[0, 3, 0, 0], -2.0 ** -8 * 2)


def _attention_case(name, output, positions, last_only, padded, seed=0):
    rng = np.random.default_rng(seed)
    b, t, d, h = 2, 5, 8, 2
    x = rng.standard_normal((b, t, d))
    w = rng.standard_normal((d, 3 * d)) / np.sqrt(d)
    bias = rng.standard_normal(3 * d) * 0.1
    spec = make_attention(name, PARAMS.get(name), output)
    theta = None if spec.trained_param is None else np.array([0.8, 1.3])
    start = np.array([0, 2]) if padded else None
    enc = get_positions(positions)
    rope = rope_tables(position_ids(start, t), d // h, np.float64) if enc.rotary else None
    kw = dict(start=start, attention=spec, theta=theta, rope=rope, alibi=enc.bias, last_only=last_only)
    return x, w, bias, theta, h, kw


@pytest.mark.parametrize("name", TRAINABLE_MAPS)
@pytest.mark.parametrize("positions", ATTENTION_POSITIONS)
@pytest.mark.parametrize("last_only,padded", [(False, False), (True, True), (False, True)])
def test_causal_attention_gradcheck(name, positions, last_only, padded):
    x, w, bias, theta, h, kw = _attention_case(name, "none", positions, last_only, padded)

    def f(x_, w_, b_, *th):
        return causal_attention_forward(x_, w_, b_, h, **{**kw, "theta": th[0] if th else None})[0]

    arrays = [x, w, bias] + ([theta] if theta is not None else [])
    out, cache = causal_attention_forward(x, w, bias, h, **kw)
    dout = np.random.default_rng(5).standard_normal(out.shape)
    grads = causal_attention_backward(dout, cache)
    num = numeric_grads(f, arrays, dout)
    assert len(grads) == len(arrays)
    for g, n_ in zip(grads, num):
        # sparsemax/entmax15 are piecewise smooth; at these random logits no key sits at a support edge
        np.testing.assert_allclose(g, n_, rtol=1e-5, atol=1e-7)


def test_causal_attention_gradcheck_ipr_norm():
    x, w, bias, theta, h, kw = _attention_case("softmax", "ipr_norm", "rope", False, True)
    out, cache = causal_attention_forward(x, w, bias, h, **kw)
    dout = np.random.default_rng(6).standard_normal(out.shape)
    grads = causal_attention_backward(dout, cache)
    num = numeric_grads(lambda *a: causal_attention_forward(*a, h, **kw)[0], [x, w, bias], dout)
    for g, n_ in zip(grads, num):
        np.testing.assert_allclose(g, n_, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("positions", ATTENTION_POSITIONS)
def test_causal_attention_is_causal(positions):
    """Row i does not change when a later token changes; the last row does."""
    x, w, bias, _, h, kw = _attention_case("softmax", "none", positions, False, False)
    out = causal_attention_forward(x, w, bias, h, **kw)[0]
    x2 = x.copy()
    x2[:, 3] += 1.0
    out2 = causal_attention_forward(x2, w, bias, h, **kw)[0]
    np.testing.assert_array_equal(out[:, :3], out2[:, :3])
    assert np.abs(out[:, 3:] - out2[:, 3:]).min() > 1e-6


@pytest.mark.parametrize("name", TRAINABLE_MAPS)
@pytest.mark.parametrize("positions", RELATIVE_POSITIONS)
def test_attention_rows_match_the_training_path(name, positions):
    x, w, bias, theta, h, kw = _attention_case(name, "none", positions, False, True)
    full = causal_attention_forward(x, w, bias, h, **kw)[0]
    rows, w_last = causal_attention_rows(x, w, bias, h, **kw, block_elements=1)  # one row per block
    np.testing.assert_allclose(rows, full, rtol=1e-12, atol=1e-12)
    last = causal_attention_forward(x, w, bias, h, **{**kw, "last_only": True})
    np.testing.assert_allclose(last[0], full[:, -1:], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w_last, last[1][5][:, :, -1], rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------------------------------------------------
# The whole model


@pytest.mark.parametrize("positions", ALL_POSITIONS)
@pytest.mark.parametrize("pre_ln", [True, False])
@pytest.mark.parametrize("task", tasks_read_by("decoder"))
def test_model_gradcheck_positions(positions, pre_ln, task):
    check_positions_grads(positions, task, pre_ln)


@pytest.mark.parametrize("name", TRAINABLE_MAPS)
def test_model_gradcheck_weight_maps(name):
    check_model_grads(cfg("argmax", attention=name, attention_params=PARAMS.get(name), positions="rope", pre_ln=True))


@pytest.mark.parametrize("kw", [
    dict(tie_head=True, pre_ln=True, positions="alibi"),
    dict(tie_head=True, task="recall", key_encoding="embedding", positions="learned", max_positions=16),
    dict(norm="layernorm", pre_ln=True, positions="rope"),
    dict(norm="layernorm_per_head", positions="none", attention_output="ipr_norm"),
    dict(n_blocks=3, activation="gelu", positions="rope", pre_ln=True),
    dict(n_blocks=1, positions="alibi"),
])
def test_model_gradcheck_options(kw):
    kw = dict(kw)
    check_model_grads(cfg(kw.pop("task", "dictionary"), **kw))


def test_tied_head_reads_the_output_one_hot_rows():
    c = cfg("dictionary", tie_head=True, key_vocab=32)
    m = Decoder(c, seed=0)
    assert "head.w" not in m.params
    o = c.task_spec.output_feature_offset(c.vocab, c.key_encoding)
    assert o == 5  # 5 key bits, then the value one-hot
    np.testing.assert_array_equal(m._head_weight(), m.params["embed.w"][5:10].T)


@pytest.mark.parametrize("positions", ALL_POSITIONS)
@pytest.mark.parametrize("task", ["argmax", "recall"])
def test_left_padding_gives_the_logits_of_the_example_alone(positions, task):
    check_positions_padding(positions, task)


@pytest.mark.parametrize("positions", ALL_POSITIONS)
def test_predict_and_analysis_match_the_training_path(positions):
    check_positions_predict(positions)


def test_positions_tell_order_apart_and_nope_does_not_see_a_swap_of_equal_distance():
    """Swapping two item tokens changes the query's output with learned positions, but never without positions
    when the query attends to both only through a permutation-invariant sum (one block, NoPE)."""
    batch = make_batch("argmax", 4, 6, np.random.default_rng(0), n_classes=4)
    swapped = {k: (v[:, [1, 0, 2, 3, 4, 5]] if np.ndim(v) == 2 else v) for k, v in batch.items()}
    for positions, enc in POSITIONS.items():
        same = not (enc.table or enc.rotary or enc.bias)
        m = Decoder(cfg("argmax", n_blocks=1, positions=positions, max_positions=16), seed=0)
        diff = np.abs(m.forward(batch)[0] - m.forward(swapped)[0]).max()
        assert (diff < 1e-12) == same, (positions, diff)


# ----------------------------------------------------------------------------------------------------------------------
# Config and refusals


def test_config_refusals():
    with pytest.raises(ValueError, match="positions"):
        ModelConfig(task="argmax", positions="sinusoid", architecture="decoder")
    with pytest.raises(ValueError, match="no token order"):
        ModelConfig(task="argmax", positions="rope")  # the set transformer
    with pytest.raises(ValueError, match="tokens per item"):
        ModelConfig(task="recall")
    with pytest.raises(ValueError, match="n_heads"):
        Decoder(cfg("argmax", d_model=6, n_heads=2, positions="rope"))
    with pytest.raises(ValueError, match="residual"):
        Decoder(cfg("argmax", residual=False))
    m = Decoder(cfg("argmax", positions="learned", max_positions=8))
    with pytest.raises(ValueError, match="max_positions=8"):
        m.predict(batch_for(m.config, 2, 8))
    small = Decoder(cfg("argmax"), memory_budget=10_000)
    with pytest.raises(ValueError, match="N=40"):
        small.forward(batch_for(small.config, 4, 40))
    small.predict(batch_for(small.config, 4, 40))  # evaluation never forms T x T matrices
    with pytest.raises(ValueError, match="focus"):  # the set transformer's oracle control only
        small.predict(batch_for(small.config, 4, 8), focus=np.zeros(4, dtype=np.int64))


def test_config_round_trip_and_set_model_dicts_unchanged():
    c = cfg("recall", positions="rope", tie_head=True)
    assert ModelConfig.from_dict(c.to_dict()) == c
    assert "positions" not in ModelConfig(task="argmax").to_dict()
    assert build_model(c).__class__ is Decoder


def test_padding_mask_must_be_a_prefix():
    m = Decoder(cfg("argmax"))
    batch = batch_for(m.config, 2, 4)
    batch["mask"] = np.array([[True, False, True, True], [True] * 4])
    with pytest.raises(ValueError, match="prefix"):
        m.forward(batch)
