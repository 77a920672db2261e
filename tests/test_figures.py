"""Figures: the registry, quick-mode output, agreement of the plotted data with theory, the honest-figure panels and
labels, and the reproduction records the ``fig_repro_*`` figures are drawn from (compaction, committed source)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from registry_checks import check_figure_module, check_figure_replot, check_figure_written
from repro_checks import module_grid

import varsim.figures as figures
from varsim.cli import main
from varsim.figures import _style
from varsim.figures import reproduction as rp

# the simulation/theory figures; the rest of the registry are the reproduction figures
CORE = ["fig_variance_vs_n", "fig_decay_exponent", "fig_random_query"]
REPRO = ["fig_repro_accuracy", "fig_repro_std", "fig_repro_hist", "fig_repro_global", "fig_repro_attention"]
REMEDIES = ["fig_remedies_primary", "fig_remedies_decomposition", "fig_remedies_accuracy"]  # test_figures_remedies.py
PROBE = ["fig_probe_std", "fig_probe_slopes", "fig_probe_decomposition", "fig_probe_layers"]  # test_figures_probe.py
DECODER = ["fig_decoder_primary", "fig_decoder_accuracy"]  # tests/test_figures_decoder.py


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """Each core figure once, in quick mode, into a temporary directory."""
    outdir = tmp_path_factory.mktemp("figures")
    written = figures.make(CORE, outdir=outdir, quick=True, seed=0, progress=False)
    data = {name: json.loads((outdir / f"{name}.json").read_text()) for name in written}
    return outdir, written, data


def _arr(values):
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _texts(fig) -> list[str]:
    """Every piece of text drawn on a figure (figure texts, annotations, titles, labels, legends)."""
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and callable(a.get_text))]


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_registry_names_importable_figure_modules(name):
    check_figure_module(name)


def test_the_figures_tested_here_are_registered_and_unknown_names_refused():
    assert set(CORE + REPRO + PROBE + REMEDIES + DECODER) <= set(figures.FIGURES)
    with pytest.raises(ValueError, match="unknown figure 'fig_nope'; expected one of 'fig_variance_vs_n'"):
        figures.load("fig_nope")


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_a_figure_module_run_as_main_makes_just_its_figure_and_exits_with_the_status(name, monkeypatch):
    """``python -m varsim.figures.NAME ARGS`` is ``varsim figures --only NAME ARGS``, and its status the exit code
    (a module whose last line lost ``__name__`` would return without making anything)."""
    import runpy
    import sys

    calls = []
    monkeypatch.setattr(figures, "main", lambda argv: calls.append(argv) or 3)
    monkeypatch.setattr(sys, "argv", ["fig", "--quick"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module(figures.FIGURES[name], run_name="__main__")
    assert exit_.value.code == 3 and calls == [["--only", name, "--quick"]]


def test_quick_mode_writes_png_and_pdf_for_each_figure(quick_run):
    outdir, written, _ = quick_run
    assert list(written) == CORE
    for name in CORE:
        check_figure_written(outdir, name)


def test_replot_from_stored_data_gives_identical_png(quick_run, tmp_path):
    check_figure_replot(quick_run[0], "fig_decay_exponent", tmp_path)


def test_parallel_jobs_write_the_files_of_a_serial_run(quick_run, tmp_path):
    """``make(jobs=2)`` computes the figures in worker processes (each self-computing figure one job, a data source's
    figures another) and writes the same data as a serial run, returns the files in the order asked and reports each
    figure once. Catches a worker that computes with another seed or mode, or drops a figure of a group."""
    outdir, _, data = quick_run
    names = ["fig_probe_layers", "fig_decay_exponent", "fig_probe_slopes"]
    seen = []
    written = figures.make(names, outdir=tmp_path / "par", quick=True, seed=0, progress=False, jobs=2,
                           on_figure=lambda name, data_from, seconds, paths: seen.append((name, data_from)))
    assert list(written) == names and sorted(seen) == sorted([(n, figures._data_from(
        json.loads((tmp_path / "par" / f"{n}.json").read_text()), figures.data_source(n), True, False))
        for n in names])
    probe = figures._source("probe", {"quick": True, "probe_results": None})  # the serial run's data, not drawn
    serial = {n: json.loads(json.dumps(_style.jsonable(figures.load(n).compute(True, 0, source=probe))))
              for n in ["fig_probe_layers", "fig_probe_slopes"]}
    for name in names:
        assert [p.name for p in written[name]] == [f"{name}.json", f"{name}.png", f"{name}.pdf"]
        assert all(p.is_file() for p in written[name])
        stored = json.loads((tmp_path / "par" / f"{name}.json").read_text())
        expected = data[name] if name in data else serial[name]
        assert stored == expected, name


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


def test_variance_figure_shows_the_exact_local_exponent_not_one_fitted_slope(quick_run):
    """The bottom panel is the exact d ln Var / d ln N, equal to the finite-difference slope of the exact curve
    drawn above it; no legend entry claims one fitted slope.

    Catches an exponent panel plotted with log2 N (0.69x the slope) or for the wrong beta, and a single
    "fitted slope" legend, which would hide the drift from -0.45 to -0.91 at beta = 2.
    """
    data = quick_run[2]["fig_variance_vs_n"]
    for c in data["curves"]:
        n, var, expo = _arr(c["exact"]["n"]), _arr(c["exact"]["var"]), _arr(c["exact"]["exponent"])
        fd = np.diff(np.log(var)) / np.diff(np.log(n))
        mid = 0.5 * (expo[1:] + expo[:-1])
        assert np.max(np.abs(fd - mid)) < 5e-3, c["beta"]
    fig = figures.load("fig_variance_vs_n").draw(data)
    assert len(fig.axes) == 3
    assert "local exponent" in fig.axes[2].get_ylabel()
    texts = " ".join(_texts(fig))
    assert "fitted slope" not in texts and "local exponent" in texts
    beta2 = data["curves"][-1]["exact"]["exponent"]
    assert beta2[0] > -0.5 and beta2[-1] < -0.8  # the drift the panel exists to show (quick range: 2^4..2^12)
    _style.plt.close(fig)


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


def test_every_quick_figure_is_stamped_smoke_test_and_full_ones_are_not(quick_run):
    """Quick-mode figures carry "smoke test, not results" (banner and watermark) and, when asked, a provenance
    footer; the same data marked full mode carries no stamp. Catches a quick figure that could pass for a result."""
    for name in CORE:
        data = quick_run[2][name]
        fig = figures.load(name).draw(data, footer=True)
        texts = _texts(fig)
        assert any(_style.SMOKE_TEST_LABEL in t.lower() for t in texts), name
        assert any("seed 0, quick mode" in t for t in texts), name  # the footer
        _style.plt.close(fig)
        full = {**data, "quick": False}
        fig = figures.load(name).draw(full)
        assert not any(_style.SMOKE_TEST_LABEL in t.lower() for t in _texts(fig)), name
        _style.plt.close(fig)


def test_every_figure_text_is_readable(quick_run):
    """No text smaller than the style's minimum (7.5 pt) in any core figure (tick labels, legends, footers)."""
    for name in CORE:
        fig = figures.load(name).draw(quick_run[2][name])
        sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and
                                                       getattr(a, "get_text", lambda: "")())]
        assert min(sizes) >= _style.MIN_FONT_SIZE, (name, min(sizes))
        _style.plt.close(fig)


def test_holm_adjustment():
    """Holm's step-down on a hand-computed family, NaN left out of the family.

    Catches plain Bonferroni (0.04 -> 0.16), a missing running maximum (0.04 -> 0.04 < 0.06) and NaNs counted
    in m."""
    from varsim.figures.fig_repro_accuracy import holm

    adj = holm([0.01, 0.04, 0.03, 0.005, np.nan])
    np.testing.assert_allclose(adj[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(adj[4])
    assert holm([[0.5, 0.9]]).shape == (1, 2) and np.all(holm([0.5, 0.9]) == [1.0, 1.0])


# ---------------------------------------------------------------------------------------------------------------
# Reproduction records and figures


@pytest.fixture(scope="module")
def tiny_repro(tmp_path_factory):
    """A tiny reproduction (8 runs of 60 steps, 3 lengths): enough to exercise records and figures, in seconds."""
    from varsim.experiments import ReproductionSettings

    settings = ReproductionSettings.quick(
        seeds=2, norms=("none", "layernorm"),
        train={"lr": 3e-3, "steps": 60, "batch_size": 16, "train_max": 16, "checkpoint_every": 60,
               "keep_checkpoints": 1, "log_every": 30},
        eval_lengths=(16, 32, 64), eval_examples=64, id_examples=64, probe_lengths=(16, 32, 64), probe_sets=16,
        hist_lengths=(16, 64))
    return module_grid(tmp_path_factory, "repro", settings=settings)[0]


def test_compact_records_keep_what_the_figures_use(tiny_repro):
    """The compact record holds the fixed coordinate's std (not another coordinate or a transposed table), the median
    std, accuracies and provenance, the histogram values for seed 0 only, and is a small fraction of the full record.

    Catches a compaction that reads std rows as coordinates (a (D, L) vs (L, D) slip) or keeps the raw histogram
    values of every seed."""
    c = rp.compact_results(tiny_repro)
    assert c["missing"] == [] and len(c["runs"]) == 8
    for r in c["runs"]:
        full = json.loads((tiny_repro / "runs" / f"{r['run_id']}.json").read_text())
        k = full["probes"]["coordinate"]
        for stage in ("pre", "post"):
            table = np.array(full["probes"][f"std_{stage}"])  # (L, D)
            np.testing.assert_allclose(r["probes"]["std_coordinate"][stage], table[:, k], rtol=1e-5)
            np.testing.assert_allclose(r["probes"]["std_median"][stage], np.median(table, axis=1), rtol=1e-5)
        assert r["eval"]["correct"] == full["eval"]["correct"]
        assert r["provenance"]["git_commit"] == full["provenance"]["git_commit"]
        assert ("hist" in r["probes"]) == (r["seed_index"] == 0)
        if r["seed_index"] > 0:  # tiny models (D = 16, 3 lengths): the full records of the real run are ~25x larger
            size = len(json.dumps(r, separators=(",", ":")))
            assert size < 0.5 * len(json.dumps(full, separators=(",", ":"))), (r["run_id"], size)


def test_compact_directory_round_trips_and_is_the_default_source(tiny_repro, tmp_path, monkeypatch):
    """write_compact -> load_compact gives the same records; with it as the committed directory, the default source
    draws from it, and the footer names the committed records and the runs' commit (every reproduction figure is
    drawn from these records by :func:`test_reproduction_figures_from_a_results_directory`)."""
    dest = tmp_path / "committed"
    rp.write_compact(tiny_repro, dest)
    assert sorted(p.name for p in dest.iterdir()) == ["runs.json", "settings.json", "summary.json", "table.md"]
    loaded = rp.load_compact(dest)
    assert loaded["runs"] == rp.compact_results(tiny_repro)["runs"]
    monkeypatch.setattr(rp, "COMMITTED_DIR", dest)
    out = tmp_path / "figs"
    written = figures.make(["fig_repro_accuracy"], outdir=out, progress=False)
    assert list(written) == ["fig_repro_accuracy"]
    data = json.loads((out / "fig_repro_accuracy.json").read_text())
    commit = loaded["runs"][0]["provenance"]["git_commit"]
    assert data["footer"].startswith("committed records: 8 runs") and (commit or "unknown")[:10] in data["footer"]
    assert data["smoke_test"] is False


def test_accuracy_figure_has_the_paired_difference_panels(tiny_repro):
    """Top row accuracy, bottom row paired differences variant - none with Holm-adjusted p-values over the whole
    family drawn; the legend is outside the axes. Catches a figure without the panel the headline claim rests on,
    or a Holm family that is smaller than the comparisons shown."""
    mod = figures.load("fig_repro_accuracy")
    data = mod.compute(source=rp.ReproductionSource(results=tiny_repro))
    n_panels = len(data["panels"])
    assert n_panels == 2  # argmax and dictionary, residual
    diffs = [d for p in data["panels"] for d in p["diffs"]]
    assert [d["norm"] for d in diffs] == ["layernorm", "layernorm"]
    assert data["n_comparisons"] == 2 * 3  # 2 panels x 1 variant x 3 lengths
    raw = np.array([d["p_ttest"] for d in diffs], dtype=float)
    np.testing.assert_allclose(np.array([d["p_holm"] for d in diffs]), mod.holm(raw))
    fig = mod.draw(data)
    assert len(fig.axes) == 2 * n_panels
    assert all("paired difference" in fig.axes[n_panels].get_ylabel() for _ in [0])
    assert "Holm" in fig.legends[0].get_title().get_text()
    assert not any(ax.get_legend() for ax in fig.axes) and len(fig.legends) == 1  # no legend over the curves
    _style.plt.close(fig)


def test_reproduction_figures_from_a_results_directory(tiny_repro, tmp_path):
    """Every reproduction figure computes JSON-able data from a results directory and writes PNG + PDF; quick
    reproductions would be stamped, a results directory is not a smoke test."""
    source = rp.ReproductionSource(results=tiny_repro)
    for name in REPRO:
        mod = figures.load(name)
        data = _style.jsonable(mod.compute(source=source))
        json.dumps(data, allow_nan=False)
        assert data["origin"] == "results directory" and str(tiny_repro) in data["footer"]
        paths = figures.plot(name, json.loads(json.dumps(data)), tmp_path)
        assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
        fig = mod.draw({**data, "smoke_test": True})
        assert any(_style.SMOKE_TEST_LABEL in t.lower() for t in _texts(fig)), name
        _style.plt.close(fig)


def test_incomplete_or_corrupt_results_are_named(tiny_repro, tmp_path):
    part = tmp_path / "part"
    shutil.copytree(tiny_repro, part, ignore=shutil.ignore_patterns("checkpoints"))
    (part / "runs" / "argmax-residual-layernorm-s1.json").unlink()
    assert rp.compact_results(part)["missing"] == ["argmax-residual-layernorm-s1"]
    with pytest.raises(ValueError, match="incomplete"):
        rp.write_compact(part, tmp_path / "dest")
    bad = part / "runs" / "argmax-residual-none-s0.json"
    bad.write_text('{"format": "varsim.reproduce.run/1", "run_id": "x"}')
    with pytest.raises(ValueError, match="argmax-residual-none-s0.json"):
        rp.compact_results(part)


def test_missing_committed_records_fail_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rp, "COMMITTED_DIR", tmp_path / "nothing")
    rc = main(["figures", "--outdir", str(tmp_path / "o"), "--only", "fig_decay_exponent", "fig_repro_std",
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--results" in err
    assert not (tmp_path / "o" / "fig_decay_exponent.json").exists()


def test_all_figures_without_committed_records_skip_the_reproduction_ones(tmp_path, monkeypatch, capsys):
    """`varsim figures` (no --only) on a build without committed records draws the rest, says in one line what it
    skipped and exits 0; catches a Quickstart that fails outright, or silently omits figures, without data."""
    monkeypatch.setattr(rp, "COMMITTED_DIR", tmp_path / "nothing")
    monkeypatch.setattr(figures, "FIGURES", {k: figures.FIGURES[k] for k in ("fig_probe_layers", "fig_repro_std")})
    rc = main(["figures", "--outdir", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 0 and len(err) == 1 and "skipping fig_repro_std" in err[0] and "--results" in err[0]
    assert (tmp_path / "o" / "fig_probe_layers.png").exists()
    assert not (tmp_path / "o" / "fig_repro_std.json").exists()


# ---------------------------------------------------------------------------------------------------------------
# Command line


def test_cli_figures_computes_in_one_process_per_core_unless_told(monkeypatch, tmp_path, capsys):
    """``varsim figures`` hands make() ``jobs=0`` (one worker process per available core) by default and the given
    ``--jobs`` otherwise; figure parameters run serially without being refused for a --jobs never given."""
    seen = []
    monkeypatch.setattr(figures, "make", lambda names, **kw: seen.append(kw["jobs"]) or {})
    for extra, jobs in (([], 0), (["--jobs", "1"], 1), (["--jobs", "3"], 3)):
        assert main(["figures", "--only", "fig_probe_layers", "--outdir", str(tmp_path), *extra]) == 0
        assert seen[-1] == jobs, (extra, seen)
    monkeypatch.undo()
    assert main(["figures", "--only", "fig_probe_layers", "--style", "column", "--outdir", str(tmp_path / "column"),
                 "--no-progress"]) == 0, capsys.readouterr().err
    assert (tmp_path / "column" / "fig_probe_layers.png").exists()


def test_cli_figures_writes_one_figure_and_ends_with_a_summary(tiny_repro, capsys, tmp_path, monkeypatch):
    """The files are written and the output ends with a table naming each figure, where its numbers came from and
    the seconds it took (catches a run that prints nothing a reader can check, or a wrong data origin). The quick
    reproduction the command asks for is stood in for by the tiny one (tests/test_reproduce.py runs the quick grid
    itself): the records it would write are copied, in seconds less."""
    import varsim.experiments

    calls = []

    def quick_reproduction(outdir, **kwargs):
        calls.append(kwargs)
        shutil.copytree(tiny_repro, outdir, dirs_exist_ok=True)
        return {"failed": []}

    monkeypatch.setattr(varsim.experiments, "run_reproduction", quick_reproduction)
    monkeypatch.setattr(rp, "_QUICK_CACHE", {})
    rc = main(["figures", "--quick", "--outdir", str(tmp_path), "--only", "fig_decay_exponent", "fig_repro_std",
               "--no-progress", "--jobs", "1"])  # in this process, where the stand-in is
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    for name in ("fig_decay_exponent", "fig_repro_std"):
        assert all((tmp_path / f"{name}.{ext}").exists() for ext in ("json", "png", "pdf"))
    assert out[0].split() == ["figure", "data", "seconds"]
    rows = {line.split()[0]: line for line in out[1:3]}
    assert "simulated, quick" in rows["fig_decay_exponent"] and "reproduction: quick" in rows["fig_repro_std"]
    assert out[3].startswith("2 figures in") and out[4] == f"wrote 6 files (JSON, PNG, PDF per figure) into {tmp_path}"
    assert [(c["quick"], c["root_seed"]) for c in calls] == [(True, 0)]


@pytest.mark.parametrize("args, needle", [
    (["--only", "fig_nope"], "fig_nope"),
    (["--only", "fig_decay_exponent", "--rerun", "--quick"], "rerun"),
    (["--only", "fig_repro_std", "--results", "/no/such/dir"], "results"),
    (["--only", "fig_decay_exponent", "--outdir", ""], "outdir"),
])
def test_cli_figures_bad_input_is_one_line_error(capsys, tmp_path, args, needle):
    if "--outdir" not in args:
        args = [*args, "--outdir", str(tmp_path)]
    rc = main(["figures", "--quick", *args, "--no-progress"] if "--rerun" not in args else
              ["figures", *args, "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and needle in err, err


@pytest.mark.parametrize("content", [b"", b'{"name": "fig_decay', b"\xff\xfe\x00", b'{"name": "other"}'])
def test_cli_replot_of_bad_stored_data_is_one_line_error(capsys, tmp_path, content):
    (tmp_path / "fig_decay_exponent.json").write_bytes(content)
    rc = main(["figures", "--replot", "--outdir", str(tmp_path), "--only", "fig_decay_exponent", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "fig_decay_exponent.json" in err, err


def _damaged(name: str, stored: dict) -> dict:
    """Ways a stored ``<name>.json`` can be damaged while still parsing as a JSON object: label -> content."""
    first = next(k for k in stored if k not in ("name", "quick", "seed"))  # a field the drawing reads
    return {
        "another figure's": {**stored, "name": "fig_other"},
        "name only": {"name": name},
        "a field removed": {k: v for k, v in stored.items() if k not in ("curves", "boundaries", first)},
        "a field of the wrong type": {**stored, **{k: 5 for k in ("curves", "boundaries", first)}},
    }


@pytest.mark.parametrize("style", [None, *_style.STYLES, "footer"])
@pytest.mark.parametrize("name", ["fig_variance_vs_n", "fig_decay_exponent"])
def test_replot_of_damaged_data_is_one_line_error_in_every_style(quick_run, tmp_path, capsys, name, style):
    """--replot, plain or restyled (--style S, --footer), of a stored JSON that parses but is not the figure's data
    (an edited name, fields missing or of the wrong type) is one line naming the file, exit 2, and writes nothing.
    Catches the restyled path that skipped plain --replot's check and ended in ``KeyError: 'curves'`` (or
    ``'boundaries'``), and a drawing that raised on a damaged field (20-line tracebacks)."""
    _, _, data = quick_run
    extra = [] if style is None else ["--footer"] if style == "footer" else ["--style", style]
    for label, content in _damaged(name, data[name]).items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(content))
        rc = main(["figures", "--replot", "--outdir", str(tmp_path), "--only", name, "--no-progress", *extra])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (label, err)
        assert str(path) in err, (label, err)
        assert [p.name for p in tmp_path.iterdir()] == [path.name], label  # no PNG or PDF written


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_replot_of_a_name_only_file_is_refused_for_every_figure(tmp_path, capsys, name):
    """Every figure of the registry, plain and restyled: stored data that is only its name is refused naming the
    file (a drawing that reads a missing field does not escape as a KeyError)."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"name": name}))
    for extra in ([], ["--style", "slides"]):
        rc = main(["figures", "--replot", "--outdir", str(tmp_path), "--only", name, "--no-progress", *extra])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and str(path) in err, (extra, err)


def test_cli_figures_prints_a_line_per_figure_as_it_ends_when_stdout_is_a_pipe(tmp_path):
    """With stdout to a pipe (CI, a log, ``| tee``) each figure's line with its seconds arrives as the figure ends,
    before the next one is drawn, then the summary table. Catches a run silent until the end (lines not flushed,
    or printed only on a terminal)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a log's stdout is block-buffered
    env["PYTHONPATH"] = str(root)
    cmd = [sys.executable, "-m", "varsim", "figures", "--quick", "--outdir", str(tmp_path), "--only",
           "fig_probe_layers", "fig_decay_exponent"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env) as proc:
        opening = proc.stdout.readline()  # before any figure is computed
        first = proc.stdout.readline()
        second_drawn = (tmp_path / "fig_decay_exponent.png").exists()
        rest = proc.stdout.read().splitlines()
    assert proc.returncode == 0
    assert opening.startswith("making 2 figures (quick mode, "), opening
    assert first.startswith("fig_probe_layers: ") and " s (probe: committed records)" in first, first
    assert not second_drawn  # the line came while the next figure was still being computed
    assert rest[0].startswith("fig_decay_exponent: ") and " s (simulated, quick)" in rest[0]
    assert rest[1].split() == ["figure", "data", "seconds"]


def test_simulated_figures_state_their_precision_target_and_meet_it(quick_run):
    """Each Monte Carlo point of the simulated figures stops at the relative SE the data state (``target_rse``),
    within the stated cap on sequences, and the data give the sequences each point used. Catches a figure that
    drops the target (every point at the cap, as before) or states a precision its points do not have."""
    data = quick_run[2]
    series = []  # (points, rse per point, cap, target)
    vn = data["fig_variance_vs_n"]
    for c in vn["curves"]:
        for key in ("logits_rb", "full"):
            s = c[key]
            series.append((s["sequences"], _arr(s["var_se"]) / _arr(s["var"]), vn["sequences"][key], vn["target_rse"]))
    rq = data["fig_random_query"]
    for fam in [rq["fixed"], *rq["random"]]:
        for key in ("logits_rb", "full"):
            s = fam[key]
            series.append((s["sequences"], _arr(s["nvar_se"]) / _arr(s["nvar"]), rq["sequences"][key],
                           rq["target_rse"]))
    de = data["fig_decay_exponent"]
    for c in de["curves"]:
        series.append((c["mc"]["sequences"], _arr(c["mc"]["var_se"]) / _arr(c["mc"]["var"]), de["sequences"],
                       de["target_rse"]))
    early = 0
    for used, rse, cap, target in series:
        used = np.array(used)
        assert 0 < target <= 0.05 and np.all((used > 0) & (used <= cap))
        assert np.all(rse[used < cap] <= target), (used, rse, target)
        early += int(np.sum(used < cap))
    assert early > len(series)  # the target, not the cap, ends most points


@pytest.mark.slow
def test_full_mode_simulated_figures_agree_with_theory_at_their_budgets():
    """The full-mode figures, at their precision targets, pass the same checks as quick mode: every MC point within
    5 SE (+ 1%) of exact theory, local slopes within 5 SE + 0.02, the target met by each point that stopped early."""
    data = {name: _style.jsonable(figures.load(name).compute(False, 0)) for name in CORE}
    run = (None, None, data)
    test_variance_figure_data_agree_with_theory(run)
    test_decay_exponent_figure_slopes_agree_with_exact_exponent(run)
    test_random_query_figure_data_agree_with_exact_mixture(run)
    test_simulated_figures_state_their_precision_target_and_meet_it(run)


@pytest.mark.parametrize("progress", [[], ["--progress"]])
def test_cli_figures_says_what_it_starts_and_ends_with_one_total(capsys, tmp_path, progress):
    """A log (stdout not a terminal) opens with a line before the first figure is computed, and the run reports one
    total, its wall time, on stdout and stderr together. Catches a first line that waits for the first figure to
    end and two totals that disagree (the wall time on stderr, the figures' seconds summed on stdout)."""
    import re

    names = ["fig_repro_accuracy", "fig_repro_std"]
    assert main(["figures", "--only", *names, "--outdir", str(tmp_path), "--jobs", "1", *progress]) == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    totals = [line for line in out + captured.err.splitlines() if re.search(r"figures in [\d.]+ s", line)]
    assert len(totals) == 1 and "wall time" in totals[0], (out, captured.err)
    if not progress:  # the log mode
        assert out[0].startswith("making 2 figures (full mode, 1 process) into"), out
        assert [line.split(":")[0] for line in out[1:3]] == names
