"""The parameters of figures drawn as the user asks (``varsim figures --only NAME --param tau=0.8 --beta 1 2
--style column``): :func:`varsim.figures.figure_values` reads and checks them against each named figure's declaration
(:mod:`varsim.figures.params`: an unknown one is a ValueError naming it and the figure, a bad value one naming the
parameter, both before any work) for :func:`varsim.figures.make`, the one engine, which computes each figure with
``compute(quick, seed, progress=..., source=..., **params)`` and draws it with ``draw(data, style=...,
footer=...)``. :func:`make_custom`, the former second engine, is :func:`varsim.figures.make` (deprecated).
"""

from __future__ import annotations

import warnings

__all__ = ["make_custom", "figure_params"]


def figure_params(name: str) -> tuple[str, ...]:
    """The names of the parameters figure ``name`` declares (:func:`varsim.figures.params.figure_params`)."""
    from .params import figure_params as declared

    return tuple(p.name for p in declared(name))


def make_custom(names, *, outdir, params: dict | None = None, style=None, footer: bool = False,
                quick: bool = False, seed: int = 0, progress: bool = False, replot: bool = False,
                sources: dict | None = None, flags: dict | None = None, texts=None):
    """Deprecated: :func:`varsim.figures.make` with ``params``, ``texts``, ``style``, ``footer`` and ``flags``, and
    the data-source options ``sources`` as keywords (the same files, the same checks)."""
    from varsim.figures import make

    warnings.warn("varsim.figures.custom.make_custom is deprecated; call varsim.figures.make(names, params=..., "
                  "style=..., footer=..., **source_options), the one figure engine", DeprecationWarning, stacklevel=2)
    if not list(names or ()):
        raise ValueError("only: name the figures to draw with parameters or a style (--only NAME ...)")
    return make(list(names), outdir=outdir, quick=quick, seed=seed, progress=progress, replot=replot,
                params=params, texts=texts, style=style, footer=footer, flags=flags, **(sources or {}))
