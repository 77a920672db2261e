"""The teaching notebooks, shipped with the package so that ``varsim demo`` works from an installed wheel.

Each ``NN_<name>.py`` here is a Jupyter notebook kept as py:percent text (diff-friendly, no outputs); they are data,
not modules of this package (their names are not importable). ``varsim demo`` lists them and copies them (as
``.ipynb`` via jupytext, or as the ``.py`` sources) where a teacher wants them; the tests execute each one
(``tests/test_notebooks.py``) and the documentation site renders them as the tutorials (``docs/mkdocs_hooks.py``).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

__all__ = ["notebooks_dir", "list_notebooks", "interact", "drawing_cells"]


def notebooks_dir() -> Path:
    """The directory holding the notebooks (inside the installed ``varsim`` package)."""
    return Path(str(resources.files(__name__)))


def list_notebooks() -> list[tuple[Path, str]]:
    """``(path, title)`` of every notebook, in order (the title is the first Markdown heading)."""
    out = []
    for path in sorted(notebooks_dir().glob("[0-9]*.py")):
        match = re.search(r"^# # (.+)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
        out.append((path, match.group(1).strip() if match else path.stem))
    if not out:
        raise ValueError(f"demo: no notebooks in {str(notebooks_dir())!r}; the varsim installation is incomplete, "
                         "reinstall it")
    return out


def interact(explore, sliders) -> None:
    """Sliders for ``explore`` in a live notebook (``sliders(ipywidgets)``: one per keyword argument); on the docs site
    (``VARSIM_STATIC_PAGE``: no kernel) or without ipywidgets, one line says so and the static figures stand in."""
    import os

    if os.environ.get("VARSIM_STATIC_PAGE"):
        print("static page: the sliders need a live notebook; the figures below are the static fallback")
        return
    try:
        import ipywidgets as widgets
    except ImportError:
        print("ipywidgets is not installed: static figures only (pip install ipywidgets for the sliders)")
        return
    widgets.interact(explore, **sliders(widgets))


#: calls that draw a figure: pyplot's figure makers and ``show``, a built-in figure's ``draw``, varsim.plotting
_DRAWING_ATTRS = {"subplots", "figure", "show", "draw", "plot_result", "plot_theory", "phase_diagram",
                  "subplot_mosaic"}


def _called_names(nodes) -> set[str]:
    """The names called anywhere in ``nodes`` (``f(...)`` gives ``f``, ``a.b.f(...)`` gives ``f``)."""
    import ast

    names = set()
    for node in nodes:
        for call in ast.walk(node):
            if isinstance(call, ast.Call):
                func = call.func
                names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def drawing_cells(sources) -> list[bool]:
    """For the code cells ``sources`` of a notebook, in order: does the cell draw a figure when it runs?

    A cell draws when a statement outside its function definitions calls a figure maker (``plt.subplots``,
    ``plt.figure``, ``plt.show``, a figure's ``draw``, ``plotting.plot_result``/``plot_theory``/``phase_diagram``) or a function
    defined in this or an earlier cell that does, directly or through another. ``tests/test_notebooks.py`` checks
    this against the figures each cell makes in a Jupyter kernel; ``docs/check_site.py`` uses it to require an
    image from each drawing cell of the site's notebook pages."""
    import ast

    drawers: set[str] = set()
    out = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            out.append(False)
            continue
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        changed = True
        while changed:  # a function that calls a drawer draws (to a fixed point: defs may call each other)
            changed = False
            for d in defs:
                if d.name not in drawers and _called_names(d.body) & (_DRAWING_ATTRS | drawers):
                    drawers.add(d.name)
                    changed = True
        top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        out.append(bool(_called_names(top) & (_DRAWING_ATTRS | drawers)))
    return out
