"""Figures drawn with the user's parameters and style (``varsim figures --only NAME --beta ... --style column``).

:func:`make_custom` computes each named figure with ``compute(quick, seed, progress=..., **params)`` (the parameters
a figure's ``compute`` takes: an unknown one is a ValueError naming it and the figure), writes ``<name>.json`` and
draws it with ``draw(data, style=..., footer=...)`` into ``<name>.png`` and ``.pdf``. Figures drawn from a data
source (reproduction, probe, remedies) take no parameters; :func:`varsim.figures.make` draws those.
"""

from __future__ import annotations

import inspect
import sys
import time
from pathlib import Path

__all__ = ["make_custom", "figure_params"]


def figure_params(name: str) -> tuple[str, ...]:
    """The keyword parameters figure ``name``'s ``compute`` takes beyond quick, seed, progress and source."""
    from varsim.figures import load

    sig = inspect.signature(load(name).compute)
    return tuple(p for p in sig.parameters if p not in ("quick", "seed", "progress", "source", "out"))


def make_custom(names, *, outdir, params: dict | None = None, style=None, footer: bool = False,
                quick: bool = False, seed: int = 0, progress: bool = False) -> dict[str, list[Path]]:
    """Compute and draw ``names`` with ``params`` (only those given, not None) in ``style``; returns the files."""
    from varsim._common.atomic import atomic_write_json
    from varsim._common.validate import check_int
    from varsim.figures import _style, load

    params = {k: v for k, v in (params or {}).items() if v is not None}
    _style.style_spec(style)  # an unknown style fails before any work
    seed = check_int("seed", seed, minimum=0)
    names = list(names or ())
    if not names:
        raise ValueError("only: name the figures to draw with parameters (--only NAME ...)")
    for name in names:
        accepted = figure_params(name)
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ValueError(f"{unknown[0]}: figure {name!r} takes no such parameter (it takes: "
                             f"{', '.join(accepted) or 'none'})")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in names:
        t0 = time.perf_counter()
        module = load(name)
        data = _style.jsonable(module.compute(quick, seed, progress=progress, **params))
        path = atomic_write_json(outdir / f"{name}.json", data)
        written[name] = [path, *_style.draw_and_save(module.draw, data, outdir, name, style=style, footer=footer)]
        if progress:
            print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return written
