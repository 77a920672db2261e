"""The fused path (``ModelConfig(fused=True)``, :mod:`varsim.nn.fused`): every kernel of
``varsim.nn._fused_kernels`` against its NumPy reference in float32 and float64 on edge shapes, the fused layers
against the default ones, gradient checks per layer and for whole fused models, and the default path untouched."""

from __future__ import annotations

import numpy as np
import pytest

from varsim.nn import _fused_kernels as FK

DTYPES = [np.float32, np.float64]
# (rows, width): one row, one key, a width not a multiple of any vector length, many rows
SHAPES = [(1, 1), (1, 7), (5, 1), (3, 17), (40, 64)]


def _tol(dtype):
    return dict(rtol=3e-6, atol=3e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)


def _logits(rng, r, t, dtype, masked):
    z = (rng.standard_normal((r, t)) * 3).astype(dtype)
    if masked and t > 1:
        mask = rng.random((r, t)) < 0.5
        mask[np.arange(r), rng.integers(0, t, size=r)] = True  # every row sees a key
        z[~mask] = -np.inf
    return z


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("masked", [False, True])
def test_softmax_kernels_equal_references(dtype, shape, masked):
    """softmax_rows and softmax_vjp_rows == their references (masked keys exactly 0 weight and gradient; rows sum
    to 1). Catches a kernel that forgets the max subtraction (overflow at large logits, tested with 8e2), sums over
    the masked keys or leaves the scalar sum out of the VJP."""
    rng = np.random.default_rng(hash((shape, masked)) % 2**32)
    z = _logits(rng, *shape, dtype, masked)
    z[0, 0] = 800.0 if np.isfinite(z[0, 0]) else z[0, 0]  # exp(800) overflows float32 and float64 alike
    got, want = z.copy(), z.copy()
    FK.softmax_rows(got)
    FK.softmax_rows_reference(want)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, **_tol(dtype))
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=10 * _tol(dtype)["rtol"])
    assert np.all(got[np.isinf(z)] == 0)
    dw = rng.standard_normal(shape).astype(dtype)
    g1, g2 = dw.copy(), dw.copy()
    FK.softmax_vjp_rows(got, g1)
    FK.softmax_vjp_rows_reference(got, g2)
    np.testing.assert_allclose(g1, g2, **_tol(dtype))
    assert np.all(g1[np.isinf(z)] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_layernorm_kernels_equal_references(dtype, shape):
    """layernorm_rows and layernorm_backward_rows == their references, including D = 1 (xhat = 0) and an offset of
    1e3 (catches a one-pass E[x^2] - E[x]^2 variance, which cancels there in float32)."""
    rng = np.random.default_rng(7)
    r, d = shape
    x = (rng.standard_normal((r, d)) + 1e3).astype(dtype)
    gamma, beta = rng.standard_normal(d).astype(dtype), rng.standard_normal(d).astype(dtype)
    outs = [[np.empty((r, d), dtype), np.empty((r, d), dtype), np.empty(r, dtype)] for _ in range(2)]
    FK.layernorm_rows(x, gamma, beta, 1e-5, *outs[0])
    FK.layernorm_rows_reference(x, gamma, beta, 1e-5, *outs[1])
    # the 1e3 offset costs about 1e3 eps of absolute accuracy in the mean, in either order of summation
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, **tol)
    dout = rng.standard_normal((r, d)).astype(dtype)
    xhat, rstd = outs[0][1], outs[0][2]
    grads = [[np.empty((r, d), dtype), np.empty(d, dtype), np.empty(d, dtype)] for _ in range(2)]
    FK.layernorm_backward_rows(dout, xhat, rstd, gamma, *grads[0])
    FK.layernorm_backward_rows_reference(dout, xhat, rstd, gamma, *grads[1])
    for a, b in zip(*grads):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_relu_backward_colsum_equals_reference(dtype, shape):
    """ReLU's backward and the column sums in one pass == the two NumPy passes (zeros where the ReLU's output is
    0, including its exact zeros: catches ``out >= 0``)."""
    rng = np.random.default_rng(8)
    out = np.maximum(rng.standard_normal(shape), 0).astype(dtype)
    dh = rng.standard_normal(shape).astype(dtype)
    g1, g2 = dh.copy(), dh.copy()
    db1, db2 = np.empty(shape[1], dtype), np.empty(shape[1], dtype)
    FK.relu_backward_colsum(g1, out, db1)
    FK.relu_backward_colsum_reference(g2, out, db2)
    np.testing.assert_array_equal(g1, g2)  # one multiplication per entry: the same bits
    np.testing.assert_allclose(db1, db2, **_tol(dtype))
    assert np.all(g1[out == 0] == 0)


# ----------------------------------------------------------------------------------------------------------------------
# The fused layers: against the default layers, and their gradients (central differences in float64)


def test_fused_layernorm_equals_default_and_has_correct_gradients():
    """layernorm_fused_forward/backward == layernorm_forward/backward to rounding, and the fused backward matches
    central differences of the fused forward (catches a backward that drops the mean(g xhat) term or the gain)."""
    from nn_checks import numeric_grads

    from varsim.nn.norms import layernorm_backward, layernorm_forward, layernorm_fused_backward, layernorm_fused_forward

    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 5))
    gamma, beta = rng.standard_normal(5), rng.standard_normal(5)
    out, cache = layernorm_fused_forward(x, gamma, beta)
    ref, ref_cache = layernorm_forward(x, gamma, beta)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    dout = rng.standard_normal(x.shape)
    got = layernorm_fused_backward(dout, cache)
    for a, b in zip(got, layernorm_backward(dout, ref_cache)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    num = numeric_grads(lambda x, g, b: layernorm_fused_forward(x, g, b)[0], [x, gamma, beta], dout)
    for a, b in zip(got, num):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("masked", [False, True])
def test_fused_query_attention_equals_default_and_has_correct_gradients(masked):
    """query_attention_forward/backward with ``fused=True`` (the softmax kernels inside the query row's products)
    == the default path to rounding (outputs, weights and every gradient), and the fused gradients match central
    differences (float64, 3 examples of 6 tokens, 2 heads)."""
    from nn_checks import numeric_grads

    from varsim.nn.attention import attention_weights, query_attention_backward, query_attention_forward

    rng = np.random.default_rng(12)
    b, t, d, h = 3, 6, 8, 2
    x, xq = rng.standard_normal((b, t, d)), rng.standard_normal((b, d))
    w_qkv, b_qkv = rng.standard_normal((d, 3 * d)) * 0.5, rng.standard_normal(3 * d) * 0.5
    mask = None
    if masked:
        mask = rng.random((b, t)) < 0.6
        mask[:, 1] = True
    out, cache = query_attention_forward(xq, x, w_qkv, b_qkv, h, mask, fused=True)
    ref, ref_cache = query_attention_forward(xq, x, w_qkv, b_qkv, h, mask)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(attention_weights(cache), attention_weights(ref_cache), rtol=1e-12, atol=1e-14)
    dout = rng.standard_normal(out.shape)
    got = query_attention_backward(dout, cache)
    for a, r in zip(got, query_attention_backward(dout, ref_cache)):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-12)

    def f(xq, x, w_qkv, b_qkv):
        return query_attention_forward(xq, x, w_qkv, b_qkv, h, mask, fused=True)[0]

    for a, n in zip(got, numeric_grads(f, [xq, x, w_qkv, b_qkv], dout)):
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-7)


def test_fused_self_attention_and_mlp_gradients():
    """Full self-attention (softmax kernel and its VJP) and a ReLU MLP (ReLU's backward fused with the bias
    gradient) on the fused path: central differences, and the default path's numbers to rounding."""
    from nn_checks import numeric_grads, row_masks

    from varsim.nn.attention import self_attention_backward, self_attention_forward
    from varsim.nn.layers import mlp_backward, mlp_forward

    rng = np.random.default_rng(13)
    b, t, d, h = 2, 5, 6, 2
    x = rng.standard_normal((b, t, d))
    w_qkv, b_qkv = rng.standard_normal((d, 3 * d)) * 0.5, rng.standard_normal(3 * d) * 0.5
    km = row_masks((rng.random((b, t)) < 0.7) | np.eye(1, t, 0, dtype=bool))
    out, cache = self_attention_forward(x, w_qkv, b_qkv, h, km, fused=True)
    ref, ref_cache = self_attention_forward(x, w_qkv, b_qkv, h, km)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    dout = rng.standard_normal(out.shape)
    got = self_attention_backward(dout.copy(), cache)
    for a, r in zip(got, self_attention_backward(dout.copy(), ref_cache)):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-12)
    num = numeric_grads(lambda x, w, bb: self_attention_forward(x, w, bb, h, km, fused=True)[0], [x, w_qkv, b_qkv],
                        dout)
    for a, n in zip(got, num):
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-7)

    layers = [(rng.standard_normal((d, 7)), rng.standard_normal(7)),
              (rng.standard_normal((7, 3)), rng.standard_normal(3))]
    y, mcache = mlp_forward(x, layers, fused=True)
    dy = rng.standard_normal(y.shape)
    dx, grads = mlp_backward(dy.copy(), mcache)
    rdx, rgrads = mlp_backward(dy.copy(), mlp_forward(x, layers)[1])
    np.testing.assert_allclose(dx, rdx, rtol=1e-12, atol=1e-12)
    arrays = [x] + [a for layer in layers for a in layer]

    def f(x, w0, b0, w1, b1):
        return mlp_forward(x, [(w0, b0), (w1, b1)], fused=True)[0]

    num = numeric_grads(f, arrays, dy)
    for a, n in zip([dx] + [g for pair in grads for g in pair], num):
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-7)
    for pair, rpair in zip(grads, rgrads):
        for a, r in zip(pair, rpair):
            np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------------------------------------------------
# Whole fused models


TINY = dict(d_model=8, n_heads=2, n_classes=4, key_vocab=32, value_vocab=5, d_hidden=6, dtype="float64", fused=True)


@pytest.mark.parametrize("task,kw", [
    ("argmax", dict()),
    ("argmax", dict(n_blocks=2, pre_ln=True)),
    ("dictionary", dict(norm="layernorm")),
    ("dictionary", dict(n_blocks=2, norm="layernorm", key_encoding="embedding")),
])
def test_fused_model_gradients(task, kw):
    """Whole fused models (one and two blocks, pre-LN, layer norm after attention, padded sets): central
    differences of every parameter, as the default models' test does."""
    from nn_checks import check_model_grads

    from varsim.nn.model import ModelConfig

    check_model_grads(ModelConfig(task=task, **{**TINY, **kw}))


def test_fused_decoder_gradients():
    """The causal decoder with ``fused=True`` (its pre-LN norms and final norm take the fused layer norm; its own
    attention keeps the default code): central differences of every parameter."""
    from nn_checks import check_model_grads

    from varsim.nn.model import ModelConfig

    check_model_grads(ModelConfig(task="argmax", **{**TINY, "architecture": "decoder", "n_blocks": 2,
                                                    "pre_ln": True, "positions": "rope"}))


@pytest.mark.parametrize("kw", [dict(n_blocks=2, pre_ln=True), dict(task="dictionary", norm="layernorm")])
def test_fused_model_float32_close_to_default(kw):
    """In float32 the fused model's loss and gradients equal the default model's to float32 rounding (the same
    math in another order), but not bit for bit: why the path is opt-in."""
    from nn_checks import batch_for

    from varsim.nn.model import ModelConfig, Transformer

    kw = {"task": "argmax", **kw}
    base = ModelConfig(d_model=32, n_heads=4, **kw)
    fused = ModelConfig(d_model=32, n_heads=4, fused=True, **kw)
    batch = batch_for(base, 16, (3, 12), 5)
    la, _, ga = Transformer(base, seed=2).loss_and_grads(batch)
    lb, _, gb = Transformer(fused, seed=2).loss_and_grads(batch)
    assert abs(la - lb) <= 1e-5 * abs(la)
    for k in ga:
        scale = float(np.max(np.abs(ga[k]))) + 1e-12
        assert np.max(np.abs(ga[k] - gb[k])) <= 1e-4 * scale, k
    assert any(not np.array_equal(ga[k], gb[k]) for k in ga)


def test_fused_is_opt_in_and_recorded():
    """The default config has ``fused=False`` and leaves it out of its dict (configs recorded before the field read
    the same); ``fused=True`` is in the dict and round-trips through a TrainConfig; a non-bool is refused."""
    from varsim.nn.model import ModelConfig
    from varsim.train import TrainConfig

    assert ModelConfig(task="argmax").fused is False
    assert "fused" not in ModelConfig(task="argmax").to_dict()
    cfg = TrainConfig(task="argmax", model={"fused": True})
    assert cfg.to_dict()["model"]["fused"] is True
    assert TrainConfig.from_dict(cfg.to_dict()).model.fused is True
    with pytest.raises(ValueError, match="fused"):
        ModelConfig(task="argmax", fused="yes")


def test_fused_model_evaluates_on_its_own_path(monkeypatch):
    """A fused two-block model's evaluation (``predict``/``logits_and_weights``: the full blocks' rows in blocks,
    no cache) gives the logits of its training forward pass to float64 rounding, and its own path's kernels run
    there (catches an inference path that forgets ``fused`` and so evaluates other bits than it trains)."""
    from nn_checks import batch_for

    import varsim.nn.attention as attention_module
    from varsim.nn import fused as fused_module
    from varsim.nn.model import ModelConfig, Transformer

    cfg = ModelConfig(task="argmax", **{**TINY, "n_blocks": 2})
    model = Transformer(cfg, seed=4)
    batch = batch_for(cfg, 5, (3, 9), 6)
    calls = []

    def spy(y):
        calls.append(y.shape)
        return fused_module.softmax_forward_inplace(y)

    logits, _ = model.forward(batch)
    monkeypatch.setattr(attention_module, "softmax_forward_inplace", spy)
    got, _ = model.logits_and_weights(batch)
    np.testing.assert_allclose(got, logits, rtol=1e-10, atol=1e-12)
    assert len(calls) >= 2  # the full block's rows and the query row
