"""Adam / AdamW against hand-computed steps, decay selection, clipping, schedule, exact state round trip."""

import math

import numpy as np
import pytest

from varsim.nn.optim import Adam, AdamW, LRSchedule, global_norm, make_optimizer


def _params(dtype=np.float64):
    return {
        "w": np.array([[0.5, -1.0], [2.0, 0.25]], dtype=dtype),
        "b": np.array([0.1, -0.3], dtype=dtype),
    }


G1 = {"w": np.array([[0.2, -0.4], [1.0, 0.0]]), "b": np.array([-0.5, 0.05])}
G2 = {"w": np.array([[-0.1, 0.3], [0.5, 2.0]]), "b": np.array([0.25, 0.0])}


def _adam_scalar(p0, grads, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, decoupled=False, decayed=True):
    """Adam written out for one scalar with plain floats, straight from Kingma & Ba / Loshchilov & Hutter."""
    p, m, v = p0, 0.0, 0.0
    for t, g in enumerate(grads, start=1):
        if wd and decayed and not decoupled:
            g = g + wd * p
        if wd and decayed and decoupled:
            p = p * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1**t), v / (1 - b2**t)
        p = p - lr * mhat / (math.sqrt(vhat) + eps)
    return p


@pytest.mark.parametrize("cls,wd", [(Adam, 0.0), (Adam, 0.1), (AdamW, 0.1)])
def test_two_steps_match_the_scalar_formula(cls, wd):
    """Catches missing bias correction, eps inside the sqrt, a swapped beta, coupled vs decoupled decay mixed up,
    and decay applied to the bias vector."""
    params = _params()
    p0 = {k: v.copy() for k, v in params.items()}
    opt = cls(params, lr=0.01, weight_decay=wd)
    opt.step(G1)
    opt.step(G2)
    for k in params:
        for idx in np.ndindex(params[k].shape):
            ref = _adam_scalar(p0[k][idx], [G1[k][idx], G2[k][idx]], 0.01, wd=wd,
                               decoupled=cls is AdamW, decayed=(k == "w"))
            assert params[k][idx] == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_first_step_moves_each_entry_by_lr_times_sign():
    """Bias-corrected Adam's first update is lr * g / (|g| + eps): a wrong correction gives 0.1/sqrt(0.001) * lr."""
    params = _params()
    p0 = {k: v.copy() for k, v in params.items()}
    Adam(params, lr=0.01).step(G1)
    for k in params:
        g = G1[k]
        np.testing.assert_allclose(p0[k] - params[k], 0.01 * g / (np.abs(g) + 1e-8), rtol=1e-12, atol=1e-15)


def test_adamw_decays_matrices_only_by_lr_times_wd():
    """With zero gradients the Adam update is zero, so only the decoupled decay moves parameters."""
    params = _params()
    p0 = {k: v.copy() for k, v in params.items()}
    opt = AdamW(params, lr=0.1, weight_decay=0.5)
    opt.step({k: np.zeros_like(v) for k, v in params.items()})
    np.testing.assert_allclose(params["w"], p0["w"] * (1 - 0.05), rtol=1e-15)
    np.testing.assert_array_equal(params["b"], p0["b"])
    assert opt.hyperparameters()["decayed"] == ["w"]
    custom = AdamW(_params(), lr=0.1, weight_decay=0.5, decay=lambda name, p: name == "b")
    assert custom.hyperparameters()["decayed"] == ["b"]


def test_global_norm_clipping_scales_the_gradient_seen_by_the_moments():
    params = _params()
    grads = {"w": np.full((2, 2), 3.0), "b": np.array([4.0, 0.0])}  # norm sqrt(36 + 16) = sqrt(52)
    assert global_norm(grads) == pytest.approx(math.sqrt(52))
    opt = Adam(params, lr=0.01, clip_norm=1.0)
    info = opt.step(grads)
    assert info["clipped"] and info["grad_norm"] == pytest.approx(math.sqrt(52))
    scale = 1.0 / (math.sqrt(52) + 1e-6)
    np.testing.assert_allclose(opt.m["w"], 0.1 * 3.0 * scale, rtol=1e-12)
    np.testing.assert_allclose(opt.v["b"], [0.001 * (4.0 * scale) ** 2, 0.0], rtol=1e-12)
    # below the threshold nothing changes
    opt2 = Adam(_params(), lr=0.01, clip_norm=100.0)
    assert not opt2.step(grads)["clipped"]
    np.testing.assert_allclose(opt2.m["w"], 0.3, rtol=1e-12)


def test_schedule_warmup_then_cosine():
    s = LRSchedule(1.0, warmup=4, total=14, min_ratio=0.1)
    assert [s(t) for t in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert s(4) == pytest.approx(1.0)
    assert s(9) == pytest.approx(0.1 + 0.9 * 0.5)  # halfway through the decay
    assert s(14) == pytest.approx(0.1) and s(100) == pytest.approx(0.1)
    assert LRSchedule(0.3)(10**6) == 0.3
    params = _params()
    opt = Adam(params, lr=1.0, warmup=4, total_steps=14)
    lrs = [opt.step(G1)["lr"] for _ in range(3)]
    assert lrs == [0.25, 0.5, 0.75] and opt.lr == 1.0


def test_float32_in_place_and_dtype_preserved():
    params = _params(np.float32)
    ids = {k: id(v) for k, v in params.items()}
    opt = AdamW(params, lr=1e-2, clip_norm=1.0)
    for _ in range(3):
        opt.step({k: v.astype(np.float32) for k, v in G1.items()})
    assert all(id(params[k]) == ids[k] and params[k].dtype == np.float32 for k in params)
    assert all(opt.m[k].dtype == np.float32 and opt.v[k].dtype == np.float32 for k in params)


def test_state_dict_round_trip_continues_bitwise():
    """An optimizer rebuilt from a state dict continues exactly like the original (what resume relies on)."""
    rng = np.random.default_rng(0)
    grads = [{k: rng.standard_normal(v.shape).astype(np.float32) for k, v in _params().items()} for _ in range(6)]
    kw = dict(lr=3e-2, weight_decay=0.1, clip_norm=0.5, warmup=2, total_steps=6)
    a_params = _params(np.float32)
    a = AdamW(a_params, **kw)
    for g in grads[:3]:
        a.step(g)
    state = a.state_dict()
    b_params = {k: v.copy() for k, v in a_params.items()}
    b = AdamW(b_params, **kw)
    b.load_state_dict(state)
    for g in grads[3:]:
        a.step(g)
        b.step(g)
    for k in a_params:
        assert a_params[k].tobytes() == b_params[k].tobytes()
    with pytest.raises(ValueError, match="different settings"):
        AdamW(_params(np.float32), **{**kw, "lr": 1e-3}).load_state_dict(state)
    with pytest.raises(ValueError, match="parameter names"):
        AdamW({"w": _params(np.float32)["w"]}, **kw).load_state_dict(state)


def test_matches_torch_adamw_when_available():
    """An independent implementation: torch.optim.AdamW with the same decay set, clipping and constant lr."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    grads = [{k: rng.standard_normal(v.shape) * 3 for k, v in _params().items()} for _ in range(5)]
    params = _params()
    ours = AdamW(params, lr=0.05, weight_decay=0.2, clip_norm=1.0)
    tp = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in _params().items()}
    theirs = torch.optim.AdamW(
        [{"params": [tp["w"]], "weight_decay": 0.2}, {"params": [tp["b"]], "weight_decay": 0.0}], lr=0.05
    )
    for g in grads:
        ours.step(g)
        for k in tp:
            tp[k].grad = torch.tensor(g[k])
        torch.nn.utils.clip_grad_norm_(list(tp.values()), 1.0)
        theirs.step()
    for k in params:
        np.testing.assert_allclose(params[k], tp[k].detach().numpy(), rtol=1e-10, atol=1e-12)


def test_non_finite_gradient_raises_before_touching_state():
    params = _params()
    p0 = {k: v.copy() for k, v in params.items()}
    opt = Adam(params, lr=0.01)
    bad = {"w": np.array([[np.nan, 0.0], [0.0, 0.0]]), "b": np.zeros(2)}
    with pytest.raises(FloatingPointError):
        opt.step(bad)
    assert opt.t == 0 and all(np.array_equal(params[k], p0[k]) for k in params)


def test_a_gradient_of_the_wrong_shape_is_refused_before_touching_state():
    """A refused step changes nothing: an optimizer that counted the refused call would use the second update's
    learning rate and bias correction next, and its first good step would differ from a fresh optimizer's."""
    params, fresh = _params(), _params()
    p0 = {k: v.copy() for k, v in params.items()}
    opt = Adam(params, lr=0.01, warmup=3)
    with pytest.raises(ValueError, match=r"grads\['b'\] has shape"):
        opt.step({"w": G1["w"], "b": np.zeros(3)})
    assert opt.t == 0 and opt.lr == opt.schedule(0)
    assert all(np.array_equal(params[k], p0[k]) for k in params)
    assert all(not opt.m[k].any() and not opt.v[k].any() for k in params)
    assert opt.step(G1) == Adam(fresh, lr=0.01, warmup=3).step(G1)
    assert all(np.array_equal(params[k], fresh[k]) for k in params)


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), 0.0, -1e-3, "0.1", None])
def test_bad_learning_rate_names_lr(lr):
    with pytest.raises(ValueError, match="lr"):
        AdamW(_params(), lr=lr)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"betas": (0.9, 1.0)}, "betas"),
        ({"betas": (0.9,)}, "betas"),
        ({"eps": 0.0}, "eps"),
        ({"weight_decay": -0.1}, "weight_decay"),
        ({"clip_norm": 0.0}, "clip_norm"),
        ({"warmup": -1}, "warmup"),
        ({"warmup": 10, "total_steps": 5}, "warmup"),
    ],
)
def test_bad_settings_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Adam(_params(), **kwargs)


def test_bad_params_and_grads_and_names():
    with pytest.raises(ValueError, match="params"):
        Adam({})
    with pytest.raises(ValueError, match="params"):
        Adam({"w": np.zeros(3, dtype=np.int64)})
    with pytest.raises(ValueError, match="unknown optimizer"):
        make_optimizer("sgd", _params())
    opt = make_optimizer("adam", _params())
    with pytest.raises(ValueError, match="missing"):
        opt.step({"w": G1["w"]})
    with pytest.raises(ValueError, match="shape"):
        opt.step({"w": G1["w"], "b": np.zeros(3)})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decayed,decoupled", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("scale", [1.0, 0.37])
def test_adam_kernel_equals_its_numpy_reference_bitwise(dtype, decayed, decoupled, scale):
    """The one-pass Numba update and the NumPy reference give the same bits for p, m and v, with and without
    clipping's scale, for AdamW's decay, Adam's L2 term and no decay. Catches a reordered or fused operation (the
    golden training fingerprints would move) and a branch that applies the decay to the wrong parameters."""
    from varsim.nn._optim_kernels import CONSTANTS, adam_update, adam_update_reference

    rng = np.random.default_rng(7)
    n = 1037
    p, g = rng.normal(size=n).astype(dtype), rng.normal(size=n).astype(dtype) * dtype(3)
    m, v = rng.normal(size=n).astype(dtype) * dtype(0.1), rng.random(n).astype(dtype) * dtype(0.01)
    c = np.array([scale, 1.0 - 3e-3 * 0.01, 0.01, 0.9, 0.1, 0.999, 1.0 - 0.999, math.sqrt(1 - 0.999**3), 1e-8,
                  3e-3 / (1 - 0.9**3)], dtype=dtype)
    assert len(c) == len(CONSTANTS)
    a = [x.copy() for x in (p, g, m, v)]
    b = [x.copy() for x in (p, g, m, v)]
    adam_update(a[0], a[1], a[2], a[3], decayed, decoupled, c)
    adam_update_reference(b[0], b[1], b[2], b[3], decayed, decoupled, c)
    for x, y in zip(a, b):
        assert x.dtype == dtype
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], p) and np.array_equal(a[1], g)  # p moved; g is read only


def test_the_optimizer_updates_non_contiguous_parameters_in_place():
    """A parameter that is a strided view (not contiguous) is still updated in place, as a contiguous copy would be.
    Catches an update written into a temporary copy and lost."""
    base = np.zeros((4, 6), dtype=np.float32)
    params = {"w": base[:, ::2]}
    ref = {"w": np.zeros((4, 3), dtype=np.float32)}
    grads = {"w": np.arange(12, dtype=np.float32).reshape(4, 3) - 5}
    Adam(params, lr=0.1).step(grads)
    Adam(ref, lr=0.1).step(grads)
    np.testing.assert_array_equal(params["w"], ref["w"])
    assert np.any(base != 0)
