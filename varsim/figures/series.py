"""The colour and marker of each named series, asked of the registries: a weight map (:data:`varsim.variants.VARIANTS`)
or a normalization (:data:`varsim.nn.norms.NORMS`) is drawn in the same colour and with the same marker in every
panel of every figure, whatever else a figure shows and wherever a new entry is registered.

An entry may declare its ``color`` (a weight map does, beside its ``marker``); an entry that declares none gets,
in registry order, the first colour of :data:`PALETTE` that no entry has taken and that differs from every taken one
by at least :data:`MIN_DELTA_E` (CIE76 colour difference in CIELAB), or when none does the free colour farthest from
the taken ones, so a newly registered map never shares a colour with one already drawn. Markers likewise: declared,
or the first free one of :data:`MARKERS`. More entries than colours is an error, never a reused colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from varsim._common.registry import Registry

from ._style import COLORS
from ._style import MARKERS as _FIRST_MARKERS

__all__ = ["PALETTE", "MARKERS", "MIN_DELTA_E", "delta_e", "assign", "variant_styles", "norm_styles",
           "variant_style", "norm_style", "Series", "SERIES", "register_series", "series_styles", "series_style",
           "series_label"]

#: the colours given out, in this order: Okabe-Ito's (the figures' shared ones first), then black, grey, brown and
#: Paul Tol's "muted" colours
PALETTE: tuple[str, ...] = COLORS + ("#000000", "#7F7F7F", "#8C564B", "#999933", "#332288", "#882255", "#44AA99",
                                     "#AA4499", "#117733", "#DDCC77", "#88CCEE", "#F0E442")
#: the markers given out, in this order
MARKERS: tuple[str, ...] = _FIRST_MARKERS + ("X", "*", "h", "p", "<", ">", "8", "d", "H", "1", "2", "3", "4")
#: a colour given out differs from every colour taken by at least this CIE76 difference (vermillion and orange:
#: 33; blue and sky blue: 26; a colour against itself: 0)
MIN_DELTA_E = 35.0


def _lab(color) -> np.ndarray:
    """CIELAB (D65) of a Matplotlib colour."""
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(color))
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    f = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(f > 216 / 24389, np.cbrt(f), (24389 / 27 * f + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a, b) -> float:
    """The CIE76 difference of two Matplotlib colours (Euclidean distance in CIELAB; about 2.3 is just noticeable)."""
    return float(np.linalg.norm(_lab(a) - _lab(b)))


def assign(entries, *, what: str = "series") -> dict:
    """``{name: {"color", "marker"}}`` for ``entries``, ``(name, color, marker)`` in registry order (``""`` or
    None: give one out, as the module says). Two entries declaring the same colour or marker raise ValueError."""
    entries = [(name, color or "", marker or "") for name, color, marker in entries]
    out = {}
    for key, pool in (("color", PALETTE), ("marker", MARKERS)):
        idx = 1 if key == "color" else 2
        taken = {}
        for entry in entries:
            if entry[idx]:
                if entry[idx] in taken:
                    raise ValueError(f"{what} {entry[0]!r}: {key} {entry[idx]!r} is already {taken[entry[idx]]}'s")
                taken[entry[idx]] = entry[0]
        for name, *declared in entries:
            given = declared[idx - 1] or _first_free(pool, taken, key, f"{what} {name!r}")
            taken.setdefault(given, name)
            out.setdefault(name, {})[key] = given
    return out


def _first_free(pool, taken: dict, key: str, who: str) -> str:
    """The first of ``pool`` not taken; a colour also at least :data:`MIN_DELTA_E` from every colour taken, or, when
    none is, the free colour farthest from them."""
    free = [item for item in pool if item not in taken]
    if not free:
        raise ValueError(f"{who}: no {key} left ({len(taken)} taken); declare one")
    if key != "color" or not taken:
        return free[0]
    distance = {c: min(delta_e(c, other) for other in taken) for c in free}
    return next((c for c in free if distance[c] >= MIN_DELTA_E), max(free, key=distance.__getitem__))


@dataclass(frozen=True)
class Series:
    """A series a grid draws under a name that is no weight map's: ``label`` its legend (Matplotlib mathtext),
    ``of`` the weight map (:data:`varsim.variants.VARIANTS`) or control (:data:`varsim.variants.CONTROLS`) it draws,
    at ``params``; ``color`` and ``marker``: declared (unique among maps and series), or given out (:func:`assign`)."""

    name: str
    label: str
    of: str
    params: dict = field(default_factory=dict)
    color: str = ""
    marker: str = ""


SERIES = Registry("series", kind=Series)


def register_series(entry: Series) -> Series:
    """Add ``entry`` to :data:`SERIES`; a name of a weight map or of a series already registered, a weight map or
    control ``of`` that is not registered, or a colour or marker already taken raise ValueError."""
    from varsim.variants import CONTROLS, VARIANTS

    if isinstance(entry, Series):
        if entry.name in VARIANTS:
            raise ValueError(f"series {entry.name!r} is a weight map's name; draw it as that map")
        if entry.of not in VARIANTS and entry.of not in CONTROLS:
            raise ValueError(f"series {entry.name!r}: of must name a weight map or a control, got {entry.of!r}")
        if entry.of in VARIANTS:
            VARIANTS.find(entry.of).check_params(entry.params)
    added = SERIES.add(entry)
    try:
        series_styles()  # a declared colour or marker already taken raises
    except ValueError:
        del SERIES[added.name]
        raise
    return added


def series_styles() -> dict:
    """Colour and marker of every weight map and control (:data:`varsim.variants.VARIANTS`), then of every named
    series (:data:`SERIES`), by name: one pool, so no two share a colour or a marker."""
    from varsim.variants import VARIANTS

    entries = [(v.name, v.color, v.marker) for v in VARIANTS.values()]
    entries += [(s.name, s.color, s.marker) for s in SERIES.values()]
    return assign(entries, what="series")


def series_style(name: str) -> dict:
    """``{"label", "color", "marker"}`` of the weight map or named series ``name`` (a weight map's label is its
    registry ``label``); an unknown name raises ValueError naming ``series``."""
    from varsim.variants import VARIANTS

    styles = series_styles()
    if name in VARIANTS:
        return {"label": VARIANTS.find(name).label, **styles[name]}
    return {"label": SERIES.find(name).label, **styles[name]}


def series_label(name: str, params: dict | None = None) -> str:
    """The legend label of the series ``name`` drawn at ``params``: its registry label, or, for a weight map at
    parameters other than its defaults, the map's name and those parameters (``logn (n0 = 17, clamp off)``)."""
    from varsim.variants import VARIANTS

    if name not in VARIANTS or not params:
        return series_style(name)["label"]
    spec = VARIANTS.find(name)
    full, defaults = spec.check_params(params), spec.check_params({})
    if full == defaults:
        return spec.label
    words = [(f"{k} on" if v else f"{k} off") if isinstance(v, bool) else f"{k} = {v:.3g}"
             for k, v in full.items() if defaults.get(k) != v]
    return f"{name} ({', '.join(words)})"


def variant_styles() -> dict:
    """Colour and marker of every weight map and control (:data:`varsim.variants.VARIANTS`), by name (as in
    :func:`series_styles`)."""
    from varsim.variants import VARIANTS

    styles = series_styles()
    return {name: styles[name] for name in VARIANTS}


def norm_styles() -> dict:
    """Colour and marker of every normalization (:data:`varsim.nn.norms.NORMS`), by name."""
    from varsim.nn.norms import NORMS

    return assign(((name, "", "") for name in NORMS), what="norm")


def variant_style(name: str) -> dict:
    """``{"color", "marker"}`` of the weight map ``name``; an unknown name raises ValueError."""
    from varsim.variants import VARIANTS

    return variant_styles()[VARIANTS.find(name).name]


def norm_style(name: str) -> dict:
    """``{"color", "marker"}`` of the normalization ``name``; an unknown name raises ValueError."""
    from varsim.nn.norms import NORMS

    return norm_styles()[NORMS.find(name).name]


for _entry in (
    Series("topk1", r"top-1 (top-$k$, $k = 1$)", "topk", {"k": 1}, color="#E69F00"),
    Series("logn_temperature", r"log-$N$ temperature ($N_0 = 16$)", "logn", {"n0": 16.0}, color="#117733"),
    Series("softmax_replicate", "softmax, trained again", "softmax", color="#AA4499"),
    Series("oracle", "oracle", "oracle", color="#882255"),
):
    SERIES.add(_entry)  # declared colours, distinct from the maps' (tests/test_figure_series.py); no work at import
