"""Figures drawn with the user's parameters and style (``varsim figures --only NAME --param tau=0.8 --beta 1 2
--style column``).

:func:`make_custom` computes each named figure with ``compute(quick, seed, progress=..., source=..., **params)``
(the parameters its module declares in ``PARAMS``, :mod:`varsim.figures.params`: an unknown one is a ValueError
naming it and the figure, a bad value one naming the parameter, both before any work; a figure that
draws a data source gets the source :func:`varsim.figures.make` would give it), writes ``<name>.json`` and draws it
with ``draw(data, style=..., footer=...)`` into ``<name>.png`` and ``.pdf``; ``replot`` redraws the stored JSON in
the new style without computing.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

__all__ = ["make_custom", "figure_params"]


def figure_params(name: str) -> tuple[str, ...]:
    """The names of the parameters figure ``name`` declares (:func:`varsim.figures.params.figure_params`)."""
    from .params import figure_params as declared

    return tuple(p.name for p in declared(name))


def _sources(names, kinds: dict, options: dict, outdir) -> dict:
    """The data source of each kind the figures ``names`` draw, checked (ValueError naming the option)."""
    from varsim.figures import SOURCES

    built = {}
    for kind in dict.fromkeys(k for k in kinds.values() if k is not None):
        module, cls = SOURCES[kind]
        built[kind] = getattr(importlib.import_module(module), cls).from_options(options)
        built[kind].prepare([n for n in names if kinds[n] == kind], explicit=True, replot=False, outdir=outdir)
    return built


def make_custom(names, *, outdir, params: dict | None = None, style=None, footer: bool = False,
                quick: bool = False, seed: int = 0, progress: bool = False, replot: bool = False,
                sources: dict | None = None, flags: dict | None = None, texts=None) -> dict[str, list[Path]]:
    """Compute (or, with ``replot``, read) and draw ``names`` with ``params`` (only those given, not None) in
    ``style``; ``texts``: more parameters as ``(name, text)`` pairs (``--param name=text``), each read and checked
    by the figure's declaration (:mod:`varsim.figures.params`) before any work; ``sources``: the data-source options
    of :func:`varsim.figures.make` (``results``, ``rerun``, ``probe_results``, ``remedies_results``,
    ``decoder_results``); ``flags``: how the caller names a parameter in its messages (``{"betas": "--beta"}``;
    default ``--param NAME``). Returns the files written per figure."""
    from varsim._common.atomic import atomic_write_json
    from varsim._common.validate import check_int
    from varsim.figures import _style, data_source, draw_stored, load, read_stored

    from .params import figure_params as declared

    params = {k: v for k, v in (params or {}).items() if v is not None}
    texts = list(texts or ())
    _style.style_spec(style)  # an unknown style fails before any work
    seed = check_int("seed", seed, minimum=0)
    names = list(names or ())
    if not names:
        raise ValueError("only: name the figures to draw with parameters or a style (--only NAME ...)")
    kinds = {name: data_source(name) for name in names}  # unknown names fail here
    flag = lambda p: (flags or {}).get(p, f"--param {p}")  # noqa: E731
    given = [*params, *(name for name, _ in texts)]
    repeated = sorted({n for n in given if given.count(n) > 1})
    if repeated:
        raise ValueError(f"{flag(repeated[0])}: given more than once")
    per_figure = {}
    for name in names:
        accepted = {p.name: p for p in declared(name)}
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
    outdir = Path(outdir)
    stored = {name: read_stored(outdir / f"{name}.json") for name in names} if replot else {}
    outdir.mkdir(parents=True, exist_ok=True)
    options = {"quick": quick, "seed": seed, "results": None, "rerun": False, "progress": progress,
               "probe_results": None, "remedies_results": None, "decoder_results": None, **(sources or {})}
    built = {} if replot else _sources(names, kinds, options, outdir)
    written = {}
    for name in names:
        t0 = time.perf_counter()
        module = load(name)
        path = outdir / f"{name}.json"
        if replot:  # the checks of plain --replot: the stored data must be the figure's, and drawable
            written[name] = [path, *draw_stored(name, stored[name], path, outdir, style=style, footer=footer)]
        else:
            data = _style.jsonable(module.compute(quick, seed, progress=progress, source=built.get(kinds[name]),
                                                  **per_figure[name]))
            atomic_write_json(path, data)
            written[name] = [path, *_style.draw_and_save(module.draw, data, outdir, name, style=style,
                                                         footer=footer)]
        if progress:
            print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return written
