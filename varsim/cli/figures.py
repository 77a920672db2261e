"""``varsim figures``: regenerate every figure (PNG + PDF) with the installed ``varsim.figures`` package.

The figure code and the compact records of the last full reproduction ship with the package, so this works the same
from a wheel as from a checkout. Options are those of :func:`varsim.figures.register`.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(parser: argparse.ArgumentParser) -> None:
    from varsim.figures import register as add_figure_options

    add_figure_options(parser)


def run(args: argparse.Namespace) -> int:
    from varsim.figures import run_args

    return run_args(args)
