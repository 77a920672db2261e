"""Remedies figures (fig_remedies_*): drawn from a remedies summary of the current format (the quick grid's, in
tests/data: numbers meaningless, format right), the plotted numbers are the summary's (markers, areas, lines), Holm
significance and failing controls marked, at most six remedies a panel, stamped in quick mode; the commit command
(``python -m varsim.figures.remedies``) and the committed default source; skipped with one line when a build has no
remedies source."""

from __future__ import annotations

import json

import numpy as np
import pytest
from remedies_checks import committed_is_current, quick_remedies_dir, quick_summary

import varsim.figures as figures
from varsim.cli import main
from varsim.experiments.remedies import remedies_settings
from varsim.figures import _style
from varsim.figures import remedies as fr

REMEDIES = ["fig_remedies_primary", "fig_remedies_decomposition", "fig_remedies_accuracy"]


@pytest.fixture(scope="module")
def quick_dir(tmp_path_factory):
    return quick_remedies_dir(tmp_path_factory.mktemp("remedies") / "quick")


@pytest.fixture(scope="module")
def drawn(quick_dir, tmp_path_factory):
    """The three figures made by `varsim figures` from the quick results directory, with their stored data."""
    outdir = tmp_path_factory.mktemp("remfigs")
    written = figures.make(REMEDIES, outdir=outdir, quick=True, progress=False, remedies_results=quick_dir)
    data = {name: json.loads((outdir / f"{name}.json").read_text()) for name in written}
    return written, data, json.loads((quick_dir / "summary.json").read_text())


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and callable(a.get_text))]


def _axes(fig, title_start: str, words: str):
    """The axes whose title (wrapped onto lines) is ``title_start: words``."""
    hits = [a for a in fig.axes if a.get_visible() and " ".join(a.get_title().split()) == f"{title_start}: {words}"]
    assert len(hits) == 1, (title_start, words, [a.get_title() for a in fig.axes])
    return hits[0]


def _panel_title(row) -> str:
    return row["task"] + ("" if row["encoding"] is None else
                          f", {fr.ENCODING_WORDS[row['encoding']]}")


def _points(ax, marker: str, color) -> list[tuple[float, float, bool]]:
    """(x, y, filled) of every marker ``marker`` in colour ``color`` plotted on ``ax`` (lines without a line)."""
    from matplotlib.colors import to_rgba

    out = []
    for ln in ax.lines:
        if ln.get_marker() != marker or to_rgba(ln.get_color()) != to_rgba(color):
            continue
        filled = to_rgba(ln.get_markerfacecolor()) != to_rgba("white")
        out += [(float(x), float(y), filled) for x, y in zip(ln.get_xdata(), ln.get_ydata()) if np.isfinite(y)]
    return out


def test_each_figure_written_and_stamped(drawn, quick_dir):
    """PNG, PDF and data per figure; the quick grid's tiny runs are stamped "smoke test, not results" and the
    figure's provenance (its files' metadata) names the results directory."""
    written, data, _ = drawn
    assert set(written) == set(REMEDIES)
    for name in REMEDIES:
        assert {p.suffix for p in written[name]} == {".json", ".png", ".pdf"}
        assert data[name]["smoke_test"] is True
        fig = figures.load(name).draw(data[name])
        assert any(_style.SMOKE_TEST_LABEL in t.lower() for t in _texts(fig)), name
        assert str(quick_dir) in fig._varsim_metadata, name
        _style.plt.close(fig)


def test_primary_markers_are_the_summary_numbers(drawn):
    """Every primary row is a marker at its own mean_diff, inside its recipe's slot, in the panel of its task and key
    encoding and the row of its family, open when not Holm-significant; every control is drawn at its mean_diff
    (oracle bar, null cross). Catches a wrong number (ci_low, another N), recipe, panel or family, or a control left
    out."""
    _, data, summary = drawn
    d = data["fig_remedies_primary"]
    assert d["length"] == summary["primary_endpoint"]["length"] == 32
    fig = figures.load("fig_remedies_primary").draw(d)
    recipes = [r["key"] for r in d["recipes"]]
    assert recipes == ["cosine_lr3e3", "constant_lr3e3"]
    words = dict(fr.FAMILIES)
    half = figures.load("fig_remedies_primary").SLOT / 2
    for r in summary["primary"]:
        ax = _axes(fig, _panel_title(r), words[r["kind"]])
        sty = fr.variant_style(r["variant"], r["kind"], "remedy")
        i = recipes.index(r["recipe"])
        pts = [(y, f) for x, y, f in _points(ax, sty["marker"], sty["color"]) if abs(x - i) < half]
        assert pts == [(pytest.approx(r["mean_diff"]), r["significant"])], (r["variant"], r["recipe"], pts)
    for c in summary["controls"]:
        i = recipes.index(c["recipe"])
        kind = "trained" if c["variant"] in summary["settings"]["attentions"] else "inference"
        for family in ([kind] if c["role"] == "negative_control" else ["trained", "inference"]):
            ax = _axes(fig, _panel_title(c), words[family])
            if c["role"] == "positive_control":
                ys = [float(seg[0][1]) for coll in ax.collections if hasattr(coll, "get_segments")
                      for seg in coll.get_segments()  # the bar: horizontal, centred on the recipe
                      if seg[0][1] == seg[1][1] and seg[0][0] < seg[1][0] and abs(seg[0][0] + seg[1][0] - 2 * i) < 1e-9]
            else:
                sty = fr.variant_style(c["variant"], kind, c["role"])
                color = sty["color"] if c["behaves"] else fr.FAIL_COLOR
                ys = [y for x, y, _ in _points(ax, sty["marker"], color) if abs(x - i) < half]
            assert ys == [pytest.approx(c["mean_diff"])], (c["variant"], c["recipe"], family, ys)
    _style.plt.close(fig)


def test_primary_fills_holm_significant_and_colours_failing_controls(drawn):
    """Forced: one remedy Holm-significant, one null control failing. Its marker is filled (the others open) and the
    control is drawn in the failure colour with a legend entry saying so; the title names the Holm family. Catches
    markers that ignore ``significant`` (every quick p is large) and a failing control drawn like a good one."""
    _, data, _ = drawn
    d = json.loads(json.dumps(data["fig_remedies_primary"]))
    p0 = d["panels"][0]
    rem = next(s for s in p0["series"] if s["role"] == "remedy")
    rem["significant"] = [True] + [False] * (len(rem["significant"]) - 1)
    null = next(s for s in p0["series"] if s["role"] == "negative_control")
    null["behaves"] = [False] * len(null["behaves"])
    fig = figures.load("fig_remedies_primary").draw(d)
    words = dict(fr.FAMILIES)
    ax = _axes(fig, p0["title"], words[rem["kind"]])
    sty = fr.variant_style(rem["variant"], rem["kind"], "remedy")
    filled = sorted((round(x), f) for x, _, f in _points(ax, sty["marker"], sty["color"]))
    assert filled == [(0, True)] + [(i, False) for i in range(1, len(d["recipes"]))]
    nax = _axes(fig, p0["title"], words[null["kind"]])
    nsty = fr.variant_style(null["variant"], null["kind"], null["role"])
    assert len(_points(nax, nsty["marker"], fr.FAIL_COLOR)) == len(d["recipes"])
    assert not _points(nax, nsty["marker"], nsty["color"])
    texts = " ".join(_texts(fig))
    assert "control that fails its own test" in texts and "Holm" in texts and "42 primary comparisons" in texts
    _style.plt.close(fig)


def test_decomposition_areas_are_the_summary_numbers(drawn):
    """Per task/encoding x recipe: the lower area's top is softmax's ranking error, the upper one's top is ranking +
    dispersion error, which equals 1 - softmax's accuracy (the summary's decomposition adds up); the sharpening lines
    are 1 - their accuracy. Catches areas not stacked, the wrong variant or recipe, or accuracy drawn for error."""
    _, data, summary = drawn
    d = data["fig_remedies_decomposition"]
    fig = figures.load("fig_remedies_decomposition").draw(d)
    groups = fr.groups_by_key(summary)
    checked = 0
    for row in d["rows"]:
        for cell in row["cells"]:
            ax = next(a for a in fig.axes if " ".join(a.get_title().split()) == " ".join(cell["title"].split()))
            soft = groups[(fr.panel_key(row), cell["recipe"], "softmax")]
            rank = np.array(soft["ranking"]["ranking_error"]["mean"])
            total = 1.0 - np.array(soft["accuracy"]["mean"])
            np.testing.assert_allclose(rank + np.array(soft["ranking"]["dispersion_error"]["mean"]), total,
                                       atol=1e-12)
            tops = []
            for poly in ax.collections[:2]:
                v = poly.get_paths()[0].vertices
                k = len(rank)
                tops.append(v[k + 2: 2 * k + 2, 1][::-1])  # fill_between: start, lower edge, end, upper edge back
            np.testing.assert_allclose(tops[0], rank)
            np.testing.assert_allclose(tops[1], total)
            for v in figures.load("fig_remedies_decomposition").SHARPENING:
                g = groups[(fr.panel_key(row), cell["recipe"], v)]
                label = f"{d['labels'][v]}: the error left"
                (ln,) = [x for x in ax.lines if x.get_label() == label]
                np.testing.assert_allclose(ln.get_ydata(), 1.0 - np.array(g["accuracy"]["mean"]))
                checked += 1
    assert checked == 2 * 6  # 2 maps x (argmax, 2 encodings of dictionary) x 2 recipes
    _style.plt.close(fig)


def test_accuracy_lines_are_the_recipes_numbers(drawn, quick_dir):
    """The accuracy figure draws one recipe (the grid's first here: the quick grid has no cosine_lr1e3) and each line
    is that group's mean accuracy; ``recipe=`` picks another, an unknown one is refused naming the parameter."""
    _, data, summary = drawn
    mod = figures.load("fig_remedies_accuracy")
    groups = fr.groups_by_key(summary)
    src = fr.RemediesSource(quick_dir, quick=True)
    for recipe, d in ((None, data["fig_remedies_accuracy"]),
                      ("constant_lr3e3", _style.jsonable(mod.compute(True, source=src, recipe="constant_lr3e3")))):
        want = recipe or "cosine_lr3e3"
        assert d["recipe"] == want
        fig = mod.draw(d)
        words = dict(fr.FAMILIES)
        n = 0
        for p in d["panels"]:
            for kind in ("trained", "inference"):
                ax = _axes(fig, p["title"], words[kind])
                for ln in ax.lines:
                    match = [v for v in {g["variant"] for g in summary["groups"]}
                             if ln.get_label() == d["labels"][v]]
                    if match:
                        np.testing.assert_allclose(
                            ln.get_ydata(), groups[(fr.panel_key(p), want, match[0])]["accuracy"]["mean"])
                        n += 1
        assert n == 3 * (5 + 6)  # trained row: softmax, 3 remedies, oracle; inference: softmax, 4 maps, oracle
        _style.plt.close(fig)
    with pytest.raises(ValueError, match="recipe 'cosine_lr1e3'"):
        mod.compute(True, source=src, recipe="cosine_lr1e3")


def test_at_most_six_series_per_panel(drawn):
    """No panel of any remedies figure draws more than six labelled series (guides excluded)."""
    _, data, _ = drawn
    for name in REMEDIES:
        fig = figures.load(name).draw(data[name])
        for ax in fig.axes:
            labels = {ln.get_label() for ln in ax.lines if not ln.get_label().startswith("_")}
            labels -= {"chance"} | {x for x in labels if x.startswith("longest training")}
            markers = {ln.get_marker() for ln in ax.lines if ln.get_linestyle() == "None" and len(ln.get_xdata())
                       and ln.get_marker() not in ("_", "|", "None", "")}  # errorbar caps are no series
            bars = sum(1 for c in ax.collections if hasattr(c, "get_segments")
                       and any(s[0][1] == s[1][1] and s[0][0] < s[1][0] for s in c.get_segments()))
            assert len(labels) <= 6 and len(markers) + bool(bars) <= 6, (name, ax.get_title(), labels, markers)
        _style.plt.close(fig)


def test_styles_distinct():
    """Every series of the full grid has its own marker and colour (the series registry's); trained and
    inference-only line styles differ, and the controls' from the remedies' (catches a palette that wraps or a
    control that looks like a remedy)."""
    st = remedies_settings()
    groups = [{"variant": v, "kind": "trained" if v in st.attentions else "inference",
               "role": "remedy" if v in st.primary["variants"] else "other"}
              for v in [*st.attentions, *st.inference_attentions]]
    fam = fr.family_variants({"groups": groups, "primary_endpoint": {"variants": list(st.primary["variants"])}})
    assert fam == {"trained": ["ssmax", "logn", "entmax15"],
                   "inference": ["topk1", "logn_temperature", "adaptive_temperature", "critical"]}
    styles = {v: fr.variant_style(v, k, "remedy") for k, vs in fam.items() for v in vs}
    controls = {v: fr.variant_style(v, "inference", role) for v, role in (("oracle", "positive_control"),
                                                                          ("permuted_softmax", "negative_control"),
                                                                          ("softmax_replicate", "negative_control"))}
    everyone = [*styles.values(), *controls.values(), fr.variant_style("softmax", "trained", "baseline")]
    for key in ("marker", "color"):
        assert len({s[key] for s in everyone}) == len(everyone) == 11, key
    assert {styles[v]["ls"] for v in fam["trained"]} != {styles[v]["ls"] for v in fam["inference"]}
    assert not {s["ls"] for s in controls.values()} & {s["ls"] for s in styles.values()}
    assert fr.FAIL_COLOR not in {s["color"] for s in everyone}


def test_without_a_source_they_are_skipped_with_one_line(tmp_path, capsys, monkeypatch):
    """A build without the committed summary: `varsim figures` (all figures) without --remedies-results skips the
    remedies figures with one line and still draws the others, exit 0; naming one with --only is a one-line error,
    exit 2."""
    monkeypatch.setattr(fr, "COMMITTED_DIR", tmp_path / "no-committed-summary")
    reg = dict(figures.FIGURES)
    try:
        figures.FIGURES.clear()
        figures.FIGURES.update({"fig_decay_exponent": reg["fig_decay_exponent"], **{n: reg[n] for n in REMEDIES}})
        rc = main(["figures", "--quick", "--outdir", str(tmp_path), "--no-progress"])
    finally:
        figures.FIGURES.clear()
        figures.FIGURES.update(reg)
    out, err = capsys.readouterr()
    assert rc == 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "skipping" in lines[0] and "--remedies-results" in lines[0]
    assert (tmp_path / "fig_decay_exponent.png").exists()
    assert not (tmp_path / "fig_remedies_primary.png").exists()
    rc = main(["figures", "--quick", "--only", "fig_remedies_primary", "--outdir", str(tmp_path), "--no-progress"])
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


@pytest.mark.parametrize("fmt", ["varsim.reproduce.summary/1", "varsim.reproduce.remedies_summary/1"])
def test_foreign_or_old_summary_is_refused(tmp_path, capsys, fmt):
    """A paper-grid summary and a remedies summary of the previous format are refused with one line (the figures
    read fields the old format does not have)."""
    (tmp_path / "summary.json").write_text(json.dumps({"format": fmt}))
    rc = main(["figures", "--only", "fig_remedies_primary", "--remedies-results", str(tmp_path),
               "--outdir", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "not a remedies summary" in err and len(err.strip().splitlines()) == 1


def test_commit_command_and_committed_default_source(quick_dir, tmp_path, monkeypatch, capsys):
    """`python -m varsim.figures.remedies RESULTS DEST` copies summary, table and settings and removes an old
    format's selection.json; with DEST as the package's committed directory, `varsim figures` draws from it without
    --remedies-results, stamped as a smoke test only when the runs are tiny. Catches a committed source that is
    ignored, a stale file of the old format left beside the new summary, or a stamp on real committed results."""
    dest = tmp_path / "committed"
    dest.mkdir()
    (dest / "selection.json").write_text("{}")
    assert fr.main([str(quick_dir), str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted(fr.COMMITTED_FILES)
    assert json.loads((dest / "summary.json").read_text()) == quick_summary()
    monkeypatch.setattr(fr, "COMMITTED_DIR", dest)
    src = fr.RemediesSource(None, quick=True)
    assert src.available and src.from_committed
    d = src.load()
    assert d["origin"] == "committed remedies results" and "varsim/figures/data/remedies" in d["footer"]
    assert d["smoke_test"] is True  # tiny runs stay stamped
    big = quick_summary()
    big["settings"]["train"]["steps"] = 3000
    (dest / "summary.json").write_text(json.dumps(big))
    assert fr.RemediesSource(None, quick=True).load()["smoke_test"] is False
    out = tmp_path / "figs"
    rc = main(["figures", "--quick", "--only", "fig_remedies_primary", "--outdir", str(out), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert (out / "fig_remedies_primary.png").exists()


def test_commit_command_refuses_incomplete_foreign_and_partial(quick_dir, tmp_path, capsys):
    """Not committed (exit 2, one line, nothing written): a summary with missing runs (unless --allow-incomplete), a
    paper-grid summary, a directory without its table."""
    bad = tmp_path / "r"
    quick_remedies_dir(bad)
    s = quick_summary()
    s["runs"]["missing"] = ["a"]
    (bad / "summary.json").write_text(json.dumps(s))
    assert fr.main([str(bad), str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "missing" in err and not (tmp_path / "d").exists()
    assert fr.main([str(bad), str(tmp_path / "d"), "--allow-incomplete"]) == 0
    capsys.readouterr()
    (bad / "summary.json").write_text(json.dumps({"format": "varsim.reproduce.summary/1"}))
    assert fr.main([str(bad), str(tmp_path / "d2")]) == 2
    assert "not a remedies summary" in capsys.readouterr().err
    quick_remedies_dir(bad)
    (bad / "table.md").unlink()
    assert fr.main([str(bad), str(tmp_path / "d3")]) == 2
    assert "table.md" in capsys.readouterr().err and not (tmp_path / "d3").exists()


@pytest.mark.xfail(not committed_is_current(), strict=True, raises=(AssertionError, ValueError),
                   reason="the committed remedies data is the previous format until the full grid of the current "
                          "design is committed with `python -m varsim.figures.remedies RESULTS_DIR`")
def test_committed_remedies_summary_is_the_full_presets_and_its_table():
    """The remedies summary shipped with the package is a summary of the full remedies preset in the current format
    (not a quick run's), complete, loads as the default source unstamped, and its table.md is the rendering of that
    summary. Catches committing a quick, incomplete or hand-edited summary, or a table out of step with it."""
    from varsim.experiments.aggregation import kind_of
    from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT

    summary = json.loads((fr.COMMITTED_DIR / "summary.json").read_text())
    assert summary["format"] == REMEDIES_SUMMARY_FORMAT
    assert summary["settings"] == remedies_settings().to_dict()
    assert not summary["runs"]["missing"] and not summary["runs"]["corrupt"]
    d = fr.RemediesSource(None).load()
    assert d["origin"] == "committed remedies results" and d["smoke_test"] is False
    assert kind_of(summary["settings"]).name == "remedies"
    assert (fr.COMMITTED_DIR / "table.md").read_text() == kind_of(summary["settings"]).render(summary)
    assert not (fr.COMMITTED_DIR / "selection.json").exists()
