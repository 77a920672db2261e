"""The parameters of figures drawn as the user asks (``varsim figures --only NAME --param tau=0.8 --beta 1 2
--style column``): :func:`figure_values` reads and checks them against each named figure's declaration
(:mod:`varsim.figures.params`: an unknown one is a ValueError naming it and the figure, a bad value one naming the
parameter, both before any work) for :func:`varsim.figures.make`, the one engine, which computes each figure with
``compute(quick, seed, progress=..., source=..., **params)`` and draws it with ``draw(data, style=...,
footer=...)``. :func:`make_custom`, the former second engine, is :func:`varsim.figures.make` (deprecated).
"""

from __future__ import annotations

import warnings

__all__ = ["make_custom", "figure_params", "figure_values"]


def figure_params(name: str) -> tuple[str, ...]:
    """The names of the parameters figure ``name`` declares (:func:`varsim.figures.params.figure_params`)."""
    from .params import figure_params as declared

    return tuple(p.name for p in declared(name))


def figure_values(names, params: dict | None = None, texts=None, *, flags: dict | None = None,
                  replot: bool = False) -> dict[str, dict]:
    """``{name: {parameter: value}}`` for the figures ``names``: ``params`` (not None) and ``texts`` (``(name,
    text)`` pairs, each parsed by the figure's declaration), every one declared by every figure named; ``flags``:
    how the caller names a parameter in its messages (``{"betas": "--beta"}``; default ``--param NAME``). A
    parameter given twice, unknown to a figure, with a bad value, or given with ``replot`` is a ValueError."""
    from .params import figure_params as declared

    params = {k: v for k, v in (params or {}).items() if v is not None}
    texts = list(texts or ())
    flag = lambda p: (flags or {}).get(p, f"--param {p}")  # noqa: E731
    given = [*params, *(name for name, _ in texts)]
    repeated = sorted({n for n in given if given.count(n) > 1})
    if repeated:
        raise ValueError(f"{flag(repeated[0])}: given more than once")
    per_figure = {}
    for name in names:
        accepted = {p.name: p for p in declared(name)} if given else {}
        unknown = [p for p in given if p not in accepted]
        if unknown:
            raise ValueError(f"{flag(unknown[0])}: figure {name!r} takes no such parameter (it takes: "
                             f"{', '.join(map(flag, accepted)) or 'none'})")
        values = dict(params)
        for key, text in texts:
            try:
                values[key] = accepted[key].parse(text)
            except ValueError as exc:
                raise ValueError(f"--param {exc}") from None
        per_figure[name] = values
    if replot and given:
        raise ValueError(f"replot: redraws stored data, so it takes no figure parameters "
                         f"({', '.join(map(flag, given))})")
    return per_figure


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
