"""The real-model figures (fig_probe_*): drawn from the committed probe results, no computation, honest errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from varsim.figures import FIGURES, _style, load, make, plot
from varsim.figures._style import jsonable
from varsim.figures.probe import COMMITTED_DIR, COMMITTED_FILES, ProbeSource, probe_command, read_probe

PROBE_FIGURES = [name for name in FIGURES if name.startswith("fig_probe_")]


def test_four_probe_figures_registered_and_committed_data_present():
    """Catches a registry entry that is missing or a build without the committed probe files."""
    assert PROBE_FIGURES == ["fig_probe_std", "fig_probe_slopes", "fig_probe_decomposition", "fig_probe_layers"]
    for name in COMMITTED_FILES:
        assert (COMMITTED_DIR / name).is_file()


@pytest.mark.parametrize("name", PROBE_FIGURES)
def test_compute_is_jsonable_and_plot_writes_png_pdf(name, tmp_path):
    """compute() on the committed data gives plain JSON data with the footer naming model, command, seed and commit,
    no smoke-test stamp in quick mode either (real data), and plot() writes a PNG and a PDF. Catches figures that
    compute something at draw time, footers without provenance, and quick mode stamping real data as a smoke test."""
    mod = load(name)
    data = mod.compute(True, 0, source=ProbeSource())
    assert data == json.loads(json.dumps(jsonable(data), allow_nan=False))
    assert data["smoke_test"] is False
    for model in ("smollm2", "minilm"):
        assert f"varsim probe-model --model {model}" in data["footer"]
        assert f"varsim/figures/data/probe/{model}.json" in data["footer"]
    for model in ("none", "rope", "alibi"):  # the trained decoders: their grid run and the probe command
        assert f"grid run argmax-decoder_{model}-none-softmax-d2-s0, trained at commit 8cc3ec8672" in data["footer"]
        assert (f"varsim probe-model --model checkpoints/argmax-decoder_{model}-none-softmax-d2-s0 --lengths 16 32 64 "
                "128 256 512 1024 --windows 40 --layers 0 1 --seed 0" in data["footer"])
    assert "--seed 0" in data["footer"] and "commit 2fb89e5724" in data["footer"]
    paths = plot(name, jsonable(data), tmp_path)
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    assert all(p.stat().st_size > 1000 for p in paths)


def _visible_axes(fig):
    """The panels: visible axes drawn with their axis (not a colorbar, not a grid slot holding the legend)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison and ax.get_label() != "<colorbar>"]


def test_panels_of_each_figure():
    """Panel counts and labels: std, SmolLM2 (2 probed layers), the three trained decoders (2 layers each) and MiniLM
    (6 probed layers: the first, middle and last shown), log-log with the heads' range as a band and 4 lines each in
    one legend (in the grid's spare slot), the slopes with the heads' bootstrap interval span as the JSON has them;
    slopes 5 x 2 heatmaps with values matching the JSON's slopes; decomposition 5 x 3 panels of 3 lines. Catches
    dropped panels, linear axes, the first layers only, a band that is not the heads' range, and maps drawn from the
    wrong slope field."""
    from varsim.figures import fig_probe_decomposition, fig_probe_slopes, fig_probe_std

    assert fig_probe_std.shown_layers(list(range(30))) == [0, 14, 29]
    assert fig_probe_std.shown_layers([0, 1]) == [0, 1]
    data = fig_probe_std.compute()
    fig = fig_probe_std.draw(data)
    axes = _visible_axes(fig)
    assert len(axes) == 11
    assert [" ".join(ax.get_title().split()) for ax in axes[2:8:2]] == [f"argmax decoder, {p}, 2000 steps, layer 0"
                                                     for p in ("NoPE", "RoPE", "ALiBi")]
    axes = axes[:2] + axes[8:]
    for ax, panel in zip(axes, [data["rows"][0]["panels"][0], data["rows"][0]["panels"][1],
                                *data["rows"][4]["panels"]]):
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert ax.get_xlabel() == "keys $N$"
        assert len(ax.get_lines()) == 4  # median, RMS, i.i.d. law, N^-1/2
        (band,) = ax.collections  # the heads' range
        heads = np.array(panel["component_per_head"])
        top = band.get_paths()[0].vertices[:, 1]
        assert top.max() == pytest.approx(heads.max()) and top.min() == pytest.approx(heads.min())
    (legend,) = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    labels = [t.get_text() for t in legend.get_texts()]
    assert any(lab.startswith("i.i.d. law") for lab in labels) and len(labels) == 5
    assert "SmolLM2" in axes[0].get_title() and "MiniLM" in axes[2].get_title()
    assert [p["layer"] for p in data["rows"][4]["panels"]] == [0, 2, 5]
    raw = read_probe(COMMITTED_DIR / "minilm.json")
    last = data["rows"][4]["panels"][2]["slope_std"]
    assert last["ci_low"] == pytest.approx(min(raw["slopes"]["std"]["lo"][5]))
    assert last["ci_high"] == pytest.approx(max(raw["slopes"]["std"]["hi"][5]))
    assert f"[{last['ci_low']:+.2f}, {last['ci_high']:+.2f}]" in axes[4].texts[0].get_text()

    data = fig_probe_slopes.compute()
    fig = fig_probe_slopes.draw(data)
    maps = [ax for ax in _visible_axes(fig) if ax.images]
    assert len(maps) == 10
    raw = read_probe(COMMITTED_DIR / "smollm2.json")
    assert maps[0].images[0].get_array()[0, 8] == pytest.approx(raw["slopes"]["std"]["value"][0][8])
    texts = {t.get_text() for t in maps[0].texts}
    assert f"{raw['slopes']['std']['value'][0][8]:+.2f}" in texts

    data = fig_probe_decomposition.compute()
    fig = fig_probe_decomposition.draw(data)
    assert len(_visible_axes(fig)) == 15
    # var_total, var_iid, var_offset (and the marks of offsets <= 0, where a panel has them)
    assert all(len([li for li in ax.get_lines() if li.get_label() != fig_probe_decomposition.NOT_POSITIVE]) == 3
               for ax in _visible_axes(fig))
    sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and
                                                   getattr(a, "get_text", lambda: "")())]
    assert min(sizes) >= _style.MIN_FONT_SIZE
    picks = [(h["layer"], h["head"]) for h in data["rows"][0]["heads"]]
    assert picks == [(0, 6), (0, 3), (0, 8)]  # broadest, sharpest (E[sum w^2] slope) in layer 0; fastest std decay


def test_select_heads_rule():
    """The rule picks argmin/argmax of the first layer's E[sum w^2] slope and the global argmin of the std slope,
    without repeats. Catches argmin/argmax swaps and picking the same head twice."""
    from varsim.figures.fig_probe_decomposition import select_heads

    data = {"layers": [3, 4], "slopes": {"y2": {"value": [[-0.5, -0.9, -0.1], [-1.0, -1.0, -1.0]]},
                                         "std": {"value": [[0.0, -0.9, 0.0], [0.0, -0.2, 0.0]]}}}
    got = [(s["layer"], s["head"]) for s in select_heads(data)]
    assert got == [(3, 1), (3, 2), (4, 1)]


def test_probe_command_round_trips_the_settings():
    """The footer's command holds every setting (lengths, windows, layers, seed, bootstrap), and a non-default
    query position. Catches a command that would not reproduce the data."""
    raw = read_probe(COMMITTED_DIR / "minilm.json")
    assert probe_command(raw) == ("varsim probe-model --model minilm --lengths 16 32 64 128 256 512 --windows 40 "
                                  "--layers 0 1 2 3 4 5 --seed 0 --bootstrap 400")
    raw["settings"]["query_position"] = 1
    assert "--query-position 1" in probe_command(raw)


def _corrupt(tmp_path, kind):
    raw = json.loads((COMMITTED_DIR / "smollm2.json").read_text())
    path = tmp_path / f"{kind}.json"
    if kind == "torn":
        path.write_text((COMMITTED_DIR / "smollm2.json").read_text()[:5000])
        return path
    if kind == "partial":
        del raw["slopes"]["y2"]
    elif kind == "shape":
        raw["per_length"]["var_iid"] = raw["per_length"]["var_iid"][:-1]
    elif kind == "kind":
        raw["kind"] = "varsim.something_else"
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize("kind", ["torn", "partial", "shape", "kind"])
def test_corrupt_probe_file_is_one_line_error_naming_it(kind, tmp_path):
    """A torn, partial, mis-shaped or foreign file gives one ValueError line naming the file, before drawing.
    Catches a traceback from deep inside numpy/Matplotlib or an error that does not say which file."""
    path = _corrupt(tmp_path, kind)
    with pytest.raises(ValueError) as err:
        make(["fig_probe_std"], outdir=tmp_path / "out", probe_results=[path], progress=False)
    msg = str(err.value)
    assert str(path) in msg and "\n" not in msg
    assert not (tmp_path / "out" / "fig_probe_std.png").exists()


def test_cli_probe_results_option(tmp_path):
    """`varsim figures --only fig_probe_slopes --probe-results FILE` draws a user's file (one row) and a corrupt file
    exits 2 with one line on stderr. Catches the option not reaching the figures."""
    user = tmp_path / "mine.json"
    user.write_text((COMMITTED_DIR / "smollm2.json").read_text())
    cmd = [sys.executable, "-m", "varsim.figures", "--only", "fig_probe_slopes", "--outdir", str(tmp_path / "o"),
           "--probe-results", str(user)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "o" / "fig_probe_slopes.json").read_text())
    assert len(data["rows"]) == 1 and str(user) in data["footer"]
    bad = _corrupt(tmp_path, "torn")
    done = subprocess.run(cmd[:-1] + [str(bad)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and str(bad) in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_layers_figure_puts_each_models_layers_side_by_side():
    """fig_probe_layers: one slot per (model, probed layer) in the order of the committed files (SmolLM2, the three
    trained decoders, MiniLM), every head's slope and interval as the JSON has them, E[sum w^2] above and the std
    below. Catches a model left out, layers of one model drawn in another's slots, and the two slope fields
    swapped."""
    import numpy as np

    from varsim.figures import fig_probe_layers

    data = fig_probe_layers.compute()
    assert [r["name"] for r in data["rows"]] == ["SmolLM2", "NoPE decoder", "RoPE decoder", "ALiBi decoder", "MiniLM"]
    files = ["smollm2", "decoder_nope", "decoder_rope", "decoder_alibi", "minilm"]
    for row, name in zip(data["rows"], files):
        raw = read_probe(COMMITTED_DIR / f"{name}.json")
        assert [e["layer"] for e in row["layers"]] == raw["layers"]
        for i, e in enumerate(row["layers"]):
            for q in ("y2", "std"):
                for k in ("value", "lo", "hi"):
                    assert e[q][k] == raw["slopes"][q][k][i]
    fig = fig_probe_layers.draw(data)
    axes = _visible_axes(fig)
    assert len(axes) == 2
    assert [t.get_text() for t in axes[1].get_xticklabels()] == ["0", "1"] * 4 + [str(i) for i in range(6)]
    assert [t.get_text() for t in axes[0].texts] == [r["name"] for r in data["rows"]]
    for ax, q in zip(axes, ("y2", "std")):
        drawn = np.sort(np.concatenate([c.get_offsets()[:, 1] for c in ax.collections if c.get_offsets().size
                                        and c.get_offsets().shape[1] == 2 and type(c).__name__ == "PathCollection"]))
        want = np.sort([v for r in data["rows"] for e in r["layers"] for v in e[q]["value"]])
        np.testing.assert_allclose(drawn, want)


def test_offsets_at_or_below_zero_are_marked_not_clipped_to_the_axis_floor():
    """An offset estimate <= 0 is left out of the log-scale line (NaN, not a value Matplotlib clips to the floor)
    and marked at the panel's bottom edge, with a legend entry saying so."""
    from varsim.figures import fig_probe_decomposition as fig

    data = fig.compute()
    bad = [(r, h) for r in data["rows"] for h in r["heads"] if min(v for v in h["var_offset"] if v is not None) <= 0]
    assert bad, "the committed probes have offsets <= 0; a planted one would do otherwise"
    f = fig.draw(data)
    panels = [ax for ax in f.axes if ax.get_visible() and ax.get_title()]
    for ax, (row, head) in zip(panels, [(r, h) for r in data["rows"] for h in r["heads"]]):
        offset = np.array([np.nan if v is None else v for v in head["var_offset"]])
        line = next(li for li in ax.get_lines() if li.get_label().startswith("shared value offset"))
        y = np.asarray(line.get_ydata(), dtype=float)
        assert np.all(np.isnan(y[offset <= 0])) and np.all(y[offset > 0] == offset[offset > 0])
        marks = [li for li in ax.get_lines() if li.get_label() == fig.NOT_POSITIVE]
        assert len(marks) == int((offset <= 0).any())
        if marks:
            np.testing.assert_array_equal(marks[0].get_xdata(), np.array(row["lengths"], dtype=float)[offset <= 0])
    assert any(t.get_text().startswith("var_offset <= 0") for leg in f.legends for t in leg.get_texts())
    fig._style.plt.close(f)
