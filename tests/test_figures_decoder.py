"""The decoder figure (fig_decoder_accuracy): skipped with one line while a build has no decoder results, a one-line
error when named without them, and drawn from a decoder results directory (the quick grid's summary)."""

from __future__ import annotations

import json

import pytest
from repro_checks import module_grid

import varsim.figures as figures
from varsim.cli import main

NAME = "fig_decoder_accuracy"


def test_without_results_it_is_skipped_with_one_line(tmp_path, capsys, monkeypatch):
    """`varsim figures` (all figures) skips it with one line naming --decoder-results and draws the others, exit 0;
    naming it with --only is a one-line error naming the option, exit 2."""
    import varsim.figures.decoder as fd

    monkeypatch.setattr(fd, "COMMITTED_DIR", tmp_path / "no-committed-summary")
    monkeypatch.setattr(figures, "FIGURES", {k: figures.FIGURES[k] for k in ("fig_decay_exponent", NAME)})
    rc = main(["figures", "--quick", "--outdir", str(tmp_path), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 0 and len(lines) == 1 and "skipping fig_decoder_accuracy" in lines[0]
    assert "--decoder-results" in lines[0]
    assert (tmp_path / "fig_decay_exponent.png").exists() and not (tmp_path / f"{NAME}.png").exists()
    rc = main(["figures", "--quick", "--only", NAME, "--outdir", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "decoder_results" in err


def test_a_missing_results_directory_is_a_one_line_error(tmp_path, capsys):
    rc = main(["figures", "--only", NAME, "--decoder-results", str(tmp_path / "nope"), "--no-progress",
               "--outdir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "decoder_results" in err and "--preset decoder" in err


@pytest.fixture(scope="module")
def quick_grid(tmp_path_factory):
    """The quick decoder grid (2 seeds, every position, norm and attention) and its figure drawn in quick mode."""
    results, _ = module_grid(tmp_path_factory, "decoder", preset="decoder", quick=True)
    outdir = tmp_path_factory.mktemp("decfig")
    written = figures.make([NAME], outdir=outdir, quick=True, progress=False, decoder_results=results)
    return results, written, json.loads((outdir / f"{NAME}.json").read_text())


def test_drawn_from_the_quick_grid(quick_grid):
    """One panel per norm (rows) x position (columns), one line per trained attention with as many points as test
    lengths and its interval around its mean; the summary's means are what is drawn; stamped as a smoke test."""
    results, written, data = quick_grid
    assert {p.suffix for p in written[NAME]} == {".json", ".png", ".pdf"}
    assert data["smoke_test"] is True and data["primary_length"] == 64
    grid = data["grid"]
    assert [[p["architecture"] for p in row] for row in grid] == [["decoder_none", "decoder_rope", "decoder_alibi"]] * 2
    assert [row[0]["norm"] for row in grid] == ["none", "layernorm"]
    summary = json.loads((results / "summary.json").read_text())
    for row in grid:
        for p in row:
            assert [ln["variant"] for ln in p["lines"]] == ["softmax", "softmax_replicate", "ssmax", "logn"]
            for ln in p["lines"]:
                assert len(ln["mean"]) == len(data["lengths"]) == 3
                assert all(lo <= m <= hi for lo, m, hi in zip(ln["ci_low"], ln["mean"], ln["ci_high"]))
                g = next(g for g in summary["groups"] if g["variant"] == ln["variant"]
                         and (g["architecture"], g["norm"]) == (p["architecture"], p["norm"]))
                assert ln["mean"] == g["accuracy"]["mean"]
    fig = figures.load(NAME).draw(data)
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert titles[:3] == ["NoPE, norm none", "RoPE, norm none", "ALiBi, norm none"]
    from varsim.figures import _style

    _style.plt.close(fig)


def test_the_quick_grids_summary_has_the_preregistered_endpoint(quick_grid):
    """The summary of the decoder grid carries its pre-registered family (ssmax and logn x 3 positions x 2 norms at
    the primary N, Holm-adjusted over those 12 only), the negative control per group, and the decoder's ranking
    decomposition (read from the runs' records) whose two kinds of error add up to the error rate."""
    results, _, _ = quick_grid
    summary = json.loads((results / "summary.json").read_text())
    assert (results / "table.md").read_text().startswith("# varsim decoder: ")  # not the remedies grid's title
    rows = summary["primary"]
    assert len(rows) == 12 and {r["variant"] for r in rows} == {"ssmax", "logn"}
    assert {(r["architecture"], r["norm"]) for r in rows} == {
        (a, n) for a in ("decoder_none", "decoder_rope", "decoder_alibi") for n in ("none", "layernorm")}
    assert all(r["length"] == 64 for r in rows)
    assert [c["variant"] for c in summary["controls"]] == ["softmax_replicate"] * 6
    for g in summary["groups"]:
        rk = g["ranking"]
        for seed_row, acc in zip(zip(rk["ranking_error"]["per_seed"], rk["dispersion_error"]["per_seed"]),
                                 g["accuracy"]["per_seed"]):
            for r, d, a in zip(*seed_row, acc):
                assert r + d == pytest.approx(1 - a, abs=1e-12)


def test_committed_summary_is_drawn_without_an_option(quick_grid, tmp_path, monkeypatch, capsys):
    """`python -m varsim.figures.decoder RESULTS DEST` copies the summary, table and settings; with DEST as the
    package's committed directory, the figure is drawn from it without --decoder-results, its footer naming the
    committed data (still stamped: the quick grid's models are tiny). A directory without a summary is a one-line
    error naming the decoder preset."""
    import varsim.figures.decoder as fd

    results, _, _ = quick_grid
    dest = tmp_path / "decoder"  # the footer names the committed arm by its directory
    assert fd.main([str(results), str(dest)]) == 0
    assert {p.name for p in dest.iterdir()} == {"summary.json", "table.md", "settings.json"}
    assert fd.main([str(tmp_path / "nope"), str(tmp_path / "d2")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--preset decoder" in err
    monkeypatch.setattr(fd, "COMMITTED_DIR", dest)
    out = tmp_path / "out"
    figures.make([NAME], outdir=out, progress=False)
    data = json.loads((out / f"{NAME}.json").read_text())
    assert data["origin"] == "committed decoder results" and "varsim/figures/data/decoder" in data["footer"]
    assert data["smoke_test"] is True


@pytest.fixture(scope="module")
def quick_constant(tmp_path_factory):
    """The quick grid's recipe check (``--preset decoder_constant``: the same grid with a constant learning rate)."""
    return module_grid(tmp_path_factory, "decoder_constant", preset="decoder_constant", quick=True)[0]


def test_primary_figure_draws_every_arm(quick_grid, quick_constant, tmp_path):
    """fig_decoder_primary: rows = norms, columns = the arms in the order given (cosine, then constant), x = the
    positions; per panel the null control and the two variants, each point the arm's own primary (or control) row
    for that position and norm, with the arm's Holm flag; so a figure that mixed up the arms, the norms or the
    positions, or drew the unadjusted test, fails."""
    results, _, _ = quick_grid
    written = figures.make(["fig_decoder_primary"], outdir=tmp_path, quick=True, progress=False,
                           decoder_results=[results, quick_constant])
    assert {p.suffix for p in written["fig_decoder_primary"]} == {".json", ".png", ".pdf"}
    data = json.loads((tmp_path / "fig_decoder_primary.json").read_text())
    assert data["smoke_test"] is True and data["length"] == 64
    assert [q["label"] for q in data["positions"]] == ["NoPE", "RoPE", "ALiBi"]
    grid = data["grid"]
    assert [[p["norm"] for p in row] for row in grid] == [["none", "none"], ["layernorm", "layernorm"]]
    assert [p["recipe"]["schedule"] for p in grid[0]] == ["cosine", "constant"]
    assert grid[0][1]["title"].startswith("constant, lr 1e-3") and grid[0][1]["n_comparisons"] == 12
    for row in grid:
        for p, arm in zip(row, (results, quick_constant)):
            summary = json.loads((arm / "summary.json").read_text())
            assert [s["variant"] for s in p["series"]] == ["softmax_replicate", "ssmax", "logn"]
            for s in p["series"]:
                table = summary["primary"] if s["role"] == "remedy" else summary["controls"]
                for i, pos in enumerate(("decoder_none", "decoder_rope", "decoder_alibi")):
                    r = next(r for r in table if (r["architecture"], r["norm"], r["variant"])
                             == (pos, p["norm"], s["variant"]))
                    assert s["mean_diff"][i] == r["mean_diff"] and s["ci_low"][i] == r["ci_low"]
                    if s["role"] == "remedy":
                        assert (s["significant"][i], s["p_holm"][i]) == (r["significant"], r["p_holm"])
                    else:
                        assert s["behaves"][i] == r["behaves"]
    fig = figures.load("fig_decoder_primary").draw(data)
    from varsim.figures import _style

    assert [a.get_title() for a in fig.axes if a.get_title()][:2] == [p["title"] for p in grid[0]]
    _style.plt.close(fig)


def test_arms_must_differ_in_recipe(quick_grid, tmp_path, capsys):
    """The same directory twice is not two arms: a one-line error naming decoder_results, exit 2."""
    results, _, _ = quick_grid
    rc = main(["figures", "--only", "fig_decoder_primary", "--decoder-results", str(results), str(results),
               "--no-progress", "--outdir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "decoder_results" in err and "same recipe" in err


def test_commit_goes_to_the_arms_directory(quick_constant, tmp_path, monkeypatch):
    """Without DEST, `python -m varsim.figures.decoder RESULTS` writes a run to its arm's package directory, found
    from its schedule (the constant-rate run to decoder_constant, not over the pre-registered grid's summary)."""
    import varsim.figures.decoder as fd

    dirs = {k: tmp_path / k for k in fd.COMMITTED_DIRS}
    monkeypatch.setattr(fd, "COMMITTED_DIRS", dirs)
    assert fd.main([str(quick_constant)]) == 0
    assert (dirs["decoder_constant"] / "summary.json").is_file() and not dirs["decoder"].exists()


def test_commit_refuses_a_grid_that_is_not_a_decoder_grid(quick_grid, tmp_path, monkeypatch, capsys):
    """A remedies-grid summary (same format, set-model architectures) is refused with one line and exit 2, and
    nothing is written: it could otherwise land in a decoder arm's directory (its schedule is cosine too)."""
    import shutil

    import varsim.figures.decoder as fd

    results, _, _ = quick_grid
    other = tmp_path / "remedies"
    shutil.copytree(results, other, ignore=shutil.ignore_patterns("runs", "checkpoints"))
    summary = json.loads((other / "summary.json").read_text())
    summary["settings"]["architectures"] = ["residual"]
    (other / "summary.json").write_text(json.dumps(summary))
    dirs = {k: tmp_path / k for k in fd.COMMITTED_DIRS}
    monkeypatch.setattr(fd, "COMMITTED_DIRS", dirs)
    assert fd.main([str(other)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a decoder grid" in err
    assert not any(d.exists() for d in dirs.values())


@pytest.mark.parametrize("arm", ["decoder", "decoder_constant"])
def test_committed_arm_is_the_full_presets_and_its_table(arm):
    """Each committed decoder arm is a complete summary of its full preset in the current format (not a quick run's,
    not the other arm's), with its settings file and the rendering of the summary as its table. Catches committing
    a quick, incomplete or hand-edited summary, an arm in the other arm's directory, or a stale table."""
    import varsim.figures.decoder as fd
    from varsim.experiments.aggregation import kind_of
    from varsim.experiments.presets import PRESETS
    from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT

    where = fd.COMMITTED_DIRS[arm]
    summary = json.loads((where / "summary.json").read_text())
    assert summary["format"] == REMEDIES_SUMMARY_FORMAT
    assert summary["settings"] == PRESETS[arm]().to_dict()
    assert json.loads((where / "settings.json").read_text())["settings"] == summary["settings"]
    assert summary["runs"]["found"] == summary["runs"]["expected"] == 144
    assert not summary["runs"]["missing"] and not summary["runs"]["corrupt"]
    assert kind_of(summary["settings"]).name == "decoder"
    assert (where / "table.md").read_text() == kind_of(summary["settings"]).render(summary)


def test_docs_primary_table_is_the_committed_numbers():
    """The primary table of docs/experiments/decoder.md quotes the committed summaries: every cell (mean and
    interval to 3 decimals, the Holm star) equals the arm's primary row. Catches regenerating the data and
    forgetting the page (or a typo in it)."""
    import re
    from pathlib import Path

    import varsim.figures.decoder as fd

    text = (Path(__file__).resolve().parents[1] / "docs" / "experiments" / "decoder.md").read_text()
    head = "| position, norm after attention | cosine: SSMax | cosine: log-N | constant: SSMax | constant: log-N |"
    lines = text[text.index(head):].splitlines()[2:8]
    arms = [json.loads((fd.COMMITTED_DIRS[a] / "summary.json").read_text())["primary"]
            for a in ("decoder", "decoder_constant")]
    positions = {"NoPE": "decoder_none", "RoPE": "decoder_rope", "ALiBi": "decoder_alibi"}
    norms = {"none": "none", "LayerNorm": "layernorm"}
    cell = re.compile(r"([+-]\d\.\d{3}) \[([+-]\d\.\d{3}), ([+-]\d\.\d{3})\](\*?)")
    assert len(lines) == 6
    for line in lines:
        label, *cells = [c.strip() for c in line.strip("|").split("|")]
        pos, norm = label.split(", ")
        for text_cell, (arm, variant) in zip(cells, [(0, "ssmax"), (0, "logn"), (1, "ssmax"), (1, "logn")]):
            r = next(r for r in arms[arm] if (r["architecture"], r["norm"], r["variant"])
                     == (positions[pos], norms[norm], variant))
            m = cell.fullmatch(text_cell)
            assert m, text_cell
            assert [float(x) for x in m.groups()[:3]] == [round(r[k], 3) for k in ("mean_diff", "ci_low", "ci_high")]
            assert (m.group(4) == "*") == r["significant"]


def test_decoder_results_that_are_not_a_decoder_summary_say_so(quick_grid, tmp_path, capsys):
    """``--decoder-results`` with another directory (a summary of another format, or a remedies grid's summary of
    the same format) is one line saying it is not a decoder summary, exit 2 (it said "not a remedies summary", or
    drew the remedies grid as the decoder's)."""
    import shutil

    results, _, _ = quick_grid
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "summary.json").write_text(json.dumps({"format": "varsim.reproduce.summary/1"}))
    remedies = tmp_path / "remedies"
    shutil.copytree(results, remedies, ignore=shutil.ignore_patterns("runs", "checkpoints"))
    summary = json.loads((remedies / "summary.json").read_text())
    summary["settings"]["architectures"] = ["residual"]
    (remedies / "summary.json").write_text(json.dumps(summary))
    for wrong in (paper, remedies):
        rc = main(["figures", "--only", NAME, "--decoder-results", str(wrong), "--outdir", str(tmp_path / "figs"),
                   "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "not a decoder summary" in err and str(wrong) in err, err
        assert "remedies summary" not in err
