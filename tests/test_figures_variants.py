"""The attention-variants figure (fig_variants_ipr): panels, legend, theory agreement, JSON-able data, quick stamp."""

from __future__ import annotations

import json

import numpy as np
import pytest
from registry_checks import check_variant_in_figure

import varsim.figures as figures
from varsim.figures import _style
from varsim.figures import fig_variants_ipr as fig
from varsim.variants import BASELINE, CONTROLS, FAMILIES, VARIANTS, WEIGHT_MAPS


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The figure made once in quick mode through the registry; its stored data and the drawn Figure."""
    outdir = tmp_path_factory.mktemp("variants_fig")
    written = figures.make([fig.NAME], outdir=outdir, quick=True, seed=0, progress=False)
    data = json.loads((outdir / f"{fig.NAME}.json").read_text())
    return outdir, written, data


def _texts(f) -> list[str]:
    return [t.get_text() for t in f.findobj(lambda a: hasattr(a, "get_text") and callable(a.get_text))]


def test_registered_and_writes_png_pdf_json(quick):
    outdir, written, data = quick
    assert fig.NAME in figures.FIGURES and figures.load(fig.NAME) is fig
    png, pdf = outdir / f"{fig.NAME}.png", outdir / f"{fig.NAME}.pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    # the stored data is plain JSON (no NaN) and redraws without recomputing
    json.loads(json.dumps(data, allow_nan=False))
    assert data == _style.jsonable(data)


def test_one_panel_per_beta_and_a_legend_entry_for_every_variant(quick):
    """Two columns of panels (beta = 1, 2), every weight map of the registry in its family's row with its own
    marker (the baseline in every row); the legend names all of them with their registry labels.

    Catches a variant silently dropped from the sweep or the legend, drawn in another family's row, or two variants
    sharing a marker (a marker list that wraps)."""
    data = quick[2]
    assert [p["beta"] for p in data["panels"]] == [1.0, 2.0]
    for panel in data["panels"]:
        # every map but the controls (permuted_softmax is softmax in distribution)
        assert [s["attention"] for s in panel["series"]] == [k for k in WEIGHT_MAPS if k not in CONTROLS]
        for s in panel["series"]:
            assert len(s["n"]) == 4 and all(v is not None and v > 0 for v in s["ipr"] + s["ipr_se"])
    f = fig.draw(data)
    axes = [ax for ax in f.axes if ax.get_title()]  # rows: the families; columns: beta
    assert [ax.get_title().split("\n")[0] for ax in axes] == [r"$\beta = 1$", r"$\beta = 2$"] * len(FAMILIES)
    for ax in axes:
        family = ax.get_title().split("\n")[1]
        want = {VARIANTS[s["attention"]].marker for s in data["panels"][0]["series"]
                if VARIANTS[s["attention"]].family == family or s["attention"] == BASELINE}
        drawn = {m for line in ax.get_lines() if (m := line.get_marker()) not in ("None", "", None, "_")}  # "_": caps
        assert drawn == want, (family, drawn, want)
    labels = [t.get_text() for leg in f.legends for t in leg.get_texts()]
    markers = [VARIANTS[name].marker for name, _, _ in fig.variant_specs()]
    assert len(set(markers)) == len(markers)
    for name, label, _ in fig.variant_specs():
        assert label == VARIANTS[name].label and any(text.startswith(label) for text in labels), (name, labels)
    assert any("bound" in text for text in labels)
    assert any(_style.SMOKE_TEST_LABEL.upper() in t for t in _texts(f))  # quick data is stamped
    _style.plt.close(f)


def test_exact_lines_and_bounds_agree_with_the_mc_points(quick):
    """Every MC point with exact theory is within 5 SE + 1% of the exact value drawn for it; top-k points lie in the
    band; the exact lines are those of each panel's beta.

    Catches the critical variant's beta0 not following the panel's beta (its points would sit on another curve),
    exact lines computed at the wrong beta, and the sigmoid's ln N bias left out of its theory."""
    from varsim.theory import remedies

    for panel in quick[2]["panels"]:
        beta = panel["beta"]
        for s in panel["series"]:
            ipr, se = np.array(s["ipr"]), np.array(s["ipr_se"])
            if s["attention"] == "topk":
                assert s["theory"] == "bound" and np.all((ipr >= 1 / s["params"]["k"]) & (ipr <= 1))
                continue
            if s["exact"] is None:
                assert s["theory"] == "none"
                continue
            ref = np.array(s["exact_at_mc"])
            assert np.all(np.abs(ipr - ref) <= 5 * se + 0.01 * ref), (beta, s["attention"], ipr, ref, se)
            n_line, line = np.array(s["exact"]["n"]), np.array(s["exact"]["ipr"])
            want = (remedies.sigmoid_moments(n_line[-1], beta)[0] if s["attention"] == "sigmoid"
                    else remedies.variant_ipr(s["attention"], n_line[-1], beta, **s["params"]))
            assert line[-1] == pytest.approx(want, rel=1e-9)
        crit = next(s for s in panel["series"] if s["attention"] == "critical")
        assert crit["params"]["beta0"] == beta


def test_legend_kind_is_the_registry_entrys_not_the_first_cells(quick, monkeypatch):
    """Each legend entry states its variant's declared theory kind, whatever its first cell's theory was: top-k with
    k = 16 is 'MC + bound' although its first cell (N = 16 <= k) is exact softmax.

    Catches the kind read from the first cell (top-k would read 'MC + exact')."""
    from varsim.variants import get_variant

    for panel in quick[2]["panels"]:
        assert all(s["theory"] == get_variant(s["attention"]).theory for s in panel["series"])
    monkeypatch.setattr(fig, "variant_specs", lambda: (("topk", "top-k (k = 16)", {"k": 16}),))
    data = fig.compute(quick=True, n_max=64, sequences=64)
    series = data["panels"][0]["series"][0]
    assert series["exact_at_mc"][0] is not None and series["theory"] == "bound"
    f = fig.draw(data)
    labels = {t.get_text() for leg in f.legends for t in leg.get_texts()}
    assert "top-k (k = 16): MC + bound" in labels, labels
    _style.plt.close(f)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_registered_map_is_drawn_in_its_familys_row_unless_a_control(name):
    """Each map but the controls' is drawn from a small sweep with its own marker and label, in its family's row
    (the baseline in every row). Catches a map placed by a list of names kept in the figure."""
    check_variant_in_figure(name)
