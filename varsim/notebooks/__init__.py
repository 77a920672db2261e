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

__all__ = ["notebooks_dir", "list_notebooks", "interact"]


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
