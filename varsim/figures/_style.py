"""Shared look and output handling of the figures: Agg backend, Okabe-Ito colours, readable sizes, the provenance
footer and the smoke-test stamp every figure carries, PNG + PDF output, JSON-safe data."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless and deterministic; the scripts never open windows

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from varsim._common.atomic import atomic_write_bytes  # noqa: E402
from varsim._common.jsonio import jsonable  # noqa: E402  (re-exported: one home for figure data as JSON)

__all__ = ["plt", "COLORS", "MARKERS", "SMOKE_TEST_LABEL", "style", "new_figure", "finish", "save", "draw_and_save",
           "computed_footer", "jsonable", "array", "pm", "log2_ticks"]

# Colour-blind-safe (Okabe-Ito) palette, one colour per curve family (never rely on colour alone: markers and line
# styles differ too).
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
#: Stamped on every figure made in quick mode (whose tiny models never learn): they must not pass for results.
SMOKE_TEST_LABEL = "smoke test, not results"
_SMOKE_COLOR = "#D55E00"
MIN_FONT_SIZE = 7.5  # points; the smallest text any figure uses (legends, footers)
MARKERS = ("o", "s", "^", "D", "v", "P")

_RC = {
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "font.size": 9.5,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "legend.framealpha": 0.9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.6,
    "lines.markersize": 4.5,
    "errorbar.capsize": 2,
    "pdf.fonttype": 42,  # embed TrueType so the PDF text stays editable/searchable
    "savefig.bbox": "tight",
    "svg.hashsalt": "varsim",
}


def style():
    """Context manager applying the shared rcParams; wrap a whole ``plot()`` body in it."""
    return plt.rc_context(_RC)


def new_figure(ncols: int = 1, *, width: float = 5.2, height: float = 3.9, **kw):
    """A figure with ``ncols`` axes side by side (call inside :func:`style`)."""
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False, **kw)
    return fig, list(axes[0])


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


def finish(fig, data: dict):
    """Add the provenance footer (``data["footer"]``) below everything and, for quick-mode data, the smoke-test
    banner above everything and a watermark across the figure; return ``fig``."""
    from matplotlib.text import Annotation

    content = _content_bbox(fig)
    footer = data.get("footer")
    if footer:
        fig.add_artist(Annotation(footer, xy=(0.0, 0.0), xycoords=content, xytext=(0, -6), textcoords="offset points",
                                  ha="left", va="top", fontsize=MIN_FONT_SIZE, color="0.3", gid="varsim-footer",
                                  zorder=20))  # drawn after the legends, whose boxes it reads
    if data.get("smoke_test", data.get("quick")):
        text = f"{SMOKE_TEST_LABEL.upper()}: quick mode ({data.get('smoke_reason', 'tiny runs')})"
        fig.add_artist(Annotation(text, xy=(0.5, 1.0), xycoords=content, xytext=(0, 6), textcoords="offset points",
                                  ha="center", va="bottom", fontsize=11, fontweight="bold", color="white",
                                  bbox=dict(boxstyle="round,pad=0.3", fc=_SMOKE_COLOR, ec="none"),
                                  gid="varsim-smoke-test", zorder=20))
        fig.text(0.5, 0.5, SMOKE_TEST_LABEL, fontsize=40, color=_SMOKE_COLOR, alpha=0.18, rotation=25, ha="center",
                 va="center", gid="varsim-smoke-watermark", zorder=0)
    return fig


def _pin_figure_legends(fig) -> None:
    """Fix the layout, then pin each figure-level legend to the first axes: ``bbox_inches="tight"`` re-anchors
    figure legends to the cropped canvas edge, which would put an "outside lower center" legend over the footer."""
    if not fig.legends or not fig.axes:
        return
    fig.canvas.draw()
    fig.set_layout_engine("none")
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    for leg in fig.legends:
        box = leg.get_window_extent(renderer)
        x, y = ax.transAxes.inverted().transform(((box.x0 + box.x1) / 2, box.y0))
        leg.set_loc("lower center")
        leg.set_bbox_to_anchor((x, y), transform=ax.transAxes)


def draw_and_save(draw, data: dict, outdir, name: str) -> list[Path]:
    """``save(draw(data), outdir, name)`` under the shared style (``draw`` returns a finished Figure)."""
    with style():
        return save(draw(data), outdir, name)


def save(fig, outdir, name: str) -> list[Path]:
    """Write ``name``.png and ``name``.pdf atomically into ``outdir``; close the figure."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    _pin_figure_legends(fig)
    paths = []
    for ext in ("png", "pdf"):
        buf = io.BytesIO()
        # no timestamps, so re-plotting the same data gives the same bytes
        meta = {"CreationDate": None} if ext == "pdf" else {"Software": None}
        fig.savefig(buf, format=ext, metadata=meta)
        paths.append(atomic_write_bytes(outdir / f"{name}.{ext}", buf.getvalue()))
    plt.close(fig)
    return paths


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
    step = max(1, (hi - lo + 7) // 8)
    ticks = [2.0**k for k in range(lo, hi + 1, step)]
    labels = [f"$2^{{{k}}}$" for k in range(lo, hi + 1, step)]
    getattr(ax, f"set_{axis}ticks")(ticks, labels)
    getattr(ax, f"set_{axis}lim")(n_min / 1.25, n_max * 1.25)
