"""Each registry entry of varsim.variants declares its capabilities (theory kind, simulator kernel and packing,
trainable or inference-only), and what the consumers get from it matches the declaration and the map itself."""

import numpy as np
import pytest
from registry_checks import check_variant_kernel, check_variant_theory

from varsim.theory import expected_ipr
from varsim.theory.remedies import variant_theory
from varsim.variants import INFERENCE_ONLY_MAPS, TRAINABLE_MAPS, VARIANTS, get_variant

# parameters that make each map differ from plain softmax on the grid below (defaults elsewhere)
PARAMS = {"ssmax": {"s": 0.5}, "logn": {"n0": 4.0, "clamp": False}, "critical": {"c": 0.7, "beta0": 1.0},
          "topk": {"k": 16}}
NS = (8, 16, 64)
BETA = 1.3
M = 6000  # Monte Carlo rows per N


@pytest.mark.parametrize("name", list(VARIANTS))
def test_declared_theory_matches_what_it_returns_and_the_map(name):
    """variant_theory gives the fields of the entry's declared kind, and its exact values agree with the map's own
    Monte Carlo (5 SE + 1%); a bound holds for every draw; a 'none' map claims no number.

    Catches a wrong kind declared for a map (sigmoid declared exact_ipr would be softmax's value, topk declared
    exact_ipr would miss its truncation), an exact value at the plain beta instead of f(N) beta, and a bound or
    exact value made up for a Monte-Carlo-only map."""
    check_variant_theory(name, PARAMS.get(name, {}), NS, BETA, M)
    if name in PARAMS and get_variant(name).theory == "bound":  # k = 16: exact (softmax) at N <= 16 only
        th = variant_theory(name, list(NS), BETA, **PARAMS[name])
        assert [v is not None for v in th.ipr] == [n <= PARAMS[name]["k"] for n in NS]


def test_exact_ipr_is_softmax_at_the_effective_scale():
    """The exact_ipr kind evaluates softmax's E[sum w^2] at beta_N = f(N) beta (not at beta)."""
    th = variant_theory("ssmax", [16, 256], 1.0, s=0.5)
    assert th.beta_n == pytest.approx((0.5 * np.log(16), 0.5 * np.log(256)), rel=1e-14)
    assert th.ipr == tuple(float(expected_ipr(n, b)) for n, b in zip((16.0, 256.0), th.beta_n))


def test_sigmoid_variance_has_the_mean_term():
    """exact_var adds mu_v^2 Var(sum w) for a map whose weights do not sum to 1, and only sigma_v^2 E[sum w^2] for
    the others."""
    sig = variant_theory("sigmoid", [64], 1.0)
    assert sig.exact_var(4.0, 9.0) == [4.0 * sig.ipr[0] + 9.0 * sig.wsum_var[0]]
    soft = variant_theory("softmax", [64], 1.0)
    assert soft.exact_var(4.0, 9.0) == [4.0 * soft.ipr[0]]


def test_unknown_names_raise():
    from varsim.nn.weightmaps import make_attention
    from varsim.sim._variant_codes import pack

    for call in (lambda: get_variant("nope"), lambda: variant_theory("nope", 16, 1.0), lambda: pack("nope", {}),
                 lambda: make_attention("nope"), lambda: get_variant(None)):
        with pytest.raises(ValueError, match="unknown attention"):
            call()


def test_an_entry_with_inconsistent_capabilities_is_refused():
    """An exact theory without a temperature factor, an unknown kind or kernel, or packed parameters the map does
    not have: refused when the entry is made, not when a consumer trips over it."""
    from varsim.variants import Variant

    base = dict(name="x", description="", params=(), sums_to_one=True, reference=lambda z, n: z)
    for bad in (dict(theory="exact_ipr", kernel="topk", trainable=False),
                dict(theory="magic", kernel="topk", trainable=False),
                dict(theory="none", kernel="warp", trainable=False),
                dict(theory="none", kernel="scaled_softmax", trainable=False),
                dict(theory="none", kernel="topk", trainable=False, kernel_params=("k",))):
        with pytest.raises(ValueError, match="attention 'x'"):
            Variant(**base, **bad)


def test_trainable_maps_have_a_backward_and_inference_only_maps_none():
    """The transformer's implementations follow the registry's one statement of trainability."""
    from varsim.nn import weightmaps

    assert set(TRAINABLE_MAPS) | set(INFERENCE_ONLY_MAPS) == set(VARIANTS)
    assert set(TRAINABLE_MAPS) <= set(weightmaps._IMPLS) <= set(VARIANTS)
    for name in VARIANTS:
        assert (weightmaps._impl(name).backward is not None) == get_variant(name).trainable, name
        assert weightmaps.make_attention(name).trainable == get_variant(name).trainable


def test_an_inference_only_map_without_its_own_forward_runs_the_reference(monkeypatch):
    """A map registered inference-only with only a NumPy reference works in the transformer (its forward is the
    reference, with the row's key count), and refuses a backward."""
    from varsim.nn import weightmaps

    monkeypatch.delitem(weightmaps._IMPLS, "topk")
    z = np.random.default_rng(0).standard_normal((2, 3, 1, 40))
    mask = np.ones(z.shape, dtype=bool)
    mask[0, :, :, 30:] = False
    zm = np.where(mask, z, -np.inf)
    spec = weightmaps.make_attention("topk", {"k": 4})
    u, w, cache = spec.forward(zm.copy(), mask)
    np.testing.assert_allclose(w, get_variant("topk").weights(zm, k=4), rtol=1e-13, atol=0)
    assert not spec.shift_invariant
    with pytest.raises(ValueError, match="inference-only"):
        spec.backward(np.ones_like(z), cache)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_kernel_packing_round_trips_to_the_reference(name):
    """pack gives the code of the entry's declared kernel; unpack gives back a map whose reference weights equal the
    entry's own (the twins rely on it)."""
    check_variant_kernel(name, PARAMS.get(name, {}))
