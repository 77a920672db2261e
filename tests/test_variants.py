"""The attention-variant registry (varsim.variants): validation, and every NumPy reference against an independent
brute-force definition (bisection thresholds, explicit per-row loops)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from registry_checks import check_variant_declared

from varsim import variants as VR
from varsim.variants import VARIANTS, WEIGHT_MAPS, get_output_normalization, get_variant, ipr_norm, weights

ROW = np.array([0.3, -1.2, 2.0, 0.0, 1.1, -0.4, 2.0, 0.7])

logit_arrays = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9),
    elements=st.floats(-30, 30, allow_nan=False, allow_infinity=False),
)


def _bisect_threshold(x, power):
    """t with sum [x - t]_+^power = 1, by bisection on [max - 1, max] (brute force, independent of sorting)."""
    lo, hi = x.max() - 1.0, x.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.sum(np.maximum(x - mid, 0.0) ** power) > 1.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


#: the weight maps of REMEDIES 2 and the remedies grid's negative control (permuted_softmax, a softmax in
#: distribution); the registry may hold more
REMEDIES = ("softmax", "ssmax", "logn", "critical", "adaptive_temperature", "topk", "entmax15", "sparsemax", "sigmoid",
            "permuted_softmax")


def test_registry_holds_every_variant_of_remedies():
    """The nine weight maps of REMEDIES 2 are registered with the parameters REMEDIES 2 names, plus the remedies
    grid's negative control; of them only sigmoid does not sum to 1, and ipr_norm is an output normalization (not a
    weight map)."""
    assert set(REMEDIES) <= set(WEIGHT_MAPS)
    assert get_variant("ssmax").param_names == ("s",)
    assert get_variant("logn").param_names == ("n0", "clamp")
    assert get_variant("critical").param_names == ("c", "beta0")
    assert get_variant("topk").param_names == ("k",)
    spec = {k: VARIANTS[k] for k in REMEDIES}
    assert [k for k, v in spec.items() if not v.sums_to_one] == ["sigmoid"]
    assert {k for k, v in spec.items() if v.is_scaled_softmax} == {"softmax", "ssmax", "logn", "critical",
                                                                  "permuted_softmax"}
    # REMEDIES 4: these three are applied to trained softmax models only; REMEDIES 3: what theory covers
    assert {k for k, v in spec.items() if not v.trainable} == {"critical", "adaptive_temperature", "topk"}
    assert {k: v.theory for k, v in spec.items()} == {
        "softmax": "exact_ipr", "ssmax": "exact_ipr", "logn": "exact_ipr", "critical": "exact_ipr",
        "sigmoid": "sigmoid_moments", "topk": "bound", "adaptive_temperature": "none", "entmax15": "none",
        "sparsemax": "none", "permuted_softmax": "exact_ipr"}
    assert "ipr_norm" not in VARIANTS and get_output_normalization("ipr_norm").reference is ipr_norm


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_registered_map_declares_label_family_marker_and_gives_weights(name):
    """Catches a map without a legend label or family (the figure could not place it), two maps sharing a marker,
    a scaled softmax outside the rescaled family, and a reference giving NaN, negative or masked weights."""
    check_variant_declared(name)


def test_a_map_with_a_taken_marker_or_no_family_is_refused():
    """register_variant refuses a second map with a marker already registered; Variant refuses a family outside
    FAMILIES and a scaled softmax declared in another family."""
    import dataclasses

    with pytest.raises(ValueError, match="marker 'o' is already softmax's"):
        VR.register_variant(dataclasses.replace(VARIANTS["sigmoid"], name="sigmoid2", marker="o"))
    with pytest.raises(ValueError, match="needs a label, a marker and a family"):
        dataclasses.replace(VARIANTS["sigmoid"], family="")
    with pytest.raises(ValueError, match="scaled softmax belongs to the family 'rescaled softmax'"):
        dataclasses.replace(VARIANTS["ssmax"], family=VR.FAMILIES[1])
    assert "sigmoid2" not in VARIANTS


def test_output_normalization_params_are_validated_by_the_registry():
    """OutputNormalization.check_params fills defaults and refuses unknown or bad parameters, and the model's
    ``check_output_params`` gives exactly its answers (one home for the rule). Catches a registry entry whose
    parameters are not checked (a negative eps under the square root) or a second copy of the rules that drifts."""
    from varsim.nn.weightmaps import check_output_params

    spec = get_output_normalization("ipr_norm")
    assert spec.param_names == ("eps",)
    assert spec.check_params() == {"eps": 0.0} == check_output_params("ipr_norm")
    assert spec.check_params(eps=1e-6) == {"eps": 1e-6} == check_output_params("ipr_norm", {"eps": 1e-6})
    assert spec.check_params({"eps": None}) == {"eps": 0.0}
    for bad, match in [({"eps": -1.0}, "ipr_norm parameter 'eps'.*>= 0"), ({"eps": math.nan}, "'eps'.*finite"),
                       ({"scale": 2.0}, "attention_output 'ipr_norm' has no parameter.*scale.*its parameters: eps")]:
        with pytest.raises(ValueError, match=match):
            spec.check_params(bad)
        with pytest.raises(ValueError, match=match):
            check_output_params("ipr_norm", bad)
    assert check_output_params("none") == {}
    with pytest.raises(ValueError, match="attention_output 'none' takes no parameters"):
        check_output_params("none", {"eps": 0.0})
    with pytest.raises(ValueError, match="unknown attention_output 'layer'; expected one of 'none', 'ipr_norm'"):
        check_output_params("layer")


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: get_variant("softmx"), "softmx.*softmax.*sigmoid"),
        (lambda: get_variant(None), "attention"),
        (lambda: get_output_normalization("layer"), "ipr_norm"),
        (lambda: weights("ssmax", ROW, s=-1.0), "'s'.*> 0"),
        (lambda: weights("ssmax", ROW, s=math.nan), "'s'.*finite"),
        (lambda: weights("ssmax", ROW, t=1.0), "no parameter.*t.*its parameters: s"),
        (lambda: weights("softmax", ROW, k=2), "no parameter.*k.*none"),
        (lambda: weights("topk", ROW, k=0), "'k'.*>= 1"),
        (lambda: weights("topk", ROW, k=2.5), "'k'.*integer"),
        (lambda: weights("logn", ROW, n0=1.0), "'n0'.*> 1"),
        (lambda: weights("logn", ROW, clamp="yes"), "'clamp'.*True or False"),
        (lambda: weights("critical", ROW, beta0=0.0), "'beta0'"),
        (lambda: weights("softmax", [1.0, math.nan]), "logits.*NaN"),
        (lambda: weights("softmax", [1.0, math.inf]), "logits"),
        (lambda: weights("softmax", [-math.inf, -math.inf]), "unmasked"),
        (lambda: weights("softmax", np.zeros((2, 0))), "logits"),
        (lambda: weights("softmax", "abc"), "logits"),
        (lambda: weights("sigmoid", ROW, n=0.5), "n must"),
        (lambda: get_variant("sigmoid").beta_factor(16), "not a softmax with an N-dependent"),
        (lambda: ipr_norm(np.ones(3), np.ones(4), np.ones((5, 3))), "shapes"),
    ],
)
def test_bad_input_raises_naming_it(call, match):
    """Unknown names list the valid ones; bad parameter values name the variant and the parameter; NaN / +inf
    logits, fully masked rows and mismatched shapes are refused (never NaN weights)."""
    with pytest.raises(ValueError, match=match):
        call()


def test_scaled_softmax_factors():
    """ssmax = softmax(s ln N z), logn = softmax(max(1, ln N / ln N0) z), critical = softmax(c sqrt(2 ln N) z/beta0),
    checked against softmax evaluated by hand. Catches log2 N instead of ln N, a missing clamp, beta0 ignored."""
    n = ROW.size
    sm = lambda z: np.exp(z - z.max()) / np.exp(z - z.max()).sum()  # noqa: E731
    np.testing.assert_allclose(weights("ssmax", ROW, s=0.7), sm(0.7 * math.log(n) * ROW), rtol=1e-13)
    np.testing.assert_allclose(weights("logn", ROW, n0=4.0), sm(math.log(n) / math.log(4) * ROW), rtol=1e-13)
    np.testing.assert_allclose(weights("logn", ROW, n0=64.0), sm(ROW), rtol=1e-13)  # clamped to 1 below N0
    np.testing.assert_allclose(weights("logn", ROW, n0=64.0, clamp=False), sm(0.5 * ROW), rtol=1e-13)
    np.testing.assert_allclose(weights("critical", ROW, c=0.8, beta0=2.0),
                               sm(0.8 * math.sqrt(2 * math.log(n)) * ROW / 2.0), rtol=1e-13)
    assert get_variant("ssmax").beta_factor(np.e**2, s=0.5) == pytest.approx(1.0)
    np.testing.assert_allclose(get_variant("logn").beta_factor([4, 256], n0=16), [1.0, 2.0])


def test_topk_keeps_the_k_largest():
    """topk = softmax over the k largest logits (brute force: sort each row), k >= N is softmax. Catches the k
    smallest, k - 1 kept, or a softmax over all logits."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(5, 11))
    for k in (1, 3, 11, 20):
        w = weights("topk", z, k=k)
        for row, wr in zip(z, w):
            top = np.sort(np.argsort(-row)[: min(k, row.size)])
            expect = np.zeros_like(row)
            expect[top] = np.exp(row[top] - row[top].max()) / np.exp(row[top] - row[top].max()).sum()
            np.testing.assert_allclose(wr, expect, rtol=1e-13, atol=1e-300)
        assert np.all((w > 0).sum(axis=-1) == min(k, 11))


@given(logit_arrays, st.sampled_from(["sparsemax", "entmax15"]))
def test_sparse_maps_match_bisection(z, name):
    """Sort-based exact thresholds equal a bisection solve of sum [x - t]_+^p = 1 (p = 1, x = z for sparsemax; p = 2,
    x = z/2 for 1.5-entmax) to 1e-9 on Hypothesis arrays of any batch shape. Catches the wrong root of the
    quadratic, an off-by-one support size, missing 1/2 in x, or sorting ascending."""
    w = weights(name, z)
    power, scale = (1, 1.0) if name == "sparsemax" else (2, 0.5)
    flat_z, flat_w = z.reshape(-1, z.shape[-1]), w.reshape(-1, z.shape[-1])
    for row, wr in zip(flat_z, flat_w):
        x = scale * row
        t = _bisect_threshold(x, power)
        np.testing.assert_allclose(wr, np.maximum(x - t, 0.0) ** power, atol=1e-9)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


@given(logit_arrays, st.floats(-1e3, 1e3), st.sampled_from(WEIGHT_MAPS))
def test_shift_invariance_and_normalization(z, shift, name):
    """Every map except sigmoid is invariant to adding a constant to a row of logits and sums to 1 (to 1e-12); all
    weights are finite and in [0, 1]. Catches a missing max-subtraction (overflow at logits ~700) and a
    normalization over the wrong axis."""
    w = weights(name, z)
    assert np.all(np.isfinite(w)) and np.all(w >= 0) and np.all(w <= 1 + 1e-12)
    if name == "sigmoid":
        return
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(weights(name, z + shift), w, atol=1e-9)


@pytest.mark.parametrize("name", WEIGHT_MAPS)
def test_masking_equals_dropping_the_keys(name):
    """A -inf logit gets weight exactly 0, and the other weights equal the map applied to the unmasked keys alone
    (n defaults to the number of finite logits). Catches a mask that still counts in n (ssmax, logn, sigmoid), or a
    sparse threshold computed over the masked placeholders."""
    z = np.array([[0.5, -math.inf, 1.5, -0.2, -math.inf, 0.9], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]])
    params = {"topk": {"k": 2}, "ssmax": {"s": 0.8}, "logn": {"n0": 2.0}}.get(name, {})
    w = weights(name, z, **params)
    keep = np.isfinite(z[0])
    assert np.all(w[0, ~keep] == 0.0)
    np.testing.assert_allclose(w[0, keep], weights(name, z[0, keep], **params), rtol=1e-12)
    np.testing.assert_allclose(w[1], weights(name, z[1], **params), rtol=1e-12)


def test_huge_logits_stay_finite():
    """Logit spread 1e6: every map returns finite weights (one-hot for softmax-like maps). Catches exp without
    max-subtraction."""
    z = np.array([1e6, -1e6, 3e5, 999999.0])
    for name in WEIGHT_MAPS:
        w = weights(name, z)
        assert np.all(np.isfinite(w)), name
        if name != "sigmoid":
            assert w[0] >= 0.5, name


def test_sigmoid_bias_is_minus_ln_n():
    """sigmoid(z - ln N) by hand, with n given explicitly (per row) or by default the row length. Catches a bias of
    +ln N, ln of the batch size, or a normalization by the sum."""
    z = np.array([[0.0, 1.0, -2.0, 3.0], [5.0, 5.0, 5.0, 5.0]])
    expect = 1.0 / (1.0 + np.exp(-(z - math.log(4))))
    np.testing.assert_allclose(weights("sigmoid", z), expect, rtol=1e-14)
    np.testing.assert_allclose(weights("sigmoid", z, n=100.0),
                               1.0 / (1.0 + np.exp(-(z - math.log(100)))), rtol=1e-14)
    assert weights("sigmoid", np.zeros(1000)).sum() == pytest.approx(1000 / 1001, rel=1e-12)


def test_adaptive_temperature_by_hand():
    """b(H) = max(P(H), 1) for H > 0.5 else 1 and weights softmax(b z), per row; P < 1 above H ~ 5.94 nats (so
    diffuse heads are left alone) and between 0.5 and ~0.85. Catches entropy in bits, the polynomial coefficients
    in the wrong order, or b applied when P < 1."""
    poly = np.polynomial.Polynomial(VR.ADAPTIVE_POLY[::-1])
    roots = sorted(r.real for r in (poly - 1).roots() if abs(r.imag) < 1e-12 and r.real > 0)
    assert roots[-1] == pytest.approx(5.94, abs=0.01)
    assert 0.8 < roots[0] < 0.9
    rng = np.random.default_rng(3)
    z = rng.normal(size=(4, 50)) * np.array([[0.1], [1.0], [3.0], [10.0]])
    w = weights("adaptive_temperature", z)
    for row, wr in zip(z, w):
        p = np.exp(row - row.max())
        p /= p.sum()
        h = -np.sum(p * np.log(p))
        b = max(poly(h), 1.0) if h > 0.5 else 1.0
        e = np.exp(b * (row - row.max()))
        np.testing.assert_allclose(wr, e / e.sum(), rtol=1e-12)
    # a diffuse head (H ~ ln 4096 = 8.3 nats) keeps b = 1: adaptive == softmax
    zd = rng.normal(size=4096) * 0.3
    assert VR.entropy(zd) > 6.0
    np.testing.assert_allclose(weights("adaptive_temperature", zd), weights("softmax", zd), rtol=1e-13)
    assert VR.adaptive_temperature_factor(2.0) == pytest.approx(poly(2.0)) and poly(2.0) > 1


def test_ipr_norm_output():
    """ipr_norm = (o - sum(w) vbar) / sqrt(sum w^2): by hand, and with softmax weights on Gaussian values its output
    has unit variance per coordinate at N = 4 and N = 512 (the remedy of THEORY 4b; a per-example vbar costs
    (1 - 1/N)-order terms only, so 5 SE + 2%). Catches dividing by sum w^2 instead of its square root, or
    subtracting the mean without the factor sum(w)."""
    o = np.array([1.0, 2.0])
    w = np.array([0.5, 0.25, 0.25])
    v = np.array([[1.0, 0.0], [2.0, 4.0], [3.0, 2.0]])
    np.testing.assert_allclose(ipr_norm(o, w, v), (o - 1.0 * v.mean(axis=0)) / math.sqrt(0.375))
    rng = np.random.default_rng(7)
    for n in (4, 512):
        z = rng.normal(size=(4000, n)) * 1.5
        w = weights("softmax", z)
        v = 3.0 + rng.normal(size=(4000, n, 2))
        out = ipr_norm(np.einsum("sn,snc->sc", w, v), w, v)
        y2 = np.sum(w * w, axis=1)
        # given w: o - vbar = sum_i (w_i - 1/N) v_i has variance sum (w_i - 1/N)^2 = Y2 - 1/N, so Var = E[1 - 1/(N Y2)]
        expect = np.mean(1.0 - 1.0 / (n * y2))
        sq = out[:, 0] ** 2  # the mean is exactly 0
        var, se = sq.mean(), sq.std(ddof=1) / math.sqrt(sq.size)
        assert abs(var - expect) <= 5 * se + 0.02 * expect, (n, var, expect)
