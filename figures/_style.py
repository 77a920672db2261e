"""Shared look and output handling for the figure scripts (Agg backend, PNG + PDF, JSON-safe data)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless and deterministic; the scripts never open windows

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from varsim._common.atomic import atomic_write_bytes  # noqa: E402

__all__ = ["plt", "COLORS", "MARKERS", "style", "new_figure", "save", "jsonable", "array", "pm", "log2_ticks"]

# Colour-blind-safe (Okabe-Ito) palette, one colour per curve family.
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
MARKERS = ("o", "s", "^", "D", "v", "P")

_RC = {
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "font.size": 9.5,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
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


def save(fig, outdir, name: str) -> list[Path]:
    """Write ``name``.png and ``name``.pdf atomically into ``outdir``; close the figure."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        buf = io.BytesIO()
        # no timestamps, so re-plotting the same data gives the same bytes
        meta = {"CreationDate": None} if ext == "pdf" else {"Software": None}
        fig.savefig(buf, format=ext, metadata=meta)
        paths.append(atomic_write_bytes(outdir / f"{name}.{ext}", buf.getvalue()))
    plt.close(fig)
    return paths


def jsonable(obj):
    """Plain Python data (lists, floats, None for non-finite) so figure data can be stored as JSON."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(float(obj)) else None
    return obj


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
