"""Figures: quick mode writes PNG + PDF for each simulation/theory figure, and the plotted data agree with theory."""

from __future__ import annotations

import json

import numpy as np
import pytest

from varsim.cli import main
from varsim.cli.figures import figures_dir, load_make_all

make_all = load_make_all()
# the simulation/theory figures tested here; the registry may hold more (reproduction figures, tested elsewhere)
CORE = ["fig_variance_vs_n", "fig_decay_exponent", "fig_random_query"]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """Each core figure once, in quick mode, into a temporary directory."""
    outdir = tmp_path_factory.mktemp("figures")
    written = make_all.make(CORE, outdir=outdir, quick=True, seed=0, progress=False)
    data = {name: json.loads((outdir / f"{name}.json").read_text()) for name in written}
    return outdir, written, data


def _arr(values):
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def test_registry_names_importable_figure_modules():
    assert make_all.FIGURES[:3] == CORE
    for name in make_all.FIGURES:
        module = make_all.load(name)
        assert callable(module.compute) and callable(module.plot) and callable(module.main)
    assert (figures_dir() / "make_all.py").is_file()


def test_quick_mode_writes_png_and_pdf_for_each_figure(quick_run):
    outdir, written, _ = quick_run
    assert list(written) == CORE
    for name in CORE:
        png, pdf = outdir / f"{name}.png", outdir / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000


def test_replot_from_stored_data_gives_identical_png(quick_run, tmp_path):
    outdir, _, _ = quick_run
    name = "fig_decay_exponent"
    (tmp_path / f"{name}.json").write_bytes((outdir / f"{name}.json").read_bytes())
    make_all.make([name], outdir=tmp_path, replot=True, progress=False)
    assert (tmp_path / f"{name}.png").read_bytes() == (outdir / f"{name}.png").read_bytes()


def test_variance_figure_data_agree_with_theory(quick_run):
    """Every MC point is within 5 SE + 1% of the exact sigma_v^2 E[sum w^2] drawn next to it.

    Catches a figure that sets |q| = beta * d_k instead of beta * sqrt(d_k) (the 1/d-vs-1/sqrt(d) slip:
    the MC points would sit on another beta's curve), or draws the exact curve for the wrong beta.
    """
    curves = quick_run[2]["fig_variance_vs_n"]["curves"]
    assert [c["beta"] for c in curves] == [0.5, 1.0, 1.5, 2.0]
    for c in curves:
        for key in ("logits_rb", "full"):
            s, ref = c[key], _arr(c["exact_at_mc"][key])
            var, se = _arr(s["var"]), _arr(s["var_se"])
            assert np.all(np.isfinite(var)) and np.all(se > 0)
            assert np.all(np.abs(var - ref) <= 5 * se + 0.01 * ref), (c["beta"], key, var, ref, se)
        assert np.all(np.diff(_arr(c["exact"]["var"])) < 0)  # the exact curve falls with N
        assert np.isfinite(c["logits_rb"]["slope"]) and c["logits_rb"]["slope_se"] > 0


def test_decay_exponent_figure_slopes_agree_with_exact_exponent(quick_run):
    """MC local slopes equal the exact local exponent within 5 SE + 0.02 (THEORY.md P4's tolerance).

    Catches mixed logarithms (ln Var against log2 N: 0.69x as steep; log2 Var against ln N: 1.44x) and
    slopes of the standard deviation instead of the variance (half as steep).
    """
    for c in quick_run[2]["fig_decay_exponent"]["curves"]:
        mc = c["mc"]
        slope, se, ref = _arr(mc["slope"]), _arr(mc["slope_se"]), _arr(mc["exact_at_mid"])
        assert len(slope) >= 3 and np.all(se > 0)
        assert np.all(np.abs(slope - ref) <= 5 * se + 0.02), (c["beta"], slope, ref, se)
        ex = c["exact"]
        assert np.all((_arr(ex["exponent"]) <= 0) & (_arr(ex["exponent"]) >= -1 - 1e-9))
        assert np.all((_arr(ex["clamp"]) <= 0) & (_arr(ex["clamp"]) >= -1))
    assert quick_run[2]["fig_decay_exponent"]["boundaries"] == pytest.approx([0.5, 1.5])


def test_random_query_figure_data_agree_with_exact_mixture(quick_run):
    """N Var for a random query matches the exact chi-square mixture; the fixed query matches E[sum w^2](tau).

    Catches a mixture evaluated for the wrong dimension (d = 16 and 64 differ by 4% at N = 1024) and a
    fixed query with |q| = d_k instead of sqrt(d_k) (beta = 8 instead of 1).
    """
    data = quick_run[2]["fig_random_query"]
    families = [data["fixed"], *data["random"]]
    for fam in families:
        for key in ("logits_rb", "full"):
            s = fam[key]
            nvar, se, ref = _arr(s["nvar"]), _arr(s["nvar_se"]), _arr(s["exact"])
            assert np.all(np.abs(nvar - ref) <= 5 * se + 0.01 * ref), (key, nvar, ref, se)
    assert data["fixed"]["limit"] == pytest.approx(np.e)
    assert [r["d_k"] for r in data["random"]] == [16, 64]
    assert data["random"][0]["limit"] == pytest.approx((1 - 2 / 16) ** -8)
    assert data["random"][1]["limit"] == pytest.approx((1 - 2 / 64) ** -32)


def test_cli_figures_writes_one_figure(capsys, tmp_path):
    rc = main(["figures", "--quick", "--outdir", str(tmp_path), "--only", "fig_decay_exponent", "--no-progress"])
    out = capsys.readouterr().out.split()
    assert rc == 0
    assert sorted(out) == sorted(str(tmp_path / f"fig_decay_exponent.{ext}") for ext in ("json", "png", "pdf"))


def test_cli_figures_unknown_name_is_one_line_error(capsys, tmp_path):
    rc = main(["figures", "--quick", "--outdir", str(tmp_path), "--only", "fig_nope", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "fig_nope" in err


def test_cli_figures_without_checkout_explains(monkeypatch, tmp_path):
    import varsim

    monkeypatch.setattr(varsim, "__file__", str(tmp_path / "site-packages" / "varsim" / "__init__.py"))
    with pytest.raises(ValueError, match="figures"):
        figures_dir()
