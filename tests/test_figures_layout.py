"""Every built-in figure fills its canvas and its text does not collide, in the default style and at a 3.3 in paper
column: drawn from the committed data (reproduction, probe, remedies; the quick remedies summary in tests/data while
the committed one is of an older format) or tiny computations (the theory figures).

Checks per drawing: at most 10% of the saved image's pixel columns are blank (the wide footer or a legend set off to
one side left 32-58% blank), no blank block (the largest rectangle of background pixels) covers more than 10% of the
image (a legend set off beside a tall figure left 27% empty below it, a missing panel in a grid 24%), no two visible
texts (tick labels, axis labels, titles, legend entries, annotations) overlap, every title fits in two lines without a
formula or an "N = 1024" broken across them, a categorical axis (text tick labels: training recipes, positional
encodings) has no line joining its categories as if they were a continuum, and the column style's figures are 3.3 in
wide."""

from __future__ import annotations

import importlib
import io
import itertools
import re

import numpy as np
import pytest

from varsim import figures
from varsim.figures import _style

#: tiny parameters of the figures that compute their data (seconds each; quick mode for one not listed)
TINY = {
    "fig_variance_vs_n": dict(quick=True, betas=(0.5, 1.0, 2.0, 3.0), n_max=256, sequences=64),
    "fig_decay_exponent": dict(quick=True),
    "fig_random_query": dict(quick=True),
    "fig_variants_ipr": dict(quick=True),
}


_SOURCES: dict = {}
#: the options of ``varsim figures`` with no results given: each source's committed data
_OPTIONS = {"quick": False, "seed": 0, "results": None, "rerun": False, "progress": False, "probe_results": None,
            "remedies_results": None, "decoder_results": None}


def _source(name):
    """The data source figure ``name`` declares, one per kind for the whole module (committed data read once)."""
    kind = figures.data_source(name)
    if kind is not None and kind not in _SOURCES:
        module, cls = figures.SOURCES[kind]
        _SOURCES[kind] = getattr(importlib.import_module(module), cls).from_options(_OPTIONS)
    return _SOURCES.get(kind)


@pytest.fixture(scope="module")
def datasets():
    out = {}
    for name in figures.FIGURES:
        module = figures.load(name)
        params = TINY.get(name, {"quick": True} if figures.data_source(name) is None else None)
        if params is not None:
            out[name] = _style.jsonable(module.compute(seed=0, **params))
        elif not getattr(_source(name), "available", True):
            out[name] = None  # no committed data in this build yet (the decoder figures before the first full run)
        else:
            out[name] = _style.jsonable(module.compute(False, 0, source=_source(name)))
    return out


def _rendered(fig) -> np.ndarray:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    from PIL import Image

    buf.seek(0)
    return np.asarray(Image.open(buf).convert("L"), dtype=np.uint8)


def blank_width(img: np.ndarray) -> float:
    """Fraction of the saved image's pixel columns (``img``, from :func:`_rendered`) with nothing drawn (all
    near-white), outside the axes' own gaps."""
    return float(np.mean(np.all(img > 245, axis=0)))


#: pixels of a block (side) in which the largest blank rectangle is searched: a block is blank when all its pixels are
BLOCK = 3


def largest_blank_block(img: np.ndarray) -> float:
    """Fraction of the saved image's area (``img``, from :func:`_rendered`) covered by its largest rectangle of
    background (near-white) pixels: the maximal rectangle over each row's histogram of blank heights, on blocks of
    :data:`BLOCK` pixels."""
    h, w = (img.shape[0] // BLOCK) * BLOCK, (img.shape[1] // BLOCK) * BLOCK
    blank = np.all((img[:h, :w] > 245).reshape(h // BLOCK, BLOCK, w // BLOCK, BLOCK), axis=(1, 3))
    heights = np.zeros(blank.shape[1] + 1, dtype=np.int64)  # a zero sentinel at the end empties the stack
    best = 0
    for row in blank:
        heights[:-1] = np.where(row, heights[:-1] + 1, 0)
        hs = heights.tolist()
        stack: list[int] = []
        for i, hgt in enumerate(hs):
            while stack and hs[stack[-1]] >= hgt:
                top = stack.pop()
                best = max(best, hs[top] * (i - (stack[-1] + 1 if stack else 0)))
            stack.append(i)
    return best / blank.size


def long_titles(fig) -> list[str]:
    """Titles (the figure's, subfigures', axes') of more than two lines, or wrapped inside a formula ($...$) or an
    equation ("N =" at a line's end, "= 1024" at the next one's start)."""
    titles = [ax.title for ax in fig.axes if ax.get_visible()]
    titles += [f._suptitle for f in (fig, *fig.subfigs) if getattr(f, "_suptitle", None) is not None]
    bad = []
    for t in titles:
        lines = t.get_text().strip().splitlines()
        if not lines:
            continue
        broken = any(len(re.findall(r"(?<!\\)\$", line)) % 2 for line in lines)
        broken |= any(a.rstrip().endswith("=") or b.lstrip().startswith("=") for a, b in zip(lines, lines[1:]))
        if len(lines) > 2 or broken:
            bad.append(t.get_text())
    return bad


def _is_categorical(axis) -> bool:
    """An axis labelled with words at fixed ticks (training recipes, encodings), not numbers or formulas."""
    from matplotlib.ticker import FixedLocator

    labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
    if not isinstance(axis.get_major_locator(), FixedLocator) or not labels:
        return False
    return all("$" not in text and re.search(r"[A-Za-z]{2,}", text) for text in labels)


def lines_across_categories(fig) -> list[str]:
    """Data lines that join different categories of a categorical x axis (drawn as if the axis were continuous)."""
    bad = []
    for ax in fig.axes:
        if not ax.get_visible() or not _is_categorical(ax.xaxis):
            continue
        for line in ax.get_lines():
            if line.get_linestyle() in ("None", " ", "") or line.get_transform() != ax.transData:
                continue
            x = np.asarray(line.get_xdata(), dtype=float)
            y = np.asarray(line.get_ydata(), dtype=float)
            x = x[np.isfinite(x) & np.isfinite(y)]
            if len(np.unique(np.round(x))) > 1:
                bad.append(f"{ax.get_title()}: {line.get_label()}")
    return bad


def _texts(fig):
    """The visible, non-empty texts as drawn: tick labels of the ticks actually drawn, labels, titles, legends."""
    from matplotlib.text import Text

    fig.canvas.draw()
    out = []
    tick_labels = set()
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_labels.update((tick.label1, tick.label2))
            for tick in axis._update_ticks():  # the ticks inside the view, as drawn
                out += [t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text()]
    for t in fig.findobj(Text):
        if t in tick_labels or not t.get_visible() or not t.get_text().strip():
            continue
        if t.axes is not None and not t.axes.get_visible():
            continue
        if t.get_gid() == "varsim-smoke-watermark":
            continue
        out.append(t)
    return out


def overlapping_texts(fig) -> list[tuple[str, str]]:
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer).expanded(0.98, 0.9)) for t in _texts(fig)]
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


@pytest.mark.parametrize("style", ["default", "column"])
@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figure_fills_its_canvas_without_overlapping_text(datasets, name, style):
    if datasets[name] is None:
        pytest.skip(f"{name}: no committed data in this build")
    module = figures.load(name)
    with _style.style(style):
        fig = module.draw(datasets[name], style=style)
        try:
            if style == "column":
                assert fig.get_figwidth() == pytest.approx(3.3)
            img = _rendered(fig)  # saved once: both blank checks read the same image
            blank = blank_width(img)
            assert blank <= 0.10, f"{name} ({style}): {blank:.0%} of the width is blank"
            block = largest_blank_block(img)
            assert block <= 0.10, f"{name} ({style}): a blank block covers {block:.0%} of the figure"
            assert long_titles(fig) == [], f"{name} ({style}): titles too long or broken"
            assert lines_across_categories(fig) == [], f"{name} ({style}): categories joined by lines"
            assert overlapping_texts(fig) == [], f"{name} ({style}) overlapping texts"
        finally:
            _style.plt.close(fig)


def test_the_checks_catch_blank_space_and_overlaps():
    """The checks fail where they must: a legend set far off to the right, and two labels drawn on each other."""
    with _style.style():
        fig, ax = _style.plt.subplots(figsize=(4, 3))
        ax.plot([1, 2], [1, 2], label="x")
        ax.legend(loc="upper left", bbox_to_anchor=(2.0, 1.0))
        assert blank_width(_rendered(fig)) > 0.10
        ax.text(0.5, 0.5, "one label", transform=ax.transAxes)
        ax.text(0.52, 0.5, "another label", transform=ax.transAxes)
        assert ("one label", "another label") in overlapping_texts(fig)
        _style.plt.close(fig)


def test_the_checks_catch_blank_blocks_long_titles_and_joined_categories():
    """A legend beside the top of a tall figure leaves a blank block under it (its columns are not blank); a
    four-line title, a formula or "N = 1024" wrapped across lines; categories joined by a line."""
    with _style.style():
        fig, axes = _style.plt.subplots(3, 1, figsize=(6, 8), layout="constrained")
        for ax in axes:
            ax.plot([1, 2], [1, 2], label="a long legend entry")
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
        img = _rendered(fig)
        assert blank_width(img) <= 0.10 < largest_blank_block(img)
        axes[0].set_title("one\ntwo\nthree\nfour")
        axes[1].set_title("gain at $N =\n 1024$")
        axes[2].set_title("gain at N =\n1024")
        assert len(long_titles(fig)) == 3
        axes[2].set_xticks([1, 2], ["cosine", "constant"])
        assert lines_across_categories(fig)
        axes[2].get_lines()[0].set_linestyle("none")
        assert not lines_across_categories(fig)
        _style.plt.close(fig)


def test_user_axes_are_drawn_on(datasets):
    """``draw(data, ax=...)`` draws into the caller's axes and figure, at the caller's size."""
    module = figures.load("fig_decay_exponent")
    fig, ax = _style.plt.subplots(figsize=(3.3, 2.5))
    assert module.draw(datasets["fig_decay_exponent"], ax=ax) is fig
    assert ax.get_lines() and ax.get_xlabel()
    _style.plt.close(fig)


def test_provenance_in_file_metadata_and_footer_only_when_asked(datasets, tmp_path):
    import json

    from PIL import Image

    data = datasets["fig_random_query"]
    module = figures.load("fig_random_query")
    with _style.style():
        fig = module.draw(data)
        assert not [t for t in fig.texts if t.get_gid() == "varsim-footer"]
        _style.plt.close(fig)
    paths = _style.draw_and_save(module.draw, data, tmp_path, "fig_random_query", style="column", footer=True)
    meta = json.loads(Image.open(paths[0]).info["Description"])
    assert meta["name"] == "fig_random_query" and meta["footer"] == data["footer"]
    assert b"fig_random_query" in paths[1].read_bytes()


def test_unknown_style_is_one_line_error():
    with pytest.raises(ValueError, match="style"):
        _style.style_spec("poster")
