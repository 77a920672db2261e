"""Remedies figures (fig_remedies_*): drawn from a remedies results directory (a tiny quick slice made once), stamped
in quick mode, Holm named and significance marked; drawn from the committed summary by default (written by
``python -m varsim.figures.remedies``), and skipped with one line when a build has no remedies source."""

from __future__ import annotations

import json

import numpy as np
import pytest

import varsim.figures as figures
from varsim.cli import main
from varsim.experiments import run_reproduction
from varsim.experiments.remedies import remedies_settings
from varsim.figures import _style

REMEDIES = ["fig_remedies_accuracy", "fig_remedies_paired", "fig_remedies_weight"]
# one task, two trained variants, two inference-only maps, both depths, 2 seeds, 40 steps: ~15 s on 2 cores
SLICE = remedies_settings(
    quick=True, tasks=["dictionary"], attentions={"softmax": {}, "ssmax": {"attention": "ssmax"}},
    inference_attentions={"topk1": {"attention": "topk", "params": {"k": 1}},
                          "control_logn": {"attention": "logn", "params": {"n0": 16.0}}},
    train={"steps": 40, "batch_size": 16, "train_max": 16, "checkpoint_every": 40, "keep_checkpoints": 1},
    eval_lengths=[16, 32, 64], probe_lengths=[16, 32, 64], probe_sets=8, eval_examples=32, id_examples=32,
    validation_examples=32)


@pytest.fixture(scope="module")
def slice_run(tmp_path_factory):
    """A tiny remedies run and the three figures drawn from it in quick mode."""
    results = tmp_path_factory.mktemp("remedies") / "run"
    report = run_reproduction(results, settings=SLICE, workers=2, progress=False)
    assert report["failed"] == []
    outdir = tmp_path_factory.mktemp("remfigs")
    written = figures.make(REMEDIES, outdir=outdir, quick=True, progress=False, remedies_results=results)
    data = {name: json.loads((outdir / f"{name}.json").read_text()) for name in written}
    summary = json.loads((results / "summary.json").read_text())
    return results, outdir, written, data, summary


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and callable(a.get_text))]


def test_each_figure_written_and_stamped(slice_run):
    """PNG, PDF and data per figure; quick mode stamps "smoke test, not results" and the provenance the figure
    carries (its files' metadata) names the results directory. Catches a quick figure that could pass for a
    result."""
    results, outdir, written, data, _ = slice_run
    assert set(written) == set(REMEDIES)
    for name in REMEDIES:
        assert {p.suffix for p in written[name]} == {".json", ".png", ".pdf"}
        assert data[name]["smoke_test"] is True
        fig = figures.load(name).draw(data[name])
        texts = _texts(fig)
        assert any(_style.SMOKE_TEST_LABEL in t.lower() for t in texts), name
        assert str(results) in fig._varsim_metadata, name
        _style.plt.close(fig)


def test_data_are_the_summary_numbers(slice_run):
    """Every panel (task x depth) carries every variant, trained and inference-only, with the summary's own means
    and Holm-adjusted p-values (catches made-up or mislabelled lines, p-values without the correction)."""
    _, _, _, data, summary = slice_run
    acc, paired, weight = (data[n] for n in REMEDIES)
    assert [(p["task"], p["depth"]) for p in acc["panels"]] == [("dictionary", 1), ("dictionary", 2)]
    groups = {(g["depth"], g["variant"]): g for g in summary["groups"]}
    for p, pw in zip(acc["panels"], weight["panels"]):
        assert {ln["variant"] for ln in p["lines"]} == {"softmax", "ssmax", "topk1", "control_logn"}
        kinds = {ln["variant"]: ln["kind"] for ln in p["lines"]}
        assert kinds["topk1"] == "inference" and kinds["ssmax"] == "trained"
        for ln, lw in zip(p["lines"], pw["lines"]):
            g = groups[(p["depth"], ln["variant"])]
            np.testing.assert_allclose(ln["mean"], g["accuracy"]["mean"])
            np.testing.assert_allclose(lw["mean"], g["weight_correct"]["mean"])
    holm = {(d["depth"], d["variant"]): d["p_holm"] for d in summary["paired"]}
    assert "Holm" in paired["correction"]
    for p in paired["panels"]:
        assert {d["variant"] for d in p["diffs"]} == {"ssmax", "topk1", "control_logn"}
        for d in p["diffs"]:
            assert d["p_holm"] == holm[(p["depth"], d["variant"])]
            assert all(h is None or h >= t for h, t in zip(d["p_holm"], d["p_ttest"]))


def test_paired_figure_names_holm_and_marks_significance(slice_run):
    """The title names the Holm correction; a significant difference gets a filled marker, others an open one
    (forced p-values: catches markers that ignore p_holm)."""
    _, _, _, data, _ = slice_run
    d = json.loads(json.dumps(data["fig_remedies_paired"]))
    first = d["panels"][0]["diffs"][0]
    first["p_holm"] = [0.001, 0.5, None]
    fig = figures.load("fig_remedies_paired").draw(d)
    assert any("Holm" in t for t in _texts(fig))
    from varsim.figures.remedies import variant_label

    label = variant_label(first["variant"], first["kind"])  # the first panel of the row of the variant's family
    ax = next(a for a in fig.axes if a.get_title().startswith(d["panels"][0]["title"])
              and any(ln.get_label() == label for ln in a.lines))
    filled = [ln for ln in ax.lines if ln.get_linestyle() == "None" and len(ln.get_xdata())
              and ln.get_markerfacecolor() != "white" and ln.get_markerfacecolor() != (1.0, 1.0, 1.0, 1.0)]
    assert any(len(ln.get_xdata()) == 1 for ln in filled)
    _style.plt.close(fig)


def test_okabe_ito_distinct_styles_for_many_variants():
    """Nine or more variants: no two share colour, marker and line style together (catches a palette that wraps
    without another cue)."""
    from varsim.figures.remedies import OKABE_ITO, variant_style

    order = [f"v{i}" for i in range(11)]
    styles = {tuple(variant_style(v, order, "trained").values()) for v in order}
    assert len(styles) == len(order)
    assert all(variant_style(v, order, "trained")["color"] in OKABE_ITO for v in order)
    assert variant_style("v0", order, "inference")["ls"] != variant_style("v0", order, "trained")["ls"]


def test_without_a_source_they_are_skipped_with_one_line(tmp_path, capsys, monkeypatch):
    """A build without the committed summary: `varsim figures` (all figures) without --remedies-results skips the
    remedies figures with one line and still draws the others, exit 0; naming one with --only is a one-line error,
    exit 2."""
    import varsim.figures.fig_repro_accuracy as fra  # noqa: F401  (import cost outside the timed part)
    import varsim.figures.remedies as fr

    monkeypatch.setattr(fr, "COMMITTED_DIR", tmp_path / "no-committed-summary")

    # only the cheap figures plus the remedies ones would be drawn: make(None, ...) draws everything, so exercise the
    # skip through make with the registry narrowed to one core figure and the remedies figures
    reg = dict(figures.FIGURES)
    try:
        figures.FIGURES.clear()
        figures.FIGURES.update({"fig_decay_exponent": reg["fig_decay_exponent"],
                                **{n: reg[n] for n in REMEDIES}})
        rc = main(["figures", "--quick", "--outdir", str(tmp_path), "--no-progress"])
    finally:
        figures.FIGURES.clear()
        figures.FIGURES.update(reg)
    out, err = capsys.readouterr()
    assert rc == 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "skipping" in lines[0] and "--remedies-results" in lines[0]
    assert (tmp_path / "fig_decay_exponent.png").exists()
    assert not (tmp_path / "fig_remedies_accuracy.png").exists()

    rc = main(["figures", "--quick", "--only", "fig_remedies_weight", "--outdir", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--remedies-results" in err


@pytest.mark.parametrize("make_dir, needle", [
    (lambda p: p / "nope", "not a directory"),
    (lambda p: p, "summary.json"),
])
def test_bad_remedies_source_is_one_line_error(tmp_path, capsys, make_dir, needle):
    rc = main(["figures", "--only", "fig_remedies_accuracy", "--remedies-results", str(make_dir(tmp_path)),
               "--outdir", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and needle in err and "remedies_results" in err, err


def test_paper_grid_directory_is_refused(tmp_path, capsys):
    (tmp_path / "summary.json").write_text(json.dumps({"format": "varsim.reproduce.summary/1"}))
    rc = main(["figures", "--only", "fig_remedies_paired", "--remedies-results", str(tmp_path),
               "--outdir", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "not a remedies summary" in err


def test_committed_summary_is_the_default_source(slice_run, tmp_path, monkeypatch, capsys):
    """`python -m varsim.figures.remedies RESULTS DEST` copies the summary, table, settings and lr selection; with
    DEST as the package's committed directory, `varsim figures` draws the remedies figures from it without
    --remedies-results, also in quick mode, and does not stamp them as a smoke test unless the runs are tiny (these
    are: 40 steps). Catches a committed source that is ignored or a quick-mode stamp on real committed results."""
    import varsim.figures.remedies as fr

    results, _, _, _, summary = slice_run
    dest = tmp_path / "committed"
    assert fr.main([str(results), str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted(fr.COMMITTED_FILES)
    assert json.loads((dest / "summary.json").read_text()) == summary
    monkeypatch.setattr(fr, "COMMITTED_DIR", dest)
    src = fr.RemediesSource(None, quick=True)
    assert src.available and src.from_committed
    d = src.load()
    assert d["origin"] == "committed remedies results" and "varsim/figures/data/remedies" in d["footer"]
    assert d["smoke_test"] is True  # tiny runs stay stamped
    big = json.loads((dest / "summary.json").read_text())
    big["settings"]["train"]["steps"] = 3000
    (dest / "summary.json").write_text(json.dumps(big))
    assert fr.RemediesSource(None, quick=True).load()["smoke_test"] is False
    out = tmp_path / "figs"
    rc = main(["figures", "--quick", "--only", "fig_remedies_weight", "--outdir", str(out), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert (out / "fig_remedies_weight.png").exists()


def test_write_committed_refuses_incomplete_and_foreign(tmp_path, capsys):
    """An incomplete remedies summary is not committed without --allow-incomplete; a paper-grid summary never."""
    import varsim.figures.remedies as fr

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "summary.json").write_text(json.dumps(
        {"format": fr_format(), "runs": {"missing": ["a"], "corrupt": []}, "settings": {}}))
    assert fr.main([str(tmp_path / "r"), str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "missing" in err
    assert fr.main([str(tmp_path / "r"), str(tmp_path / "d"), "--allow-incomplete"]) == 0
    (tmp_path / "r" / "summary.json").write_text(json.dumps({"format": "varsim.reproduce.summary/1"}))
    assert fr.main([str(tmp_path / "r"), str(tmp_path / "d2")]) == 2
    assert "not a remedies summary" in capsys.readouterr().err


def fr_format():
    from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT

    return REMEDIES_SUMMARY_FORMAT


def test_committed_remedies_summary_is_the_full_presets_and_its_table():
    """The remedies summary shipped with the package (when there is one) is a summary of the full remedies preset
    (not a quick run's), loads as the default source unstamped, and its table.md is the rendering of that summary.
    Catches committing a quick or hand-edited summary, or a table out of step with the numbers."""
    import varsim.figures.remedies as fr
    from varsim.experiments.report import render_remedies_table

    if not (fr.COMMITTED_DIR / "summary.json").is_file():
        pytest.skip("this build ships no remedies summary")
    summary = json.loads((fr.COMMITTED_DIR / "summary.json").read_text())
    assert summary["settings"] == remedies_settings().to_dict()
    d = fr.RemediesSource(None).load()
    assert d["origin"] == "committed remedies results" and d["smoke_test"] is False
    assert (fr.COMMITTED_DIR / "table.md").read_text() == render_remedies_table(summary)
