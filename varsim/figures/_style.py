"""Shared look and output handling of the figures: named styles (a figure's width and text sizes), Okabe-Ito colours,
the axes a figure draws on (the user's or new ones at the style's size), the provenance footer (only when asked) and
the smoke-test stamp, PNG + PDF output with the provenance in the files' metadata, JSON-safe data.

A style is a name of :data:`STYLES` (``"default"``, ``"column"``: 3.3 in, ``"two-column"``: 6.9 in, ``"slides"``)
or a dict of Matplotlib rcParams (e.g. a ``tueplots`` bundle), whose ``figure.figsize`` sets the width; the styles
and the context manager that applies them live in the public :mod:`varsim.style`. Importing this module leaves
Matplotlib's backend alone: the commands that only write files select Agg themselves (:func:`headless_backend`)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib.pyplot as plt  # pyplot only: the backend stays the caller's (varsim figures sets its own)
import numpy as np

from varsim._common.atomic import atomic_write_bytes
from varsim._common.jsonio import jsonable  # re-exported: one home for figure data as JSON
from varsim.style import COLORS, MIN_FONT_SIZE, STYLES, style
from varsim.style import rc as _style_rc
from varsim.style import spec as style_spec

__all__ = ["plt", "COLORS", "MARKERS", "SMOKE_TEST_LABEL", "STYLES", "style", "style_spec", "axes_grid",
           "new_figure", "finish", "save", "draw_and_save", "computed_footer", "jsonable", "array", "pm", "log2_ticks",
           "legend_below", "legend_clear_of_data", "categories", "wrap_text", "metadata_text", "write_data",
           "subplots", "suptitle", "label_first_column", "headless_backend"]

#: Stamped on every figure made in quick mode (whose tiny models never learn): they must not pass for results.
SMOKE_TEST_LABEL = "smoke test, not results"
_SMOKE_COLOR = "#D55E00"
MARKERS = ("o", "s", "^", "D", "v", "P")
#: the shared rcParams of every style (:func:`varsim.style.rc` of the default style)
_RC = _style_rc()


def headless_backend() -> None:
    """Select Matplotlib's Agg backend (headless and deterministic) for this process: called by the entry points that
    only write files (``varsim figures``, ``python -m varsim.figures``, ``figures/make_all.py``) and in the worker
    processes of a parallel ``make``, never on an import or library path, which keep the caller's backend (a
    Jupyter session's ``inline``)."""
    import matplotlib

    matplotlib.use("Agg")


def _renderer(fig):
    """A renderer for measuring ``fig``'s artists on any backend (only Agg-based canvases have ``get_renderer``:
    a session on the svg, pdf or cairo backend has none)."""
    canvas = fig.get_figure(root=True).canvas
    return canvas.get_renderer() if hasattr(canvas, "get_renderer") else fig.get_figure(root=True)._get_renderer()


def axes_grid(n_panels: int = 1, *, ax=None, style=None, width: float = 5.2, aspect: float = 0.75, ncols=None,
              **kw):
    """The axes a figure draws its ``n_panels`` panels on, as ``(fig, [axes...])`` (call inside :func:`style`).

    ``ax``: the user's axes (one Axes, or a sequence of at least ``n_panels``): drawn on as they are. Otherwise a new
    figure in constrained layout: ``ncols`` panels per row (default: all, at most the style's ``max_cols``), the
    style's width (or ``width`` per panel for the default style), each panel ``aspect`` times as high as wide."""
    import numpy as np

    if ax is not None:
        axes = [ax] if not np.iterable(ax) else list(np.ravel(ax))
        if len(axes) < n_panels:
            raise ValueError(f"ax: this figure draws {n_panels} panels, got {len(axes)} axes")
        return axes[0].figure, axes[:n_panels]
    spec = style_spec(style)
    cols = max(1, min(n_panels, ncols or spec["max_cols"]))
    rows = -(-n_panels // cols)
    total = spec["width"] or width * cols
    fig, axes = plt.subplots(rows, cols, figsize=(total, total / cols * aspect * rows), squeeze=False,
                             layout="constrained", **kw)
    flat = list(axes.ravel())
    for extra in flat[n_panels:]:
        extra.set_visible(False)
    return fig, flat[:n_panels]


def subplots(nrows: int = 1, ncols: int = 1, *, ax=None, style=None, width: float = 4.0, height: float = 3.4,
             **kw):
    """``(fig, axes)`` with ``axes`` a 2-D array of ``nrows x ncols`` panels (call inside :func:`style`): the user's
    axes ``ax`` (a sequence of ``nrows * ncols`` axes, row by row), or a new constrained-layout figure whose panels
    are ``width x height`` inches in the default style and scaled to the style's width otherwise (a single row
    wider than the style's ``max_cols`` wraps into more rows; shared axes still work)."""
    import numpy as np

    kw.pop("layout", None)
    if ax is not None:
        fig, flat = axes_grid(nrows * ncols, ax=ax)
        return fig, np.array(flat, dtype=object).reshape(nrows, ncols)
    spec = style_spec(style)
    if spec["width"] is not None and ncols > spec["max_cols"]:
        # too many columns for the style's width: the panels flow row by row into max_cols columns (the caller
        # still indexes them [row, col]); axes shared by row would now share across the caller's rows
        n = nrows * ncols
        cols = spec["max_cols"]
        rows = -(-n // cols)
        total = spec["width"]
        if kw.get("sharey") == "row":
            kw["sharey"] = False
        kw.pop("gridspec_kw", None)
        fig, axes = plt.subplots(rows, cols, figsize=(total, total / cols * height / width * rows),
                                 squeeze=False, layout="constrained", **kw)
        for extra in axes.ravel()[n:]:
            extra.set_visible(False)
        return fig, axes.ravel()[:n].reshape(nrows, ncols)
    total = spec["width"] or width * ncols
    return plt.subplots(nrows, ncols, figsize=(total, total / ncols * height / width * nrows), squeeze=False,
                        layout="constrained", **kw)


def label_first_column(axes, text: str) -> None:
    """Set the y label of the visible axes in the first column of their grid (where a narrow style put them)."""
    import numpy as np

    for a in np.ravel(axes):
        spec = a.get_subplotspec()
        if a.get_visible() and spec is not None and spec.is_first_col():
            a.set_ylabel(text)


def label_last_row(axes, text: str) -> None:
    """Set the x label of the axes in the last row of their grid (where a narrow style put them; an axes outside a
    grid too) and clear the others'."""
    import numpy as np

    for a in np.ravel(axes):
        spec = a.get_subplotspec()
        a.set_xlabel(text if spec is None or spec.is_last_row() else "")


def wrap_text(text: str, chars: int) -> str:
    """``text`` wrapped to lines of at most ``chars`` characters (its own line breaks kept), never inside a formula
    (``$...$``), an equation (``N = 1024`` stays on one line) or between a number and the word before it."""
    import re
    import textwrap

    glue = "\x00"
    protected = re.sub(r"\$[^$]*\$", lambda m: m.group(0).replace(" ", glue), text)
    protected = re.sub(r"(\S+) ([=<>≤≥≈]) (?=\S)", lambda m: f"{m.group(1)}{glue}{m.group(2)}{glue}", protected)
    protected = re.sub(r" (?=[-+]?\d[\d.]*(?:[,;:)]|\s|$))", glue, protected)  # "layer 0", "6 seeds" stay together
    lines = [textwrap.fill(part, chars, break_on_hyphens=False, break_long_words=False)
             for part in protected.split("\n")]
    return "\n".join(lines).replace(glue, " ")


def _chars(width_in: float, points: float) -> int:
    """About how many characters of a ``points`` font fit in ``width_in`` inches."""
    return max(12, int(0.95 * width_in * 72 / (0.55 * points)))


def suptitle(fig, text: str, **kw):
    """The figure's title, wrapped to its width (``fontsize`` default: the axes titles' size); keep it to two
    lines: the legend and the page's caption carry the details."""
    size = kw.pop("fontsize", plt.rcParams["axes.titlesize"])
    points = size if isinstance(size, (int, float)) else plt.rcParams["font.size"]
    root = fig.get_figure(root=True)
    width = fig.bbox.width / root.dpi  # a subfigure's own width
    return fig.suptitle(wrap_text(text, _chars(width, points)), fontsize=size, **kw)


def categories(ax, labels, axis: str = "x") -> None:
    """Draw ``ax``'s ``axis`` as categories: one slot per label at 0, 1, ..., no grid across it, and a thin rule
    between neighbouring slots (values drawn at the categories are not joined by lines: they are no continuum)."""
    import numpy as np

    pos = np.arange(len(labels), dtype=float)
    getattr(ax, f"set_{axis}ticks")(pos, labels)
    getattr(ax, f"set_{axis}lim")(-0.5, len(labels) - 0.5)
    ax.grid(False, axis=axis)
    rule = ax.axvline if axis == "x" else ax.axhline
    for p in pos[:-1]:
        rule(p + 0.5, color="0.82", lw=0.8, zorder=0)


def legend_clear_of_data(ax, loc: str = "lower left", **kw):
    """An axes legend at ``loc`` (a corner: "lower left", "lower right", "upper left", "upper right") with the
    y range widened so that no data line passes under it: the legend gets a band of its own, the data keep theirs
    (Matplotlib's ``loc="best"`` only picks the least-covered spot). Returns the legend."""
    import numpy as np

    legend = ax.legend(loc=loc, **kw)
    fig = ax.get_figure(root=True)
    fig.draw_without_rendering()
    renderer = _renderer(fig)
    box = legend.get_window_extent(renderer).transformed(ax.transAxes.inverted())
    lower = loc.startswith("lower")
    frac = (box.y1 if lower else 1.0 - box.y0) + 0.03  # the band the legend takes, as a fraction of the height
    if frac >= 0.9:
        return legend
    x0, x1 = sorted(ax.transData.inverted().transform(ax.transAxes.transform([[box.x0, 0], [box.x1, 0]]))[:, 0])
    ys = []
    for line in ax.get_lines():
        if line.get_transform() != ax.transData:
            continue
        x = np.asarray(line.get_xdata(), dtype=float)
        y = np.asarray(line.get_ydata(), dtype=float)
        keep = (x >= x0) & (x <= x1) & np.isfinite(y)
        ys.extend(y[keep])
    if not ys:
        return legend
    log = ax.get_yscale() == "log"
    f = np.log10 if log else (lambda v: v)
    lo, hi = (f(v) for v in ax.get_ylim())
    edge = f(min(ys)) if lower else f(max(ys))
    if lower:  # the lowest point under the legend sits at `frac` of the height
        lo = min(lo, (edge - frac * hi) / (1.0 - frac))
    else:
        hi = max(hi, (edge - (1.0 - frac) * lo) / frac)
    ax.set_ylim(*((10.0**lo, 10.0**hi) if log else (lo, hi)))
    return legend


def new_figure(ncols: int = 1, *, width: float = 5.2, height: float = 3.9, style=None, ax=None, **kw):
    """A figure with ``ncols`` axes (``width`` x ``height`` each in the default style; the style's width otherwise;
    the user's ``ax`` if given)."""
    kw.pop("layout", None)
    return axes_grid(ncols, ax=ax, style=style, width=width, aspect=height / width, **kw)


def legend_below(fig, handles, labels=None, *, ncol=None, **kw):
    """One legend for the whole figure under its axes, in as many columns as fit the figure's width (``ncol``
    default: 1 below 4.5 in, 2 below 9 in, else 3); a label wider than its column wraps onto more lines."""
    if ncol is None:
        ncol = 1 if fig.get_figwidth() < 4.5 else 2 if fig.get_figwidth() < 9 else 3
    labels = [h.get_label() for h in handles] if labels is None else list(labels)
    size = kw.get("fontsize", plt.rcParams["legend.fontsize"])
    points = size if isinstance(size, (int, float)) else 0.83 * plt.rcParams["font.size"]
    chars = _chars(0.95 * fig.get_figwidth() / ncol - 0.45, points)  # the handle and the gaps take ~0.45 in
    kw["labels"] = [wrap_text(text, chars) if len(text) > chars else text for text in labels]
    if kw.get("title"):  # the title wraps to the figure's width (a legend wider than the figure would widen it)
        size = kw.get("title_fontsize") or plt.rcParams["legend.title_fontsize"] or plt.rcParams["legend.fontsize"]
        points = size if isinstance(size, (int, float)) else 0.83 * plt.rcParams["font.size"]
        kw["title"] = wrap_text(kw["title"], _chars(0.95 * fig.get_figwidth(), points))
    if fig.get_layout_engine() is None:
        return fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, **kw)
    legend = fig.legend(handles=handles, loc="outside lower center", ncol=ncol, **kw)
    # the figure grows by the legend's height, so the panels keep theirs (a long legend would squash them)
    height = legend.get_window_extent(_renderer(fig)).height / fig.dpi
    fig.set_figheight(fig.get_figheight() + height + 0.05)
    return legend


def computed_data(name: str, seed: int, quick: bool, fields: dict, out=None, *,
                  smoke_reason: str = "few sequences, short N range") -> dict:
    """The data of a figure computed here and now: its name, mode and seed, ``fields``, the footer
    (:func:`computed_footer`) and what makes a quick run a smoke test; written to ``out`` (a JSON path) when given."""
    data = {"name": name, "quick": bool(quick), "seed": int(seed), **fields, "footer": computed_footer(seed, quick),
            "smoke_reason": smoke_reason}
    if out is not None:
        write_data(out, data)
    return data


def computed_footer(seed: int, quick: bool) -> str:
    """Footer of a figure computed here and now: package version, commit, seed and mode."""
    from varsim._common.provenance import provenance

    p = provenance()
    commit = p.get("git_commit")
    where = f"commit {commit[:10]}{'+dirty' if p.get('git_dirty') else ''}" if commit else "no git checkout"
    return (f"computed by varsim {p['versions'].get('varsim', '?')} ({where}), seed {seed}, "
            f"{'quick' if quick else 'full'} mode, {p['created_utc'][:10]}")


_MARGIN_GIDS = ("varsim-footer", "varsim-smoke-test", "varsim-smoke-watermark")


def _content_bbox(fig):
    """A callable giving, at draw time, the display-space box around everything drawn except the margin texts (axes
    with their labels, figure legends, suptitles): the footer and the banner are placed just outside it, so they
    never cover anything, whatever the layout engine and ``bbox_inches="tight"`` do to the figure."""
    from matplotlib.transforms import Bbox

    def bbox(renderer):
        boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
        boxes += [leg.get_window_extent(renderer) for leg in fig.legends]
        boxes += [t.get_window_extent(renderer) for t in fig.texts if t.get_gid() not in _MARGIN_GIDS and t.get_text()]
        boxes = [b for b in boxes if b is not None and b.width > 0]
        return Bbox.union(boxes) if boxes else fig.bbox

    return bbox


def _short(footer: str, width_in: float, fontsize: float) -> str:
    """The footer cut to fit ``width_in`` inches: its first line, shortened (the full text is in the JSON)."""
    import textwrap

    chars = max(30, int(width_in * 72 / (0.5 * fontsize)))
    first = footer.strip().splitlines()[0] if footer.strip() else ""
    more = len(footer.strip().splitlines()) > 1
    return textwrap.shorten(first + (" [...]" if more else ""), chars, placeholder=" [...]")


def _wrapped_title(text: str, width_in: float, size: float) -> str:
    """``text`` wrapped to ``width_in`` inches at ``size`` points, breaking at its colon (or semicolon) when plain
    wrapping takes more than two lines and the two halves fit."""
    chars = _chars(width_in, size)
    wrapped = wrap_text(text, chars)
    if len(wrapped.splitlines()) > 2 and "\n" not in text:
        for mark in (": ", "; "):
            head, _, tail = text.partition(mark)
            if tail and max(len(head), len(tail)) < chars:
                return f"{head}{mark.strip()}\n{tail}"
    return wrapped


def _wrap_titles(fig) -> None:
    """Wrap each axes title that is wider than its axes onto more lines (never inside a formula or an equation,
    preferring a break at its colon); when a title would take more than two lines, every title of the figure is set
    in the same smaller font, down to 80% of its own but never below the style's smallest text."""
    titles = [(ax.title, ax.get_position().width * fig.get_figwidth()) for ax in fig.axes
              if ax.get_visible() and ax.title.get_text()]
    floor = _min_font()

    def size(title, scale):  # never larger than its own, never below the style's smallest text
        return min(title.get_fontsize(), max(floor, scale * title.get_fontsize()))

    scale = 1.0
    for scale in (1.0, 0.9, 0.8):
        if all(len(_wrapped_title(t.get_text(), w, size(t, scale)).splitlines()) <= 2 for t, w in titles):
            break
    for title, width_in in titles:
        points = size(title, scale)
        title.set_text(_wrapped_title(title.get_text(), width_in, points))
        title.set_fontsize(points)


def _min_font() -> float:
    """The smallest text size of the style in effect (the named style whose base font size is the current one)."""
    for spec in STYLES.values():
        if spec["rc"].get("font.size", _RC["font.size"]) == plt.rcParams["font.size"]:
            return spec["min_font"]
    return min(MIN_FONT_SIZE, 0.8 * plt.rcParams["font.size"])


def _declutter_log_labels(fig) -> None:
    """Drop the minor tick labels of a log axis where they would collide with each other or the major labels
    (Matplotlib labels minor ticks on a log axis spanning less than a decade, whatever the axes' size)."""
    from matplotlib.ticker import NullFormatter

    logs = [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) if axis.get_scale() == "log"]
    if not logs:
        return
    fig.draw_without_rendering()
    renderer = _renderer(fig)
    for axis in logs:
        boxes = [tick.label1.get_window_extent(renderer) for tick in axis._update_ticks()
                 if tick.label1.get_visible() and tick.label1.get_text()]
        if any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
            axis.set_minor_formatter(NullFormatter())


def finish(fig, data: dict, *, footer: bool = False):
    """Record ``data``'s provenance in ``fig`` (written into the PNG/PDF metadata by :func:`save`); with ``footer``,
    add a one-line footer (``data["footer"]``, shortened to the figure's width) below everything; for quick-mode
    data, the smoke-test banner above everything and a watermark across the figure; return ``fig``."""
    from matplotlib.text import Annotation

    fig._varsim_metadata = metadata_text(data)
    _wrap_titles(fig)
    _declutter_log_labels(fig)
    content = _content_bbox(fig)
    size = min(MIN_FONT_SIZE, plt.rcParams["font.size"] - 1)
    footer = _short(data["footer"], fig.get_figwidth(), size) if footer and data.get("footer") else None
    if footer:
        fig.add_artist(Annotation(footer, xy=(0.0, 0.0), xycoords=content, xytext=(0, -6), textcoords="offset points",
                                  ha="left", va="top", fontsize=size, color="0.3", gid="varsim-footer",
                                  zorder=20))  # drawn after the legends, whose boxes it reads
    if data.get("smoke_test", data.get("quick")):
        text = f"{SMOKE_TEST_LABEL.upper()}: quick mode ({data.get('smoke_reason', 'tiny runs')})"
        fig.add_artist(Annotation(text, xy=(0.5, 1.0), xycoords=content, xytext=(0, 6), textcoords="offset points",
                                  ha="center", va="bottom",
                                  fontsize=min(11.0, fig.get_figwidth() * 72 / (0.7 * len(text))),
                                  fontweight="bold", color="white",
                                  bbox=dict(boxstyle="round,pad=0.3", fc=_SMOKE_COLOR, ec="none"),
                                  gid="varsim-smoke-test", zorder=20))
        fig.text(0.5, 0.5, SMOKE_TEST_LABEL, fontsize=min(40, 6 * fig.get_figwidth()), color=_SMOKE_COLOR,
                 alpha=0.18, rotation=25, ha="center",
                 va="center", gid="varsim-smoke-watermark", zorder=0)
    return fig


def _pin_figure_legends(fig) -> None:
    """Fix the layout, then pin each figure-level legend to the first axes: ``bbox_inches="tight"`` re-anchors
    figure legends to the cropped canvas edge, which would put an "outside lower center" legend over the footer."""
    if not fig.legends or not fig.axes:
        return
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    ax = fig.axes[0]
    renderer = _renderer(fig)
    for leg in fig.legends:
        box = leg.get_window_extent(renderer)
        x, y = ax.transAxes.inverted().transform(((box.x0 + box.x1) / 2, box.y0))
        leg.set_loc("lower center")
        leg.set_bbox_to_anchor((x, y), transform=ax.transAxes)


def write_data(path, data: dict) -> Path:
    """Write a figure's data (``compute(...)``'s dict) as JSON at ``path``, atomically; ``draw`` redraws it after
    :func:`varsim._common.jsonio.read_json`."""
    from varsim._common.atomic import atomic_write_json

    return atomic_write_json(Path(path), jsonable(data))


def metadata_text(data: dict) -> str:
    """What a figure's files record about its data: figure name, seed, mode, origin and the full footer (JSON)."""
    import json

    keys = ("name", "seed", "quick", "origin", "source", "footer", "params")
    return json.dumps({k: jsonable(data[k]) for k in keys if k in data}, sort_keys=True)


def draw_and_save(draw, data: dict, outdir, name: str, *, style=None, footer: bool = False,
                  with_data: bool = False) -> list[Path]:
    """``save(draw(data, style=style, footer=footer), outdir, name)`` (``draw`` returns a finished Figure); with
    ``with_data``, ``data`` is written as ``name``.json in the same set as the pictures."""
    with plt.rc_context(_style_rc(style)):
        fig = draw(data) if style is None and not footer else draw(data, style=style, footer=footer)
        return save(fig, outdir, name, data=data if with_data else None)


def save(fig, outdir, name: str, *, data: dict | None = None) -> list[Path]:
    """Write ``name``.png and ``name``.pdf into ``outdir`` with the figure's provenance (set by :func:`finish`) in
    their metadata (PNG ``Description``, PDF ``Subject``), and with ``data`` its JSON ``name``.json, as one set
    (:func:`varsim._common.atomic.atomic_write_files`: all replaced or, on a failure, none); close the figure;
    return the PNG and PDF paths."""
    from varsim._common.atomic import atomic_write_files, json_bytes

    outdir = Path(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        _pin_figure_legends(fig)
        description = getattr(fig, "_varsim_metadata", None)
        files = {} if data is None else {outdir / f"{name}.json": json_bytes(jsonable(data))}
        for ext in ("png", "pdf"):
            files[outdir / f"{name}.{ext}"] = figure_bytes(fig, ext, description)
        atomic_write_files(files)
    finally:
        plt.close(fig)
    return [outdir / f"{name}.png", outdir / f"{name}.pdf"]


#: the metadata key that holds a figure file's description, per format (what :func:`write_figure` can describe)
DESCRIPTION_KEYS = {"png": "Description", "pdf": "Subject", "svg": "Description"}


def figure_bytes(fig, ext: str, description: str | None) -> bytes:
    """``fig`` as a PNG, PDF or SVG file (``ext``), with ``description`` in its metadata (:data:`DESCRIPTION_KEYS`)
    and no timestamps, so re-plotting the same data gives the same bytes."""
    meta = {"png": {"Software": None}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[ext]
    if description:
        meta[DESCRIPTION_KEYS[ext]] = description
    buf = io.BytesIO()
    fig.savefig(buf, format=ext, metadata=meta)
    return buf.getvalue()


def write_figure(fig, path, description: str | None) -> Path:
    """Write ``fig`` to ``path`` (PNG, PDF or SVG, by its suffix) atomically with :func:`figure_bytes`; an error
    names ``path``."""
    path = Path(path)
    ext = path.suffix.lower().lstrip(".")
    if ext not in DESCRIPTION_KEYS:
        raise ValueError(f"path {str(path)!r}: expected a .png, .pdf or .svg file")
    return atomic_write_bytes(path, figure_bytes(fig, ext, description))


def array(values) -> np.ndarray:
    """Inverse of :func:`jsonable` for a numeric list: None -> NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def pm(value, se) -> str:
    """``value ± se`` in math text, with the SE to 2 significant digits and the value to match."""
    if value is None or se is None or not (math.isfinite(value) and math.isfinite(se)) or se <= 0:
        return "n/a" if value is None or not math.isfinite(value) else f"{value:.3f}"
    digits = max(0, 1 - int(math.floor(math.log10(se))))
    return f"{value:.{digits}f} \\pm {se:.{digits}f}"


def log2_ticks(ax, n_min: float, n_max: float, axis: str = "x") -> None:
    """Label a log axis with powers of two (sequence lengths read better as 2^k)."""
    lo, hi = int(math.floor(math.log2(n_min))), int(math.ceil(math.log2(n_max)))
    fig = ax.get_figure(root=True)
    box = ax.get_position()
    size = box.width * fig.get_figwidth() if axis == "x" else box.height * fig.get_figheight()
    font = plt.rcParams["xtick.labelsize" if axis == "x" else "ytick.labelsize"]
    font = font if isinstance(font, (int, float)) else 8.0
    fit = max(2, int(0.8 * size * 72 / (3.0 * font)))  # labels 2^{kk}: about 2 font sizes wide, plus a gap
    step = max(1, -(-(hi - lo + 1) // fit))
    ticks = [2.0**k for k in range(lo, hi + 1, step)]
    labels = [f"$2^{{{k}}}$" for k in range(lo, hi + 1, step)]
    getattr(ax, f"set_{axis}ticks")(ticks, labels)
    getattr(ax, f"set_{axis}lim")(n_min / 1.25, n_max * 1.25)
