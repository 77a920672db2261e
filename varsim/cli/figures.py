"""``varsim figures``: regenerate every figure (PNG + PDF) with the repository's ``figures/make_all.py``.

The figure scripts are part of the repository, not of the installed package, so this command works
from a checkout (``pip install -e .``): it finds ``figures/`` next to the ``varsim`` package directory
and fails with a one-line explanation when varsim was installed without it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

__all__ = ["register", "run", "figures_dir", "load_make_all"]


def figures_dir() -> Path:
    """The checkout's ``figures/`` directory (the one next to the imported ``varsim`` package)."""
    import varsim

    root = Path(varsim.__file__).resolve().parents[1]
    figdir = root / "figures"
    if not (figdir / "make_all.py").is_file() or not (figdir / "__init__.py").is_file():
        raise ValueError(
            f"figures: no figures/make_all.py next to the varsim package (looked in {str(root)!r}); "
            "the figure scripts ship with the source repository: clone it and `pip install -e .`, then rerun"
        )
    return figdir


def load_make_all():
    """Import ``figures.make_all`` from the checkout, refusing an unrelated ``figures`` package."""
    figdir = figures_dir()
    root = str(figdir.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    module = importlib.import_module("figures.make_all")
    if Path(module.__file__).resolve().parent != figdir:
        raise ValueError(
            f"figures: imported {module.__file__!r}, which is not varsim's {str(figdir)!r} "
            "(another package named 'figures' shadows it on sys.path)"
        )
    return module


def register(parser: argparse.ArgumentParser) -> None:
    try:  # one definition of the options: the ones of figures/make_all.py
        load_make_all().build_parser(parser)
    except ValueError:  # no checkout: accept anything, so run() can explain what is missing
        parser.add_argument("ignored", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    return load_make_all().run_args(args)  # raises the missing-checkout ValueError when there is none
