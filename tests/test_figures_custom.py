"""``varsim figures --only NAME`` with figure parameters and a style (varsim.figures.custom)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from varsim.cli import main


def test_parameters_and_style_reach_the_figure(tmp_path, capsys):
    rc = main(["figures", "--only", "fig_variance_vs_n", "--beta", "0.5", "3", "--d-k", "128",
               "--n-max", "64", "--sequences", "64", "--style", "column", "--outdir", str(tmp_path), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    data = json.loads((tmp_path / "fig_variance_vs_n.json").read_text())
    assert [c["beta"] for c in data["curves"]] == [0.5, 3.0] and data["d_k"] == 128
    assert data["curves"][0]["logits_rb"]["n"][-1] == 64 and data["sequences"]["logits_rb"] == 64
    png = Image.open(tmp_path / "fig_variance_vs_n.png")
    assert png.width <= (3.3 + 2 * 0.02) * 200 + 1  # a 3.3 in column at 200 dpi (cropped to its content)
    assert json.loads(png.info["Description"])["params"]["betas"] == [0.5, 3.0]


def test_a_parameter_the_figure_does_not_take_is_one_line_error(tmp_path, capsys):
    rc = main(["figures", "--only", "fig_random_query", "--quick", "--d-k", "32", "--outdir", str(tmp_path),
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "fig_random_query" in err and "--d-k" in err


def test_jobs_with_parameters_or_a_style_is_one_line_error(tmp_path, capsys):
    """--jobs (figures in parallel processes) with figure parameters or --style, whose drawing runs serially, is
    refused before any work instead of silently ignored."""
    for extra in (["--d-k", "32"], ["--style", "column"]):
        rc = main(["figures", "--only", "fig_probe_layers", "--jobs", "2", *extra, "--outdir", str(tmp_path),
                   "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "--jobs" in err, err
        assert not any(tmp_path.iterdir())


def test_messages_name_the_flags_not_the_parameters(tmp_path, capsys):
    """A refused figure parameter is named by the flag the user gave (``--beta``), not by the figure's keyword
    (``betas``): the message said "betas" for ``--beta``."""
    for extra in (["--only", "fig_random_query", "--quick"], ["--only", "fig_variance_vs_n", "--replot"]):
        rc = main(["figures", *extra, "--beta", "1", "--outdir", str(tmp_path), "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "--beta" in err and "betas" not in err, err


def test_a_data_source_figure_in_a_style_and_a_restyled_replot(tmp_path, capsys):
    """--style draws a figure of the committed probe data at a column's width; --replot --style redraws the stored
    JSON in another style without computing (the JSON is left as it was)."""
    args = ["figures", "--only", "fig_probe_layers", "--outdir", str(tmp_path), "--no-progress"]
    assert main([*args, "--style", "column"]) == 0, capsys.readouterr().err
    stored = (tmp_path / "fig_probe_layers.json").read_bytes()
    narrow = Image.open(tmp_path / "fig_probe_layers.png").width
    assert narrow <= (3.3 + 2 * 0.02) * 200 + 1
    assert main([*args, "--replot", "--style", "two-column"]) == 0, capsys.readouterr().err
    assert (tmp_path / "fig_probe_layers.json").read_bytes() == stored
    assert Image.open(tmp_path / "fig_probe_layers.png").width > 1.5 * narrow
    rc = main([*args, "--replot", "--style", "column", "--beta", "1"])
    assert rc == 2 and "beta" in capsys.readouterr().err


def test_make_custom_is_the_one_engine_with_a_deprecation_warning(tmp_path):
    """The former second engine still draws, through varsim.figures.make, and says so."""
    from varsim.figures.custom import make_custom

    with pytest.warns(DeprecationWarning, match="varsim.figures.make"):
        written = make_custom(["fig_repro_accuracy"], outdir=tmp_path, style="column")
    assert [p.name for p in written["fig_repro_accuracy"]] == [f"fig_repro_accuracy.{e}" for e in ("json", "png",
                                                                                                 "pdf")]
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="only: name the figures"):
        make_custom([], outdir=tmp_path)
