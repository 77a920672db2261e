"""Figure styles as data, applied by a context manager (in the manner of ``tueplots``).

A style is a dict: ``width`` of the whole figure in inches (None: the figure's own), ``max_cols`` panels per row
(more wrap onto further rows), ``min_font`` the smallest text in points, and ``rc``, Matplotlib rcParams applied on
top of the shared :data:`BASE_RC`. :data:`STYLES` names four: ``"default"``, ``"column"`` (3.3 in),
``"two-column"`` (6.9 in) and ``"slides"``; a dict of rcParams (e.g. a ``tueplots`` bundle) is a style too, its
``figure.figsize`` setting the width.

Nothing here changes Matplotlib's state on import or leaves it changed: :func:`style` applies a style's rcParams
inside a ``with`` block and restores the caller's on exit, and the backend is never touched (in a Jupyter session
the ``inline`` backend stays, so figures keep showing). Use :func:`rc` to read a style's rcParams as a plain dict:

```python
import matplotlib.pyplot as plt
from varsim import plotting, style

with style.style("column"):          # a 3.3 in figure, 7 pt text; rcParams restored after the block
    ax = plotting.plot_result(res)
plt.rcParams.update(style.rc("slides"))  # or set a style for the whole session yourself
```
"""

from __future__ import annotations

__all__ = ["BASE_RC", "COLORS", "MIN_FONT_SIZE", "STYLES", "rc", "spec", "style"]

#: Colour-blind-safe (Okabe-Ito) palette, the shared colour cycle (never rely on colour alone: markers differ too)
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
#: points; the smallest text the default style uses (legends, footers)
MIN_FONT_SIZE = 7.5

#: the rcParams every style starts from (the colour cycle is :data:`COLORS`, added by :func:`rc`)
BASE_RC = {
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
    "savefig.pad_inches": 0.02,  # a 3.3 in figure stays 3.3 in wide
    "svg.hashsalt": "varsim",
}


def _sizes(base: float) -> dict:
    return {"font.size": base, "axes.titlesize": base, "axes.labelsize": base, "legend.fontsize": base - 1,
            "xtick.labelsize": base - 1, "ytick.labelsize": base - 1, "legend.title_fontsize": base - 1}


#: Named styles: ``width`` of the whole figure in inches (None: the figure's own), ``max_cols`` panels per row
#: (more wrap to further rows), ``min_font`` the smallest text in points, and rcParams on top of :data:`BASE_RC`.
STYLES: dict[str, dict] = {
    "default": {"width": None, "max_cols": 4, "min_font": MIN_FONT_SIZE, "rc": {}},
    "column": {"width": 3.3, "max_cols": 2, "min_font": 5.5,
               "rc": {**_sizes(7.0), "lines.linewidth": 1.1, "lines.markersize": 3.0, "errorbar.capsize": 1.2,
                      "axes.linewidth": 0.6, "xtick.major.size": 2.5, "ytick.major.size": 2.5,
                      "xtick.major.pad": 2, "ytick.major.pad": 2, "axes.labelpad": 2, "axes.titlepad": 3,
                      "legend.borderpad": 0.3, "legend.handlelength": 1.8, "legend.labelspacing": 0.25}},
    "two-column": {"width": 6.9, "max_cols": 4, "min_font": 6.5,
                   "rc": {**_sizes(8.0), "lines.linewidth": 1.3, "lines.markersize": 3.5}},
    "slides": {"width": 10.0, "max_cols": 3, "min_font": 11.0,
               "rc": {**_sizes(14.0), "lines.linewidth": 2.2, "lines.markersize": 6.5}},
}


def spec(name=None) -> dict:
    """The style ``name`` as ``{"width", "max_cols", "min_font", "rc"}``.

    Parameters
    ----------
    name : str or dict, optional
        A key of :data:`STYLES` (None: ``"default"``) or a dict of rcParams (its ``figure.figsize`` sets the width).

    Returns
    -------
    dict
        The style's sizes and its own rcParams (without :data:`BASE_RC`).

    Raises
    ------
    ValueError
        An unknown name.
    """
    if name is None:
        return STYLES["default"]
    if isinstance(name, dict):
        params = dict(name)
        size = params.get("figure.figsize")
        base = params.get("font.size", BASE_RC["font.size"])
        return {"width": None if size is None else float(size[0]), "max_cols": 2 if size and size[0] < 4 else 4,
                "min_font": min(MIN_FONT_SIZE, float(base) - 2) if isinstance(base, (int, float)) else 5.0,
                "rc": params}
    if isinstance(name, str) and name in STYLES:
        return STYLES[name]
    raise ValueError(f"unknown style {name!r}; expected one of {', '.join(STYLES)} or a dict of rcParams")


def rc(name=None) -> dict:
    """Every rcParam the style ``name`` sets (:data:`BASE_RC`, the :data:`COLORS` cycle, then the style's own), as
    a new dict: ``plt.rcParams.update(rc("slides"))`` sets it for a whole session; :func:`style` for a block."""
    from matplotlib import cycler

    return {**BASE_RC, "axes.prop_cycle": cycler(color=list(COLORS)), **spec(name)["rc"]}


def style(name=None):
    """A context manager that applies the style ``name`` (a key of :data:`STYLES`, None: ``"default"``, or a dict
    of rcParams) to what is drawn inside it and restores the caller's rcParams on exit (never the backend).

    Examples
    --------
    >>> import matplotlib as mpl
    >>> from varsim import style
    >>> before = mpl.rcParams["font.size"]
    >>> with style.style("column"):
    ...     mpl.rcParams["font.size"]
    7.0
    >>> mpl.rcParams["font.size"] == before
    True
    """
    import matplotlib as mpl

    return mpl.rc_context(rc(name))
