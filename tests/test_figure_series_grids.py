"""The grid figures (remedies and decoder) take every series' colour, marker and legend label from the series
registry (:mod:`varsim.figures.series`): drawn from the committed summaries, each legend entry names a registered
series (a weight map's or a named series' registry label, or a weight map with the grid's parameters), no two series
of one figure share a colour, and a series has the same colour, its registry colour, in every figure.

Seen failing on the figures that coloured a series by its position within its family and labelled it by its grid
name: ``topk1 (inference-only)`` is no registry label, and ssmax and top-1 were both drawn in blue."""

from __future__ import annotations

import re

import pytest
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D

import varsim.figures as figures
from varsim.figures import _style, series
from varsim.variants import VARIANTS

GRID_FIGURES = ("fig_remedies_primary", "fig_remedies_accuracy", "fig_remedies_decomposition", "fig_decoder_primary",
                "fig_decoder_accuracy")
#: legend entries that are no series: guides and the meaning of markers
GUIDES = ("chance", "longest training set", "significant after", "not significant after", "control that fails")


def _series_of(text: str) -> str | None:
    """The registered series a legend entry names: its text up to ': ' is a registry label, or a weight map's name
    followed by its parameters in brackets; None when it names none."""
    head = text.split(": ")[0]
    labels = {series.series_style(name)["label"]: name for name in [*VARIANTS, *series.SERIES]}
    if head in labels:
        return labels[head]
    match = re.fullmatch(r"(\w+) \(.+\)", head)
    return match.group(1) if match and match.group(1) in VARIANTS else None


def _legend_series(fig) -> dict:
    """``{series name: {colours of its line handles}}`` of a figure's legends; a legend entry that is neither a guide
    nor a registered series fails."""
    out = {}
    for legend in fig.legends:
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            words = " ".join(text.get_text().split())
            if words.startswith(GUIDES):
                continue
            name = _series_of(words)
            assert name is not None, f"legend label {words!r} is no registered series"
            colours = out.setdefault(name, set())
            if isinstance(handle, Line2D):
                colours.add(to_hex(handle.get_color()))
    return out


@pytest.fixture(scope="module")
def drawn():
    """The grid figures drawn from the committed summaries: ``{name: {series: colours}}``."""
    out = {}
    for name in GRID_FIGURES:
        mod = figures.load(name)
        fig = mod.draw(_style.jsonable(mod.compute(False)))
        try:
            out[name] = _legend_series(fig)
        finally:
            _style.plt.close(fig)
    return out


@pytest.mark.parametrize("name", GRID_FIGURES)
def test_every_series_has_its_registry_label_and_a_colour_of_its_own(drawn, name):
    got = drawn[name]
    assert len(got) >= 3, got  # at least softmax or its null control, and two more
    for key, colours in got.items():
        assert colours == {series.series_style(key)["color"].lower()}, (name, key, colours)
    owners = {}
    for key, colours in got.items():
        for colour in colours:
            assert colour not in owners, f"{name}: {key} and {owners[colour]} share the colour {colour}"
            owners[colour] = key


def test_a_series_keeps_its_colour_in_every_figure(drawn):
    seen = {}
    for name, got in drawn.items():
        for key, colours in got.items():
            seen.setdefault(key, set()).update(colours)
    assert {"softmax", "ssmax", "logn", "topk1", "softmax_replicate"} <= set(seen)
    assert all(len(colours) == 1 for colours in seen.values()), seen


#: the committed pictures of grid figures (README, docs/experiments): redrawn by ``varsim figures --only NAME``
COMMITTED_PICTURES = {"fig_remedies_primary": "docs/remedies_primary.png",
                      "fig_decoder_primary": "docs/decoder_primary.png"}


@pytest.mark.parametrize("name", sorted(COMMITTED_PICTURES))
def test_the_committed_pictures_show_each_series_in_its_registry_colour(drawn, name):
    """The committed PNG is the figure's (its provenance names it) and shows every series of the current drawing in
    its registry colour (at least 40 pixels of exactly that colour). Seen failing on the pictures drawn before the
    series registry (the null control's colour absent): a picture nobody redrew after a change of colours."""
    from pathlib import Path

    import numpy as np
    from matplotlib.colors import to_rgb
    from PIL import Image

    from varsim import plotting

    path = Path(__file__).resolve().parents[1] / COMMITTED_PICTURES[name]
    assert plotting.read_provenance(path)["name"] == name
    pixels = np.asarray(Image.open(path).convert("RGB"))
    for key in drawn[name]:
        rgb = np.round(255 * np.array(to_rgb(series.series_style(key)["color"]))).astype(np.uint8)
        count = int(np.all(pixels == rgb, axis=-1).sum())
        assert count >= 40, (f"{COMMITTED_PICTURES[name]}: {key}'s colour {series.series_style(key)['color']} "
                             f"in {count} pixels; redraw it with `varsim figures --only {name}`")


def test_the_old_calls_of_the_remedies_style_helpers_still_work_with_a_warning():
    """0.1.0's ``variant_style(name, kind, role, families)``, ``variant_label(name, kind, role)`` and
    ``REMEDY_COLORS`` keep working until 0.3.0, each with a DeprecationWarning; the new calls warn nothing."""
    import warnings

    from varsim.figures import remedies as fr

    with pytest.warns(DeprecationWarning, match="families"):
        old = fr.variant_style("ssmax", "trained", "remedy", {"trained": ["ssmax"]})
    with pytest.warns(DeprecationWarning, match="variant_label"):
        assert fr.variant_label("oracle", "inference", "positive_control") == fr.variant_label("oracle",
                                                                                               "positive_control")
    with pytest.warns(DeprecationWarning, match="REMEDY_COLORS"):
        assert len(fr.REMEDY_COLORS) == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fr.variant_style("ssmax", "trained", "remedy") == old
        assert fr.variant_label("topk1", "remedy") == series.series_style("topk1")["label"]
    with pytest.raises(AttributeError):
        fr.NO_SUCH_NAME  # noqa: B018
