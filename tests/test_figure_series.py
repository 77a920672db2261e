"""Colours and markers of named series (varsim.figures.series): asked of the registries, stable per name when an entry
is added, never shared, never given out nearly alike while a distinct one is free."""

from __future__ import annotations

import pytest

from varsim import variants as VR
from varsim.figures import series
from varsim.nn import norms as NR


@pytest.fixture
def extra_norm():
    norm = NR.register_norm(NR.Normalization("series_test_norm", forward=lambda x, p, h: (x, None),
                                             backward=lambda d, c: (d, {})))
    yield norm.name
    del NR.NORMS[norm.name]


def test_a_new_norm_keeps_the_others_styles_and_gets_its_own(extra_norm):
    """Catches a style keyed by position in a hand-kept list of names (a new name falls off its end onto another's
    colour) and one that moves the others' colours when a name is added."""
    styles = series.norm_styles()
    before = {k: v for k, v in styles.items() if k != extra_norm}
    del NR.NORMS[extra_norm]
    try:
        assert series.norm_styles() == before
    finally:
        NR.NORMS[extra_norm] = NR.Normalization(extra_norm, forward=lambda x, p, h: (x, None),
                                                backward=lambda d, c: (d, {}))
    mine = series.norm_style(extra_norm)
    assert mine["color"] not in {v["color"] for v in before.values()}
    assert mine["marker"] not in {v["marker"] for v in before.values()}


def test_every_registered_map_has_its_own_colour_and_marker():
    styles = series.variant_styles()
    assert set(styles) == set(VR.VARIANTS)
    for key in ("color", "marker"):
        values = [s[key] for s in styles.values()]
        assert len(set(values)) == len(values), key
    for name, v in VR.VARIANTS.items():
        assert styles[name]["marker"] == v.marker and (not v.color or styles[name]["color"] == v.color)


def test_a_colour_given_out_is_distinct_from_those_taken_while_one_is_free():
    """The first free colour of the palette is skipped when it is near one taken (orange beside vermillion)."""
    got = series.assign([("a", "#D55E00", "o"), ("b", "", "")])
    assert got["b"]["color"] != "#D55E00" and series.delta_e(got["b"]["color"], "#D55E00") >= series.MIN_DELTA_E
    assert got["b"]["marker"] == series.MARKERS[1]
    many = series.assign([(f"s{i}", "", "") for i in range(len(series.PALETTE))])
    assert len({s["color"] for s in many.values()}) == len(series.PALETTE)
    with pytest.raises(ValueError, match="no color left"):
        series.assign([(f"s{i}", "", "") for i in range(len(series.PALETTE) + 1)])


def test_a_colour_or_marker_declared_twice_is_refused():
    with pytest.raises(ValueError, match="series 'b': color '#000000' is already a's"):
        series.assign([("a", "#000000", "o"), ("b", "#000000", "s")])
    taken = next(v for v in VR.VARIANTS.values() if v.color)
    clash = VR.Variant("series_clash_test", "softmax", (), True, taken.reference, theory="exact_ipr",
                       kernel="scaled_softmax", trainable=False, beta_factor_fn=taken.beta_factor_fn, label="x",
                       family=VR.FAMILIES[0], marker="8", color=taken.color)
    with pytest.raises(ValueError, match=f"color '{taken.color}' is already"):
        VR.register_variant(clash)
    assert clash.name not in VR.VARIANTS


def test_delta_e_orders_colours_as_seen():
    assert series.delta_e("#000000", "#000000") == 0.0
    assert series.delta_e("#000000", "#FFFFFF") == pytest.approx(100.0, abs=0.1)
    assert series.delta_e("#D55E00", "#E69F00") < series.delta_e("#D55E00", "#0072B2")


def test_named_series_of_the_grids_are_registered_and_unknown_names_raise():
    """A grid's own names (``topk1``, ``softmax_replicate``) are series of the registry with a label and a colour of
    their own; an unknown name raises naming ``series``; a series named like a weight map, or drawing a map that is not
    registered, or at parameters the map refuses, is refused and leaves the registry as it was."""
    styles = series.series_styles()
    assert {"topk1", "logn_temperature", "softmax_replicate", "oracle"} <= set(series.SERIES)
    assert len({s["color"] for s in styles.values()}) == len(styles) == len(VR.VARIANTS) + len(series.SERIES)
    assert series.series_style("topk1")["label"] != "topk1"
    assert series.series_style("softmax")["label"] == VR.VARIANTS["softmax"].label
    with pytest.raises(ValueError, match="unknown series 'topk2'"):
        series.series_style("topk2")
    before = dict(series.SERIES)
    for bad, match in ((series.Series("ssmax", "x", "ssmax"), "weight map's name"),
                       (series.Series("series_test_a", "x", "no_such_map"), "of must name"),
                       (series.Series("series_test_b", "x", "topk", {"k": 0}), "topk parameter 'k'"),
                       (series.Series("series_test_c", "x", "topk", color="#0072B2"), "already softmax's")):
        with pytest.raises(ValueError, match=match):
            series.register_series(bad)
        assert series.SERIES == before


def test_a_map_at_other_parameters_is_labelled_with_them():
    """The grid's trained log-N (unclamped) is not labelled as the registry's clamped default."""
    assert series.series_label("logn", {"n0": 16.0}) == VR.VARIANTS["logn"].label
    assert series.series_label("logn", {"n0": 17.0, "clamp": False}) == "logn (n0 = 17, clamp off)"
    assert series.series_label("topk1", {"k": 1}) == series.series_style("topk1")["label"]
